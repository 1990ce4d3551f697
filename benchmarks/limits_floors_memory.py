"""The floors of policies with memory (recurrent PPO, DRQN) and of REPS for
``benchmarks/limits.py``, made by ``limits_floors_more.more_floors`` (see its docstring)."""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from limits_floors import act_floor, greedy_acts
from limits_floors_more import CPU, Floors, Part, generator_for, timed
from torch import nn
from torch.nn import functional as F

from stagerl.algorithms.adam_step import adam_step
from stagerl.algorithms.dqn.recurrent import DRQNPolicy
from stagerl.algorithms.on_policy import reps
from stagerl.algorithms.on_policy.erwr import ERWRPolicy
from stagerl.algorithms.on_policy.recurrent import RecurrentPPOPolicy
from stagerl.algorithms.on_policy.reps import REPSPolicy
from stagerl.algorithms.torch_state import denormals_flushed
from stagerl.utils.numpy_rnn import NumpyCopy, gru_step, lstm_step, mlp_forward

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
    generator = generator_for(seed)
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
        adam_step(optimiser)

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
    generator = generator_for(seed)
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
                adam_step(optimiser)
    return timed(go, gradient_steps=steps, windows=size, window=c.sequence_length)


# ---- REPS --------------------------------------------------------------------------------------


class REPSFloors(Floors):
    """Counts each update's dual problem (returns, features, start), the run's Newton steps and
    dual evaluations on it, and L-BFGS's evaluations of the policy fit."""

    def __init__(self, policy: REPSPolicy) -> None:
        self.policy, self.duals, self.evaluations = policy, [], []
        solve, optimiser = policy.solve_dual, policy.optimiser

        def solve_dual(returns, features):
            start = (self.policy.eta, None if self.policy.dual_v is None
                     else self.policy.dual_v.copy())
            counts = {"newton": 0, "values": 0}
            hessian, dual = reps.dual_gradient_and_hessian, reps.reps_dual

            def counting_hessian(*args, **kwargs):
                counts["newton"] += 1  # one gradient and Hessian a Newton step
                return hessian(*args, **kwargs)

            def counting_dual(*args, **kwargs):
                counts["values"] += 1
                return dual(*args, **kwargs)
            reps.dual_gradient_and_hessian, reps.reps_dual = counting_hessian, counting_dual
            try:
                return solve(returns, features)
            finally:
                reps.dual_gradient_and_hessian, reps.reps_dual = hessian, dual
                # a Newton step evaluates the dual once (for its derivatives); the rest are
                # the start's value and the line search's
                self.duals.append((returns.copy(), features.copy(), *start, counts["newton"],
                                   counts["values"] - counts["newton"]))

        policy.solve_dual = solve_dual  # the counted run's only
        count_lbfgs_evaluations(optimiser, self.evaluations)

    def parts(self, acts: int, num_envs: int, seed: int) -> dict[str, Part]:
        return {"act": lambda: actor_critic_act(self.policy, acts, num_envs, seed),
                "learn": lambda: reps_learn(self.policy, self.duals, self.evaluations, seed)}


def count_lbfgs_evaluations(optimiser, evaluations: list) -> None:
    """After each of ``optimiser``'s (an L-BFGS's) steps, append its evaluations of the loss."""
    run_step = optimiser.step

    def step(closure):
        out = run_step(closure)
        evaluations.append(int(optimiser.state[optimiser._params[0]]["func_evals"]))
        return out
    optimiser.step = step


def actor_critic_act(policy, acts: int, num_envs: int, seed: int):
    """The acting part: limits_floors' numpy copy of the actor-critic."""
    return act_floor(policy, round(greedy_acts(policy, acts, num_envs)), num_envs,
                     policy.model.n_inputs, seed)


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
    generator = generator_for(seed)
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


# ---- ERWR --------------------------------------------------------------------------------------


class ERWRFloors(Floors):
    """Counts each update's steps and L-BFGS's evaluations of the weighted log-likelihood (an
    ERWR update is an L-BFGS fit of the actor, then the baseline's fit)."""

    def __init__(self, policy: ERWRPolicy) -> None:
        self.policy, self.sizes, self.evaluations = policy, [], []
        run_update = policy.update

        def update(batch):
            self.sizes.append(len(batch["advantage"]))
            return run_update(batch)
        policy.update = update  # the counted run's only
        count_lbfgs_evaluations(policy.optimiser, self.evaluations)

    def parts(self, acts: int, num_envs: int, seed: int) -> dict[str, Part]:
        return {"act": lambda: actor_critic_act(self.policy, acts, num_envs, seed),
                "learn": lambda: erwr_learn(self.policy, self.sizes, self.evaluations, seed)}


def erwr_learn(policy: ERWRPolicy, sizes: list, evaluations: list, seed: int):
    """Per update: as many forward and backward passes of the weighted log-likelihood as L-BFGS
    evaluated in the run, on the update's number of steps (L-BFGS's own vector arithmetic left
    out), then the linear baseline's ridge solve on features of its shape; a network baseline's
    steps are VPG's (``limits_floors.on_policy_floor``), not counted here."""
    model = copy.deepcopy(policy.model)
    if not sizes:
        return None
    actor = model.flat_parameters()[0]
    generator = generator_for(seed)
    most = max(sizes)
    state = torch.randn(most, model.n_inputs, generator=generator)
    action = torch.randint(model.actor[-1].out_features, (most,), generator=generator) \
        if model.discrete else torch.randn(most, model.actor[-1].out_features,
                                           generator=generator)
    weights = torch.rand(most, generator=generator)
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((most, 2 * model.n_inputs + 4))  # rllab's: s, s², t, t², t³, 1
    returns = rng.standard_normal(most)
    problems = list(zip(sizes, evaluations, strict=True))

    def go() -> None:
        for n, evals in problems:
            for _ in range(evals):
                actor.grad.zero_()
                log_prob, _ = model.log_prob_entropy(state[:n], action[:n], entropy=False)
                (-(weights[:n] * log_prob).mean()).backward()
            f = features[:n]
            np.linalg.lstsq(f.T @ f + 1e-5 * np.eye(f.shape[1]), f.T @ returns[:n], rcond=-1)
    return timed(go, updates=len(problems), evaluations=sum(evaluations))
