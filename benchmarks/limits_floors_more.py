"""The floors ``benchmarks/limits.py`` builds beyond MLPs on flat observations: pixels (the
Nature CNN on ``uint8`` frames), games of several players, policies with memory (recurrent PPO,
DRQN) and REPS. The same three parts as ``limits_floors`` (env, act, learn), each the cheapest
correct way a hand-written loop could do it:

* pixels: acting is the CNN's forward pass in torch (no gradient, ``inference_mode``; the
  extractor takes the frames channels last on the CPU, as the run does): a numpy copy of a CNN
  would be slower than oneDNN's convolutions. DQN stacks its frames itself, so its act floor
  shifts a stack of frames at every act. Learning: the run's gradient steps on random ``uint8``
  frames of the stack's shape, stored channels last (the layout the convolutions read);
* games: the game's own ``act`` with actions drawn beforehand, legal by construction (a random
  order of the squares per game where an action is taken once, any action where all are
  legal), reading the next mover's observation (and legal actions) after each move; each
  player's acting passes (a random or scripted player: one draw a move); each learning
  player's gradient steps, by ``limits_floors``;
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

from stagerl.algorithms.dqn import DQNPolicy
from stagerl.algorithms.dqn.recurrent import DRQNPolicy
from stagerl.algorithms.extractors import NatureCNN
from stagerl.algorithms.on_policy import PPOPolicy, reps
from stagerl.algorithms.on_policy.recurrent import RecurrentPPOPolicy
from stagerl.algorithms.on_policy.reps import REPSPolicy
from stagerl.algorithms.torch_state import denormals_flushed
from stagerl.policies.agent import Agent
from stagerl.utils.numpy_rnn import NumpyCopy, gru_step, lstm_step, mlp_forward

CPU = torch.device("cpu")
Part = Callable[[], Callable[[], None] | None]


def more_floors(prepared) -> Floors | None:
    """The floors of ``prepared``'s experiment if this module builds them (``None``: the MLP
    floors of ``limits_floors``); call before the counted run (it counts on its policy)."""
    env, policy = prepared.env, getattr(prepared.agent, "policy", prepared.agent)
    if hasattr(env, "players"):
        return GameFloors(prepared)
    for kind, floors in ((RecurrentPPOPolicy, RecurrentPPOFloors), (DRQNPolicy, DRQNFloors),
                         (REPSPolicy, REPSFloors)):
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
                           generator=generator)
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
    generator = torch.Generator().manual_seed(seed)
    stack = random_frames(batch, cnn, generator).contiguous().numpy()
    frame = stack[:, 0].copy()

    def go() -> None:
        with torch.inference_mode():
            for i in range(acts):
                stack[:, :-1] = stack[:, 1:]
                stack[:, -1] = frame
                if i < forwards:
                    net.q_values(torch.from_numpy(stack)).argmax(1).numpy()
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
    generator = torch.Generator().manual_seed(seed)
    state = random_frames(rows, cnn_of(policy), generator)
    next_state = random_frames(rows, cnn_of(policy), generator)
    action = torch.randint(net.n_actions, (rows, 1), generator=generator)
    reward = torch.randn(rows, generator=generator)
    bootstrap = (c.gamma ** c.n_step) * (torch.rand(rows, generator=generator) > 0.01).float()
    params = list(net.parameters())
    optimiser = torch.optim.Adam(params, lr=c.learning_rate, eps=c.adam_eps, fused=True)
    syncs = min(bursts, steps and policy.env_steps // c.target_update_interval)

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
                    loss = F.smooth_l1_loss(q, goal_i)
                    for p in params:
                        p.grad = None
                    loss.backward()
                    if c.max_grad_norm is not None and c.max_grad_norm < math.inf:
                        nn.utils.clip_grad_norm_(params, c.max_grad_norm, foreach=True)
                    optimiser.step()
    return timed(go, gradient_steps=bursts * per_burst, batch=size)


def ppo_pixel_act(policy: PPOPolicy, acts: int, batch: int, seed: int):
    """One pass of the shared CNN and both heads per act, and the categorical draw."""
    model, rng = copy.deepcopy(policy.model), np.random.default_rng(seed)
    states = random_frames(batch, cnn_of(policy), torch.Generator().manual_seed(seed))

    def go() -> None:
        for _ in range(acts):
            out, _, _ = model.act_outputs(states)
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
    generator = torch.Generator().manual_seed(seed)
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
        optimiser.step()

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
    """Each learning player's gradient steps (``limits_floors.learn_floor``)."""
    goes = [learn_floor(inner, size, moves, seed)
            for _, inner, learns, moves, size in members if learns]
    if not goes or any(go is None for go in goes):
        return None

    def go() -> None:
        for one in goes:
            one()
    return timed(go, learners=len(goes))


