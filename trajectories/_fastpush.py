"""Straight-line push functions, generated once per (layout, set of pushed names).

A step pushes 4-8 values; a Python call per value and per ring pointer update costs more than
the numpy writes themselves (DESIGN §12 budgets a push at a few times a hand-written ring).
So, like `dataclasses` and `namedtuple`, we generate the code once: for each value an inline
check that numpy stores it exactly (else the checked, raising conversion), then, only when
every value passed, the writes into the spare slots and the pointer moves. Only rings
(`CircularArrayBuffer`) get this; other buffers use `Traces._push`.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from trajectories._casting import coerce_frame
from trajectories.buffers import CircularArrayBuffer


def _int_range(dtype):
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.min), int(info.max)
    if dtype.kind == "b":
        return 0, 1
    if dtype.kind in "fc":  # beyond this a Python int overflows a float
        return -(2**1023), 2**1023
    return 1, 0  # never: other dtypes take the checked path


def push_body(writes, pads, lead, others):
    """Source lines (indented once) and namespace that push ``row`` into the rings.

    ``writes``: (name, buffer) pairs; ``pads``: buffers given a zero frame; ``lead``: the
    buffer whose overflow evicts a row everywhere (or None); ``others``: buffers not written.
    Returns None when a buffer is not a ring."""
    bufs = [b for _, b in writes] + list(pads)
    if not all(type(b) is CircularArrayBuffer for b in bufs):
        return None
    ns = {"ndarray": np.ndarray, "lead": lead, "others": others}
    lines = []
    for j, (name, b) in enumerate(writes):
        fast_types = {t for t in b._fast_types if t is not int}
        lo, hi = _int_range(b._dtype)
        ns.update({f"ft{j}": frozenset(fast_types), f"fd{j}": b._fast_dtypes,
                   f"dt{j}": b._dtype, f"fs{j}": b._fshape, f"lo{j}": lo, f"hi{j}": hi,
                   f"co{j}": partial(coerce_frame, dtype=b._dtype, frame_shape=b._fshape,
                                     name=b._name)})
        lines += [
            f"    x{j} = row[{name!r}]",
            f"    t = type(x{j})",
            "    if t is ndarray:",  # an exact dtype match is the common case: check it first
            f"        if x{j}.shape != fs{j} or (x{j}.dtype is not dt{j} and "
            f"x{j}.dtype not in fd{j}):",
            f"            x{j} = co{j}(x{j})",
            f"    elif t not in ft{j} and not (t is int and lo{j} <= x{j} <= hi{j}):",
            f"        x{j} = co{j}(x{j})",
        ]
    # Every value is valid now: nothing below can raise.
    lines.append("    evict = lead._len == lead._cap" if lead is not None else "    evict = False")
    for j, b in enumerate(bufs):
        ns[f"b{j}"], ns[f"d{j}"] = b, b._data
        value = f"x{j}" if j < len(writes) else "0"
        lines += [
            f"    b = b{j}",
            "    t = b._tail",
            f"    d{j}[t] = {value}",
            f"    b._tail = 0 if t + 1 == {b._P} else t + 1",
            "    n = b._len",
            f"    if (evict or n == {b._cap}) and n:",
            f"        b._start = 0 if b._start + 1 == {b._P} else b._start + 1",
            "    else:",
            "        b._len = n + 1",
        ]
    if others:
        lines += ["    if evict:", "        for b in others:", "            if b._len:",
                  "                b._drop_front(1)"]
    return lines, ns


def compile_function(header, lines, ns, name):
    exec("\n".join([header, *lines]), ns)  # noqa: S102 - generated from layout data only
    return ns[name]


def compile_push(writes, pads, lead, others):
    """``push(row)`` for `push_body`'s arguments, or None when a buffer is not a ring."""
    body = push_body(writes, pads, lead, others)
    return None if body is None else compile_function("def push(row):", *body, "push")


# EpisodesBuffer's full step: the phase check, the ring writes above, then EpisodeMeta.append
# (with its `back` marking) inlined. Kept in step with EpisodeMeta.append; the tests run both.
_STEP_TAIL = """\
    m = meta
    s = m.step
    back = back_late if s >= 2 else back_early
    samp = m.samp
    P = m.P
    t = m.tail
    if back:  # that entry is never sampleable yet (see EpisodesBuffer): no need to read it
        p = t - back
        if p < 0:
            p += P
        samp[p] = True
        m.n_samp += 1
    if {full}:
        o = m.start
        if samp[o]:
            samp[o] = False
            m.n_samp -= 1
        m.start = 0 if o + 1 == P else o + 1
    else:
        m.n += 1
    m.steps[t] = m.step = s + 1
    m.tail = 0 if t + 1 == P else t + 1
    eb._phase = stepping
    return 1"""


def compile_episode_step(body, eb, general, started, stepping):
    """``step(row) -> 1`` for an `EpisodesBuffer` over plain rings; any other phase than a
    running episode goes to ``general(row)`` (which checks the rules and raises)."""
    lines, ns = body
    meta, lead = eb._meta, ns["lead"]
    if not math.isfinite(meta.capacity):
        return None  # unbounded metadata grows: EpisodeMeta.append handles that
    ns.update(eb=eb, meta=meta, general=general, back_late=eb._back_late,
              back_early=eb._back_early, started=started, stepping=stepping)
    # One entry per state: when the states' ring evicts, so does the metadata ring.
    full = "evict" if lead is not None and lead._cap == meta.capacity else "m.n == m.capacity"
    header = "def step(row):\n    if eb._phase < started:\n        return general(row)"
    return compile_function(header, [*lines, _STEP_TAIL.format(full=full)], ns, "step")
