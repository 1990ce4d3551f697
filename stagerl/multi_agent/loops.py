"""The run loops of games: sequential (turn-based) and simultaneous.

``stagerl.Experiment`` hands its run to these when its env's ``dynamic_style`` says so. Each
player has its own stages, called with its policy, its view of the game and its hook (from a
``MultiAgentHook``); the game-level hooks (every other member of the hook) see the game and
every act. The sequential loop, as ``docs/multi_agent.md`` draws it::

    push(hook, PreExperimentStage(), policy, game); push(policy, PreExperimentStage(), game)
    while not stop:
        game.reset(); game-level PreEpisode
        while not reset_condition.check(policy, game):          # before every turn
            p = game.current_player
            if p has a move pending: p's PostAct (push its move, optimise, p's hook)
            elif p's first turn: p's PreEpisode
            p's PreAct; game-level PreAct
            action = plan(policy[p], view[p]); game.act(action); pending[p] = action
            game-level PostAct; stop = stop_condition.check(policy, game)
        if the game ended: PostAct for every player with a move pending
        PostEpisode for every player who moved; game-level PostEpisode

A player's transition is completed **lazily**, when it is next asked to move or when the episode
ends, so its reward is every reward the others' moves gave it, and its flags are the episode's
true ones. A run cut by the stop (or a reset condition) between a player's move and its next
turn leaves that move unrecorded (it has no next state yet), and the player's PostEpisode sees
the state that move was chosen at. The simultaneous loop is the ordinary one: every live player
moves in each act, and each move's transition is complete right after it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stagerl.core.dispatch import push
from stagerl.core.method_checks import check_methods
from stagerl.core.stage_calls import POST_ACT, StageCalls, composed_members
from stagerl.core.stages import PreExperimentStage
from stagerl.multi_agent.env import MultiAgentEnv
from stagerl.multi_agent.hooks import player_hooks
from stagerl.multi_agent.policy import MultiAgentPolicy

__all__ = ["run_sequential", "run_simultaneous", "PlayerCalls"]

PRE_EXPERIMENT = PreExperimentStage()


class PlayerCalls:
    """One player's stages: its policy's and its hook's calls, resolved once per experiment
    (``StageCalls`` on the player's policy, view and hook)."""

    __slots__ = ("player", "policy", "view", "hook", "calls", "lanes")

    def __init__(self, multi_agent: MultiAgentPolicy, player: Any, hook: Any) -> None:
        self.player = player
        self.policy = multi_agent.player_policies[player]
        self.view = multi_agent.views[player]
        self.hook = hook
        self.lanes = multi_agent.lanes[player]
        self.calls = StageCalls(self.policy, self.view, hook)

    def enter(self) -> None:
        """Point the player's Agent at its lane (before every call into its policy)."""
        for trajectory, lane in self.lanes:
            if trajectory.lane != lane:
                trajectory.use_lane(lane)

    def start_episode(self) -> None:
        self.enter()
        for call in self.calls.pre_episode:
            call()

    def pre_act(self) -> None:
        self.enter()
        for call in self.calls.pre_act:
            call()

    def plan(self) -> Any:
        self.enter()
        return self.calls.plan()

    def complete(self, action: Any) -> None:
        """The player's PostAct: the move's transition, its optimise, its hook."""
        self.enter()
        push_action = self.calls.push_with_action[type(action)]
        if push_action is not None:
            push_action(self.policy, POST_ACT, self.view, action)
        for call in self.calls.post_act:
            call()

    def end_episode(self, waiting: bool) -> None:
        """The player's PostEpisode; ``waiting``: its last move is unrecorded (the run was cut
        before its next turn), so it sees the state that move was chosen at."""
        self.enter()
        if not waiting:
            calls = self.calls.post_episode
        else:
            frozen = self.view.frozen()
            calls = StageCalls(self.policy, frozen, self.hook).post_episode
        for call in calls:
            call()

    def refresh(self) -> None:
        self.calls = self.calls.current()


def _start(experiment: Any) -> tuple:
    """Check the experiment, announce PreExperiment, resolve every player's calls."""
    policy, env, hook = experiment.policy, experiment.env, experiment.hook
    name = type(env).__name__
    if not isinstance(policy, MultiAgentPolicy):
        players = list(getattr(env, "players", ()))
        raise TypeError(
            f"{name} is a {env.dynamic_style!r} game of the players {players}: run needs a "
            f"stagerl.multi_agent.MultiAgentPolicy that maps each player to a policy, got "
            f"{type(policy).__name__}; e.g. MultiAgentPolicy({{player: policy for player in "
            f"env.players}}) (the same policy under every player plays all of them)")
    if policy.game is not env:
        policy.validate(env)
    hooks = player_hooks(hook, policy.players, name)  # checked before any hook is called
    push(hook, PRE_EXPERIMENT, policy, env)  # hook first here; a MultiAgentHook tells its players
    push(policy, PRE_EXPERIMENT, env)  # each policy once
    players = {p: PlayerCalls(policy, p, hooks[p]) for p in policy.players}
    game = StageCalls(policy, env, hook)
    if experiment.check_methods:
        check_methods(policy, env, composed_members(hook, PRE_EXPERIMENT, policy, env))
        for p in players.values():
            check_methods(p.policy, p.view, composed_members(p.hook, PRE_EXPERIMENT, p.policy,
                                                             p.view))
    return policy, env, players, game


def _refuse_finished_episode(env: Any) -> None:
    # Otherwise the reset condition is true at once, forever: an endless loop of empty episodes.
    if env.is_terminated or env.is_truncated:
        raise RuntimeError(f"{type(env).__name__} is already terminated or truncated right after "
                           "reset(); its reset() must start a new episode")


def _checked_legal(player: PlayerCalls, action: Any) -> None:
    mask = player.view.legal_actions_mask
    legal = isinstance(action, (int, np.integer)) and not isinstance(action, bool) \
        and 0 <= action < len(mask) and bool(mask[action])
    if not legal:
        raise ValueError(
            f"player {player.player!r}'s policy {type(player.policy).__name__} chose the action "
            f"{action!r}, which is not legal now (legal: {np.flatnonzero(mask).tolist()}); its "
            f"plan must choose among env.legal_actions_mask (RandomPolicy does; an explorer "
            f"takes it as explorer.plan(values, mask=env.legal_actions_mask))")


def run_sequential(experiment: Any, start_at: Any = None) -> None:
    """The turn-based loop (module docstring); ``experiment`` is a ``stagerl.Experiment``."""
    policy, env, players, game = _start(experiment)
    stop_condition, reset_condition = experiment.stop_condition, experiment.reset_condition
    after_step = experiment.after_step
    masked = bool(getattr(env, "has_legal_actions_mask", False))
    players_finish_apart = _players_finish_apart(env)
    turns = policy.turns
    pending, started = turns.pending, turns.started
    resumed = start_at  # a StepEnd where a saved run goes on, else None
    stop = False
    while not stop:
        game = game.current()
        for player in players.values():
            player.refresh()
        if resumed is None:
            env.reset()
            _refuse_finished_episode(env)
            turns.clear()
            for call in game.pre_episode:
                call()
        else:  # a saved run goes on from the turn it ended at, with its moves pending
            stop, resumed = bool(resumed.stopped), None
        while not stop and not reset_condition.check(policy, env):
            name = env.current_player
            player = players[name]
            if name in pending:
                player.complete(pending.pop(name))
            elif name not in started:
                player.start_episode()
                started[name] = True
            player.pre_act()
            for call in game.pre_act:
                call()
            action = player.plan()
            if masked:
                _checked_legal(player, action)
            env.act(action)
            env.last_action = player.view.last_action = action
            pending[name] = action
            for call in game.post_act:
                call()
            if players_finish_apart:
                _complete_players_done(env, players, pending)
            stop = bool(stop_condition.check(policy, env))
            for callback in after_step:
                callback(stop)
        _end_episode(env, players, turns, game)


def _players_finish_apart(env: Any) -> bool:
    # Per-player flags that are not the episode's: a player may be done before the others.
    game = getattr(env, "unwrapped", env)
    return any(getattr(type(game), name, None) is not getattr(MultiAgentEnv, name)
               for name in ("is_terminated_for", "is_truncated_for"))


def _complete_players_done(env: Any, players: dict, pending: dict) -> None:
    # A player done before the episode ends takes no more turns: its last move completes now.
    if env.is_terminated or env.is_truncated:
        return  # the episode's end completes every move
    for name in [n for n in pending if env.is_terminated_for(n) or env.is_truncated_for(n)]:
        players[name].complete(pending.pop(name))


def _end_episode(env: Any, players: dict, turns: Any, game: StageCalls) -> None:
    pending = turns.pending
    if env.is_terminated or env.is_truncated:
        for name in [n for n in env.players if n in pending]:
            players[name].complete(pending.pop(name))
    for name in turns.started:
        players[name].end_episode(waiting=name in pending)
    for call in game.post_episode:
        call()


def run_simultaneous(experiment: Any, start_at: Any = None) -> None:
    """The simultaneous loop: every live player moves in each act (``act`` takes a dict)."""
    policy, env, players, game = _start(experiment)
    stop_condition, reset_condition = experiment.stop_condition, experiment.reset_condition
    after_step = experiment.after_step
    masked = bool(getattr(env, "has_legal_actions_mask", False))
    started = policy.turns.started
    resumed = start_at  # a StepEnd where a saved run goes on, else None
    stop = False
    while not stop:
        game = game.current()
        for player in players.values():
            player.refresh()
        if resumed is None:
            env.reset()
            _refuse_finished_episode(env)
            policy.turns.clear()
            for call in game.pre_episode:
                call()
        else:
            stop, resumed = bool(resumed.stopped), None
        while not stop and not reset_condition.check(policy, env):
            acting = [players[name] for name in env.acting_players]
            for player in acting:
                if player.player not in started:
                    player.start_episode()
                    started[player.player] = True
            for player in acting:
                player.pre_act()
            for call in game.pre_act:
                call()
            actions = {}
            for player in acting:
                actions[player.player] = action = player.plan()
                if masked:
                    _checked_legal(player, action)
            env.act(actions)
            env.last_action = actions
            for player in acting:  # one row per player who moved
                player.view.last_action = action = actions[player.player]
                player.complete(action)
            for call in game.post_act:
                call()
            stop = bool(stop_condition.check(policy, env))
            for callback in after_step:
                callback(stop)
        for name in started:
            players[name].end_episode(waiting=False)
        for call in game.post_episode:
            call()
