"""Gymnasium wrappers that ship with stagerl: observations with parts hidden, the classic way to
make a task that needs memory (CartPole without its velocities).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np

__all__ = ["MaskObservation", "MaskedEnvMaker", "CARTPOLE_POSITIONS",
           "cartpole_without_velocities"]

#: CartPole's observation is (cart position, cart velocity, pole angle, pole angular velocity):
#: the positions are entries 0 and 2.
CARTPOLE_POSITIONS = (0, 2)


class MaskObservation(gymnasium.ObservationWrapper):
    """Keep only the entries ``keep`` of a flat ``Box`` observation (in that order).

    A policy that sees CartPole's positions but not its velocities must remember earlier
    positions to act well: a memoryless policy stays near a return of 50, a recurrent one
    reaches 500.

    Args:
        env: a gymnasium env with a one-axis ``Box`` observation space.
        keep: the indices of the entries kept (distinct, in range).

    Example:
        >>> import gymnasium
        >>> env = MaskObservation(gymnasium.make("CartPole-v1"), keep=(0, 2))
        >>> observation, _ = env.reset(seed=0)
        >>> env.observation_space.shape, observation.shape
        ((2,), (2,))
    """

    def __init__(self, env: Any, keep: Sequence[int]):
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gymnasium.spaces.Box) or len(space.shape) != 1:
            raise TypeError(f"MaskObservation needs a flat Box observation space, got {space}")
        keep = tuple(keep)
        if not keep or any(isinstance(i, bool) or not isinstance(i, (int, np.integer))
                           for i in keep):
            raise TypeError(f"MaskObservation: keep must be indices (ints), got keep={keep!r}")
        if len(set(keep)) != len(keep) or not all(0 <= i < space.shape[0] for i in keep):
            raise ValueError(f"MaskObservation: keep must be distinct indices in [0, "
                             f"{space.shape[0]}), got keep={keep!r}")
        self.keep = np.asarray(keep, dtype=np.int64)
        self.observation_space = gymnasium.spaces.Box(
            space.low[self.keep], space.high[self.keep], dtype=space.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[self.keep]


def cartpole_without_velocities(env: Any) -> MaskObservation:
    """``env`` (a CartPole) with only its positions observed (``MaskObservation`` keeping
    :data:`CARTPOLE_POSITIONS`); a wrapper for ``gymnasium.make_vec(..., wrappers=[...])``."""
    return MaskObservation(env, CARTPOLE_POSITIONS)


class MaskedEnvMaker:
    """Makes ``MaskObservation(gymnasium.make(env_id, **kwargs), keep)``: a factory for
    ``gymnasium.vector.SyncVectorEnv`` that is plain data (a vector env of masked envs can be
    checkpointed, where one holding a function could not).

    Example:
        >>> from gymnasium.vector import SyncVectorEnv
        >>> envs = SyncVectorEnv([MaskedEnvMaker("CartPole-v1", CARTPOLE_POSITIONS)] * 2)
        >>> envs.single_observation_space.shape
        (2,)
    """

    def __init__(self, env_id: str, keep: Sequence[int], **kwargs: Any):
        self.env_id, self.keep, self.kwargs = env_id, tuple(keep), dict(kwargs)

    def __call__(self) -> MaskObservation:
        return MaskObservation(gymnasium.make(self.env_id, **self.kwargs), self.keep)

    def __repr__(self) -> str:
        return f"MaskedEnvMaker({self.env_id!r}, keep={self.keep})"
