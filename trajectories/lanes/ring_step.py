"""One function for the common push of a vector step into lane-major rings (`RingLanes`).

The general push of a vector step goes `Trajectory.push_function` -> `RingLanes.push_function`
-> `RingLanes._push_row` (the lane controls, the casts) -> `RingLanes._push_all` (the rules,
the ring writes, the bookkeeping) -> the controller's ``on_insert``: each layer costs more than
the numpy writes of eight lanes. `ring_step_push` writes the common case out in one function,
generated once per trajectory and set of names as `trajectories._step_push`'s is:
every lane pushed, the values already arrays each trace stores exactly, every lane holding a
state in one ring geometry (``_uniform``, ``_filled``, nothing kept by a clear). Its lines are
those of `RingLanes._push_all` for that case (a full push, with or without lanes that start a
new episode), in the same order; the rules' check of the starting lanes is kept (a lane in a
phase where the rules refuse a new episode takes the general path, which raises).

Anything else (a first push, a lane control other than ``episode_start``, a value that needs a
cast, another geometry, another container) takes the general path with the same values as a
dict. ``tests/trajectories/test_ring_step.py`` runs both paths on the same inputs: steps, new
episodes, ring wrap-around, bad values, other controllers.
"""

from __future__ import annotations

import numpy as np

from trajectories._episode_rules import FULL, PARTIAL, STARTED, STEPPING
from trajectories._fastpush import compile_function
from trajectories.controllers import InsertSampleRatioController
from trajectories.lanes.rings import RingLanes

__all__ = ["ring_step_push", "values_push"]


def values_push(keys: tuple, general):
    """``push(*values)``: ``general(step_dict)`` with the values of ``keys`` in that order
    (`step_of`)."""
    step = step_of(keys)
    return lambda *values: general(step(*values))


def step_of(keys: tuple):
    """``step(*values)``: the step dict of ``keys``' values in that order; an ``episode_start``
    of None (no lane starts an episode) is left out."""
    keys = tuple(keys)
    if "episode_start" not in keys:
        return lambda *values: dict(zip(keys, values, strict=True))

    def step(*values):
        row = dict(zip(keys, values, strict=True))
        if row["episode_start"] is None:
            del row["episode_start"]
        return row

    return step


