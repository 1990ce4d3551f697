"""Agent(policy, trajectory): a policy that records its experience and learns from it."""

from __future__ import annotations

from functools import partial
from typing import Any

import plum
from gymnasium.vector import AutoresetMode

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, forwarding, optimise, plan, push
from stagerl.core.env import VectorEnv
from stagerl.core.policy import Policy
from stagerl.core.stages import PostActStage, PostEpisodeStage, PreEpisodeStage, Stage
from stagerl.policies.recurrent import STATE_TRACE, RecurrentPolicy
from stagerl.policies.vector_steps import (
    NEXT_STEP,
    _add_extra,
    complete_vector_episode,
    count_nonzero,
    legal_actions_mask,
    record_vector_step,
    start_vector_episode,
    state_values,
    vector_step_pusher,
)
from trajectories import Trajectory

__all__ = ["Agent", "record_step", "start_recurrent_episode"]


@plum.parametric
class Agent(Policy):
    """A policy plus the trajectory it learns from; itself a policy.

    ``Agent(policy, trajectory)`` is an instance of ``Agent[type(policy), type(trajectory)]``, so a
    method can be specialised for one policy type, as RL.jl's ``push!(::Agent{<:PPOPolicy}, ...)``::

        @stagerl.push.dispatch
        def push(agent: stagerl.Agent[MyPolicy, object], stage: stagerl.PreActStage, env: object):
            ...

    Default methods: at PreEpisode the episode's first state is pushed (a partial insert); at
    PostAct the whole step ``state`` (the next state), ``action``, ``reward`` and ``terminal =
    env.is_terminated`` in one push (a truncated episode's last step stays bootstrapped); at
    PostEpisode, when the trajectory has a ``next_action`` trace, the action planned at the
    final state completes the episode's last transition. ``plan`` asks the inner policy and
    ``optimise(agent, stage)`` calls ``optimise(agent.policy, stage, agent.trajectory)``.

    The Agent fills every trace it knows that the trajectory has: ``truncated`` (``env.
    is_truncated``, with every step) and ``legal_actions_mask`` (``env.legal_actions_mask``,
    with every state; SLART layouts). Traces it does not know (a log-probability) come from an
    algorithm's own method, below.

    An algorithm that records more per step (a log-probability, a value estimate, a recurrent
    state) adds traces to its trajectory and specialises ``push(agent: Agent[ItsPolicy, object],
    stage: PostActStage, env: object, action: object)`` to call
    ``record_step(agent, env, action, log_prob=..., value=...)``, which pushes every key of the
    step in one call, on single and vector envs alike.

    Given bare traces (a preset, ``Traces``) instead of a ``Trajectory``, the Agent wraps them in
    ``Trajectory(traces)``, so its samples never cross an episode boundary.

    ``policy`` and ``trajectory`` are read-only: the type parameters were inferred from them.

    Example:
        >>> import numpy as np, stagerl as rl
        >>> trajectory = rl.Trajectory(rl.CircularArraySARTSTraces(capacity=10))
        >>> agent = rl.Agent(rl.RandomPolicy(rng=0), trajectory)
        >>> isinstance(agent, rl.Agent[rl.RandomPolicy, rl.Trajectory])
        True
        >>> hook = rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(4, progress=False))
        >>> int(agent.trajectory.container.sampleable_inds.sum())  # one transition per step
        4
    """

    __faithful__ = True

    def __init__(self, policy: Any, trajectory: Any):
        if isinstance(policy, Agent):
            raise TypeError(
                "Agent(policy, trajectory) got an Agent as its policy; pass the inner policy "
                f"({type(policy.policy).__name__}) instead"
            )
        if not isinstance(trajectory, Trajectory) and hasattr(trajectory, "slots"):
            trajectory = Trajectory(trajectory)  # bare traces: episodes tracked, never crossed
        if not callable(getattr(trajectory, "push", None)):
            raise TypeError(
                f"Agent(policy, trajectory) needs a trajectory with a push(...) method, got "
                f"{trajectory!r} of type {type(trajectory).__name__}; build one with "
                "stagerl.Trajectory(stagerl.CircularArraySARTSTraces(capacity=...))"
            )
        self._policy = policy
        self._trajectory = trajectory
        #: ``_push_row(step_dict)``: the trajectory's push without packing the names each step;
        #: ``_push_step(step_dict)`` the same for a plain step's four names, looked up once (a
        #: vector env's acts); ``_push_values(state, action, reward, terminal)`` a single env's
        #: plain step, found at the first step (after the episode's first state: a trajectory
        #: learns its lanes there).
        self._push_row = _row_pusher(trajectory)
        self._push_step = _row_pusher(trajectory, _PLAIN_STEP)
        self._push_values = partial(_first_plain_step, self)
        #: ``_push_first_state(state)``: a single env's plain first state (PreEpisode).
        self._push_first_state = partial(_first_state, self)
        keys = _trace_names(trajectory)
        # Resolved once: the pushes need them on every step and episode.
        self._completes_with_next_action = "next_action" in keys
        self._stores_truncated = "truncated" in keys
        self._stores_legal_mask = "legal_actions_mask" in keys
        self._recurrent = isinstance(policy, RecurrentPolicy)
        if self._recurrent and keys and STATE_TRACE not in keys:
            raise ValueError(
                f"Agent({type(policy).__name__}, ...): a recurrent policy's steps are stored with "
                f"the state that went into them, but the trajectory has no {STATE_TRACE!r} "
                f"trace (its traces: {', '.join(keys)}); add one of the policy's state shape, "
                f"e.g. CircularArraySARTSTraces(..., extra={{{STATE_TRACE!r}: (np.float32, "
                f"{tuple(policy.recurrent_state_shape)})}})")
        # Traces the recurrent policy's plan fills besides the step's own (log_prob, value...).
        self._planned_traces = tuple(k for k in keys if k not in _STEP_TRACES) \
            if self._recurrent else ()
        # A step is state, action, reward and terminal alone (the common case, kept fast).
        self._plain_steps = not (self._stores_truncated or self._stores_legal_mask
                                 or self._recurrent)

    def __reduce__(self):
        # Agent[P, T] is made on the fly by plum and cannot be found by name: rebuild it from
        # its parts, which re-infers the same type parameters.
        return Agent, (self._policy, self._trajectory)

    @classmethod
    def __infer_type_parameter__(cls, policy: Any, trajectory: Any) -> tuple[type, type]:
        return type(policy), type(trajectory)

    @property
    def policy(self) -> Any:
        """The inner policy (read-only)."""
        return self._policy

    @property
    def trajectory(self) -> Any:
        """The trajectory (read-only)."""
        return self._trajectory

    def to(self, device: Any) -> Agent:
        self._policy.to(device)
        return self

    def validate(self, env: Any) -> None:
        self._policy.validate(env)

    def state_dict(self) -> dict[str, Any]:
        return self._policy.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._policy.load_state_dict(state)

    def __repr__(self) -> str:
        return f"Agent({self._policy!r}, {self._trajectory!r})"


