"""REPS (relative entropy policy search, contextual) on CartPole-v1: 500 within 200k steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.on_policy.reps import REPSConfig, make_reps_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, same_step_vector_env


@dataclass
class Config(GymRunSettings, REPSConfig):
    """Whole episodes from 8 sub-envs, one update per 16 finished episodes: the batch
    reweighted within a relative entropy of 0.5 (rllab's epsilon), returns to go at gamma 0.99,
    then 3 L-BFGS iterations of weighted maximum likelihood. rllab's 50 iterations fit the
    reweighted batch's own actions so closely that the policy turns deterministic within a few
    updates (tried here: 28 at 150k steps, 124 with 10 iterations, 500 with 3)."""

    steps: int = 200_000
    env_id: str = "CartPole-v1"
    num_envs: int = 8
    max_opt_iter: int = 3


def make_agent(config: REPSConfig, env: Any, seed: int, device: Any) -> Any:
    return make_reps_agent(env, config, seed, device)


EXPERIMENT = NamedExperiment(Config, same_step_vector_env, make_agent)
