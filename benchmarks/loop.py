"""The run loop's own cost, side by side with a raw gymnasium loop.

Three loops over the same number of CartPole-v1 steps, interleaved in each repetition so that
machine noise hits them alike:

* raw:   ``env.step(action)`` and ``env.reset()`` when done (the reference), its actions drawn
         from a numpy generator in blocks of 128 as ``RandomPolicy`` draws them (the same work:
         ``action_space.sample()`` costs ~1.2 µs a step more);
* bare:  ``run(RandomPolicy(), GymEnv(...), StopAfterNSteps(n))``            budget >= 0.90x raw;
* agent: the same with ``Agent(RandomPolicy(), Trajectory(CircularArraySARTSTraces(...),
  BatchSampler(32), InsertSampleRatioController()))`` and
  ``TotalRewardPerEpisode() + StepsPerEpisode()``                            budget >= 0.60x raw.

Printed: median steps/s of each loop and the median of the per-repetition ratios to raw.

    python benchmarks/loop.py                  # 200k steps, 5 repetitions
    python benchmarks/loop.py --steps 20000 --repeats 3 --check   # exit 1 if a budget is missed
    python benchmarks/loop.py --clock cpu      # this process's CPU time (a busy, shared machine)

``--clock cpu`` times each loop by the CPU time of this process (``time.process_time``) rather
than by the wall clock: the loops are single-threaded, so on an idle machine both agree, and on
a machine shared with other work the time spent waiting for a core is left out.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# Run as a script, this folder comes first on sys.path, and its trajectories.py benchmark would
# shadow the trajectories package that stagerl imports.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402

import stagerl as rl  # noqa: E402

BUDGETS = {"bare": 0.9, "agent": 0.6}
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = time.perf_counter  # set by --clock
LABELS = {
    "raw": "raw gymnasium loop (actions drawn in blocks)",
    "bare": "run(RandomPolicy(), GymEnv, StopAfterNSteps)",
    "agent": "run(Agent(RandomPolicy, SARTS Trajectory), 2 hooks)",
}


def raw_loop(env_id: str, steps: int, seed: int) -> float:
    env = gymnasium.make(env_id)
    env.reset(seed=seed)
    n = int(env.action_space.n)
    rng = np.random.default_rng(seed)
    block: list[int] = []
    start = clock()
    for _ in range(steps):
        if not block:  # as RandomPolicy: one generator call per 128 actions
            block = rng.integers(n, size=128).tolist()
        _, _, terminated, truncated, _ = env.step(block.pop())
        if terminated or truncated:
            env.reset()
    return steps / (clock() - start)


def bare_loop(env_id: str, steps: int, seed: int) -> float:
    policy, env = rl.RandomPolicy(rng=seed), rl.GymEnv(env_id, seed=seed)
    start = clock()
    rl.run(policy, env, rl.StopAfterNSteps(steps, progress=False))
    return steps / (clock() - start)


def agent_loop(env_id: str, steps: int, seed: int) -> float:
    env = rl.GymEnv(env_id, seed=seed)
    space = env.state_space
    traces = rl.CircularArraySARTSTraces(
        capacity=min(steps, 100_000),
        state=(np.float32, space.shape),
        action=(np.int64, ()),
    )
    trajectory = rl.Trajectory(
        traces, rl.BatchSampler(32, rng=seed), rl.InsertSampleRatioController()
    )
    agent = rl.Agent(rl.RandomPolicy(rng=seed), trajectory)
    hook = rl.TotalRewardPerEpisode() + rl.StepsPerEpisode()
    start = clock()
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False), hook)
    seconds = clock() - start
    if sum(hook[1].steps) + hook[1].count != steps:
        raise RuntimeError("the agent loop did not make the steps it was asked for")
    return steps / seconds


LOOPS = {"raw": raw_loop, "bare": bare_loop, "agent": agent_loop}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--check", action="store_true", help="exit 1 when a budget is missed")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall: elapsed time; cpu: this process's CPU time")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.repeats < 1:
        print(f"loop.py: --steps and --repeats must be >= 1, got --steps {args.steps} "
              f"--repeats {args.repeats}", file=sys.stderr)
        return 2
    global clock
    clock = CLOCKS[args.clock]

    for loop in LOOPS.values():  # warm-up: imports, plum's caches, allocator
        loop(args.env, min(args.steps, 5_000), 0)

    rates: dict[str, list[float]] = {name: [] for name in LOOPS}
    for repeat in range(args.repeats):
        for name, loop in LOOPS.items():
            rates[name].append(loop(args.env, args.steps, seed=repeat))

    print(
        f"stagerl loop benchmark: {args.env}, {args.steps:,} steps x {args.repeats} repetitions "
        f"(medians; ratio = median of per-repetition ratios to raw; {args.clock} clock)"
    )
    print(f"{'loop':<56}{'steps/s':>10}{'us/step':>9}{'ratio':>8}  budget")
    missed = []
    for name in LOOPS:
        median = statistics.median(rates[name])
        ratio = statistics.median(r / raw for r, raw in zip(rates[name], rates["raw"], strict=True))
        budget = BUDGETS.get(name)
        verdict = ""
        if budget is not None:
            ok = ratio >= budget
            verdict = f">= {budget:.2f}  {'ok' if ok else 'MISSED'}"
            if not ok:
                missed.append(name)
        print(f"{LABELS[name]:<56}{median:>10,.0f}{1e6 / median:>9.2f}{ratio:>8.3f}  {verdict}")
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
