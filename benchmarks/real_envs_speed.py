"""Training speed of ``dqn-atari``, ``ppo-atari`` and ``sac-halfcheetah`` against
Stable-Baselines3 at the same settings: env-steps per second of ``learn``, side by side.

Each side runs in a fresh process with a user's defaults (stagerl: the named experiment as
``stagerl run`` builds it; SB3: its own helpers), torch on the same number of threads on both
sides (``--threads``, default 1: the experiments' own ``torch_threads``), the two sides in turn
for ``--repeats`` rounds; printed are the medians
of env-steps per second and of the per-round ratio, and the load average. Only training is timed
(making the env and the agent, and the final evaluation, are not).

The settings are the experiment's (RL-Zoo's) with ``learning_starts`` lowered on both sides so
that a short run spends most of its steps learning:

* ``dqn-atari``: Breakout, the Nature CNN over 4 stacked frames, one gradient step of 32 every 4
  env steps; SB3: ``make_atari_env`` + ``VecFrameStack(4)`` + ``DQN("CnnPolicy")``;
* ``ppo-atari``: 8 sub-envs, rollouts of 128, 4 epochs of minibatches of 256; SB3: the same with
  ``PPO("CnnPolicy")``;
* ``sac-halfcheetah``: ``SAC("MlpPolicy")`` on ``HalfCheetah-v5``.

Budgets (stagerl / SB3): dqn-atari and ppo-atari >= 1.3x, sac-halfcheetah >= 1.5x.

Run: ``.venv/bin/python benchmarks/real_envs_speed.py dqn-atari [--steps N] [--repeats R]``
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

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

BUDGETS = {"dqn-atari": 1.3, "ppo-atari": 1.3, "sac-halfcheetah": 1.5}
#: The settings both sides share, beyond the experiment's own (learning sooner).
SHARED = {
    "dqn-atari": {"learning_starts": 1_000},
    "ppo-atari": {},
    "sac-halfcheetah": {"learning_starts": 1_000},
}
STEPS = {"dqn-atari": 6_000, "ppo-atari": 8 * 128 * 3, "sac-halfcheetah": 3_000}
GAME = "BreakoutNoFrameskip-v4"


def stagerl_rate(name: str, steps: int, threads: int = 1) -> float:
    import stagerl as rl
    from stagerl.experiments.runner import prepare
    from stagerl.experiments.settings import torch_threads

    prepared = prepare(name, steps=steps, seed=0, device="cpu", progress=False,
                       overrides={**SHARED[name], "torch_threads": threads})
    agent, env = prepared.agent, prepared.env
    with torch_threads(prepared.config.torch_threads, "cpu"):
        start = time.perf_counter()
        rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
        return steps / (time.perf_counter() - start)


def sb3_rate(name: str, steps: int, threads: int = 1) -> float:
    import torch
    from stable_baselines3 import DQN, PPO, SAC

    torch.set_num_threads(threads)
    settings = SHARED[name]
    if name == "sac-halfcheetah":
        model = SAC("MlpPolicy", "HalfCheetah-v5", learning_starts=settings["learning_starts"],
                    seed=0, device="cpu")
    else:
        import ale_py
        import gymnasium
        from stable_baselines3.common.env_util import make_atari_env
        from stable_baselines3.common.vec_env import VecFrameStack

        gymnasium.register_envs(ale_py)
        n_envs = 8 if name == "ppo-atari" else 1
        env = VecFrameStack(make_atari_env(GAME, n_envs=n_envs, seed=0), n_stack=4)
        if name == "dqn-atari":
            model = DQN("CnnPolicy", env, buffer_size=100_000, learning_rate=1e-4,
                        batch_size=32, learning_starts=settings["learning_starts"],
                        target_update_interval=1_000, train_freq=4, gradient_steps=1,
                        exploration_fraction=0.1, exploration_final_eps=0.01, seed=0,
                        device="cpu")
        else:
            def linear(value):
                return lambda progress: progress * value

            model = PPO("CnnPolicy", env, n_steps=128, n_epochs=4, batch_size=256,
                        learning_rate=linear(2.5e-4), clip_range=linear(0.1), vf_coef=0.5,
                        ent_coef=0.01, seed=0, device="cpu")
    start = time.perf_counter()
    model.learn(steps)
    return steps / (time.perf_counter() - start)


def one_side(side: str, name: str, steps: int, threads: int) -> int:
    rate = (stagerl_rate if side == "stagerl" else sb3_rate)(name, steps, threads)
    print(json.dumps({"side": side, "rate": rate}))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", choices=sorted(BUDGETS))
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads on both sides (default 1)")
    parser.add_argument("--side", choices=("stagerl", "sb3"), help=argparse.SUPPRESS)
    parser.add_argument("--check", action="store_true", help="exit 1 below the budget")
    args = parser.parse_args(argv)
    steps = args.steps or STEPS[args.experiment]
    if steps < 1 or args.repeats < 1 or args.threads < 1:
        print("benchmarks/real_envs_speed.py: --steps, --repeats and --threads must be positive",
              file=sys.stderr)
        return 2
    if args.side is not None:
        return one_side(args.side, args.experiment, steps, args.threads)
    rates: dict[str, list[float]] = {"stagerl": [], "sb3": []}
    ratios = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(HERE.parent)] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    for _ in range(args.repeats):
        for side in ("stagerl", "sb3"):
            out = subprocess.run([sys.executable, str(Path(__file__).resolve()),
                                  args.experiment, "--steps", str(steps), "--side", side,
                                  "--threads", str(args.threads)],
                                 capture_output=True, text=True, env=env, check=True).stdout
            rates[side].append(json.loads(out.strip().splitlines()[-1])["rate"])
        ratios.append(rates["stagerl"][-1] / rates["sb3"][-1])
    load = os.getloadavg()
    ratio = statistics.median(ratios)
    print(f"{args.experiment}: {steps:,} env steps of training a run, {args.repeats} rounds, "
          f"fresh processes, torch on {args.threads} thread(s) both sides, "
          f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}")
    for side, values in rates.items():
        print(f"  {side:8s} {statistics.median(values):8.0f} env-steps/s (median; "
              f"{', '.join(f'{v:.0f}' for v in values)})")
    budget = BUDGETS[args.experiment]
    print(f"  stagerl / SB3: {ratio:.2f}x (median of per-round ratios; budget >= {budget}x)")
    return 1 if args.check and ratio < budget else 0


if __name__ == "__main__":
    sys.exit(main())
