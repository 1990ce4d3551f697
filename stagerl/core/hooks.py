"""The built-in hooks (DESIGN §6). Their fields are the metrics they record.

Each hook defines ``push(hook, stage, policy, env)`` only for the stages it uses; every other stage
falls back to a no-op, which ``run`` resolves once and then skips.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stagerl.core.dispatch import push
from stagerl.core.hooks_base import ComposedHook, Hook
from stagerl.core.stages import (
    PostActStage,
    PostEpisodeStage,
    PostExperimentStage,
    PreEpisodeStage,
    Stage,
)

__all__ = [
    "Hook",
    "ComposedHook",
    "EmptyHook",
    "StepsPerEpisode",
    "RewardsPerEpisode",
    "TotalRewardPerEpisode",
    "TimePerStep",
    "DoEveryNSteps",
    "DoEveryNEpisodes",
    "DoOnExit",
]


def _require_positive_int(owner: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(
            f"{owner} needs an integer {name}, got {name}={value!r} of type {type(value).__name__}"
        )
    if value <= 0:
        raise ValueError(f"{owner} needs a positive {name}, got {name}={value!r}")


def _require_callable(owner: str, f: Any, signature: str) -> None:
    if not callable(f):
        raise TypeError(f"{owner} needs a function f{signature}, got f={f!r}")


@dataclass
class EmptyHook(Hook):
    """Records nothing; the default hook of ``run``.

    Example:
        >>> import stagerl as rl
        >>> rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D())
        EmptyHook()
    """


@dataclass
class StepsPerEpisode(Hook):
    """``count += 1`` at each PostAct; at PostEpisode appends ``count`` to ``steps`` and resets it.

    Example:
        >>> import stagerl as rl
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...               rl.StopAfterNEpisodes(2, progress=False), rl.StepsPerEpisode())
        >>> len(hook.steps), all(n >= 3 for n in hook.steps)
        (2, True)
    """

    steps: list[int] = field(default_factory=list)
    count: int = 0


@push.dispatch
def _push_steps_per_episode_post_act(hook: StepsPerEpisode, stage: PostActStage, policy, env):
    hook.count += 1


@push.dispatch
def _push_steps_per_episode_post_episode(
    hook: StepsPerEpisode, stage: PostEpisodeStage, policy, env
):
    hook.steps.append(hook.count)
    hook.count = 0


@dataclass
class RewardsPerEpisode(Hook):
    """Starts a new list at PreEpisode and appends ``env.reward`` at each PostAct.

    ``rewards`` is a list of lists, one per episode (the last one is the episode running).

    Example:
        >>> import stagerl as rl
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), hook=rl.RewardsPerEpisode())
        >>> len(hook.rewards), abs(hook.rewards[0][-1])
        (1, 1.0)
    """

    rewards: list[list[Any]] = field(default_factory=list)


@push.dispatch
def _push_rewards_per_episode_pre_episode(
    hook: RewardsPerEpisode, stage: PreEpisodeStage, policy, env
):
    hook.rewards.append([])


@push.dispatch
def _push_rewards_per_episode_post_act(hook: RewardsPerEpisode, stage: PostActStage, policy, env):
    if not hook.rewards:  # pushed by hand without a PreEpisode first
        hook.rewards.append([])
    hook.rewards[-1].append(env.reward)


@dataclass
class TotalRewardPerEpisode(Hook):
    """Sums ``env.reward`` at each PostAct into ``reward``; at PostEpisode appends it to
    ``rewards`` and starts again from zero.

    Example:
        >>> import stagerl as rl
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...               rl.StopAfterNEpisodes(3, progress=False), rl.TotalRewardPerEpisode())
        >>> len(hook.rewards), all(r in (-1.0, 1.0) for r in hook.rewards)
        (3, True)
    """

    rewards: list[Any] = field(default_factory=list)
    reward: Any = 0.0


@push.dispatch
def _push_total_reward_post_act(hook: TotalRewardPerEpisode, stage: PostActStage, policy, env):
    hook.reward += env.reward


@push.dispatch
def _push_total_reward_post_episode(
    hook: TotalRewardPerEpisode, stage: PostEpisodeStage, policy, env
):
    hook.rewards.append(hook.reward)
    hook.reward = 0.0


@dataclass
class TimePerStep(Hook):
    """Seconds between consecutive PostActs (the first one: since construction) in ``times``,
    keeping the last ``max_steps``.

    Example:
        >>> import stagerl as rl
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...               rl.StopAfterNSteps(150, progress=False), rl.TimePerStep())
        >>> len(hook.times), all(t >= 0 for t in hook.times)
        (100, True)
    """

    max_steps: int = 100
    times: list[float] = field(default_factory=list)
    t: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        _require_positive_int("TimePerStep", "max_steps", self.max_steps)


@push.dispatch
def _push_time_per_step_post_act(hook: TimePerStep, stage: PostActStage, policy, env):
    now = time.perf_counter()
    hook.times.append(now - hook.t)
    hook.t = now
    if len(hook.times) > hook.max_steps:
        del hook.times[0]  # at most max_steps (100) entries: cheaper than a deque's list copy


@dataclass
class DoEveryNSteps(Hook):
    """``t += 1`` at each PostAct; whenever ``t % n == 0`` calls ``f(t, policy, env)``.

    Example:
        >>> import stagerl as rl
        >>> seen = []
        >>> hook = rl.DoEveryNSteps(lambda t, policy, env: seen.append(t), n=2)
        >>> _ = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...            rl.StopAfterNSteps(7, progress=False), hook)
        >>> seen
        [2, 4, 6]
    """

    f: Callable[[int, Any, Any], Any]
    n: int = 1
    t: int = 0

    def __post_init__(self) -> None:
        _require_callable("DoEveryNSteps", self.f, "(t, policy, env)")
        _require_positive_int("DoEveryNSteps", "n", self.n)


@push.dispatch
def _push_do_every_n_steps_post_act(hook: DoEveryNSteps, stage: PostActStage, policy, env):
    hook.t += 1
    if hook.t % hook.n == 0:
        hook.f(hook.t, policy, env)


@dataclass
class DoEveryNEpisodes(Hook):
    """Counts episodes at ``stage`` (PreEpisode or PostEpisode, a class or an instance):
    ``t += 1``, and whenever ``t % n == 0`` calls ``f(t, policy, env)``.

    Example:
        >>> import stagerl as rl
        >>> seen = []
        >>> hook = rl.DoEveryNEpisodes(lambda t, policy, env: seen.append(t), n=2)
        >>> _ = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...            rl.StopAfterNEpisodes(5, progress=False), hook)
        >>> seen
        [2, 4]
    """

    f: Callable[[int, Any, Any], Any]
    n: int = 1
    stage: type[Stage] = PostEpisodeStage
    t: int = 0

    def __post_init__(self) -> None:
        _require_callable("DoEveryNEpisodes", self.f, "(t, policy, env)")
        _require_positive_int("DoEveryNEpisodes", "n", self.n)
        stage = self.stage if isinstance(self.stage, type) else type(self.stage)
        if not issubclass(stage, (PreEpisodeStage, PostEpisodeStage)):
            raise ValueError(
                f"DoEveryNEpisodes counts episodes at PreEpisodeStage or PostEpisodeStage, got "
                f"stage={self.stage!r}"
            )
        self.stage = stage


def _count_episode(hook: DoEveryNEpisodes, stage: Stage, policy: Any, env: Any) -> None:
    if isinstance(stage, hook.stage):
        hook.t += 1
        if hook.t % hook.n == 0:
            hook.f(hook.t, policy, env)


@push.dispatch
def _push_do_every_n_episodes_pre(hook: DoEveryNEpisodes, stage: PreEpisodeStage, policy, env):
    _count_episode(hook, stage, policy, env)


@push.dispatch
def _push_do_every_n_episodes_post(hook: DoEveryNEpisodes, stage: PostEpisodeStage, policy, env):
    _count_episode(hook, stage, policy, env)


@dataclass
class DoOnExit(Hook):
    """Calls ``f(policy, env)`` at PostExperiment (also when the run ended by an exception).

    Example:
        >>> import stagerl as rl
        >>> hook = rl.DoOnExit(lambda policy, env: print("done at", env.state in (0, 6)))
        >>> _ = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), hook=hook)
        done at True
    """

    f: Callable[[Any, Any], Any]

    def __post_init__(self) -> None:
        _require_callable("DoOnExit", self.f, "(policy, env)")


@push.dispatch
def _push_do_on_exit(hook: DoOnExit, stage: PostExperimentStage, policy, env):
    hook.f(policy, env)
