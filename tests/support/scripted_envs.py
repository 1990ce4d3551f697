"""A scripted, fully deterministic environment whose every transition can be identified.

Made for checking vector-env bookkeeping: each sub-env (lane) has its own episode length, its
observations say where they come from (``[lane, episode, t]``) and its episodes alternate between
ending by termination and by truncation (a ``TimeLimit``), so a test can tell exactly which
transitions were stored, which were lost and which pair states of two episodes or two lanes.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import TimeLimit

__all__ = ["ScriptedLaneEnv", "scripted_env", "scripted_vector_env"]


class ScriptedLaneEnv(gymnasium.Env):
    """Observation ``[lane, episode, t]``; reward ``100 * lane + 10 * t + action``.

    ``t`` counts the steps of the current episode (0 at reset) and ``episode`` the resets (0
    for the first). Even episodes terminate after ``length`` steps; odd episodes never terminate
    (wrap it in ``TimeLimit(env, length + 1)``, as :func:`scripted_env` does, to truncate them
    after ``length + 1`` steps).

    Example:
        >>> from scripted_envs import scripted_env
        >>> env = scripted_env(lane=1, length=2)
        >>> env.reset()[0].tolist()
        [1, 0, 0]
        >>> [env.step(1)[1:4] for _ in range(2)]
        [(101.0, False, False), (111.0, True, False)]
        >>> env.reset()[0].tolist(), [env.step(0)[1:4] for _ in range(3)][-1]
        ([1, 1, 0], (120.0, False, True))
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, lane: int = 0, length: int = 3) -> None:
        if length < 1:
            raise ValueError(f"length must be at least 1, got length={length}")
        self.lane = int(lane)
        self.length = int(length)
        self.observation_space = gymnasium.spaces.Box(0, 2**31 - 1, shape=(3,), dtype=np.int64)
        self.action_space = gymnasium.spaces.Discrete(2)
        self.episode = -1
        self.t = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.lane, self.episode, self.t], dtype=np.int64)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any):
        reward = float(100 * self.lane + 10 * self.t + int(action))
        self.t += 1
        terminated = self.episode % 2 == 0 and self.t >= self.length
        return self._obs(), reward, terminated, False, {}


def scripted_env(lane: int = 0, length: int = 3) -> gymnasium.Env:
    """One lane: a :class:`ScriptedLaneEnv` in a ``TimeLimit`` of ``length + 1`` steps."""
    return TimeLimit(ScriptedLaneEnv(lane, length), max_episode_steps=length + 1)


def scripted_vector_env(
    lengths: Sequence[int] = (2, 3, 5),
    autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    vectorization_mode: str = "sync",
) -> gymnasium.vector.VectorEnv:
    """A vector env whose lane ``i`` is ``scripted_env(i, lengths[i])``.

    Example:
        >>> from scripted_envs import scripted_vector_env
        >>> envs = scripted_vector_env((1, 2))
        >>> envs.reset()[0].tolist()
        [[0, 0, 0], [1, 0, 0]]
        >>> envs.step([1, 1])[2].tolist()   # lane 0 terminates after one step
        [True, False]
    """
    fns = [functools.partial(scripted_env, i, n) for i, n in enumerate(lengths)]
    if vectorization_mode == "sync":
        return SyncVectorEnv(fns, autoreset_mode=autoreset_mode)
    if vectorization_mode == "async":
        return AsyncVectorEnv(fns, autoreset_mode=autoreset_mode)
    raise ValueError(
        f"vectorization_mode must be 'sync' or 'async', got "
        f"vectorization_mode={vectorization_mode!r}"
    )
