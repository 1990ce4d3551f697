"""The PettingZoo adapters: the same games through PettingZoo give the same rows, masks are
lifted out of the observations, and AEC dead steps never reach the loop."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from multi_agent_scripted import Elimination, Scripted, lane_rows, sarts_agent

import stagerl as rl
from stagerl.multi_agent import (
    MultiAgentHook,
    MultiAgentPolicy,
    PettingZooEnv,
    PettingZooParallelEnv,
    TicTacToe,
    WinDrawLoss,
)

pettingzoo = pytest.importorskip("pettingzoo")
AgentSelector = pytest.importorskip("pettingzoo.utils").AgentSelector


def _scripted_rows(game, first_moves, second_moves):
    first, second = sarts_agent(first_moves), sarts_agent(second_moves)
    rl.run(MultiAgentPolicy({"player_1": first, "player_2": second}), game,
           rl.StopAfterNEpisodes(1, progress=False))
    return lane_rows(first), lane_rows(second)


@pytest.mark.parametrize("moves", [([0, 1, 2], [3, 4]), ([0, 1, 8], [3, 4, 5]),
                                   ([0, 6, 1, 5, 8], [3, 4, 2, 7])],
                         ids=["first wins at ply 5", "second wins at ply 6", "draw"])
def test_scripted_tic_tac_toe_through_the_aec_adapter_stores_the_same_rows(moves):
    ours = _scripted_rows(TicTacToe(), *moves)
    theirs = _scripted_rows(PettingZooEnv("classic/tictactoe-v3", seed=0), *moves)
    for mine, zoo in zip(ours, theirs, strict=True):
        assert mine.keys() == zoo.keys()
        for name in mine:
            np.testing.assert_array_equal(mine[name], zoo[name], err_msg=name)
    assert theirs[1]["terminal"][-1] and theirs[0]["terminal"][-1]


def test_random_games_are_the_same_game_for_game_on_both_envs():
    results = []
    for game in (TicTacToe(), PettingZooEnv("classic/tictactoe-v3", seed=0)):
        policy = MultiAgentPolicy({p: rl.RandomPolicy(rng=i)
                                   for i, p in enumerate(game.players)})
        hook = MultiAgentHook({p: rl.RewardsPerEpisode() for p in game.players})
        rl.run(policy, game, rl.StopAfterNEpisodes(200, progress=False), hook)
        results.append((hook["player_1"].rewards, hook["player_2"].rewards))
    assert results[0] == results[1]


def test_the_aec_adapter_lifts_the_mask_out_of_the_observation():
    game = PettingZooEnv("classic/tictactoe-v3")
    assert game.has_legal_actions_mask and game.mask_source == "observation"
    assert game.state_space_of("player_1") == gymnasium.spaces.Box(0, 1, (3, 3, 2), np.int8)
    game.reset()
    game.act(4)
    mask = game.legal_actions_mask_of("player_2")
    assert mask.dtype == bool and mask.tolist() == [True] * 4 + [False] + [True] * 4
    assert not game.legal_actions_mask_of("player_1").any()  # not its turn
    assert game.state_of("player_2").shape == (3, 3, 2)


class AECElimination(pettingzoo.AECEnv):
    """multi_agent_scripted.Elimination written against PettingZoo's AEC API: a player out
    before the end must be stepped with None (a dead step) while the others play on."""

    metadata = {"name": "elimination_v0"}

    def __init__(self):
        super().__init__()
        self.possible_agents = ["x", "y", "z"]

    def observation_space(self, agent):
        return gymnasium.spaces.Box(0, 100, (2,), np.int64)

    def action_space(self, agent):
        return gymnasium.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self.t = 0
        self.agent_selection = AgentSelector(self.agents).reset()

    def observe(self, agent):
        return np.array([self.t, self.possible_agents.index(agent)], dtype=np.int64)

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0
        self._clear_rewards()
        self.t += 1
        if action == 1:
            self.terminations[agent], self.rewards[agent] = True, -1
            live = [a for a in self.agents if not self.terminations[a]]
            if len(live) == 1:
                self.rewards[live[0]], self.terminations[live[0]] = 1, True
        self._accumulate_rewards()
        order = self.possible_agents
        for k in (1, 2, 3):
            candidate = order[(order.index(agent) + k) % 3]
            if candidate in self.agents and not self.terminations[candidate]:
                self.agent_selection = candidate
                break
        self._deads_step_first()


def test_dead_steps_are_taken_inside_the_aec_adapter_and_rows_match_the_pure_game():
    scripts = {"x": [0, 1], "y": [0, 0, 1], "z": [0, 0]}
    rows = []
    for game in (Elimination(), PettingZooEnv(AECElimination())):
        agents = {p: sarts_agent(m, state=(np.int64, (2,))) for p, m in scripts.items()}
        hook = MultiAgentHook({p: rl.TotalRewardPerEpisode() for p in agents})
        rl.run(MultiAgentPolicy(agents), game, rl.StopAfterNEpisodes(1, progress=False), hook)
        rows.append({p: lane_rows(a) for p, a in agents.items()})
        assert [hook[p].rewards for p in "xyz"] == [[-1.0], [-1.0], [1.0]]
    for player in "xyz":
        for name in rows[0][player]:
            np.testing.assert_array_equal(rows[1][player][name], rows[0][player][name],
                                          err_msg=f"{player} {name}")
    assert rows[1]["x"]["terminal"].tolist() == [False, True]
    assert rows[1]["x"]["next_state"][-1].tolist() == [4, 0]  # x's board when it went out


def test_the_parallel_adapter_plays_pettingzoo_rock_paper_scissors():
    game = PettingZooParallelEnv("classic/rps-v2", seed=0, max_cycles=15)
    assert game.players == ("player_0", "player_1") and not game.has_legal_actions_mask
    policy = MultiAgentPolicy({p: rl.RandomPolicy(rng=i) for i, p in enumerate(game.players)})
    hook = MultiAgentHook({p: WinDrawLoss() + rl.StepsPerEpisode() for p in game.players})
    rl.run(policy, game, rl.StopAfterNEpisodes(30, progress=False), hook)
    first, second = hook["player_0"], hook["player_1"]
    assert first[1].steps == [15] * 30
    assert first[0].wins == second[0].losses and first[0].games == 30


def test_an_id_with_keywords_is_made_by_pettingzoo_and_keywords_without_an_id_are_refused():
    assert PettingZooParallelEnv("classic/rps-v2", max_cycles=3).env.unwrapped.max_cycles == 3
    with pytest.raises(TypeError, match="keyword arguments"):
        PettingZooEnv(TicTacToe(), max_cycles=3)
    with pytest.raises(ValueError, match="action_mask must be one of"):
        PettingZooEnv("classic/tictactoe-v3", action_mask="yes")


class NoRepeat(pettingzoo.ParallelEnv):
    """Two players pick one of three moves each cycle, never their own last one (masked), for
    ``cycles`` cycles; ``a`` scores +1 when the moves differ, ``b`` when they match. The mask is
    in a dict observation, or (``in_info``) in the infos beside a plain observation."""

    metadata = {"name": "no_repeat_v0"}

    def __init__(self, cycles=6, in_info=False):
        self.possible_agents, self.cycles, self.in_info = ["a", "b"], cycles, in_info

    def observation_space(self, agent):
        inner = gymnasium.spaces.Discrete(4)  # the player's last move, 3 before the first
        if self.in_info:
            return inner
        return gymnasium.spaces.Dict({"observation": inner,
                                      "action_mask": gymnasium.spaces.MultiBinary(3)})

    def action_space(self, agent):
        return gymnasium.spaces.Discrete(3)

    def _out(self):
        masks = {a: (np.arange(3) != self.last[a]).astype(np.int8) for a in self.agents}
        if self.in_info:
            return dict(self.last), {a: {"action_mask": masks[a]} for a in self.agents}
        return ({a: {"observation": self.last[a], "action_mask": masks[a]} for a in self.agents},
                {a: {} for a in self.agents})

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        self.last = dict.fromkeys(self.agents, 3)
        return self._out()

    def step(self, actions):
        assert actions["a"] != self.last["a"] and actions["b"] != self.last["b"]
        self.t += 1
        same = actions["a"] == actions["b"]
        rewards = {"a": 0.0 if same else 1.0, "b": 1.0 if same else 0.0}
        self.last = {a: int(actions[a]) for a in self.agents}
        observations, infos = self._out()
        done = self.t >= self.cycles
        truncations = dict.fromkeys(self.agents, done)
        if done:
            self.agents = []
        return observations, rewards, dict.fromkeys(truncations, False), truncations, infos


@pytest.mark.parametrize("in_info", [False, True], ids=["mask in observation", "mask in info"])
def test_the_parallel_adapter_lifts_masks_and_random_play_keeps_to_them(in_info):
    game = PettingZooParallelEnv(NoRepeat(in_info=in_info),
                                 action_mask="info" if in_info else "auto")
    assert game.has_legal_actions_mask and game.mask_source == ("info" if in_info else
                                                                "observation")
    assert game.state_space_of("a") == gymnasium.spaces.Discrete(4)
    game.reset()
    game.act({"a": 0, "b": 2})
    assert game.legal_actions_mask_of("a").tolist() == [False, True, True]
    assert game.legal_actions_mask_of("b").tolist() == [True, True, False]
    assert int(game.state_of("a")) == 0 and game.reward_of("a") == 1.0
    # masked random for both, many matches: an illegal move would fail the env's own assert
    agents = {p: rl.Agent(rl.RandomPolicy(rng=i), rl.Trajectory(rl.CircularArraySARTSTraces(
        capacity=300, legal_actions_mask=(np.bool_, (3,))))) for i, p in enumerate(game.players)}
    hook = MultiAgentHook({p: rl.StepsPerEpisode() for p in game.players})
    rl.run(MultiAgentPolicy(agents), game, rl.StopAfterNEpisodes(40, progress=False), hook)
    assert hook["a"].steps == [6] * 40
    for agent in agents.values():
        rows = lane_rows(agent)
        moved = rows["sampleable"]
        assert moved.sum() == 240 and not rows["terminal"].any()  # truncated, never terminal
        actions, last = rows["action"][moved], rows["state"][moved]
        assert (actions != last).all()  # never its own last move
        assert (rows["next_state"][moved] == actions).all()
        expected = np.arange(3)[None, :] != last[:, None]  # every stored mask the env's
        np.testing.assert_array_equal(rows["legal_actions_mask"][moved], expected)


def test_an_illegal_move_in_a_masked_parallel_game_is_refused_naming_the_player():
    game = PettingZooParallelEnv(NoRepeat())
    policy = MultiAgentPolicy({"a": Scripted([1, 1]), "b": Scripted([0, 1])})
    with pytest.raises(ValueError, match=r"player 'a'.*chose the action 1.*legal: \[0, 2\]"):
        rl.run(policy, game, rl.StopAfterNEpisodes(1, progress=False))
    assert game.env.t == 1  # the second cycle never reached the env
