"""The simultaneous loop: one row per player per act, a time limit truncates (never terminates)
every player's last row, and zero-sum rewards sum to zero per cycle."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from multi_agent_scripted import lane_rows, sarts_agent

import stagerl as rl
from stagerl.multi_agent import (
    MultiAgentHook,
    MultiAgentPolicy,
    PettingZooParallelEnv,
    RockPaperScissors,
)

P0 = [0, 1, 2, 0]  # rock, paper, scissors, rock
P1 = [2, 2, 2, 1]  # scissors thrice, paper
# cycle by cycle: rock beats scissors, scissors beat paper, a tie, paper covers rock
REWARDS = {"player_0": [1.0, -1.0, 0.0, -1.0], "player_1": [-1.0, 1.0, 0.0, 1.0]}


@dataclass
class Flags(rl.EpisodeHook):
    """Per PostAct: (reward, terminated, truncated); per episode: its record."""

    steps: list = field(default_factory=list)
    episodes: list = field(default_factory=list)

    def on_episode(self, episode, policy, env):
        self.episodes.append(episode)


@rl.push.dispatch
def _flags_post_act(hook: Flags, stage: rl.PostActStage, policy, env):
    rl.EpisodeHook.post_act(hook, policy, env)
    hook.steps.append((env.reward, env.is_terminated, env.is_truncated))


def _play(game):
    agents = {"player_0": sarts_agent(P0, state=(np.int64, ())),
              "player_1": sarts_agent(P1, state=(np.int64, ()))}
    for agent in agents.values():
        agent.trajectory.controller = rl.EpisodeSampleRatioController()
    hook = MultiAgentHook({p: Flags() for p in agents})
    rl.run(MultiAgentPolicy(agents), game, rl.StopAfterNEpisodes(1, progress=False), hook)
    return {p: lane_rows(a) for p, a in agents.items()}, hook, agents


def _game(kind):
    if kind == "pure Python":
        return RockPaperScissors(max_cycles=4)
    pytest.importorskip("pettingzoo")
    return PettingZooParallelEnv("classic/rps-v2", seed=0, max_cycles=4)


@pytest.mark.parametrize("kind", ["pure Python", "PettingZoo parallel"])
def test_every_cycle_is_a_row_per_player_and_the_last_is_truncated_not_terminal(kind):
    rows, hook, agents = _play(_game(kind))
    for player, moves in (("player_0", P0), ("player_1", P1)):
        assert rows[player]["action"].tolist() == moves
        assert rows[player]["reward"].tolist() == REWARDS[player]
        assert rows[player]["terminal"].tolist() == [False] * 4
        assert rows[player]["sampleable"].all()
        assert [s[2] for s in hook[player].steps] == [False, False, False, True]
        assert [s[1] for s in hook[player].steps] == [False] * 4
        (episode,) = hook[player].episodes
        assert episode.truncated and not episode.terminated and episode.length == 4
        # the truncation reached the trajectory's controller: one finished episode
        assert agents[player].trajectory.controller.n_episodes == 1
    # a player's state is the other's last move (3 before the first)
    assert rows["player_0"]["state"].tolist() == [3, 2, 2, 2]
    assert rows["player_0"]["next_state"].tolist() == [2, 2, 2, 1]
    assert rows["player_1"]["next_state"].tolist() == [0, 1, 2, 0]
    cycle_sums = np.add(rows["player_0"]["reward"], rows["player_1"]["reward"])
    assert cycle_sums.tolist() == [0.0] * 4


def test_plan_of_the_multi_agent_policy_is_a_dict_of_every_live_players_action():
    game = RockPaperScissors(max_cycles=2)
    policy = MultiAgentPolicy({"player_0": rl.RandomPolicy(rng=0),
                               "player_1": rl.RandomPolicy(rng=1)})
    game.reset()
    actions = rl.plan(policy, game)
    assert sorted(actions) == ["player_0", "player_1"]
    assert all(a in (0, 1, 2) for a in actions.values())


def test_random_play_over_many_matches_is_zero_sum_every_cycle():
    game = RockPaperScissors(max_cycles=15)
    policy = MultiAgentPolicy({"player_0": rl.RandomPolicy(rng=0),
                               "player_1": rl.RandomPolicy(rng=1)})
    hook = MultiAgentHook({p: rl.RewardsPerEpisode() for p in game.players})
    rl.run(policy, game, rl.StopAfterNEpisodes(20, progress=False), hook)
    first, second = hook["player_0"].rewards, hook["player_1"].rewards
    assert len(first) == len(second) == 20
    assert all(len(a) == len(b) == 15 for a, b in zip(first, second, strict=True))
    assert np.all(np.add(first, second) == 0)
    assert np.any(np.asarray(first) != 0)


class _Order(rl.Hook):
    def __init__(self, log: list, name: str) -> None:
        self.log, self.name = log, name


@rl.push.dispatch
def _order_pre_episode(hook: _Order, stage: rl.PreEpisodeStage, policy, env):
    hook.log.append(f"PreEpisode:{hook.name}")


@rl.push.dispatch
def _order_pre_act(hook: _Order, stage: rl.PreActStage, policy, env):
    hook.log.append(f"PreAct:{hook.name}")


@rl.push.dispatch
def _order_post_act(hook: _Order, stage: rl.PostActStage, policy, env):
    hook.log.append(f"PostAct:{hook.name}")


@rl.push.dispatch
def _order_post_episode(hook: _Order, stage: rl.PostEpisodeStage, policy, env):
    hook.log.append(f"PostEpisode:{hook.name}")


def test_the_stages_of_a_simultaneous_game_come_in_the_documented_order():
    log: list = []
    policy = MultiAgentPolicy({"player_0": rl.RandomPolicy(rng=0),
                               "player_1": rl.RandomPolicy(rng=1)})
    hook = MultiAgentHook({p: _Order(log, p[-1]) for p in RockPaperScissors.players})
    rl.run(policy, RockPaperScissors(max_cycles=2), rl.StopAfterNEpisodes(1, progress=False),
           hook + _Order(log, "g"))
    act = ["PreAct:0", "PreAct:1", "PreAct:g", "PostAct:0", "PostAct:1", "PostAct:g"]
    assert log == (["PreEpisode:g", "PreEpisode:0", "PreEpisode:1"] + act + act
                   + ["PostEpisode:0", "PostEpisode:1", "PostEpisode:g"])
