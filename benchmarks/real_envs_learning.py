"""Learning on real envs against Stable-Baselines3 at the same steps and seeds: ``ppo-atari`` on
Breakout with a budget a 2-core CPU trains in about 30 minutes, ``sac-halfcheetah`` at 50k steps.

Each side trains in a process of its own, one run after the other (never two at once), with the
experiment's settings (RL-Zoo's) on both sides and the same seed; then both are evaluated the
same way: ``--episodes`` deterministic episodes of the evaluation env (Atari: whole games, the
game's own score, no reward clipping; HalfCheetah: 1,000 steps), printed with the training time.

Run (long; run these one at a time, on a machine that is otherwise idle if the times matter)::

    .venv/bin/python benchmarks/real_envs_learning.py sac-halfcheetah [--steps 50000]
    .venv/bin/python benchmarks/real_envs_learning.py ppo-atari [--steps 200000]
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

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

STEPS = {"sac-halfcheetah": 50_000, "ppo-atari": 200_000}
GAME = "BreakoutNoFrameskip-v4"


def stagerl_run(name: str, steps: int, seed: int, episodes: int) -> dict:
    import stagerl as rl
    from stagerl.experiments import get_experiment
    from stagerl.experiments.registry import make_eval_env
    from stagerl.experiments.runner import prepare
    from stagerl.experiments.settings import torch_threads

    prepared = prepare(name, steps=steps, seed=seed, device="cpu", progress=False)
    with torch_threads(prepared.config.torch_threads, "cpu"):
        start = time.perf_counter()
        rl.run(prepared.agent, prepared.env, rl.StopAfterNSteps(steps, progress=False))
        seconds = time.perf_counter() - start
        eval_env = make_eval_env(get_experiment(name), prepared.config, seed + 10_000)
        returns = rl.evaluate(prepared.agent, eval_env, episodes)
    return {"seconds": seconds, "returns": returns}


def sb3_run(name: str, steps: int, seed: int, episodes: int) -> dict:
    import gymnasium
    from stable_baselines3 import PPO, SAC

    if name == "sac-halfcheetah":
        model = SAC("MlpPolicy", "HalfCheetah-v5", learning_starts=10_000, seed=seed,
                    device="cpu")
        eval_env = gymnasium.make("HalfCheetah-v5")
        stack = None
    else:
        import ale_py
        from stable_baselines3.common.env_util import make_atari_env
        from stable_baselines3.common.vec_env import VecFrameStack

        from stagerl.envs.atari_wrappers import wrap_atari

        gymnasium.register_envs(ale_py)
        env = VecFrameStack(make_atari_env(GAME, n_envs=8, seed=seed), n_stack=4)
        model = PPO("CnnPolicy", env, n_steps=128, n_epochs=4, batch_size=256,
                    learning_rate=lambda p: p * 2.5e-4, clip_range=lambda p: p * 0.1,
                    vf_coef=0.5, ent_coef=0.01, seed=seed, device="cpu")
        # Evaluated as stagerl's runs are: whole games, the game's own score.
        eval_env = wrap_atari(gymnasium.make(GAME, frameskip=1), training=False)
        stack = 4
    start = time.perf_counter()
    model.learn(steps)
    seconds = time.perf_counter() - start
    returns = []
    for episode in range(episodes):
        obs, _ = eval_env.reset(seed=seed + 10_000 + episode)
        frames = [obs] * stack if stack else None
        total, done = 0.0, False
        while not done:
            x = np.stack(frames) if stack else obs
            action, _ = model.predict(x, deterministic=True)
            obs, reward, terminated, truncated, _ = eval_env.step(action)
            if stack:
                frames = frames[1:] + [obs]
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return {"seconds": seconds, "returns": returns}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", choices=sorted(STEPS))
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--side", choices=("stagerl", "sb3"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    steps = args.steps or STEPS[args.experiment]
    if steps < 1 or args.episodes < 1 or args.seed < 0:
        print("benchmarks/real_envs_learning.py: --steps and --episodes must be positive, "
              "--seed at least 0", file=sys.stderr)
        return 2
    if args.side is not None:
        run = stagerl_run if args.side == "stagerl" else sb3_run
        print(json.dumps(run(args.experiment, steps, args.seed, args.episodes)))
        return 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(HERE.parent)] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    print(f"{args.experiment}: {steps:,} env steps, seed {args.seed}, {args.episodes} "
          f"evaluation episodes, {os.cpu_count()} cores")
    for side in ("stagerl", "sb3"):
        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), args.experiment,
                              "--steps", str(steps), "--seed", str(args.seed), "--episodes",
                              str(args.episodes), "--side", side], capture_output=True,
                             text=True, env=env, check=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        returns = result["returns"]
        load = os.getloadavg()
        print(f"  {side:8s} return {statistics.fmean(returns):8.1f} ± "
              f"{statistics.pstdev(returns):.1f}, trained in {result['seconds'] / 60:.1f} min "
              f"(load average {load[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
