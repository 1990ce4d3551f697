"""Bad input gets a clear error naming the player and the fix, before anything is written."""

from __future__ import annotations

import math

import numpy as np
import pytest
from multi_agent_scripted import Scripted, lane_rows, sarts_agent

import stagerl as rl
from stagerl.logging import CSVLogger
from stagerl.multi_agent import (
    MultiAgentHook,
    MultiAgentPolicy,
    RockPaperScissors,
    TicTacToe,
)


def _random(seed=0):
    return rl.RandomPolicy(rng=seed)


def _nothing_written(logdir):
    return not any(logdir.iterdir()) if logdir.exists() else True


def test_a_policy_dict_keyed_by_other_names_than_the_players_is_refused_naming_them(tmp_path):
    policy = MultiAgentPolicy({"player_1": _random(), "player_3": _random(1)})
    with pytest.raises(ValueError) as error:
        rl.run(policy, TicTacToe(), rl.StopAfterNSteps(10, progress=False),
               CSVLogger(tmp_path / "logs"))
    message = str(error.value)
    assert "no policy for ['player_2']" in message and "no player ['player_3']" in message
    assert "key the dict by the game's players" in message and "policy_mapping=" in message
    assert _nothing_written(tmp_path / "logs")


def test_a_mapping_function_that_returns_an_unknown_policy_is_refused_naming_the_player():
    policy = MultiAgentPolicy({"learner": _random()}, lambda player: "opponent")
    with pytest.raises(ValueError, match=r"maps player 'player_1' to 'opponent', which is not "
                                         r"one of the policies \['learner'\]"):
        rl.run(policy, TicTacToe())


def test_a_mapping_dict_without_a_player_is_refused_naming_it():
    policy = MultiAgentPolicy({"learner": _random()}, {"player_1": "learner"})
    with pytest.raises(ValueError, match="no entry for player 'player_2'"):
        rl.run(policy, TicTacToe())


def test_an_illegal_action_of_a_user_policy_is_refused_before_the_game_moves():
    first = sarts_agent([4, 4])  # the second move plays an occupied square
    policy = MultiAgentPolicy({"player_1": first, "player_2": Scripted([0])})
    game = TicTacToe()
    with pytest.raises(ValueError) as error:
        rl.run(policy, game, rl.StopAfterNEpisodes(1, progress=False))
    message = str(error.value)
    assert "player 'player_1'" in message and "chose the action 4" in message
    assert "legal: [1, 2, 3, 5, 6, 7, 8]" in message and "env.legal_actions_mask" in message
    assert game.squares.count(0) == 7  # the two legal moves, not the third
    # only the first move's transition (completed at the second turn) was stored
    assert lane_rows(first)["action"].tolist() == [4]
    assert "player_1" not in policy.turns.pending


@pytest.mark.parametrize("action", [9, -1, True, 1.0, "4", None])
def test_actions_that_are_no_square_are_refused_naming_the_player(action):
    policy = MultiAgentPolicy({"player_1": Scripted([action]), "player_2": Scripted([0])})
    with pytest.raises(ValueError, match=f"player 'player_1'.*chose the action {action!r}"):
        rl.run(policy, TicTacToe())


class JointRandom(rl.Policy):
    """A joint policy: one action for every player at once (simultaneous games only)."""

    def validate(self, env):
        if not env.dynamic_style.simultaneous:
            raise TypeError("JointRandom moves every player at once: it plays simultaneous "
                            "games only; give each player of a turn-based game its own policy")


@rl.plan.dispatch
def _plan_joint(policy: JointRandom, env):
    return {player: 0 for player in env.game.players}


def test_a_single_policy_for_a_sequential_game_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(TypeError) as error:
        rl.run(_random(), TicTacToe(), rl.StopAfterNSteps(5, progress=False),
               CSVLogger(tmp_path / "logs"))
    message = str(error.value)
    assert "TicTacToe is a SEQUENTIAL game of the players ['player_1', 'player_2']" in message
    assert "MultiAgentPolicy({player: policy for player in env.players})" in message
    assert _nothing_written(tmp_path / "logs")