#: The traces of a step the Agent fills from the env (the others come from the policy).
_STEP_TRACES = frozenset(("state", "next_state", "action", "next_action", "reward", "terminal",
                          "truncated", "legal_actions_mask", "next_legal_actions_mask"))


#: The names of a plain step, in the order the Agent pushes them.
_PLAIN_STEP = ("state", "action", "reward", "terminal")


def _row_pusher(trajectory: Any, keys: tuple | None = None) -> Any:
    """``push(step_dict)`` for ``trajectory``: its ``push_function(keys)`` or ``push_row``
    where it has them, else its ``push(**step)`` (a trajectory of the user's own)."""
    push_function = getattr(trajectory, "push_function", None)
    if keys is not None and callable(push_function) and isinstance(trajectory, Trajectory):
        return push_function(keys)
    push_row = getattr(trajectory, "push_row", None)
    if callable(push_row):
        return push_row
    push = trajectory.push
    return lambda step: push(**step)


def _values_pusher(agent: Agent, keys: tuple) -> Any:
    """``push(*values)`` of steps of exactly ``keys``: the trajectory's own function for them
    (one generated function for the common case), or its dict push."""
    trajectory = agent._trajectory
    if isinstance(trajectory, Trajectory):
        return trajectory.push_values_function(keys)
    push_row = _row_pusher(trajectory, keys)
    return lambda *values: push_row(dict(zip(keys, values, strict=True)))


