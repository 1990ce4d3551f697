"""The off-policy family for continuous actions: SAC and TD3 (and DDPG, a TD3 setting).

* :mod:`~stagerl.algorithms.off_policy.base`: ``ReplayConfig`` (the settings both share), the
  env check, ``ContinuousPolicy`` (acting in unit actions rescaled to the Box, the saved
  state, the weights sent to Ray workers) and building the agent;
* :mod:`~stagerl.algorithms.off_policy.replay`: the replay trajectory and the update loop;
* :mod:`~stagerl.algorithms.off_policy.networks`: the action rescaling, the critics, Polyak
  averaging;
* :mod:`~stagerl.algorithms.off_policy.sac` and :mod:`~stagerl.algorithms.off_policy.td3`: each
  algorithm's networks, exploration and update.
"""

from stagerl.algorithms.off_policy.base import (
    ContinuousPolicy,
    ReplayConfig,
    check_continuous_env,
    make_continuous_agent,
)
from stagerl.algorithms.off_policy.sac import SACConfig, SACPolicy, make_sac_agent
from stagerl.algorithms.off_policy.td3 import TD3Config, TD3Policy, make_td3_agent

__all__ = ["ReplayConfig", "ContinuousPolicy", "check_continuous_env", "make_continuous_agent",
           "SACConfig", "SACPolicy", "make_sac_agent", "TD3Config", "TD3Policy",
           "make_td3_agent"]
