"""One generated function for the common push of a step: a `Trajectory` over an
`EpisodesBuffer` of rings, a step of a running episode (and one for an episode's first state
after a finished episode, below).

The general push of a step goes `Trajectory.push_function` -> `EpisodesBuffer.push_function`
(the episode rules) -> `Traces.write_function` (the generated ring writes) ->
`EpisodeMeta.append` -> the controller's ``on_insert``: five Python calls, each costing more than
the numpy writes themselves. `compile_step_push` writes them out in one function, generated once
per trajectory and set of names like `trajectories._fastpush`'s: the checks of every value (the
same lines), the ring writes, the metadata's ``append`` for a bounded ring (the same steps as
`EpisodeMeta.append`), the phase and the insert count (an `InsertSampleRatioController`'s
``n_inserted += 1``, what its ``on_insert(1, step)`` does; any other controller, or one whose
``on_insert`` was replaced, gets the call).

It takes the values as arguments (``push(state, action, reward, terminal)``, in the order of the
names), not a dict. Anything but the common case (a first push, an episode's first step, a lane,
another container or traces restored since) takes the general path, given the same values as a
dict. ``tests/trajectories/test_step_push.py`` runs both paths on the same inputs: steps, new
episodes, ring wrap-around, bad values, SARTS and SARTSA layouts.
"""

from __future__ import annotations

import math

from trajectories._episode_meta import EpisodeMeta
from trajectories._episode_rules import (
    COMPLETED,
    FULL,
    PARTIAL,
    STARTED,
    STEP_PHASES_FROM,
    STEPPING,
    classify_push,
)
from trajectories._fastpush import compile_function, push_body
from trajectories.controllers import InsertSampleRatioController
from trajectories.episodes import EpisodesBuffer
from trajectories.traces import Traces

__all__ = ["compile_step_push"]

# The steps of `EpisodeMeta.append(step + 1, back, evict)` for a bounded ring (its ``n + 1 ==
# P`` branch is the unbounded ring's growth, never taken here), ``back`` chosen as
# `EpisodesBuffer`'s step function chooses it.
# `EpisodeMeta.append`'s advance of a bounded ring by one entry whose step count is {STEP}:
# the oldest entry evicted when the ring is full (or ``evict`` says so), else one entry more.
# Needs ``m``, ``n``, ``P``, ``samp`` and ``evict`` bound.
_ADVANCE = """\
    if n and (evict or n == CAP):
        s0 = m.start
        if samp[s0]:
            samp[s0] = False
            m.n_samp -= 1
        m.start = 0 if s0 + 1 == P else s0 + 1
    else:
        m.n = n + 1
    t = m.tail
    m.steps[t] = {STEP}
    m.tail = 0 if t + 1 == P else t + 1
    m.step = {STEP}
"""

_META_APPEND = ("""\
    m = C._meta
    s = m.step
    back = BL if s >= 2 else BE
    samp, P, n = m.samp, m.P, m.n
    if back and back <= n:
        p = m.tail - back
        if p < 0:
            p += P
        if not samp[p]:
            samp[p] = True
            m.n_samp += 1
""" + _ADVANCE.replace("{STEP}", "s + 1") + """\
    C._phase = STEPPING
    c = traj.controller
    if type(c) is ISRC and "on_insert" not in c.__dict__:
        c.n_inserted += 1
    else:
        c.on_insert(1, {KEYS})
""").splitlines()


def compile_step_push(trajectory, keys: tuple, general):
    """``push(*values)`` for steps of exactly the names ``keys`` into ``trajectory``, or None
    when its container is not one this function covers (then use ``general``).

    ``general(step_dict)`` is the trajectory's own push of these names (`Trajectory.
    push_function`), which the generated function calls for anything but the common step.
    """
    container = trajectory.container
    if type(container) is not EpisodesBuffer or trajectory._detour or "truncated" in keys:
        return None
    traces, meta = container.traces, container._meta
    if not isinstance(traces, Traces) or type(traces)._plan is not Traces._plan or \
            type(meta) is not EpisodeMeta or not math.isfinite(meta.capacity):
        return None
    if not all(type(k) is str and k.isidentifier() for k in keys) or len(set(keys)) != len(keys):
        return None
    try:
        kind = classify_push(keys, container._slot_of, container._slots, container._state_like,
                             container._completion)
        _, writes, leads, others = traces._plan(keys, False)
    except (KeyError, ValueError, TypeError):
        return None  # the general path raises it at the first push, as it always did
    if kind == PARTIAL:
        return _compile_first_state_push(trajectory, keys, general)
    if kind != FULL:
        return None
    body = push_body(writes, (), leads, others, from_args=True)
    if body is None:
        return None
    lines, ns = body
    args = ", ".join(f"x{j}" for j in range(len(keys)))
    as_dict = "{" + ", ".join(f"{k!r}: x{j}" for j, k in enumerate(keys)) + "}"
    guard = ("    if traj._detour or traj.container is not C or C._phase < SPF or "
             "C._meta is not M or T._plans is not PLANS:")
    ns.update(traj=trajectory, C=container, M=meta, T=traces, PLANS=traces._plans,
              SPF=STEP_PHASES_FROM, STEPPING=STEPPING, ISRC=InsertSampleRatioController,
              BL=container._back_late, BE=container._back_early, CAP=int(meta.capacity),
              general=general)
    source = [guard, f"        return general({as_dict})", *lines,
              *(line.replace("{KEYS}", as_dict) for line in _META_APPEND)]
    return compile_function(f"def push({args}):", source, ns, "push")


# `EpisodeMeta.append(1, 0, evict)` for a bounded ring (nothing to mark: ``back`` is 0), after
# `EpisodesBuffer._finish_episode`, as `EpisodesBuffer._start_episode` does them.
_META_START = ("""\
    C._finish_episode()
    m = M
    samp, P, n = m.samp, m.P, m.n
""" + _ADVANCE.replace("{STEP}", "1") + """\
    C._phase = STARTED
""").splitlines()


def _compile_first_state_push(trajectory, keys: tuple, general):
    """``push(*values)`` of an episode's first state (a partial push of ``keys``) after the
    previous episode's last step (or its completion): the state-like values written with the
    traces' padding function (a zero frame for the other slots), the previous episode
    finished, the metadata's entry appended; no insert is counted. Every other phase (an empty
    or kept buffer, a refused push) takes ``general``."""
    container, meta, traces = trajectory.container, trajectory.container._meta, \
        trajectory.container.traces
    pad = traces.write_function(keys, pad=True)
    pads = traces._pad_plans
    if pads.get(keys) is not pad:  # not kept by the traces: it could not be checked per push
        return None
    allowed = container._rules.allowed[PARTIAL]
    phases = tuple(p for p in (COMPLETED, STEPPING) if allowed[p])
    args = ", ".join(f"x{j}" for j in range(len(keys)))
    as_dict = "{" + ", ".join(f"{k!r}: x{j}" for j, k in enumerate(keys)) + "}"
    ns = {"traj": trajectory, "C": container, "M": meta, "T": traces, "PADS": pads,
          "PAD": pad, "PHASES": phases, "STARTED": STARTED, "CAP": int(meta.capacity),
          "general": general}
    source = [
        "    if traj._detour or traj.container is not C or C._phase not in PHASES or "
        "C._meta is not M or T._pad_plans is not PADS or PADS.get(KEYS) is not PAD:",
        f"        return general({as_dict})",
        f"    evict = PAD({as_dict})",  # raises before writing anything
        *_META_START,
    ]
    ns["KEYS"] = keys
    return compile_function(f"def push({args}):", source, ns, "push")
