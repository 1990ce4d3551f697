"""Finished episodes, per sub-env: the one source every per-episode hook reads.

On a single env the loop's episode is the env's episode: it ends at PostEpisode. A vector env
(:class:`~stagerl.core.env.VectorEnv`) resets its sub-envs itself, so the loop sees one long
episode from ``env.reset()`` to the stop while each sub-env (lane) finishes many: a lane's episode
ends at the PostAct where its ``is_terminated | is_truncated`` is set, and at PostEpisode (the
stop) every lane's unfinished episode with at least one step is reported as cut. An
:class:`EpisodeTracker` follows both cases and answers, at each stage, which episodes just
ended, as :class:`Episode` records; :class:`EpisodeHook` turns that into one method,
``on_episode``, so a per-episode hook is written once and works on single and vector envs::

    @dataclass
    class LongestEpisode(rl.EpisodeHook):
        longest: int = 0

        def on_episode(self, episode, policy, env):
            self.longest = max(self.longest, episode.length)

A vector env's act that only resets a lane (gymnasium's NEXT_STEP autoreset) is not a step of
that lane (``env.stepped`` is False there) and adds nothing to its episode.

**Games.** An env whose ``env.info`` carries ``game_over`` and ``game_return`` (stagerl's Atari
envs: ``stagerl.envs.atari``) is trained on lives with clipped rewards, but a person's episode is
the game. The tracker then reports games: a step adds what the game's unclipped score gained
(``game_return`` minus the score it last saw in that lane), and a lane's episode ends at the
step that ends its game (``info["game_over"]``), not at a lost life. On a single env the
PostEpisode of a lost life reports nothing and the next PreEpisode goes on with the same game's
figures. So ``TotalRewardPerEpisode``, ``StepsPerEpisode`` and the loggers report whole games,
unclipped, in training as in evaluation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, forwarding, push
from stagerl.core.env import VectorEnv
from stagerl.core.hooks_base import Hook
from stagerl.core.stages import PostActStage, PostEpisodeStage, PreEpisodeStage

__all__ = ["Episode", "EpisodeTracker", "EpisodeHook", "game_figures", "post_act_together"]


@dataclass(frozen=True)
class Episode:
    """One finished episode of one sub-env.

    Attributes:
        lane: the sub-env it ran in (0 on a single env).
        total_reward: the sum of its rewards.
        length: its number of steps.
        terminated: it reached a terminal state.
        truncated: it was cut by a time limit. Neither flag is set for an episode cut by the
            stop condition or by a reset condition.
        rewards: its rewards, step by step, when the tracker keeps them (else ``None``).
    """

    lane: int
    total_reward: float
    length: int
    terminated: bool
    truncated: bool
    rewards: tuple | None = None

    def __init__(self, lane: int, total_reward: float, length: int, terminated: bool,
                 truncated: bool, rewards: tuple | None = None) -> None:
        # Written once, into the instance's dict: the frozen dataclass's own __init__ calls
        # object.__setattr__ per field, three times the cost, once per hook and episode.
        self.__dict__.update(lane=lane, total_reward=total_reward, length=length,
                             terminated=terminated, truncated=truncated, rewards=rewards)


class EpisodeTracker:
    """The running return and length of each sub-env's episode, and the episodes that ended.

    Call :meth:`start` at PreEpisode, :meth:`step` at PostAct and :meth:`finish` at PostEpisode;
    ``step`` and ``finish`` return the :class:`Episode` records that ended (lane order). On a
    single env ``step`` returns ``()`` and ``finish`` the episode; on a vector env ``step``
    returns the lanes whose episode ended in the last act and ``finish`` the lanes cut by the
    stop. ``running_reward`` and ``running_length`` are the figures of the episodes running
    (numbers, or one entry per lane). With ``keep_rewards`` each record carries its rewards.
    Envs whose info tells games (``game_over``, ``game_return``) are tracked game by game (see
    the module docstring): ``game_mode`` is set from the first step that shows them.

    Example:
        >>> import stagerl as rl
        >>> env, tracker = rl.RandomWalk1D(start=5), EpisodeTracker()
        >>> env.reset(); tracker.start(env)
        >>> env.act(1); tracker.step(env)
        ()
        >>> (episode,) = tracker.finish(env)
        >>> episode.total_reward, episode.length, episode.terminated
        (1.0, 1, True)
    """

    __slots__ = ("keep_rewards", "vector", "running_reward", "running_length", "lane_rewards",
                 "_env", "game_mode", "last_score", "game_over", "game_goes_on")

    def __init__(self, keep_rewards: bool = False) -> None:
        self.keep_rewards = keep_rewards
        self.vector = False
        self.running_reward: Any = 0.0
        self.running_length: Any = 0
        self.lane_rewards: list[list[float]] = [[]]
        self._env: Any = None
        self.game_mode = False  # the env's info tells games: episodes are games
        self.last_score: Any = 0.0  # game_return at each lane's last step
        self.game_over = False  # single env: the last step ended the game
        self.game_goes_on = False  # single env: a lost life ended the loop's episode

    def __getstate__(self) -> dict:
        # The env is only remembered to notice a new one; a copy binds on its next call.
        state = {name: getattr(self, name) for name in self.__slots__}
        state["_env"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def _bind(self, env: Any) -> None:
        """Note a new env; the running figures get one entry per lane if their shape is off."""
        self._env = env
        self.vector = isinstance(env, VectorEnv)
        n = env.num_envs if self.vector else None
        if self.vector and np.shape(self.running_length) != (n,):
            self._zero(n)
        elif not self.vector and np.ndim(self.running_length):
            self._zero(None)

    def _zero(self, n: int | None) -> None:
        if n is None:
            self.running_reward, self.running_length = 0.0, 0
            self.lane_rewards = [[]]
            self.last_score = 0.0
        else:
            self.running_reward = np.zeros(n)
            self.running_length = np.zeros(n, dtype=np.int64)
            self.lane_rewards = [[] for _ in range(n)]
            self.last_score = np.zeros(n)

    def start(self, env: Any) -> None:
        """A new loop episode: every running figure back to zero (on a single env after a lost
        life of a game: the game's figures go on)."""
        if env is not self._env:  # the same env: the figures are zeroed below in their shape
            self._bind(env)
        if self.game_goes_on and not self.vector:
            self.game_goes_on = False
            return
        self._zero(env.num_envs if self.vector else None)

    def step(self, env: Any) -> tuple:
        """Add the last act's rewards; the episodes it ended (vector envs only)."""
        if env is not self._env:
            self._bind(env)
        if not self.vector:
            info = getattr(env, "info", None)
            if type(info) is dict and "game_over" in info:  # a game: its unclipped score
                self.game_mode = True
                score = float(info["game_return"])
                reward, self.last_score = score - self.last_score, score
                self.game_over = bool(info["game_over"])
            else:
                try:
                    reward = env.reward
                except (AttributeError, NotImplementedError):  # an env without rewards (a stub)
                    reward = math.nan
            self.running_reward += reward
            self.running_length += 1
            if self.keep_rewards:
                self.lane_rewards[0].append(float(reward))
            return ()
        stepped = env.stepped
        info = getattr(env, "info", None)
        games = type(info) is dict and "game_over" in info
        if games:
            self.game_mode = True
            score, over = game_figures(info)
            reward = np.where(stepped, score - self.last_score, 0.0)
            self.last_score = np.where(stepped, score, self.last_score)
        else:
            reward = np.where(stepped, env.reward, 0.0)
        self.running_reward += reward
        self.running_length += stepped
        if self.keep_rewards:
            for lane in np.asarray(stepped).nonzero()[0].tolist():
                self.lane_rewards[lane].append(float(reward[lane]))
        terminated, truncated = env.is_terminated, env.is_truncated
        # mask.nonzero()[0], not np.flatnonzero: ~0.1 us against ~1 us, on every act
        ended = np.asarray(over & stepped if games else terminated | truncated).nonzero()[0]
        if not ended.size:
            return ()
        if games:
            self.last_score[ended] = 0.0  # the lane's next game starts from nothing
        return tuple(self._end(lane, bool(terminated[lane]), bool(truncated[lane]))
                     for lane in ended.tolist())

    def finish(self, env: Any) -> tuple:
        """The loop's episode ends: the single env's episode, or the vector env's cut lanes."""
        if env is not self._env:
            self._bind(env)
        if not self.vector:
            terminated = bool(getattr(env, "is_terminated", False))
            truncated = bool(getattr(env, "is_truncated", False))
            if self.game_mode and not self.game_over:
                if terminated or truncated:  # a lost life: the game goes on in the next episode
                    self.game_goes_on = True
                    return ()
                score = self.last_score  # cut by the stop: the game so far, as a cut episode
                episode = self._end(0, False, False)
                self.last_score = score  # a game that goes on keeps counting from here
                return (episode,)
            self.game_over = False
            return (self._end(0, terminated, truncated),)
        return tuple(self._end(lane, False, False)
                     for lane in np.flatnonzero(self.running_length).tolist())

    def _end(self, lane: int, terminated: bool, truncated: bool) -> Episode:
        rewards = tuple(self.lane_rewards[lane]) if self.keep_rewards else None
        self.lane_rewards[lane] = []
        if self.vector:
            total, length = self.running_reward[lane], self.running_length[lane]
            self.running_reward[lane], self.running_length[lane] = 0.0, 0
        else:
            total, length = self.running_reward, self.running_length
            self.running_reward, self.running_length = 0.0, 0
        return Episode(lane, float(total), int(length), terminated, truncated, rewards)


def game_figures(info: dict) -> tuple:
    """Each sub-env's game score and whether its game ended at the last act, from a vector
    env's ``info`` (``game_return``, ``game_over``); a sub-env reset in the same act
    (SAME_STEP autoreset) shows its final step's figures, from ``info["final_info"]``.

    Example:
        >>> info = {"game_return": np.array([3.0, 0.0]), "game_over": np.array([False, False]),
        ...         "final_info": {"game_return": np.array([0.0, 7.0]),
        ...                        "game_over": np.array([False, True])},
        ...         "_final_info": np.array([False, True])}
        >>> [a.tolist() for a in game_figures(info)]
        [[3.0, 7.0], [False, True]]
    """
    score = np.asarray(info["game_return"], dtype=np.float64)
    over = np.asarray(info["game_over"], dtype=bool)
    final = info.get("final_info")
    if type(final) is dict and "game_over" in final:
        done = np.asarray(info.get("_final_info", np.zeros_like(over)), dtype=bool)
        score = np.where(done, np.asarray(final["game_return"], dtype=np.float64), score)
        over = np.where(done, np.asarray(final["game_over"], dtype=bool), over)
    return score, over


class EpisodeHook(Hook):
    """Base class of per-episode hooks: define ``on_episode(episode, policy, env)``.

    It is called once for every finished :class:`Episode`, on single and vector envs alike (see
    the module docstring for when). Subclasses may be dataclasses; the tracker is created on first
    use (``hook.tracker``). A subclass that also needs PreEpisode, PostAct or PostEpisode calls
    of its own keeps these working by calling ``EpisodeHook``'s method first, e.g.
    ``EpisodeHook.post_act(hook, policy, env)``.

    Example:
        >>> from dataclasses import dataclass, field
        >>> import stagerl as rl
        >>> @dataclass
        ... class Lengths(rl.EpisodeHook):
        ...     lengths: list = field(default_factory=list)
        ...     def on_episode(self, episode, policy, env):
        ...         self.lengths.append((episode.lane, episode.length))
        >>> env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0)
        >>> hook = rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNEpisodes(3, progress=False),
        ...               Lengths())
        >>> len(hook.lengths) >= 3, sorted({lane for lane, _ in hook.lengths})
        (True, [0, 1])
    """

    #: Whether the episodes reported carry their rewards step by step (``Episode.rewards``).
    keep_rewards = False
    #: ``(field, tracker attribute)`` pairs: fields kept equal to the tracker's running figures
    #: (``StepsPerEpisode.count`` is ``running_length``) after every stage.
    running_fields: tuple = ()

    @property
    def tracker(self) -> EpisodeTracker:
        tracker = self.__dict__.get("_tracker")
        if tracker is None:
            tracker = self.__dict__["_tracker"] = EpisodeTracker(self.keep_rewards)
        return tracker

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        """Called for every finished episode; the default does nothing."""

    def pre_episode(self, policy: Any, env: Any) -> None:
        (self.__dict__.get("_tracker") or self.tracker).start(env)
        self._mirror()

    def post_act(self, policy: Any, env: Any) -> None:
        # Every step of every run passes here: the tracker and the mirrored fields are read
        # without the property and the helper calls of the other stages.
        tracker = self.__dict__.get("_tracker") or self.tracker
        ended = tracker.step(env)
        if ended:
            for episode in ended:
                self.on_episode(episode, policy, env)
        for name, attribute in self.running_fields:
            setattr(self, name, getattr(tracker, attribute))

    def post_episode(self, policy: Any, env: Any) -> None:
        for episode in (self.__dict__.get("_tracker") or self.tracker).finish(env):
            self.on_episode(episode, policy, env)
        self._mirror()

    def _mirror(self) -> None:
        if self.running_fields:
            tracker = self.__dict__.get("_tracker") or self.tracker
            for name, attribute in self.running_fields:
                setattr(self, name, getattr(tracker, attribute))


def post_act_together(hooks: tuple, policy: Any, env: Any) -> None:
    """``hook.post_act(policy, env)`` for each of ``hooks`` in turn (per-episode hooks whose
    ``post_act`` is :class:`EpisodeHook`'s): what the run loop calls for consecutive such
    members of a composed hook.

    A single env's step ends no episode, so each hook's post_act only moves its tracker's
    figures and its mirrored fields; here the env's reward is read once and the trackers moved
    as :meth:`EpisodeTracker.step` moves them, one Python call for all the hooks. Anything else
    (a game's info, a vector env, kept rewards, a tracker not bound to ``env``) goes through
    each hook's own ``post_act``. ``tests/stagerl/core/test_loop_fast_paths.py`` runs
    both ways on the same steps.
    """
    info = getattr(env, "info", None)
    if type(info) is dict and "game_over" in info:
        for hook in hooks:
            hook.post_act(policy, env)
        return
    try:
        reward = env.reward
    except (AttributeError, NotImplementedError):  # as EpisodeTracker.step
        reward = math.nan
    for hook in hooks:
        tracker = hook.__dict__.get("_tracker")
        if tracker is None or tracker._env is not env or tracker.vector or tracker.keep_rewards:
            hook.post_act(policy, env)
            continue
        tracker.running_reward += reward
        tracker.running_length += 1
        for name, attribute in hook.running_fields:
            setattr(hook, name, getattr(tracker, attribute))


# Each push only calls the hook's own method: the run loop calls that method directly
# (``forwarding``), one Python call less per hook and step.


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
@forwarding(lambda hook, stage, policy, env: (hook.pre_episode, (policy, env)))
def _push_episode_hook_pre_episode(hook: EpisodeHook, stage: PreEpisodeStage, policy, env):
    hook.pre_episode(policy, env)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
@forwarding(lambda hook, stage, policy, env: (hook.post_act, (policy, env)))
def _push_episode_hook_post_act(hook: EpisodeHook, stage: PostActStage, policy, env):
    hook.post_act(policy, env)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
@forwarding(lambda hook, stage, policy, env: (hook.post_episode, (policy, env)))
def _push_episode_hook_post_episode(hook: EpisodeHook, stage: PostEpisodeStage, policy, env):
    hook.post_episode(policy, env)
