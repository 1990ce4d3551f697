"""stagerl: a staged, multiply-dispatched reinforcement-learning toolkit.

Public API only; no logic lives here. The trajectories package is re-exported, so
``stagerl.Trajectory is trajectories.Trajectory``.
"""

import trajectories
from trajectories import *  # noqa: F403  (re-exported: see trajectories.__all__)

from stagerl.core.dispatch import MissingMethodError, optimise, plan, push
from stagerl.core.stages import (
    PostActStage,
    PostEpisodeStage,
    PostExperimentStage,
    PreActStage,
    PreEpisodeStage,
    PreExperimentStage,
    Stage,
)
from stagerl.core.hooks_base import ComposedHook, Hook
from stagerl.envs.base import Env
from stagerl.policies.base import Policy
from stagerl.policies.agent import Agent
from stagerl.core import fallbacks as _fallbacks  # registers the no-op fallback methods

__all__ = [
    # dispatch
    "push",
    "plan",
    "optimise",
    "MissingMethodError",
    # stages
    "Stage",
    "PreExperimentStage",
    "PreEpisodeStage",
    "PreActStage",
    "PostActStage",
    "PostEpisodeStage",
    "PostExperimentStage",
    # hooks
    "Hook",
    "ComposedHook",
    # envs
    "Env",
    # policies
    "Policy",
    "Agent",
] + list(trajectories.__all__)