def ring_step_push(trajectory, keys: tuple, general):
    """``push(*values)`` for vector steps of exactly the names ``keys`` (every trace of a full
    step, optionally followed by ``episode_start``: a bool per lane or None) into
    ``trajectory``'s `RingLanes`, or None when its container is not one this function covers
    (then use ``general``, the trajectory's own push of these names taking a dict; see
    `values_push`)."""
    container = trajectory.container
    if type(container) is not RingLanes or trajectory._detour:
        return None
    with_start = bool(keys) and keys[-1] == "episode_start"
    names = tuple(keys[:-1] if with_start else keys)
    if len(set(keys)) != len(keys) or not all(type(k) is str for k in names):
        return None
    if "truncated" in names and not trajectory._stores_truncated:
        return None
    try:
        kind = container._classify(names)
    except (KeyError, ValueError, TypeError):
        return None  # the general path raises it at the first push
    if kind != FULL:
        return None
    state_at = None
    plain_at = {}
    for j, name in enumerate(names):
        if name == container._state_names[0]:
            state_at = j
        else:
            plain_at[name] = j
    plain_arrays = dict(container._plain)
    if state_at is None or plain_at.keys() != plain_arrays.keys():
        return None
    n = container.n_lanes
    args = [f"x{j}" for j in range(len(names))]
    params = [*args, "part"] if with_start else args
    # the step as given (an all-False episode_start too), for a controller that reads it
    as_dict = f"STEP({', '.join([*args, 'given'] if with_start else args)})"
    to_general = f"return general({', '.join(params)})"
    ns = dict(traj=trajectory, C=container, general=values_push(keys, general),
              STEP=step_of(keys), N=n, ndarray=np.ndarray,
              BOOL=np.dtype(bool), count_nonzero=np.count_nonzero, ISRC=InsertSampleRatioController,
              ONES=np.ones(n, dtype=np.int64), SAMP=container._samp, LENS=container._lens,
              STATEST=_position_major(container._states), SAMPT=_position_major(container._samp),
              STEPST=_position_major(container._steps))
    lines = ["    if traj._detour or traj.container is not C or not C._uniform or not C._filled "
             "or C._any_kept:", f"        {to_general}"]
    if with_start:  # the lanes that start an episode, checked as `RingLanes._check` would
        refuses_started = not container._rules.allowed[PARTIAL][STARTED]
        refuses_stepping = not container._rules.allowed[PARTIAL][STEPPING]
        lines += ["    given = part", "    if part is not None:",
                  "        if type(part) is not ndarray or part.dtype is not BOOL or "
                  "part.shape != (N,):", f"            {to_general}",
                  "        starting = part.nonzero()[0].tolist()  # most such acts: one lane",
                  "        if not starting:", "            part = None"]
        if refuses_started or refuses_stepping:
            refused = "True" if refuses_started and refuses_stepping else \
                "step.item(lane) == 1" if refuses_started else "step.item(lane) != 1"
            lines += ["        else:", "            step = C._step",
                      "            for lane in starting:", f"                if {refused}:",
                      f"                    {to_general}"]
    for j, name in enumerate(names):  # values each trace stores exactly, else the casts
        dtype, frame, exact = container._frame(name)
        ns[f"EXACT{j}"], ns[f"SHAPE{j}"] = exact, (n, *frame)
        lines += [f"    if type(x{j}) is not ndarray or x{j}.dtype not in EXACT{j} or "
                  f"x{j}.shape != SHAPE{j}:", f"        {to_general}"]
    for j, (name, _) in enumerate(container._plain):
        ns[f"A{j}"] = plain_arrays[name]
        ns[f"A{j}T"] = _position_major(plain_arrays[name])
    writes = "\n".join(f"    A{j}T[prev] = x{plain_at[name]}"
                        for j, (name, _) in enumerate(container._plain))
    pads = "\n".join(f"            A{j}[lane, prev] = 0" for j in range(len(container._plain)))
    source = _BODY.format(state=f"x{state_at}", writes=writes, pads=pads, as_dict=as_dict)
    if not with_start:
        source = source.replace("    if part is None:", "    if True:")
    lines += source.splitlines()
    header = f"def push({', '.join(params)}):"
    return compile_function(header, lines, ns, "push")


def _position_major(array):
    """``array`` (lanes first) seen positions first: ``view[p]`` is ``array[:, p]``, which an
    integer index writes faster than the pair ``[:, p]`` (~0.03-0.05 us a write)."""
    return np.swapaxes(array, 0, 1)


# `RingLanes._push_all` for uniform geometry, every lane holding a state, a full push; where
# some lanes start an episode, lane by lane (scalar writes cost ~0.1 us, a masked write ~0.6
# us): the row into the new episode is padding, the episode before ends (`RingLanes._finish`)
# and the lane's step count starts again.
_BODY = """\
    P = C._P
    C._version += 1
    um = C._um
    if um == P:  # every ring is full: each lane's oldest state and row go
        s = C._us
        oldest = SAMPT[s]
        C._n_samp -= int(count_nonzero(oldest))
        oldest.fill(False)
        C._us = (s + 1) % P
        C._start.fill(C._us)
        um = C._um = um - 1
    us = C._us
    new = (us + um) % P
    prev = new - 1 if new else P - 1
    STATEST[new] = {state}
{writes}
    step = C._step
    SAMPT[prev] = True
    if part is None:
        inserted = N
        C.last_full = None
        step += ONES
    else:
        for lane in starting:
{pads}
            SAMP[lane, prev] = False
            ended = step.item(lane)
            k = min(ended, um)
            a = (us + um - k) % P  # the episode's entries are a..a+k-1, mod P
            if a + k <= P:
                LENS[lane, a:a + k] = ended - 1
            else:  # they wrap around the ring's end
                LENS[lane, a:] = ended - 1
                LENS[lane, :a + k - P] = ended - 1
        inserted = N - len(starting)
        C.last_full = ~part
        step += ONES
        for lane in starting:
            step[lane] = 1
    STEPST[new] = step
    C._n_samp += inserted
    C._um = um + 1
    C._m.fill(um + 1)
    if inserted:
        c = traj.controller
        if type(c) is ISRC and "on_insert" not in c.__dict__:
            c.n_inserted += inserted
        else:
            c.on_insert(inserted, C.inserted({as_dict}))
"""
