"""The checkpoint schedule: best by evaluation where the run evaluates (training returns before
and without), hooks that are not data left out with one warning, the schedule saved and
continued with the run."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import stagerl as rl
from stagerl.checkpoints import CheckpointSchedule, ResumableExperiment, read_manifest, resume
from stagerl.checkpoints.schedule import RecentReturns
from stagerl.logging import Evaluate


def _agent(seed=0):
    policy = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(7, 2), gamma=0.9, lr=0.5),
                             rl.EpsilonGreedyExplorer(0.3, decay_steps=300, rng=seed))
    return rl.Agent(policy, rl.Trajectory(rl.CircularArraySARTSTraces(capacity=32)))


def _summaries(directory: Path) -> dict:
    return {p.name: read_manifest(p)["summary"] for p in sorted(directory.iterdir())}


def test_best_follows_the_evaluation_return_where_the_run_evaluates(tmp_path):
    evaluate = Evaluate(every_n_steps=40, episodes=3, env=rl.RandomWalk1D(), max_episode_steps=30)
    schedule = CheckpointSchedule(20, tmp_path, keep_last=100)
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(rl.CircularArraySARTSTraces(
        capacity=32)))  # random evaluations: better and worse ones
    experiment = ResumableExperiment(agent, rl.RandomWalk1D(),
                                     rl.StopAfterNSteps(400, progress=False), evaluate,
                                     checkpoints=schedule)
    experiment.run()
    summaries = _summaries(tmp_path)
    means = evaluate.means
    assert len(set(means)) > 1  # the evaluations differ: the choice is a real one
    # Before the first evaluation (step 40) best is chosen by training returns...
    assert summaries["step-000000020"]["scored_by"] == "training"
    # ...from then on by the newest evaluation, written with the checkpoint of its step.
    for step, mean in zip(evaluate.steps, means, strict=True):
        summary = summaries[f"step-{step:09d}"]
        assert summary["scored_by"] == "evaluation" and summary["recent_return"] == mean
    first_best = evaluate.steps[means.index(max(means))]
    assert summaries["best"]["env_steps"] == first_best
    assert summaries["best"]["recent_return"] == max(means) == schedule.best_return
    assert schedule.best_by == "evaluation"
    best_steps = [int(name[5:]) for name, s in summaries.items() if name != "best" and s["best"]]
    evaluated_bests = [s for s in best_steps if s >= evaluate.steps[0]]
    assert evaluated_bests[0] == evaluate.steps[0]  # the first evaluation beats training scores
    assert [means[evaluate.steps.index(s)] for s in evaluated_bests] == sorted(
        means[evaluate.steps.index(s)] for s in evaluated_bests)


def test_best_follows_the_training_return_without_evaluations(tmp_path):
    schedule = CheckpointSchedule(20, tmp_path, keep_last=100, recent_episodes=3)
    experiment = ResumableExperiment(_agent(), rl.RandomWalk1D(),
                                     rl.StopAfterNSteps(200, progress=False), rl.StepsPerEpisode(),
                                     checkpoints=schedule)
    recent = experiment.hook[1]
    assert isinstance(recent, RecentReturns) and recent.n == 3
    experiment.run()
    summaries = _summaries(tmp_path)
    scores = {s["env_steps"]: s["recent_return"] for name, s in summaries.items()
              if name != "best" and s["recent_return"] is not None}
    assert {s["scored_by"] for s in summaries.values()} == {"training"}
    assert summaries["best"]["recent_return"] == max(scores.values())
    assert summaries["best"]["env_steps"] == min(k for k, v in scores.items()
                                                 if v == max(scores.values()))


class Unsaved(rl.Hook):
    """A user's hook that is not registered."""

    def __init__(self):
        self.calls = 0


@rl.push.dispatch
def _push_unsaved(hook: Unsaved, stage: rl.PostActStage, policy, env):
    hook.calls += 1


def test_a_users_unregistered_hook_is_left_out_of_checkpoints_with_one_warning(tmp_path):
    from stagerl.experiments import train

    hook = Unsaved()
    with pytest.warns(UserWarning) as caught:
        summary = train("tabular-q-random-walk", steps=300, seed=1, logdir=tmp_path / "run",
                        progress=False, tensorboard=False, hook=hook, checkpoint_every=100)
    mine = [w for w in caught if "Unsaved" in str(w.message)]
    assert len(mine) == 1
    assert str(mine[0].message).startswith(
        f"the hook {__name__}.Unsaved is left out of the checkpoints (")
    assert "call stagerl.checkpoints.register(Unsaved) before the run" in str(mine[0].message)
    assert hook.calls == 300 and summary["env_steps"] == 300  # the run went on with it
    checkpoints = tmp_path / "run" / "checkpoints"
    assert sorted(p.name for p in checkpoints.iterdir())[-3:] == [
        "step-000000100", "step-000000200", "step-000000300"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the resumed run has nothing left out: no warning
        resumed = resume(checkpoints / "step-000000200")
    assert not any(isinstance(m, Unsaved) for m in resumed.hook)
    resumed.run()
    assert resumed.stop_condition.step == 300


def test_the_schedule_goes_on_counting_where_the_checkpoint_was(tmp_path):
    schedule = CheckpointSchedule(30, tmp_path, keep_last=10, keep_best=False)
    ResumableExperiment(_agent(), rl.RandomWalk1D(), rl.StopAfterNSteps(60, progress=False),
                        None, checkpoints=schedule).run()
    resumed = resume(tmp_path / "step-000000060", steps=100)
    assert resumed.checkpoints.env_step == 60 and resumed.checkpoints.every_n_steps == 30
    assert Path(resumed.checkpoints.directory) == tmp_path
    resumed.run()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "step-000000030", "step-000000060", "step-000000090", "step-000000100"]


def test_a_schedule_is_given_as_one_not_a_hook(tmp_path):
    with pytest.raises(TypeError, match="checkpoints must be a stagerl.checkpoints."
                                        "CheckpointSchedule or None, got 10"):
        ResumableExperiment(_agent(), rl.RandomWalk1D(), None, None, checkpoints=10)
