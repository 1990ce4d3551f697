"""DQN: stagerl against Stable-Baselines3 at RL-Zoo's CartPole-v1 settings, and against a
hand-written single-file DQN in CleanRL's style at CleanRL's settings.

For every seed the runs are interleaved (stagerl, SB3, stagerl, hand-written). Each trains for
the same env steps with the same hyper-parameters; env-steps/s is over training alone, per
second of wall-clock time and per second of the process's CPU time (on a machine that other work
shares, CPU time is the steadier measure: wall-clock figures move with the load from one run to
the next); the return is the mean of 20 deterministic (greedy) episodes on a separate env
(seed + 10,000), the same episodes for every contender.

    python benchmarks/algorithms.py --only dqn             # seeds 0 1 2
    DQN_BENCH_THREADS=2 python benchmarks/algorithms.py --only dqn   # torch on two threads

Torch runs on one thread for every contender unless ``DQN_BENCH_THREADS`` says otherwise: these
networks learn fastest on one, and on a busy 2-core machine two threads can be ten times slower.
"""

from __future__ import annotations

import os
import statistics
import time

import gymnasium as gym
import numpy as np
import torch
from common import median_ratio, print_table
from torch import nn

import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent

EVAL_EPISODES = 20
EVAL_SEED_OFFSET = 10_000

# RL-Zoo's dqn.yml, CartPole-v1 (Stable-Baselines3's names; the rest at SB3's defaults).
RL_ZOO = dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1_000,
              gamma=0.99, target_update_interval=10, train_freq=256, gradient_steps=128,
              exploration_fraction=0.16, exploration_final_eps=0.04)
RL_ZOO_NET = (256, 256)
RL_ZOO_STEPS = 50_000

# CleanRL's dqn.py settings (its 500k steps cut to 50k): MSE loss, no gradient clipping.
CLEANRL = dict(learning_rate=2.5e-4, buffer_size=10_000, gamma=0.99, target_update_interval=500,
               batch_size=128, exploration_initial_eps=1.0, exploration_final_eps=0.05,
               exploration_fraction=0.5, learning_starts=10_000, train_freq=10, gradient_steps=1)
CLEANRL_NET = (120, 84)
CLEANRL_STEPS = 50_000


# ---- the contenders -------------------------------------------------------------------------


def timed(run) -> tuple[float, float]:
    """Seconds of wall-clock time and of the process's CPU time that ``run()`` took."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def stagerl_dqn(config: DQNConfig, seed: int, steps: int) -> tuple[float, float, float]:
    """(env-steps per wall-clock second, per CPU second, evaluation return) of stagerl's DQN."""
    env = rl.GymEnv("CartPole-v1", seed=seed)
    agent = make_dqn_agent(env, config, seed=seed, device="cpu")
    wall, cpu = timed(lambda: rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False)))
    returns = rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=seed + EVAL_SEED_OFFSET),
                          EVAL_EPISODES)
    return steps / wall, steps / cpu, statistics.fmean(returns)


def sb3_dqn(seed: int, steps: int, settings: dict) -> tuple[float, float, float]:
    """(env-steps per wall-clock second, per CPU second, evaluation return) of
    Stable-Baselines3's DQN."""
    from stable_baselines3 import DQN

    model = DQN("MlpPolicy", "CartPole-v1", policy_kwargs=dict(net_arch=list(RL_ZOO_NET)),
                seed=seed, device="cpu", verbose=0, **settings)
    wall, cpu = timed(lambda: model.learn(steps))
    act = lambda obs: int(model.predict(obs, deterministic=True)[0])  # noqa: E731
    return steps / wall, steps / cpu, greedy_return(act, seed)


def greedy_return(act, seed: int) -> float:
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


