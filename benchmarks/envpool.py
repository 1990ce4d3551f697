"""EnvPool against gymnasium's sync vector env, both behind GymVectorEnv, on Atari with 8 sub-envs.

Both sides are ``make_atari_env(game, num_envs=8, seed=0)`` with the same preprocessing (no-ops,
frame skip 4 max-pooled, 84×84 grey, life loss and reward clipping), a user's defaults otherwise:

* gymnasium: ``backend="gymnasium"``, a ``SyncVectorEnv`` of ale-py envs in this process;
* EnvPool: ``backend="envpool"``, EnvPool's C++ threads (its default thread count).

Each is stepped with ``GymVectorEnv.act`` (what the run loop calls) on the same random actions.
In one process, the two take turns of ``--block`` acts per repetition, so machine noise hits both
alike; printed are the medians over repetitions of env-steps per second (one act is 8 env-steps)
and of the per-repetition ratio, and the load average. Budget: EnvPool >= 2x gymnasium.

Run: ``.venv/bin/python benchmarks/envpool.py [--game ID] [--block N] [--repeats R] [--check]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

# The repository first, and not this folder: this file would shadow the envpool package.
HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

from stagerl.envs.atari import make_atari_env  # noqa: E402

BUDGET = 2.0
NUM_ENVS = 8


def seconds_for(env, actions: np.ndarray) -> float:
    """Seconds for ``len(actions)`` acts of ``env``."""
    act = env.act
    start = time.perf_counter()
    for action in actions:
        act(action)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="PongNoFrameskip-v4")
    parser.add_argument("--block", type=int, default=250, help="acts per turn")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="exit 1 below the budget")
    args = parser.parse_args(argv)
    if args.block < 1 or args.repeats < 1:
        print("benchmarks/envpool.py: --block and --repeats must be positive", file=sys.stderr)
        return 2
    envs = {backend: make_atari_env(args.game, num_envs=NUM_ENVS, seed=0, backend=backend)
            for backend in ("gymnasium", "envpool")}
    rng = np.random.default_rng(0)
    n_actions = envs["gymnasium"].single_action_space.n
    for env in envs.values():
        env.reset()
        seconds_for(env, rng.integers(n_actions, size=(20, NUM_ENVS)))  # warm up
    rates: dict[str, list[float]] = {backend: [] for backend in envs}
    ratios = []
    for _ in range(args.repeats):
        actions = rng.integers(n_actions, size=(args.block, NUM_ENVS))
        for backend, env in envs.items():
            rates[backend].append(args.block * NUM_ENVS / seconds_for(env, actions))
        ratios.append(rates["envpool"][-1] / rates["gymnasium"][-1])
    load = os.getloadavg()
    ratio = statistics.median(ratios)
    print(f"{args.game}, {NUM_ENVS} sub-envs, {args.repeats} turns of {args.block} acts each, "
          f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for backend, values in rates.items():
        print(f"  {backend:9s} {statistics.median(values):9.0f} env-steps/s (median)")
    print(f"  EnvPool / gymnasium: {ratio:.2f}x (median of per-turn ratios; budget >= {BUDGET}x)")
    return 1 if args.check and ratio < BUDGET else 0


if __name__ == "__main__":
    sys.exit(main())
