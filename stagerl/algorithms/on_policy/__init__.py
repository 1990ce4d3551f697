"""The on-policy family: rollout -> postprocess -> update -> clear, shared by VPG, A2C, PPO,
TRPO (and NPG), ERWR, REPS and A3C.

* :mod:`~stagerl.algorithms.on_policy.base`: ``OnPolicyConfig`` (the settings they all share)
  and ``OnPolicy`` (acting, recording, the rollout cycle);
* :mod:`~stagerl.algorithms.on_policy.stages`: what the loop's stages do for it (``plan``,
  recording each step, learning at a full rollout) and ``compute_actions``;
* :mod:`~stagerl.algorithms.on_policy.workers`: what Ray workers need of it (the weights they
  act with, A3C's gradients);
* :mod:`~stagerl.algorithms.on_policy.rollout`: the rollout's trajectory, its time-major grid
  and the estimators (GAE, discounted returns);
* :mod:`~stagerl.algorithms.on_policy.networks`: ``ActorCritic`` and ``RunningMeanStd``;
* :mod:`~stagerl.algorithms.on_policy.baselines`: the baselines by name (``"zero"``,
  ``"network"``, ``"linear"``) that VPG and TRPO measure returns against;
* one module per algorithm: :mod:`~stagerl.algorithms.on_policy.vpg`,
  :mod:`~stagerl.algorithms.on_policy.a2c`, :mod:`~stagerl.algorithms.on_policy.ppo`,
  :mod:`~stagerl.algorithms.on_policy.trpo`, :mod:`~stagerl.algorithms.on_policy.erwr`,
  :mod:`~stagerl.algorithms.on_policy.reps`, :mod:`~stagerl.algorithms.on_policy.a3c`, and
  recurrent PPO (:mod:`~stagerl.algorithms.on_policy.recurrent`, its network in
  :mod:`~stagerl.algorithms.on_policy.recurrent_networks`).

A new algorithm is a ``loss`` (and, when GAE does not fit, a ``postprocess``); see
``docs/algorithms/on_policy.md``.
"""

from stagerl.algorithms.on_policy import stages as _stages  # noqa: F401 (its methods)
from stagerl.algorithms.on_policy import workers as _workers  # noqa: F401 (its methods)
from stagerl.algorithms.on_policy.a2c import A2CConfig, A2CPolicy, make_a2c_agent
from stagerl.algorithms.on_policy.a3c import A3CConfig, A3CPolicy, make_a3c_agent
from stagerl.algorithms.on_policy.base import OnPolicy, OnPolicyConfig
from stagerl.algorithms.on_policy.baselines import (
    BASELINES,
    Baseline,
    LinearFeatureBaseline,
    ValueNetworkBaseline,
    ZeroBaseline,
    make_baseline,
)
from stagerl.algorithms.on_policy.erwr import ERWRConfig, ERWRPolicy, make_erwr_agent
from stagerl.algorithms.on_policy.networks import (
    ActorCritic,
    RunningMeanStd,
    build_model,
    check_spaces,
)
from stagerl.algorithms.on_policy.ppo import PPOConfig, PPOPolicy, make_ppo_agent
from stagerl.algorithms.on_policy.recurrent import (
    RecurrentPPOConfig,
    RecurrentPPOPolicy,
    make_recurrent_ppo_agent,
)
from stagerl.algorithms.on_policy.recurrent_networks import RecurrentActorCritic
from stagerl.algorithms.on_policy.reps import REPSConfig, REPSPolicy, make_reps_agent
from stagerl.algorithms.on_policy.rollout import (
    add_discounted_returns,
    add_gae,
    make_vector_env,
    read_rollout,
    rollout_trajectory,
)
from stagerl.algorithms.on_policy.trpo import TRPOConfig, TRPOPolicy, make_trpo_agent
from stagerl.algorithms.on_policy.vpg import VPGConfig, VPGPolicy, make_vpg_agent

__all__ = ["OnPolicyConfig", "OnPolicy", "ActorCritic", "RunningMeanStd", "build_model",
           "check_spaces", "rollout_trajectory", "read_rollout", "add_gae",
           "add_discounted_returns", "make_vector_env",
           "VPGConfig", "VPGPolicy", "make_vpg_agent", "A2CConfig", "A2CPolicy", "make_a2c_agent",
           "PPOConfig", "PPOPolicy", "make_ppo_agent", "TRPOConfig", "TRPOPolicy",
           "make_trpo_agent", "RecurrentPPOConfig", "RecurrentPPOPolicy",
           "make_recurrent_ppo_agent", "RecurrentActorCritic", "Baseline", "ZeroBaseline",
           "ValueNetworkBaseline", "LinearFeatureBaseline", "make_baseline", "BASELINES",
           "ERWRConfig", "ERWRPolicy", "make_erwr_agent", "REPSConfig", "REPSPolicy",
           "make_reps_agent", "A3CConfig", "A3CPolicy", "make_a3c_agent"]
