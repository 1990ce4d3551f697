"""The floor's three parts for ``benchmarks/limits.py``: the raw env loop, the acting forward
passes through a numpy copy of the network, and the run's gradient steps on random data in memory,
each the cheapest way a hand-written loop could do them (see that script's docstring)."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import gymnasium
import numpy as np
import torch
from torch import nn

import stagerl as rl
from stagerl.algorithms.adam_step import adam_step
from stagerl.algorithms.dqn import DQNPolicy
from stagerl.algorithms.dqn.networks import NumpyQNetwork
from stagerl.algorithms.off_policy import SACPolicy, TD3Policy
from stagerl.algorithms.on_policy import A2CPolicy, PPOPolicy, TRPOPolicy, VPGPolicy
from stagerl.algorithms.torch_state import denormals_flushed

CPU = torch.device("cpu")


# ---- the floor: env --------------------------------------------------------------------------


def env_floor(prepared, acts: int, seed: int) -> Callable[[], None]:
    """The raw env loop: gymnasium's env (or vector env, same autoreset), else the env's own
    ``act``/``reset``, stepped ``acts`` times with actions drawn beforehand."""
    env = prepared.experiment.make_env(prepared.config, seed)
    raw = getattr(env, "env", None)
    if isinstance(raw, gymnasium.vector.VectorEnv):
        raw.action_space.seed(seed)
        actions = [raw.action_space.sample() for _ in range(acts)]

        def go() -> None:
            raw.reset(seed=seed)
            for action in actions:  # the sub-envs reset themselves
                raw.step(action)
        return go
    if isinstance(raw, gymnasium.Env):
        raw.action_space.seed(seed)
        discrete = isinstance(raw.action_space, gymnasium.spaces.Discrete)
        actions = [int(a) if discrete else a for a in
                   (raw.action_space.sample() for _ in range(acts))]
        step, reset = raw.step, raw.reset

        def go() -> None:
            reset(seed=seed)
            for action in actions:
                _, _, terminated, truncated, _ = step(action)
                if terminated or truncated:
                    reset()
        return go
    rng = np.random.default_rng(seed)
    actions = rng.integers(int(env.action_space.n), size=acts).tolist()

    def go() -> None:
        env.reset()
        for action in actions:
            env.act(action)
            if env.is_terminated or env.is_truncated:
                env.reset()
    return go


# ---- the floor: acting -----------------------------------------------------------------------


def numpy_mlp(net: nn.Sequential) -> Callable[[np.ndarray], np.ndarray]:
    """``net``'s forward pass in numpy (Linear layers and ReLU/Tanh)."""
    layers = []
    for module in (m for m in net.modules() if not list(m.children())):
        if isinstance(module, nn.Linear):
            layers.append([np.ascontiguousarray(module.weight.detach().cpu().numpy().T),
                           module.bias.detach().cpu().numpy().copy(), None])
        elif isinstance(module, nn.ReLU | nn.Tanh):
            layers[-1][2] = "relu" if isinstance(module, nn.ReLU) else "tanh"
        elif not isinstance(module, nn.Identity | nn.Flatten):
            raise TypeError(f"no numpy copy of {module}")

    def forward(x: np.ndarray) -> np.ndarray:
        for weight, bias, activation in layers:
            x = x @ weight
            x += bias
            if activation == "relu":
                np.maximum(x, 0.0, out=x)
            elif activation == "tanh":
                np.tanh(x, out=x)
        return x
    return forward


