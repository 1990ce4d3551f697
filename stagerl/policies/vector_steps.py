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
  sub-env ignores; SAME_STEP: planned on the same env, its lanes shown at their final states
  for that plan), and at PostEpisode every running lane is completed with the action planned
  at its current state.
* Traces the Agent knows are filled when the trajectory has them: ``truncated`` with every
  step, ``legal_actions_mask`` with every state (NEXT_STEP only: SAME_STEP would need the
  masks of the final states, which gymnasium does not give).

The Agent's dispatched methods (``stagerl.policies.agent``) call these functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from stagerl.core.dispatch import plan
from trajectories import Trajectory, split_lanes

__all__ = ["start_vector_episode", "record_vector_step", "complete_vector_episode",
           "plan_at_final_states", "state_values", "legal_actions_mask"]


NEXT_STEP = AutoresetMode.NEXT_STEP
count_nonzero = np.count_nonzero  # ~0.2 us on 8 lanes, where .any() costs ~1 us


def _add_extra(row: dict, extra: dict) -> None:
    """``row`` with ``extra``'s values added; a name in both is refused, as ``push(**row,
    **extra)`` would refuse it."""
    if extra:
        both = row.keys() & extra.keys()
        if both:
            raise TypeError(f"got {sorted(both)} in extra, but the Agent fills {sorted(both)} "
                            "itself; leave them out of extra")
        row.update(extra)


def legal_actions_mask(env: Any) -> Any:
    """``env.legal_actions_mask``, for a trajectory with that trace; a clear error without it."""
    mask = getattr(env, "legal_actions_mask", None)
    if mask is None:
        raise TypeError(
            f"the trajectory has a legal_actions_mask trace but {type(env).__name__} has no "
            "legal_actions_mask attribute; give the env one (a bool per action, per sub-env on "
            "a vector env) or use a layout without that trace (CircularArraySARTSTraces)"
        )
    return mask


def state_values(agent: Any, env: Any, state: Any) -> dict[str, Any]:
    """The state-like values of a push: ``state``, and the legal-actions mask when stored."""
    if agent._stores_legal_mask:
        return {"state": state, "legal_actions_mask": legal_actions_mask(env)}
    return {"state": state}


def start_vector_episode(agent: Any, env: Any) -> None:
    """PreEpisode: every lane's first state."""
    trajectory = agent._trajectory
    if agent._stores_legal_mask and env.autoreset_mode is AutoresetMode.SAME_STEP:
        raise ValueError(
            "a legal_actions_mask trace on a vector env with autoreset_mode=SAME_STEP would "
            "store the mask of each reset state with the final state before it (gymnasium "
            "gives no final masks); build the vector env with AutoresetMode.NEXT_STEP"
        )
    if isinstance(trajectory, Trajectory):
        split_lanes(trajectory, env.num_envs)
        # A run that stopped right after some lane's reset-only act left that lane a first
        # state with no step; this run's reset starts that lane again.
        trajectory.push(**state_values(agent, env, env.state), restart=True)
    else:
        trajectory.push(**state_values(agent, env, env.state))


def record_vector_step(agent: Any, env: Any, action: Any, extra: dict) -> None:
    """PostAct: every lane's step (or new episode), with ``extra`` values per lane."""
    trajectory = agent._trajectory
    if agent._stores_truncated:
        extra.setdefault("truncated", env.is_truncated)
    elif env.any_episode_end and count_nonzero(env.is_truncated):
        extra["truncated"] = env.is_truncated
    if agent._stores_legal_mask and "legal_actions_mask" not in extra:
        extra["legal_actions_mask"] = legal_actions_mask(env)
    restarted = env.any_episode_start
    if env.autoreset_mode is NEXT_STEP:
        start = None
        if restarted:
            start = env.episode_start
            if agent._completes_with_next_action:
                # The reset-only act's action was planned at the final state of the lane's
                # episode.
                trajectory.push(next_action=action, lanes=start)
        if not extra:  # most acts: the four values and the starts, one kept function
            push = agent.__dict__.get("_push_vector_step")
            if push is None:
                push = agent._push_vector_step = vector_step_pusher(agent)
            push(env.state, action, env.reward, env.is_terminated, start)
            return
        if start is not None:  # most acts start no episode: no mask to pass then
            extra["episode_start"] = start
        row = {"state": env.state, "action": action, "reward": env.reward,
               "terminal": env.is_terminated}
        _add_extra(row, extra)
        agent._push_row(row)
        return
    start = env.episode_start
    if extra:
        row = {"state": env.final_state, "action": action, "reward": env.reward,
               "terminal": env.is_terminated}
        _add_extra(row, extra)
        agent._push_row(row)
    else:
        push = agent.__dict__.get("_push_vector_step")
        if push is None:
            push = agent._push_vector_step = vector_step_pusher(agent)
        push(env.final_state, action, env.reward, env.is_terminated, None)
    if restarted:
        if agent._completes_with_next_action:
            trajectory.push(next_action=plan_at_final_states(agent, env), lanes=start)
        trajectory.push(state=env.state, lanes=start)


#: The names of a vector step the Agent pushes with no extra values, in the order it pushes them.
_VECTOR_STEP = ("state", "action", "reward", "terminal", "episode_start")


def vector_step_pusher(agent: Any) -> Any:
    """``push(state, action, reward, terminal, episode_start)`` (``episode_start`` None where no
    lane starts an episode) for ``agent``'s trajectory: its own function for these values (one
    function for the common step into lane-major rings), or its dict push."""
    trajectory = agent._trajectory
    if isinstance(trajectory, Trajectory):
        return trajectory.push_values_function(_VECTOR_STEP)
    push_row = agent._push_row

    def push(state, action, reward, terminal, episode_start):
        row = {"state": state, "action": action, "reward": reward, "terminal": terminal}
        if episode_start is not None:
            row["episode_start"] = episode_start
        push_row(row)

    return push


def plan_at_final_states(agent: Any, env: Any) -> Any:
    """The actions the Agent's policy plans at each lane's final state (SAME_STEP autoreset:
    ``env.state`` already holds the reset lanes' next first states).

    Planned on the env itself, shown at its final states for this one plan
    (``env.showing_final_states()``): a copy would be another env (an ``AsyncVectorEnv``,
    whose sub-envs run in other processes, cannot be copied at all)."""
    showing = getattr(env, "showing_final_states", None)
    if showing is None:
        raise TypeError(
            f"a next_action trace on {type(env).__name__} with autoreset_mode=SAME_STEP needs "
            "the action planned at each sub-env's final state: give the env a "
            "showing_final_states() context manager in which env.state is env.final_state "
            "(as stagerl.GymVectorEnv has), or use AutoresetMode.NEXT_STEP"
        )
    with showing():
        return plan(agent._policy, env)


def complete_vector_episode(agent: Any, env: Any) -> None:
    """PostEpisode (SARTSA layouts): complete every running lane with the action planned at its
    current state."""
    if not agent._completes_with_next_action:
        return
    running = getattr(agent._trajectory.container, "running_lanes", None)
    lanes = running() if running is not None else None
    if lanes is None or lanes.any():
        agent._trajectory.push(next_action=plan(agent._policy, env), lanes=lanes)
