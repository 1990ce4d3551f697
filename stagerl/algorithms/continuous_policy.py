"""What SAC's and TD3's policies share around their update: acting in unit actions rescaled to
the action space's bounds (uniform warm-up, evaluation without a draw), the device moves, the
env check, the saved state, and building the agent with its replay trajectory.

Each algorithm keeps its own networks, its exploration (:meth:`ContinuousPolicy.explore`) and
its update (``sac_update``, ``td3_update``) in its module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import torch

from stagerl.algorithms.continuous import (
    BoxScale,
    check_continuous_env,
    check_int,
    make_replay_trajectory,
)
from stagerl.algorithms.torch_state import (
    denormals_flushed,
    generator_moved,
    generator_on,
    move_fused_adam_steps,
)
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, plan
from stagerl.core.policy import Policy
from stagerl.logging.scalars import is_logging_scalars, log_scalar
from stagerl.policies.agent import Agent
from stagerl.utils.devices import resolve_device

__all__ = ["ContinuousPolicy", "learn_from_replay", "make_continuous_agent"]


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
        >>> from stagerl.algorithms.sac import SACPolicy
        >>> policy = SACPolicy(gymnasium.spaces.Box(-1.0, 1.0, (3,)),
        ...                    gymnasium.spaces.Box(-2.0, 2.0, (1,)))
        >>> isinstance(policy, ContinuousPolicy), policy.to_env(np.array([[0.5]])).tolist()
        (True, [[1.0]])
    """

    algorithm: str = "?"
    maker: str = "?"
    config_class: type = object
    saved_modules: tuple[str, ...] = ("actor", "critic", "critic_target")

    def __init__(self, state_space: gymnasium.spaces.Box, action_space: gymnasium.spaces.Box,
                 config: Any, seed: int, device: Any):
        self.config = config
        self.device = resolve_device(device)
        network_seed, numpy_seed, torch_seed = np.random.SeedSequence(seed).generate_state(3)
        self.network_seed = int(network_seed)
        self.scale = BoxScale(action_space)
        self._centre = np.asarray((action_space.high + action_space.low) / 2, np.float32)
        self._half_range = np.asarray((action_space.high - action_space.low) / 2, np.float32)
        self.state_shape, self.action_shape = tuple(state_space.shape), tuple(action_space.shape)
        self.rng = np.random.default_rng(int(numpy_seed))
        self.generator = generator_on(self.device, int(torch_seed))
        self.env_steps = 0
        self.n_updates = 0
        self.last_update: dict[str, torch.Tensor] = {}

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
        if tuple(action_space.shape) != self.action_shape or \
                tuple(state_space.shape) != self.state_shape:
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
        changed = {f.name: getattr(self.config, f.name) for f in dataclasses.fields(self.config)
                   if getattr(self.config, f.name) != f.default}
        settings = "".join(f"{k}={v!r}, " for k, v in changed.items())
        return f"{type(self).__name__}({settings}device={str(self.device)!r})"


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_continuous(policy: ContinuousPolicy, env):
    # One row per sub-env on a vector env, one state otherwise: one forward pass either way.
    states = np.asarray(env.state, dtype=np.float32)
    single = states.ndim == 1
    if single:
        states = states[None]
    if policy.deterministic:  # evaluation: nothing drawn, no step counted
        unit = policy.unit_actions(states)
    else:
        if policy.env_steps < policy.config.learning_starts:  # warm-up, as SB3: uniform
            unit = policy.rng.uniform(-1.0, 1.0, (len(states), *policy.action_shape))
        else:
            unit = policy.explore(states)
        policy.env_steps += len(states)
    actions = policy.to_env(unit).astype(np.float32, copy=False)
    return actions[0] if single else actions


def learn_from_replay(policy: ContinuousPolicy, trajectory: Any,
                      update: Callable[[Any, dict[str, torch.Tensor]], None]) -> None:
    """``update(policy, batch)`` on every batch the trajectory's controller allows now (one
    sample of ``gradient_steps`` batches per ``train_freq`` transitions), as tensors on the
    policy's device, with denormal floats flushed on the CPU."""
    before = policy.n_updates
    for batches in trajectory:
        with denormals_flushed(policy.device):
            for batch in batches:
                update(policy, {k: torch.as_tensor(v, device=policy.device)
                                for k, v in batch.items()})
    every = REPORT_EVERY_N_UPDATES
    if policy.n_updates // every > before // every and is_logging_scalars():
        report_last_update(policy)


#: Gradient steps between two reports of the last update's figures (CleanRL's every 100).
REPORT_EVERY_N_UPDATES = 100


def report_last_update(policy: ContinuousPolicy) -> None:
    """The last update's losses (``losses/critic_loss``, ``losses/actor_loss``, ...) and its
    mean TD target (``losses/q_values``) to whatever loggers listen."""
    for name, value in policy.last_update.items():
        if name == "target_q":
            name, value = "q_values", value.mean()
        log_scalar(f"losses/{name}", value)


def make_continuous_agent(policy_class: type[ContinuousPolicy], env: Any, config: Any,
                          seed: int, device: Any) -> Agent:
    """An ``Agent`` pairing a ``policy_class`` policy for ``env`` with its replay trajectory,
    after checking the config's type, the seed and the env (see ``make_sac_agent``)."""
    if not isinstance(config, policy_class.config_class):
        raise TypeError(f"{policy_class.maker} needs a {policy_class.config_class.__name__}, "
                        f"got {type(config).__name__}")
    check_int(policy_class.maker, "seed", seed, 0)
    action_space, state_space = check_continuous_env(env, policy_class.algorithm)
    device = resolve_device(device)
    policy_seed, sampler_seed = np.random.SeedSequence(seed).generate_state(2)
    policy = policy_class(state_space, action_space, config, int(policy_seed), device)
    trajectory = make_replay_trajectory(
        state_space, action_space, config.buffer_size, config.batch_size, config.learning_starts,
        config.train_freq, config.gradient_steps, rng=int(sampler_seed), device=device)
    return Agent(policy, trajectory)
