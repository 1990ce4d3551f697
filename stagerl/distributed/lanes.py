"""`WorkerLanes`: the env a distributed run's central agent is built for, never stepped."""

from __future__ import annotations

from typing import Any

from stagerl.core.env import VectorEnv

__all__ = ["WorkerLanes"]


class WorkerLanes(VectorEnv):
    """What the central agent is built for: the spaces of one worker's env and one lane per
    sub-env of every worker. It is never stepped (the workers act).

    Example:
        >>> import stagerl as rl
        >>> lanes = WorkerLanes(rl.GymEnv("CartPole-v1"), workers=3)
        >>> lanes.num_envs, lanes.single_action_space
        (3, Discrete(2))
    """

    def __init__(self, env: Any, workers: int):
        vector = isinstance(env, VectorEnv)
        self.lanes_per_worker = int(env.num_envs) if vector else 1
        self.num_envs = self.lanes_per_worker * int(workers)
        self._action_space = env.single_action_space if vector else env.action_space
        self._state_space = env.single_state_space if vector else env.state_space
        self.autoreset_mode = getattr(env, "autoreset_mode", None)

    @property
    def single_action_space(self) -> Any:
        return self._action_space

    @property
    def single_state_space(self) -> Any:
        return self._state_space

    @property
    def action_space(self) -> Any:
        return self._action_space

    @property
    def state_space(self) -> Any:
        return self._state_space

    def reset(self) -> None:
        raise RuntimeError("WorkerLanes is never stepped: the rollout workers act")

    def act(self, action: Any) -> None:
        raise RuntimeError("WorkerLanes is never stepped: the rollout workers act")
