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
from stagerl.algorithms.extractors import (
    extractor_factory,
    features_dim,
    is_image_space,
    make_extractor,
    observation_spec,
    sample_batch,
    stacked_space,
)
from stagerl.algorithms.onednn import with_onednn_linears
from stagerl.policies.agent import Agent
from stagerl.utils.devices import resolve_device

__all__ = ["make_dqn_agent", "make_q_network", "state_spec", "has_legal_actions_mask"]


def make_dqn_agent(env: Any, config: DQNConfig, seed: int = 0, device: Any = "auto",
                   body: torch.nn.Module | None = None,
                   features_extractor: Any = None) -> Agent:
    """A DQN agent for ``env`` (single or vector): the policy and its trajectory.

    In an env with legal-action masks (``env.legal_actions_mask``: a player's view of a game
    such as ``TicTacToe``) the agent is *masked*: it acts among the legal actions only, and its
    trajectory stores every state's mask, so the TD target maxes over the legal next actions
    (see :func:`~stagerl.algorithms.dqn.update.td_target`).

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
            ``(batch, stack_size, *frame)``) to features ``(batch, n)``, the whole body;
            default: ``config.features_extractor`` and ``config.net_arch`` (an MLP over the
            flattened input for vectors, the Nature CNN for frames).
        features_extractor: a factory of the (stacked) observation space giving the module
            that the ``net_arch`` layers follow (see :mod:`stagerl.algorithms.extractors`),
            in place of the built-in ``config.features_extractor`` names.

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
        network = make_q_network(state_space, int(action_space.n), config, body,
                                 features_extractor)
    masked = has_legal_actions_mask(env)
    policy = DQNPolicy(network, config, int(action_space.start), num_envs,
                       np.random.default_rng(explore_seed), device, masked,
                       observation_shape=state_space.shape)
    state = state_spec(state_space)
    trajectory = make_dqn_trajectory(
        state, config.steps_per_burst, config.batch_size, config.buffer_size, config.train_freq,
        config.learning_starts, config.n_step, config.gamma, config.stack_size,
        config.prioritized, np.random.default_rng(replay_seed),
        (np.bool_, (int(action_space.n),)) if masked else None)
    return Agent(policy, trajectory)


def has_legal_actions_mask(env: Any) -> bool:
    """Whether ``env`` tells its legal actions (a ``legal_actions_mask``: a game's player, an
    env with masks), which a masked DQN acts among and stores."""
    return hasattr(type(env), "legal_actions_mask") or hasattr(env, "legal_actions_mask")


def state_spec(space: Any) -> Any:
    """The spec a state trace stores observations of ``space`` in (see
    :func:`~stagerl.algorithms.extractors.observation_spec`)."""
    return observation_spec(space)


def make_q_network(space: Any, n_actions: int, config: DQNConfig,
                   body: torch.nn.Module | None = None,
                   features_extractor: Any = None) -> QNetwork:
    """The Q-network the settings ask for, on the CPU (its initialisation uses torch's rng)."""
    factory = None
    if body is None:
        factory = features_extractor if features_extractor is not None else \
            _builtin(config.features_extractor, space, config.stack_size)
    if factory is None:  # the encoder turns observations into floats, the MLP reads them
        encoder = ObservationEncoder.for_space(space)
        frame = (int(space.n),) if isinstance(space, gymnasium.spaces.Discrete) else space.shape
        shape = frame if config.stack_size == 1 else (config.stack_size, *frame)
        if body is None:
            body = mlp_body(int(np.prod(shape)), config.net_arch)
        dummy = torch.zeros((1, *shape))  # as the encoder gives it
        encoder_of_dummy = None
    else:  # the extractor reads the observations as stored (pixels, one-hot, dicts)
        encoder = ObservationEncoder("raw")
        network_space = stacked_space(space, config.stack_size) \
            if isinstance(space, gymnasium.spaces.Box) else space
        extractor = make_extractor(factory, network_space, "make_dqn_agent")
        hidden = mlp_body(features_dim(extractor, network_space), config.net_arch)[1:]
        body = torch.nn.Sequential(extractor, *hidden)
        dummy = encoder_of_dummy = sample_batch(network_space)
    with torch.no_grad():
        features = body(dummy if encoder_of_dummy is None else encoder(dummy))
    if features.dim() != 2:
        shape = tuple(dummy.shape) if isinstance(dummy, torch.Tensor) else "nested"
        raise ValueError(f"body must return (batch, features), got shape {tuple(features.shape)} "
                         f"for an input of shape {shape}")
    network = QNetwork(body, features.shape[1], n_actions, encoder, config.dueling,
                       config.n_atoms if config.distributional else 1, config.v_min, config.v_max)
    with_onednn_linears(network)  # the same layers, their large products on oneDNN
    if any(isinstance(layer, torch.nn.Conv2d) for layer in network.modules()):
        # The same weights laid out channels-last: the convolutions' gradients took ~25% less
        # time on the CPU (oneDNN's kernels prefer that layout), the values are the same.
        network = network.to(memory_format=torch.channels_last)
    return network


def _builtin(name: str, space: Any, stack_size: int) -> Any:
    """The factory a built-in extractor name stands for (``None``: the encoder and MLP, as for
    vectors)."""
    network_space = stacked_space(space, stack_size) \
        if isinstance(space, gymnasium.spaces.Box) else space
    if name in ("auto", "mlp") and not isinstance(space, (gymnasium.spaces.Dict,
                                                           gymnasium.spaces.Tuple)):
        if name == "mlp" or not is_image_space(network_space):
            return None
    return extractor_factory(name, network_space)
