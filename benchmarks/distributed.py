"""Rollout workers on Ray against one process: env-steps/s, learning and the cost of a batch.

Three sections, each run side by side in one process on one local Ray instance
(``ray.init(num_cpus=2)``), interleaved per seed:

1. collection only: CartPole with DQN's agent acting at random (no learning), one process
   against 1 and 2 workers, batches of 64, 256 and 1024 steps; the time per batch above what
   the same steps cost in one process is the overhead of a batch (request, weights, handover,
   transfer, insertion);
2. DQN on CartPole (``dqn-cartpole``): one process against 1 and 2 workers;
3. PPO on CartPole (``ppo-cartpole``; with workers, an update learns from every worker's
   rollout of ``n_steps`` per sub-env: W times the transitions of one process).

Steps/s is training time only: the workers' start (a process each, importing torch) is shown
apart. Run it alone (timings): ``flock /tmp/stagerl-timing.lock python benchmarks/distributed.py
[--quick] [--seeds 0 1]``.
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
sys.path.append(str(_HERE / "algorithm_runs"))

import ray  # noqa: E402
import torch  # noqa: E402
from common import print_table  # noqa: E402

import stagerl as rl  # noqa: E402
from stagerl.distributed import Learner, RecordOnly, WorkerPool  # noqa: E402
from stagerl.experiments.distributed import (  # noqa: E402
    ExperimentAgent,
    ExperimentEnv,
    learner_for,
)
from stagerl.experiments.registry import EVAL_SEED_OFFSET, configure, get_experiment  # noqa: E402
from stagerl.experiments.runner import make_eval_env  # noqa: E402


def evaluate(experiment, config, agent, seed):
    env = make_eval_env(experiment, config, seed + EVAL_SEED_OFFSET)
    return statistics.fmean(rl.evaluate(agent, env, 20, experiment.eval_max_episode_steps))


def one_process(name, config, steps, seed):
    """The experiment in one process (as ``stagerl run`` without hooks): steps/s, return."""
    experiment = get_experiment(name)
    torch.manual_seed(seed)
    env = experiment.make_env(config, seed)
    agent = experiment.make_agent(config, env, seed, torch.device("cpu"))
    start = time.perf_counter()
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    wall = time.perf_counter() - start
    return {"sps": steps / wall, "return": evaluate(experiment, config, agent, seed),
            "start": 0.0, "wall": wall}


def with_workers(name, config, steps, seed, workers, **options):
    experiment = get_experiment(name)
    with learner_for(name, config, seed, "cpu", workers, **options) as learner:
        figures = learner.train(steps)
        result = evaluate(experiment, config, learner.agent, seed)
    return {"sps": figures["steps_per_second"], "return": result,
            "start": figures["seconds"]["starting"], "wall": figures["wall_seconds"],
            "figures": figures}


# ---- 1. collection only ---------------------------------------------------------------------


def collection(seeds, quick):
    name = "dqn-cartpole"
    config = configure(name, learning_starts=10**9, steps=10**9)  # acts at random, never learns
    experiment = get_experiment(name)
    steps = 20_000 if quick else 60_000
    rows = []
    for batch in (64, 256, 1024):
        results = {key: [] for key in ("one", 1, 2)}
        for seed in seeds:
            env = experiment.make_env(config, seed)
            agent = experiment.make_agent(config, env, seed, torch.device("cpu"))
            agent.trajectory.controller = RecordOnly()
            start = time.perf_counter()
            rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
            results["one"].append(time.perf_counter() - start)
            for workers in (1, 2):
                pool = WorkerPool(ExperimentEnv(experiment, config),
                                  ExperimentAgent(experiment, config), workers, seed)
                central = experiment.make_agent(config, env, seed, torch.device("cpu"))
                central.trajectory.controller = RecordOnly()
                with Learner(central, pool, steps_per_batch=batch, in_flight=2) as learner:
                    figures = learner.train(steps)
                results[workers].append((figures["wall_seconds"], figures))
        one = statistics.median(results["one"])
        per_step = one / steps
        for workers in (1, 2):
            wall = statistics.median(w for w, _ in results[workers])
            figures = results[workers][0][1]
            batches = figures["batches"]
            # What a batch costs beyond acting its steps, measured from the learner's side:
            # with one worker, the wall clock per batch minus the one-process time of its steps.
            overhead = (wall / batches - batch * per_step) * 1e3 if workers == 1 else None
            learner_ms = sum(figures["seconds"][k] for k in ("receiving", "inserting",
                                                             "broadcasting")) / batches * 1e3
            rows.append([batch, workers, steps / one, steps / wall, one / wall,
                         "-" if overhead is None else round(overhead, 2), round(learner_ms, 2)])
    print_table(f"collection only, CartPole, DQN agent acting at random ({steps} steps, "
                f"medians over seeds {seeds})",
                ["batch", "workers", "one process sps", "workers sps", "speed-up",
                 "overhead ms/batch", "learner ms/batch"], rows)


# ---- 2. and 3. learning -----------------------------------------------------------------


def learning(name, seeds, steps, config_for, title):
    rows = {key: [] for key in ("one", 1, 2)}
    for seed in seeds:
        rows["one"].append(one_process(name, config_for(1, steps), steps, seed))
        for workers in (1, 2):
            rows[workers].append(with_workers(name, config_for(workers, steps), steps, seed,
                                              workers))
    table = []
    one_sps = statistics.median(r["sps"] for r in rows["one"])
    for key in ("one", 1, 2):
        results = rows[key]
        sps = statistics.median(r["sps"] for r in results)
        table.append([
            "one process" if key == "one" else f"{key} worker{'s' if key == 2 else ''}",
            sps, sps / one_sps, statistics.median(r["return"] for r in results),
            min(r["return"] for r in results), statistics.median(r["start"] for r in results),
        ])
    print_table(f"{title} ({steps} env steps, medians over seeds {seeds})",
                ["run", "env-steps/s", "vs one process", "eval return", "worst", "start s"],
                table)
    for key in (1, 2):
        figures = rows[key][0]["figures"]
        seconds = figures["seconds"]
        print(f"  {key} worker(s), seed {seeds[0]}: {figures['batches']} batches of "
              f"{figures['steps_per_batch']} steps, {figures['versions']} versions, "
              f"{figures['weight_broadcasts']} broadcasts; learner seconds: "
              + ", ".join(f"{k} {v:.2f}" for k, v in seconds.items() if k != "starting")
              + "; worker acting steps/s: "
              + ", ".join(f"{w['steps_per_second']:,.0f}" for w in figures["per_worker"]))


def dqn(seeds, quick):
    steps = 20_000 if quick else 50_000

    def config_for(workers, steps):
        return configure("dqn-cartpole", steps=steps)

    learning("dqn-cartpole", seeds, steps, config_for, "DQN, CartPole-v1, RL-Zoo settings")


def ppo(seeds, quick):
    steps = 40_000 if quick else 100_000

    def config_for(workers, steps):
        return configure("ppo-cartpole", steps=steps)

    learning("ppo-cartpole", seeds, steps, config_for,
             "PPO, CartPole-v1, RL-Zoo settings (with W workers an update learns from W "
             "rollouts of 32 x 8 steps)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument("--only", choices=["collection", "dqn", "ppo"], nargs="+",
                        default=["collection", "dqn", "ppo"])
    args = parser.parse_args()
    torch.set_num_threads(1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    print(f"ray {ray.__version__}, torch {torch.__version__}, local Ray with 2 CPUs")
    sections = {"collection": collection, "dqn": dqn, "ppo": ppo}
    for section in args.only:
        sections[section](args.seeds, args.quick)
    ray.shutdown()


if __name__ == "__main__":
    main()
