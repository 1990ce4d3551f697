"""One function for the common push of a vector step into lane-major rings (`RingLanes`).

The general push of a vector step goes `Trajectory.push_function` -> `RingLanes.push_function`
-> `RingLanes._push_row` (the lane controls, the casts) -> `RingLanes._push_all` (the rules,
the ring writes, the bookkeeping) -> the controller's ``on_insert``: each layer costs more than
the numpy writes of eight lanes. `ring_step_push` writes the common case out in one function:
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
from trajectories.controllers import InsertSampleRatioController
from trajectories.lanes.rings import RingLanes

__all__ = ["ring_step_push"]

_count_nonzero = np.count_nonzero  # ~0.2 us on a few lanes, where .any() costs ~1 us
_ndarray = np.ndarray


def ring_step_push(trajectory, keys: tuple, general):
    """``push(*values)`` for vector steps of exactly the names ``keys`` (every trace of a full
    step, optionally followed by ``episode_start``: a bool per lane or None) into
    ``trajectory``'s `RingLanes`, or None when its container is not one this function covers
    (then use ``general``, the trajectory's own push of these names taking a dict)."""
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
    exact = [(j, frame[2], (n, *frame[1])) for j, frame in
             enumerate(container._frame(name) for name in names)]
    plain = [(plain_arrays[name], j) for name, j in plain_at.items()]
    refuses_started = not container._rules.allowed[PARTIAL][STARTED]
    refuses_stepping = not container._rules.allowed[PARTIAL][STEPPING]
    ones = np.ones(n, dtype=np.int64)
    C, isrc = container, InsertSampleRatioController

    def push(*values):
        if trajectory._detour or trajectory.container is not C or not C._uniform \
                or not C._filled or C._any_kept:
            return general(dict(zip(keys, values, strict=True)))
        if with_start:
            if len(values) != len(keys):
                return general(dict(zip(keys, values, strict=True)))
            part = values[-1]
            if part is not None:
                if type(part) is not _ndarray or part.dtype != np.bool_ or part.shape != (n,):
                    return general(dict(zip(keys, values, strict=True)))
                starting = part.nonzero()[0].tolist()  # most such acts: one lane or two
                if not starting:
                    part = None
                elif refuses_started or refuses_stepping:
                    step = C._step
                    for lane in starting:
                        if refuses_started if step[lane] == 1 else refuses_stepping:
                            return general(dict(zip(keys, values, strict=True)))
        else:
            part = None
        for j, ok, shape in exact:
            v = values[j]
            if type(v) is not _ndarray or v.dtype not in ok or v.shape != shape:
                return general(dict(zip(keys, values, strict=True)))
        # `RingLanes._push_all`, uniform geometry, every lane holding a state, a full push.
        P = C._P
        C._version += 1
        samp = C._samp
        if C._um == P:  # every ring is full: each lane's oldest state and row go
            s = C._us
            oldest = samp[:, s]
            C._n_samp -= int(_count_nonzero(oldest))
            oldest.fill(False)
            C._us = (s + 1) % P
            C._start.fill(C._us)
            C._um -= 1
        new = (C._us + C._um) % P
        prev = new - 1 if new else P - 1
        C._states[:, new] = values[state_at]
        for arr, j in plain:
            arr[:, prev] = values[j]
        step = C._step
        if part is None:
            samp[:, prev].fill(True)
            inserted = n
            C.last_full = None
            step += ones
        else:
            # Lane by lane (scalar writes cost ~0.1 us, a masked write ~0.6 us): the rows into
            # a new episode are padding, the episode before ends (`RingLanes._finish`, uniform
            # geometry) and the lane's step count starts again.
            samp[:, prev].fill(True)
            lens, us, um = C._lens, C._us, C._um
            for lane in starting:
                for arr, _ in plain:
                    arr[lane, prev] = 0
                samp[lane, prev] = False
                ended = int(step[lane])
                k = min(ended, um)
                a = (us + um - k) % P  # the episode's entries are a..a+k-1, mod P
                b = min(a + k, P)
                lens[lane, a:b] = ended - 1
                lens[lane, :a + k - b] = ended - 1
            inserted = n - len(starting)
            C.last_full = ~part
            step += ones
            for lane in starting:
                step[lane] = 1
        C._steps[:, new] = step
        C._n_samp += inserted
        C._um += 1
        C._m.fill(C._um)
        if inserted:
            c = trajectory.controller
            if type(c) is isrc and "on_insert" not in c.__dict__:
                c.n_inserted += inserted
            else:
                c.on_insert(inserted, C.inserted(dict(zip(keys, values, strict=True))))

    return push
