"""The floors ``benchmarks/limits.py`` builds beyond MLPs on flat observations: pixels (the
Nature CNN on ``uint8`` frames), games of several players, policies with memory (recurrent PPO,
DRQN) and REPS (those two in ``limits_floors_memory``). The same three parts as
``limits_floors`` (env, act, learn), each the cheapest correct way a hand-written loop could do
it:

* pixels: acting is the CNN's forward pass in torch (no gradient, ``inference_mode``; the
  extractor takes the frames channels last on the CPU, as the run does): a numpy copy of a CNN
  would be slower than oneDNN's convolutions. DQN stacks its frames itself, so its act floor
  shifts a stack of frames at every act. Learning: the run's gradient steps on random ``uint8``
  frames of the stack's shape, stored channels last (the layout the convolutions read);
* games: the game's own ``act`` with actions drawn beforehand, legal by construction (a random
  order of the squares per game where an action is taken once, any action where all are
  legal), reading the next mover's observation (and legal actions) after each move; each
  player's acting passes (a random or scripted player: one draw a move); each learning
  player's gradient steps, by ``limits_floors`` (a DQN masking its next actions by legality
  takes its masked TD targets: ``limits_floors_masked``);
* memory: acting steps the RNN in numpy at every act (its memory must go on, even where an
  epsilon-greedy action is random); learning unrolls the sequences of the run's shapes (recurrent
  PPO: each minibatch's sequences, length and mask as the run cut them; DRQN: ``batch_size``
  windows of ``sequence_length`` steps, ``burn_in`` of them without gradient);
* REPS: the dual's damped Newton steps on the run's own returns and features, as many as the
  run took (the gradient and Hessian written out in numpy, not by autograd), with as many
  evaluations of the dual, and the policy fit's loss evaluations (forward and backward of the
  weighted log-likelihood) as many as L-BFGS made in the run.

:func:`more_floors` is called before the counted run: it installs the counters the floors read
(the minibatches' shapes, the dual's problems, L-BFGS's evaluations) on that run's policy.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np
import torch
from limits_floors import act_floor, greedy_acts, learn_floor, optimiser_steps
from torch import nn
from torch.nn import functional as F

from stagerl.algorithms.adam_step import adam_step
from stagerl.algorithms.dqn import DQNPolicy
from stagerl.algorithms.dqn.recurrent import DRQNPolicy
from stagerl.algorithms.extractors import NatureCNN
from stagerl.algorithms.on_policy import PPOPolicy
from stagerl.algorithms.on_policy.erwr import ERWRPolicy
from stagerl.algorithms.on_policy.recurrent import RecurrentPPOPolicy
from stagerl.algorithms.on_policy.reps import REPSPolicy
from stagerl.algorithms.torch_state import denormals_flushed
from stagerl.policies.agent import Agent

CPU = torch.device("cpu")
Part = Callable[[], Callable[[], None] | None]


def more_floors(prepared) -> Floors | None:
    """The floors of ``prepared``'s experiment if this module builds them (``None``: the MLP
    floors of ``limits_floors``); call before the counted run (it counts on its policy)."""
    from limits_floors_memory import DRQNFloors, ERWRFloors, RecurrentPPOFloors, REPSFloors

    env, policy = prepared.env, getattr(prepared.agent, "policy", prepared.agent)
    if hasattr(env, "players"):
        return GameFloors(prepared)
    for kind, floors in ((RecurrentPPOPolicy, RecurrentPPOFloors), (DRQNPolicy, DRQNFloors),
                         (REPSPolicy, REPSFloors), (ERWRPolicy, ERWRFloors)):
        if isinstance(policy, kind):
            return floors(policy)
    if isinstance(policy, DQNPolicy | PPOPolicy) and cnn_of(policy) is not None:
        return PixelFloors(policy)
    return None


class Floors:
    """The parts an experiment's floor replaces: ``parts(acts, num_envs, seed)`` gives a
    builder per part (called outside the clock; its function is timed)."""

    def parts(self, acts: int, num_envs: int, seed: int) -> dict[str, Part]:
        raise NotImplementedError


def generator_for(seed: int) -> torch.Generator:
    """A seeded generator on the default device: the floor's random data is made where its
    networks are (``torch.device(...)`` as a context sets that device)."""
    return torch.Generator(device=torch.get_default_device()).manual_seed(seed)


def timed(go: Callable[[], None], **work: int) -> Callable[[], None]:
    """``go`` with the work it does (``go.work``), which the tests hold against the run's."""
    go.work = work  # type: ignore[attr-defined]
    return go