def _first_plain_step(agent: Agent, *values: Any) -> None:
    # Found at the first step, after the episode's first state: a trajectory learns its lanes
    # at its first push. Kept for the next steps.
    push = agent._push_values = _values_pusher(agent, _PLAIN_STEP)
    push(*values)


def _first_state(agent: Agent, state: Any) -> None:
    # The first episode's state goes through the dict push (a trajectory learns its lanes at
    # its first push); the function for the name is kept for the next ones.
    agent._push_row({"state": state})
    agent._push_first_state = _values_pusher(agent, ("state",))


def _trace_names(trajectory: Any) -> tuple[str, ...]:
    container = getattr(trajectory, "container", trajectory)
    keys = getattr(container, "keys", None)
    return tuple(keys()) if callable(keys) else ()


# One method per stage serves single and vector envs: a second, ``env: VectorEnv`` method would
# be as specific as an algorithm's ``Agent[ItsPolicy, object]`` x ``env: object`` method, and
# the two would be ambiguous.


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_agent_pre_episode(agent: Agent, stage: PreEpisodeStage, env):
    if agent._recurrent:
        start_recurrent_episode(agent, env)
    if isinstance(env, VectorEnv):
        start_vector_episode(agent, env)
        return
    if agent._plain_steps:
        agent._push_first_state(env.state)
        return
    agent._push_row(state_values(agent, env, env.state))


def start_recurrent_episode(agent: Agent, env: Any) -> None:
    """A recurrent policy's lanes of ``env`` start from the initial state (every sub-env of a
    vector env, the player's lane of a game's view, the one lane of a single env)."""
    if agent._completes_with_next_action and isinstance(env, VectorEnv) and \
            env.autoreset_mode is AutoresetMode.SAME_STEP:
        raise ValueError(
            f"{type(agent.policy).__name__} is recurrent: planning the next actions of a "
            "next_action trace at the final states of a SAME_STEP vector env would step every "
            "sub-env's memory once more; build the vector env with AutoresetMode.NEXT_STEP or "
            "use a layout without next_action (CircularArraySARTSTraces)")
    agent._policy.reset_lanes(env)


def _recurrent_values(agent: Agent, env: Any, extra: dict) -> None:
    """Add the state that went into the step, and the planned traces the policy gave, from
    the lanes of ``env`` (each lane's own last plan: another player may have planned since)."""
    policy = agent._policy
    memory = policy.memory
    rows = policy.lanes_of(env)
    one = not isinstance(env, VectorEnv)
    inputs = memory.inputs[rows]
    extra.setdefault(STATE_TRACE, inputs[0] if one else inputs)
    for name in agent._planned_traces:
        value = memory.extra.get(name)
        if value is not None and name not in extra:
            extra[name] = value[rows][0] if one else value[rows]