def act_floor(policy, forwards: int, batch: int, state_dim: int, seed: int):
    """``forwards`` acting passes at batch ``batch`` through a numpy copy of the acting network,
    with the draw the action needs."""
    rng = np.random.default_rng(seed)
    states = rng.standard_normal((batch, state_dim)).astype(np.float32)
    if isinstance(policy, DQNPolicy):
        q = NumpyQNetwork.of(copy.deepcopy(policy.network))

        def one() -> None:
            q.q_values(states, single=False).argmax(axis=1)
    elif isinstance(policy, SACPolicy):
        actor = numpy_mlp(policy.actor.net)

        def one() -> None:
            mean, log_std = np.split(actor(states), 2, axis=1)
            np.tanh(mean + np.exp(np.clip(log_std, -20, 2)) * rng.standard_normal(mean.shape))
    elif isinstance(policy, TD3Policy):
        actor, noise = numpy_mlp(policy.actor), policy.config.action_noise

        def one() -> None:
            out = actor(states)
            np.clip(out + noise * rng.standard_normal(out.shape), -1.0, 1.0)
    elif hasattr(policy, "model") and hasattr(policy.model, "forward_mlp"):
        actor, critic = numpy_mlp(policy.model.actor), numpy_mlp(policy.model.critic)

        def one() -> None:
            out, _ = actor(states), critic(states)
            if policy.model.discrete:  # inverse-CDF draw, as the policy samples
                p = np.exp(out - out.max(axis=1, keepdims=True))
                cdf = np.cumsum(p, axis=1)
                (cdf < rng.random((batch, 1)) * cdf[:, -1:]).sum(axis=1)
            else:
                out + rng.standard_normal(out.shape).astype(np.float32)
    else:  # a table: one row's argmax per act
        table = rng.standard_normal((16, 2))

        def one() -> None:
            table[3].argmax()

    def go() -> None:
        for _ in range(forwards):
            one()
    return go


def greedy_acts(policy, acts: int, num_envs: int) -> float:
    """The expected number of acts whose action needs the network: after the warm-up; for
    epsilon-greedy ones, those where some sub-env acts greedily."""
    config = getattr(policy, "config", None)
    warm = math.ceil(getattr(config, "learning_starts", 0) / num_envs)
    learning = max(0, acts - warm)
    if not isinstance(policy, DQNPolicy):
        return float(learning) if config is not None else float(acts)
    explorer = policy.explorer
    epsilon = np.array([explorer.epsilon_at(t) for t in range(warm, acts)])
    return float((1.0 - epsilon ** num_envs).sum())


# ---- the floor: learning ---------------------------------------------------------------------


def gradient_step(params: list, loss: torch.Tensor, optimiser, max_grad_norm) -> None:
    """A DQN floor's step: gradients set to None, backward, the norm clipped in two foreach
    calls (as the run's clip), fused Adam's kernel called directly."""
    for p in params:
        p.grad = None
    loss.backward()
    if max_grad_norm is not None and max_grad_norm < math.inf:
        grads = [p.grad for p in params]
        norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
        torch._foreach_mul_(grads, (max_grad_norm / (norm + 1e-6)).clamp_(max=1))
    adam_step(optimiser)


def optimiser_steps(optimiser: torch.optim.Optimizer) -> int:
    states = [s for s in optimiser.state.values() if "step" in s]
    return int(max(float(s["step"]) for s in states)) if states else 0


def learn_floor(policy, state_dim: int, acts: int, seed: int) -> Callable[[], None] | None:
    """The learning ``policy`` did in its run of ``acts`` acts, on random data; ``None`` for a
    policy the floor does not know."""
    torch.manual_seed(seed)
    for kind, floor in FLOORS:
        if isinstance(policy, kind):
            return floor(policy, state_dim, acts)
    return None


