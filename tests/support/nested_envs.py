"""Scripted envs with nested observations (Dict, Tuple) and MultiDiscrete / MultiBinary actions.

Every observation encodes where it comes from, so a test can tell from a stored or sampled value
which sub-env, episode and step it was: ``frame`` (uint8) holds ``[lane, episode, t]`` in its
first row, ``position`` (float32) is ``t % 3`` one-hot. Episodes last ``length`` steps; the
last one terminates (or, with ``truncate=True``, is cut by a time limit). The reward of a step
is 1 when the action's first entry equals ``t % 3`` (a MultiDiscrete action, first entry in
0..2), else 0, so a policy can learn it from ``position``.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from stagerl.checkpoints import register


class DictObservationEnv(gymnasium.Env):
    """Dict observations ``{"frame": uint8 (3, 4), "position": float32 (3,)}``, MultiDiscrete
    ``[3, 2]`` actions (or ``action_space=`` another space; the reward then reads its first
    entry)."""

    metadata: dict = {}

    def __init__(self, lane: int = 0, length: int = 4, truncate: bool = False,
                 action_space: spaces.Space | None = None, tuple_observations: bool = False):
        self.lane, self.length, self.truncate = lane, length, truncate
        frame = spaces.Box(0, 255, (3, 4), np.uint8)
        position = spaces.Box(0.0, 1.0, (3,), np.float32)
        self.tuple_observations = tuple_observations
        self.observation_space = spaces.Tuple((frame, position)) if tuple_observations else \
            spaces.Dict({"frame": frame, "position": position})
        self.action_space = action_space if action_space is not None else \
            spaces.MultiDiscrete([3, 2])
        self.episode, self.t = -1, 0

    def _obs(self):
        frame = np.zeros((3, 4), np.uint8)
        frame[0, :3] = (self.lane, self.episode % 256, self.t)
        position = np.eye(3, dtype=np.float32)[self.t % 3]
        return (frame, position) if self.tuple_observations else \
            {"frame": frame, "position": position}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        first = int(np.asarray(action).reshape(-1)[0])
        reward = float(first == self.t % 3)
        self.t += 1
        end = self.t >= self.length
        return self._obs(), reward, end and not self.truncate, end and self.truncate, {}


register(DictObservationEnv, name="nested_envs.DictObservationEnv")  # its state is plain data


def dict_vector_env(n: int = 2, length: int = 4, autoreset_mode=None, **kwargs):
    """``n`` sub-envs (lane ``i`` tells its number in its frames), sync, gymnasium's vector env."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    mode = AutoresetMode.NEXT_STEP if autoreset_mode is None else autoreset_mode
    return SyncVectorEnv([lambda i=i: DictObservationEnv(i, length + i, **kwargs)
                          for i in range(n)], autoreset_mode=mode)
