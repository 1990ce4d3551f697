"""Recurrent policies: a memory per lane, carried from step to step and reset where an episode
starts; the state that went into each step stored with it.

The timeline of one lane (``docs/recurrent.md`` draws it for a vector env)::

    reset  s0 ─ h0 = initial ─┐
    plan   compute_actions(s0, h0) -> a0, h1       step 0 stored with recurrent_state = h0
    plan   compute_actions(s1, h1) -> a1, h2       step 1 stored with recurrent_state = h1
    ...    the episode ends; the lane's next first state s0' starts again from the initial state

A :class:`RecurrentPolicy` defines ``recurrent_state_shape`` (one lane's state), optionally
``initial_state(n)`` (zeros by default) and a ``compute_actions`` method
(``@stagerl.compute_actions.dispatch``) that maps observations and states to actions, new states
and extra data. stagerl does the rest: ``plan`` reads each lane's state from the policy's
:class:`LaneMemory`, calls ``compute_actions`` and writes the new state back; a lane starts
again from the initial state at its episode's start (a single env at PreEpisode, each sub-env
of a vector env where ``env.episode_start`` says so, each player of a game at that player's
PreEpisode, on its own lane ``view.lane``); the Agent stores the state that went into each step
in the trajectory's ``recurrent_state`` trace, with every extra value the trajectory has a
trace for. Evaluation (``deterministic``) keeps a memory of its own, so an evaluation in the
middle of training never touches the training lanes' state.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stagerl.core.actions import ComputedActions, compute_actions
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, plan, push
from stagerl.core.env import VectorEnv
from stagerl.core.fallbacks import refuse_observations
from stagerl.core.policy import Policy
from stagerl.core.stages import PreEpisodeStage
from trajectories import STATE_TRACE

__all__ = ["RecurrentPolicy", "LaneMemory", "starting_lanes", "plan_recurrent", "STATE_TRACE"]


class LaneMemory:
    """The recurrent state of every lane, one row each (``values``: ``(n_lanes, *shape)``), and
    what went into and came out of each lane's last plan: ``inputs`` (the state it started
    from, what the step is stored with) and ``extra`` (name -> one row per lane: its
    log-probability, value...). A lane's step is recorded after other lanes (other players of
    a game) may have planned, so each lane keeps its own.

    Lanes are added as they are first used, in their initial state. A reset writes the
    initial state into the rows of the lanes it names and nothing else.

    Example:
        >>> memory = LaneMemory((2,))
        >>> memory.ensure(3, lambda n: np.zeros((n, 2), np.float32))
        >>> memory.values[:] = [[1, 1], [2, 2], [3, 3]]
        >>> memory.reset(np.array([False, True, False]), lambda n: np.zeros((n, 2), np.float32))
        >>> memory.values.tolist()
        [[1.0, 1.0], [0.0, 0.0], [3.0, 3.0]]
    """

    def __init__(self, shape: tuple):
        self.shape = tuple(int(n) for n in shape)
        self.values = np.zeros((0, *self.shape), dtype=np.float32)
        self.inputs = np.zeros((0, *self.shape), dtype=np.float32)
        self.extra: dict = {}

    def ensure(self, n_lanes: int, initial: Any) -> None:
        """Hold at least ``n_lanes`` lanes; new ones in ``initial(k)``'s state."""
        held = len(self.values)
        if n_lanes > held:
            more = np.asarray(initial(n_lanes - held), dtype=np.float32)
            self.values = np.concatenate([self.values, more])
            self.inputs = np.concatenate([self.inputs, more])
            self.extra = {name: _grown(value, n_lanes) for name, value in self.extra.items()}

    def reset(self, lanes: Any, initial: Any) -> None:
        """Put ``lanes`` (a bool mask over the lanes held, or lane indices) in ``initial(k)``'s
        state; every other lane's row is left as it is."""
        rows = np.flatnonzero(lanes) if np.asarray(lanes).dtype == np.bool_ else \
            np.asarray(lanes, dtype=np.int64).reshape(-1)
        if rows.size:
            self.ensure(int(rows.max()) + 1, initial)
            self.values[rows] = initial(rows.size)

    def remember(self, rows: slice, inputs: np.ndarray, extra: dict) -> None:
        """Keep what went into (``inputs``) and came with (``extra``) the lanes' last plan."""
        self.inputs[rows] = inputs
        for name, value in extra.items():
            value = np.asarray(value)
            kept = self.extra.get(name)
            if kept is None or kept.shape[1:] != value.shape[1:] or kept.dtype != value.dtype:
                kept = self.extra[name] = np.zeros((len(self.values), *value.shape[1:]),
                                                   dtype=value.dtype)
            kept[rows] = value

    def __repr__(self) -> str:
        return f"LaneMemory(shape={self.shape}, lanes={len(self.values)})"


