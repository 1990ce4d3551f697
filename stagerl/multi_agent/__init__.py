"""Games of several players: turn-based and simultaneous envs, players mapped to policies, and
every reward credited to the player it belongs to (see ``docs/multi_agent.md``).

Public API only; no logic lives here.
"""

from stagerl.multi_agent import inference as _inference  # noqa: F401 (compute_actions)
from stagerl.multi_agent.env import MultiAgentEnv
from stagerl.multi_agent.hooks import MultiAgentHook, WinDrawLoss
from stagerl.multi_agent.lanes import PlayerLanes
from stagerl.multi_agent.pettingzoo import PettingZooEnv, PettingZooParallelEnv
from stagerl.multi_agent.player_columns import MultiAgentCSVLogger
from stagerl.multi_agent.policy import MultiAgentPolicy, Turns
from stagerl.multi_agent.rock_paper_scissors import RockPaperScissors
from stagerl.multi_agent.styles import SEQUENTIAL, SIMULTANEOUS, DynamicStyle
from stagerl.multi_agent.tic_tac_toe import TicTacToe
from stagerl.multi_agent.views import MaskedPlayerView, PlayerView, view_of

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
    "PlayerLanes",
    "TicTacToe",
    "RockPaperScissors",
    "PettingZooEnv",
    "PettingZooParallelEnv",
]
