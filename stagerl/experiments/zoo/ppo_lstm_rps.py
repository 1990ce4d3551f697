"""Recurrent PPO (LSTM) at rock-paper-scissors against an opponent drawn per match (always the
same move, or beating the learner's last move): above 9 per match, where no memoryless policy
gets more than about 7."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from stagerl.algorithms._checks import check_ints
from stagerl.algorithms.on_policy import RecurrentPPOConfig, make_recurrent_ppo_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import RunSettings
from stagerl.multi_agent import RockPaperScissors
from stagerl.multi_agent.rock_paper_scissors import NONE

#: The opponents a match is played against, one drawn per match.
OPPONENTS = ("always_same", "beat_last")


class RockPaperScissorsAgainstHeuristics(gymnasium.Env):
    """``player_0``'s side of ``stagerl.multi_agent.RockPaperScissors``, ``player_1`` played by
    an opponent drawn for each match: ``"always_same"`` (a move drawn for the match, played
    every cycle) or ``"beat_last"`` (the move that beats ``player_0``'s last one; the drawn move
    first). The game supplies the rules (moves, +1/-1/0 per cycle, the match truncated after
    ``max_cycles``), the opponent plays from its own observation of the game.

    The observation is the opponent's last move, one-hot over (rock, paper, scissors, none).
    A memoryless policy can beat ``always_same`` every cycle but one, and ``beat_last`` only
    by chance (about 7 per match of 15 cycles on average); remembering its own last move beats
    both (up to 14).

    Example:
        >>> env = RockPaperScissorsAgainstHeuristics(max_cycles=3)
        >>> observation, info = env.reset(seed=0)
        >>> observation.tolist(), info["opponent"] in OPPONENTS
        ([0.0, 0.0, 0.0, 1.0], True)
        >>> _, reward, terminated, truncated, _ = env.step(0)
        >>> reward in (-1.0, 0.0, 1.0), terminated, truncated
        (True, False, False)
    """

    metadata: dict = {}

    def __init__(self, max_cycles: int = 15):
        self.game = RockPaperScissors(max_cycles)
        self.observation_space = gymnasium.spaces.Box(0.0, 1.0, (4,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(3)
        self.opponent, self.move = OPPONENTS[0], 0

    def _observation(self) -> np.ndarray:
        one_hot = np.zeros(4, dtype=np.float32)
        one_hot[self.game.state_of("player_0")] = 1.0
        return one_hot

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple:
        super().reset(seed=seed)
        self.game.reset()
        self.opponent = OPPONENTS[int(self.np_random.integers(len(OPPONENTS)))]
        self.move = int(self.np_random.integers(3))
        return self._observation(), {"opponent": self.opponent}

    def step(self, action: Any) -> tuple:
        seen = self.game.state_of("player_1")  # player_0's last move
        theirs = self.move if self.opponent == "always_same" or seen == NONE else (seen + 1) % 3
        self.game.act({"player_0": int(action), "player_1": theirs})
        return (self._observation(), self.game.reward_of("player_0"), False,
                self.game.is_truncated, {"opponent": self.opponent})


@dataclass
class Config(RunSettings, RecurrentPPOConfig):
    """Recurrent PPO against the two heuristic opponents of RLlib's rock-paper-scissors
    example, with matches of PettingZoo's 15 cycles. The LSTM is given its previous move with
    each observation (RLlib's ``lstm_use_prev_action``): a policy that samples its moves cannot
    otherwise know which one the opponent's ``beat_last`` answers.

    Attributes:
        num_envs: matches played at once (sub-envs).
        max_cycles: cycles per match.
    """

    steps: int = 200_000
    num_envs: int = 8
    max_cycles: int = 15
    n_steps: int = 128
    batch_size: int = 256
    n_epochs: int = 10
    learning_rate: float = 1e-3
    gamma: float = 0.99
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    rnn_hidden_size: int = 64
    max_seq_len: int = 15
    rnn_prev_action: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "num_envs", "max_cycles")


def make_env(config: Config, seed: int) -> Any:
    """``config.num_envs`` matches (SAME_STEP autoreset: every act is a cycle of each)."""
    from stagerl.envs.gym import GymEnv
    from stagerl.envs.vector import GymVectorEnv

    if config.num_envs == 1:
        return GymEnv(RockPaperScissorsAgainstHeuristics(config.max_cycles), seed=seed)
    matches = [_match(config.max_cycles)] * config.num_envs
    return GymVectorEnv(SyncVectorEnv(matches, autoreset_mode=AutoresetMode.SAME_STEP), seed=seed)


def make_eval_env(config: Config, seed: int) -> Any:
    from stagerl.envs.gym import GymEnv

    return GymEnv(RockPaperScissorsAgainstHeuristics(config.max_cycles), seed=seed)


class _match:  # noqa: N801  (a factory for SyncVectorEnv: plain data, so the env can be saved)
    def __init__(self, max_cycles: int):
        self.max_cycles = max_cycles

    def __call__(self) -> RockPaperScissorsAgainstHeuristics:
        return RockPaperScissorsAgainstHeuristics(self.max_cycles)


def make_agent(config: RecurrentPPOConfig, env: Any, seed: int, device: Any) -> Any:
    return make_recurrent_ppo_agent(env, config, seed, device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent, make_eval_env)
