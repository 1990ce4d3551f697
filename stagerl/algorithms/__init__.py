"""Reinforcement-learning algorithms in three families, each a package:

* :mod:`stagerl.algorithms.dqn`: DQN and its extensions, Rainbow, a recurrent DQN (DRQN);
* :mod:`stagerl.algorithms.on_policy`: VPG, A2C, A3C, PPO, TRPO (and NPG), ERWR, REPS,
  recurrent PPO, and the baselines they measure returns against (zero, the value network,
  rllab's linear feature baseline);
* :mod:`stagerl.algorithms.off_policy`: SAC, TD3 (and DDPG).

Each algorithm is a Policy subtype with a hyper-parameter dataclass (Stable-Baselines3's names
and defaults where it has them, checked when it is built) and a builder that checks the env and
returns an ``Agent`` with its trajectory::

    from stagerl.algorithms import DQNConfig, make_dqn_agent
    agent = make_dqn_agent(env, DQNConfig(total_steps=50_000), seed=0, device="auto")

The names below load their family on first use (each family imports torch; ``import stagerl``
and ``import stagerl.algorithms`` alone do not).
"""

from __future__ import annotations

import importlib

_FAMILIES = {
    "dqn": ("DQNConfig", "DQNPolicy", "make_dqn_agent", "DRQNConfig", "DRQNPolicy",
            "make_drqn_agent"),
    "on_policy": ("VPGConfig", "VPGPolicy", "make_vpg_agent",
                  "A2CConfig", "A2CPolicy", "make_a2c_agent",
                  "PPOConfig", "PPOPolicy", "make_ppo_agent",
                  "TRPOConfig", "TRPOPolicy", "make_trpo_agent",
                  "OnPolicy", "rollout_trajectory",
                  "RecurrentPPOConfig", "RecurrentPPOPolicy", "make_recurrent_ppo_agent",
                  "Baseline", "ZeroBaseline", "ValueNetworkBaseline", "LinearFeatureBaseline",
                  "make_baseline", "BASELINES",
                  "ERWRConfig", "ERWRPolicy", "make_erwr_agent",
                  "REPSConfig", "REPSPolicy", "make_reps_agent",
                  "A3CConfig", "A3CPolicy", "make_a3c_agent"),
    "off_policy": ("SACConfig", "SACPolicy", "make_sac_agent",
                   "TD3Config", "TD3Policy", "make_td3_agent"),
}
_FAMILY = {name: family for family, names in _FAMILIES.items() for name in names}
__all__ = list(_FAMILY)


def __getattr__(name: str):
    family = _FAMILY.get(name)
    if family is None:
        raise AttributeError(f"module 'stagerl.algorithms' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"stagerl.algorithms.{family}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
