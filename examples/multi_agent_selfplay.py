"""Self-play: one masked DQN agent plays both sides of tic-tac-toe, then is evaluated against a
masked random player in each seat.

The agent's parameters are shared by the two players; its replay keeps one lane per player, so
no n-step return chains one player's move onto the other's. Every reward reaches the row of
the player it belongs to (the opponent's winning move is the loser's -1). The evaluation plays
the agent greedily in a ``Versus`` (one seat of the game, the other player part of the env),
first to move in half the games and second in the other half.

    python examples/multi_agent_selfplay.py [env steps]      (default 60,000: about a minute)
"""

from __future__ import annotations

import sys

import numpy as np

import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
from stagerl.experiments import torch_threads
from stagerl.multi_agent import (
    MultiAgentHook,
    MultiAgentPolicy,
    TicTacToe,
    Versus,
    WinDrawLoss,
    view_of,
)


def main(steps: int = 60_000) -> None:
    game = TicTacToe()
    config = DQNConfig(total_steps=steps, learning_rate=1e-3, batch_size=64, buffer_size=50_000,
                       learning_starts=1_000, gamma=0.9, target_update_interval=500,
                       exploration_fraction=0.2, n_step=3, net_arch=(128, 128))
    with torch_threads():  # small networks: one thread is fastest
        shared = make_dqn_agent(view_of(game, "player_1"), config, seed=0, device="cpu")
        policy = MultiAgentPolicy({"player_1": shared, "player_2": shared})
        results = MultiAgentHook({p: WinDrawLoss() for p in game.players})
        rl.run(policy, game, rl.StopAfterNSteps(steps, progress=False), results)
    rates = results["player_1"].rates()
    print(f"self-play, {results['player_1'].games} games: the first player won "
          f"{rates['win']:.0%}, drew {rates['draw']:.0%}")
    random = rl.RandomPolicy(rng=1)
    for seat in game.players:
        versus = Versus(TicTacToe(), {p: random for p in game.players}, seats=seat)
        returns = np.array(rl.evaluate(policy, versus, episodes=500))
        print(f"as {seat} against masked random: win {np.mean(returns > 0):.1%}, "
              f"draw {np.mean(returns == 0):.1%}, loss {np.mean(returns < 0):.1%}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60_000)
