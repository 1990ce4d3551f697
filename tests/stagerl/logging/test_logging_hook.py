"""LoggingHook: env steps, episodes, ticks and scalars on single and vector envs; copies."""

from __future__ import annotations

import copy
import io
import pickle
from dataclasses import dataclass, field

import stagerl as rl
from stagerl.logging import LoggingHook, is_logging_scalars, log_scalar


@dataclass
class Recorder(LoggingHook):
    """Records every call it gets."""

    every: int | None = None
    listens_to_scalars = True
    calls: list = field(default_factory=list)

    def start(self, policy, env):
        self.calls.append(("start", self.env_step))

    def tick_every(self):
        return self.every

    def on_tick(self):
        self.calls.append(("tick", self.env_step))

    def on_episode(self, episode, policy, env):
        self.calls.append(("episode", self.env_step, self.episodes, episode.lane))

    def on_scalar(self, name, value, step):
        self.calls.append(("scalar", name, value, step))

    def finish(self, policy, env):
        self.calls.append(("finish", self.env_step))


def test_single_env_counts_steps_episodes_and_ticks():
    hook = Recorder(every=3)
    rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), rl.StopAfterNSteps(7, progress=False),
           hook + rl.DoEveryNSteps(lambda t, p, e: log_scalar("t", t), n=5))
    assert hook.env_step == 7
    assert hook.calls[0] == ("start", 0) and hook.calls[-1] == ("finish", 7)
    assert [c for c in hook.calls if c[0] == "tick"] == [("tick", 3), ("tick", 6)]
    # The scalar reported after this hook's PostAct at step 5 is read at the next stage.
    assert [c for c in hook.calls if c[0] == "scalar"] == [("scalar", "t", 5.0, 6)]
    episodes = [c for c in hook.calls if c[0] == "episode"]
    assert [c[2] for c in episodes] == list(range(1, hook.episodes + 1))


def test_vector_env_counts_num_envs_steps_per_act():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    hook = Recorder(every=10)
    rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNSteps(300, progress=False), hook)
    assert hook.env_step == 300
    # An act adds 3 env steps: the ticks come at the first act past each multiple of 10.
    ticks = [c[1] for c in hook.calls if c[0] == "tick"]
    assert ticks == [s for s in range(3, 301, 3) if s // 10 > (s - 3) // 10]
    lanes = {c[3] for c in hook.calls if c[0] == "episode"}
    assert lanes == {0, 1, 2}


def test_the_listener_is_open_only_during_the_run():
    hook = Recorder()
    log_scalar("before", 1.0)
    rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), hook=hook)
    log_scalar("after", 1.0)
    assert not [c for c in hook.calls if c[0] == "scalar"]
    assert not is_logging_scalars()


def test_a_copy_made_mid_run_continues_as_the_original():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0)
    hook = Recorder(every=7)
    rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNSteps(40, progress=False), hook)
    copies = [pickle.loads(pickle.dumps(hook)), copy.deepcopy(hook)]
    results = []
    for h in [hook, *copies]:
        rl.run(rl.RandomPolicy(rng=1), rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=1),
               rl.StopAfterNSteps(40, progress=False), h)
        results.append((h.env_step, h.episodes, h.calls))
    assert results[0] == results[1] == results[2]
    assert results[0][0] == 80


def test_every_logger_hook_pickles_and_deep_copies_before_and_after_a_run(tmp_path):
    from stagerl.logging import (
        ConsoleSummary,
        CSVLogger,
        Evaluate,
        PlotLearningCurve,
        ProgressBar,
        TensorBoardLogger,
    )

    def hooks():
        return [CSVLogger(tmp_path / "csv"), TensorBoardLogger(tmp_path / "tb"),
                ProgressBar(total=100), ConsoleSummary(every_n_steps=1000, file=None),
                PlotLearningCurve(None), Evaluate(50, 2, rl.RandomWalk1D())]

    def run(hook):
        rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), rl.StopAfterNSteps(100, progress=False),
               hook)

    for original in hooks():
        for copied in (pickle.loads(pickle.dumps(original)), copy.deepcopy(original)):
            assert type(copied) is type(original)
        run(original)
        copies = [pickle.loads(pickle.dumps(original)), copy.deepcopy(original)]
        for hook in (original, *copies):
            run(hook)
        counted = [h.env_step for h in (original, *copies)]
        assert counted == [200, 200, 200], type(original).__name__


class Clock:
    """A clock read by hand (a process's clock: its readings mean nothing in another)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_copy_started_again_continues_the_wall_time_it_had():
    from stagerl.logging import ConsoleSummary

    hook = ConsoleSummary(every_n_steps=1000, file=io.StringIO(), clock=Clock(1000.0))
    rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), rl.StopAfterNSteps(5, progress=False),
           hook)
    hook.clock.now = 1007.5
    copied = pickle.loads(pickle.dumps(hook))
    copied.clock.now = 3.0  # the clock of another process
    assert copied.wall_time() == 7.5
    copied.file = io.StringIO()
    rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), rl.StopAfterNSteps(5, progress=False),
           copied)  # started at 3.0
    copied.clock.now = 5.0
    assert copied.wall_time() == 9.5
    assert hook.wall_time() == 7.5
