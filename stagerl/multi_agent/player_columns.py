"""Per-player columns in the logs of a game: ``MultiAgentCSVLogger`` and
``MultiAgentTensorBoardLogger``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.core.episodes import Episode
from stagerl.logging.base import ended_in_env
from stagerl.logging.csv_logger import EPISODE_COLUMNS, CSVLogger
from stagerl.logging.tensorboard_logger import TensorBoardLogger

__all__ = ["MultiAgentCSVLogger", "MultiAgentTensorBoardLogger"]


@dataclass
class MultiAgentCSVLogger(CSVLogger):
    """A :class:`~stagerl.logging.CSVLogger` for games: one row per game in ``episodes.csv``,
    with a column ``return_<player>`` per player after the usual ones.

    Used as a game-level hook (not inside a ``MultiAgentHook``): ``env_step`` counts acts (turns
    in a turn-based game), ``length`` is the game's number of acts, ``return`` the sum over
    the scored players (every player unless ``game.score(...)`` named some: then 0 in a
    zero-sum game) of every reward, and ``return_<player>`` the player's episode return: every
    reward it received in the game (``env.episode_return_of(player)``).

    Example:
        >>> import csv, pathlib, tempfile
        >>> import stagerl as rl
        >>> from stagerl.multi_agent import MultiAgentCSVLogger, MultiAgentPolicy, TicTacToe
        >>> logdir = pathlib.Path(tempfile.mkdtemp())
        >>> policy = MultiAgentPolicy({p: rl.RandomPolicy(rng=i)
        ...                            for i, p in enumerate(TicTacToe.players)})
        >>> _ = rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(3, progress=False),
        ...            MultiAgentCSVLogger(logdir))
        >>> rows = list(csv.DictReader((logdir / "episodes.csv").open()))
        >>> list(rows[0])[-3:]
        ['wall_time', 'return_player_1', 'return_player_2']
        >>> all(float(r["return_player_1"]) == -float(r["return_player_2"]) for r in rows)
        True
    """

    def episode_columns(self, env: Any) -> tuple[str, ...]:
        return EPISODE_COLUMNS + tuple(f"return_{player}" for player in _players(env))

    def episode_values(self, episode: Episode, env: Any) -> tuple:
        return tuple(repr(float(env.episode_return_of(player))) for player in _players(env))


@dataclass
class MultiAgentTensorBoardLogger(TensorBoardLogger):
    """A :class:`~stagerl.logging.TensorBoardLogger` for games: with CleanRL's tags (whose
    ``charts/episodic_return`` is the game-level return, that of the scored players), every game
    the env ended also writes ``charts/episodic_return/<player>``, each player's episode return
    (``env.episode_return_of(player)``), in the same event. Used as a game-level hook."""

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        if ended_in_env(episode):
            scalars = {"charts/episodic_return": episode.total_reward,
                       "charts/episodic_length": episode.length}
            for player in _players(env):
                scalars[f"charts/episodic_return/{player}"] = float(env.episode_return_of(player))
            self.add_scalars(self.env_step, scalars)


def _players(env: Any) -> tuple:
    players = getattr(env, "players", None)
    if not players:
        raise TypeError(f"the multi-agent loggers log games (envs with players), got "
                        f"{type(env).__name__}; use CSVLogger or TensorBoardLogger for a "
                        "single-agent env")
    return tuple(players)