# ---- memory: recurrent PPO and DRQN -----------------------------------------------------------


def rnn_step(form: tuple, x: np.ndarray, state: np.ndarray) -> np.ndarray:
    """One step of a numpy RNN form from ``state`` ``(B, 1 or 2, H)``; the new state."""
    kind, weights = form
    if kind == "lstm":
        h, c = lstm_step(x, state[:, 0], state[:, 1], weights)
        return np.stack([h, c], axis=1)
    return gru_step(x, state[:, 0], weights)[:, None]


class RecurrentPPOFloors(Floors):
    """Counts each minibatch's sequences (their number, the longest's length, the real steps)
    as the run cuts them."""

    def __init__(self, policy: RecurrentPPOPolicy) -> None:
        self.policy, self.shapes = policy, []
        run_minibatches = policy.minibatches

        def minibatches(seqs):
            for minibatch in run_minibatches(seqs):
                self.shapes.append(minibatch["mask"].clone())
                yield minibatch
        policy.minibatches = minibatches  # the counted run's only

    def parts(self, acts: int, num_envs: int, seed: int) -> dict[str, Part]:
        return {"act": lambda: recurrent_ppo_act(self.policy, acts, num_envs, seed),
                "learn": lambda: recurrent_ppo_learn(self.policy, self.shapes, seed)}


def recurrent_ppo_act(policy: RecurrentPPOPolicy, acts: int, batch: int, seed: int):
    """Per act: the encoder, each RNN's step, the heads and the action's draw, in numpy."""
    model, rng = policy.model, np.random.default_rng(seed)
    names = ["encoder", "actor_rnn", "actor_head", "critic_head"] + (
        [] if model.critic_rnn is None else ["critic_rnn"])
    forms = NumpyCopy({name: copy.deepcopy(getattr(model, name)) for name in names}).current()
    k = model.per_rnn
    x = rng.standard_normal((batch, model.n_inputs)).astype(np.float32)
    state = np.zeros((batch, *model.recurrent_state_shape), np.float32)

    def go() -> None:
        s = state
        for _ in range(acts):
            features = mlp_forward(x, forms["encoder"])
            actor = rnn_step(forms["actor_rnn"], features, s[:, :k])
            critic = actor if model.critic_rnn is None else \
                rnn_step(forms["critic_rnn"], features, s[:, k:])
            out = mlp_forward(actor[:, 0], forms["actor_head"])
            mlp_forward(critic[:, 0], forms["critic_head"])
            s = actor if model.critic_rnn is None else np.concatenate([actor, critic], 1)
            if model.discrete:
                p = np.exp(out - out.max(axis=1, keepdims=True))
                cdf = np.cumsum(p, axis=1)
                (cdf < rng.random((batch, 1)) * cdf[:, -1:]).sum(axis=1)
            else:
                out + rng.standard_normal(out.shape).astype(np.float32)
    return timed(go, acts=acts, batch=batch)


