"""Evaluating the players of a game: ``rl.evaluate(multi_agent_policy, game)``, per player."""

from __future__ import annotations

from typing import Any

from stagerl.core.evaluate import acting_policy, deterministic
from stagerl.core.hooks import EmptyHook
from stagerl.core.run import Experiment
from stagerl.core.stop_conditions import StopAfterNEpisodes, StopAfterNSteps, StopIfAny
from stagerl.multi_agent.policy import MultiAgentPolicy

__all__ = ["evaluate_players"]


def evaluate_players(policy: Any, game: Any, episodes: int,
                     max_episode_steps: int | None = None) -> dict[Any, list[float]]:
    """``{player: [its return in each episode]}`` of ``episodes`` deterministic games of
    ``policy`` (a :class:`MultiAgentPolicy`) in ``game`` (what ``rl.evaluate`` returns for a
    game). A player's return is everything it received in the game
    (``game.episode_return_of``); ``max_episode_steps`` cuts a game after that many moves.

    The games are played by the policies that act for ``policy``'s (an Agent's inner one), with
    ``deterministic`` set: nothing is recorded or learned, and the policy's own run (its binding
    to the training game, the moves it has pending there) is left as it was, so an evaluation in
    the middle of a game changes nothing of it. A policy without a deterministic action
    (``RandomPolicy``) draws as it always does.
    """
    if not isinstance(policy, MultiAgentPolicy):
        raise TypeError(f"{type(game).__name__} is a game of the players {list(game.players)}: "
                        f"evaluating it needs a stagerl.multi_agent.MultiAgentPolicy, got "
                        f"{type(policy).__name__}; to evaluate one policy as one player, play "
                        "it against opponents in stagerl.multi_agent.Versus")
    acting = {key: acting_policy(member) for key, member in policy.policies.items()}
    evaluated = MultiAgentPolicy(acting, policy.policy_mapping)
    returns: dict[Any, list[float]] = {p: [] for p in game.players}
    with deterministic(evaluated):
        for _ in range(episodes):
            stop: Any = StopAfterNEpisodes(1, progress=False)
            if max_episode_steps is not None:
                stop = StopIfAny(stop, StopAfterNSteps(max_episode_steps, progress=False))
            Experiment(evaluated, game, stop, EmptyHook(), check_methods=False).run()
            for player in game.players:
                returns[player].append(float(game.episode_return_of(player)))
    return returns
