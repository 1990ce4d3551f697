"""Hooks of multi-agent runs: a hook per player, and win / draw / loss counts.

:class:`MultiAgentHook` holds one hook per player (RL.jl's MultiAgentHook). Each is called at
that player's stages with the player's policy and view, so every single-agent hook works for a
player as it is: ``TotalRewardPerEpisode`` sums the rewards of the player's transitions,
``StepsPerEpisode`` counts its moves. Composed with game-level hooks (``ProgressBar``,
``CSVLogger``, ``StopAfterNSteps``'s bar) by ``+``: those see the game and every act.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, push
from stagerl.core.episodes import Episode, EpisodeHook
from stagerl.core.hooks import EmptyHook
from stagerl.core.hooks_base import ComposedHook, Hook
from stagerl.core.stages import PostExperimentStage, PreExperimentStage

__all__ = ["MultiAgentHook", "WinDrawLoss", "player_hooks"]


class MultiAgentHook(Hook):
    """One hook per player: ``MultiAgentHook({player: hook, ...})``.

    Its keys must be the game's players, all of them (use ``EmptyHook()`` for a player with
    nothing to record); a mismatch is a ``ValueError`` when the run starts, before any hook is
    called. ``hook[player]`` is the player's hook.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.multi_agent import MultiAgentHook, MultiAgentPolicy, TicTacToe
        >>> players = TicTacToe.players
        >>> policy = MultiAgentPolicy({p: rl.RandomPolicy(rng=i) for i, p in enumerate(players)})
        >>> hook = MultiAgentHook({p: rl.TotalRewardPerEpisode() for p in players})
        >>> _ = rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(5, progress=False), hook)
        >>> [a + b for a, b in zip(hook["player_1"].rewards, hook["player_2"].rewards)]
        [0.0, 0.0, 0.0, 0.0, 0.0]
    """

    def __init__(self, hooks: Mapping) -> None:
        if not isinstance(hooks, Mapping) or not hooks:
            raise TypeError(f"MultiAgentHook needs a non-empty dict {{player: hook}}, got "
                            f"{hooks!r}")
        for player, hook in hooks.items():
            if not isinstance(hook, Hook):
                raise TypeError(f"MultiAgentHook: the hook of player {player!r} must be a "
                                f"stagerl.Hook, got {hook!r} of type {type(hook).__name__}")
        self.hooks = dict(hooks)

    def __getitem__(self, player: Any) -> Hook:
        return self.hooks[player]

    def check_players(self, players: tuple, game: str) -> None:
        if set(self.hooks) != set(players):
            missing = [p for p in players if p not in self.hooks]
            unknown = [k for k in self.hooks if k not in players]
            raise ValueError(
                f"MultiAgentHook has hooks for {list(self.hooks)}, but {game} has the players "
                f"{list(players)} (none for {missing}, no player {unknown}); give one hook per "
                f"player, EmptyHook() for a player with nothing to record")

    def __repr__(self) -> str:
        return f"MultiAgentHook({self.hooks!r})"


def player_hooks(hook: Any, players: tuple, game: str) -> dict:
    """``{player: hook}`` from every :class:`MultiAgentHook` among ``hook``'s members (a player
    with several gets them composed, left to right; none: ``EmptyHook()``). Checks their keys."""
    members = hook.hooks if isinstance(hook, ComposedHook) else (hook,)
    found: dict = {p: [] for p in players}
    for member in members:
        if isinstance(member, MultiAgentHook):
            member.check_players(players, game)
            for player in players:
                found[player].append(member.hooks[player])
    return {p: hooks[0] if len(hooks) == 1 else ComposedHook(*hooks) if hooks else EmptyHook()
            for p, hooks in found.items()}


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_multi_agent_hook_experiment(hook: MultiAgentHook,
                                      stage: PreExperimentStage | PostExperimentStage,
                                      policy, env):
    # The other stages reach the players' hooks from the loop, at each player's own stages.
    views = getattr(policy, "views", {})
    if getattr(policy, "game", None) is not env:
        return  # the run failed before binding the policy to this game: nothing started
    for player, member in hook.hooks.items():
        if player in views:
            push(member, stage, policy[player], views[player])


@dataclass
class WinDrawLoss(EpisodeHook):
    """Wins, draws and losses of a player (or of a single agent): an episode the env ended is
    a win if its return is above zero, a loss if below, else a draw. Episodes cut by the stop
    or a reset condition have no result and are not counted.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.multi_agent import MultiAgentHook, MultiAgentPolicy, TicTacToe
        >>> players = TicTacToe.players
        >>> policy = MultiAgentPolicy({p: rl.RandomPolicy(rng=i) for i, p in enumerate(players)})
        >>> hook = MultiAgentHook({p: WinDrawLoss() for p in players})
        >>> _ = rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(50, progress=False), hook)
        >>> first, second = hook["player_1"], hook["player_2"]
        >>> first.games, first.wins == second.losses, first.draws == second.draws
        (50, True, True)
    """

    wins: int = 0
    draws: int = 0
    losses: int = 0

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        if not (episode.terminated or episode.truncated):
            return
        if episode.total_reward > 0:
            self.wins += 1
        elif episode.total_reward < 0:
            self.losses += 1
        else:
            self.draws += 1

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def rates(self) -> dict[str, float]:
        """``{"win": ..., "draw": ..., "loss": ...}`` as fractions of the games counted."""
        n = self.games or 1
        return {"win": self.wins / n, "draw": self.draws / n, "loss": self.losses / n}