def recurrent_ppo_learn(policy: RecurrentPPOPolicy, masks: list, seed: int):
    """One gradient step per minibatch the run took, of its shape: the sequences unrolled from
    their initial states, PPO's clipped loss on the real steps, a clipped gradient, fused Adam."""
    c, model = policy.config, copy.deepcopy(policy.model)
    if not masks:
        return None
    generator = torch.Generator().manual_seed(seed)
    most, longest = max(len(m) for m in masks), max(m.shape[1] for m in masks)
    x = torch.randn(most, longest, model.n_inputs, generator=generator)
    h0 = 0.1 * torch.randn(most, *model.recurrent_state_shape, generator=generator)
    n_out = model.dist.n_outputs
    action = torch.randint(n_out, (most, longest), generator=generator) if model.discrete \
        else torch.randn(most, longest, n_out, generator=generator)
    old_log_prob = -math.log(n_out) + 0.01 * torch.randn(most, longest, generator=generator)
    advantage = torch.randn(most, longest, generator=generator)
    ret = torch.randn(most, longest, generator=generator)
    params = list(model.parameters())
    optimiser = torch.optim.Adam(params, lr=c.learning_rate, eps=1e-5, fused=True)
    entropy = c.ent_coef > 0

    def step(mask: torch.Tensor) -> None:
        s, w = mask.shape
        out, values, _ = model.unroll(x[:s, :w], h0[:s])
        log_prob, ent = model.log_prob_entropy(out[mask], action[:s, :w][mask], entropy)
        a = advantage[:s, :w][mask]
        if c.normalize_advantage and len(a) > 1:
            a = (a - a.mean()) / (a.std() + 1e-8)
        ratio = torch.exp(log_prob - old_log_prob[:s, :w][mask])
        loss = -torch.min(a * ratio, a * ratio.clamp(1 - c.clip_range, 1 + c.clip_range)).mean()
        loss = loss + c.vf_coef * F.mse_loss(values[mask], ret[:s, :w][mask])
        if entropy:
            loss = loss - c.ent_coef * ent.mean()
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        if c.max_grad_norm is not None and c.max_grad_norm < math.inf:
            nn.utils.clip_grad_norm_(params, c.max_grad_norm, foreach=True)
        optimiser.step()

    def go() -> None:
        with denormals_flushed(CPU):
            for mask in masks:
                step(mask)
    return timed(go, gradient_steps=len(masks), steps=int(sum(m.sum() for m in masks)))


class DRQNFloors(Floors):
    def __init__(self, policy: DRQNPolicy) -> None:
        self.policy = policy

    def parts(self, acts: int, num_envs: int, seed: int) -> dict[str, Part]:
        return {"act": lambda: drqn_act(self.policy, acts, num_envs, seed),
                "learn": lambda: drqn_learn(self.policy, seed)}


def drqn_act(policy: DRQNPolicy, acts: int, batch: int, seed: int):
    """Per act: the encoder and the RNN's step (the memory goes on at every act), the head and
    the greedy action."""
    network = policy.network
    forms = NumpyCopy({name: copy.deepcopy(getattr(network, name))
                       for name in ("encoder", "rnn", "head")}).current()
    x = np.random.default_rng(seed).standard_normal((batch, network.n_inputs)).astype(np.float32)
    state = np.zeros((batch, *network.recurrent_state_shape), np.float32)

    def go() -> None:
        s = state
        for _ in range(acts):
            s = rnn_step(forms["rnn"], mlp_forward(x, forms["encoder"]), s)
            mlp_forward(s[:, 0], forms["head"]).argmax(axis=1)
    return timed(go, acts=acts, batch=batch)