def test_a_simultaneous_only_policy_under_a_player_of_a_sequential_game_is_refused(tmp_path):
    policy = MultiAgentPolicy({"player_1": _random(), "player_2": JointRandom()})
    with pytest.raises(TypeError) as error:
        rl.run(policy, TicTacToe(), rl.StopAfterNSteps(5, progress=False),
               CSVLogger(tmp_path / "logs"))
    message = str(error.value)
    assert "player 'player_2' of TicTacToe cannot be played by JointRandom" in message
    assert "give each player of a turn-based game its own policy" in message
    assert _nothing_written(tmp_path / "logs")
    # the same policy plays a simultaneous game
    joint = MultiAgentPolicy({"player_0": JointRandom(), "player_1": _random()})
    joint.validate(RockPaperScissors())


def test_a_multi_agent_hook_whose_keys_are_not_the_players_is_refused_at_run_start(tmp_path):
    policy = MultiAgentPolicy({p: _random(i) for i, p in enumerate(TicTacToe.players)})
    hook = CSVLogger(tmp_path / "logs") + MultiAgentHook({"player_1": rl.StepsPerEpisode()})
    with pytest.raises(ValueError) as error:
        rl.run(policy, TicTacToe(), rl.StopAfterNSteps(5, progress=False), hook)
    message = str(error.value)
    assert "none for ['player_2']" in message and "one hook per player" in message
    assert _nothing_written(tmp_path / "logs")
    assert hook[1]["player_1"].steps == []


def test_a_multi_agent_policy_on_a_single_agent_env_is_refused():
    policy = MultiAgentPolicy({"player_1": _random()})
    with pytest.raises(TypeError, match="a MultiAgentPolicy plays a multi-agent game"):
        rl.run(policy, rl.RandomWalk1D())


@pytest.mark.parametrize("bad", [{}, [rl.RandomPolicy()], {"player_1": "random"}])
def test_multi_agent_policy_needs_a_dict_of_policies(bad):
    with pytest.raises(TypeError, match="MultiAgentPolicy"):
        MultiAgentPolicy(bad)


def test_multi_agent_hook_needs_a_dict_of_hooks():
    with pytest.raises(TypeError, match="the hook of player 'player_1' must be a stagerl.Hook"):
        MultiAgentHook({"player_1": print})


@pytest.mark.parametrize("cycles", [0, -1, 1.5, True, math.nan, math.inf, "15"])
def test_rock_paper_scissors_refuses_a_cycle_limit_that_is_not_a_positive_int(cycles):
    with pytest.raises(ValueError, match=f"max_cycles must be a positive int, got "
                                         f"max_cycles={cycles!r}"):
        RockPaperScissors(max_cycles=cycles)


@pytest.mark.parametrize("actions", [{"player_0": 0}, {"player_0": 0, "player_1": 3},
                                     {"player_0": 0, "player_1": 1.0}, [0, 1]])
def test_rock_paper_scissors_refuses_moves_that_are_not_one_per_player(actions):
    game = RockPaperScissors()
    game.reset()
    with pytest.raises(ValueError, match="RockPaperScissors"):
        game.act(actions)
    assert game.cycle == 0 and game.reward_of("player_0") == 0.0


def test_an_agent_whose_trajectory_cannot_keep_a_lane_per_player_is_refused_naming_them():
    used = sarts_agent([0])
    used.trajectory.push(state=np.zeros((3, 3, 2), np.int8))
    used.trajectory.push(state=np.ones((3, 3, 2), np.int8), action=0, reward=0.0, terminal=False)
    with pytest.raises(ValueError, match=r"the Agent of 'player_1' has a trajectory that already "
                                         r"holds 1 rows of a single-agent run"):
        rl.run(MultiAgentPolicy({"player_1": used, "player_2": _random()}), TicTacToe())
    traces = rl.CircularPrioritizedTraces(
        rl.CircularArraySARTSTraces(capacity=8, state=(np.int8, (3, 3, 2))))
    prioritized = rl.Agent(_random(), rl.Trajectory(traces))
    with pytest.raises(TypeError, match="the Agent of 'player_1' and 'player_2' cannot keep one "
                                        "lane per player: prioritized traces"):
        rl.run(MultiAgentPolicy({"player_1": prioritized, "player_2": prioritized}), TicTacToe())


def test_a_trajectory_with_a_mask_trace_in_a_game_without_masks_is_refused():
    traces = rl.CircularArraySLARTTraces(capacity=8, legal_actions_mask=(np.bool_, (3,)))
    agent = rl.Agent(_random(), rl.Trajectory(traces))
    with pytest.raises(ValueError, match="stores legal_actions_mask, but RockPaperScissors has "
                                         "no legal-action masks"):
        rl.run(MultiAgentPolicy({"player_0": agent, "player_1": _random()}), RockPaperScissors())
