"""CSVLogger: exact rows for scripted runs on one env and on a vector env, scalars, flushing."""

from __future__ import annotations

import csv
import pickle

import numpy as np
import pytest
from scripted_envs import scripted_vector_env

import stagerl as rl
from stagerl.logging import CSVLogger, log_scalar


class AlwaysRight(rl.Policy):
    """Action 1 everywhere (one per sub-env on a vector env); reports a scalar every act."""

    def __init__(self, report: bool = False) -> None:
        self.report = report
        self.acts = 0


@rl.plan.dispatch
def plan(policy: AlwaysRight, env: rl.Env):
    return 1


@rl.plan.dispatch
def plan(policy: AlwaysRight, env: rl.VectorEnv):  # noqa: F811
    return np.ones(env.num_envs, dtype=np.int64)


@rl.optimise.dispatch
def optimise(policy: AlwaysRight, stage: rl.PostActStage):
    policy.acts += 1
    if policy.report and policy.acts % 2 == 0:
        log_scalar("losses/acts", policy.acts)


def rows(path):
    with open(path, newline="") as file:
        return list(csv.reader(file))


def test_single_env_rows_are_exact(tmp_path):
    # RandomWalk1D(n=7) from state 3, always right: an episode of 3 steps and return 1 ends at
    # env steps 3 and 6; the stop at 7 cuts a third after one step (neither flag set).
    hook = CSVLogger(tmp_path, clock=lambda: 0.0)
    rl.run(AlwaysRight(), rl.RandomWalk1D(start=3), rl.StopAfterNSteps(7, progress=False), hook)
    assert rows(tmp_path / "episodes.csv") == [
        ["env_step", "episode", "sub_env", "return", "length", "terminated", "truncated",
         "wall_time"],
        ["3", "1", "0", "1.0", "3", "1", "0", "0.0"],
        ["6", "2", "0", "1.0", "3", "1", "0", "0.0"],
        ["7", "3", "0", "0.0", "1", "0", "0", "0.0"],
    ]
    assert rows(tmp_path / "updates.csv") == [["env_step", "name", "value", "wall_time"]]


def test_vector_env_rows_are_exact(tmp_path):
    # Lane i has episodes of lengths[i] steps (terminated) and lengths[i] + 1 (truncated),
    # reward 100 * lane + 10 * t + action; a lane's reset act is not one of its steps.
    env = rl.GymVectorEnv(scripted_vector_env((2, 3)))
    hook = CSVLogger(tmp_path, clock=lambda: 0.0)
    rl.run(AlwaysRight(), env, rl.StopAfterNSteps(20, progress=False), hook)  # 10 acts
    assert rows(tmp_path / "episodes.csv")[1:] == [
        ["4", "1", "0", "12.0", "2", "1", "0", "0.0"],    # act 2: 1 + 11
        ["6", "2", "1", "333.0", "3", "1", "0", "0.0"],   # act 3: 101 + 111 + 121
        ["12", "3", "0", "33.0", "3", "0", "1", "0.0"],   # act 6: 1 + 11 + 21
        ["16", "4", "1", "464.0", "4", "0", "1", "0.0"],  # act 8: ... + 131
        ["18", "5", "0", "12.0", "2", "1", "0", "0.0"],   # act 9
        ["20", "6", "1", "101.0", "1", "0", "0", "0.0"],  # cut by the stop after one step
    ]


def test_reported_scalars_are_rows_at_their_env_step(tmp_path):
    hook = CSVLogger(tmp_path, clock=lambda: 0.0)
    rl.run(AlwaysRight(report=True), rl.RandomWalk1D(start=3),
           rl.StopAfterNSteps(5, progress=False), hook)
    assert rows(tmp_path / "updates.csv")[1:] == [
        ["2", "losses/acts", "2.0", "0.0"],
        ["4", "losses/acts", "4.0", "0.0"],
    ]


def test_on_a_vector_env_scalars_are_filed_under_env_steps(tmp_path):
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    hook = CSVLogger(tmp_path)
    rl.run(AlwaysRight(report=True), env, rl.StopAfterNSteps(30, progress=False), hook)
    steps = [int(row[0]) for row in rows(tmp_path / "updates.csv")[1:]]
    assert steps == [6, 12, 18, 24, 30]  # every second act of 3 env steps


