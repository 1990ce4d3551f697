"""On-policy algorithms: PPO and A2C against Stable-Baselines3, TRPO against sb3-contrib, PPO
against a hand-written single-file PPO in CleanRL's style, all at RL-Zoo's CartPole-v1 settings.

For every seed the runs are interleaved (stagerl, then its peers). stagerl runs its named
experiments (``ppo-cartpole``, ``a2c-cartpole``, ``trpo-cartpole``), whose hyper-parameters are
RL-Zoo's; the peers get the same ones. Env-steps/s is over training alone; the return is the
mean of 20 deterministic episodes on a separate env (seed + 10,000), the same episodes for every
contender. Torch runs on one thread for every contender, stagerl and its peers alike, in this
one process (``ON_POLICY_BENCH_THREADS`` to change it): with these small networks one thread is
fastest, and on a shared two-core machine two threads stall whenever the other core is busy.

    python benchmarks/algorithms.py --only on_policy             # seeds 0 1 2
    ON_POLICY_BENCH_THREADS=2 python benchmarks/algorithms.py --only on_policy
"""

from __future__ import annotations

import dataclasses
import os
import statistics

import gymnasium as gym
import numpy as np
import torch
from common import median_ratio, print_table, timed
from torch import nn
from torch.distributions import Categorical

import stagerl as rl
import stagerl.experiments as experiments

EVAL_EPISODES = 20
EVAL_SEED_OFFSET = 10_000
PPO_STEPS, A2C_STEPS, TRPO_STEPS = 100_000, 100_000, 100_000


# ---- the contenders ---------------------------------------------------------------------------


def stagerl_run(name: str, seed: int, steps: int) -> tuple[float, float]:
    """(env-steps/s, evaluation return) of a stagerl named experiment."""
    experiment = experiments.get_experiment(name)
    config = dataclasses.replace(experiment.config(), steps=steps)
    env = experiment.make_env(config, seed)
    agent = experiment.make_agent(config, env, seed, torch.device("cpu"))
    _, seconds = timed(lambda: rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False)))
    returns = rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=seed + EVAL_SEED_OFFSET),
                          EVAL_EPISODES)
    return steps / seconds, statistics.fmean(returns)


def linear(value: float):
    return lambda progress_remaining: progress_remaining * value


def sb3_run(algorithm: str, seed: int, steps: int) -> tuple[float, float]:
    """(env-steps/s, evaluation return) of Stable-Baselines3 / sb3-contrib at RL-Zoo's
    settings (the ones stagerl's named experiments hold)."""
    from stable_baselines3 import A2C, PPO
    from stable_baselines3.common.env_util import make_vec_env

    if algorithm == "ppo":
        model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=8, seed=seed), n_steps=32,
                    batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0,
                    learning_rate=linear(1e-3), clip_range=linear(0.2), seed=seed,
                    device="cpu")
    elif algorithm == "a2c":
        model = A2C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=8, seed=seed),
                    ent_coef=0.0, seed=seed, device="cpu")
    else:
        from sb3_contrib import TRPO

        model = TRPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=seed), n_steps=512,
                     batch_size=512, cg_damping=1e-3, gae_lambda=0.98, gamma=0.99,
                     learning_rate=1e-3, n_critic_updates=20, seed=seed, device="cpu")
    _, seconds = timed(lambda: model.learn(steps))
    act = lambda obs: int(model.predict(obs, deterministic=True)[0])  # noqa: E731
    return steps / seconds, deterministic_return(act, seed)


def deterministic_return(act, seed: int) -> float:
    """The mean return of ``act`` over the evaluation episodes (the env seeded once, as
    ``rl.GymEnv`` does, so every contender meets the same episodes)."""
    env = gym.make("CartPole-v1")
    returns = []
    for episode in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=seed + EVAL_SEED_OFFSET if episode == 0 else None)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return statistics.fmean(returns)


