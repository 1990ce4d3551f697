"""Building a DQN agent: the settings and the env checked, the Q-network the settings ask for,
the policy and its replay trajectory, all seeded from one seed."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch

from stagerl.algorithms._checks import check_int
from stagerl.algorithms.dqn.config import DQNConfig, check_spaces
from stagerl.algorithms.dqn.networks import ObservationEncoder, QNetwork, mlp_body
from stagerl.algorithms.dqn.policy import TOTAL_STEPS_MISSING, DQNPolicy
from stagerl.algorithms.dqn.replay import make_dqn_trajectory
from stagerl.policies.agent import Agent
from stagerl.utils.devices import resolve_device

__all__ = ["make_dqn_agent", "make_q_network", "state_spec"]


def make_dqn_agent(env: Any, config: DQNConfig, seed: int = 0, device: Any = "auto",
                   body: torch.nn.Module | None = None) -> Agent:
    """A DQN agent for ``env`` (single or vector): the policy and its trajectory.

    Everything is checked here, before anything runs: the settings, the env's spaces (a
    ``Discrete`` action space; ``Box``, ``Discrete`` or ``MultiBinary`` observations), the
    combination of both and the device. The same ``seed`` gives the same network, exploration
    and replay draws.

    Args:
        env: the env the agent will act in (its spaces are read, it is not stepped).
        config: the hyper-parameters; ``total_steps`` must be set.
        seed: seeds the network's initialisation, ε-greedy and the replay sampler.
        device: ``"cpu"``, ``"cuda"`` or ``"auto"`` (CUDA where available).
        body: a torch module from encoded observations ``(batch, *obs_shape)`` (or stacks
            ``(batch, stack_size, *frame)``) to features ``(batch, n)``, e.g. a CNN for images;
            default: an MLP of ``config.net_arch`` over the flattened input.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
        >>> env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0)
        >>> agent = make_dqn_agent(env, DQNConfig(total_steps=400, learning_starts=100,
        ...                                       net_arch=(16,), double=True), device="cpu")
        >>> _ = rl.run(agent, env, rl.StopAfterNSteps(400, progress=False))
        >>> agent.policy.env_steps, agent.trajectory.controller.n_sampled > 0
        (400, True)
        >>> pendulum = rl.GymEnv("Pendulum-v1")
        >>> make_dqn_agent(pendulum, DQNConfig(total_steps=1))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: DQN chooses among discrete actions, but the env's action space is continuous: ...
    """
    if not isinstance(config, DQNConfig):
        raise TypeError(f"make_dqn_agent needs a DQNConfig, got {type(config).__name__}")
    seed = check_int("make_dqn_agent", "seed", seed, low=0)
    if body is not None and not isinstance(body, torch.nn.Module):
        raise TypeError(f"body must be a torch.nn.Module, got {type(body).__name__}")
    action_space, state_space, num_envs = check_spaces(env, config)
    device = resolve_device(device)
    if config.total_steps is None:
        raise ValueError(TOTAL_STEPS_MISSING)
    explore_seed, replay_seed = np.random.SeedSequence(int(seed)).spawn(2)
    with torch.random.fork_rng(devices=[]):  # the same seed, the same network; global rng kept
        torch.manual_seed(int(seed))
        network = make_q_network(state_space, int(action_space.n), config, body)
    policy = DQNPolicy(network, config, int(action_space.start), num_envs,
                       np.random.default_rng(explore_seed), device,
                       observation_shape=state_space.shape)
    state = state_spec(state_space)
    trajectory = make_dqn_trajectory(
        state, config.steps_per_burst, config.batch_size, config.buffer_size, config.train_freq,
        config.learning_starts, config.n_step, config.gamma, config.stack_size,
        config.prioritized, np.random.default_rng(replay_seed))
    return Agent(policy, trajectory)


def state_spec(space: Any) -> tuple[Any, tuple[int, ...]]:
    """The ``(dtype, shape)`` a state trace stores observations of ``space`` in: Discrete as
    int64 indices, float Boxes as float32, other arrays in their own dtype."""
    if isinstance(space, gymnasium.spaces.Discrete):
        return np.int64, ()
    dtype = np.float32 if np.dtype(space.dtype).kind == "f" else np.dtype(space.dtype)
    return dtype, tuple(space.shape)


def make_q_network(space: Any, n_actions: int, config: DQNConfig,
                   body: torch.nn.Module | None = None) -> QNetwork:
    """The Q-network the settings ask for, on the CPU (its initialisation uses torch's rng)."""
    encoder = ObservationEncoder.for_space(space)
    frame = (int(space.n),) if isinstance(space, gymnasium.spaces.Discrete) else space.shape
    shape = frame if config.stack_size == 1 else (config.stack_size, *frame)
    if body is None:
        body = mlp_body(int(np.prod(shape)), config.net_arch)
    with torch.no_grad():
        dummy = torch.zeros((1, *shape))
        features = body(dummy)
    if features.dim() != 2:
        raise ValueError(f"body must return (batch, features), got shape {tuple(features.shape)} "
                         f"for an input of shape {tuple(dummy.shape)}")
    return QNetwork(body, features.shape[1], n_actions, encoder, config.dueling,
                    config.n_atoms if config.distributional else 1, config.v_min, config.v_max)
