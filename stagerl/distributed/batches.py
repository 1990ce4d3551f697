"""Rollout batches: what a worker's Agent recorded, cut into episode fragments.

A worker's trajectory records its steps as the Agent records them in one process (one lane per
sub-env). When a batch is due the worker reads every lane into :class:`Fragment` s, one per
stretch of an episode, empties the trajectory and gives the lanes whose episode goes on their
current state again as a first state, so the next batch carries the rest of those episodes::

    lane 0:  s0 s1 s2 s3 | s4 s5          (| : an episode boundary, a padding row)
             fragment e7 (new)  fragment e8 (new, cut by the batch: goes on)
    next batch, lane 0:  s5 s6 s7 ...     fragment e8 (first_step=1: the rest of e8)

A fragment carries its first state and every next state (``T + 1`` states for ``T`` steps), the
other traces (``T`` rows each: action, reward, terminal and any extra trace such as
``log_prob``), the ``truncated`` flag of each step (True where a time limit ended the episode),
its episode's id (unique across workers and their replacements) and ``first_step``, the number
of the episode's steps in earlier fragments. The learner joins a fragment to the episode a lane
holds only when both match, so fragments of different workers or episodes are never joined.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from stagerl.core.env import VectorEnv

__all__ = ["Fragment", "RolloutBatch", "RecordOnly", "FragmentReader"]


@dataclass
class Fragment:
    """A stretch of one episode of one sub-env of one worker.

    Attributes:
        lane: the worker's sub-env (0 on a single env).
        episode_id: ``(worker, incarnation, n)``: unique across workers and replacements.
        first_step: the episode's steps shipped in earlier fragments (0: the episode starts).
        columns: ``state`` with ``T + 1`` rows, every other trace with ``T`` rows, and
            ``truncated`` (one bool per step).
    """

    lane: int
    episode_id: tuple
    first_step: int
    columns: dict

    @property
    def n_steps(self) -> int:
        return len(self.columns["truncated"])


@dataclass
class RolloutBatch:
    """What one call of a worker returns.

    Attributes:
        worker: the worker's slot (0 .. workers - 1); a replacement keeps the slot.
        incarnation: 0 for the first actor of the slot, counting up with each replacement.
        sequence: the batch's number in its worker's life (0, 1, ...).
        version: the version of the weights that acted.
        fragments: the episode fragments, lane by lane.
        env_steps: the transitions in the batch (the sum of the fragments' steps).
        episodes: ``(return, length)`` of every episode that ended in the batch.
        seconds: the time the worker took to act the batch.
        gradients: what ``compute_gradients`` gave on the batch, when it was asked for (A3C;
            else ``None``).
    """

    worker: int
    incarnation: int
    sequence: int
    version: int
    fragments: list
    env_steps: int
    episodes: list = field(default_factory=list)
    seconds: float = 0.0
    gradients: Any = None

    @property
    def key(self) -> tuple:
        """``(worker, incarnation, sequence)``: no two batches share it."""
        return self.worker, self.incarnation, self.sequence


class RecordOnly:
    """A controller that counts inserts and never allows a sample: a worker's trajectory
    records, its learner (elsewhere) learns.

    Example:
        >>> c = RecordOnly()
        >>> c.on_insert(3); c.on_sample(), c.n_inserted
        (False, 3)
    """

    def __init__(self) -> None:
        self.n_inserted = 0

    def on_insert(self, n: int, data: Any = None) -> None:
        self.n_inserted += n

    def on_sample(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"RecordOnly(n_inserted={self.n_inserted})"


def _lane_rows(container: Any) -> list:
    """The global rows of each lane, in order (one lane for a single env's EpisodesBuffer)."""
    lengths = container.lane_lengths() if hasattr(container, "lane_lengths") \
        else [len(container)]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return [np.arange(offsets[i], offsets[i + 1]) for i in range(len(lengths))]


class FragmentReader:
    """Reads a worker's trajectory into fragments and starts its lanes again (see the module
    docstring). One per worker; it keeps each lane's running episode id and length.

    Args:
        worker: the worker's slot.
        incarnation: the worker's replacement count (part of every episode id).
        n_lanes: the sub-envs of the worker's env.
    """

    def __init__(self, worker: int, incarnation: int, n_lanes: int):
        self.worker, self.incarnation, self.n_lanes = worker, incarnation, n_lanes
        self._next_id = 0
        self._episode = [self._new_id() for _ in range(n_lanes)]  # each lane's running episode
        self._shipped = [0] * n_lanes  # its steps already shipped
        self._goes_on = [False] * n_lanes  # the lane was started again after the last batch

    def _new_id(self) -> tuple:
        self._next_id += 1
        return self.worker, self.incarnation, self._next_id - 1

    def read(self, trajectory: Any, env: Any) -> list:
        """The fragments of every lane of ``trajectory`` (read, not changed)."""
        container = trajectory.container
        stored = set(container.keys())
        names = [n for n in container.keys() if n != "next_state"]
        ended_now = self._ended_without_restart(env)
        truncated_now = np.broadcast_to(np.asarray(env.is_truncated, dtype=bool),
                                        (self.n_lanes,))
        fragments = []
        for lane, rows in enumerate(_lane_rows(container)):
            if len(rows) == 0:
                continue  # a lone first state (or nothing): no step yet
            samp = np.asarray(container.is_sampleable_at(rows), dtype=bool)
            columns = {n: container.take(n, rows) for n in names}
            last_state = container.take("next_state", rows[-1:])
            states = np.concatenate([columns.pop("state"), last_state])
            # Runs of steps; a row that is not a step is an episode boundary (padding).
            edges = np.flatnonzero(np.diff(np.concatenate([[0], samp.view(np.int8), [0]])))
            runs = list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))
            for k, (a, b) in enumerate(runs):
                goes_on = k == 0 and a == 0 and self._goes_on[lane]
                if not goes_on:
                    self._episode[lane], self._shipped[lane] = self._new_id(), 0
                cols = {n: c[a:b] for n, c in columns.items()}
                cols["state"] = states[a:b + 1]
                if "truncated" not in stored:
                    flags = np.zeros(b - a, dtype=bool)
                    closed = b < len(rows) or ended_now[lane]  # its episode ended
                    truncated = truncated_now[lane] if b == len(rows) else True
                    flags[-1] = bool(closed and truncated and not cols["terminal"][-1])
                    cols["truncated"] = flags
                else:
                    cols["truncated"] = np.asarray(cols["truncated"], dtype=bool)
                fragments.append(Fragment(lane, self._episode[lane], self._shipped[lane], cols))
                self._shipped[lane] += b - a
            if not samp[-1]:  # the lane's newest state starts an episode that has no step yet
                self._episode[lane], self._shipped[lane] = self._new_id(), 0
        return fragments

    def restart(self, trajectory: Any, env: Any) -> None:
        """After ``trajectory.clear()``: give every lane whose episode goes on its current
        state as a first state; the loop starts the others itself (a reset)."""
        goes_on = ~self._ended_without_restart(env)
        self._goes_on = goes_on.tolist()
        if not goes_on.any():
            return
        if isinstance(env, VectorEnv):
            trajectory.push(state=env.state, lanes=goes_on)
        else:
            trajectory.push(state=env.state)

    def _ended_without_restart(self, env: Any) -> np.ndarray:
        """Per lane: its episode ended at the last act and no new one has started yet."""
        ended = np.logical_or(env.is_terminated, env.is_truncated)
        if isinstance(env, VectorEnv) and env.autoreset_mode is AutoresetMode.SAME_STEP:
            return np.zeros(self.n_lanes, dtype=bool)  # ended lanes were reset in that act
        return np.broadcast_to(np.asarray(ended, dtype=bool), (self.n_lanes,)).copy()
