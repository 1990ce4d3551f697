"""Checkpoint size and time: the DQN CartPole agent with 100,000 transitions in its replay.

Saves the Agent (policy, optimiser, target network, the full replay ring) with
``stagerl.checkpoints.save`` and loads it back, interleaved with two references on the same
agent: ``pickle.dumps`` of the whole agent written to a file (what a pickled checkpoint costs,
but unsafe to load) and ``torch.save`` of its ``state_dict()`` (weights only, no replay).
Medians of ``--repeats`` rounds. Run it alone (other work on the machine changes the figures)::

    flock /tmp/stagerl-timing.lock .venv/bin/python benchmarks/checkpoints.py
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

# The repository first: this folder's trajectories.py would shadow the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import stagerl as rl  # noqa: E402
from stagerl.checkpoints import load, save  # noqa: E402
from stagerl.experiments.registry import configure  # noqa: E402
from stagerl.experiments.registry import get_experiment as load_experiment  # noqa: E402

TRANSITIONS = 100_000


def filled_agent(transitions: int) -> rl.Agent:
    """dqn-cartpole's agent (RL-Zoo settings) after ``transitions`` steps without learning."""
    experiment = load_experiment("dqn-cartpole")
    config = configure("dqn-cartpole", steps=transitions, buffer_size=transitions,
                       learning_starts=10 * transitions)
    torch.manual_seed(0)
    env = experiment.make_env(config, 0)
    agent = experiment.make_agent(config, env, 0, torch.device("cpu"))
    rl.run(agent, env, rl.StopAfterNSteps(transitions + 1, progress=False))
    return agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=TRANSITIONS)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    agent = filled_agent(args.transitions)
    assert len(agent.trajectory) == args.transitions, len(agent.trajectory)
    times: dict[str, list[float]] = {"save": [], "load": [], "pickle": [], "state_dict": []}
    sizes: dict[str, int] = {}
    root = Path(tempfile.mkdtemp())
    try:
        for i in range(args.repeats):
            path = root / f"checkpoint-{i}"
            start = time.perf_counter()
            save(agent, path)
            times["save"].append(time.perf_counter() - start)
            start = time.perf_counter()
            loaded = load(path)
            times["load"].append(time.perf_counter() - start)
            assert len(loaded.trajectory) == args.transitions
            start = time.perf_counter()
            (root / f"agent-{i}.pkl").write_bytes(pickle.dumps(agent, protocol=5))
            times["pickle"].append(time.perf_counter() - start)
            start = time.perf_counter()
            torch.save(agent.state_dict(), root / f"weights-{i}.pt")
            times["state_dict"].append(time.perf_counter() - start)
        for name in ("manifest.json", "objects.json", "tensors.pt"):
            sizes[name] = (root / "checkpoint-0" / name).stat().st_size
        sizes["pickle"] = (root / "agent-0.pkl").stat().st_size
        sizes["state_dict"] = (root / "weights-0.pt").stat().st_size
    finally:
        shutil.rmtree(root)
    total = sizes["manifest.json"] + sizes["objects.json"] + sizes["tensors.pt"]
    print(f"DQN CartPole agent, {args.transitions:,} transitions in the replay, torch "
          f"{torch.__version__}, medians of {args.repeats}")
    rows = [
        ("stagerl.checkpoints.save", times["save"], total),
        ("stagerl.checkpoints.load", times["load"], None),
        ("pickle.dumps + write (reference)", times["pickle"], sizes["pickle"]),
        ("torch.save(state_dict) (weights only)", times["state_dict"], sizes["state_dict"]),
    ]
    for label, seconds, size in rows:
        size_text = "" if size is None else f"{size / 2**20:8.2f} MiB"
        print(f"  {label:40s} {statistics.median(seconds) * 1000:8.1f} ms  {size_text}")
    print("  files: " + ", ".join(f"{n} {sizes[n]:,} B" for n in
                                  ("manifest.json", "objects.json", "tensors.pt")))


if __name__ == "__main__":
    main()
