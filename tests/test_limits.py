"""benchmarks/limits.py, tiny: its table has one row per experiment with the floor's three
parts measured (positive) and the ratio computed from them; bad options are refused."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def limits():
    sys.path.append(str(BENCHMARKS))  # last: its trajectories.py must not shadow the package
    try:
        import limits
        yield limits
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="module")
def rows(limits):
    return [limits.measure("dqn-cartpole", {"steps": 300, "learning_starts": 6,
                                            "gradient_steps": 16}, 1, 0),
            limits.measure("ppo-cartpole", {"steps": 512}, 1, 0)]


def test_every_part_of_the_floor_is_measured_and_the_ratio_is_run_over_their_sum(rows):
    for row in rows:
        assert row.env > 0 and row.act > 0 and row.learn > 0 and row.run > 0, row
        assert row.floor == row.env + row.act + row.learn
        assert row.ratio == row.run / row.floor
        assert sum(row.shares.values()) == pytest.approx(1.0)
        assert row.shares["network"] > 0 and row.shares["env"] > 0


def test_the_table_has_a_header_and_one_row_of_every_column_per_experiment(limits, rows):
    lines = limits.table(rows, 1)
    assert len(lines) == 2 + len(rows)
    columns = lines[0].count("|")
    assert all(line.count("|") == columns for line in lines)
    for line, row in zip(lines[2:], rows, strict=True):
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[0] == row.name and cells[1] == f"{row.steps:,}"
        env, act, learn, floor, run = map(float, cells[2:7])
        assert floor == pytest.approx(env + act + learn, abs=0.02)
        assert float(cells[7].split()[0]) == pytest.approx(round(row.ratio, 2))
        assert len(cells[8].split(" / ")) == 9  # env, network and the split of the rest


def test_the_table_goes_into_the_page_between_its_markers_once(limits, rows, tmp_path,
                                                               monkeypatch):
    page = tmp_path / "performance.md"
    page.write_text("# Performance\n\nProse stays.\n")
    monkeypatch.setattr(limits, "DOC", page)
    for _ in range(2):
        limits.write_doc(limits.table(rows, 1), "benchmarks/limits.py", "a machine")
    text = page.read_text()
    assert text.startswith("# Performance\n\nProse stays.\n")
    assert text.count("| dqn-cartpole |") == 1 and "`benchmarks/limits.py`, on a machine:" in text


def test_a_shortened_run_scales_its_warm_up_with_it(limits):
    assert limits.overrides_for("dqn-cartpole", None, 0.1) == {"steps": 5_000,
                                                               "learning_starts": 100}
    assert limits.overrides_for("dqn-cartpole", 300, 1.0) == {"steps": 300,
                                                              "learning_starts": 6}
    assert limits.overrides_for("ppo-cartpole", None, 1.0) == {}


def test_max_steps_caps_a_run_after_its_scale_and_scales_its_warm_up_alike(limits):
    # dqn-atari: 10M steps, 100k of warm-up; 0.1 gives 1M steps, capped at 4,000.
    assert limits.overrides_for("dqn-atari", None, 0.1, 4_000) == {"steps": 4_000,
                                                                  "learning_starts": 40}
    # a cap above the scaled length changes nothing
    assert limits.overrides_for("dqn-cartpole", None, 0.1, 10**9) == {"steps": 5_000,
                                                                     "learning_starts": 100}
    assert limits.overrides_for("ppo-cartpole", None, 1.0, 10**9) == {}
    # ppo-pendulum's rollouts are 1,024 steps of 4 sub-envs: a cap keeps two of them
    assert limits.overrides_for("ppo-pendulum", None, 0.1, 4_000) == {"steps": 8_192}
    assert limits.overrides_for("ppo-cartpole", None, 0.1, 4_000) == {"steps": 4_000}


@pytest.mark.parametrize("argv", [["--only", "no-such"], ["--steps", "0"], ["--scale", "0"],
                                  ["--scale", "nan"], ["--scale", "1.5"], ["--repeats", "0"],
                                  ["--clock", "gpu"], ["--max-steps", "0"],
                                  ["--max-steps", "-5"], ["--device", "tpu"],
                                  ["--device", "cuda", "--clock", "cpu"]])
def test_bad_options_exit_2_with_one_line(limits, argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        limits.main(argv)
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("usage") is False


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_cuda_on_a_machine_without_it_is_refused_by_name_before_anything_runs(limits, capsys):
    with pytest.raises(SystemExit) as stopped:
        limits.main(["--device", "cuda", "--only", "dqn-cartpole"])
    assert stopped.value.code == 2
    assert "--device cpu" in capsys.readouterr().err


def test_an_env_the_floor_cannot_build_is_left_out_by_name_not_measured(limits):
    import gymnasium as gym

    import stagerl as rl

    class Pixels(gym.Env):
        observation_space = gym.spaces.Box(0, 255, (84, 84), np.uint8)
        action_space = gym.spaces.Discrete(2)

    assert limits.state_dim_of(rl.GymEnv("CartPole-v1", seed=0)) == 4
    with pytest.raises(limits.NoFloor, match=r"Box\(0, 255, \(84, 84\), uint8\)"):
        limits.state_dim_of(rl.GymEnv(Pixels()))


def steps_of(optimiser) -> list[int]:
    """Each parameter's Adam step count, in the optimiser's order (0: never stepped)."""
    return [int(optimiser.state[p]["step"]) if "step" in optimiser.state.get(p, {}) else 0
            for group in optimiser.param_groups for p in group["params"]]


@pytest.mark.parametrize("name, overrides", [
    ("sac-pendulum", {"steps": 40, "learning_starts": 10, "net_arch": (8,)}),
    ("td3-pendulum", {"steps": 41, "learning_starts": 10, "net_arch": (8,)}),
    ("ddpg-pendulum", {"steps": 40, "learning_starts": 10, "net_arch": (8,)}),
    ("dqn-cartpole", {"steps": 300, "learning_starts": 6, "gradient_steps": 4,
                      "net_arch": (8,)}),
    ("rainbow-cartpole", {"steps": 300, "learning_starts": 6, "net_arch": (8,)}),
])
def test_the_learning_floor_takes_the_runs_gradient_steps_on_every_parameter(limits, name,
                                                                             overrides):
    from limits_floors import learn_floor

    prepared = limits.prepared_run(name, overrides, 0)
    limits.run_loop(prepared)()
    policy = prepared.agent.policy
    ran = steps_of(policy.q.optimiser if hasattr(policy, "q") else policy.optimiser)
    floor = learn_floor(policy, limits.state_dim_of(prepared.env), 0, 0)
    floor()
    floor()  # the counts were read when it was built: a second pass takes as many steps
    assert max(ran) > 0 and steps_of(floor.optimiser) == [2 * n for n in ran]


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@CUDA
@pytest.mark.parametrize("name, overrides", [
    ("sac-pendulum", {"steps": 40, "learning_starts": 10}),
    ("dqn-cartpole", {"steps": 300, "learning_starts": 6, "gradient_steps": 4}),
    ("ppo-cartpole", {"steps": 512}),
])
def test_on_cuda_the_learning_floor_takes_the_runs_steps_on_the_device(limits, name, overrides):
    from limits_floors import learn_floor

    prepared = limits.prepared_run(name, overrides, 0, "cuda")
    limits.run_loop(prepared)()
    policy = prepared.agent.policy
    with torch.device("cuda"):  # as measure() builds a floor part
        floor = learn_floor(policy, limits.state_dim_of(prepared.env), 0, 0)
    floor()
    torch.cuda.synchronize()
    if name == "ppo-cartpole":  # its floor keeps no optimiser handle: the run's must be there
        assert policy.n_updates > 0 and next(policy.model.parameters()).is_cuda
        return
    ran = steps_of(policy.q.optimiser if hasattr(policy, "q") else policy.optimiser)
    assert all(p.is_cuda for group in floor.optimiser.param_groups for p in group["params"])
    assert max(ran) > 0 and steps_of(floor.optimiser) == ran


@CUDA
def test_on_cuda_the_table_names_the_device_and_measures_every_part(limits, capsys):
    assert limits.main(["--device", "cuda", "--only", "dqn-cartpole", "ppo-cartpole",
                        "--steps", "600", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "(cuda)" in out and "wall-clock seconds" in out
    assert out.count("| dqn-cartpole |") == 1 and out.count("| ppo-cartpole |") == 1


def test_the_cpu_clock_counts_this_process_work_not_its_waits(limits):
    import time

    start_cpu, start_wall = limits.CLOCKS["cpu"](), limits.CLOCKS["wall"]()
    time.sleep(0.2)  # waiting, as for a core another job holds: no CPU seconds
    assert limits.CLOCKS["wall"]() - start_wall >= 0.2
    assert limits.CLOCKS["cpu"]() - start_cpu < 0.05


# ---- the floors of pixels, games, memory and REPS (limits_floors_more) ----------------------

#: Each experiment whose floor limits_floors_more builds, with settings short enough for a test.
MORE = {
    "dqn-atari": {"steps": 160, "learning_starts": 100, "buffer_size": 500},
    "ppo-atari": {"steps": 256, "n_steps": 16, "batch_size": 48},
    "dqn-tictactoe": {"steps": 300, "learning_starts": 60},
    "dqn-tictactoe-selfplay": {"steps": 300, "learning_starts": 60},
    "ppo-rps": {"steps": 600, "n_steps": 200, "batch_size": 64},
    "reps-cartpole": {"steps": 1200, "episodes_per_update": 4},
    "ppo-lstm-cartpole-novel": {"steps": 512, "n_steps": 32, "batch_size": 64},
    "ppo-lstm-rps": {"steps": 512, "n_steps": 32, "batch_size": 64},
    "drqn-cartpole-novel": {"steps": 300, "learning_starts": 100},
    "erwr-cartpole": {"steps": 1200, "episodes_per_update": 4},
}


def needs_atari(name: str) -> None:
    if "atari" in name:
        pytest.importorskip("ale_py", reason="the Atari experiments need the atari extra")
        pytest.importorskip("cv2", reason="the Atari experiments need the atari extra")


def counted_run(limits, name: str, spy: str):
    """The experiment run once as ``limits.measure``'s counted run (the floors' counters
    installed first), with the calls to the learner's ``spy`` (its optimiser) counted apart;
    returns the prepared run, the inner policy, the floors, their parts and that count."""
    prepared = limits.prepared_run(name, MORE[name], 0)
    agent = prepared.agent
    if hasattr(prepared.env, "players"):
        agent = next(m for m in agent.policies.values() if hasattr(m, "trajectory"))
    policy = agent.policy
    optimiser = policy.q.optimiser if spy == "q" else getattr(policy, spy)
    calls = []
    # A step hook sees every step: with one, the learner's direct Adam kernel call
    # (stagerl.algorithms.adam_step) leaves the step to the optimiser.
    optimiser.register_step_pre_hook(lambda *_: calls.append(1))
    floors = limits.more_floors(prepared)
    limits.run_loop(prepared)()
    num_envs = getattr(prepared.env, "num_envs", 1)
    acts = -(-prepared.steps // num_envs)
    parts = {part: build() for part, build in floors.parts(acts, num_envs, 0).items()}
    return prepared, policy, floors, parts, len(calls)


@pytest.mark.parametrize("name", list(MORE))
def test_each_experiment_of_pixels_games_memory_or_reps_gets_a_floor_row(limits, name):
    needs_atari(name)
    row = limits.measure(name, MORE[name], 1, 0)
    assert row.env > 0 and row.act > 0 and row.learn > 0 and row.run > 0, row
    assert row.note == "" and row.ratio == row.run / row.floor


@pytest.mark.parametrize("name", ["dqn-atari", "ppo-atari"])
def test_the_pixel_floor_takes_the_runs_gradient_steps_acts_and_batch(limits, name):
    needs_atari(name)
    prepared, policy, _, parts, steps = counted_run(limits, name, "q" if "dqn" in name else
                                                 "optimiser")
    c, learn, act = prepared.config, parts["learn"].work, parts["act"].work
    assert steps > 0 and learn["gradient_steps"] == steps
    num_envs = getattr(prepared.env, "num_envs", 1)
    assert act["acts"] * num_envs == prepared.steps and act["batch"] == num_envs
    if "dqn" in name:
        assert learn["batch"] == c.batch_size
        assert 0 < act["forwards"] <= prepared.steps - c.learning_starts
    else:
        assert learn["rollout"] == c.n_steps * num_envs
        assert steps == policy.n_updates * c.n_epochs * -(-c.n_steps * num_envs // c.batch_size)


@pytest.mark.parametrize("name", ["dqn-tictactoe", "dqn-tictactoe-selfplay", "ppo-rps"])
def test_the_game_floor_plays_every_move_and_splits_them_between_the_players_as_the_run(
        limits, name):
    moves: dict = {}
    prepared = limits.prepared_run(name, MORE[name], 0)
    game, act = prepared.env, prepared.env.act

    def counting(action):
        for player in (action if isinstance(action, dict) else (game.current_player,)):
            moves[player] = moves.get(player, 0) + 1
        act(action)
    game.act = counting
    floors = limits.more_floors(prepared)
    limits.run_loop(prepared)()
    parts = {part: build() for part, build in floors.parts(prepared.steps, 1, 0).items()}
    assert parts["env"].work == {"acts": prepared.steps}
    members = floors.members(prepared.steps)
    policy = prepared.agent
    by_player = {p: sum(moves.get(q, 0) for q in policy.players
                        if policy[q] is policy[p]) for p in policy.players}
    assert {player: count for player, _, _, count, _ in members} == \
        {player: by_player[player] for player, *_ in members}
    learners = [m for m in members if m[2]]
    assert len(learners) == parts["learn"].work["learners"] == 1
    for player, _, _, count, size in members:
        assert size == (18 if "tictactoe" in name else 4)
        if learners[0][0] == player:
            assert parts["act"].work[f"{player} forwards"] <= count
        else:
            assert parts["act"].work[f"{player} draws"] == count


@pytest.mark.parametrize("name", ["ppo-lstm-cartpole-novel", "ppo-lstm-rps"])
def test_the_recurrent_ppo_floor_takes_one_step_per_minibatch_over_every_step(limits, name):
    prepared, policy, _, parts, steps = counted_run(limits, name, "optimiser")
    c, learn = prepared.config, parts["learn"].work
    assert steps > 0 and learn["gradient_steps"] == steps
    # every epoch's minibatches cover the rollout's steps once (the masks' real steps)
    assert learn["steps"] == policy.n_updates * c.n_epochs * c.n_steps * c.num_envs
    assert parts["act"].work == {"acts": prepared.steps // c.num_envs, "batch": c.num_envs}


def test_the_drqn_floor_takes_the_runs_gradient_steps_on_windows_of_its_shape(limits):
    prepared, policy, _, parts, steps = counted_run(limits, "drqn-cartpole-novel", "optimiser")
    c = prepared.config
    assert steps > 0 and parts["learn"].work == {
        "gradient_steps": steps, "windows": c.batch_size, "window": c.sequence_length}
    assert parts["act"].work == {"acts": prepared.steps, "batch": 1}


def test_the_reps_floor_takes_the_runs_newton_steps_and_evaluations_on_its_duals(limits,
                                                                                  monkeypatch):
    from stagerl.algorithms.on_policy import reps

    hessians: list = []  # one per Newton step of the run's dual minimisation
    hessian = reps.dual_gradient_and_hessian

    def counting(*args, **kwargs):
        hessians.append(1)
        return hessian(*args, **kwargs)
    monkeypatch.setattr(reps, "dual_gradient_and_hessian", counting)
    _, policy, floors, parts, _ = counted_run(limits, "reps-cartpole", "optimiser")
    work = parts["learn"].work
    assert work["updates"] == len(floors.duals) == policy.n_updates > 1
    assert work["newton_steps"] == len(hessians) > policy.n_updates
    assert work["evaluations"] == sum(floors.evaluations) >= policy.n_updates
    assert all(values >= 1 for *_, values in floors.duals)  # the start's value at least
    assert floors.duals[0][2] == 15.0 and floors.duals[0][3] is None  # rllab's first start


def test_the_erwr_floor_takes_the_runs_lbfgs_evaluations_on_each_updates_steps(limits,
                                                                               monkeypatch):
    from stagerl.algorithms.on_policy import erwr

    losses: list = []  # every evaluation of the actor's loss: L-BFGS's, and two more an update
    loss = erwr.weighted_log_likelihood_loss

    def counting(model, batch, weights):
        losses.append(len(weights))
        return loss(model, batch, weights)
    monkeypatch.setattr(erwr, "weighted_log_likelihood_loss", counting)
    prepared, policy, floors, parts, _ = counted_run(limits, "erwr-cartpole", "optimiser")
    work = parts["learn"].work
    assert work["updates"] == len(floors.sizes) == policy.n_updates > 1
    assert work["evaluations"] == sum(floors.evaluations) == len(losses) - 2 * policy.n_updates
    assert sum(floors.sizes) <= prepared.steps and set(floors.sizes) <= set(losses)


def test_the_reps_floors_newton_steps_written_out_solve_the_dual_as_the_runs(limits,
                                                                             monkeypatch):
    import limits_floors_memory as more

    from stagerl.algorithms.on_policy import reps
    from stagerl.algorithms.on_policy.reps import minimise_dual

    rng, hessians = np.random.default_rng(0), []  # one per Newton step of the run's
    hessian = reps.dual_gradient_and_hessian

    def counting(*args, **kwargs):
        hessians.append(1)
        return hessian(*args, **kwargs)
    for n, epsilon, l2 in ((50, 0.5, 0.0), (200, 0.1, 0.01)):
        returns, features = 10 * rng.standard_normal(n), rng.standard_normal((n, 5))
        features -= features.mean(axis=0)
        v0 = np.zeros(5)
        eta, v, dual, steps = more.newton_dual(returns, features, epsilon, l2, 15.0, v0, 50)
        hessians.clear()
        monkeypatch.setattr(reps, "dual_gradient_and_hessian", counting)
        theirs = minimise_dual(returns, features, epsilon, l2, 15.0, v0, 50)
        monkeypatch.setattr(reps, "dual_gradient_and_hessian", hessian)
        assert eta == pytest.approx(theirs[0], rel=1e-9) and dual == pytest.approx(theirs[2])
        np.testing.assert_allclose(v, theirs[1], rtol=1e-8, atol=1e-12)
        assert steps == len(hessians) and 1 < steps < 50


def test_the_games_and_the_emulators_are_the_envs_share(limits):
    for path in ("/venv/site-packages/ale_py/env.py", "/venv/site-packages/cv2/__init__.py",
                 "/venv/site-packages/pettingzoo/classic/chess/chess.py",
                 "/repo/stagerl/multi_agent/tic_tac_toe.py",
                 "/repo/stagerl/multi_agent/rock_paper_scissors.py",
                 "/repo/stagerl/multi_agent/pettingzoo.py", "/repo/stagerl/multi_agent/env.py"):
        assert limits.share_of(path) == "env", path
    assert limits.share_of("/repo/stagerl/multi_agent/loops.py") == "python"
    assert limits.share_of("/repo/stagerl/multi_agent/versus.py") == "python"


# ---- the games' masked DQN floor (limits_floors_masked) ----------------------------------------


@pytest.mark.parametrize("double", [False, True])
def test_the_masked_floors_target_is_the_runs_masked_td_target_on_the_same_inputs(limits,
                                                                               double):
    from limits_floors_masked import masked_targets, random_masks

    from stagerl.algorithms.dqn import DQNConfig, DQNPolicy, td_target
    from stagerl.algorithms.dqn.networks import QNetwork, mlp_body

    torch.manual_seed(0)
    network = QNetwork(mlp_body(18, (16,)), 16, n_actions=9)
    policy = DQNPolicy(network, DQNConfig(total_steps=100, double=double, n_step=3, gamma=0.9),
                       masked=True)
    rows = 256
    illegal = random_masks(rows, 9)
    assert illegal.all(1).any() and not illegal.all(1).all() and illegal.any(1).any()
    batch = {"next_state": torch.randn(rows, 18), "reward": torch.randn(rows),
             "terminal": (torch.rand(rows) < 0.2).float(),
             "discount": torch.full((rows,), 0.9 ** 3), "next_legal_actions_mask": ~illegal}
    next_out = policy.target(batch["next_state"]).detach()
    bootstrap = batch["discount"] * (1.0 - batch["terminal"]) * (~illegal).any(1)
    with torch.no_grad():
        online = policy.network(batch["next_state"]) if double else None
        floor = masked_targets(next_out, online, illegal, batch["reward"], bootstrap)
    assert torch.equal(floor, td_target(policy, batch, next_out))
    unmasked = td_target(policy, {k: v for k, v in batch.items()
                                  if k != "next_legal_actions_mask"}, next_out)
    assert not torch.equal(floor, unmasked)  # the mask changes the targets


@pytest.mark.parametrize("name", ["dqn-tictactoe", "dqn-tictactoe-selfplay"])
def test_the_game_floor_of_a_masked_dqn_takes_the_runs_steps_each_burst_with_masked_targets(
        limits, name, monkeypatch):
    import limits_floors_masked

    prepared, policy, _, parts, steps = counted_run(limits, name, "q")
    c = prepared.config
    (floor,) = parts["learn"].goes
    assert policy.masked and steps > 0 and c.gradient_steps == 1 and not c.double
    assert floor.work == {"gradient_steps": steps, "batch": c.batch_size,
                          "masks": (c.batch_size, 9)}  # one batch a burst, one column an action
    taken = []
    masked_targets = limits_floors_masked.masked_targets
    monkeypatch.setattr(limits_floors_masked, "masked_targets",
                        lambda *a: taken.append(a[2].shape) or masked_targets(*a))
    parts["learn"]()
    assert steps_of(floor.optimiser) == [steps] * len(steps_of(floor.optimiser))
    assert taken == [(c.batch_size, 9)] * steps  # the target of each burst's batch, masked
