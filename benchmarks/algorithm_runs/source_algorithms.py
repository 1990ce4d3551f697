"""rllab's and RLlib's remaining algorithms on CartPole-v1: ERWR, REPS, VPG with rllab's linear
feature baseline against VPG with its value network, A3C on 2 Ray workers, and DQN on 2 Ray
workers (its default plan, and bulk-synchronous rounds) against DQN in one process.

Each row is a named experiment trained for its budget (its ``steps``, or the one the docs
state) and evaluated on 20 deterministic episodes of a separate env; the table shows each
seed's evaluation return and how many seeds reached 475. The Ray rows start a local Ray
instance of 2 CPUs per run. Learning outcomes, not speed: the seconds are what the run took
on this machine, whatever else it was doing.

    python benchmarks/algorithms.py --only source_algorithms               # seeds 0 1 2
    python benchmarks/algorithms.py --only source_algorithms:erwr+reps --seeds 0
"""

from __future__ import annotations

import time

from common import print_table

import stagerl.experiments as experiments

#: part -> (label, experiment, steps, Ray workers or None, hyper-parameters)
RUNS = {
    "erwr": ("ERWR (erwr-cartpole)", "erwr-cartpole", 500_000, None, {}),
    "reps": ("REPS (reps-cartpole)", "reps-cartpole", 200_000, None, {}),
    "vpg": ("VPG, value network (vpg-cartpole)", "vpg-cartpole", 150_000, None, {}),
    "vpg-linear": ("VPG, linear baseline (vpg-cartpole baseline=linear)", "vpg-cartpole",
                   150_000, None, {"baseline": "linear"}),
    "a3c": ("A3C, 2 Ray workers (a3c-cartpole)", "a3c-cartpole", 100_000, 2, {}),
    "dqn": ("DQN, one process (dqn-cartpole)", "dqn-cartpole", 50_000, None, {}),
    "dqn-ray": ("DQN, 2 Ray workers (dqn-cartpole)", "dqn-cartpole", 50_000, 2, {}),
    "dqn-ray-rounds": ("DQN, 2 Ray workers, bulk-synchronous rounds", "dqn-cartpole", 50_000,
                       2, {}),
}
PARTS = tuple(RUNS)
QUICK_STEPS = 4_000


def replay_plan_in_rounds(learner):
    """docs/distributed.md's DQN plan whose workers act in bulk-synchronous rounds with the
    current weights (with ``steps_per_batch=128``: each worker half a ``train_freq``)."""
    from stagerl.distributed import (
        Concurrently,
        ParallelRollouts,
        Replay,
        StoreToReplayBuffer,
        TrainOneStep,
        UpdateTargetNetwork,
    )

    store = (ParallelRollouts(learner, mode="bulk_sync")
             .for_each(StoreToReplayBuffer(learner))
             .for_each(UpdateTargetNetwork(learner)))
    train = Replay(learner).for_each(TrainOneStep(learner))
    return Concurrently([store, train], mode="round_robin", output_indexes=[1],
                        round_robin_weights=[1, "*"])


def one(part: str, seed: int, quick: bool) -> tuple[float, float]:
    """(evaluation return, seconds) of one run of ``part``."""
    _, name, steps, workers, overrides = RUNS[part]
    start = time.perf_counter()
    if workers is None:
        summary = experiments.train(name, steps=QUICK_STEPS if quick else steps, seed=seed,
                                    device="cpu", progress=False, **overrides)
    else:
        import ray

        from stagerl.experiments.distributed import train

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        rounds = {"plan": replay_plan_in_rounds, "steps_per_batch": 128} \
            if part == "dqn-ray-rounds" else {}
        try:
            summary = train(name, experiments.configure(name, **overrides),
                            QUICK_STEPS if quick else steps, seed, workers, device="cpu",
                            **rounds)
        finally:
            ray.shutdown()
    return summary["eval_return_mean"], time.perf_counter() - start


def main(seeds: list[int], quick: bool, parts: list[str] | None = None) -> int:
    parts = list(parts or PARTS)
    results: dict[str, list[tuple[float, float]]] = {part: [] for part in parts}
    for part in parts:  # one at a time: each run has the machine to itself (as far as it can)
        for seed in seeds:
            results[part].append(one(part, seed, quick))
            print(f"  {part} seed {seed}: return {results[part][-1][0]:.1f} "
                  f"({results[part][-1][1]:.0f} s)", flush=True)
    rows = []
    for part in parts:
        label, _, steps, _, _ = RUNS[part]
        returns = [r for r, _ in results[part]]
        rows.append([label, QUICK_STEPS if quick else steps,
                     " ".join(f"{r:.0f}" for r in returns),
                     f"{sum(r >= 475 for r in returns)} of {len(returns)}"])
    print_table(f"CartPole-v1, seeds {seeds}{' (quick)' if quick else ''}: evaluation return "
                f"(20 deterministic episodes) per seed", ["run", "steps", "returns", ">= 475"],
                rows)
    return 0
