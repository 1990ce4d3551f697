"""GymEnv.act's own cost over the gymnasium env's step.

Two envs, each stepped through a plain loop by the env's own ``step`` and by ``GymEnv.act``,
interleaved in every round so that machine noise hits both alike; the minimum over rounds is
reported (the least noisy estimate of a fixed per-step cost):

* a trivial gymnasium env whose ``step`` only builds a fresh 4-float array: the overhead alone;
* CartPole-v1 (``gymnasium.make``, with its wrappers): the overhead against real work.

    python benchmarks/gym_env.py                # 50k steps, 15 rounds
    python benchmarks/gym_env.py --steps 20000 --rounds 5
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# Run as a script, this folder comes first on sys.path, and its trajectories.py benchmark would
# shadow the trajectories package that stagerl imports.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402
from gymnasium.spaces import Box, Discrete  # noqa: E402

import stagerl as rl  # noqa: E402


class Trivial(gymnasium.Env):
    action_space = Discrete(2)
    observation_space = Box(-1, 1, (4,), np.float32)

    def reset(self, *, seed=None, options=None):
        return np.zeros(4, np.float32), {}

    def step(self, action):
        return np.zeros(4, np.float32), 1.0, False, False, {}


def raw_loop(env, actions):
    env.reset(seed=0)
    start = time.perf_counter()
    for a in actions:
        _obs, _reward, terminated, truncated, _info = env.step(a)
        if terminated or truncated:
            env.reset()
    return (time.perf_counter() - start) / len(actions) * 1e9


def act_loop(env, actions):
    env.reset()
    start = time.perf_counter()
    for a in actions:
        env.act(a)
        if env.is_terminated or env.is_truncated:
            env.reset()
    return (time.perf_counter() - start) / len(actions) * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    draws = np.random.default_rng(0).integers(2, size=args.steps)
    ints, np_ints = [int(a) for a in draws], list(draws)
    cases = {
        "trivial: env.step": lambda: raw_loop(Trivial(), ints),
        "trivial: GymEnv.act (int actions)": lambda: act_loop(rl.GymEnv(Trivial()), ints),
        "trivial: GymEnv.act (np.int64 actions)": lambda: act_loop(rl.GymEnv(Trivial()), np_ints),
        "CartPole-v1: env.step": lambda: raw_loop(gymnasium.make("CartPole-v1"), ints),
        "CartPole-v1: GymEnv.act": lambda: act_loop(rl.GymEnv("CartPole-v1", seed=0), ints),
    }
    times = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, case in cases.items():
            times[name].append(case())
    best = {name: min(t) for name, t in times.items()}
    for name, t in times.items():
        print(f"{name:40s} min {min(t):7.0f} ns/step   median {sorted(t)[len(t) // 2]:7.0f}")
    trivial = best["trivial: env.step"]
    int_overhead = best["trivial: GymEnv.act (int actions)"] - trivial
    print(f"act overhead, trivial env: {int_overhead:.0f} ns")
    print(
        "act overhead, trivial env, np.int64 actions: "
        f"{best['trivial: GymEnv.act (np.int64 actions)'] - trivial:.0f} ns"
    )
    print(
        "act overhead, CartPole-v1: "
        f"{best['CartPole-v1: GymEnv.act'] - best['CartPole-v1: env.step']:.0f} ns"
    )


if __name__ == "__main__":
    main()
