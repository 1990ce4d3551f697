"""Trajectory push / bulk insert / sample, side by side with a hand-written numpy ring, SB3's
ReplayBuffer and TorchRL's ReplayBuffer(LazyTensorStorage).

Run: .venv/bin/python benchmarks/trajectories.py   (under a minute; SB3 and TorchRL rows are
skipped when they are not installed).

CartPole-shaped transitions (state float32[4], action int64, reward float32, terminal bool,
episodes of 22 steps) in capacity-100k buffers. The contenders run round-robin, one block of
calls each per round, so that a busy machine slows them alike; figures are medians over rounds.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trajectories import BatchSampler, CircularArraySARTSTraces, Trajectory  # noqa: E402

CAPACITY = 100_000
BATCH = 256
ROUNDS = 9
EPISODE_LEN = 22  # a random CartPole policy's typical episode


def transitions(n, seed=0):
    rng = np.random.default_rng(seed)
    states = rng.standard_normal((n + 1, 4)).astype(np.float32)
    actions = rng.integers(2, size=n)
    rewards = np.ones(n, dtype=np.float32)
    terminals = np.zeros(n, dtype=bool)
    terminals[EPISODE_LEN - 1 :: EPISODE_LEN] = True
    return states, actions, rewards, terminals


def cartpole_traces(capacity):
    return CircularArraySARTSTraces(capacity=capacity, state=(np.float32, (4,)),
                                    action=(np.int64, ()), reward=(np.float32, ()),
                                    terminal=(np.bool_, ()))


# -- contenders: each case is (name, calls per round, setup() -> fn) ---------------------------
class NumpyRing:
    """The floor: five preallocated arrays (next states stored apart), a position, a flag."""

    def __init__(self, capacity):
        self.s = np.zeros((capacity, 4), np.float32)
        self.s2 = np.zeros((capacity, 4), np.float32)
        self.a = np.zeros(capacity, np.int64)
        self.r = np.zeros(capacity, np.float32)
        self.d = np.zeros(capacity, bool)
        self.capacity, self.pos, self.full = capacity, 0, False
        self.rng = np.random.default_rng(0)

    def push(self, s, a, r, s2, d):
        p = self.pos
        self.s[p], self.a[p], self.r[p], self.s2[p], self.d[p] = s, a, r, s2, d
        self.pos = (p + 1) % self.capacity
        self.full = self.full or self.pos == 0

    def sample(self, batch_size):
        idx = self.rng.integers(self.capacity if self.full else self.pos, size=batch_size)
        return {"state": self.s[idx], "action": self.a[idx], "reward": self.r[idx],
                "next_state": self.s2[idx], "terminal": self.d[idx]}


def ring_cases(data):
    states, actions, rewards, terminals = data
    ring = NumpyRing(CAPACITY)
    for k in range(CAPACITY):
        ring.push(states[k], actions[k], rewards[k], states[k + 1], terminals[k])
    counter = iter(range(10**9))

    def push():
        k = next(counter) % CAPACITY
        ring.push(states[k], actions[k], rewards[k], states[k + 1], terminals[k])

    return {"ring push": (20_000, push), "ring sample": (1_000, lambda: ring.sample(BATCH))}


def agent_pusher(trajectory, data, start=0):
    """One transition per call, and a new episode's first state after a terminal (the Agent's
    PostActStage / PreEpisodeStage pushes)."""
    states, actions, rewards, terminals = data
    n = len(actions)
    counter = iter(range(start, 10**9))

    def push():
        k = next(counter) % n
        trajectory.push(state=states[k + 1], action=actions[k], reward=rewards[k],
                        terminal=terminals[k])
        if terminals[k]:
            trajectory.push(state=states[k + 1])

    return push


def filled_trajectory(data, n):
    """A capacity-100k trajectory after ``n`` transitions, inserted one episode at a time."""
    states, actions, rewards, terminals = data
    trajectory = Trajectory(cartpole_traces(CAPACITY))
    for k in range(0, n, EPISODE_LEN):
        m = min(EPISODE_LEN, n - k)
        trajectory.extend(state=states[k : k + m + 1], action=actions[k : k + m],
                          reward=rewards[k : k + m], terminal=terminals[k : k + m])
    return trajectory


def stagerl_cases(data):
    states, actions, rewards, terminals = data
    full = filled_trajectory(data, CAPACITY + 1_000)
    sampler = BatchSampler(BATCH, rng=0)
    small = {}

    def fresh_small():  # each round pushes 1,000 steps onto a trajectory holding ~1,000
        small["push"] = push = agent_pusher(filled_trajectory(data, 950), data, start=950)
        for _ in range(50):  # across two episode starts: the per-layout push plans get built
            push()

    chunk = 1_000
    counter = iter(range(10**9))

    def extend():  # 1,000 steps continuing the current episode, in one call
        k = (next(counter) * chunk) % (len(actions) - chunk)
        full.extend(new_episode=False, state=states[k + 1 : k + chunk + 1],
                    action=actions[k : k + chunk], reward=rewards[k : k + chunk],
                    terminal=terminals[k : k + chunk])

    return {"stagerl push @100k": (20_000, agent_pusher(full, data, start=CAPACITY + 1_000)),
            "stagerl push @1k": (1_000, lambda: small["push"](), fresh_small),
            "stagerl sample": (1_000, lambda: sampler.sample(full.container)),
            "stagerl extend 1k": (100, extend)}


def sb3_cases(data):
    try:
        from gymnasium import spaces
        from stable_baselines3.common.buffers import ReplayBuffer
    except ImportError:
        return {}
    states, actions, rewards, terminals = data
    buf = ReplayBuffer(CAPACITY, spaces.Box(-np.inf, np.inf, (4,), np.float32),
                       spaces.Discrete(2), device="cpu", handle_timeout_termination=False)
    infos = [{}]
    counter = iter(range(10**9))

    def add():
        k = next(counter) % CAPACITY
        buf.add(states[k], states[k + 1], actions[k : k + 1], rewards[k : k + 1],
                terminals[k : k + 1], infos)

    for _ in range(CAPACITY):
        add()
    return {"sb3 add": (5_000, add), "sb3 sample": (500, lambda: buf.sample(BATCH))}


def torchrl_cases(data):
    try:
        import torch
        from tensordict import TensorDict
        from torchrl.data import LazyTensorStorage, ReplayBuffer
    except ImportError:
        return {}
    import logging

    logging.getLogger("torchrl").setLevel(logging.WARNING)
    states, actions, rewards, terminals = data
    td = TensorDict({"state": torch.from_numpy(states[:CAPACITY]),
                     "next_state": torch.from_numpy(states[1 : CAPACITY + 1]),
                     "action": torch.from_numpy(actions[:CAPACITY]),
                     "reward": torch.from_numpy(rewards[:CAPACITY]),
                     "terminal": torch.from_numpy(terminals[:CAPACITY])}, batch_size=[CAPACITY])
    rb = ReplayBuffer(storage=LazyTensorStorage(CAPACITY), batch_size=BATCH)
    rb.extend(td)
    steps = [td[k] for k in range(256)]  # one-transition TensorDicts, built outside the timing
    counter = iter(range(10**9))
    return {"torchrl add": (300, lambda: rb.add(steps[next(counter) % 256])),
            "torchrl sample": (300, rb.sample)}


def run_round_robin(cases):
    times = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, (calls, fn, *setup) in cases.items():
            for prepare in setup:
                prepare()
            gc.disable()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - t0) / calls * 1e6)
            gc.enable()
    return {name: statistics.median(ts) for name, ts in times.items()}


# -- memory ------------------------------------------------------------------------------------
def memory_1m_mib():
    """MiB that a capacity-1M CartPole SARTS trajectory holding 1M transitions allocates."""
    n = 1_000_000
    states, actions, rewards, terminals = transitions(n, seed=1)
    gc.collect()
    tracemalloc.start()
    trajectory = Trajectory(cartpole_traces(n))
    trajectory.extend(state=states, action=actions, reward=rewards, terminal=terminals)
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del trajectory
    return current / 2**20


def sb3_memory_1m_mib():
    try:
        from gymnasium import spaces
        from stable_baselines3.common.buffers import ReplayBuffer
    except ImportError:
        return None
    buf = ReplayBuffer(1_000_000, spaces.Box(-np.inf, np.inf, (4,), np.float32),
                       spaces.Discrete(2), device="cpu")
    return sum(v.nbytes for v in vars(buf).values() if isinstance(v, np.ndarray)) / 2**20


def main():
    t0 = time.perf_counter()
    data = transitions(2 * CAPACITY)
    cases = {}
    for make in (ring_cases, stagerl_cases, sb3_cases, torchrl_cases):
        cases.update(make(data))
    us = run_round_robin(cases)
    mem, sb3_mem = memory_1m_mib(), sb3_memory_1m_mib()

    print(f"CartPole SARTS transitions, capacity {CAPACITY:,}, batch {BATCH}; medians of "
          f"{ROUNDS} interleaved rounds\n")
    print(f"{'':26}{'push / add (us)':>16}{'sample 256 (us)':>17}")
    rows = [("hand-written numpy ring", "ring push", "ring sample"),
            ("stagerl Trajectory", "stagerl push @100k", "stagerl sample"),
            ("SB3 ReplayBuffer", "sb3 add", "sb3 sample"),
            ("TorchRL ReplayBuffer", "torchrl add", "torchrl sample")]
    for label, push, sample in rows:
        if push in us:
            print(f"{label:26}{us[push]:>16.2f}{us[sample]:>17.2f}")
        else:
            print(f"{label:26}{'not installed':>16}")
    print(f"\nstagerl push, 1k stored        {us['stagerl push @1k']:9.2f} us")
    print(f"stagerl push, 100k stored      {us['stagerl push @100k']:9.2f} us")
    print(f"stagerl extend, 1,000 steps    {us['stagerl extend 1k']:9.1f} us "
          f"({us['stagerl extend 1k'] / 1000:.3f} us a step)")
    print(f"memory, 1M CartPole SARTS trajectory: {mem:.1f} MiB (states stored once; raw "
          f"transitions {(4 * 4 + 8 + 4 + 1) * 1e6 / 2**20:.1f} MiB"
          + (f"; SB3 ReplayBuffer(1M) arrays {sb3_mem:.1f} MiB)" if sb3_mem else ")"))

    s = us["stagerl sample"]
    checks = [("stagerl sample / ring sample", s / us["ring sample"], "<=", 1.5),
              ("stagerl push / ring push", us["stagerl push @100k"] / us["ring push"], "<=", 4.0)]
    if "sb3 sample" in us:
        checks.append(("SB3 sample / stagerl sample", us["sb3 sample"] / s, ">=", 1.8))
    if "torchrl sample" in us:
        checks.append(("TorchRL sample / stagerl sample", us["torchrl sample"] / s, ">=", 1.8))
    print("\nbudgets")
    for label, ratio, op, bound in checks:
        met = ratio <= bound if op == "<=" else ratio >= bound
        print(f"  {label:34}{ratio:6.2f}  ({op} {bound})  {'met' if met else 'NOT MET'}")
    print(f"  {'push at 100k / push at 1k':34}"
          f"{us['stagerl push @100k'] / us['stagerl push @1k']:6.2f}  (reported)")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
