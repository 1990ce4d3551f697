"""The kinds of push an episode buffer accepts, told apart by the names pushed.

Shared by `EpisodesBuffer` and the laned buffers of vector envs.
"""

from __future__ import annotations

from trajectories._casting import TraceKeyError

# An episode's first state, a whole step, a ``next_action`` completion (DESIGN §8 rules 1-4).
_PARTIAL, _FULL, _COMPLETION = range(3)


def classify_push(keys: tuple, slot_of: dict, slots: tuple, state_like: set,
                  completion: str | None) -> int:
    """What a push of ``keys`` is: an episode's first state (``_PARTIAL``), a whole step
    (``_FULL``) or a ``next_action`` completion (``_COMPLETION``); raises for anything else.

    ``slot_of`` maps each trace name to its slot, ``slots`` lists the names of each slot,
    ``state_like`` holds the slots a new episode starts with.
    """
    seen = {}
    for k in keys:
        if k not in slot_of:
            raise TraceKeyError(f"unknown trace {k!r}; the traces are "
                                f"{tuple(name for slot in slots for name in slot)}")
        i = slot_of[k]
        if i in seen:
            raise ValueError(f"got both {seen[i]!r} and {k!r}, two names of one "
                             f"multiplexed trace; push only one of them")
        seen[i] = k
    if completion is not None and keys == (completion,):
        return _COMPLETION
    if len(seen) == len(slots):
        return _FULL
    if seen and set(seen) <= state_like:
        return _PARTIAL
    missing = [slots[i][0] for i in range(len(slots)) if i not in seen]
    starts = [slots[i][0] for i in sorted(state_like)]
    raise TraceKeyError(
        f"push got {list(keys)} but is missing {missing}: a step pushes every trace "
        f"({[slot[0] for slot in slots]}); an episode starts with only {starts}")
