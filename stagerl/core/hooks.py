"""The built-in hooks. Their fields are the metrics they record.

Each hook defines ``push(hook, stage, policy, env)`` only for the stages it uses; every other stage
falls back to a no-op, which ``run`` resolves once and then skips.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, push
from stagerl.core.episodes import Episode, EpisodeHook
from stagerl.core.hooks_base import ComposedHook, Hook
from stagerl.core.stages import (
    PostActStage,
    PostEpisodeStage,
    PostExperimentStage,
    PreEpisodeStage,
    Stage,
)
from trajectories.checks import require_positive_int

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
class StepsPerEpisode(EpisodeHook):
    """The length of every episode, in ``steps``; ``count`` is the running episode's so far.

    On a single env ``count`` grows by one at each PostAct and is appended at PostEpisode; on a
    vector env every sub-env's episodes are appended as they end (``count`` has one entry per
    sub-env), and at the stop every unfinished one that has a step.

    Example:
        >>> import stagerl as rl
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...               rl.StopAfterNEpisodes(2, progress=False), rl.StepsPerEpisode())
        >>> len(hook.steps), all(n >= 3 for n in hook.steps)
        (2, True)
    """

    steps: list[int] = field(default_factory=list)
    count: Any = 0
    running_fields = (("count", "running_length"),)

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        self.steps.append(episode.length)


@dataclass
class RewardsPerEpisode(EpisodeHook):
    """The rewards of every episode, step by step: ``rewards`` is a list of lists.

    On a single env a new list starts at PreEpisode and ``env.reward`` is appended to it at each
    PostAct (the last list is the episode running). On a vector env each sub-env's episode is
    appended as a whole when it ends (at the stop, every unfinished one that has a step).

    Example:
        >>> import stagerl as rl
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), hook=rl.RewardsPerEpisode())
        >>> len(hook.rewards), abs(hook.rewards[0][-1])
        (1, 1.0)
    """

    rewards: list[list[Any]] = field(default_factory=list)
    keep_rewards = True

    def _show_running(self) -> None:
        # A single env's running list is the tracker's own, growing as the episode does.
        running = self.tracker.lane_rewards[0]
        if not self.tracker.vector and (not self.rewards or self.rewards[-1] is not running):
            self.rewards.append(running)

    def pre_episode(self, policy: Any, env: Any) -> None:
        super().pre_episode(policy, env)
        self._show_running()

    def post_act(self, policy: Any, env: Any) -> None:
        ended = self.tracker.step(env)
        self._show_running()
        for episode in ended:
            self.on_episode(episode, policy, env)

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        if self.tracker.vector:
            self.rewards.append(list(episode.rewards))


@dataclass
class TotalRewardPerEpisode(EpisodeHook):
    """The return of every episode, in ``rewards``; ``reward`` is the running episode's so far.

    On a single env ``env.reward`` is summed at each PostAct and the total appended at
    PostEpisode; on a vector env every sub-env's returns are appended as its episodes end
    (``reward`` has one entry per sub-env), and at the stop every unfinished one that has a step.

    Example:
        >>> import stagerl as rl
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...               rl.StopAfterNEpisodes(3, progress=False), rl.TotalRewardPerEpisode())
        >>> len(hook.rewards), all(r in (-1.0, 1.0) for r in hook.rewards)
        (3, True)
    """

    rewards: list[Any] = field(default_factory=list)
    reward: Any = 0.0
    running_fields = (("reward", "running_reward"),)

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        self.rewards.append(episode.total_reward)


@dataclass
class TimePerStep(Hook):
    """Seconds between consecutive PostActs (the first one: since construction) in ``times``,
    keeping the last ``max_steps``. ``clock`` (default ``time.perf_counter``) reads the time.

    Example:
        >>> import stagerl as rl
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...               rl.StopAfterNSteps(150, progress=False), rl.TimePerStep())
        >>> len(hook.times), all(t >= 0 for t in hook.times)
        (100, True)
    """

    max_steps: int = 100
    times: list[float] = field(default_factory=list)
    t: float | None = None
    clock: Callable[[], float] = time.perf_counter

    def __post_init__(self) -> None:
        require_positive_int("TimePerStep", "max_steps", self.max_steps)
        _require_callable("TimePerStep", self.clock, "() for clock")
        if self.t is None:
            self.t = self.clock()


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_time_per_step_post_act(hook: TimePerStep, stage: PostActStage, policy, env):
    now = hook.clock()
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
        require_positive_int("DoEveryNSteps", "n", self.n)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_do_every_n_steps_post_act(hook: DoEveryNSteps, stage: PostActStage, policy, env):
    hook.t += 1
    if hook.t % hook.n == 0:
        hook.f(hook.t, policy, env)


@dataclass
class DoEveryNEpisodes(EpisodeHook):
    """Counts episodes: ``t += 1``, and whenever ``t % n == 0`` calls ``f(t, policy, env)``.

    With ``stage=PostEpisodeStage`` (the default) it counts finished episodes: on a single env at
    PostEpisode, on a vector env each sub-env's episode as it ends (as every per-episode hook
    does). With ``stage=PreEpisodeStage`` it counts the loop's episodes as they start (once per
    run on a vector env, whose sub-envs reset themselves). A stage class or an instance.

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
        require_positive_int("DoEveryNEpisodes", "n", self.n)
        stage = self.stage if isinstance(self.stage, type) else type(self.stage)
        if not issubclass(stage, (PreEpisodeStage, PostEpisodeStage)):
            raise ValueError(
                f"DoEveryNEpisodes counts episodes at PreEpisodeStage or PostEpisodeStage, got "
                f"stage={self.stage!r}"
            )
        self.stage = stage

    def _count(self, policy: Any, env: Any) -> None:
        self.t += 1
        if self.t % self.n == 0:
            self.f(self.t, policy, env)

    def pre_episode(self, policy: Any, env: Any) -> None:
        super().pre_episode(policy, env)
        if issubclass(self.stage, PreEpisodeStage):
            self._count(policy, env)

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        if issubclass(self.stage, PostEpisodeStage):
            self._count(policy, env)


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


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_do_on_exit(hook: DoOnExit, stage: PostExperimentStage, policy, env):
    hook.f(policy, env)
