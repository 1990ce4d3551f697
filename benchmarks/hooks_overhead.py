"""What the logging hooks cost: per env step for each hook, and for a whole named run.

Part 1 runs a random policy on CartPole-v1 (one env, and a vector env of 8) with no hook and
with each logging hook alone, interleaved, and prints the median extra microseconds per env
step. Part 2 runs a named experiment as ``stagerl run`` does (default hooks: progress summary,
CSV, TensorBoard, plot, evaluation and a checkpoint every 10k steps), the same without
checkpoints (``--checkpoint-every 0``) and with no hooks at all (no log directory), each in a
fresh process (imports included), interleaved, and prints the median wall times and their ratios.

    python benchmarks/hooks_overhead.py                          # both parts, dqn-cartpole
    python benchmarks/hooks_overhead.py --experiment tabular-q-random-walk --steps 20000
    python benchmarks/hooks_overhead.py --quick                  # fewer repetitions

Run timing measurements alone on the machine: flock /tmp/stagerl-timing.lock python ...
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run as a script, this folder comes first on sys.path, and its trajectories.py benchmark would
# shadow the trajectories package that stagerl imports.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
ROOT = _HERE.parent

import stagerl as rl  # noqa: E402
from stagerl.logging import (  # noqa: E402
    ConsoleSummary,
    CSVLogger,
    Evaluate,
    PlotLearningCurve,
    ProgressBar,
    TensorBoardLogger,
)


def _hooks(logdir: Path) -> dict:
    devnull = open(os.devnull, "w")  # noqa: SIM115  (kept open for the benchmark's life)
    return {
        "CSVLogger": lambda: CSVLogger(logdir / "csv"),
        "TensorBoardLogger": lambda: TensorBoardLogger(logdir / "tb"),
        "ProgressBar": lambda: ProgressBar(total=None),
        "ConsoleSummary": lambda: ConsoleSummary(every_n_steps=10_000, file=devnull),
        "PlotLearningCurve": lambda: PlotLearningCurve(None),
        "Evaluate(10k, 5)": lambda: Evaluate(10_000, 5, rl.GymEnv("CartPole-v1", seed=1)),
    }


def _seconds(make_env, hook, steps: int) -> float:
    env, policy = make_env(), rl.RandomPolicy(rng=0)
    stop = rl.StopAfterNSteps(steps, progress=False)
    start = time.perf_counter()
    rl.run(policy, env, stop, hook)
    return time.perf_counter() - start


def per_step_costs(steps: int, repetitions: int) -> None:
    os.environ.pop("CI", None)  # the progress bar draws: its redraws are part of its cost
    envs = {
        "CartPole-v1": lambda: rl.GymEnv("CartPole-v1", seed=0),
        "CartPole-v1 x8": lambda: rl.GymVectorEnv("CartPole-v1", num_envs=8, seed=0),
    }
    with tempfile.TemporaryDirectory() as tmp:
        hooks = _hooks(Path(tmp))
        print(f"Part 1: extra µs per env step, random policy, {steps:,} env steps, median of "
              f"{repetitions} interleaved repetitions")
        print(f"{'hook':<20}" + "".join(f"{name:>18}" for name in envs))
        base = {name: [] for name in envs}
        extra = {(h, e): [] for h in hooks for e in envs}
        for _ in range(repetitions):
            for env_name, make_env in envs.items():
                base[env_name].append(_seconds(make_env, rl.EmptyHook(), steps))
                for hook_name, make_hook in hooks.items():
                    extra[hook_name, env_name].append(_seconds(make_env, make_hook(), steps))
        print(f"{'(no hook: µs/step)':<20}" + "".join(
            f"{statistics.median(base[e]) / steps * 1e6:>18.2f}" for e in envs))
        for hook_name in hooks:
            row = [(statistics.median(extra[hook_name, e]) - statistics.median(base[e]))
                   / steps * 1e6 for e in envs]
            print(f"{hook_name:<20}" + "".join(f"{x:>18.2f}" for x in row))


_NO_HOOKS = ("import sys, stagerl.experiments as e; s = sys.argv[2]; "
             "e.run(sys.argv[1], steps=None if s == 'default' else int(s), progress=False)")


def _child(args: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of a child process running ``args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def whole_run(experiment: str, steps: int | None, repetitions: int) -> None:
    steps_args = [] if steps is None else ["--steps", str(steps)]
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    runs = {"stagerl run (default hooks)": ([], []),
            "stagerl run --checkpoint-every 0": ([], ["--checkpoint-every", "0"]),
            "no hooks": ([], None)}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repetitions):
            for j, (times, extra) in enumerate(runs.values()):
                if extra is None:
                    args = [sys.executable, "-c", _NO_HOOKS, experiment,
                            "default" if steps is None else str(steps)]
                else:
                    args = [sys.executable, "-m", "stagerl", "run", experiment, *steps_args,
                            *extra, "--logdir", str(Path(tmp) / f"run{i}-{j}")]
                times.append(_child(args, env))
    print(f"\nPart 2: {experiment} ({'its own steps' if steps is None else f'{steps:,} steps'})"
          f", whole process, median of {repetitions} interleaved runs")
    bare = runs["no hooks"][0]
    for i, what in enumerate(("wall", "CPU")):
        b = statistics.median(x[i] for x in bare)
        for label, (times, _) in runs.items():
            h = statistics.median(x[i] for x in times)
            print(f"  {what:>4} s: {label:<34} {h:7.2f} {[round(x[i], 1) for x in times]}"
                  f"  ratio {h / b:.3f} ({(h / b - 1) * 100:+.1f}%)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="dqn-cartpole")
    parser.add_argument("--steps", type=int, default=None, help="default: the experiment's")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--part", choices=["1", "2", "both"], default="both")
    args = parser.parse_args()
    if args.part in ("1", "both"):
        per_step_costs(20_000 if args.quick else 50_000, 3 if args.quick else 5)
    if args.part in ("2", "both"):
        whole_run(args.experiment, args.steps, 2 if args.quick else 4)
    return 0


if __name__ == "__main__":
    sys.exit(main())
