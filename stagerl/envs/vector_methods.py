"""What the Agent and RandomPolicy do on a vector env (:class:`GymVectorEnv`).

The Agent records each sub-env (lane) as its own sequence of episodes: its trajectory is split
into lanes on the first PreEpisode (``trajectories.lanes.split_lanes``) and every push carries
one value per lane, so no stored transition ever pairs states of two sub-envs or two episodes:

* PreEpisode: every lane's first state (a partial push per lane).
* PostAct, NEXT_STEP autoreset: one push; lanes with ``env.episode_start`` (only reset by this
  act: their reward and flags are not a step) start a new episode with their state, the others
  store the step. ``terminal`` is ``env.is_terminated`` only: a truncated episode's last
  transition stays bootstrapped.
* PostAct, SAME_STEP autoreset: every lane stores its step with ``env.final_state`` as the next
  state (the true last observation where an episode ended), then the lanes that were reset
  start their new episode with ``env.state``.
* Layouts with ``next_action`` (SARTSA): an episode's last transition is completed with the
  action planned at its final state (NEXT_STEP: the action of the reset-only act, which the
  sub-env ignores; SAME_STEP: planned on the final states), and at PostEpisode every running
  lane is completed with the action planned at its current state.

Every method has ``precedence=-1`` and is more specific in ``env`` than the single-env defaults,
so an algorithm's own ``push(agent: Agent[ItsPolicy, object], ...)`` still wins.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector.utils import batch_space

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, plan, push
from stagerl.core.stages import PostActStage, PostEpisodeStage, PreEpisodeStage
from stagerl.envs.vector import GymVectorEnv
from stagerl.policies.agent import Agent
from stagerl.policies.random_policy import RandomPolicy
from trajectories import Trajectory
from trajectories.laned_trajectory import split_lanes

__all__: list[str] = []

# Batched random actions are drawn this many vector steps at a time: one rng call per block.
_BLOCK = 64


# ---- Agent ---------------------------------------------------------------------------------


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_agent_pre_episode_vector(agent: Agent, stage: PreEpisodeStage, env: GymVectorEnv):
    trajectory = agent._trajectory
    if isinstance(trajectory, Trajectory):
        split_lanes(trajectory, env.num_envs)
        # A run that stopped right after some lane's reset-only act left that lane a first
        # state with no step; this run's reset starts that lane again.
        trajectory.push(state=env.state, restart=True)
    else:
        trajectory.push(state=env.state)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_agent_post_act_vector(agent: Agent, stage: PostActStage, env: GymVectorEnv, action):
    trajectory = agent._trajectory
    restarted = env._any_start  # most acts start no episode: no mask to pass then
    start = env._episode_start
    if env._next_step:
        if agent._completes_with_next_action and restarted:
            # The reset-only act's action was planned at the final state of the lane's episode.
            trajectory.push(next_action=action, lanes=start)
        trajectory.push(
            state=env._state,
            action=action,
            reward=env._reward,
            terminal=env._terminated,
            episode_start=start if restarted else None,
        )
        return
    trajectory.push(
        state=env.final_state, action=action, reward=env._reward, terminal=env._terminated
    )
    if restarted:
        if agent._completes_with_next_action:
            final = copy.copy(env)  # the same env, seen at its lanes' final states
            final._state = env.final_state
            trajectory.push(next_action=plan(agent._policy, final), lanes=start)
        trajectory.push(state=env.state, lanes=start)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_agent_post_episode_vector(agent: Agent, stage: PostEpisodeStage, env: GymVectorEnv):
    if not agent._completes_with_next_action:
        return
    running = getattr(agent._trajectory.container, "running_lanes", None)
    lanes = running() if running is not None else None
    if lanes is None or lanes.any():
        agent._trajectory.push(next_action=plan(agent._policy, env), lanes=lanes)


# ---- RandomPolicy --------------------------------------------------------------------------


class _BatchedDraws:
    """Pre-drawn batches of actions for one vector env, popped one per vector step."""

    def __init__(self, policy: RandomPolicy, env: GymVectorEnv) -> None:
        self.env = env
        self.buffer: list[Any] = []
        space = policy.action_space if policy.action_space is not None else None
        n, rng = env.num_envs, policy.rng
        if space is not None and space == env.action_space:
            space = None  # already the batched space
            batched = env.action_space
        else:
            space = env.single_action_space if space is None else space
            batched = batch_space(space, n)
        if isinstance(space, gymnasium.spaces.Discrete):
            k, start = int(space.n), int(space.start)

            def draw():
                return list(rng.integers(k, size=(_BLOCK, n)) + start)[::-1]

        elif (
            isinstance(space, gymnasium.spaces.Box)
            and np.issubdtype(space.dtype, np.floating)
            and space.is_bounded("both")
        ):
            low, width, dtype = space.low, space.high - space.low, space.dtype

            def draw():
                block = low + width * rng.random((_BLOCK, n, *space.shape))
                return list(block.astype(dtype, copy=False))[::-1]

        else:
            sampler = copy.deepcopy(batched)
            sampler.seed(int(rng.integers(2**63)))

            def draw():
                return [sampler.sample()]

        self.draw = draw


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_random_policy_vector(policy: RandomPolicy, env: GymVectorEnv):
    draws = policy.__dict__.get("_vector_draws")
    if draws is None or draws.env is not env:
        draws = policy._vector_draws = _BatchedDraws(policy, env)
    buffer = draws.buffer
    if not buffer:
        buffer = draws.buffer = draws.draw()
    return buffer.pop()
