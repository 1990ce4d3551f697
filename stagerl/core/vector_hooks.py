"""Per-episode hooks on a vector env: each sub-env's episodes, as if run one after another.

A :class:`~stagerl.envs.vector.GymVectorEnv` resets its sub-envs (lanes) itself, so the run loop
sees one long episode from ``env.reset()`` to the stop, and a lane's episode end shows at PostAct
as ``is_terminated | is_truncated`` in that lane. These methods, more specific in ``env`` than
the ones of :mod:`stagerl.core.hooks`, keep one running figure per lane and append a lane's figure
when its episode ends (lanes that end at the same step in lane order). At PostEpisode (the stop)
every lane's unfinished episode that has at least one step is appended, as the cut episode of a
single env is. A lane whose last ``act`` only reset it (NEXT_STEP autoreset) is not counted.

Example:
    >>> import stagerl as rl
    >>> from stagerl.envs.toy_vector import scripted_vector_env
    >>> env = rl.GymVectorEnv(scripted_vector_env((2, 3)), seed=0)
    >>> hook = rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNSteps(8, progress=False),
    ...               rl.StepsPerEpisode())
    >>> hook.steps
    [2, 3, 1]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from stagerl.core.dispatch import push
from stagerl.core.hooks import RewardsPerEpisode, StepsPerEpisode, TotalRewardPerEpisode
from stagerl.core.stages import PostActStage, PostEpisodeStage, PreEpisodeStage
from stagerl.envs.vector import GymVectorEnv

__all__: list[str] = []


def _lanes(hook: Any) -> dict[str, Any]:
    """The hook's per-lane running figures (kept off its dataclass fields, which are metrics)."""
    return hook.__dict__.setdefault("_lanes", {})


def _stepped(env: GymVectorEnv) -> np.ndarray:
    """Per lane: the last ``act`` was a step. With NEXT_STEP autoreset, the act after an episode's
    end only resets that lane (``episode_start`` True there); with SAME_STEP every act steps."""
    if env.autoreset_mode == AutoresetMode.NEXT_STEP:
        return ~env.episode_start
    return np.ones(env.num_envs, dtype=bool)


def _ended(env: GymVectorEnv) -> np.ndarray:
    return np.flatnonzero(env.is_terminated | env.is_truncated)


# ---- StepsPerEpisode -----------------------------------------------------------------------


@push.dispatch
def _push_steps_per_episode_vector_pre_episode(
    hook: StepsPerEpisode, stage: PreEpisodeStage, policy, env: GymVectorEnv
):
    hook.count = np.zeros(env.num_envs, dtype=np.int64)


@push.dispatch
def _push_steps_per_episode_vector_post_act(
    hook: StepsPerEpisode, stage: PostActStage, policy, env: GymVectorEnv
):
    hook.count += _stepped(env)
    for lane in _ended(env):
        hook.steps.append(int(hook.count[lane]))
        hook.count[lane] = 0


@push.dispatch
def _push_steps_per_episode_vector_post_episode(
    hook: StepsPerEpisode, stage: PostEpisodeStage, policy, env: GymVectorEnv
):
    hook.steps.extend(int(count) for count in hook.count if count > 0)
    hook.count = 0


# ---- TotalRewardPerEpisode -----------------------------------------------------------------


@push.dispatch
def _push_total_reward_vector_pre_episode(
    hook: TotalRewardPerEpisode, stage: PreEpisodeStage, policy, env: GymVectorEnv
):
    hook.reward = np.zeros(env.num_envs)
    _lanes(hook)["steps"] = np.zeros(env.num_envs, dtype=np.int64)


@push.dispatch
def _push_total_reward_vector_post_act(
    hook: TotalRewardPerEpisode, stage: PostActStage, policy, env: GymVectorEnv
):
    stepped = _stepped(env)
    steps = _lanes(hook)["steps"]
    hook.reward += np.where(stepped, env.reward, 0.0)
    steps += stepped
    for lane in _ended(env):
        hook.rewards.append(float(hook.reward[lane]))
        hook.reward[lane], steps[lane] = 0.0, 0


@push.dispatch
def _push_total_reward_vector_post_episode(
    hook: TotalRewardPerEpisode, stage: PostEpisodeStage, policy, env: GymVectorEnv
):
    steps = _lanes(hook).pop("steps")
    hook.rewards.extend(float(hook.reward[lane]) for lane in np.flatnonzero(steps))
    hook.reward = 0.0


# ---- RewardsPerEpisode ---------------------------------------------------------------------


@push.dispatch
def _push_rewards_per_episode_vector_pre_episode(
    hook: RewardsPerEpisode, stage: PreEpisodeStage, policy, env: GymVectorEnv
):
    _lanes(hook)["rewards"] = [[] for _ in range(env.num_envs)]


@push.dispatch
def _push_rewards_per_episode_vector_post_act(
    hook: RewardsPerEpisode, stage: PostActStage, policy, env: GymVectorEnv
):
    running = _lanes(hook)["rewards"]
    reward = env.reward
    for lane in np.flatnonzero(_stepped(env)):
        running[lane].append(float(reward[lane]))
    for lane in _ended(env):
        hook.rewards.append(running[lane])
        running[lane] = []


@push.dispatch
def _push_rewards_per_episode_vector_post_episode(
    hook: RewardsPerEpisode, stage: PostEpisodeStage, policy, env: GymVectorEnv
):
    hook.rewards.extend(rewards for rewards in _lanes(hook).pop("rewards") if rewards)
