"""Straight-line push functions, generated once per (layout, set of pushed names).

A step pushes 4-8 values; a Python call per value and per ring pointer update costs more than
the numpy writes themselves (a push should cost a few times a hand-written numpy ring:
benchmarks/trajectories.py measures it). So, like `dataclasses` and `namedtuple`, we generate
the code once: for each value an inline check that numpy stores it exactly (else the checked,
raising conversion), then, only when every value passed, the writes into the spare slots and the
pointer moves, with the lockstep rule of `Traces`. Only rings (`CircularArrayBuffer`) get this;
other buffers use `Traces._write`, the general path, which does the same.

Measured gain: an `EpisodesBuffer` step of CartPole SARTS transitions (capacity 100k) takes
2.09 us with these functions and 2.95 us through `Traces._write` (1.41x; SARTSA: 2.10 us and
3.01 us), medians of 9 interleaved rounds of 20k pushes under the timing lock.
``tests/trajectories/test_generated_paths.py`` runs both paths on the same layouts and inputs.
"""

from __future__ import annotations

import operator
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


def push_body(writes, pads, leads, others, from_args=False):
    """Source lines (indented once) and namespace that push ``row`` into the rings, leaving
    ``evict`` (whether a row was dropped everywhere) set. With ``from_args`` the values are
    read from the generated function's arguments ``x0, x1, ...`` (in ``writes`` order).

    ``writes``: (name, buffer) pairs; ``pads``: buffers given a zero frame; ``leads``: the
    written buffers whose overflow evicts a row everywhere; ``others``: buffers not written.
    Returns None when a buffer is not a ring."""
    bufs = [b for _, b in writes] + list(pads)
    if not all(type(b) is CircularArrayBuffer for b in bufs):
        return None
    # Only ints and exact strings are written into the source (a buffer restored from a file
    # must not smuggle code in through a capacity or a trace name).
    if not all(type(name) is str for name, _ in writes):
        return None
    caps = {id(b): (operator.index(b._cap), operator.index(b._P)) for b in [*bufs, *leads]}
    ns = {"ndarray": np.ndarray, "others": others}
    lines = []
    for j, (name, b) in enumerate(writes):
        fast_types = {t for t in b._fast_types if t is not int}
        lo, hi = _int_range(b._dtype)
        ns.update({f"ft{j}": frozenset(fast_types), f"fd{j}": b._fast_dtypes,
                   f"dt{j}": b._dtype, f"fs{j}": b._fshape, f"lo{j}": lo, f"hi{j}": hi,
                   f"co{j}": partial(coerce_frame, dtype=b._dtype, frame_shape=b._fshape,
                                     name=b._name)})
        if not from_args:
            lines.append(f"    x{j} = row[{name!r}]")
        lines += [
            f"    t = type(x{j})",
            "    if t is ndarray:",  # an exact dtype match is the common case: check it first
            f"        if x{j}.shape != fs{j} or (x{j}.dtype is not dt{j} and "
            f"x{j}.dtype not in fd{j}):",
            f"            x{j} = co{j}(x{j})",
            f"    elif t not in ft{j} and not (t is int and lo{j} <= x{j} <= hi{j}):",
            f"        x{j} = co{j}(x{j})",
        ]
    # Every value is valid now: nothing below can raise.
    for j, lead in enumerate(leads):
        ns[f"lead{j}"] = lead
    full = " or ".join(f"lead{j}._len == {caps[id(lead)][0]}" for j, lead in enumerate(leads))
    lines.append(f"    evict = {full or 'False'}")
    for j, b in enumerate(bufs):
        ns[f"b{j}"], ns[f"d{j}"] = b, b._data
        cap, period = caps[id(b)]
        value = f"x{j}" if j < len(writes) else "0"
        lines += [
            f"    b = b{j}",
            "    t = b._tail",
            f"    d{j}[t] = {value}",
            f"    b._tail = 0 if t + 1 == {period} else t + 1",
            "    n = b._len",
            f"    if (evict or n == {cap}) and n:",
            f"        b._start = 0 if b._start + 1 == {period} else b._start + 1",
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


def compile_push(writes, pads, leads, others):
    """``push(row) -> evict`` for `push_body`'s arguments, or None when a buffer is not a ring."""
    body = push_body(writes, pads, leads, others)
    if body is None:
        return None
    lines, ns = body
    return compile_function("def push(row):", [*lines, "    return evict"], ns, "push")
