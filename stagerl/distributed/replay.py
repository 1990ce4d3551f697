"""`EpisodeReplay`: the workers' episodes, told to the central side's hooks as they end.

The workers act and the learner never does, so the logging hooks of a distributed run (progress,
CSV, TensorBoard, evaluations during training) cannot watch a loop of their own. They watch a
replay instead: every batch the learner inserts carries its steps' rewards and episode ends, and
each episode, once it ended, is announced to the hooks as a single env's loop would announce
it: PreEpisode, one PostAct per step (``env.reward`` that step's reward, ``env.is_terminated`` /
``env.is_truncated`` set at its last step), PostEpisode. So a hook counts every env step the
learner inserted, sees every episode with its return, length and flags, and hears the scalars
the learner's updates report (``rl.log_scalar``) at its next PostAct.

What the replay does not give: the order of steps across sub-envs (an episode's steps are told
together when it ends, so a hook's ``env_step`` trails the learner's by the steps of the
episodes still running), states and actions (they stay in the central trajectory; reading
``env.state`` raises), the sub-env an episode ran in (every episode is lane 0 of one env), and
PreAct (no action is chosen here). Rewards are those the trajectory stores (float32 for most
layouts), so a return may differ from the worker's own sum in the last bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stagerl.core.dispatch import push
from stagerl.core.env import Env
from stagerl.core.hooks_base import ComposedHook, Hook
from stagerl.core.stage_calls import composed_members
from stagerl.core.stages import (
    PostActStage,
    PostEpisodeStage,
    PostExperimentStage,
    PreEpisodeStage,
    PreExperimentStage,
)

__all__ = ["EpisodeReplay", "ReplayedEnv"]

_PRE_EPISODE, _POST_ACT, _POST_EPISODE = PreEpisodeStage(), PostActStage(), PostEpisodeStage()


class ReplayedEnv(Env):
    """The env the hooks of an :class:`EpisodeReplay` see: a replayed step's reward and flags.

    Example:
        >>> env = ReplayedEnv()
        >>> env.reward, env.is_terminated, env.is_truncated
        (0.0, False, False)
    """

    def __init__(self) -> None:
        self._reward, self._terminated, self._truncated = 0.0, False, False

    @property
    def reward(self) -> float:
        return self._reward

    @property
    def is_terminated(self) -> bool:
        return self._terminated

    @property
    def is_truncated(self) -> bool:
        return self._truncated

    @property
    def state(self) -> Any:
        raise RuntimeError("a replayed step has no state here: the states of the workers' "
                           "steps are in the central agent's trajectory")

    def reset(self) -> None:
        raise RuntimeError("ReplayedEnv is never stepped: the rollout workers act")

    def act(self, action: Any) -> None:
        raise RuntimeError("ReplayedEnv is never stepped: the rollout workers act")


class EpisodeReplay:
    """Tells ``hook`` the episodes of the batches a :class:`~stagerl.distributed.Learner`
    inserts (see the module docstring). Use it as the learner's ``callback``.

    Args:
        hook: a stagerl Hook (or a list of them), e.g. ``CSVLogger(logdir)``.
        policy: what the hooks get as the policy: the central agent (``learner.agent``), which
            an ``Evaluate`` hook evaluates.

    PreExperiment is announced with the first batch (the workers' start is not the run's),
    PostExperiment by :meth:`finish`, which first tells the episodes still running as cut by
    the stop (neither flag set), as the loop does at its end.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.distributed import RolloutWorker
        >>> def make_env(seed):
        ...     return rl.RandomWalk1D()
        >>> def make_agent(env, seed):
        ...     return rl.Agent(rl.RandomPolicy(rng=seed),
        ...                     rl.Trajectory(rl.CircularArraySARTSTraces(capacity=100)))
        >>> worker, hook = RolloutWorker(make_env, make_agent), rl.StepsPerEpisode()
        >>> replay = EpisodeReplay(hook, worker.agent)
        >>> batch = worker.sample(30)
        >>> replay(None, batch); replay.finish(); worker.close()
        >>> sum(hook.steps) == replay.env_steps == 30
        True
    """

    def __init__(self, hook: Any, policy: Any):
        if not isinstance(hook, Hook):
            hooks = list(hook) if isinstance(hook, (list, tuple)) else [hook]
            bad = [h for h in hooks if not isinstance(h, Hook)]
            if bad:
                raise TypeError(f"EpisodeReplay needs stagerl Hooks, got {bad[0]!r} of type "
                                f"{type(bad[0]).__name__}; e.g. rl.TotalRewardPerEpisode()")
            hook = ComposedHook(*hooks)
        self.hook, self.policy, self.env = hook, policy, ReplayedEnv()
        self.env_steps = 0  # steps told to the hooks
        self.episodes = 0  # episodes told
        self.started = self.finished = False
        # (worker, sub-env) -> [(episode id, its next step), [reward arrays]]: running episodes
        self._running: dict = {}

    def __call__(self, learner: Any, batch: Any) -> None:
        """Tell the hooks the episodes that ``batch`` ends (a Learner callback)."""
        if not self.started:
            self.start()
        for fragment in batch.fragments:
            key = (batch.worker, fragment.lane)
            running = self._running.get(key)
            if running is not None and running[0] != (fragment.episode_id, fragment.first_step):
                # Its rest never came (a dropped batch, a replaced worker): cut where it stops.
                self._tell(self._running.pop(key)[1], False, False)
                running = None
            columns = fragment.columns
            if running is None:
                running = self._running[key] = [None, []]
            running[0] = (fragment.episode_id, fragment.first_step + fragment.n_steps)
            running[1].append(np.asarray(columns["reward"]).reshape(-1))
            terminated = bool(columns["terminal"][-1])
            truncated = bool(columns["truncated"][-1])
            if terminated or truncated:
                self._tell(self._running.pop(key)[1], terminated, truncated)

    def start(self) -> None:
        """Announce PreExperiment (done by the first batch when not called before)."""
        self.started = True
        push(self.hook, PreExperimentStage(), self.policy, self.env)

    def finish(self, cut_running: bool = True) -> None:
        """Tell the episodes still running as cut by the stop (unless ``cut_running`` is False:
        after an error), then announce PostExperiment to every hook, each even if one before it
        raised (the first error is raised after)."""
        if self.finished:
            return
        self.finished = True
        if not self.started:
            self.start()
        error = None
        try:
            if cut_running:
                for key in sorted(self._running):
                    self._tell(self._running[key][1], False, False)
            self._running.clear()
        except BaseException as raised:
            error = raised
        stage = PostExperimentStage()
        for member in composed_members(self.hook, stage, self.policy, self.env):
            try:
                push(member, stage, self.policy, self.env)
            except BaseException as raised:
                error = error or raised
        if error is not None:
            raise error

    def _tell(self, rewards: list, terminated: bool, truncated: bool) -> None:
        """One episode, as a single env's loop announces it."""
        hook, policy, env = self.hook, self.policy, self.env
        steps = np.concatenate(rewards).tolist()
        if not steps:
            return
        env._terminated = env._truncated = False
        push(hook, _PRE_EPISODE, policy, env)
        last = len(steps) - 1
        for i, reward in enumerate(steps):
            env._reward = reward
            if i == last:
                env._terminated, env._truncated = terminated, truncated
            push(hook, _POST_ACT, policy, env)
        push(hook, _POST_EPISODE, policy, env)
        self.env_steps += len(steps)
        self.episodes += 1