def drqn_learn(policy: DRQNPolicy, seed: int):
    """DRQN's gradient steps on ``batch_size`` windows of ``sequence_length`` steps: the
    burn-in and the target's unroll without gradient, the online unroll after the burn-in, the
    TD loss on the steps, a clipped gradient, fused Adam; the target's copies as the run's."""
    c, online = policy.config, copy.deepcopy(policy.network)
    target = copy.deepcopy(policy.target)
    steps, b, size = policy.n_updates, c.burn_in, c.batch_size
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(size, c.sequence_length + 1, online.n_inputs, generator=generator)
    h0 = 0.1 * torch.randn(size, *online.recurrent_state_shape, generator=generator)
    action = torch.randint(online.n_actions, (size, c.sequence_length - b, 1),
                           generator=generator)
    reward = torch.randn(size, c.sequence_length - b, generator=generator)
    bootstrap = c.gamma * (torch.rand(size, c.sequence_length - b, generator=generator)
                           > 0.01).float()
    real = torch.ones(size, c.sequence_length - b, dtype=torch.bool)
    params = list(online.parameters())
    optimiser = torch.optim.Adam(params, lr=c.learning_rate, eps=c.adam_eps, fused=True)
    syncs = min(steps, policy.target_updates)
    every = max(1, steps // syncs) if syncs else 0
    loss_of = F.smooth_l1_loss if c.loss == "huber" else F.mse_loss

    def go() -> None:
        with denormals_flushed(CPU):
            for i in range(steps):
                if syncs and i % every == 0 and i // every < syncs:
                    torch._foreach_copy_(list(target.parameters()), params)
                with torch.no_grad():
                    h = online.unroll(x[:, :b], h0)[1] if b else h0
                    q_next_target = target.unroll(x, h0)[0][:, b + 1:]
                q = online.unroll(x[:, b:], h)[0]
                q_taken = q[:, :-1].gather(-1, action).squeeze(-1)
                best = (q[:, 1:].detach() if c.double else q_next_target).argmax(-1, keepdim=True)
                goal = reward + bootstrap * q_next_target.gather(-1, best).squeeze(-1)
                loss = loss_of(q_taken[real], goal[real])
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                if c.max_grad_norm is not None and c.max_grad_norm < math.inf:
                    nn.utils.clip_grad_norm_(params, c.max_grad_norm, foreach=True)
                optimiser.step()
    return timed(go, gradient_steps=steps, windows=size, window=c.sequence_length)


# ---- REPS --------------------------------------------------------------------------------------


class REPSFloors(Floors):
    """Counts each update's dual problem (returns, features, start), the run's Newton steps and
    dual evaluations on it, and L-BFGS's evaluations of the policy fit."""

    def __init__(self, policy: REPSPolicy) -> None:
        self.policy, self.duals, self.evaluations = policy, [], []
        solve, optimiser = policy.solve_dual, policy.optimiser
        run_step = optimiser.step

        def solve_dual(returns, features):
            start = (self.policy.eta, None if self.policy.dual_v is None
                     else self.policy.dual_v.copy())
            counts = {"newton": 0, "values": 0}
            hessian, dual = torch.autograd.functional.hessian, reps.reps_dual

            def counting_hessian(*args, **kwargs):
                counts["newton"] += 1  # one Hessian a Newton step
                return hessian(*args, **kwargs)

            def counting_dual(*args, **kwargs):
                counts["values"] += 1
                return dual(*args, **kwargs)
            torch.autograd.functional.hessian, reps.reps_dual = counting_hessian, counting_dual
            try:
                return solve(returns, features)
            finally:
                torch.autograd.functional.hessian, reps.reps_dual = hessian, dual
                # a Newton step evaluates the dual twice (its gradient, its Hessian); the
                # rest are the start's value and the line search's
                self.duals.append((returns.copy(), features.copy(), *start, counts["newton"],
                                   counts["values"] - 2 * counts["newton"]))

        def step(closure):
            out = run_step(closure)
            self.evaluations.append(int(optimiser.state[optimiser._params[0]]["func_evals"]))
            return out
        policy.solve_dual, optimiser.step = solve_dual, step  # the counted run's only

    def parts(self, acts: int, num_envs: int, seed: int) -> dict[str, Part]:
        policy = self.policy  # acting: limits_floors' numpy copy of the actor-critic
        return {"act": lambda: act_floor(policy, round(greedy_acts(policy, acts, num_envs)),
                                         num_envs, policy.model.n_inputs, seed),
                "learn": lambda: reps_learn(policy, self.duals, self.evaluations, seed)}


def dual_derivatives(x: np.ndarray, returns: np.ndarray, features: np.ndarray, epsilon: float,
                     l2: float) -> tuple:
    """REPS's dual at ``x = (eta, v)``, its gradient and its Hessian, written out."""
    eta, v = x[0], x[1:]
    delta = returns - features @ v
    z = delta / eta
    top = z.max()
    e = np.exp(z - top)
    p = e / e.sum()
    log_mean = math.log(e.mean()) + top
    value = eta * epsilon + eta * log_mean
    mean_delta = p @ delta
    centred = delta - mean_delta
    fp = features.T @ p
    gradient = np.empty_like(x)
    gradient[0] = epsilon + log_mean - mean_delta / eta
    gradient[1:] = -fp
    hessian = np.empty((len(x), len(x)))
    hessian[0, 0] = (p @ centred ** 2) / eta ** 3
    hessian[1:, 0] = hessian[0, 1:] = features.T @ (p * centred) / eta ** 2
    hessian[1:, 1:] = ((features * p[:, None]).T @ features - np.outer(fp, fp)) / eta
    if l2 > 0:
        value += l2 * (eta * eta + 1.0 / (eta * eta))
        gradient[0] += l2 * (2 * eta - 2 / eta ** 3)
        hessian[0, 0] += l2 * (2 + 6 / eta ** 4)
    return value, gradient, hessian


def dual_value(x, returns, features, epsilon, l2) -> float:
    z = (returns - features @ x[1:]) / x[0]
    top = z.max()
    value = x[0] * epsilon + x[0] * (math.log(np.exp(z - top).mean()) + top)
    return value + (l2 * (x[0] ** 2 + 1.0 / x[0] ** 2) if l2 > 0 else 0.0)


def newton_dual(returns, features, epsilon, l2, eta, v, max_iter) -> tuple:
    """The damped Newton steps of ``minimise_dual`` (same start, tests, line search), with the
    derivatives in numpy; ``(eta, v, dual, iterations)``."""
    x = np.concatenate([[eta], v])
    value = dual_value(x, returns, features, epsilon, l2)
    iterations = 0
    for _ in range(max_iter):
        iterations += 1
        _, gradient, hessian = dual_derivatives(x, returns, features, epsilon, l2)
        damping = 1e-12 * (float(np.abs(hessian.diagonal()).max()) or 1.0)
        while True:
            try:
                factor = np.linalg.cholesky(hessian + damping * np.eye(len(x)))
                break
            except np.linalg.LinAlgError:
                damping *= 10.0
        direction = -np.linalg.solve(factor.T, np.linalg.solve(factor, gradient))
        slope = float(gradient @ direction)
        if -slope < 1e-12 * max(1.0, abs(value)):
            break
        step, moved = 1.0, False
        for _ in range(60):
            candidate = x + step * direction
            if candidate[0] > 0:
                new = dual_value(candidate, returns, features, epsilon, l2)
                if math.isfinite(new) and new <= value + 1e-4 * step * slope:
                    x, value, moved = candidate, new, True
                    break
            step *= 0.5
        if not moved:
            break
    return float(x[0]), x[1:], value, iterations


def dual_work(returns, features, epsilon, l2, eta, v, newton: int, values: int) -> None:
    """The arithmetic of the run's dual minimisation, counted: ``newton`` damped Newton steps
    (the derivatives written out, the least damping that makes a Cholesky factor, the solve)
    and ``values`` evaluations of the dual (the start's and the line search's), all at the
    run's starting point (a step costs the same anywhere). ``newton_dual`` is the whole
    algorithm so written, tested against the run's; on CartPole's near-degenerate duals the two
    part ways in the last digits and then in their step counts, so the counts are the run's."""
    x = np.concatenate([[eta], v])
    eye = np.eye(len(x))
    for _ in range(newton):
        _, gradient, hessian = dual_derivatives(x, returns, features, epsilon, l2)
        damping = 1e-12 * (float(np.abs(hessian.diagonal()).max()) or 1.0)
        while True:
            try:
                factor = np.linalg.cholesky(hessian + damping * eye)
                break
            except np.linalg.LinAlgError:
                damping *= 10.0
        np.linalg.solve(factor.T, np.linalg.solve(factor, gradient))
    for _ in range(values):
        dual_value(x, returns, features, epsilon, l2)


def reps_learn(policy: REPSPolicy, duals: list, evaluations: list, seed: int):
    """Per update: the dual's minimisation on the run's returns and features, from the run's
    start; then as many forward and backward passes of the weighted log-likelihood as L-BFGS
    evaluated in the run, on the update's number of steps (L-BFGS's own arithmetic on the
    flat parameter vector, a few vector products, is left out)."""
    c, model = policy.config, copy.deepcopy(policy.model)
    if not duals:
        return None
    actor = model.flat_parameters()[0]
    generator = torch.Generator().manual_seed(seed)
    most = max(len(r) for r, *_ in duals)
    state = torch.randn(most, model.n_inputs, generator=generator)
    action = torch.randint(model.actor[-1].out_features, (most,), generator=generator) \
        if model.discrete else torch.randn(most, model.actor[-1].out_features,
                                           generator=generator)
    weights = torch.rand(most, generator=generator)
    problems = [(r, f, eta, np.zeros(f.shape[1]) if v is None or len(v) != f.shape[1] else v,
                 newton, values, evals)
                for (r, f, eta, v, newton, values), evals in zip(duals, evaluations, strict=True)]

    def go() -> None:
        for returns, features, eta, v, newton, values, evals in problems:
            dual_work(returns, features, c.epsilon, c.l2_reg_dual, eta, v, newton, values)
            n = len(returns)
            for _ in range(evals):
                actor.grad.zero_()
                log_prob, _ = model.log_prob_entropy(state[:n], action[:n], entropy=False)
                (-(weights[:n] * log_prob).mean()).backward()
    return timed(go, updates=len(problems), evaluations=sum(evaluations),
                 newton_steps=sum(p[4] for p in problems))
