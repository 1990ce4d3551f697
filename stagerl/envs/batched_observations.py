"""Batches of observations as a gymnasium vector env gives them: arrays, or a ``Dict`` /
``Tuple`` of arrays (one batched array per leaf, the sub-env axis first). What
``GymVectorEnv`` needs to hold them: which spaces give such batches, a copy the next step cannot
touch, and the final observations of the sub-envs an autoreset restarted shown in place."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

__all__ = ["ARRAY_SPACES", "array_observations", "copied", "with_final_observations"]

ARRAY_SPACES = (
    gymnasium.spaces.Box,
    gymnasium.spaces.Discrete,
    gymnasium.spaces.MultiDiscrete,
    gymnasium.spaces.MultiBinary,
)


def array_observations(space: gymnasium.Space) -> bool:
    """Array observations, or a ``Dict``/``Tuple`` of them (one batched array per leaf)."""
    if isinstance(space, gymnasium.spaces.Dict):
        return all(array_observations(s) for s in space.spaces.values())
    if isinstance(space, gymnasium.spaces.Tuple):
        return all(array_observations(s) for s in space.spaces)
    return isinstance(space, ARRAY_SPACES)


def copied(obs: Any) -> Any:
    """A copy of a batch of observations the next step cannot touch (nested: every leaf)."""
    if isinstance(obs, dict):
        return {k: copied(v) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(copied(v) for v in obs)
    return np.array(obs)


def with_final_observations(state: Any, final_obs: Any, lanes: np.ndarray) -> Any:
    """``state`` with the sub-envs ``lanes`` showing their final observations (a copy)."""
    if isinstance(state, dict):
        return {k: with_final_observations(v, [final_obs[i][k] if i in lanes else None
                                   for i in range(len(final_obs))], lanes)
                for k, v in state.items()}
    if isinstance(state, tuple):
        return tuple(with_final_observations(v, [final_obs[i][j] if i in lanes else None
                                     for i in range(len(final_obs))], lanes)
                     for j, v in enumerate(state))
    final = state.copy()
    for i in lanes:
        final[i] = final_obs[i]
    return final