def handwritten_dqn(seed: int, total_timesteps: int = CLEANRL_STEPS,
                    learning_rate: float = 2.5e-4, buffer_size: int = 10_000,
                    gamma: float = 0.99, target_update_interval: int = 500,
                    batch_size: int = 128, exploration_initial_eps: float = 1.0,
                    exploration_final_eps: float = 0.05, exploration_fraction: float = 0.5,
                    learning_starts: int = 10_000, train_freq: int = 10,
                    gradient_steps: int = 1) -> tuple[float, float, float]:
    """A single-file DQN as CleanRL writes it (a numpy ring, a torch forward per greedy act,
    MSE loss, plain Adam), doing the work stagerl does at these settings: uniform actions
    before ``learning_starts``, the ε schedule over ``exploration_fraction`` of the run,
    training every ``train_freq`` steps after it, a hard target copy every
    ``target_update_interval`` steps (before that step's training). Returns (env-steps per
    wall-clock second, per CPU second, evaluation return)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    env = gym.make("CartPole-v1")
    n_obs, n_actions = env.observation_space.shape[0], int(env.action_space.n)

    def q_net() -> nn.Module:
        return nn.Sequential(nn.Linear(n_obs, CLEANRL_NET[0]), nn.ReLU(),
                             nn.Linear(CLEANRL_NET[0], CLEANRL_NET[1]), nn.ReLU(),
                             nn.Linear(CLEANRL_NET[1], n_actions))

    q_network, target_network = q_net(), q_net()
    target_network.load_state_dict(q_network.state_dict())
    optimizer = torch.optim.Adam(q_network.parameters(), lr=learning_rate)
    obs_buf = np.zeros((buffer_size, n_obs), np.float32)
    next_obs_buf = np.zeros((buffer_size, n_obs), np.float32)
    actions_buf = np.zeros(buffer_size, np.int64)
    rewards_buf = np.zeros(buffer_size, np.float32)
    dones_buf = np.zeros(buffer_size, np.float32)
    size = position = 0
    decay = np.ceil(exploration_fraction * total_timesteps)

    def train() -> None:
        idx = rng.integers(0, size, batch_size)
        obs, next_obs = torch.from_numpy(obs_buf[idx]), torch.from_numpy(next_obs_buf[idx])
        with torch.no_grad():
            target_max = target_network(next_obs).max(dim=1).values
            td_target = torch.from_numpy(rewards_buf[idx]) + gamma * target_max * (
                1 - torch.from_numpy(dones_buf[idx]))
        old_val = q_network(obs).gather(1, torch.from_numpy(actions_buf[idx])[:, None]).squeeze()
        loss = nn.functional.mse_loss(td_target, old_val)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    def train_loop() -> None:
        nonlocal size, position
        obs, _ = env.reset(seed=seed)
        for step in range(1, total_timesteps + 1):
            epsilon = max(exploration_final_eps, exploration_initial_eps - step / decay * (
                exploration_initial_eps - exploration_final_eps))
            if step - 1 < learning_starts or rng.random() < epsilon:
                action = int(rng.integers(n_actions))
            else:
                with torch.no_grad():
                    action = int(q_network(torch.from_numpy(obs)).argmax())
            next_obs, reward, terminated, truncated, _ = env.step(action)
            obs_buf[position], next_obs_buf[position] = obs, next_obs
            actions_buf[position], rewards_buf[position] = action, reward
            dones_buf[position] = terminated  # a truncated episode's last step bootstraps
            position, size = (position + 1) % buffer_size, min(size + 1, buffer_size)
            obs = env.reset()[0] if terminated or truncated else next_obs
            if step % target_update_interval == 0:
                target_network.load_state_dict(q_network.state_dict())
            if step > learning_starts and step % train_freq == 0:
                for _ in range(gradient_steps):
                    train()

    wall, cpu = timed(train_loop)

    def act(obs: np.ndarray) -> int:
        with torch.no_grad():
            return int(q_network(torch.from_numpy(obs)).argmax())

    return total_timesteps / wall, total_timesteps / cpu, greedy_return(act, seed)


# ---- the section ----------------------------------------------------------------------------


def main(seeds: list[int], quick: bool) -> int:
    torch.set_num_threads(int(os.environ.get("DQN_BENCH_THREADS", "1")))
    zoo_steps, clean_steps = (3_000, 12_000) if quick else (RL_ZOO_STEPS, CLEANRL_STEPS)
    zoo = DQNConfig(**RL_ZOO, net_arch=RL_ZOO_NET, total_steps=zoo_steps)
    clean = DQNConfig(**CLEANRL, net_arch=CLEANRL_NET, max_grad_norm=None, loss="mse",
                      total_steps=clean_steps)
    runs: dict[str, list[tuple[float, float, float]]] = {
        k: [] for k in ("ours", "sb3", "ours_c", "hand")}
    for seed in seeds:
        runs["ours"].append(stagerl_dqn(zoo, seed, zoo_steps))
        runs["sb3"].append(sb3_dqn(seed, zoo_steps, RL_ZOO))
        runs["ours_c"].append(stagerl_dqn(clean, seed, clean_steps))
        runs["hand"].append(handwritten_dqn(seed, clean_steps, **CLEANRL))
        print(f"  seed {seed}: " + ", ".join(
            f"{k} {v[-1][0]:,.0f} steps/s ({v[-1][1]:,.0f} per CPU-s) return {v[-1][2]:.1f}"
            for k, v in runs.items()), flush=True)

    def column(key: str, i: int) -> list[float]:
        return [run[i] for run in runs[key]]

    def returns(key: str) -> str:
        return " ".join(f"{r:.0f}" for r in column(key, 2))

    title = (f"DQN on CartPole-v1, seeds {seeds}, torch threads {torch.get_num_threads()}"
             f"{' (quick)' if quick else ''}: env-steps/s (medians; ratios: medians of per-seed "
             f"ratios) and evaluation returns ({EVAL_EPISODES} greedy episodes per seed)")
    rows = []
    for ours, peer, name, peer_name, steps in (
            ("ours", "sb3", "stagerl, RL-Zoo settings", "Stable-Baselines3, RL-Zoo settings",
             zoo_steps),
            ("ours_c", "hand", "stagerl, CleanRL settings", "hand-written loop, CleanRL settings",
             clean_steps)):
        wall_ratio = median_ratio(column(ours, 0), column(peer, 0))
        cpu_ratio = median_ratio(column(ours, 1), column(peer, 1))
        rows.append([name, steps, statistics.median(column(ours, 0)), wall_ratio,
                     statistics.median(column(ours, 1)), cpu_ratio, returns(ours)])
        rows.append([peer_name, steps, statistics.median(column(peer, 0)), 1.0,
                     statistics.median(column(peer, 1)), 1.0, returns(peer)])
    print_table(title, ["run", "steps", "steps/s", "ratio", "steps/CPU-s", "ratio",
                        "returns per seed"], rows)
    zoo_ratio, clean_ratio = rows[0][5], rows[2][5]
    print(f"budgets (CPU-time ratios): >= 1.5x SB3: {zoo_ratio:.2f}x "
          f"({'met' if zoo_ratio >= 1.5 else 'NOT met'}); >= 0.9x the hand-written loop: "
          f"{clean_ratio:.2f}x ({'met' if clean_ratio >= 0.9 else 'NOT met'}); wall-clock "
          f"ratios {rows[0][3]:.2f}x and {rows[2][3]:.2f}x")
    return 0
