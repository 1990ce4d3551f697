"""QBasedPolicy: an explorer choosing among a learner's action values."""

from __future__ import annotations

from typing import Any

import gymnasium

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, optimise, plan
from stagerl.core.env import VectorEnv
from stagerl.core.policy import Policy
from stagerl.core.stages import PostActStage, PostEpisodeStage
from stagerl.policies.explorers import GreedyExplorer
from trajectories import DummySampler

__all__ = ["QBasedPolicy"]

_GREEDY = GreedyExplorer()

# The env attribute that holds the legal actions (RandomPolicy and the trace names use the first).
_MASK_NAMES = ("legal_actions_mask", "legal_action_mask")


class QBasedPolicy(Policy):
    """Acts with ``explorer.plan(learner.values(env.state))`` and learns with the learner.

    When the env has a ``legal_actions_mask`` (or ``legal_action_mask``) attribute, it is passed
    to the explorer as the mask, so illegal actions are never chosen. A vector env's batch of
    states gives a batch of action values and an array of actions.

    ``optimise(policy, PostActStage(), trajectory)`` runs ``learner.update(batch)`` for every
    batch the trajectory yields (``for batch in trajectory``): as in RL.jl, a tabular Q learns
    right after each step, once the step has been pushed, and when its controller allows. With a
    ``DummySampler`` (online learning: the batch is the container itself) it learns at most one
    batch per step, since a second would be the same rows again.

    SARSA layouts (a ``next_action`` trace) complete an episode's last transition at
    PostEpisode, with the action planned at its final state; with a ``DummySampler`` the policy
    learns from the container then too (``optimise(policy, PostEpisodeStage(), trajectory)``), so
    every complete transition is learned, also at capacity 1. An ``"ExpectedSARSA"`` learner
    built without an explorer takes its expectation under this policy's explorer.

    Example:
        >>> import stagerl as rl
        >>> policy = rl.QBasedPolicy(
        ...     rl.TDLearner(rl.TabularQApproximator(7, 2), gamma=0.9, lr=0.5),
        ...     rl.EpsilonGreedyExplorer(0.1, decay_steps=500, rng=0),
        ... )
        >>> trajectory = rl.Trajectory(rl.CircularArraySARTSTraces(capacity=1))
        >>> _ = rl.run(rl.Agent(policy, trajectory), rl.RandomWalk1D(),
        ...            rl.StopAfterNSteps(1000, progress=False))
        >>> int(policy.learner.values(3).argmax())           # right, towards the +1 end
        1
    """

    def __init__(self, learner: Any, explorer: Any):
        if not callable(getattr(learner, "values", None)):
            raise TypeError(
                f"QBasedPolicy needs a learner with values(state), got {type(learner).__name__}"
            )
        if not callable(getattr(explorer, "plan", None)):
            raise TypeError(
                "QBasedPolicy needs an explorer with plan(values, mask=None), got "
                f"{type(explorer).__name__}"
            )
        self.learner = learner
        self.explorer = explorer
        if getattr(learner, "method", None) == "ExpectedSARSA" and learner.explorer is None:
            learner.explorer = explorer
        self._bound_env: Any = None
        self._mask_name: str | None = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_bound_env"] = None  # bound again at the next plan
        return state

    def validate(self, env: Any) -> None:
        """A tabular learner needs a ``Discrete`` state space of at most its ``n_states``
        states (and a ``Discrete`` action space of its ``n_actions``)."""
        approximator = getattr(self.learner, "approximator", None)
        n_states = getattr(approximator, "n_states", None)
        if n_states is None:
            return
        vector = isinstance(env, VectorEnv)
        spaces = [("state", env.single_state_space if vector else env.state_space, n_states)]
        n_actions = getattr(approximator, "n_actions", None)
        if n_actions is not None:
            spaces.append(("action",
                           env.single_action_space if vector else env.action_space, n_actions))
        for what, space, n in spaces:
            if not isinstance(space, gymnasium.spaces.Discrete):
                raise TypeError(
                    f"{type(approximator).__name__} indexes a table by {what}, but "
                    f"{type(env).__name__}'s {what} space is {space}; a tabular learner needs "
                    f"Discrete {what}s (discretise them, e.g. with a gymnasium "
                    "ObservationWrapper, or use a network-based algorithm such as "
                    "stagerl.algorithms.dqn)"
                )
            if int(space.start) != 0 or int(space.n) > n:
                raise ValueError(
                    f"{type(approximator).__name__} has {n} {what}s (0..{n - 1}), but "
                    f"{type(env).__name__}'s {what} space is {space}; build it with "
                    f"n_{what}s={int(space.start) + int(space.n)}"
                )

    def _bind(self, env: Any) -> None:
        # Resolved once per env, not per step: whether (and under which name) it has a mask.
        self._bound_env = env
        self._mask_name = next((name for name in _MASK_NAMES if hasattr(env, name)), None)

    def state_dict(self) -> dict[str, Any]:
        explorer_state = getattr(self.explorer, "state_dict", None)
        return {
            "table": self.learner.state_dict()["table"],
            "explorer": {} if explorer_state is None else explorer_state(),
            "explorer_kind": type(self.explorer).__name__,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Loads the table; the explorer's counters and rng only into an explorer of the same
        kind (a greedy policy can take an epsilon-greedy one's table, and keeps its own
        explorer)."""
        self.learner.load_state_dict({"table": state["table"]})
        explorer_state = state.get("explorer")
        kind = state.get("explorer_kind", type(self.explorer).__name__)
        if explorer_state and kind == type(self.explorer).__name__:
            self.explorer.load_state_dict(explorer_state)

    def __repr__(self) -> str:
        return f"QBasedPolicy({self.learner!r}, {self.explorer!r})"


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_q_based(policy: QBasedPolicy, env):
    if env is not policy._bound_env:
        policy._bind(env)
    values = policy.learner.values(env.state)
    mask = None if policy._mask_name is None else getattr(env, policy._mask_name)
    if policy.deterministic:  # evaluation: greedy, the explorer's step and rng untouched
        return _GREEDY.plan(values, mask)
    if mask is None:
        return policy.explorer.plan(values)
    return policy.explorer.plan(values, mask)


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _optimise_q_based(policy: QBasedPolicy, stage: PostActStage, trajectory):
    update = policy.learner.update
    online = isinstance(getattr(trajectory, "sampler", None), DummySampler)
    for batch in trajectory:
        update(batch)
        if online:  # the batch is the container: once per step learns each row once
            break


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _optimise_q_based_episode_end(policy: QBasedPolicy, stage: PostEpisodeStage, trajectory):
    # The episode's last SARSA transition was completed just now (the Agent's PostEpisode push
    # came first); an online learner takes it before the next episode's first push evicts it.
    if isinstance(getattr(trajectory, "sampler", None), DummySampler) and "next_action" in (
            trajectory.keys() if callable(getattr(trajectory, "keys", None)) else ()):
        policy.learner.update(trajectory.sample())
