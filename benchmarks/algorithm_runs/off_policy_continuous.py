"""SAC and TD3 against Stable-Baselines3 on Pendulum-v1 at RL-Zoo's settings.

For every seed, stagerl's run (the named experiment ``sac-pendulum`` / ``td3-pendulum``) and
SB3's run with the same hyper-parameters advance in turns of ``CHUNK`` env steps inside one
process (SB3's ``learn`` continues where it stopped), so both see the same background load on
a shared machine; each side's env-steps/s counts its own turns only. Neither run is changed by
the turns: stagerl draws from its own generators, SB3 from the global ones it seeded. After
training, each policy plays 20 deterministic episodes on its own Pendulum-v1 whose first reset
is seeded with ``seed + 10_000`` (the named experiments' protocol).

    python benchmarks/algorithms.py --only off_policy_continuous            # seeds 0 1 2
    python benchmarks/algorithms.py --only off_policy_continuous --quick    # a smoke check

Both sides run torch on ``OFF_POLICY_BENCH_THREADS`` CPU threads (default 1, the named
experiments' setting: two threads are faster on an idle 2-core machine and many times slower on
a busy one). Time it alone: ``flock /tmp/stagerl-timing.lock python benchmarks/algorithms.py
...``.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from common import median_ratio, print_table

import stagerl as rl
import stagerl.experiments as experiments
from stagerl.experiments.registry import EVAL_EPISODES, EVAL_SEED_OFFSET

CHUNK = 1_000
ENV_ID = "Pendulum-v1"


def sb3_model(name: str, config: Any, seed: int) -> Any:
    """SB3's SAC or TD3 with the named experiment's hyper-parameters."""
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.noise import NormalActionNoise

    env = gym.make(ENV_ID)
    shared = dict(learning_rate=config.learning_rate, buffer_size=config.buffer_size,
                  learning_starts=config.learning_starts, batch_size=config.batch_size,
                  tau=config.tau, gamma=config.gamma, train_freq=config.train_freq,
                  gradient_steps=config.gradient_steps,
                  policy_kwargs=dict(net_arch=list(config.net_arch)), seed=seed, device="cpu")
    if name == "sac-pendulum":
        return SAC("MlpPolicy", env, ent_coef=config.ent_coef,
                   target_entropy=config.target_entropy, **shared)
    n_actions = env.action_space.shape[0]
    noise = NormalActionNoise(np.zeros(n_actions), config.action_noise * np.ones(n_actions))
    return TD3("MlpPolicy", env, action_noise=noise, policy_delay=config.policy_delay,
               target_policy_noise=config.target_policy_noise,
               target_noise_clip=config.target_noise_clip, **shared)


def sb3_evaluation(model: Any, seed: int) -> list[float]:
    """Deterministic episodes on an env whose first reset is seeded (as ``rl.GymEnv``)."""
    env, returns = gym.make(ENV_ID), []
    for episode in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=seed if episode == 0 else None)
        total, done = 0.0, False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    return returns


def side_by_side(name: str, seed: int, steps: int, **overrides: Any) -> dict[str, float]:
    """One seed of stagerl and SB3 in turns of ``CHUNK`` env steps; speeds and returns."""
    experiment = experiments.get_experiment(name)
    config = experiments.configure(experiment, steps=steps, torch_threads=0, **overrides)
    torch.manual_seed(seed)
    env = experiment.make_env(config, seed)
    agent = experiment.make_agent(config, env, seed, torch.device("cpu"))
    model = sb3_model(name, config, seed)
    sb3_seconds = [0.0]

    def sb3_turn(t: int, policy: Any, env: Any) -> None:
        start = time.perf_counter()
        model.learn(CHUNK, reset_num_timesteps=t == CHUNK)
        sb3_seconds[0] += time.perf_counter() - start

    start = time.perf_counter()
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False), rl.DoEveryNSteps(sb3_turn, CHUNK))
    stagerl_seconds = time.perf_counter() - start - sb3_seconds[0]
    eval_seed = seed + EVAL_SEED_OFFSET
    ours = rl.evaluate(agent, rl.GymEnv(ENV_ID, seed=eval_seed), EVAL_EPISODES)
    theirs = sb3_evaluation(model, eval_seed)
    return {"stagerl_sps": steps / stagerl_seconds, "sb3_sps": steps / sb3_seconds[0],
            "stagerl_return": statistics.fmean(ours), "sb3_return": statistics.fmean(theirs)}


def main(seeds: list[int], quick: bool) -> int:
    threads_before = torch.get_num_threads()
    torch.set_num_threads(int(os.environ.get("OFF_POLICY_BENCH_THREADS", "1")))
    try:
        return compare(seeds, quick)
    finally:
        torch.set_num_threads(threads_before)


def compare(seeds: list[int], quick: bool) -> int:
    steps = 2 * CHUNK if quick else 20_000
    runs = {"sac-pendulum": {}, "td3-pendulum": {"learning_starts": CHUNK} if quick else {}}
    print(f"\nSAC and TD3 vs Stable-Baselines3 on {ENV_ID}, {steps} env steps, RL-Zoo settings, "
          f"torch threads {torch.get_num_threads()}, turns of {CHUNK} steps")
    rows, summary = [], []
    for name, overrides in runs.items():
        results = []
        for seed in seeds:
            result = side_by_side(name, seed, steps, **overrides)
            results.append(result)
            rows.append([name, seed, result["stagerl_sps"], result["sb3_sps"],
                         result["stagerl_sps"] / result["sb3_sps"], result["stagerl_return"],
                         result["sb3_return"]])
            print(f"  {name} seed {seed}: " + ", ".join(f"{k} {v:.1f}" for k, v in result.items()),
                  flush=True)
        ours, theirs = ([r[k] for r in results] for k in ("stagerl_sps", "sb3_sps"))
        summary.append([name, statistics.median(ours), statistics.median(theirs),
                        median_ratio(ours, theirs),
                        f"{sum(r['stagerl_return'] >= -200 for r in results)}/{len(results)}",
                        f"{sum(r['sb3_return'] >= -200 for r in results)}/{len(results)}"])
    print_table("Per seed (env-steps/s; evaluation return, 20 deterministic episodes)",
                ["experiment", "seed", "stagerl sps", "SB3 sps", "ratio", "stagerl eval",
                 "SB3 eval"], rows)
    print_table("Medians over seeds (ratio: median of the per-seed ratios)",
                ["experiment", "stagerl sps", "SB3 sps", "ratio", "stagerl >= -200",
                 "SB3 >= -200"], summary)
    return 0
