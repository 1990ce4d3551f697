"""Games of several players: turn-based and simultaneous envs, players mapped to policies, and
every reward credited to the player it belongs to (see ``docs/multi_agent.md``).

Public API only; no logic lives here.
"""

from stagerl.multi_agent import inference as _inference  # noqa: F401 (compute_actions)
from stagerl.multi_agent.env import MultiAgentEnv
from stagerl.multi_agent.hooks import MultiAgentHook, WinDrawLoss
from stagerl.multi_agent.opponents import AlwaysSameMove, BeatLastMove, MixedPerEpisode
from stagerl.multi_agent.pettingzoo import PettingZooEnv, PettingZooParallelEnv
from stagerl.multi_agent.player_columns import MultiAgentCSVLogger, MultiAgentTensorBoardLogger
from stagerl.multi_agent.policy import MultiAgentPolicy, Turns
from stagerl.multi_agent.rock_paper_scissors import RockPaperScissors
from stagerl.multi_agent.styles import SEQUENTIAL, SIMULTANEOUS, DynamicStyle
from stagerl.multi_agent.tic_tac_toe import TicTacToe
from stagerl.multi_agent.versus import MaskedVersus, Versus
from stagerl.multi_agent.views import MaskedPlayerView, PlayerView, view_of
from stagerl.multi_agent.wrappers import FlattenStates, GameWrapper

__all__ = [
    "MultiAgentEnv",
    "DynamicStyle",
    "SEQUENTIAL",
    "SIMULTANEOUS",
    "PlayerView",
    "MaskedPlayerView",
    "view_of",
    "MultiAgentPolicy",
    "Turns",
    "MultiAgentHook",
    "WinDrawLoss",
    "MultiAgentCSVLogger",
    "MultiAgentTensorBoardLogger",
    "Versus",
    "MaskedVersus",
    "GameWrapper",
    "FlattenStates",
    "AlwaysSameMove",
    "BeatLastMove",
    "MixedPerEpisode",
    "TicTacToe",
    "RockPaperScissors",
    "PettingZooEnv",
    "PettingZooParallelEnv",
]
