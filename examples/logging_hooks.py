"""Hook-based logging: compose built-in hooks with +, and write a hook of your own.

A hook is a class plus ``push`` methods for the stages it cares about; every other stage is a
no-op. A per-episode hook derives from ``rl.EpisodeHook`` and writes ``on_episode``: it then sees
every finished episode, with its return and length, on one env and on a vector env alike (where
each sub-env's episodes end at their own steps). This script runs a random policy on CartPole-v1
and logs every 25th episode's return, a moving average, the time per step, and a summary when
the run ends.

    python examples/logging_hooks.py          # 20,000 steps, a few seconds
    python examples/logging_hooks.py 2000     # fewer steps (or STAGERL_EXAMPLE_STEPS=2000)
    python examples/logging_hooks.py 2000 4   # the same hooks on a vector env of 4 sub-envs
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
class EpisodeLog(rl.EpisodeHook):
    """Prints one line every ``every`` episodes: the return, length and a moving average."""

    every: int = 10
    window: int = 20
    returns: list[float] = field(default_factory=list)

    def on_episode(self, episode: rl.Episode, policy, env) -> None:
        self.returns.append(episode.total_reward)
        n = len(self.returns)
        if n % self.every == 0:
            recent = self.returns[-self.window :]
            log(
                f"episode {n:5d}  return {episode.total_reward:6.1f}  "
                f"steps {episode.length:4d}  sub-env {episode.lane}  "
                f"mean of last {len(recent)}: {statistics.mean(recent):6.1f}"
            )


def summary(totals: rl.TotalRewardPerEpisode, lengths: rl.StepsPerEpisode, times: rl.TimePerStep):
    """What DoOnExit prints at PostExperiment (also when the run is interrupted)."""

    def print_summary(policy, env):
        finished = len(totals.rewards)
        best = max(totals.rewards, default=float("nan"))
        per_step = statistics.median(times.times) * 1e6 if times.times else float("nan")
        log(
            f"done: {finished} episodes, {sum(lengths.steps)} env steps, best return "
            f"{best:.1f}, median {per_step:.1f} us per act over the last {len(times.times)}"
        )

    return print_summary


def main(steps: int, num_envs: int = 1) -> rl.Hook:
    if num_envs == 1:
        env = rl.GymEnv("CartPole-v1", seed=0)
    else:
        env = rl.GymVectorEnv("CartPole-v1", num_envs=num_envs, seed=0)
    policy = rl.RandomPolicy(rng=0)

    totals, lengths, times = rl.TotalRewardPerEpisode(), rl.StepsPerEpisode(), rl.TimePerStep()
    # DoEveryNSteps counts acts; a vector env's act steps num_envs sub-envs.
    checkpoints = rl.DoEveryNSteps(lambda t, policy, env: log(f"-- {t * num_envs:,} env steps"),
                                   n=max(1, steps // 4 // num_envs))
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
    main(int(sys.argv[1] if len(sys.argv) > 1 else default),
         int(sys.argv[2]) if len(sys.argv) > 2 else 1)
