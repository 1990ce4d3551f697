"""The episode rules, in one place: kinds of push, where an episode stands, what may come next.

`EpisodesBuffer` and both laned storages (one buffer per lane, lane-major rings) check every
push against these rules before writing anything, and word their refusals with `refusal`.
See ``docs/trajectories.md`` (Episodes) for the concepts.

Kinds of push, told apart by the names pushed (`classify_push`):

- *partial*: only the state-like values (``state``, ``legal_actions_mask``): an episode's
  first state;
- *full*: every slot gets a value: one step;
- *completion*: ``next_action`` alone, in layouts that have it: the action planned at the
  final state of the episode, which completes its last transition.

Phases (where the newest episode stands) and what each kind of push needs::

    phase       a full step        a partial push (new episode)    a completion
    EMPTY       no (yes without    yes                              no
                a multiplex)
    COMPLETED   no                 yes                              no
    KEPT        yes                yes: it replaces the kept state  no
    STARTED     yes                no (an episode with no step)     no
    STEPPING    yes                yes, unless next_action is due   yes

A push moves to ``STARTED`` (partial), ``STEPPING`` (full) or ``COMPLETED`` (completion).
``KEPT`` is where ``clear(keep_running_episodes=True)`` leaves a running episode: only its
newest state is kept, as the first state of whatever comes next. A step continues the episode
from it; a new episode's first state replaces it (the episode had ended at that state, which
the buffer cannot know: a time limit leaves no trace in the stored rows). An episode whose last
row awaits its ``next_action`` keeps that row too and stays ``STEPPING``.
"""

from __future__ import annotations

import numpy as np

from trajectories._casting import TraceKeyError

__all__ = ["PARTIAL", "FULL", "COMPLETION", "EMPTY", "COMPLETED", "KEPT", "STARTED", "STEPPING",
           "STEP_PHASES_FROM", "classify_push", "EpisodeRules"]

# Kinds of push.
PARTIAL, FULL, COMPLETION = range(3)
# Phases. The three from which a full step continues an episode come last, so that the common
# case (a step in a running episode) is one comparison: ``phase >= STEP_PHASES_FROM``.
EMPTY, COMPLETED, KEPT, STARTED, STEPPING = range(5)
STEP_PHASES_FROM = KEPT  # a full step is allowed in every phase from here on
_PHASE_NAMES = ("EMPTY", "COMPLETED", "KEPT", "STARTED", "STEPPING")


def classify_push(keys: tuple, slot_of: dict, slots: tuple, state_like: set,
                  completion: str | None) -> int:
    """What a push of ``keys`` is: `PARTIAL`, `FULL` or `COMPLETION`; raises for anything else.

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
        return COMPLETION
    if len(seen) == len(slots):
        return FULL
    if seen and set(seen) <= state_like:
        return PARTIAL
    missing = [slots[i][0] for i in range(len(slots)) if i not in seen]
    starts = [slots[i][0] for i in sorted(state_like)]
    raise TraceKeyError(
        f"push got {list(keys)} but is missing {missing}: a step pushes every trace "
        f"({[slot[0] for slot in slots]}); an episode starts with only {starts}")


class EpisodeRules:
    """The rules for one layout: whether it has a state multiplex and a completion name.

    ``allowed[kind][phase]`` (nested tuples, for one push) and ``table[kind, phase]`` (a bool
    array, for many lanes at once) say whether a push of that kind is allowed in that phase.

    Example:
        >>> rules = EpisodeRules(multiplexed=True, completion="next_action")
        >>> rules.allowed[PARTIAL][STEPPING], rules.allowed[COMPLETION][STEPPING]
        (False, True)
        >>> print(rules.refusal(PARTIAL, STEPPING, lane=1))
        lane 1: the last episode is not complete: push(next_action=a) with the action at its \
final state before starting a new episode
    """

    def __init__(self, multiplexed: bool, completion: str | None):
        self.multiplexed, self.completion = bool(multiplexed), completion
        # one entry per phase: EMPTY, COMPLETED, KEPT, STARTED, STEPPING
        full = (not multiplexed, False, True, True, True)
        partial = (True, True, True, False, completion is None)
        completes = (False, False, False, False, completion is not None)
        self.allowed = (partial, full, completes)  # indexed by kind: PARTIAL, FULL, COMPLETION
        self.table = np.array(self.allowed, dtype=bool)

    def refusal(self, kind: int, phase: int, lane: int | None = None) -> ValueError:
        """The error for a push of ``kind`` that the rules refuse in ``phase``."""
        c, where = self.completion, "buffer" if lane is None else "lane"
        if kind == FULL and phase == EMPTY:
            why = (f"a full step into an empty {where}: the first push must be a partial push "
                   f"of the episode's first state, e.g. push(state=s0)")
        elif kind == FULL:
            why = (f"a full step right after push({c}=...): the episode is complete; start the "
                   f"next one with a partial push, e.g. push(state=s0)")
        elif kind == PARTIAL and phase == STARTED:
            why = ("a partial push right after a partial push (an episode with no step); push a "
                   "full step first, or pop() the previous first state")
        elif kind == PARTIAL:
            why = (f"the last episode is not complete: push({c}=a) with the action at its final "
                   f"state before starting a new episode")
        elif phase == COMPLETED:
            why = f"push({c}=...) twice in a row: the episode is already complete"
        elif kind == COMPLETION:
            why = (f"push({c}=...) completes an episode's last step, but "
                   f"{'the ' + where + ' is empty' if phase == EMPTY else 'no step was pushed'}"
                   f"; push a full step first")
        else:
            why = f"push kind {kind} in phase {_PHASE_NAMES[phase]}"
        return ValueError(why if lane is None else f"lane {lane}: {why}")