def handwritten_ppo(seed: int, total_timesteps: int = PPO_STEPS, num_envs: int = 8,
                    num_steps: int = 32, batch_size: int = 256, update_epochs: int = 20,
                    gamma: float = 0.98, gae_lambda: float = 0.8, learning_rate: float = 1e-3,
                    clip_coef: float = 0.2, vf_coef: float = 0.5,
                    max_grad_norm: float = 0.5) -> tuple[float, float]:
    """A single-file PPO as CleanRL writes it (torch storage, ``Categorical`` to act, inline
    GAE and minibatch loop), doing the work stagerl does at these settings: SAME_STEP
    autoreset, a truncated episode's final observation bootstrapped (as Stable-Baselines3),
    linear learning-rate and clip schedules by the steps done after each rollout, SB3's value
    loss, no entropy term at ``ent_coef = 0``, the same fused Adam. Returns (env-steps/s,
    evaluation return)."""
    torch.manual_seed(seed)
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * num_envs,
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)

    def layer(n_in: int, n_out: int, std: float = np.sqrt(2)) -> nn.Linear:
        linear_layer = nn.Linear(n_in, n_out)
        nn.init.orthogonal_(linear_layer.weight, std)
        nn.init.constant_(linear_layer.bias, 0.0)
        return linear_layer

    critic = nn.Sequential(layer(4, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 1, 1.0))
    actor = nn.Sequential(layer(4, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 2, 0.01))
    params = [*actor.parameters(), *critic.parameters()]
    optimizer = torch.optim.Adam(params, lr=learning_rate, eps=1e-5, fused=True)
    obs = torch.zeros((num_steps, num_envs, 4))
    actions = torch.zeros((num_steps, num_envs), dtype=torch.long)
    logprobs, rewards, dones, values = (torch.zeros((num_steps, num_envs)) for _ in range(4))
    rollout = num_steps * num_envs
    rng = np.random.default_rng(seed)

    def train_loop() -> None:
        next_obs = torch.tensor(envs.reset(seed=seed)[0])
        global_step = 0
        for _ in range(total_timesteps // rollout):
            for step in range(num_steps):
                obs[step] = next_obs
                with torch.no_grad():
                    probs = Categorical(logits=actor(next_obs))
                    action = probs.sample()
                    logprobs[step], values[step] = probs.log_prob(action), critic(next_obs)[:, 0]
                actions[step] = action
                next_np, reward, terminated, truncated, info = envs.step(action.numpy())
                reward = torch.tensor(reward, dtype=torch.float32)
                cut = truncated & ~terminated
                if cut.any():  # a time limit: bootstrap the final observation's value
                    final = torch.tensor(np.stack(info["final_obs"][cut]), dtype=torch.float32)
                    with torch.no_grad():
                        reward[cut] += gamma * critic(final)[:, 0]
                rewards[step] = reward
                dones[step] = torch.tensor(terminated | truncated, dtype=torch.float32)
                next_obs = torch.tensor(next_np)
            global_step += rollout
            frac = 1.0 - global_step / total_timesteps
            optimizer.param_groups[0]["lr"] = frac * learning_rate
            clip = frac * clip_coef
            with torch.no_grad():
                next_value = critic(next_obs)[:, 0]
                advantages = torch.zeros_like(rewards)
                lastgaelam = 0.0
                for t in reversed(range(num_steps)):
                    following = next_value if t == num_steps - 1 else values[t + 1]
                    nonterminal = 1.0 - dones[t]
                    delta = rewards[t] + gamma * following * nonterminal - values[t]
                    lastgaelam = delta + gamma * gae_lambda * nonterminal * lastgaelam
                    advantages[t] = lastgaelam
                returns = advantages + values
            b_obs, b_actions, b_logprobs = obs.reshape(-1, 4), actions.reshape(-1), \
                logprobs.reshape(-1)
            b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
            for _ in range(update_epochs):
                b_inds = torch.as_tensor(rng.permutation(rollout))
                for start in range(0, rollout, batch_size):
                    mb = b_inds[start:start + batch_size]
                    newlogprob = torch.log_softmax(actor(b_obs[mb]), -1).gather(
                        1, b_actions[mb, None])[:, 0]
                    newvalue = critic(b_obs[mb])[:, 0]
                    ratio = (newlogprob - b_logprobs[mb]).exp()
                    mb_adv = b_advantages[mb]
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                    pg_loss = torch.max(-mb_adv * ratio,
                                        -mb_adv * torch.clamp(ratio, 1 - clip, 1 + clip)).mean()
                    v_loss = ((newvalue - b_returns[mb]) ** 2).mean()
                    loss = pg_loss + vf_coef * v_loss
                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(params, max_grad_norm)
                    optimizer.step()

    _, seconds = timed(train_loop)

    def act(observation: np.ndarray) -> int:
        with torch.no_grad():
            return int(actor(torch.as_tensor(observation)).argmax())

    steps = total_timesteps // rollout * rollout
    return steps / seconds, deterministic_return(act, seed)


# ---- the section ----------------------------------------------------------------------------


def main(seeds: list[int], quick: bool) -> int:
    before = torch.get_num_threads()
    torch.set_num_threads(int(os.environ.get("ON_POLICY_BENCH_THREADS", "1")))
    try:
        return _main(seeds, quick)
    finally:
        torch.set_num_threads(before)


def _main(seeds: list[int], quick: bool) -> int:
    ppo_steps, a2c_steps, trpo_steps = (4_096, 4_000, 4_096) if quick else \
        (PPO_STEPS, A2C_STEPS, TRPO_STEPS)
    keys = ("ppo", "ppo_sb3", "ppo_hand", "a2c", "a2c_sb3", "trpo", "trpo_sb3")
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in keys}
    for seed in seeds:
        runs["ppo"].append(stagerl_run("ppo-cartpole", seed, ppo_steps))
        runs["ppo_sb3"].append(sb3_run("ppo", seed, ppo_steps))
        runs["ppo_hand"].append(handwritten_ppo(seed, ppo_steps))
        runs["a2c"].append(stagerl_run("a2c-cartpole", seed, a2c_steps))
        runs["a2c_sb3"].append(sb3_run("a2c", seed, a2c_steps))
        runs["trpo"].append(stagerl_run("trpo-cartpole", seed, trpo_steps))
        runs["trpo_sb3"].append(sb3_run("trpo", seed, trpo_steps))
        print(f"  seed {seed}: " + ", ".join(
            f"{k} {v[-1][0]:,.0f} steps/s return {v[-1][1]:.1f}" for k, v in runs.items()),
            flush=True)

    def speed(key: str) -> list[float]:
        return [s for s, _ in runs[key]]

    def returns(key: str) -> str:
        return " ".join(f"{r:.0f}" for _, r in runs[key])

    ratios = {"ppo_sb3": median_ratio(speed("ppo"), speed("ppo_sb3")),
              "ppo_hand": median_ratio(speed("ppo"), speed("ppo_hand")),
              "a2c_sb3": median_ratio(speed("a2c"), speed("a2c_sb3")),
              "trpo_sb3": median_ratio(speed("trpo"), speed("trpo_sb3"))}
    rows = [
        ["PPO stagerl (ppo-cartpole)", ppo_steps, "ppo", None],
        ["PPO Stable-Baselines3", ppo_steps, "ppo_sb3", "ppo_sb3"],
        ["PPO hand-written, CleanRL style", ppo_steps, "ppo_hand", "ppo_hand"],
        ["A2C stagerl (a2c-cartpole)", a2c_steps, "a2c", None],
        ["A2C Stable-Baselines3", a2c_steps, "a2c_sb3", "a2c_sb3"],
        ["TRPO stagerl (trpo-cartpole)", trpo_steps, "trpo", None],
        ["TRPO sb3-contrib", trpo_steps, "trpo_sb3", "trpo_sb3"],
    ]
    title = (f"On-policy, CartPole-v1 at RL-Zoo's settings, seeds {seeds}, torch threads "
             f"{torch.get_num_threads()}{' (quick)' if quick else ''}: env-steps/s (median) "
             f"and evaluation returns ({EVAL_EPISODES} deterministic episodes per seed)")
    print_table(title, ["run", "steps", "env-steps/s", "stagerl / this", "returns per seed"],
                [[name, steps, statistics.median(speed(key)),
                  "" if peer is None else f"{ratios[peer]:.2f}x", returns(key)]
                 for name, steps, key, peer in rows])
    budgets = [("PPO >= 2x SB3", ratios["ppo_sb3"], 2.0),
               ("PPO >= 0.9x the hand-written loop", ratios["ppo_hand"], 0.9),
               ("A2C >= 2x SB3", ratios["a2c_sb3"], 2.0),
               ("TRPO >= 1.2x sb3-contrib", ratios["trpo_sb3"], 1.2)]
    print("budgets: " + "; ".join(f"{name}: {value:.2f}x ({'met' if value >= bar else 'NOT met'})"
                                  for name, value, bar in budgets))
    return 0
