"""The multi-agent components and games pickle and deep-copy, before and after a run, and the
copy continues exactly as the original does."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch
from multi_agent_scripted import lane_rows
from resume_games import SETUPS as SMALL

import stagerl as rl
from stagerl.experiments import configure, get_experiment
from stagerl.multi_agent import (
    SEQUENTIAL,
    SIMULTANEOUS,
    MultiAgentHook,
    MultiAgentPolicy,
    PettingZooEnv,
    PettingZooParallelEnv,
    RockPaperScissors,
    TicTacToe,
    WinDrawLoss,
    view_of,
)

COPIES = {"pickle": lambda x: pickle.loads(pickle.dumps(x)), "deepcopy": copy.deepcopy}


def _agent(seed, state):
    traces = rl.CircularArraySARTSTraces(capacity=200, state=state)
    return rl.Agent(rl.RandomPolicy(rng=seed), rl.Trajectory(traces, rl.BatchSampler(16, rng=seed)))


def _tic_tac_toe_self_play(game):
    shared = _agent(0, (np.int8, (3, 3, 2)))
    policy = MultiAgentPolicy({"shared": shared, "other": rl.RandomPolicy(rng=5)},
                              {"player_1": "shared", "player_2": "shared"})
    hook = MultiAgentHook({p: rl.TotalRewardPerEpisode() + WinDrawLoss()
                           for p in game.players}) + rl.StepsPerEpisode()
    return policy, game, hook


def _rock_paper_scissors(game):
    policy = MultiAgentPolicy({"player_0": _agent(1, (np.int64, ())),
                               "player_1": _agent(2, (np.int64, ()))})
    hook = MultiAgentHook({p: rl.RewardsPerEpisode() for p in game.players})
    return policy, game, hook


def _pettingzoo(kind):
    pytest.importorskip("pettingzoo")
    if kind == "aec":
        return PettingZooEnv("classic/tictactoe-v3", seed=0)
    return PettingZooParallelEnv("classic/rps-v2", seed=0, max_cycles=7)


SETUPS = {
    "tic-tac-toe self-play": lambda: _tic_tac_toe_self_play(TicTacToe()),
    "rock-paper-scissors": lambda: _rock_paper_scissors(RockPaperScissors(max_cycles=7)),
    "PettingZoo AEC self-play": lambda: _tic_tac_toe_self_play(_pettingzoo("aec")),
    "PettingZoo parallel": lambda: _rock_paper_scissors(_pettingzoo("parallel")),
}


def _run(parts, steps):
    policy, game, hook = parts
    rl.run(policy, game, rl.StopAfterNSteps(steps, progress=False), hook)


def _records(parts):
    policy, game, hook = parts
    out = []
    for key, member in sorted(policy.policies.items()):
        if isinstance(member, rl.Agent):
            for lane in range(member.trajectory.container.n_lanes):
                out.append((key, lane, {k: v.tolist() for k, v in lane_rows(member, lane).items()}))
            out.append(member.trajectory.sample()["state"].tolist())
    members = hook.hooks if isinstance(hook, rl.ComposedHook) else (hook,)
    for member in members:
        if isinstance(member, MultiAgentHook):
            out.append({p: repr(h) for p, h in member.hooks.items()})
        else:
            out.append(repr(member))
    return out


@pytest.mark.parametrize("how", sorted(COPIES))
@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_a_copy_made_after_a_run_continues_exactly_as_the_original(setup, how):
    original = SETUPS[setup]()
    _run(original, 37)  # stops mid-game
    copied = COPIES[how](original)
    assert _records(copied) == _records(original)
    _run(original, 120)
    _run(copied, 120)
    assert _records(copied) == _records(original)


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_copy_made_before_any_run_runs_as_the_original(how):
    original = SETUPS["tic-tac-toe self-play"]()
    copied = COPIES[how](original)
    _run(original, 50)
    _run(copied, 50)
    assert _records(copied) == _records(original)


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_game_copied_mid_game_plays_on_as_the_original(how):
    game = TicTacToe()
    game.reset()
    for square in (4, 0, 8):
        game.act(square)
    twin = COPIES[how](game)
    for g in (game, twin):
        g.act(2)
        g.act(6)  # player_1: 4, 8, 6 -> no line yet; player_2: 0, 2
    assert twin.squares == game.squares and twin.current_player == game.current_player
    np.testing.assert_array_equal(twin.state_of("player_2"), game.state_of("player_2"))
    assert twin.reward_of("player_1") == game.reward_of("player_1")


@pytest.mark.parametrize("how", sorted(COPIES))
def test_styles_stay_the_singletons_and_views_copy(how):
    assert COPIES[how](SEQUENTIAL) is SEQUENTIAL
    assert COPIES[how](SIMULTANEOUS) is SIMULTANEOUS
    game = TicTacToe()
    game.reset()
    view = COPIES[how](view_of(game, "player_2"))
    assert view.player == "player_2" and view.legal_actions_mask.tolist() == [False] * 9


@pytest.mark.parametrize("how", sorted(COPIES))
def test_the_multi_agent_csv_logger_copies_and_logs_on(tmp_path, how):
    import csv

    from stagerl.multi_agent import MultiAgentCSVLogger

    policy = MultiAgentPolicy({p: rl.RandomPolicy(rng=i) for i, p in enumerate(TicTacToe.players)})
    logger = MultiAgentCSVLogger(tmp_path)
    rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(3, progress=False), logger)
    copied_policy, copied_logger = COPIES[how]((policy, logger))
    rl.run(copied_policy, TicTacToe(), rl.StopAfterNEpisodes(2, progress=False), copied_logger)
    rows = list(csv.DictReader((tmp_path / "episodes.csv").open()))
    assert [int(r["episode"]) for r in rows] == [1, 2, 3, 4, 5]
    assert all(float(r["return_player_1"]) == -float(r["return_player_2"]) for r in rows)


def _experiment_parts(name):
    """A named game experiment, small, as ``stagerl run`` builds it: its masked DQN or PPO
    players and heuristic opponents, its wrapped and scored game, its evaluation ``Versus``."""
    experiment = get_experiment(name)
    config = configure(name, steps=SMALL[name]["steps"], **SMALL[name]["overrides"])
    torch.manual_seed(0)
    game = experiment.make_env(config, 0)
    return [experiment.make_agent(config, game, 0, "cpu"), game,
            experiment.make_eval_env(config, 7)]


def _tensors(state, prefix=""):
    if isinstance(state, dict):
        for key, value in state.items():
            yield from _tensors(value, f"{prefix}{key}/")
    elif isinstance(state, (list, tuple)):
        for i, value in enumerate(state):
            yield from _tensors(value, f"{prefix}{i}/")
    elif isinstance(state, torch.Tensor):
        yield prefix, state.tolist()


def _played(parts, steps):
    """Run ``steps`` more, then what the run left: an evaluation in the Versus, every Agent's
    rows and tensors (parameters, optimiser state), the other policies."""
    policy, game, versus = parts
    rl.run(policy, game, rl.StopAfterNSteps(steps, progress=False))
    out = [rl.evaluate(policy, versus, 4), repr(game)]
    for key in sorted(policy.policies):
        member = policy.policies[key]
        if isinstance(member, rl.Agent):
            container = member.trajectory.container
            out.append({name: container[name].tolist() for name in container.keys()})
            out.append(dict(_tensors(member.state_dict())))
        else:
            out.append(repr(member))
    return out


@pytest.mark.parametrize("how", sorted(COPIES))
@pytest.mark.parametrize("name", ["dqn-tictactoe-selfplay", "ppo-rps"])
def test_a_game_experiment_copied_mid_game_plays_and_evaluates_on_as_the_original(name, how):
    """Masked DQN (self-play lanes) and PPO players, the heuristic opponents' rngs, FlattenStates
    and a scored game, the evaluation Versus: copied together mid-game (and mid-rollout)."""
    original = _experiment_parts(name)
    _played(original, SMALL[name]["k"])  # a mid-game step, past the first updates
    policy, game, _ = original
    assert not (game.is_terminated or game.is_truncated)
    copied = COPIES[how](original)
    first = _played(copied, 150)
    assert first == _played(original, 150)
    assert len(first[2]["action"]) > 0  # the learner's rows (a PPO rollout: since its update)
