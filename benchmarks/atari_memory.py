"""Resident memory of an Atari replay (4-frame stacks of 84×84 grey frames), measured: the
replay is allocated and filled, and the process's resident set size read from the kernel.

Two kinds, each in a process of its own (``--library``):

* ``stagerl``: ``dqn-atari``'s trajectory (``make_dqn_trajectory`` with ``stack_size=4``): each
  84×84 ``uint8`` frame stored once in the states' ring (state and next state share it), the
  4-frame stacks cut out of it at sample time; filled through ``Trajectory.push`` with episodes
  of 1,000 steps (as the agent records), then a batch of stacks is sampled;
* ``sb3``: Stable-Baselines3's default ``ReplayBuffer`` for the same transitions (observations
  of 4 stacked frames, ``optimize_memory_usage=False``: ``observations`` and
  ``next_observations``, each ``(n, 1, 4, 84, 84)`` bytes), filled with ``add``. At 1M
  transitions that is 56 GB of frames: on a machine with less memory it is filled only up to
  ``--limit-gb`` of resident memory, and what it reached is printed.

Printed: transitions held, resident memory (VmRSS, from /proc/self/status) and its increase
over the process before the replay, GB per million transitions. The budget: a 1M-transition
replay <= 7.5 GB resident.

Run one side per process, e.g.::

    .venv/bin/python benchmarks/atari_memory.py --library stagerl --transitions 1000000
    .venv/bin/python benchmarks/atari_memory.py --library sb3 --transitions 1000000 --limit-gb 12

Check the free memory first (``free -g``): the stagerl side at 1M needs about 7.5 GB.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

# The repository first, and not this folder: benchmarks/trajectories.py would shadow the package.
HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

BUDGET_GB = 7.5
FRAME = (84, 84)
EPISODE = 1_000


def resident_gb() -> float:
    """The process's resident set size (VmRSS), in GB (1e9 bytes)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e9
    raise RuntimeError("no VmRSS in /proc/self/status")


def frames(n: int, seed: int = 0) -> np.ndarray:
    """``n`` distinct-looking frames to push in turn (a pool, so that filling is quick)."""
    return np.random.default_rng(seed).integers(0, 256, size=(n, *FRAME), dtype=np.uint8)


def fill_stagerl(transitions: int, limit_gb: float) -> tuple[int, float]:
    from stagerl.algorithms.dqn.replay import make_dqn_trajectory

    trajectory = make_dqn_trajectory((np.uint8, FRAME), n_batches=1, batch_size=32,
                                     buffer_size=transitions, train_freq=4,
                                     learning_starts=transitions + 1, stack_size=4, rng=0)
    pool = frames(4096)
    push = trajectory.push
    held = 0
    push(state=pool[0])
    for i in range(1, transitions + 1):
        frame = pool[i % len(pool)]
        if i % EPISODE == 0:  # a new episode: its first state
            push(state=frame)
            continue
        push(state=frame, action=i % 4, reward=1.0, terminal=(i + 1) % EPISODE == 0)
        held += 1
        if i % 100_000 == 0 and resident_gb() > limit_gb:
            break
    batch = trajectory.sample().rows  # stacks cut at sample time
    assert batch["state"].shape == (32, 4, *FRAME) and batch["state"].dtype == np.uint8
    return len(trajectory), resident_gb()  # read while the replay is alive


def fill_sb3(transitions: int, limit_gb: float) -> tuple[int, float]:
    import gymnasium
    from stable_baselines3.common.buffers import ReplayBuffer

    obs_space = gymnasium.spaces.Box(0, 255, (4, *FRAME), np.uint8)
    buffer = ReplayBuffer(transitions, obs_space, gymnasium.spaces.Discrete(4), device="cpu",
                          n_envs=1)
    pool = frames(4096)
    stacks = np.stack([pool[i:i + 4] for i in range(len(pool) - 4)])
    held = 0
    for i in range(transitions):
        obs, next_obs = stacks[i % len(stacks)], stacks[(i + 1) % len(stacks)]
        buffer.add(obs[None], next_obs[None], np.array([i % 4]), np.array([1.0]),
                   np.array([(i + 1) % EPISODE == 0]), [{}])
        held += 1
        if held % 50_000 == 0 and resident_gb() > limit_gb:
            break
    batch = buffer.sample(32)
    assert tuple(batch.observations.shape) == (32, 4, *FRAME)
    return held, resident_gb()  # read while the buffer is alive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", choices=("stagerl", "sb3"), required=True)
    parser.add_argument("--transitions", type=int, default=1_000_000)
    parser.add_argument("--limit-gb", type=float, default=20.0,
                        help="stop filling once the process holds this much (checked every "
                             "50k-100k transitions)")
    parser.add_argument("--check", action="store_true", help="exit 1 above the budget")
    args = parser.parse_args(argv)
    if args.transitions < 1 or not args.limit_gb > 0:
        print("benchmarks/atari_memory.py: --transitions and --limit-gb must be positive",
              file=sys.stderr)
        return 2
    # The library is imported first, so that "the replay" below is the replay alone (torch and
    # the library take a few hundred MB, which a small SB3 buffer's per-million figure would
    # multiply).
    if args.library == "stagerl":
        import stagerl.algorithms.dqn.replay  # noqa: F401
    else:
        import stable_baselines3.common.buffers  # noqa: F401
    before = resident_gb()
    start = time.perf_counter()
    fill = fill_stagerl if args.library == "stagerl" else fill_sb3
    asked = args.transitions
    try:
        held, after = fill(asked, args.limit_gb)
    except MemoryError as error:  # numpy cannot even allocate the buffer
        fits = int(args.limit_gb * 1e9 / (2 * 4 * FRAME[0] * FRAME[1])) // 10_000 * 10_000
        print(f"{args.library}: a buffer of {asked:,} transitions cannot be built here "
              f"({' '.join(str(error).split())[:120]}); measuring one of {fits:,} instead")
        asked = fits
        held, after = fill(asked, args.limit_gb)
    seconds = time.perf_counter() - start
    per_million = (after - before) / held * 1e6
    load = os.getloadavg()
    print(f"{args.library}: {held:,} transitions of 4-frame 84x84 stacks held "
          f"(asked {asked:,}), filled in {seconds:.0f} s; load average "
          f"{load[0]:.2f}")
    print(f"  resident {after:.2f} GB (the replay: {after - before:.2f} GB over the "
          f"{before:.2f} GB of the process with the library imported), {per_million:.2f} GB "
          "per million transitions")
    if args.library == "stagerl":
        print(f"  budget: a 1M-transition replay <= {BUDGET_GB} GB resident")
        return 1 if args.check and held >= 1_000_000 and after > BUDGET_GB else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