def dqn_floor(policy: DQNPolicy, state_dim: int, acts: int):
    c, net = policy.config, copy.deepcopy(policy.network)
    target = copy.deepcopy(policy.target) if policy.target is not None else net
    steps = optimiser_steps(policy.q.optimiser)
    per_burst = c.train_freq if c.gradient_steps == -1 else c.gradient_steps
    bursts, size = steps // per_burst, c.batch_size
    rows = per_burst * size
    optimiser = torch.optim.Adam(net.parameters(), lr=c.learning_rate, eps=c.adam_eps, fused=True)
    params = list(net.parameters())
    state, next_state = torch.randn(rows, state_dim), torch.randn(rows, state_dim)
    action = torch.randint(net.n_actions, (rows, 1))
    reward, weight = torch.randn(rows), torch.ones(rows) if c.prioritized else None
    bootstrap = (c.gamma ** c.n_step) * (torch.rand(rows) > 0.01).float()
    syncs = min(bursts, steps and policy.env_steps // c.target_update_interval)

    def targets_of(next_out: torch.Tensor, online_next: torch.Tensor, r, b) -> torch.Tensor:
        pick = (online_next if c.double else net.values_of(next_out)).argmax(1, keepdim=True)
        if not net.distributional:
            return r + b * next_out.gather(1, pick).squeeze(1)
        probs = next_out.gather(1, pick[..., None].expand(-1, -1, net.n_atoms)).squeeze(1)
        support = net.support
        shifted = (r[:, None] + b[:, None] * support).clamp(c.v_min, c.v_max)
        position = (shifted - c.v_min) / ((c.v_max - c.v_min) / (net.n_atoms - 1))
        lower, upper = position.floor(), position.ceil()
        probs = probs.softmax(-1)
        out = torch.zeros_like(probs)
        out.scatter_add_(1, lower.long(), probs * (upper - position + (lower == upper)))
        out.scatter_add_(1, upper.long(), probs * (position - lower))
        return out

    def go() -> None:
        with denormals_flushed(CPU):
            for burst in range(bursts):
                if burst < syncs:
                    torch._foreach_copy_(list(target.parameters()), params)
                if not c.prioritized:
                    with torch.no_grad():  # the target is fixed inside a burst: one pass
                        next_out = torch.cat([target(part) for part in next_state.split(1024)])
                        fixed = None if c.double else targets_of(next_out, None, reward,
                                                                 bootstrap)
                for i in range(per_burst):
                    rows_i = slice(i * size, (i + 1) * size)
                    if c.prioritized:  # each batch is drawn after the last one's priorities
                        with torch.no_grad():  # are written: its target pass is its own
                            goal = targets_of(target(next_state[rows_i]),
                                              net.q_values(next_state[rows_i]) if c.double
                                              else None, reward[rows_i], bootstrap[rows_i])
                    elif fixed is None:
                        with torch.no_grad():
                            goal = targets_of(next_out[rows_i], net.q_values(next_state[rows_i]),
                                              reward[rows_i], bootstrap[rows_i])
                    else:
                        goal = fixed[rows_i]
                    out, a = net(state[rows_i]), action[rows_i]
                    if net.distributional:
                        logp = out.gather(1, a[..., None].expand(-1, -1, net.n_atoms))
                        losses = -(goal * logp.squeeze(1).log_softmax(-1)).sum(-1)
                    else:
                        losses = nn.functional.smooth_l1_loss(out.gather(1, a).squeeze(1), goal,
                                                              reduction="none")
                    loss = losses.mean() if weight is None else (weight[rows_i] * losses).mean()
                    if c.prioritized:  # the errors that become the next priorities
                        losses.detach().abs()
                    gradient_step(params, loss, optimiser, c.max_grad_norm)
    go.optimiser = optimiser  # for the tests: its step count is the run's
    return go


def replay_floor(policy, state_dim: int, acts: int):
    """SAC's or TD3's gradient steps (``n_updates``) on one random batch in memory."""
    c, sac = policy.config, isinstance(policy, SACPolicy)
    actor, critic = copy.deepcopy(policy.actor), copy.deepcopy(policy.critic)
    critic_target = copy.deepcopy(policy.critic_target)
    actor_target = None if sac else copy.deepcopy(policy.actor_target)
    log_alpha = policy.log_ent_coef.detach().clone().requires_grad_(policy.learns_ent_coef) \
        if sac else None
    params = [*actor.parameters(), *critic.parameters()] + (
        [log_alpha] if sac and policy.learns_ent_coef else [])
    optimiser = torch.optim.Adam(params, lr=c.learning_rate, fused=True)
    n = c.batch_size
    generator = torch.Generator(device=torch.get_default_device()).manual_seed(0)
    dim = policy.action_shape[0]
    state, next_state = torch.randn(n, state_dim), torch.randn(n, state_dim)
    action, reward = torch.rand(n, dim) * 2 - 1, torch.randn(n)
    live = (torch.rand(n) > 0.01).float() * c.gamma
    critic_params, target_params = list(critic.parameters()), list(critic_target.parameters())

    def sample(states):
        mean, log_std = actor(states)
        pre = mean + log_std.exp() * torch.randn(mean.shape, generator=generator,
                                                   device=mean.device)
        log_prob = (-0.5 * ((pre - mean) / log_std.exp()) ** 2 - log_std
                    - 0.5 * math.log(2 * math.pi)).sum(-1)
        return torch.tanh(pre), log_prob - (2 * (math.log(2) - pre - nn.functional.softplus(
            -2 * pre))).sum(-1)

    def sac_step() -> None:
        alpha = log_alpha.detach().exp()
        with torch.no_grad():
            next_action, next_log_prob = sample(next_state)
            next_q = critic_target(next_state, next_action).min(0).values
            goal = reward + live * (next_q - alpha * next_log_prob)
        loss = 0.5 * (critic(state, action) - goal).pow(2).mean(1).sum()
        new_action, log_prob = sample(state)
        for p in critic_params:
            p.requires_grad_(False)
        loss = loss + (alpha * log_prob - critic(state, new_action).min(0).values).mean()
        for p in critic_params:
            p.requires_grad_(True)
        if policy.learns_ent_coef:
            loss = loss - (log_alpha * (log_prob.detach() + policy.target_entropy)).mean()
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        adam_step(optimiser)
        torch._foreach_lerp_(target_params, critic_params, c.tau)

    def td3_step(delayed: bool) -> None:
        with torch.no_grad():
            next_action = actor_target(next_state)
            if c.target_policy_noise > 0 and c.target_noise_clip > 0:
                noise = (torch.randn(next_action.shape, generator=generator,
                                     device=next_action.device)
                         * c.target_policy_noise).clamp(-c.target_noise_clip, c.target_noise_clip)
                next_action = (next_action + noise).clamp(-1.0, 1.0)
            goal = reward + live * critic_target(next_state, next_action).min(0).values
        loss = (critic(state, action) - goal).pow(2).mean(1).sum()
        if delayed:
            for p in critic_params:
                p.requires_grad_(False)
            loss = loss - critic.first(state, actor(state)).mean()
            for p in critic_params:
                p.requires_grad_(True)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        adam_step(optimiser)
        if delayed:
            torch._foreach_lerp_(target_params, critic_params, c.tau)
            torch._foreach_lerp_(list(actor_target.parameters()), list(actor.parameters()), c.tau)

    # The counts are the run's, read now: the policy may take more steps after the floor is
    # built. TD3's n_updates counts critic steps; every policy_delay-th is also the actor's.
    updates = policy.n_updates

    def go() -> None:
        with denormals_flushed(CPU):
            for i in range(updates):
                sac_step() if sac else td3_step((i + 1) % c.policy_delay == 0)
    go.optimiser = optimiser  # for the tests: its step counts are the run's
    return go


def on_policy_floor(policy, state_dim: int, acts: int):
    """The rollouts' gradient steps (``n_updates`` rollouts of the run's mean size)."""
    c, model = policy.config, copy.deepcopy(policy.model)
    rollouts = policy.n_updates
    n = max(1, round(policy.env_steps / rollouts)) if rollouts else 1
    actor_flat, critic_flat = model.flat_parameters()
    state, advantage, ret = torch.randn(n, state_dim), torch.randn(n), torch.randn(n)
    if model.discrete:
        action = torch.randint(model.actor[-1].out_features, (n,))
    else:
        action = torch.randn(n, model.actor[-1].out_features)
    with torch.no_grad():
        old_log_prob = model.log_prob_entropy(state, action, False)[0] + 0.01 * torch.randn(n)
    if isinstance(policy, A2CPolicy) and c.use_rms_prop:
        optimiser = torch.optim.RMSprop([actor_flat, critic_flat], lr=c.learning_rate,
                                        alpha=0.99, eps=c.rms_prop_eps, foreach=True)
    else:
        both = isinstance(policy, PPOPolicy | A2CPolicy)
        optimiser = torch.optim.Adam([actor_flat, critic_flat] if both else [actor_flat],
                                     lr=c.learning_rate, fused=True)
    value_optimiser = torch.optim.Adam([critic_flat], lr=c.learning_rate, fused=True)
    clip = getattr(c, "max_grad_norm", None)

    def step(opt, loss, flats) -> None:
        opt.zero_grad(set_to_none=False)
        loss.backward()
        if clip is not None and clip < math.inf:
            nn.utils.clip_grad_norm_(flats, clip, foreach=True)
        adam_step(opt)

    def normalised(a):
        return (a - a.mean()) / (a.std() + 1e-8)

    def ppo(rows) -> torch.Tensor:
        log_prob, _ = model.log_prob_entropy(state[rows], action[rows], c.ent_coef > 0)
        a = normalised(advantage[rows]) if c.normalize_advantage else advantage[rows]
        ratio = torch.exp(log_prob - old_log_prob[rows])
        surrogate = torch.min(a * ratio, a * ratio.clamp(1 - c.clip_range, 1 + c.clip_range))
        value_loss = nn.functional.mse_loss(model.value(state[rows]), ret[rows])
        return -surrogate.mean() + c.vf_coef * value_loss

    def trpo() -> None:
        params, _ = model.parameter_groups()
        a = normalised(advantage)
        with torch.no_grad():
            old = tuple(t.detach() for t in model.distribution(state))

        def objective():
            return (torch.exp(model.log_prob_entropy(state, action, False)[0]
                              - old_log_prob) * a).mean()
        gradient = torch.cat([g.reshape(-1) for g in torch.autograd.grad(objective(), params)])
        grad_kl = torch.cat([g.reshape(-1) for g in torch.autograd.grad(
            model.kl_from(old, state).mean(), params, create_graph=True)])

        def fvp(v):
            hv = torch.autograd.grad(grad_kl @ v, params, retain_graph=True)
            return torch.cat([h.reshape(-1) for h in hv]) + c.cg_damping * v
        x, r = torch.zeros_like(gradient), gradient.clone()
        p, rr = r.clone(), r @ r
        for _ in range(c.cg_max_steps):
            fp = fvp(p)
            alpha = rr / (p @ fp)
            x += alpha * p
            r -= alpha * fp
            new_rr = r @ r
            p, rr = r + new_rr / rr * p, new_rr
        step_size = torch.sqrt(2 * c.target_kl / (x @ fvp(x)).clamp(min=1e-12))
        with torch.no_grad():  # one line-search evaluation: the step is kept
            actor_flat.add_(step_size * x)
            model.kl_from(old, state).mean(), objective()

    def go() -> None:
        for _ in range(rollouts):
            if isinstance(policy, PPOPolicy):
                for _ in range(c.n_epochs):
                    for start in range(0, n, c.batch_size):
                        rows = slice(start, start + c.batch_size)
                        step(optimiser, ppo(rows), [actor_flat, critic_flat])
            elif isinstance(policy, A2CPolicy):
                log_prob, _ = model.log_prob_entropy(state, action, False)
                loss = -(advantage * log_prob).mean() + c.vf_coef * nn.functional.mse_loss(
                    model.value(state), ret)
                step(optimiser, loss, [actor_flat, critic_flat])
            elif isinstance(policy, TRPOPolicy):
                trpo()
                for _ in range(c.n_critic_updates):
                    for start in range(0, n, c.batch_size):
                        rows = slice(start, start + c.batch_size)
                        step(value_optimiser, nn.functional.mse_loss(
                            model.value(state[rows]), ret[rows]), [critic_flat])
            else:  # VPG: one actor step, value_epochs critic steps
                log_prob, _ = model.log_prob_entropy(state, action, False)
                step(optimiser, -(normalised(advantage) * log_prob).mean(), [actor_flat])
                for _ in range(c.value_epochs):
                    step(value_optimiser, nn.functional.mse_loss(model.value(state), ret),
                         [critic_flat])
    return go


def table_floor(policy, state_dim: int, acts: int):
    """Tabular TD learning: one update of one entry per act."""
    table, rng = np.zeros((16, 2)), np.random.default_rng(0)
    transitions = rng.integers(0, 16, (acts, 2)).tolist()

    def go() -> None:
        for s, s2 in transitions:
            table[s, 0] += 0.5 * (1.0 + 0.9 * table[s2].max() - table[s, 0])
    return go


FLOORS: tuple = ((DQNPolicy, dqn_floor), (SACPolicy | TD3Policy, replay_floor),
                 (PPOPolicy | A2CPolicy | TRPOPolicy | VPGPolicy, on_policy_floor),
                 (rl.QBasedPolicy, table_floor))
