"""Reading a rollout from lane-major rings when every lane holds the same number of steps.

A vector env's trajectory stores its sub-envs' steps in `trajectories.lanes.RingLanes`, and in
a rollout where every sub-env steps at every act (gymnasium's autoreset modes that step every
sub-env), every lane holds ``n_steps`` transitions. Then the rollout's ``(T, n_lanes)`` grid
is each field read at a ``(T, n_lanes)`` array of positions: the rows of all lanes are located
once, and no transition is placed in the grid one by one. This is the same read as
:func:`~stagerl.algorithms.on_policy.rollout.read_rollout`'s general one (which handles any
container and lanes of unequal lengths), field for field and bit for bit; a test reads both on
the same rings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trajectories.lanes import RingLanes, ring_reads

__all__ = ["read_ring_rollout", "grid_episode_steps"]


def read_ring_rollout(rings: RingLanes, policy: Any, first_steps: Any = None) -> dict | None:
    """The rollout in ``rings`` as ``read_rollout`` reads it, or ``None`` where its lanes hold
    different numbers of transitions (or none), which the general read handles.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms.on_policy.rollout import rollout_trajectory
        >>> trajectory = rollout_trajectory(rl.GymVectorEnv("CartPole-v1", num_envs=2), 4)
        >>> read_ring_rollout(trajectory.container, None) is None   # nothing stored yet
        True
    """
    located = ring_reads.lane_transitions(rings)
    if located is None:
        return None
    positions, rows, continues = located  # (n_lanes, T), lane by lane
    n_lanes, T = positions.shape
    names = [name for name in rings.keys() if name != "next_state"]
    if getattr(policy, "reads_next_state", False):  # e.g. REPS: features of every next state
        names.append("next_state")
    rollout = ring_reads.take_grid(rings, names, np.ascontiguousarray(positions.T))
    terminal = rollout["terminal"]
    steps = grid_episode_steps(terminal | rollout["truncated"], first_steps)
    # The critic's values where a chain ends without a terminal step, asked in the general
    # read's order (lane by lane) so that its batch, and so every value, is the same.
    ends = ~continues & ~terminal.T
    bootstrap = np.zeros((n_lanes, T), dtype=np.float32)
    if np.count_nonzero(ends):
        lane, k = ends.nonzero()
        global_rows = rings._offsets()[lane] + rows[lane, k]
        bootstrap[lane, k] = policy.bootstrap_values(rings, global_rows, steps[k, lane] + 1)
    rollout["step"] = steps
    rollout["bootstrap_value"] = np.ascontiguousarray(bootstrap.T)
    rollout["chain_end"] = np.ascontiguousarray(~continues.T)
    rollout["valid"] = np.ones((T, n_lanes), dtype=bool)
    return rollout


def grid_episode_steps(ended: np.ndarray, first_steps: Any = None) -> np.ndarray:
    """:func:`~stagerl.algorithms.on_policy.rollout.episode_steps` of a ``(T, n_lanes)``
    grid with no padding: the time step within its episode of every row, given whether each
    row ``ended`` its episode; row 0 of lane ``l`` is at ``first_steps[l]`` (default 0), a row
    after one that ended at 0.

    Example:
        >>> ended = np.array([[False, False], [True, False], [False, False]])
        >>> grid_episode_steps(ended, first_steps=[5, 2]).tolist()
        [[5, 2], [6, 3], [0, 4]]
    """
    T, n_lanes = ended.shape
    t = np.arange(T, dtype=np.int64)[:, None]
    restart_at = np.zeros((T, n_lanes), dtype=np.int64)  # the row each episode restarted at
    restart_at[1:] = np.where(ended[:-1], t[1:], 0)
    np.maximum.accumulate(restart_at, axis=0, out=restart_at)
    steps = t - restart_at
    if first_steps is not None:  # rows of the episode running at the rollout's start
        steps += np.where(restart_at == 0, np.asarray(first_steps, dtype=np.int64), 0)
    return steps
