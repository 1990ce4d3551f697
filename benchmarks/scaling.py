"""Scaling out on Ray where a 2-core machine can show it, and the execution plans' cost.

Two sections:

1. ``waits``: an env whose every step first waits 2 ms (an I/O-bound simulator stand-in:
   CartPole behind ``time.sleep``), acted at random and recorded (collection only). One process
   against 1, 2, 4 and 8 Ray workers (a local Ray instance of 2 CPUs; with more workers than
   CPUs each reserves ``2 / workers``): while a worker waits, the others act, so env-steps/s
   grow with the workers although the machine has two cores. Each size runs in a fresh
   process, sizes interleaved per repeat; the table shows medians and the load average.
2. ``dqn``: DQN on CartPole (``dqn-cartpole``'s settings) with 2 workers: the plan-based
   ``stagerl.distributed.Learner`` against the learner as it was before execution plans
   (``reference/learner_before_plans.py``), each run in a fresh process, interleaved per
   seed; env-steps/s of training (the workers' start apart) and the final evaluation.

    python benchmarks/scaling.py                          # both sections
    python benchmarks/scaling.py --section waits --repeats 3
    python benchmarks/scaling.py --section dqn --seeds 0 1 2 --steps 50000
    python benchmarks/scaling.py --quick                  # a small check of both
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
# Run as a script, this folder comes first on sys.path, and its trajectories.py benchmark would
# shadow the trajectories package that stagerl imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE / "reference"))

import gymnasium  # noqa: E402

WAIT = 0.002  # seconds each step of the waiting env waits
WORKERS = (1, 2, 4, 8)


class WaitingStep(gymnasium.Wrapper):
    """An env whose every step first waits ``wait`` seconds (a simulator's I/O)."""

    def __init__(self, env: gymnasium.Env, wait: float = WAIT):
        super().__init__(env)
        self.wait = wait

    def step(self, action):
        time.sleep(self.wait)
        return self.env.step(action)


def waiting_env(seed: int):
    import stagerl as rl

    return rl.GymEnv(WaitingStep(gymnasium.make("CartPole-v1")), seed=seed)


def recording_agent(env, seed: int, capacity: int = 4096):
    import numpy as np

    import stagerl as rl

    return rl.Agent(rl.RandomPolicy(rng=seed), rl.Trajectory(rl.CircularArraySARTSTraces(
        capacity=capacity, state=(np.float32, (4,)))))


# ---- one run, in its own process ----------------------------------------------------------------


def one_process_rate(steps: int) -> dict:
    import stagerl as rl

    env = waiting_env(0)
    agent = recording_agent(env, 0, capacity=steps + 10)
    start = time.perf_counter()
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    return {"sps": steps / (time.perf_counter() - start)}


def workers_rate(workers: int, steps: int, batch: int) -> dict:
    import numpy as np
    import ray

    import stagerl as rl
    from stagerl.distributed import Learner, RecordOnly, WorkerPool

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    pool = WorkerPool(waiting_env, recording_agent, workers, seed=0,
                      cpus_per_worker=min(1.0, 2 / workers))
    central = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(
        rl.CircularArraySARTSTraces(capacity=2 * steps + 10 * workers,
                                    state=(np.float32, (4,))), controller=RecordOnly()))
    with Learner(central, pool, steps_per_batch=batch) as learner:
        figures = learner.train(steps)
    ray.shutdown()
    return {"sps": figures["steps_per_second"], "plan": figures["plan"]}


def dqn_rate(side: str, seed: int, steps: int) -> dict:
    import ray
    import torch

    import stagerl as rl
    from stagerl.distributed import WorkerLanes, WorkerPool
    from stagerl.experiments import configure, get_experiment, learner_for
    from stagerl.experiments.distributed import ExperimentAgent, ExperimentEnv
    from stagerl.experiments.registry import EVAL_SEED_OFFSET, make_eval_env

    torch.set_num_threads(1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    name = "dqn-cartpole"
    experiment, config = get_experiment(name), configure(name, steps=steps)
    if side == "plan":
        learner = learner_for(name, config, seed, "cpu", 2)
    else:
        from learner_before_plans import LearnerBeforePlans

        torch.manual_seed(seed)
        lanes = WorkerLanes(experiment.make_env(config, seed), 2)
        agent = experiment.make_agent(config, lanes, seed, torch.device("cpu"))
        pool = WorkerPool(ExperimentEnv(experiment, config), ExperimentAgent(experiment, config),
                          2, seed)
        learner = LearnerBeforePlans(agent, pool, lanes.lanes_per_worker)
    with learner:
        figures = learner.train(steps)
        env = make_eval_env(experiment, config, seed + EVAL_SEED_OFFSET)
        returns = rl.evaluate(learner.agent, env, 20, experiment.eval_max_episode_steps)
    ray.shutdown()
    return {"sps": figures["steps_per_second"], "return": statistics.fmean(returns)}


def fresh(*args: str) -> dict:
    """One run in a fresh Python process (``--one ...``); its JSON line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(_HERE.parent), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one", *args],
                         capture_output=True, text=True, env=env, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- the sections ---------------------------------------------------------------------------


def waits(repeats: int, quick: bool) -> None:
    seconds = 1.5 if quick else 4.0  # of acting per size, about
    rate = 1 / WAIT
    runs: dict = {"one process": []} | {w: [] for w in WORKERS}
    for _ in range(repeats):
        runs["one process"].append(fresh("one-process", str(int(rate * seconds)))["sps"])
        for w in WORKERS:
            runs[w].append(fresh("workers", str(w), str(int(rate * w * seconds)),
                                 "128" if quick else "256")["sps"])
    base = statistics.median(runs["one process"])
    print(f"\nA {WAIT * 1000:g} ms-per-step env, collection only, medians of {repeats} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):")
    print(f"{'':14}{'env-steps/s':>12}{'x one process':>15}")
    print(f"{'one process':14}{base:>12,.0f}{1.0:>15.2f}")
    for w in WORKERS:
        median = statistics.median(runs[w])
        print(f"{f'{w} workers':14}{median:>12,.0f}{median / base:>15.2f}")


def dqn(seeds: list[int], steps: int) -> None:
    rows = []
    for seed in seeds:
        for side in ("before", "plan"):
            rows.append((side, seed, fresh("dqn", side, str(seed), str(steps))))
    print(f"\nDQN on CartPole, 2 workers, {steps:,} steps (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):")
    for side in ("before", "plan"):
        got = [r for s, _, r in rows if s == side]
        returns = " ".join(f"{r['return']:.0f}" for r in got)
        print(f"  {side:7} env-steps/s {statistics.median(r['sps'] for r in got):8,.0f}   "
              f"returns {returns}")
    ratios = [p["sps"] / b["sps"] for (_, _, b), (_, _, p) in zip(rows[::2], rows[1::2],
                                                                  strict=True)]
    print(f"  plan / before: median {statistics.median(ratios):.2f} "
          f"({', '.join(f'{r:.2f}' for r in ratios)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=("waits", "dqn"), action="append")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        kind, *rest = args.one
        if kind == "one-process":
            result = one_process_rate(int(rest[0]))
        elif kind == "workers":
            result = workers_rate(int(rest[0]), int(rest[1]), int(rest[2]))
        else:
            result = dqn_rate(rest[0], int(rest[1]), int(rest[2]))
        print(json.dumps(result))
        return 0
    sections = args.section or ["waits", "dqn"]
    if "waits" in sections:
        waits(1 if args.quick else args.repeats, args.quick)
    if "dqn" in sections:
        dqn(args.seeds[:1] if args.quick else args.seeds, 4000 if args.quick else args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