def record_step(agent: Agent, env: Any, action: Any, **extra: Any) -> None:
    """Push the step ``env`` just took with ``action`` into the agent's trajectory, in one push.

    What the Agent's PostAct method does by default, offered for algorithms that record more per
    step: ``extra`` holds values for the trajectory's extra traces (one per step, or one per
    sub-env on a vector env). The next state goes in as ``state``, with ``action``, ``reward``
    and ``terminal = env.is_terminated``; a truncation (time limit) is told to the trajectory as
    ``truncated=True`` (it ends the episode for the controller, and the transition stays
    bootstrapped), and every step carries ``truncated`` when the trajectory stores it. The
    other traces the Agent knows (``legal_actions_mask``) are filled too unless ``extra`` has
    them. On a vector env the per-sub-env rules of ``docs/vector_envs.md`` apply.

    For a recurrent policy the step also carries ``recurrent_state``, the state that went into
    it, and every trace the policy's plan gave a value for (its ``memory.extra``).
    """
    if agent._recurrent:
        _recurrent_values(agent, env, extra)
    if isinstance(env, VectorEnv):
        record_vector_step(agent, env, action, extra)
        return
    if agent._stores_truncated:
        extra.setdefault("truncated", env.is_truncated)
    elif env.is_truncated and isinstance(agent._trajectory, Trajectory):
        extra["truncated"] = True
    if agent._stores_legal_mask and "legal_actions_mask" not in extra:
        extra["legal_actions_mask"] = legal_actions_mask(env)
    row = {"state": env.state, "action": action, "reward": env.reward,
           "terminal": env.is_terminated}
    _add_extra(row, extra)
    agent._push_row(row)


def _push_agent_post_act(agent: Agent, stage: PostActStage, env, action):
    if not agent._plain_steps:
        record_step(agent, env, action)
        return
    if isinstance(env, VectorEnv):
        record_vector_step(agent, env, action, {})
        return
    if env.is_truncated:  # the common step: one attribute read more
        record_step(agent, env, action)
        return
    agent._push_values(env.state, action, env.reward, env.is_terminated)


def _push_plain_step(agent: Agent, stage: PostActStage, env, action):
    # _push_agent_post_act for an agent of plain steps on a single env, its two checks made once
    if env.is_truncated:
        record_step(agent, env, action)
        return
    agent._push_values(env.state, action, env.reward, env.is_terminated)


def _push_plain_vector_step(agent: Agent, stage: PostActStage, env, action):
    # _push_agent_post_act for an agent of plain steps without next_action on a NEXT_STEP
    # vector env: what record_vector_step(agent, env, action, {}) does for an act that
    # truncates no episode, its checks of the agent and the env's mode made once
    if env.any_episode_end and count_nonzero(env.is_truncated):
        record_vector_step(agent, env, action, {})
        return
    start = env.episode_start if env.any_episode_start else None
    push = agent.__dict__.get("_push_vector_step")
    if push is None:
        push = agent._push_vector_step = vector_step_pusher(agent)
    push(env.state, action, env.reward, env.is_terminated, start)


def _specialised_post_act(agent: Agent, env: Any) -> Any:
    """The run loop's PostAct push for ``agent`` in ``env``, both fixed for the run: the
    method for plain steps (a single env's, or a NEXT_STEP vector env's without next_action),
    or None (the general method)."""
    if not agent._plain_steps:
        return None
    if not isinstance(env, VectorEnv):
        return _push_plain_step
    if agent._completes_with_next_action or getattr(env, "autoreset_mode", None) is not NEXT_STEP:
        return None
    return _push_plain_vector_step


_push_agent_post_act.specialised_for = _specialised_post_act
push.dispatch(precedence=DEFAULT_PRECEDENCE)(_push_agent_post_act)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_agent_post_episode(agent: Agent, stage: PostEpisodeStage, env):
    if isinstance(env, VectorEnv):
        complete_vector_episode(agent, env)
    elif agent._completes_with_next_action:
        agent._trajectory.push(next_action=plan(agent._policy, env))


# ---- plan and optimise forward to the inner policy ---------------------------------------


@forwarding(lambda agent, env: (plan, (agent._policy, env)))
def _plan_agent(agent: Agent, env):
    return plan(agent._policy, env)


@forwarding(lambda agent, stage: (optimise, (agent._policy, stage, agent._trajectory)))
def _optimise_agent(agent: Agent, stage: Stage):
    optimise(agent._policy, stage, agent._trajectory)


plan.dispatch(precedence=DEFAULT_PRECEDENCE)(_plan_agent)
optimise.dispatch(precedence=DEFAULT_PRECEDENCE)(_optimise_agent)