def _grown(array: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros((n, *array.shape[1:]), dtype=array.dtype)
    out[:len(array)] = array
    return out


def starting_lanes(env: Any) -> Any:
    """The sub-envs of a vector env whose ``env.state`` is the first state of an episode
    (their memory starts again before this plan): ``env.episode_start``, or ``None`` when no
    sub-env starts one (the common act)."""
    return env.episode_start if env.any_episode_start else None


class RecurrentPolicy(Policy):
    """Base of policies with a memory per lane (see the module docstring).

    Subclasses set ``recurrent_state_shape`` (the shape of one lane's state; an attribute or
    a property) and define ``compute_actions`` for their type. ``initial_state(n)`` is zeros;
    override it for another start. ``memory`` is the :class:`LaneMemory` of the current mode
    (training, or ``deterministic`` evaluation).

    Example:
        >>> import stagerl as rl
        >>> from stagerl.core.actions import as_batch, checked_state, one_or_batch
        >>> class FirstLeft(rl.RecurrentPolicy):   # counts its steps: left first, then right
        ...     recurrent_state_shape = (1,)
        >>> @rl.compute_actions.dispatch
        ... def compute_actions(policy: FirstLeft, observations, state, deterministic):
        ...     batch, single = as_batch(observations, (), "FirstLeft")
        ...     state = checked_state("FirstLeft", state, (1,), len(batch), single,
        ...                           policy.initial_state)
        ...     actions = (state[:, 0] > 0).astype(np.int64)
        ...     return one_or_batch(actions, state + 1, {}, single)
        >>> hook = rl.run(FirstLeft(), rl.RandomWalk1D(), rl.StopAfterNEpisodes(2, progress=False),
        ...               rl.StepsPerEpisode())
        >>> hook.steps          # each episode starts from a count of 0: one step left first
        [5, 5]
    """

    #: The shape of one lane's state (subclasses set it).
    recurrent_state_shape: tuple = ()

    def initial_state(self, n: int = 1) -> np.ndarray:
        """The state of ``n`` lanes at an episode's start: ``(n, *recurrent_state_shape)`` zeros."""
        return np.zeros((n, *self.recurrent_state_shape), dtype=np.float32)

    @property
    def memory(self) -> LaneMemory:
        """The lanes' states in the current mode (training, or ``deterministic``)."""
        memories = self.__dict__.get("_memories")
        if memories is None:
            memories = self._memories = {}
        mode = bool(self.deterministic)
        memory = memories.get(mode)
        if memory is None:
            memory = memories[mode] = LaneMemory(self.recurrent_state_shape)
        return memory

    def lanes_of(self, env: Any) -> slice:
        """The rows of ``memory`` that ``env``'s state belongs to: every sub-env of a vector
        env, the player's lane of a game's view (``env.lane``), else lane 0."""
        if isinstance(env, VectorEnv):
            return slice(0, env.num_envs)
        lane = int(getattr(env, "lane", 0))
        return slice(lane, lane + 1)

    def reset_lanes(self, env: Any) -> None:
        """Start every lane of ``env`` again from the initial state (an episode starts)."""
        rows = self.lanes_of(env)
        self.memory.reset(np.arange(rows.start, rows.stop), self.initial_state)

    def act_in(self, env: Any) -> ComputedActions:
        """What ``plan`` does: the lanes of ``env`` act on ``env.state`` from their states (a
        vector env's lanes that start an episode from the initial state), and keep the new
        states. Returns the batch of results (one row per lane); the memory keeps what the
        Agent records (``memory.inputs``, ``memory.extra``)."""
        rows = self.lanes_of(env)
        memory = self.memory
        memory.ensure(rows.stop, self.initial_state)
        if isinstance(env, VectorEnv):
            starts = starting_lanes(env)
            if starts is not None:
                memory.reset(starts, self.initial_state)
            observations = env.state
        else:
            observations = np.asarray(env.state)[np.newaxis]
        state_in = memory.values[rows].copy()
        out = compute_actions(self, observations, state_in, self.deterministic)
        memory.values[rows] = out.state
        memory.remember(rows, state_in, out.extra)
        return out


def plan_recurrent(policy: RecurrentPolicy, env: Any) -> Any:
    """What ``plan`` is for a recurrent policy: :meth:`RecurrentPolicy.act_in`, one action per
    sub-env of a vector env, else the one action (a Python number for a scalar action)."""
    actions = policy.act_in(env).actions
    if isinstance(env, VectorEnv):
        return actions
    action = actions[0]
    return action.item() if isinstance(action, np.generic) else action


plan.dispatch(precedence=DEFAULT_PRECEDENCE)(plan_recurrent)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_recurrent_pre_episode(policy: RecurrentPolicy, stage: PreEpisodeStage, env):
    policy.reset_lanes(env)  # a policy without an Agent (evaluation, a game's opponent)


refuse_observations(RecurrentPolicy)
