"""Reinforcement-learning algorithms, each a Policy subtype in a module of its own.

Each has a hyper-parameter dataclass (Stable-Baselines3's names and defaults where it has them)
and a builder that checks the env and returns an ``Agent`` with its trajectory::

    from stagerl.algorithms import DQNConfig, make_dqn_agent
    agent = make_dqn_agent(env, DQNConfig(total_timesteps=50_000), seed=0, device="auto")

Importing this package imports torch; ``import stagerl`` alone does not.
"""

from stagerl.algorithms.a2c import A2CConfig, A2CPolicy, make_a2c_agent
from stagerl.algorithms.dqn import DQNConfig, DQNPolicy, make_dqn_agent
from stagerl.algorithms.on_policy import OnPolicy, rollout_trajectory
from stagerl.algorithms.ppo import PPOConfig, PPOPolicy, make_ppo_agent
from stagerl.algorithms.sac import SACConfig, SACPolicy, make_sac_agent
from stagerl.algorithms.td3 import TD3Config, TD3Policy, make_td3_agent
from stagerl.algorithms.trpo import TRPOConfig, TRPOPolicy, make_trpo_agent
from stagerl.algorithms.vpg import VPGConfig, VPGPolicy, make_vpg_agent

__all__ = [
    "DQNConfig", "DQNPolicy", "make_dqn_agent",
    "VPGConfig", "VPGPolicy", "make_vpg_agent",
    "A2CConfig", "A2CPolicy", "make_a2c_agent",
    "PPOConfig", "PPOPolicy", "make_ppo_agent",
    "TRPOConfig", "TRPOPolicy", "make_trpo_agent",
    "SACConfig", "SACPolicy", "make_sac_agent",
    "TD3Config", "TD3Policy", "make_td3_agent",
    "OnPolicy", "rollout_trajectory",
]
