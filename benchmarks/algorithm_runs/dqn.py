"""DQN: stagerl against Stable-Baselines3 at RL-Zoo's CartPole-v1 settings, and against a
hand-written single-file DQN in CleanRL's style at CleanRL's settings.

Two parts, both run unless ``--only dqn:PART`` picks one:

* ``rl-zoo``: for every seed, ``dqn-cartpole-zoo`` (RL-Zoo's settings), ``dqn-cartpole`` (the
  new defaults), and SB3's ``DQN`` at RL-Zoo's settings, interleaved. It
  prints their speed and, side by side, each seed's final evaluation return and training time:
  whether each learns in every seed.
* ``cleanrl``: for every seed, stagerl and the hand-written loop at CleanRL's settings.

Each contender trains for the same env steps; env-steps/s is over training alone, per second of
wall-clock time and per second of the process's CPU time (on a machine that other work shares,
CPU time is the steadier measure: wall-clock figures move with the load from one run to the
next); the return is the mean of 20 deterministic (greedy) episodes on a separate env
(seed + 10,000), the same episodes for every contender. stagerl's RL-Zoo rows run the named
experiment through ``stagerl.experiments.train`` (what a user runs, evaluated by the experiment
itself) with every DQN setting given, so they do not move when the experiment's defaults do.

    python benchmarks/algorithms.py --only dqn             # seeds 0 1 2
    python benchmarks/algorithms.py --only dqn:rl-zoo --seeds 0 1 2 3 4 5 6 7 8 9
    DQN_BENCH_THREADS=2 python benchmarks/algorithms.py --only dqn   # torch on two threads

Torch runs on one thread for every contender unless ``DQN_BENCH_THREADS`` says otherwise: these
networks learn fastest on one, and on a busy 2-core machine two threads can be ten times slower.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from common import median_ratio, print_table
from torch import nn

import stagerl as rl
import stagerl.experiments as experiments
from stagerl.algorithms import DQNConfig, make_dqn_agent

EVAL_EPISODES = 20
EVAL_SEED_OFFSET = 10_000

# RL-Zoo's dqn.yml, CartPole-v1 (Stable-Baselines3's names; the rest at SB3's defaults).
RL_ZOO = dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1_000,
              gamma=0.99, target_update_interval=10, train_freq=256, gradient_steps=128,
              exploration_fraction=0.16, exploration_final_eps=0.04)
RL_ZOO_NET = (256, 256)
RL_ZOO_STEPS = 50_000

# stagerl's two named experiments: RL-Zoo's settings as they are, and dqn-cartpole's defaults
# (RL-Zoo's with a falling step size, double DQN, 3-step returns and 64 gradient steps per burst).
ZOO_EXPERIMENT, DEFAULT_EXPERIMENT = "dqn-cartpole-zoo", "dqn-cartpole"

PARTS = ("rl-zoo", "cleanrl")
LEARNED = 475  # CartPole-v1's "solved" threshold: a seed learned if its final return reaches it

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


@dataclass
class CPUTime(rl.Hook):
    """The process's CPU seconds from the run's start to its end (training alone)."""

    start: float = 0.0
    seconds: float = 0.0


@rl.push.dispatch
def _cpu_time_start(hook: CPUTime, stage: rl.PreExperimentStage, policy, env):
    hook.start = time.process_time()


@rl.push.dispatch
def _cpu_time_end(hook: CPUTime, stage: rl.PostExperimentStage, policy, env):
    hook.seconds = time.process_time() - hook.start


def experiment_settings(name: str) -> dict:
    """Every DQN hyper-parameter of the named experiment ``name`` (its defaults)."""
    config = experiments.configure(name)
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(DQNConfig)
            if f.name != "total_steps"}


def every_setting(settings: dict) -> dict:
    """Every DQN hyper-parameter: ``settings`` over ``DQNConfig``'s own defaults, so that a
    named experiment runs these settings whatever its defaults are."""
    defaults = {f.name: f.default for f in dataclasses.fields(DQNConfig)
                if f.name != "total_steps"}  # the experiment sets it to the run's steps
    return {**defaults, **settings}


def stagerl_experiment(settings: dict, seed: int, steps: int) -> tuple[float, float, float]:
    """(env-steps per wall-clock second, per CPU second, evaluation return) of the named
    experiment ``dqn-cartpole`` with every DQN setting given, evaluated by the experiment."""
    clock = CPUTime()
    summary = experiments.train("dqn-cartpole", steps=steps, seed=seed, device="cpu",
                                progress=False, hook=clock, torch_threads=torch.get_num_threads(),
                                **every_setting(settings))
    return steps / summary["wall_seconds"], steps / clock.seconds, summary["eval_return_mean"]


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


def main(seeds: list[int], quick: bool, parts: list[str] | tuple[str, ...] = PARTS) -> int:
    torch.set_num_threads(int(os.environ.get("DQN_BENCH_THREADS", "1")))
    zoo_steps, clean_steps = (3_000, 12_000) if quick else (RL_ZOO_STEPS, CLEANRL_STEPS)
    zoo, new = experiment_settings(ZOO_EXPERIMENT), experiment_settings(DEFAULT_EXPERIMENT)
    drifted = {k: (v, zoo[k]) for k, v in {**RL_ZOO, "net_arch": RL_ZOO_NET}.items()
               if zoo[k] != v}
    if drifted:  # SB3 runs RL_ZOO: both sides must run the same settings
        raise SystemExit(f"{ZOO_EXPERIMENT} no longer runs RL-Zoo's settings: {drifted}")
    clean = DQNConfig(**CLEANRL, net_arch=CLEANRL_NET, max_grad_norm=None, loss="mse",
                      total_steps=clean_steps)
    contenders = {  # name: (label, steps, run(seed) -> (steps/s, steps/CPU-s, return))
        "zoo": ("stagerl, RL-Zoo settings", zoo_steps,
                lambda seed: stagerl_experiment(zoo, seed, zoo_steps)),
        "new": ("stagerl, new defaults", zoo_steps,
                lambda seed: stagerl_experiment(new, seed, zoo_steps)),
        "sb3": ("Stable-Baselines3, RL-Zoo settings", zoo_steps,
                lambda seed: sb3_dqn(seed, zoo_steps, RL_ZOO)),
        "ours_c": ("stagerl, CleanRL settings", clean_steps,
                   lambda seed: stagerl_dqn(clean, seed, clean_steps)),
        "hand": ("hand-written loop, CleanRL settings", clean_steps,
                 lambda seed: handwritten_dqn(seed, clean_steps, **CLEANRL)),
    }
    if "rl-zoo" in parts:  # settings the experiment refuses stop here, before any run
        for settings in (zoo, new):
            experiments.configure("dqn-cartpole", **every_setting(settings))
    keys = [k for part, members in (("rl-zoo", ("zoo", "new", "sb3")),
                                    ("cleanrl", ("ours_c", "hand"))) if part in parts
            for k in members]
    runs: dict[str, list[tuple[float, float, float]]] = {k: [] for k in keys}
    for seed in seeds:
        for key in keys:
            runs[key].append(contenders[key][2](seed))
        print(f"  seed {seed}: " + ", ".join(
            f"{k} {v[-1][0]:,.0f} steps/s ({v[-1][1]:,.0f} per CPU-s) return {v[-1][2]:.1f}"
            for k, v in runs.items()), flush=True)

    def column(key: str, i: int) -> list[float]:
        return [run[i] for run in runs[key]]

    def returns(key: str) -> str:
        return " ".join(f"{r:.0f}" for r in column(key, 2))

    def learned(key: str) -> str:
        return f"{sum(r >= LEARNED for r in column(key, 2))}/{len(seeds)}"

    def speed_row(key: str, peer: str, last: str) -> list:
        label, steps, _ = contenders[key]
        return [label, steps, statistics.median(column(key, 0)),
                median_ratio(column(key, 0), column(peer, 0)),
                statistics.median(column(key, 1)),
                median_ratio(column(key, 1), column(peer, 1)), last]

    threads = torch.get_num_threads()
    notes = []
    if "rl-zoo" in parts:
        print_table(
            f"DQN on CartPole-v1 at RL-Zoo's settings and at dqn-cartpole's new defaults, "
            f"seeds {seeds}, torch threads {threads}{' (quick)' if quick else ''}: env-steps/s "
            f"(medians; ratios: medians of per-seed ratios to SB3) and the seeds that learned "
            f"(final return >= {LEARNED})",
            ["run", "steps", "steps/s", "ratio", "steps/CPU-s", "ratio", "learned"],
            [speed_row(k, "sb3", learned(k)) for k in ("zoo", "new", "sb3")])
        print(f"(the new defaults take {new['gradient_steps']} gradient steps per burst where "
              f"RL-Zoo's take {zoo['gradient_steps']}: their ratio is not like for like)")
        print_table(
            f"Final evaluation return ({EVAL_EPISODES} greedy episodes on an env seeded seed + "
            f"{EVAL_SEED_OFFSET:,}) and training seconds (wall-clock), per seed",
            ["seed", "stagerl RL-Zoo", "s", "stagerl new", "s", "SB3 RL-Zoo", "s"],
            [[str(seed)] + [v for k in ("zoo", "new", "sb3") for v in (
                runs[k][i][2], zoo_steps / runs[k][i][0])] for i, seed in enumerate(seeds)]
            + [[f">= {LEARNED}"] + [v for k in ("zoo", "new", "sb3") for v in (learned(k), "")],
               ["median"] + [v for k in ("zoo", "new", "sb3") for v in (
                   statistics.median(column(k, 2)),
                   statistics.median(zoo_steps / x for x in column(k, 0)))]])
        zoo_ratio = median_ratio(column("zoo", 1), column("sb3", 1))
        notes.append(f">= 2x SB3: {zoo_ratio:.2f}x ({'met' if zoo_ratio >= 2.0 else 'NOT met'})")
    if "cleanrl" in parts:
        print_table(
            f"DQN on CartPole-v1 at CleanRL's settings, seeds {seeds}, torch threads {threads}"
            f"{' (quick)' if quick else ''}: env-steps/s (medians; ratios: medians of per-seed "
            f"ratios) and evaluation returns ({EVAL_EPISODES} greedy episodes per seed)",
            ["run", "steps", "steps/s", "ratio", "steps/CPU-s", "ratio", "returns per seed"],
            [speed_row("ours_c", "hand", returns("ours_c")),
             speed_row("hand", "hand", returns("hand"))])
        clean_ratio = median_ratio(column("ours_c", 1), column("hand", 1))
        notes.append(f">= 0.9x the hand-written loop: {clean_ratio:.2f}x "
                     f"({'met' if clean_ratio >= 0.9 else 'NOT met'})")
    print("budgets (CPU-time ratios): " + "; ".join(notes))
    return 0
