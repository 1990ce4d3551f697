"""Tabular Q-learning plays tic-tac-toe as the second player against a masked random first player.

The learner is an Agent under ``player_2``; ``player_1`` is a ``RandomPolicy`` (it draws only
legal moves, from its view's ``legal_actions_mask``), which acts and never learns. The learner's
trajectory stores the legal-action masks too, so its Q-learning target is a max over the
*legal* actions of the next state. Uniform random play scores -0.30 per game as the second
player; the learner climbs well above zero.

    python examples/multi_agent_tictactoe.py [games]
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np

import stagerl as rl
from stagerl.multi_agent import MultiAgentHook, MultiAgentPolicy, TicTacToe, WinDrawLoss

POWERS = 3 ** np.arange(9)


def board_index(states: np.ndarray) -> np.ndarray:
    """Boards ``(..., 3, 3, 2)`` (own marks, opponent's marks) as integers below 3**9."""
    cells = states[..., 0].astype(np.int64) + 2 * states[..., 1]
    return cells.reshape(*states.shape[:-3], 9) @ POWERS


@dataclass
class TabularQ(rl.Policy):
    lr: float = 0.2
    gamma: float = 0.95
    explorer: rl.EpsilonGreedyExplorer = field(
        default_factory=lambda: rl.EpsilonGreedyExplorer(0.05, decay_steps=20_000, rng=0))

    def __post_init__(self):
        self.q = np.zeros((3**9, 9))


@rl.plan.dispatch
def plan(policy: TabularQ, env: rl.Env):
    values = policy.q[board_index(np.asarray(env.state))]
    return int(policy.explorer.plan(values, mask=env.legal_actions_mask))


@rl.optimise.dispatch
def optimise(policy: TabularQ, stage: rl.PostActStage, trajectory: rl.Trajectory):
    for batch in trajectory:
        s, s2 = board_index(batch["state"]), board_index(batch["next_state"])
        legal_next = batch["next_legal_actions_mask"]
        # max over the legal actions of the next state (none at a final board: 0)
        best_next = np.where(legal_next, policy.q[s2], -np.inf).max(axis=1)
        best_next = np.where(legal_next.any(axis=1), best_next, 0.0)
        target = batch["reward"] + policy.gamma * (1 - batch["terminal"]) * best_next
        for i in range(len(s)):  # rows one after the other, as TDLearner applies them
            a = batch["action"][i]
            policy.q[s[i], a] += policy.lr * (target[i] - policy.q[s[i], a])


def masked_replay(capacity: int) -> rl.Traces:
    """SARTS with the legal-action masks multiplexed like the states."""
    return (rl.MultiplexTraces("state", "next_state",
                               rl.CircularArrayBuffer(capacity + 1, (3, 3, 2), np.int8))
            + rl.MultiplexTraces("legal_actions_mask", "next_legal_actions_mask",
                                 rl.CircularArrayBuffer(capacity + 1, (9,), np.bool_))
            + rl.Traces(action=rl.CircularArrayBuffer(capacity, (), np.int64),
                        reward=rl.CircularArrayBuffer(capacity, (), np.float32),
                        terminal=rl.CircularArrayBuffer(capacity, (), np.bool_)))


def main(games: int = 20_000) -> MultiAgentHook:
    learner = rl.Agent(TabularQ(), rl.Trajectory(masked_replay(10_000),
                                                 rl.BatchSampler(8, rng=1)))
    policy = MultiAgentPolicy({"player_1": rl.RandomPolicy(rng=2), "player_2": learner})
    hook = MultiAgentHook({"player_1": rl.EmptyHook(),
                           "player_2": rl.TotalRewardPerEpisode() + WinDrawLoss()})
    rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(games, progress=False), hook)
    rewards = hook["player_2"][0].rewards
    for start in range(0, games, max(games // 5, 1)):
        chunk = rewards[start:start + max(games // 5, 1)]
        print(f"games {start + 1:>6}-{start + len(chunk):<6} mean reward as player_2: "
              f"{np.mean(chunk):+.3f}")
    rates = hook["player_2"][1].rates()
    print(f"win {rates['win']:.3f}  draw {rates['draw']:.3f}  loss {rates['loss']:.3f} "
          f"over {games} games")
    return hook


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
