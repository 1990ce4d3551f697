"""What the Agent records on a vector env (:class:`~stagerl.core.env.VectorEnv`).

Each sub-env (lane) is recorded as its own sequence of episodes: the trajectory is split into
lanes on the first PreEpisode (``trajectories.split_lanes``) and every push carries one value
per lane, so no stored transition ever pairs states of two sub-envs or two episodes:

* PreEpisode: every lane's first state (a partial push per lane).
* PostAct, NEXT_STEP autoreset: one push; lanes with ``env.episode_start`` (only reset by this
  act: their reward and flags are not a step) start a new episode with their state, the others
  store the step. ``terminal`` is ``env.is_terminated`` only: a truncated episode's last
  transition stays bootstrapped, and the truncation reaches the trajectory as ``truncated``.
* PostAct, SAME_STEP autoreset: every lane stores its step with ``env.final_state`` as the next
  state (the true last observation where an episode ended), then the lanes that were reset
  start their new episode with ``env.state``.
* Layouts with ``next_action`` (SARTSA): an episode's last transition is completed with the
  action planned at its final state (NEXT_STEP: the action of the reset-only act, which the
  sub-env ignores; SAME_STEP: planned on the final states), and at PostEpisode every running
  lane is completed with the action planned at its current state.

The Agent's dispatched methods (``stagerl.policies.agent``) call these functions.
"""

from __future__ import annotations

import copy
from typing import Any

from gymnasium.vector import AutoresetMode

from stagerl.core.dispatch import plan
from trajectories import Trajectory, split_lanes

__all__ = ["start_vector_episode", "record_vector_step", "complete_vector_episode"]


def start_vector_episode(agent: Any, env: Any) -> None:
    """PreEpisode: every lane's first state."""
    trajectory = agent._trajectory
    if isinstance(trajectory, Trajectory):
        split_lanes(trajectory, env.num_envs)
        # A run that stopped right after some lane's reset-only act left that lane a first
        # state with no step; this run's reset starts that lane again.
        trajectory.push(state=env.state, restart=True)
    else:
        trajectory.push(state=env.state)


def record_vector_step(agent: Any, env: Any, action: Any, extra: dict) -> None:
    """PostAct: every lane's step (or new episode), with ``extra`` values per lane."""
    trajectory = agent._trajectory
    if env.any_episode_end and env.is_truncated.any():
        extra["truncated"] = env.is_truncated
    start = env.episode_start
    restarted = env.any_episode_start  # most acts start no episode: no mask to pass then
    if env.autoreset_mode is AutoresetMode.NEXT_STEP:
        if agent._completes_with_next_action and restarted:
            # The reset-only act's action was planned at the final state of the lane's episode.
            trajectory.push(next_action=action, lanes=start)
        trajectory.push(
            state=env.state,
            action=action,
            reward=env.reward,
            terminal=env.is_terminated,
            episode_start=start if restarted else None,
            **extra,
        )
        return
    trajectory.push(
        state=env.final_state, action=action, reward=env.reward, terminal=env.is_terminated,
        **extra,
    )
    if restarted:
        if agent._completes_with_next_action:
            final = copy.copy(env)  # the same env, seen at its lanes' final states
            final._state = env.final_state
            trajectory.push(next_action=plan(agent._policy, final), lanes=start)
        trajectory.push(state=env.state, lanes=start)


def complete_vector_episode(agent: Any, env: Any) -> None:
    """PostEpisode (SARTSA layouts): complete every running lane with the action planned at its
    current state."""
    if not agent._completes_with_next_action:
        return
    running = getattr(agent._trajectory.container, "running_lanes", None)
    lanes = running() if running is not None else None
    if lanes is None or lanes.any():
        agent._trajectory.push(next_action=plan(agent._policy, env), lanes=lanes)