# ---- pixels ------------------------------------------------------------------------------------


def cnn_of(policy) -> NatureCNN | None:
    net = policy.network if isinstance(policy, DQNPolicy) else policy.model
    return next((m for m in net.modules() if isinstance(m, NatureCNN)), None)


def random_frames(rows: int, cnn: NatureCNN, generator: torch.Generator) -> torch.Tensor:
    """``rows`` random ``uint8`` stacks of the CNN's input shape, channels last."""
    channels = cnn.cnn[0].in_channels
    frames = torch.randint(0, 256, (rows, channels, *cnn.frame), dtype=torch.uint8,
                           generator=generator, device=generator.device)
    return frames.contiguous(memory_format=torch.channels_last)


class PixelFloors(Floors):
    def __init__(self, policy) -> None:
        self.policy = policy

    def parts(self, acts: int, num_envs: int, seed: int) -> dict[str, Part]:
        policy = self.policy
        if isinstance(policy, DQNPolicy):
            forwards = round(greedy_acts(policy, acts, num_envs))
            return {"act": lambda: dqn_pixel_act(policy, acts, forwards, num_envs, seed),
                    "learn": lambda: dqn_pixel_learn(policy, seed)}
        return {"act": lambda: ppo_pixel_act(policy, acts, num_envs, seed),
                "learn": lambda: ppo_pixel_learn(policy, seed)}


def dqn_pixel_act(policy: DQNPolicy, acts: int, forwards: int, batch: int, seed: int):
    """Every act shifts the frame stacks by a new frame; ``forwards`` of them take the
    network's greedy action."""
    net, cnn = copy.deepcopy(policy.network), cnn_of(policy)
    # The frames stack up on the host, as the env hands them over; each greedy act sends the
    # stack to the network's device.
    host = torch.Generator(device="cpu").manual_seed(seed)
    stack = random_frames(batch, cnn, host).contiguous().numpy()
    frame = stack[:, 0].copy()
    device = next(net.parameters()).device

    def go() -> None:
        with torch.inference_mode():
            for i in range(acts):
                stack[:, :-1] = stack[:, 1:]
                stack[:, -1] = frame
                if i < forwards:
                    net.q_values(torch.from_numpy(stack).to(device)).argmax(1).cpu().numpy()
    return timed(go, acts=acts, forwards=forwards, batch=batch)


