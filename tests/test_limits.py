"""benchmarks/limits.py, tiny: its table has one row per experiment with the floor's three
parts measured (positive) and the ratio computed from them; bad options are refused."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

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


@pytest.mark.parametrize("argv", [["--only", "no-such"], ["--steps", "0"], ["--scale", "0"],
                                  ["--scale", "nan"], ["--scale", "1.5"], ["--repeats", "0"],
                                  ["--clock", "gpu"]])
def test_bad_options_exit_2_with_one_line(limits, argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        limits.main(argv)
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("usage") is False


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


def test_the_cpu_clock_counts_this_process_work_not_its_waits(limits):
    import time

    start_cpu, start_wall = limits.CLOCKS["cpu"](), limits.CLOCKS["wall"]()
    time.sleep(0.2)  # waiting, as for a core another job holds: no CPU seconds
    assert limits.CLOCKS["wall"]() - start_wall >= 0.2
    assert limits.CLOCKS["cpu"]() - start_cpu < 0.05
