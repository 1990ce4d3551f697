"""What SAC and TD3 share around their update: the settings (:class:`ReplayConfig`), the env
check, acting in unit actions rescaled to the action space's bounds (uniform warm-up,
evaluation without a draw), the device moves, the saved state, the weights sent to Ray
rollout workers, and building the agent with its replay trajectory
(:mod:`~stagerl.algorithms.off_policy.replay`).

Each algorithm keeps its own networks, its exploration (:meth:`ContinuousPolicy.explore`) and
its update (``sac_update``, ``td3_update``) in its module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
import torch

from stagerl.algorithms._checks import (
    Settings,
    changed_settings,
    check_int,
    check_ints,
    check_net_arch,
    check_numbers,
    settings_name,
    single_spaces,
)
from stagerl.algorithms.extractors import (
    check_extractor_name,
    extractor_factory,
    features_dim,
    input_dtypes,
    make_extractor,
    observation_spec,
    readable_observations,
)
from stagerl.algorithms.off_policy.networks import BoxScale
from stagerl.algorithms.off_policy.replay import make_replay_trajectory
from stagerl.algorithms.torch_state import generator_moved, generator_on, move_fused_adam_steps
from stagerl.core.actions import (
    _compute_actions,
    acting_as,
    as_batch_of_spec,
    no_state,
    one_or_batch,
)
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, plan
from stagerl.core.env import VectorEnv
from stagerl.core.fallbacks import refuse_observations
from stagerl.core.policy import Policy
from stagerl.policies.agent import Agent
from stagerl.policies.weights import get_weights, set_env_steps, set_weights, weights_on_cpu
from stagerl.utils.devices import resolve_device
from trajectories.nested import leading_length, tree_map

__all__ = ["ReplayConfig", "ContinuousPolicy", "check_continuous_env", "make_continuous_agent"]


@dataclass
class ReplayConfig(Settings):
    """The settings SAC and TD3 share (Stable-Baselines3's names; SAC's defaults).

    Steps are env steps (transitions; a vector env takes ``num_envs`` per act).

    Attributes:
        learning_rate: Adam's step size.
        buffer_size: transitions the replay ring holds (split over a vector env's sub-envs).
        learning_starts: env steps of uniformly random actions before learning starts.
        batch_size: transitions per gradient step.
        tau: the Polyak coefficient: ``target <- (1 - tau) target + tau online`` per step.
        gamma: the discount.
        train_freq: env steps between updates.
        gradient_steps: gradient steps per update.
        net_arch: hidden sizes of the actor's and each critic's MLP.
        n_critics: critics whose minimum bootstraps the target (2: clipped double Q).
        features_extractor: the body before the MLPs: ``"auto"`` (the Nature CNN for images, a
            combined extractor for Dict and Tuple observations, none for vectors), ``"mlp"``,
            ``"nature_cnn"`` or ``"combined"`` (see ``stagerl.algorithms.extractors``; a
            factory of your own goes to the agent's maker).
        share_features_extractor: the critics read the actor's extractor (both losses train
            it), or each has its own (SB3's default).

    Example:
        >>> ReplayConfig(gamma=1.5)
        Traceback (most recent call last):
        ...
        ValueError: ReplayConfig: gamma must be in [0, 1], got gamma=1.5
    """

    learning_rate: float = 3e-4
    buffer_size: int = 1_000_000
    learning_starts: int = 100
    batch_size: int = 256
    tau: float = 0.005
    gamma: float = 0.99
    train_freq: int = 1
    gradient_steps: int = 1
    net_arch: tuple[int, ...] = (256, 256)
    n_critics: int = 2
    features_extractor: str = "auto"
    share_features_extractor: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_extractor_name(settings_name(self), self.features_extractor)
        check_ints(self, "buffer_size", "batch_size", "train_freq", "gradient_steps",
                   "n_critics")
        check_ints(self, "learning_starts", low=0)
        check_numbers(self, "learning_rate", above=0)
        check_numbers(self, "tau", above=0, at_most=1)
        check_numbers(self, "gamma", at_least=0, at_most=1)
        check_net_arch(self)


def check_continuous_env(env: Any, algorithm: str) -> tuple[gymnasium.spaces.Box, Any]:
    """The env's single-env action and observation spaces, refused where ``algorithm`` cannot
    take them: actions must be a bounded float ``Box`` of one axis; observations a ``Box`` of
    any shape, ``Discrete``, ``MultiDiscrete``, ``MultiBinary``, or a ``Dict`` or ``Tuple`` of
    them (a feature extractor reads all but flat vectors).

    Example:
        >>> import stagerl as rl
        >>> action_space, state_space = check_continuous_env(rl.GymEnv("Pendulum-v1"), "SAC")
        >>> action_space.shape, state_space.shape
        ((1,), (3,))
        >>> check_continuous_env(rl.GymEnv("CartPole-v1"), "SAC")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: SAC acts in continuous (Box) action spaces, got Discrete(2); ... DQN or PPO ...
    """
    state_space, action_space, _ = single_spaces(env, algorithm)
    if not isinstance(action_space, gymnasium.spaces.Box):
        raise TypeError(
            f"{algorithm} acts in continuous (Box) action spaces, got {action_space}; for "
            "discrete actions use DQN or PPO (in stagerl.algorithms)")
    if not np.issubdtype(action_space.dtype, np.floating):
        raise TypeError(f"{algorithm} needs a float Box action space, got {action_space}; "
                        "map the actions onto a float Box with a gymnasium ActionWrapper")
    if len(action_space.shape) != 1:
        raise ValueError(
            f"{algorithm} needs actions on one axis, got the action space {action_space}; "
            "reshape them with a gymnasium ActionWrapper")
    if not action_space.is_bounded("both"):
        raise ValueError(
            f"{algorithm} squashes its actions into the action space's bounds, but {action_space}"
            " is unbounded; give it finite bounds, e.g. with gymnasium.wrappers.ClipAction or "
            "RescaleAction(env, -1.0, 1.0) on an env whose actions are meaningful there")
    if not readable_observations(state_space):
        raise TypeError(
            f"{algorithm} reads Box, Discrete, MultiDiscrete or MultiBinary observations (or a "
            f"Dict or Tuple of them), got {state_space}; flatten them with "
            "gymnasium.wrappers.FlattenObservation")
    return action_space, state_space


class ContinuousPolicy(Policy):
    """An actor-critic policy for a bounded ``Box`` of actions that learns from replay.

    It holds the settings (``config``), the ``device``, the rescaling of unit actions
    (``scale`` for tensors, :meth:`to_env` for arrays), the shapes it acts on, a numpy ``rng``
    (warm-up actions, exploration noise), a ``torch.Generator`` on the device (sampling during
    updates), the counters ``env_steps`` / ``n_updates`` and ``last_update``. A subclass builds
    its networks and its optimiser (``optimiser``) and names them:

    * ``algorithm``, ``maker``, ``config_class``: for messages and :func:`make_continuous_agent`;
    * ``saved_modules``: the modules :meth:`state_dict` saves, in this order;
    * :meth:`unit_actions` (the deterministic action while ``deterministic``) and
      :meth:`explore` (the training action after the warm-up), both in ``[-1, 1]``.

    Args:
        state_space, action_space: the single env's spaces (a flat ``Box`` each, actions
            bounded).
        config: the hyper-parameters (with ``learning_starts``).
        seed: seeds the numpy ``rng`` and the ``generator`` here; the subclass seeds its
            networks with :attr:`network_seed`.
        device: where the networks live (``"cpu"``, ``"cuda"``, ``"auto"``).

    Example:
        >>> import gymnasium
        >>> from stagerl.algorithms import SACPolicy
        >>> policy = SACPolicy(gymnasium.spaces.Box(-1.0, 1.0, (3,)),
        ...                    gymnasium.spaces.Box(-2.0, 2.0, (1,)))
        >>> isinstance(policy, ContinuousPolicy), policy.to_env(np.array([[0.5]])).tolist()
        (True, [[1.0]])
    """

    algorithm: str = "?"
    maker: str = "?"
    config_class: type = object
    saved_modules: tuple[str, ...] = ("actor", "critic", "critic_target")

    def __init__(self, state_space: Any, action_space: gymnasium.spaces.Box,
                 config: Any, seed: int, device: Any, features_extractor: Any = None):
        self.config = config
        self.device = resolve_device(device)
        network_seed, numpy_seed, torch_seed = np.random.SeedSequence(seed).generate_state(3)
        self.network_seed = int(network_seed)
        self.scale = BoxScale(action_space)
        self._centre = np.asarray((action_space.high + action_space.low) / 2, np.float32)
        self._half_range = np.asarray((action_space.high - action_space.low) / 2, np.float32)
        self.state_shape, self.action_shape = tuple(state_space.shape or ()), \
            tuple(action_space.shape)
        self.state_spec = observation_spec(state_space)
        reads_features = self.extractor_factory(state_space, features_extractor) is not None
        self._input_dtypes = input_dtypes(state_space, reads_features)
        self.rng = np.random.default_rng(int(numpy_seed))
        self.generator = generator_on(self.device, int(torch_seed))
        self.env_steps = 0
        self.n_updates = 0
        self.last_update: dict[str, torch.Tensor] = {}

    def extractor_factory(self, state_space: Any, given: Any = None) -> Any:
        """The extractor factory: ``given`` (the maker's ``features_extractor``), else the one
        the settings name; ``None`` for vectors the MLPs read as they are."""
        if given is not None:
            return given
        return extractor_factory(getattr(self.config, "features_extractor", "auto"),
                                 state_space)

    def make_extractor(self, factory: Any, state_space: Any) -> tuple:
        """``(a new extractor from factory, its number of features)``, or ``(None, the flat
        size)`` without a factory. Call it inside the networks' seeded block."""
        if factory is None:
            return None, int(np.prod(state_space.shape))
        extractor = make_extractor(factory, state_space, self.maker)
        return extractor, features_dim(extractor, state_space)

    def states_tensor(self, states: Any) -> Any:
        """A batch of observations as tensors on the device, in the dtypes the networks read
        (float32; ``uint8`` pixels and discrete observations as they are for an extractor);
        nested ones leaf by leaf."""
        if isinstance(states, (dict, tuple)):
            return tree_map(lambda leaf, dtype: torch.as_tensor(leaf, dtype=dtype,
                                                                device=self.device),
                            states, self._input_dtypes)
        return torch.as_tensor(states, dtype=self._input_dtypes, device=self.device)

    def unit_actions(self, states: np.ndarray) -> np.ndarray:
        """Actions in ``[-1, 1]`` for a batch of states."""
        raise NotImplementedError

    def explore(self, states: np.ndarray) -> np.ndarray:
        """The training actions in ``[-1, 1]`` for a batch of states, once learning started."""
        raise NotImplementedError

    def to_env(self, unit_actions: np.ndarray) -> np.ndarray:
        """Unit actions rescaled to the action space's bounds."""
        return self._centre + self._half_range * unit_actions

    def to(self, device: Any) -> ContinuousPolicy:
        device = resolve_device(device)
        super().to(device)  # networks, buffers, Adam's moments
        optimiser = getattr(self, "optimiser", None)
        if optimiser is not None:
            move_fused_adam_steps(optimiser, device)
        generator = getattr(self, "generator", None)
        if generator is not None:
            self.generator = generator_moved(generator, device)
        self.device = device
        return self

    def validate(self, env: Any) -> None:
        action_space, state_space = check_continuous_env(env, self.algorithm)
        spec = self.__dict__.get("state_spec")  # (policies saved before it was kept: shapes)
        if tuple(action_space.shape) != self.action_shape or \
                tuple(state_space.shape or ()) != self.state_shape or \
                (spec is not None and observation_spec(state_space) != spec):
            raise ValueError(
                f"this {self.algorithm} policy acts on states {self.state_shape} with actions "
                f"{self.action_shape}, the env has {state_space.shape} and {action_space.shape}; "
                f"build the policy for this env with {self.maker}(env, ...)")

    def state_dict(self) -> dict[str, Any]:
        return {
            **{name: getattr(self, name).state_dict() for name in self.saved_modules},
            "optimiser": self.optimiser.state_dict(),
            "env_steps": self.env_steps,
            "n_updates": self.n_updates,
            "rng": self.rng.bit_generator.state,
            "generator": self.generator.get_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name in (*self.saved_modules, "optimiser"):
            getattr(self, name).load_state_dict(state[name])
        self.env_steps = int(state["env_steps"])
        self.n_updates = int(state["n_updates"])
        self.rng.bit_generator.state = state["rng"]
        self.generator.set_state(state["generator"])

    def __repr__(self) -> str:
        settings = changed_settings(self.config)
        return (f"{type(self).__name__}({settings + ', ' if settings else ''}"
                f"device={str(self.device)!r})")



@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_continuous(policy: ContinuousPolicy, env):
    # One row per sub-env on a vector env, one state otherwise: one forward pass either way.
    single = not isinstance(env, VectorEnv)
    states = tree_map(lambda leaf: np.asarray(leaf)[None], env.state) if single else env.state
    n = 1 if single else env.num_envs
    if policy.deterministic:  # evaluation: nothing drawn, no step counted
        unit = policy.unit_actions(states)
    else:
        if policy.env_steps < policy.config.learning_starts:  # warm-up, as SB3: uniform
            unit = policy.rng.uniform(-1.0, 1.0, (n, *policy.action_shape))
        else:
            unit = policy.explore(states)
        policy.env_steps += n
    actions = policy.to_env(unit).astype(np.float32, copy=False)
    return actions[0] if single else actions


@_compute_actions.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_actions_continuous(policy: ContinuousPolicy, observations, state, deterministic):
    no_state(policy, state)
    states, single = as_batch_of_spec(observations, policy.state_spec, policy.algorithm)
    n = leading_length(states)
    with acting_as(policy, deterministic):
        if deterministic:  # nothing drawn
            unit = policy.unit_actions(states)
        elif policy.env_steps < policy.config.learning_starts:  # warm-up, as plan: uniform
            unit = policy.rng.uniform(-1.0, 1.0, (n, *policy.action_shape))
        else:
            unit = policy.explore(states)
    actions = policy.to_env(unit).astype(np.float32, copy=False)
    return one_or_batch(actions, None, {}, single)


refuse_observations(ContinuousPolicy)


def make_continuous_agent(policy_class: type[ContinuousPolicy], env: Any, config: Any,
                          seed: int, device: Any, features_extractor: Any = None) -> Agent:
    """An ``Agent`` pairing a ``policy_class`` policy for ``env`` with its replay trajectory,
    after checking the config's type, the seed and the env (see ``make_sac_agent``);
    ``features_extractor`` (a factory of the observation space) replaces the one the settings
    name."""
    if not isinstance(config, policy_class.config_class):
        raise TypeError(f"{policy_class.maker} needs a {policy_class.config_class.__name__}, "
                        f"got {type(config).__name__}")
    seed = check_int(policy_class.maker, "seed", seed, low=0)
    action_space, state_space = check_continuous_env(env, policy_class.algorithm)
    device = resolve_device(device)
    policy_seed, sampler_seed = np.random.SeedSequence(seed).generate_state(2)
    policy = policy_class(state_space, action_space, config, int(policy_seed), device,
                          features_extractor)
    trajectory = make_replay_trajectory(
        state_space, action_space, config.buffer_size, config.batch_size, config.learning_starts,
        config.train_freq, config.gradient_steps, rng=int(sampler_seed), device=device)
    return Agent(policy, trajectory)


# ---- weights for rollout workers (stagerl.distributed) ------------------------------------


@get_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _get_weights_continuous(policy: ContinuousPolicy):
    return {"actor": weights_on_cpu(policy.actor.state_dict())}


@set_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _set_weights_continuous(policy: ContinuousPolicy, weights, env_steps, env):
    policy.actor.load_state_dict(weights["actor"])
    policy.env_steps = int(env_steps)  # the warm-up ends when all workers took learning_starts


@set_env_steps.dispatch(precedence=DEFAULT_PRECEDENCE)
def _set_env_steps_continuous(policy: ContinuousPolicy, env_steps):
    policy.env_steps = int(env_steps)