def dqn_pixel_learn(policy: DQNPolicy, seed: int):
    """DQN's gradient steps on frames: per burst of ``gradient_steps`` one target pass (the
    target is fixed inside it), then each step's online pass, Huber loss, clipped gradient and
    fused Adam step."""
    c, net = policy.config, copy.deepcopy(policy.network)
    if net.distributional:
        return None
    target = copy.deepcopy(policy.target) if policy.target is not None else net
    steps = optimiser_steps(policy.q.optimiser)
    per_burst = c.train_freq if c.gradient_steps == -1 else c.gradient_steps
    bursts, size = steps // per_burst, c.batch_size
    rows = per_burst * size
    generator = generator_for(seed)
    state = random_frames(rows, cnn_of(policy), generator)
    next_state = random_frames(rows, cnn_of(policy), generator)
    action = torch.randint(net.n_actions, (rows, 1), generator=generator)
    reward = torch.randn(rows, generator=generator)
    bootstrap = (c.gamma ** c.n_step) * (torch.rand(rows, generator=generator) > 0.01).float()
    params = list(net.parameters())
    optimiser = torch.optim.Adam(params, lr=c.learning_rate, eps=c.adam_eps, fused=True)
    syncs = min(bursts, steps and policy.env_steps // c.target_update_interval)
    loss_of = F.smooth_l1_loss if c.loss == "huber" else F.mse_loss

    def go() -> None:
        with denormals_flushed(CPU):
            for burst in range(bursts):
                if burst < syncs:
                    torch._foreach_copy_(list(target.parameters()), params)
                with torch.no_grad():
                    next_q = target(next_state)
                    goal = None if c.double else \
                        reward + bootstrap * next_q.max(1).values
                for i in range(per_burst):
                    rows_i = slice(i * size, (i + 1) * size)
                    if goal is None:
                        with torch.no_grad():
                            pick = net(next_state[rows_i]).argmax(1, keepdim=True)
                            goal_i = reward[rows_i] + bootstrap[rows_i] * \
                                next_q[rows_i].gather(1, pick).squeeze(1)
                    else:
                        goal_i = goal[rows_i]
                    q = net(state[rows_i]).gather(1, action[rows_i]).squeeze(1)
                    loss = loss_of(q, goal_i)
                    for p in params:
                        p.grad = None
                    loss.backward()
                    if c.max_grad_norm is not None and c.max_grad_norm < math.inf:
                        nn.utils.clip_grad_norm_(params, c.max_grad_norm, foreach=True)
                    adam_step(optimiser)
    return timed(go, gradient_steps=bursts * per_burst, batch=size)


def ppo_pixel_act(policy: PPOPolicy, acts: int, batch: int, seed: int):
    """One pass of the shared CNN and both heads per act, and the categorical draw."""
    model, rng = copy.deepcopy(policy.model), np.random.default_rng(seed)
    # The frames are the env's, on the host: each act sends them to the network's device.
    host = torch.Generator(device="cpu").manual_seed(seed)
    states = random_frames(batch, cnn_of(policy), host)
    device = next(model.parameters()).device

    def go() -> None:
        for _ in range(acts):
            out, _, _ = model.act_outputs(states.to(device))
            p = np.exp(out - out.max(axis=1, keepdims=True))
            cdf = np.cumsum(p, axis=1)
            (cdf < rng.random((batch, 1)) * cdf[:, -1:]).sum(axis=1)
    return timed(go, acts=acts, batch=batch)


def ppo_pixel_learn(policy: PPOPolicy, seed: int):
    """PPO's epochs of minibatches over rollouts of the run's size, on frames: one CNN pass per
    minibatch for both heads (``evaluate``), the clipped loss, a clipped gradient, fused Adam."""
    c, model = policy.config, copy.deepcopy(policy.model)
    rollouts = policy.n_updates
    n = max(1, round(policy.env_steps / rollouts)) if rollouts else 1
    generator = generator_for(seed)
    state = random_frames(n, cnn_of(policy), generator)
    action = torch.randint(model.actor[-1].out_features, (n,), generator=generator)
    advantage, ret = torch.randn(n, generator=generator), torch.randn(n, generator=generator)
    with torch.no_grad():
        old_log_prob = model.log_prob_entropy(state[:64], action[:64], False)[0].mean() \
            + 0.01 * torch.randn(n, generator=generator)
    flats = model.flat_parameters()
    optimiser = torch.optim.Adam(flats, lr=c.learning_rate, eps=1e-5, fused=True)
    clip, entropy = c.max_grad_norm, c.ent_coef > 0

    def step(rows) -> None:
        log_prob, ent, value = model.evaluate(state[rows], action[rows], entropy)
        a = advantage[rows]
        if c.normalize_advantage:
            a = (a - a.mean()) / (a.std() + 1e-8)
        ratio = torch.exp(log_prob - old_log_prob[rows])
        loss = -torch.min(a * ratio, a * ratio.clamp(1 - c.clip_range, 1 + c.clip_range)).mean()
        loss = loss + c.vf_coef * F.mse_loss(value, ret[rows])
        if entropy:
            loss = loss - c.ent_coef * ent.mean()
        optimiser.zero_grad(set_to_none=False)
        loss.backward()
        if clip is not None and clip < math.inf:
            nn.utils.clip_grad_norm_(flats, clip, foreach=True)
        adam_step(optimiser)

    minibatches = -(-n // c.batch_size)

    def go() -> None:
        with denormals_flushed(CPU):
            for _ in range(rollouts):
                for _ in range(c.n_epochs):
                    for start in range(0, n, c.batch_size):
                        step(slice(start, start + c.batch_size))
    return timed(go, gradient_steps=rollouts * c.n_epochs * minibatches, rollout=n)


# ---- games of several players ------------------------------------------------------------------


def flat_size(space) -> int:
    return int(space.n) if not getattr(space, "shape", ()) else int(np.prod(space.shape))


class GameFloors(Floors):
    """The game's own loop, each player's acting, each learning player's gradient steps."""

    def __init__(self, prepared) -> None:
        self.prepared, self.game = prepared, prepared.env

    def members(self, acts: int) -> list[tuple]:
        """``(first player, inner policy, learns, moves, state size)`` per distinct policy:
        a learning policy's moves are its own count; a sequential game's other moves are the
        rest, a simultaneous game's every act."""
        agent, game = self.prepared.agent, self.game
        simultaneous = game.dynamic_style.simultaneous
        found = []
        for player, member in agent.distinct_policies():
            learns = isinstance(member, Agent)
            inner = member.policy if learns else member
            found.append([player, inner, learns, int(inner.env_steps) if learns else 0,
                          flat_size(game.state_space_of(player))])
        learned = sum(m[3] for m in found)
        for m in found:
            if not m[2]:
                m[3] = acts if simultaneous else max(0, acts - learned)
        return [tuple(m) for m in found]

    def parts(self, acts: int, num_envs: int, seed: int) -> dict[str, Part]:
        return {"env": lambda: game_env(self.prepared, acts, seed),
                "act": lambda: game_act(self.members(acts), self.game, seed),
                "learn": lambda: game_learn(self.members(acts), seed)}


def game_env(prepared, acts: int, seed: int):
    """The game's ``act`` with pre-drawn legal actions, ``acts`` times, and the observation (and
    legal actions) of who moves next; ``reset`` at each game's end."""
    game, rng = prepared.experiment.make_env(prepared.config, seed), np.random.default_rng(seed)
    players = game.players
    n = int(game.action_space_of(players[0]).n)
    masked = getattr(game, "has_legal_actions_mask", False)
    if game.dynamic_style.simultaneous:
        draws = rng.integers(n, size=(acts, len(players))).tolist()
        moves = [dict(zip(players, row, strict=True)) for row in draws]

        def go() -> None:
            game.reset()
            for move in moves:
                game.act(move)
                for player in players:
                    game.state_of(player)
                if game.is_terminated or game.is_truncated:
                    game.reset()
        return timed(go, acts=acts)
    # A sequential game whose every action is taken once a game (tic-tac-toe's squares): a
    # random order of the actions per game is legal by construction (the game raises if not).
    orders = rng.permuted(np.tile(np.arange(n), (acts, 1)), axis=1).tolist()

    def go() -> None:
        game.reset()
        order, k = iter(orders), 0
        squares = next(order)
        for _ in range(acts):
            game.act(squares[k])
            k += 1
            if game.is_terminated or game.is_truncated:
                game.reset()
                squares, k = next(order), 0
            mover = game.current_player
            game.state_of(mover)
            if masked:
                game.legal_actions_mask_of(mover)
    return timed(go, acts=acts)


def game_act(members: list[tuple], game, seed: int):
    """Each learning player's acting passes (``limits_floors.act_floor`` at batch 1), and one
    draw a move for each other player."""
    rng, goes, work = np.random.default_rng(seed), [], {}
    for player, inner, learns, moves, size in members:
        if learns:
            forwards = round(greedy_acts(inner, moves, 1))
            goes.append(act_floor(inner, forwards, 1, size, seed))
            work[f"{player} forwards"] = forwards
        else:
            n = int(game.action_space_of(player).n)
            goes.append(lambda moves=moves, n=n: [rng.integers(n) for _ in range(moves)])
            work[f"{player} draws"] = moves

    def go() -> None:
        for one in goes:
            one()
    return timed(go, **work)


def game_learn(members: list[tuple], seed: int):
    """Each learning player's gradient steps (``limits_floors.learn_floor``; a DQN that masks
    its next actions by legality: ``limits_floors_masked``)."""
    from limits_floors_masked import masked_dqn_floor

    goes = [(masked_dqn_floor if getattr(inner, "masked", False) else learn_floor)(
        inner, size, moves, seed) for _, inner, learns, moves, size in members if learns]
    if not goes or any(go is None for go in goes):
        return None

    def go() -> None:
        for one in goes:
            one()
    go.goes = goes  # type: ignore[attr-defined]  (for the tests: each learner's floor)
    return timed(go, learners=len(goes))
