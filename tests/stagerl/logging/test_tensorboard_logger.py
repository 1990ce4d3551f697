"""TensorBoardLogger: event files read back with tensorboard's EventAccumulator."""

from __future__ import annotations

import numpy as np
import pytest
from scripted_envs import scripted_vector_env
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import stagerl as rl
from stagerl.logging import TensorBoardLogger, log_scalar, tensorboard_logger


class Right(rl.Policy):
    """Action 1 everywhere; reports ``losses/td_loss`` at every act."""

    acts = 0


@rl.plan.dispatch
def plan(policy: Right, env: rl.Env):
    return 1


@rl.plan.dispatch
def plan(policy: Right, env: rl.VectorEnv):  # noqa: F811
    return np.ones(env.num_envs, dtype=np.int64)


@rl.optimise.dispatch
def optimise(policy: Right, stage: rl.PostActStage):
    policy.acts += 1
    log_scalar("losses/td_loss", 1.0 / policy.acts)


def read(logdir) -> EventAccumulator:
    events = EventAccumulator(str(logdir))
    events.Reload()
    return events


def points(events: EventAccumulator, tag: str) -> list[tuple[int, float]]:
    return [(e.step, e.value) for e in events.Scalars(tag)]


def test_cleanrl_tags_on_a_single_env(tmp_path):
    hook = TensorBoardLogger(tmp_path, sps_every=2)
    rl.run(Right(), rl.RandomWalk1D(start=3), rl.StopAfterNSteps(7, progress=False), hook)
    events = read(tmp_path)
    assert set(events.Tags()["scalars"]) == {"charts/episodic_return", "charts/episodic_length",
                                             "charts/SPS", "losses/td_loss"}
    # The episode the stop cut at step 7 is left out.
    assert points(events, "charts/episodic_return") == [(3, 1.0), (6, 1.0)]
    assert points(events, "charts/episodic_length") == [(3, 3.0), (6, 3.0)]
    assert [s for s, _ in points(events, "charts/SPS")] == [2, 4, 6]
    losses = points(events, "losses/td_loss")  # float32 in the event file
    assert [s for s, _ in losses] == list(range(1, 8))
    assert [v for _, v in losses] == pytest.approx([1.0 / t for t in range(1, 8)], rel=1e-6)


def test_vector_env_episodes_at_their_env_steps(tmp_path):
    env = rl.GymVectorEnv(scripted_vector_env((2, 3)))
    rl.run(Right(), env, rl.StopAfterNSteps(20, progress=False), TensorBoardLogger(tmp_path))
    events = read(tmp_path)
    assert points(events, "charts/episodic_return") == [
        (4, 12.0), (6, 333.0), (12, 33.0), (16, 464.0), (18, 12.0)]
    assert points(events, "charts/episodic_length") == [
        (4, 2.0), (6, 3.0), (12, 3.0), (16, 4.0), (18, 2.0)]
    assert [s for s, _ in points(events, "losses/td_loss")] == list(range(2, 21, 2))


def test_vector_cartpole_returns_match_the_built_in_hook(tmp_path):
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    totals = rl.TotalRewardPerEpisode()
    rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNEpisodes(12, progress=False),
           TensorBoardLogger(tmp_path) + totals)
    logged = [v for _, v in points(read(tmp_path), "charts/episodic_return")]
    assert logged == totals.rewards[:len(logged)] and len(logged) >= 12


class Interrupt(rl.Hook):
    """Raises ``error`` at the 5th PostAct."""

    def __init__(self, error: BaseException) -> None:
        self.error, self.acts = error, 0


