"""stagerl: a staged, multiply-dispatched reinforcement-learning toolkit.

Public API only; no logic lives here. The trajectories package is re-exported, so
``stagerl.Trajectory is trajectories.Trajectory``. The torch-based names (``Approximator``,
``TargetNetwork``, ``save``, ``load``) are imported on first use: ``import stagerl`` does not
import torch.
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
from stagerl.core.episodes import Episode, EpisodeHook, EpisodeTracker
from stagerl.core.hooks import (
    DoEveryNEpisodes,
    DoEveryNSteps,
    DoOnExit,
    EmptyHook,
    RewardsPerEpisode,
    StepsPerEpisode,
    TimePerStep,
    TotalRewardPerEpisode,
)
from stagerl.core.stop_conditions import (
    StopAfterNEpisodes,
    StopAfterNoImprovement,
    StopAfterNSeconds,
    StopAfterNSteps,
    StopCondition,
    StopIfAll,
    StopIfAny,
    StopIfEnvTerminated,
    StopSignal,
)
from stagerl.core.reset_conditions import ResetAfterNSteps, ResetCondition, ResetIfEnvTerminated
from stagerl.core.env import Env, VectorEnv
from stagerl.core.policy import Policy
from stagerl.envs.vector import GymVectorEnv
from stagerl.envs.gym import GymEnv
from stagerl.envs.random_walk import RandomWalk1D
from stagerl.envs.toy import FixedLengthEnv
from stagerl.envs.checker import EnvCheckError, check_env
from stagerl.policies.agent import Agent, record_step
from stagerl.policies.explorers import (
    EpsilonGreedyExplorer,
    Explorer,
    GreedyExplorer,
    GumbelSoftmaxExplorer,
    UCBExplorer,
    WeightedExplorer,
    WeightedSoftmaxExplorer,
)
from stagerl.policies.tabular import TabularQApproximator, TabularVApproximator
from stagerl.policies.learners import TDLearner
from stagerl.policies.q_based import QBasedPolicy
from stagerl.utils.returns import discount_rewards, generalized_advantage_estimation
from stagerl.policies.random_policy import RandomPolicy
from stagerl.core import fallbacks as _fallbacks  # registers the no-op fallback methods
from stagerl.core.run import Experiment, run
from stagerl.core.evaluate import deterministic, evaluate
from stagerl.logging import (
    ConsoleSummary,
    CSVLogger,
    Evaluate,
    LoggingHook,
    PlotLearningCurve,
    ProgressBar,
    ScalarListener,
    TensorBoardLogger,
    is_logging_scalars,
    log_scalar,
)

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
    "EpisodeHook",
    "Episode",
    "EpisodeTracker",
    "EmptyHook",
    "StepsPerEpisode",
    "RewardsPerEpisode",
    "TotalRewardPerEpisode",
    "TimePerStep",
    "DoEveryNSteps",
    "DoEveryNEpisodes",
    "DoOnExit",
    # stop and reset conditions
    "StopCondition",
    "StopAfterNSteps",
    "StopAfterNEpisodes",
    "StopIfEnvTerminated",
    "StopAfterNoImprovement",
    "StopAfterNSeconds",
    "StopSignal",
    "StopIfAny",
    "StopIfAll",
    "ResetCondition",
    "ResetIfEnvTerminated",
    "ResetAfterNSteps",
    # the loop
    "run",
    "Experiment",
    "evaluate",
    "deterministic",
    # logging
    "log_scalar",
    "is_logging_scalars",
    "ScalarListener",
    "LoggingHook",
    "CSVLogger",
    "TensorBoardLogger",
    "ProgressBar",
    "ConsoleSummary",
    "PlotLearningCurve",
    "Evaluate",
    # envs
    "Env",
    "VectorEnv",
    "GymVectorEnv",
    "GymEnv",
    "RandomWalk1D",
    "FixedLengthEnv",
    "check_env",
    "EnvCheckError",
    # policies
    "Policy",
    "Agent",
    "record_step",
    # explorers, approximators, learning utilities
    "Explorer",
    "EpsilonGreedyExplorer",
    "GreedyExplorer",
    "UCBExplorer",
    "WeightedExplorer",
    "WeightedSoftmaxExplorer",
    "GumbelSoftmaxExplorer",
    "TabularQApproximator",
    "TabularVApproximator",
    "Approximator",
    "TargetNetwork",
    "TDLearner",
    "QBasedPolicy",
    "discount_rewards",
    "generalized_advantage_estimation",
    "RandomPolicy",
    # checkpoints (imported on first use)
    "save",
    "load",
] + list(trajectories.__all__)


# Imported on first use: they need torch, which most of stagerl (and its command line) does not.
_APPROXIMATORS = {"Approximator", "TargetNetwork"}
_CHECKPOINTS = {"save", "load"}


def __getattr__(name: str):
    if name in _APPROXIMATORS:
        from stagerl.policies import approximators

        return getattr(approximators, name)
    if name in _CHECKPOINTS:
        from stagerl import checkpoints

        return getattr(checkpoints, name)
    raise AttributeError(f"module 'stagerl' has no attribute {name!r}")
