"""The settings every on-policy algorithm has (:class:`OnPolicyConfig`; each algorithm's config
adds its own) and the :class:`~stagerl.algorithms.on_policy.networks.ActorCritic` they ask for
(:func:`build_model_for`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

from stagerl.algorithms._checks import (
    Settings,
    check_choice,
    check_net_arch,
    check_numbers,
    settings_name,
)
from stagerl.algorithms.extractors import check_extractor_name
from stagerl.algorithms.on_policy.networks import ActorCritic, build_model

__all__ = ["OnPolicyConfig", "ACTIVATIONS", "build_model_for"]

#: The MLPs' activations by the name the settings take.
ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


@dataclass
class OnPolicyConfig(Settings):
    """The settings every on-policy algorithm has (each algorithm's config adds its own).

    Attributes:
        learning_rate: the optimiser's step size.
        gamma: the discount.
        normalize_states: normalise observations by their running mean and standard deviation.
        normalize_rewards: divide rewards by the running standard deviation of the discounted
            return, clipped to +-10 (SB3's ``VecNormalize``); checkpointed with the policy.
        net_arch: hidden sizes of the actor's and of the critic's MLP (no shared layers).
        activation: the MLPs' activation, ``"tanh"`` or ``"relu"``.
        log_std_init: the initial log standard deviation of a Gaussian policy (Box actions).
        ortho_init: orthogonal initialisation, as Stable-Baselines3 and CleanRL.
        features_extractor: the body before the MLPs: ``"auto"`` (a Nature CNN for images, a
            combined extractor for Dict and Tuple observations, none for vectors), ``"mlp"``,
            ``"nature_cnn"`` or ``"combined"`` (see ``stagerl.algorithms.extractors``; a
            factory of your own goes to the agent's maker).
        share_features_extractor: one extractor for the actor and the critic, or one each.
    """

    learning_rate: float = 3e-4
    gamma: float = 0.99
    normalize_states: bool = False
    normalize_rewards: bool = False
    net_arch: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    log_std_init: float = 0.0
    ortho_init: bool = True
    features_extractor: str = "auto"
    share_features_extractor: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_numbers(self, "learning_rate", above=0)
        check_numbers(self, "gamma", at_least=0, at_most=1)
        check_numbers(self, "log_std_init")
        check_net_arch(self)
        check_choice(self, "activation", tuple(ACTIVATIONS))
        check_extractor_name(settings_name(self), self.features_extractor)


def build_model_for(env: Any, who: str, config: OnPolicyConfig, seed: int, device: Any,
                    features_extractor: Any = None) -> ActorCritic:
    """The :class:`ActorCritic` the settings ask for on ``env``; ``features_extractor`` (a
    factory of the observation space) replaces the one ``config`` names."""
    return build_model(env, who, config.net_arch, config.log_std_init, config.ortho_init, seed,
                       device, config.features_extractor if features_extractor is None
                       else features_extractor, config.share_features_extractor,
                       ACTIVATIONS[config.activation])
