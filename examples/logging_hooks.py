"""Hook-based logging: compose built-in hooks with +, and write a hook of your own.

A hook is a class plus ``push`` methods for the stages it cares about; every other stage is a
no-op. This script runs a random policy on CartPole-v1 and logs every 25th episode's return,
a moving average, the time per step, and a summary when the run ends.

    python examples/logging_hooks.py          # 20,000 steps, a few seconds
    python examples/logging_hooks.py 2000     # fewer steps (or STAGERL_EXAMPLE_STEPS=2000)
"""

from __future__ import annotations

import os
import statistics
import sys
from dataclasses import dataclass, field

from tqdm.auto import tqdm

import stagerl as rl


def log(line: str) -> None:
    tqdm.write(line)  # keeps StopAfterNSteps's progress bar below the log lines


@dataclass
class EpisodeLog(rl.Hook):
    """Prints one line every ``every`` episodes: the return, length and a moving average."""

    every: int = 10
    window: int = 20
    returns: list[float] = field(default_factory=list)
    episode_return: float = 0.0
    episode_steps: int = 0


@rl.push.dispatch
def log_step(hook: EpisodeLog, stage: rl.PostActStage, policy, env):
    hook.episode_return += env.reward
    hook.episode_steps += 1


@rl.push.dispatch
def log_episode(hook: EpisodeLog, stage: rl.PostEpisodeStage, policy, env):
    hook.returns.append(hook.episode_return)
    episode = len(hook.returns)
    if episode % hook.every == 0:
        recent = hook.returns[-hook.window :]
        log(
            f"episode {episode:5d}  return {hook.episode_return:6.1f}  "
            f"steps {hook.episode_steps:4d}  "
            f"mean of last {len(recent)}: {statistics.mean(recent):6.1f}"
        )
    hook.episode_return, hook.episode_steps = 0.0, 0


def summary(totals: rl.TotalRewardPerEpisode, lengths: rl.StepsPerEpisode, times: rl.TimePerStep):
    """What DoOnExit prints at PostExperiment (also when the run is interrupted)."""

    def print_summary(policy, env):
        finished = len(totals.rewards)
        best = max(totals.rewards, default=float("nan"))
        per_step = statistics.median(times.times) * 1e6 if times.times else float("nan")
        log(
            f"done: {finished} episodes, {sum(lengths.steps) + lengths.count} steps, best return "
            f"{best:.1f}, median {per_step:.1f} us per step over the last {len(times.times)}"
        )

    return print_summary


def main(steps: int) -> rl.Hook:
    env = rl.GymEnv("CartPole-v1", seed=0)
    policy = rl.RandomPolicy(rng=0)

    totals, lengths, times = rl.TotalRewardPerEpisode(), rl.StepsPerEpisode(), rl.TimePerStep()
    checkpoints = rl.DoEveryNSteps(lambda t, policy, env: log(f"-- {t:,} steps"), n=steps // 4 or 1)
    hook = (
        totals
        + lengths
        + times
        + EpisodeLog(every=25)
        + checkpoints
        + rl.DoOnExit(summary(totals, lengths, times))
    )
    rl.run(policy, env, rl.StopAfterNSteps(steps), hook)
    return hook


if __name__ == "__main__":
    default = os.environ.get("STAGERL_EXAMPLE_STEPS", 20_000)
    main(int(sys.argv[1] if len(sys.argv) > 1 else default))