def test_vector_cartpole_episodes_match_the_built_in_hooks(tmp_path):
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    totals, lengths = rl.TotalRewardPerEpisode(), rl.StepsPerEpisode()
    rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNSteps(600, progress=False),
           CSVLogger(tmp_path) + totals + lengths)
    table = rows(tmp_path / "episodes.csv")[1:]
    assert [float(r[3]) for r in table] == totals.rewards
    assert [int(r[4]) for r in table] == lengths.steps
    assert [int(r[1]) for r in table] == list(range(1, len(table) + 1))
    assert {int(r[2]) for r in table} == {0, 1, 2}
    times = [float(r[7]) for r in table]
    assert times == sorted(times) and times[0] >= 0


def test_a_second_run_appends_without_a_second_header(tmp_path):
    hook = CSVLogger(tmp_path, clock=lambda: 0.0)
    for _ in range(2):
        rl.run(AlwaysRight(), rl.RandomWalk1D(start=3), rl.StopAfterNSteps(3, progress=False),
               hook)
    table = rows(tmp_path / "episodes.csv")
    assert [r[:3] for r in table] == [["env_step", "episode", "sub_env"],
                                      ["3", "1", "0"], ["6", "2", "0"]]


class Boom(rl.Hook):
    """Raises at the 8th PostAct."""

    acts = 0


@rl.push.dispatch
def push(hook: Boom, stage: rl.PostActStage, policy, env):
    hook.acts += 1
    if hook.acts == 8:
        raise RuntimeError("boom")


def test_rows_reach_the_file_when_the_run_raises(tmp_path):
    hook = CSVLogger(tmp_path, flush_seconds=1e9, clock=lambda: 0.0)
    with pytest.raises(RuntimeError, match="boom"):
        rl.run(AlwaysRight(), rl.RandomWalk1D(start=3), rl.StopAfterNSteps(100, progress=False),
               hook + Boom())
    # Two episodes ended before the 8th step raised; the files were flushed and closed.
    assert [r[0] for r in rows(tmp_path / "episodes.csv")[1:]] == ["3", "6"]
    assert hook._files is None


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="logdir"):
        CSVLogger(3)
    with pytest.raises(TypeError, match="flush_seconds"):
        CSVLogger("x", flush_seconds="soon")


def run_copying_at(hook: CSVLogger, copy_at: int, steps: int) -> tuple[bytes, dict]:
    """Run ``hook`` for ``steps`` env steps (a scalar reported at every one), pickling it at env
    step ``copy_at``; returns the pickle and the files' text at that moment."""
    taken: dict = {}

    def copy_now(t, policy, env):
        if t == copy_at:
            taken["copy"] = pickle.dumps(hook)
            taken["files"] = {p.name: p.read_text() for p in (hook.episodes_path,
                                                              hook.updates_path)}

    rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), rl.StopAfterNSteps(steps, progress=False),
           rl.DoEveryNSteps(lambda t, p, e: log_scalar("x", float(t)), n=1) + hook
           + rl.DoEveryNSteps(copy_now, n=1))
    return taken["copy"], taken["files"]


def test_a_copy_started_again_cuts_each_file_back_to_the_rows_it_had(tmp_path):
    hook = CSVLogger(tmp_path, flush_seconds=10_000)  # only the copy flushes before the end
    copied, files = run_copying_at(hook, copy_at=20, steps=60)
    assert files["updates.csv"].count("\n") == 1 + 20  # header and the rows of steps 1..20
    assert files["episodes.csv"].count("\n") > 1
    later = {name: (tmp_path / name).read_text() for name in files}
    assert all(len(later[name]) > len(files[name]) for name in files)
    resumed = pickle.loads(copied)
    resumed.start(None, None)  # what a run resumed from the copy does first
    resumed.finish(None, None)
    assert {name: (tmp_path / name).read_text() for name in files} == files


def test_a_copy_started_again_warns_about_a_file_with_fewer_rows_and_goes_on(tmp_path):
    hook = CSVLogger(tmp_path)
    copied, files = run_copying_at(hook, copy_at=20, steps=30)
    (tmp_path / "episodes.csv").unlink()
    resumed = pickle.loads(copied)
    with pytest.warns(RuntimeWarning, match=r"episodes\.csv holds 0 data rows, fewer than"):
        resumed.start(None, None)
    resumed.finish(None, None)
    assert (tmp_path / "episodes.csv").read_text().splitlines() == [",".join(
        ("env_step", "episode", "sub_env", "return", "length", "terminated", "truncated",
         "wall_time"))]
    assert (tmp_path / "updates.csv").read_text() == files["updates.csv"]
