"""On-policy rollouts: the trajectory that holds them, reading one into a time-major grid,
and the estimators that add advantages or returns to it.

The rollout grid, ``(T, n_lanes)`` (one column per sub-env, time down the rows)::

    lane 0:  s0 a0 r0 | s1 a1 r1 | s2 a2 r2 (terminal)  | s0' a0' r0'     <- rollout's end
    lane 1:  s0 a0 r0 | s1 a1 r1 (truncated)            | s0' a0' r0' | s1' a1' r1'
              chain_end: False       True, bootstrap V(final observation)    True, V(next_state)

``chain_end`` is True where the next row does not continue the same episode: a terminal step
(nothing bootstrapped), a truncated step or the lane's last step of the rollout (both
bootstrapped: ``bootstrap_value`` holds the critic's value of the true next state there).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from stagerl.algorithms.extractors import observation_spec
from stagerl.algorithms.on_policy.networks import check_spaces
from stagerl.algorithms.on_policy.rollout_rings import read_ring_rollout
from stagerl.core.env import VectorEnv
from stagerl.utils.distributions import action_distribution
from stagerl.utils.returns import discount_rewards, generalized_advantage_estimation
from trajectories import (
    CircularArrayBuffer,
    CircularArraySARTSTraces,
    InsertSampleRatioController,
    Traces,
    Trajectory,
)
from trajectories.lanes import RingLanes, ring_reads
from trajectories.nested import is_nested, tree_map

__all__ = ["rollout_trajectory", "legal_actions_mask_spec", "rows_selector", "rows_of",
           "check_rollout_size", "read_rollout", "read_rollout_rows", "take_columns",
           "time_major", "episode_steps", "carried_steps", "add_gae", "add_discounted_returns",
           "make_vector_env"]


def rollout_trajectory(env: Any, n_steps: int, controller: Any = None,
                       lane_capacity: int | None = None, extra: dict | None = None) -> Trajectory:
    """The trajectory of an on-policy agent: SARTS traces plus ``log_prob``, ``value`` and
    ``truncated``, one lane per sub-env, whose controller allows one sample per rollout of
    ``n_steps`` transitions per sub-env (or ``controller``'s rule). In an env with legal-action
    masks (a game's player) every state's mask is stored too (``legal_actions_mask``: the mask
    each action was drawn under).

    Each episode end adds a boundary row to its lane (its last state, then the next episode's
    first state), so a lane holds ``2 * n_steps + 1`` rows by default (``lane_capacity``).
    ``extra`` adds traces, ``{name: (dtype, shape)}`` (a recurrent policy's state).

    Example:
        >>> import stagerl as rl
        >>> trajectory = rollout_trajectory(rl.GymVectorEnv("CartPole-v1", num_envs=4), 32)
        >>> trajectory.keys()[-3:], trajectory.controller.threshold
        (('log_prob', 'value', 'truncated'), 128)
    """
    state_space, action_space, n_envs = check_spaces(env, "rollout_trajectory")
    capacity = (lane_capacity or 2 * n_steps + 1) * n_envs
    dist = action_distribution(action_space, "rollout_trajectory")
    action = (dist.action_dtype, dist.action_shape)
    traces = CircularArraySARTSTraces(capacity, state=observation_spec(state_space),
                                      action=action,
                                      legal_actions_mask=legal_actions_mask_spec(env)) + Traces(
        log_prob=CircularArrayBuffer(capacity, (), np.float32),
        value=CircularArrayBuffer(capacity, (), np.float32),
        truncated=CircularArrayBuffer(capacity, (), np.bool_),
        **{name: CircularArrayBuffer(capacity, tuple(shape), dtype)
           for name, (dtype, shape) in (extra or {}).items()})
    if controller is None:
        batch = n_steps * n_envs
        controller = InsertSampleRatioController(ratio=1 / batch, threshold=batch)
    # One lane per sub-env of a vector env (even of one sub-env); a single env needs none.
    return Trajectory(traces, controller=controller,
                      n_lanes=n_envs if isinstance(env, VectorEnv) else None)


def legal_actions_mask_spec(env: Any) -> tuple | None:
    """The ``(dtype, shape)`` of the legal-action masks ``env`` tells (``legal_actions_mask``:
    a game's player), one bool per action of its ``Discrete`` action space; ``None`` for an
    env without masks. Masks of any other action space raise a ``TypeError``: only a
    categorical acts and learns under them."""
    if not (hasattr(type(env), "legal_actions_mask") or hasattr(env, "legal_actions_mask")):
        return None
    _, action_space, _ = check_spaces(env, "rollout_trajectory")
    if not isinstance(action_space, gymnasium.spaces.Discrete):
        raise TypeError(
            f"{env!r} has legal-action masks (legal_actions_mask), which the on-policy "
            f"algorithms take for a Discrete action space only, got {action_space}; give the "
            "env a Discrete action space, or drop its masks")
    return np.bool_, (int(action_space.n),)


def rows_selector(rows: np.ndarray) -> Any:
    """A function from a ``(T, n_lanes, ...)`` grid to its rows where ``rows`` (bool
    ``(T, n_lanes)``) is True, time-major (``t``, then the lane), C-contiguous; where every
    row is selected, a view of the grid (no copy).

    Example:
        >>> grid = np.arange(6).reshape(3, 2)
        >>> rows_selector(np.array([[True, False], [True, True], [False, True]]))(grid).tolist()
        [0, 2, 3, 5]
    """
    if rows.all():
        return lambda grid: np.ascontiguousarray(grid.reshape(-1, *grid.shape[2:]))
    return lambda grid: np.ascontiguousarray(grid[rows])


def rows_of(batch: dict, rows: Any) -> dict:
    """The rows ``rows`` of every field of ``batch`` (tensors or arrays; nested fields leaf by
    leaf): a minibatch."""
    return {name: tree_map(lambda v: v[rows], value) for name, value in batch.items()}


def check_rollout_size(who: str, n_steps: int, n_envs: int, batch_size: int) -> None:
    """``ValueError`` when a rollout (``n_steps`` per sub-env) holds fewer transitions than one
    minibatch of ``batch_size``."""
    if n_steps * n_envs < batch_size:
        raise ValueError(
            f"{who}: a rollout holds n_steps * num_envs = {n_steps} * {n_envs} = "
            f"{n_steps * n_envs} transitions, fewer than batch_size={batch_size}; raise n_steps "
            "(or the number of sub-envs) or lower batch_size")


def read_rollout(container: Any, policy: Any, first_steps: Any = None) -> dict:
    """The rollout in ``container`` as ``(T, n_lanes, ...)`` numpy arrays, time-major per lane;
    ``policy`` (an ``OnPolicy``) gives its baseline's values where a chain is bootstrapped
    (``policy.state_values``; the critic's for a policy without one).

    Fields: the traces (``state``, ``action``, ``reward``, ``terminal``, ``truncated``,
    ``log_prob``, ``value``, ``legal_actions_mask`` when stored, and any other but
    ``next_state``), ``valid`` (False on padding, where a lane has fewer than ``T`` steps),
    ``chain_end`` (the next row does not continue the episode), ``step`` (the row's time step
    within its episode: a lane's first row is at ``first_steps[lane]``, default 0, and each
    terminal or truncated row's successor at 0) and ``bootstrap_value``
    (``policy.bootstrap_values``: the baseline's value of the next state where a chain ends
    without a terminal step: a truncated episode's true final observation, or the state after
    the rollout's last step). A policy whose ``reads_next_state`` is True also gets
    ``next_state``, every row's next state.

    Lane-major rings whose lanes hold the same number of transitions (a vector env's rollout)
    are read by :func:`.rollout_rings.read_ring_rollout`, the same read in fewer steps.
    """
    laned = hasattr(container, "lane_of")
    n_lanes = container.n_lanes if laned else 1
    held = container.lane_lengths() if laned else [len(container)]
    if max(held) >= container.capacity // n_lanes:
        raise RuntimeError(f"a rollout filled a lane's ring ({max(held)} rows): its oldest steps "
                           "may be lost; give rollout_trajectory a larger lane_capacity")
    if isinstance(container, RingLanes):  # a vector env's: lanes of equal lengths read at once
        rollout = read_ring_rollout(container, policy, first_steps)
        if rollout is not None:
            return rollout
    return read_rollout_rows(container, policy, first_steps)


def read_rollout_rows(container: Any, policy: Any, first_steps: Any = None) -> dict:
    """:func:`read_rollout` row by row: any container, lanes of any lengths (padded); the
    reference that the read of lane-major rings is tested against."""
    laned = hasattr(container, "lane_of")
    n_lanes = container.n_lanes if laned else 1
    n = len(container)
    rows = np.arange(n)
    ok = np.asarray(container.is_sampleable_at(rows), dtype=bool)
    lanes = container.lane_of(rows)[0] if laned else np.zeros(n, dtype=np.int64)
    idx = np.flatnonzero(ok)  # the transitions, lane by lane, each lane in time order
    after = np.minimum(idx + 1, n - 1)
    continues = (idx + 1 < n) & ok[after] & (lanes[after] == lanes[idx])
    lane = lanes[idx]
    counts = np.bincount(lane, minlength=n_lanes)
    t = np.arange(len(idx)) - (np.cumsum(counts) - counts)[lane]
    length = int(counts.max()) if n_lanes else 0

    def grid(values: Any, fill: Any = 0) -> Any:
        if type(values) is not np.ndarray and is_nested(values):  # a grid per leaf
            return tree_map(lambda leaf: grid(leaf, fill), values)
        return time_major(values, t, lane, counts, fill, length)

    # Every trace but next_state (the states read where a chain ends, below): the step's own
    # and what the policy recorded with it (log_prob, value, a recurrent state...).
    names = [name for name in container.keys() if name != "next_state"]
    columns = take_columns(container, names, idx)
    steps = episode_steps(t, lane, columns["terminal"] | columns["truncated"], n_lanes,
                          first_steps)
    bootstrap = np.zeros(len(idx), dtype=np.float32)
    ends = ~continues & ~columns["terminal"]
    if ends.any():
        bootstrap[ends] = policy.bootstrap_values(container, idx[ends], steps[ends] + 1)
    rollout = {name: grid(values) for name, values in columns.items()}
    if getattr(policy, "reads_next_state", False):  # e.g. REPS: features of every next state
        rollout["next_state"] = grid(container.take("next_state", idx))
    rollout["step"] = grid(steps)
    rollout["bootstrap_value"] = grid(bootstrap)
    rollout["chain_end"] = grid(~continues, fill=True)
    rollout["valid"] = grid(np.ones(len(idx), dtype=bool), fill=False)
    return rollout


def take_columns(container: Any, names: list, rows: np.ndarray) -> dict:
    """``{name: container.take(name, rows)}`` for every trace of ``names``; on lane-major rings
    (``RingLanes``, a vector env's trajectory) the rows are located once for all of them.

    Example:
        >>> import stagerl as rl
        >>> trajectory = rollout_trajectory(rl.GymVectorEnv("CartPole-v1", num_envs=2), 4)
        >>> take_columns(trajectory.container, ["reward", "value"], np.arange(0))["value"].shape
        (0,)
    """
    if isinstance(container, RingLanes):
        return ring_reads.take_columns(container, names, rows)
    return {name: container.take(name, rows) for name in names}


def time_major(values: np.ndarray, t: np.ndarray, lane: np.ndarray, counts: np.ndarray,
               fill: Any = 0, length: int | None = None) -> np.ndarray:
    """The ``(T, n_lanes, ...)`` grid of ``values`` (one per transition, lane by lane, each
    lane in time order: transition ``i`` at row ``t[i]`` of lane ``lane[i]``; lane ``l`` holds
    ``counts[l]`` of them), ``fill`` where a lane has fewer than ``T = max(counts)``
    (``length``: ``T`` when the caller knows it).

    Example:
        >>> t, lane = np.array([0, 1, 0]), np.array([0, 0, 1])
        >>> time_major(np.array([1, 2, 3]), t, lane, np.array([2, 1]), fill=-1).tolist()
        [[1, 3], [2, -1]]
    """
    n_lanes = len(counts)
    if length is None:
        length = int(counts.max()) if n_lanes else 0
    if len(values) == n_lanes * length:  # every lane full (the usual rollout): a transpose
        return np.ascontiguousarray(
            values.reshape(n_lanes, length, *values.shape[1:]).swapaxes(0, 1))
    out = np.full((length, n_lanes, *values.shape[1:]), fill, dtype=values.dtype)
    out[t, lane] = values
    return out


def episode_steps(t: np.ndarray, lane: np.ndarray, ended: np.ndarray, n_lanes: int,
                  first_steps: Any = None) -> np.ndarray:
    """The time step within its episode of each transition, given each transition's row ``t``
    in its lane, its ``lane`` and whether it ``ended`` its episode (terminal or truncated);
    transitions come lane by lane, each lane in time order. A lane's first transition is at
    ``first_steps[lane]`` (default 0), a transition after one that ended at 0.

    Example:
        >>> t, lane = np.array([0, 1, 2, 0, 1]), np.array([0, 0, 0, 1, 1])
        >>> ended = np.array([False, True, False, False, False])
        >>> episode_steps(t, lane, ended, 2, first_steps=[5, 2]).tolist()
        [5, 6, 0, 2, 3]
    """
    n = len(t)
    first = np.zeros(n_lanes, dtype=np.int64) if first_steps is None else \
        np.asarray(first_steps, dtype=np.int64)
    position = np.arange(n)
    starts = t == 0
    resets = starts.copy()
    resets[1:] |= ended[:-1] & ~starts[1:]
    start_at = np.maximum.accumulate(np.where(resets, position, 0)) if n else position
    offset = np.where(starts[start_at], first[lane[start_at]] if n else 0, 0)
    return (position - start_at + offset).astype(np.int64)


def carried_steps(rollout: dict, first_steps: Any = None) -> np.ndarray:
    """Each lane's episode step after ``rollout`` (the ``first_steps`` of the next one): its
    last row's step + 1, 0 where that row ended its episode, ``first_steps`` (or 0) for a lane
    without rows."""
    valid = rollout["valid"]
    n_lanes = valid.shape[1]
    if len(valid) and valid.all():  # every lane's last row is the grid's last
        ended = rollout["terminal"][-1] | rollout["truncated"][-1]
        return np.where(ended, 0, rollout["step"][-1] + 1)
    carried = np.zeros(n_lanes, dtype=np.int64) if first_steps is None else \
        np.asarray(first_steps, dtype=np.int64).copy()
    held = valid.sum(axis=0)
    lanes = np.flatnonzero(held)
    last = held[lanes] - 1
    ended = rollout["terminal"][last, lanes] | rollout["truncated"][last, lanes]
    carried[lanes] = np.where(ended, 0, rollout["step"][last, lanes] + 1)
    return carried


def add_gae(rollout: dict, gamma: float, lam: float) -> dict:
    """Add GAE(gamma, lambda) ``advantage`` and ``return = advantage + value`` to ``rollout``.

    The bootstrap value is folded into the reward of the step where a chain ends, which is then
    marked terminal, so ``generalized_advantage_estimation`` never reads past it.
    """
    rewards = rollout["reward"] + gamma * rollout["bootstrap_value"]
    values = np.concatenate([rollout["value"], np.zeros_like(rollout["value"][:1])])
    advantage = generalized_advantage_estimation(rewards, values, gamma, lam,
                                                 terminal=rollout["chain_end"])
    rollout["advantage"] = advantage.astype(np.float32)
    rollout["return"] = (advantage + rollout["value"]).astype(np.float32)
    return rollout


def add_discounted_returns(rollout: dict, gamma: float) -> dict:
    """Add the discounted ``return`` of every step (Monte-Carlo, bootstrapped where a chain
    ends without a terminal step)."""
    rewards = rollout["reward"] + gamma * rollout["bootstrap_value"]
    returns = discount_rewards(rewards, gamma, terminal=rollout["chain_end"])
    rollout["return"] = returns.astype(np.float32)
    return rollout


def make_vector_env(env_id: str, num_envs: int, seed: int) -> Any:
    """``num_envs`` sub-envs of ``env_id`` (sync) resetting in the step that ends an episode
    (gymnasium's SAME_STEP autoreset): every act is a step of every sub-env, as in
    Stable-Baselines3, and the truncated episode's final observation comes with its step."""
    from stagerl.envs.vector import GymVectorEnv

    return GymVectorEnv(env_id, num_envs=num_envs, seed=seed, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