@rl.push.dispatch
def push(hook: Interrupt, stage: rl.PostActStage, policy, env):
    hook.acts += 1
    if hook.acts == 5:
        raise hook.error


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_events_are_flushed_and_the_file_closed_when_the_run_is_left(tmp_path, error):
    hook = TensorBoardLogger(tmp_path, flush_seconds=10_000)
    with pytest.raises(type(error)):
        rl.run(Right(), rl.RandomWalk1D(start=3), rl.StopAfterNSteps(100, progress=False),
               hook + Interrupt(error))
    assert hook._writer is None
    assert points(read(tmp_path), "charts/episodic_return") == [(3, 1.0)]
    assert len(points(read(tmp_path), "losses/td_loss")) == 5  # all reported before it


def test_a_scalar_reported_twice_in_a_step_is_written_twice(tmp_path):
    hook = TensorBoardLogger(tmp_path)
    rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), rl.StopAfterNSteps(1, progress=False),
           hook + rl.DoEveryNSteps(lambda t, p, e: [log_scalar("x", v) for v in (1.0, 2.0)]))
    assert points(read(tmp_path), "x") == [(1, 1.0), (1, 2.0)]


def test_without_tensorboard_construction_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(tensorboard_logger, "tensorboard_available", lambda: False)
    with pytest.raises(ImportError, match=r"pip install 'stagerl\[tensorboard\]'"):
        TensorBoardLogger(tmp_path)
    assert not any(tmp_path.iterdir())


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(TypeError, match="logdir"):
        TensorBoardLogger(None)
    with pytest.raises(ValueError, match="sps_every"):
        TensorBoardLogger(tmp_path, sps_every=0)


def test_an_experiment_with_a_tensorboard_logger_saves_and_resumes(tmp_path):
    from stagerl.checkpoints import CheckpointSchedule, ResumableExperiment, resume

    def experiment(logdir):
        return ResumableExperiment(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
                                   rl.StopAfterNSteps(60, progress=False),
                                   TensorBoardLogger(logdir),
                                   checkpoints=CheckpointSchedule(25, logdir / "ck"))

    whole = experiment(tmp_path / "whole").run().hook[0]
    experiment(tmp_path / "resumed").run()
    resumed = resume(tmp_path / "resumed" / "ck" / "step-000000025")
    assert (resumed.hook[0].env_step, resumed.hook[0]._writer) == (25, None)
    logger = resumed.run().hook[0]
    assert (logger.env_step, logger.episodes) == (whole.env_step, whole.episodes) == (60, 11)
    assert points(read(tmp_path / "resumed"), "charts/episodic_return") == points(
        read(tmp_path / "whole"), "charts/episodic_return")


def test_a_copy_started_again_after_logging_writes_a_session_start_at_its_env_step(tmp_path):
    import pickle

    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto.event_pb2 import Event, SessionLog

    hook = TensorBoardLogger(tmp_path)
    taken = {}

    def copy_at_10(t, policy, env):
        if t == 10:
            taken["copy"] = pickle.dumps(hook)

    rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), rl.StopAfterNSteps(20, progress=False),
           rl.DoEveryNSteps(lambda t, p, e: log_scalar("x", float(t)), n=5) + hook
           + rl.DoEveryNSteps(copy_at_10, n=1))
    assert points(read(tmp_path), "x") == [(5, 5.0), (10, 10.0), (15, 15.0), (20, 20.0)]
    resumed = pickle.loads(taken["copy"])
    resumed.start(None, None)  # what a run resumed from the copy does first
    resumed.finish(None, None)
    newest = max(tmp_path.glob("events.out.tfevents.*"))
    events = [Event.FromString(record) for record in RawEventFileLoader(str(newest)).Load()]
    assert events[0].file_version == "brain.Event:2"
    assert (events[1].session_log.status, events[1].step) == (SessionLog.START, 10)
    assert [(e.step, [(v.tag, v.simple_value) for v in e.summary.value])
            for e in events[2:]] == [(10, [("x", 10.0)])]  # written before the copy, again
    # TensorBoard drops what the first file holds from step 10 on: what came after the copy.
    assert points(read(tmp_path), "x") == [(5, 5.0), (10, 10.0)]
