"""Resuming: an experiment interrupted at step k (mid-episode, mid-rollout) and resumed ends
bit for bit as the run that was never interrupted, in this process and in a fresh one; the
resumed loop makes exactly the calls of the plain loop; the checkpoint schedule's files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import stagerl as rl
from stagerl.checkpoints import (
    Checkpoint,
    CheckpointError,
    CheckpointSchedule,
    ResumableExperiment,
    latest,
    load,
    read_manifest,
    register,
    resume,
    save,
)

sys.path.insert(0, str(Path(__file__).parent))
import resume_runs  # noqa: E402  (the runs the fresh processes make, beside this file)

# ---- the calls of the loop -----------------------------------------------------------------


@register
class CountingEnv(rl.Env):
    """Episodes of three steps; every call goes to ``log``."""

    def __init__(self, log):
        self.log, self.t = log, 0

    def reset(self):
        self.log.append(("env.reset",))
        self.t = 0

    def act(self, action):
        self.log.append(("env.act", action))
        self.t += 1

    state = property(lambda self: self.t)
    reward = property(lambda self: 1.0)
    is_terminated = property(lambda self: self.t >= 3)
    action_space = state_space = property(lambda self: None)


@register
class RecordingPolicy(rl.Policy):
    def __init__(self, log):
        self.log = log


@rl.push.dispatch
def _push_recording_policy(policy: RecordingPolicy, stage: rl.Stage, env):
    policy.log.append(("push policy", type(stage).__name__))


@rl.push.dispatch
def _push_recording_policy_action(policy: RecordingPolicy, stage: rl.PostActStage, env, action):
    policy.log.append(("push policy", "PostAct", action))


@rl.optimise.dispatch
def _optimise_recording_policy(policy: RecordingPolicy, stage: rl.Stage):
    policy.log.append(("optimise", type(stage).__name__))


@rl.plan.dispatch
def _plan_recording_policy(policy: RecordingPolicy, env):
    policy.log.append(("plan",))
    return env.state


@register
class RecordingHook(rl.Hook):
    def __init__(self, log):
        self.log = log


@rl.push.dispatch
def _push_recording_hook(hook: RecordingHook, stage: rl.Stage, policy, env):
    hook.log.append(("push hook", type(stage).__name__))


@register
class RecordingStop(rl.StopAfterNSteps):
    def check(self, policy, env):
        self.log.append(("stop.check",))
        return super().check(policy, env)


@register
class RecordingReset(rl.ResetIfEnvTerminated):
    def check(self, policy, env):
        self.log.append(("reset.check",))
        return super().check(policy, env)


def _recorded(steps):
    log = []
    stop = RecordingStop(steps, progress=False)
    reset = RecordingReset()
    stop.log = reset.log = log
    return log, (RecordingPolicy(log), CountingEnv(log), stop, RecordingHook(log), reset)


START = [("push hook", "PreExperimentStage"), ("push policy", "PreExperimentStage")]


def test_the_loop_makes_exactly_the_calls_of_the_plain_loop(tmp_path):
    plain, parts = _recorded(8)
    rl.Experiment(*parts).run()
    log, parts = _recorded(8)
    ResumableExperiment(*parts, checkpoints=CheckpointSchedule(3, tmp_path,
                                                               keep_best=False)).run()
    assert log == plain


def test_a_resumed_run_makes_the_remaining_calls_of_the_uninterrupted_one(tmp_path):
    whole, parts = _recorded(11)
    rl.Experiment(*parts).run()
    _, parts = _recorded(11)
    ResumableExperiment(*parts, checkpoints=CheckpointSchedule(5, tmp_path, at_end=False,
                                                               keep_best=False)).run()
    resumed = resume(tmp_path / "step-000000005")
    assert resumed.env.t == 2  # the second episode's second step: mid-episode
    log = resumed.policy.log  # the log itself was saved (one list, shared by every part)
    assert log is resumed.env.log is resumed.hook.log is resumed.stop_condition.log
    cut = len(log)
    assert log == whole[:cut] and whole[cut - 1] == ("stop.check",)
    resumed.run()
    assert log[cut:] == START + whole[cut:]


# ---- the checkpoint schedule -----------------------------------------------------------------


def _agent(capacity=32, seed=0):
    policy = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(7, 2), gamma=0.9, lr=0.5),
                             rl.EpsilonGreedyExplorer(0.1, decay_steps=300, rng=seed))
    return rl.Agent(policy, rl.Trajectory(rl.CircularArraySARTSTraces(capacity=capacity)))


def _steps(directory):
    return sorted(p.name for p in Path(directory).iterdir())


def test_checkpoints_keep_the_last_n_the_best_and_the_end(tmp_path):
    checkpoint = CheckpointSchedule(every_n_steps=20, directory=tmp_path, keep_last=2,
                                    recent_episodes=3)
    ResumableExperiment(_agent(), rl.RandomWalk1D(), rl.StopAfterNSteps(130, progress=False),
                        rl.TotalRewardPerEpisode(), checkpoints=checkpoint).run()
    assert _steps(tmp_path) == ["best", "step-000000120", "step-000000130"]
    best = read_manifest(tmp_path / "best")["summary"]
    assert best["best"] and best["recent_return"] == checkpoint.best_return
    assert read_manifest(tmp_path / "step-000000130")["summary"]["reason"] == "end"
    assert read_manifest(tmp_path / "step-000000130")["summary"]["stopped"] is True
    assert latest(tmp_path).name == "step-000000130"


def test_a_vector_env_counts_every_sub_envs_steps(tmp_path):
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(rl.CircularArraySARTSTraces(
        capacity=64, state=(np.float32, (4,)))))
    env = rl.GymVectorEnv("CartPole-v1", num_envs=4, seed=0)
    ResumableExperiment(agent, env, rl.StopAfterNSteps(100, progress=False), None,
                        checkpoints=CheckpointSchedule(30, tmp_path, keep_last=5,
                                                       keep_best=False)).run()
    assert _steps(tmp_path) == ["step-000000032", "step-000000060", "step-000000092",
                                "step-000000100"]
    assert read_manifest(tmp_path / "step-000000100")["summary"]["num_envs"] == 4


def test_the_deprecated_checkpoint_hook_still_saves_and_says_what_to_use(tmp_path):
    with pytest.warns(DeprecationWarning, match="checkpoints=stagerl.checkpoints."
                                                "CheckpointSchedule"):
        hook = rl.TotalRewardPerEpisode() + Checkpoint(20, tmp_path / "old", keep_last=2)
    experiment = ResumableExperiment(_agent(), rl.RandomWalk1D(),
                                     rl.StopAfterNSteps(50, progress=False), hook)
    # taken out of the hooks; the experiment's own recorder of training returns added
    assert [type(m).__name__ for m in experiment.hook] == ["TotalRewardPerEpisode",
                                                           "RecentReturns"]
    experiment.run()
    assert _steps(tmp_path / "old") == ["best", "step-000000040", "step-000000050"]
    with pytest.warns(DeprecationWarning):
        hook = Checkpoint(2, tmp_path / "plain")
    with pytest.raises(ValueError, match="build a stagerl.checkpoints.ResumableExperiment"):
        rl.run(_agent(), rl.RandomWalk1D(), rl.StopAfterNSteps(5, progress=False), hook)
    assert not (tmp_path / "plain").exists()


@pytest.mark.parametrize("kwargs, error", [
    ({"every_n_steps": 0}, ValueError), ({"every_n_steps": 5, "keep_last": 0}, ValueError),
    ({"every_n_steps": 5, "directory": 3}, TypeError),
    ({"every_n_steps": 5, "keep_best": "yes"}, TypeError),
    ({"every_n_steps": 5, "recent_episodes": -1}, ValueError),
    ({"every_n_steps": 5, "directory": ""}, ValueError),
    ({"every_n_steps": 2.5}, TypeError),
])
def test_bad_checkpoint_settings_are_refused_at_construction(kwargs, error):
    with pytest.raises(error):
        CheckpointSchedule(**kwargs)


def test_resuming_from_an_earlier_checkpoint_replaces_the_later_ones(tmp_path):
    ResumableExperiment(_agent(), rl.RandomWalk1D(), rl.StopAfterNSteps(60, progress=False),
                        None, checkpoints=CheckpointSchedule(20, tmp_path,
                                                             keep_best=False)).run()
    assert _steps(tmp_path) == ["step-000000020", "step-000000040", "step-000000060"]
    resume(tmp_path / "step-000000020").run()
    assert _steps(tmp_path) == ["step-000000020", "step-000000040", "step-000000060"]
    experiment = resume(tmp_path / "step-000000020", steps=50)
    experiment.run()
    assert _steps(tmp_path) == ["step-000000020", "step-000000040", "step-000000050"]


def test_resume_continues_to_more_steps_or_another_stop_condition(tmp_path):
    ResumableExperiment(_agent(), rl.RandomWalk1D(), rl.StopAfterNSteps(40, progress=False),
                        rl.StepsPerEpisode(), checkpoints=CheckpointSchedule(100, tmp_path)).run()
    longer = resume(tmp_path, steps=90)
    longer.run()
    assert longer.stop_condition.step == 90
    whole = rl.run(_agent(), rl.RandomWalk1D(), rl.StopAfterNSteps(90, progress=False),
                   rl.StepsPerEpisode())
    assert longer.hook[0].steps == whole.steps  # a run of 40 steps, continued to 90
    with pytest.raises(CheckpointError, match="is at env step 90, beyond steps=60"):
        resume(tmp_path, steps=60)
    episodes = resume(tmp_path / "step-000000040", stop_condition=rl.StopAfterNEpisodes(
        3, progress=False))
    episodes.run()
    assert episodes.stop_condition.episode == 3
    with pytest.raises(CheckpointError, match="steps= continues a run stopped by StopAfterNS"):
        resume(tmp_path, steps=100)  # the newest now stopped after episodes


def test_ctrl_c_writes_a_checkpoint_at_the_end_of_the_step_and_stops(tmp_path):
    hook = resume_runs.CtrlCAt(at=17) + rl.StepsPerEpisode()
    experiment = ResumableExperiment(_agent(), rl.RandomWalk1D(),
                                     rl.StopAfterNSteps(50, progress=False), hook,
                                     checkpoints=CheckpointSchedule(100, tmp_path))
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        experiment.run()
    assert signal.getsignal(signal.SIGINT) is before
    assert _steps(tmp_path) == ["best", "step-000000017"] or _steps(tmp_path) == [
        "step-000000017"]
    summary = read_manifest(tmp_path / "step-000000017")["summary"]
    assert summary["reason"] == "interrupted" and summary["stopped"] is False
    assert experiment.stop_condition.step == 17


def test_an_uninterrupted_run_with_checkpoints_is_the_run_without(tmp_path):
    plain_agent = _agent()
    plain = rl.run(plain_agent, rl.RandomWalk1D(), rl.StopAfterNSteps(300, progress=False),
                   rl.TotalRewardPerEpisode())
    agent = _agent()
    experiment = ResumableExperiment(agent, rl.RandomWalk1D(),
                                     rl.StopAfterNSteps(300, progress=False),
                                     rl.TotalRewardPerEpisode(),
                                     checkpoints=CheckpointSchedule(7, tmp_path))
    experiment.run()
    assert experiment.hook[0].rewards == plain.rewards
    assert np.array_equal(agent.policy.learner.approximator.table,
                          plain_agent.policy.learner.approximator.table)


def test_load_gives_the_agent_of_an_experiment_checkpoint(tmp_path):
    ResumableExperiment(_agent(), rl.RandomWalk1D(), rl.StopAfterNSteps(30, progress=False),
                        None, checkpoints=CheckpointSchedule(10, tmp_path / "checkpoints")).run()
    agent = load(tmp_path)  # a log directory: its checkpoints/, the newest
    assert isinstance(agent, rl.Agent) and rl.evaluate(agent, rl.RandomWalk1D(), 2, 50)


# ---- exact resume of every algorithm -----------------------------------------------------------


@pytest.mark.parametrize("name", ["erwr", "reps"])
def test_an_l_bfgs_learner_saved_mid_run_loads_as_it_was_and_goes_on_as_the_original(name,
                                                                                     tmp_path):
    """ERWR's and REPS's policy optimiser (L-BFGS), baseline and dual come back from a
    checkpoint as they were, and the loaded agent goes on as the original: the same state to
    the last bit (every array, tensor, counter and rng, the optimisers' settings too)."""
    import torch

    from stagerl.experiments.registry import configure, get_experiment

    setup = resume_runs.SETUPS[name]
    experiment = get_experiment(setup["experiment"])
    config = configure(setup["experiment"], steps=600, **setup["overrides"])
    env = experiment.make_env(config, 0)
    agent = experiment.make_agent(config, env, 0, torch.device("cpu"))
    rl.run(agent, env, rl.StopAfterNSteps(200, progress=False))
    updates = agent.policy.n_updates
    assert updates >= 1 and agent.policy.baseline.coefficients is not None
    copy_agent, copy_env = load(save((agent, env), tmp_path / "mid-run"))
    state, copied = (dict(resume_runs._flat(a.state_dict())) for a in (agent, copy_agent))
    assert sorted(state) == sorted(copied) and "baseline/coefficients" in state
    for key, value in state.items():  # (gradients are zeroed when a model is loaded)
        assert np.array_equal(np.asarray(copied[key]), np.asarray(value)), key
    for a, e in ((agent, env), (copy_agent, copy_env)):
        rl.run(a, e, rl.StopAfterNSteps(200, progress=False))
    assert copy_agent.policy.n_updates == agent.policy.n_updates > updates
    assert resume_runs.state_digest((copy_agent, copy_env)) == \
        resume_runs.state_digest((agent, env))


def _differences(a: dict, b: dict) -> list[str]:
    assert sorted(a) == sorted(b)
    return [key for key in a if not (a[key].dtype == b[key].dtype and a[key].shape == b[key].shape
                                     and a[key].tobytes() == b[key].tobytes())]


def _checkpoint_is_mid_run(name: str, path: Path) -> None:
    experiment = resume(path, restore_globals=False)
    env, tracker = experiment.env, experiment.hook[0].tracker  # TotalRewardPerEpisode's
    assert experiment.checkpoints.env_step == resume_runs.SETUPS[name]["k"]
    if isinstance(env, rl.VectorEnv):  # sub-envs mid-episode (and a rollout partly collected)
        assert (np.asarray(tracker.running_length) > 0).any()
        n_steps = getattr(experiment.policy.policy.config, "n_steps", None)
        if n_steps is not None:
            assert 0 < len(experiment.policy.trajectory) < n_steps * env.num_envs
    else:
        assert tracker.running_length > 0 and not (env.is_terminated or env.is_truncated)
    policy = experiment.policy.policy
    if isinstance(policy, rl.RecurrentPolicy):  # memory live, not initial
        # the RNN's rows only: a previous action kept beside them is a one-hot, mostly zeros
        model = getattr(policy, "model", None)
        rows = model.recurrent_state_shape[0] if model is not None else None
        values = policy.memory.values[:, :rows]
        assert (values != 0).all(axis=tuple(range(1, values.ndim))).any()


# SAC, PPO on Hopper (MuJoCo, normalised) and the recurrent ones here, the others in a fresh
# process below; every named experiment with the slow tests.
IN_PROCESS = ("sac", "ppo-hopper", "ppo-lstm", "drqn")


@pytest.mark.parametrize("name", [name if name in IN_PROCESS else pytest.param(
    name, marks=pytest.mark.slow) for name in resume_runs.SETUPS])
def test_an_interrupted_run_resumed_in_this_process_ends_as_the_whole_run(name, tmp_path):
    whole = resume_runs.run_whole(name, tmp_path)
    checkpoint = resume_runs.run_interrupted(name, tmp_path)
    _checkpoint_is_mid_run(name, checkpoint)
    resumed = resume_runs.run_resumed(name, tmp_path)
    assert _differences(whole, resumed) == []
    if name.startswith("sac"):  # the entropy coefficient was learned, and resumed with the rest
        assert whole["state/log_ent_coef"] != 0.0


FRESH = ["tabular", "dqn", "ppo", "sac-halfcheetah", "ppo-lstm",
         *(pytest.param(name, marks=pytest.mark.slow) for name in ("sac", "drqn", "erwr",
                                                                   "reps"))]


@pytest.fixture(scope="module")
def fresh_runs(tmp_path_factory, request):
    """Two processes for the setups whose test was selected: the whole and the interrupted
    runs, then the resumed ones."""
    names = sorted({item.callspec.params["name"] for item in request.session.items
                    if getattr(item, "originalname", None) == FRESH_TEST})
    directory = tmp_path_factory.mktemp("fresh")
    for name in names:
        (directory / name).mkdir()
    script = Path(resume_runs.__file__)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(Path(rl.__file__).parents[1]), os.environ.get("PYTHONPATH")]))}
    for mode in ("first", "resumed"):
        subprocess.run([sys.executable, str(script), mode, str(directory), *names], check=True,
                       timeout=600, env=env)
    return directory


FRESH_TEST = "test_an_interrupted_run_resumed_in_a_fresh_process_ends_as_the_whole_run"


@pytest.mark.parametrize("name", FRESH)
def test_an_interrupted_run_resumed_in_a_fresh_process_ends_as_the_whole_run(name, fresh_runs):
    directory = fresh_runs / name
    whole, resumed = (dict(np.load(directory / f"{mode}.npz")) for mode in ("whole", "resumed"))
    assert _differences(whole, resumed) == []
    interrupted = directory / "interrupted" / "checkpoints" / \
        f"step-{resume_runs.SETUPS[name]['k']:09d}"
    manifest = read_manifest(interrupted)
    assert manifest["summary"]["reason"] == "interrupted"
    assert json.dumps(manifest["info"]) == json.dumps(
        {"experiment": resume_runs.SETUPS[name]["experiment"]})
    _checkpoint_is_mid_run(name, interrupted)


def test_an_experiment_saves_itself_only_where_it_continues_exactly(tmp_path):
    experiment = ResumableExperiment(_agent(), rl.RandomWalk1D(),
                                     rl.StopAfterNSteps(5, progress=False), rl.StepsPerEpisode())
    experiment.run()
    with pytest.raises(RuntimeError, match="only from the point of the loop"):
        experiment.save(tmp_path / "now")
    with pytest.raises(TypeError, match="pass it checkpoints=stagerl.checkpoints."
                                        "CheckpointSchedule"):
        save(experiment, tmp_path / "now")
    assert not any(tmp_path.iterdir())


def _episode_rows(logdir):
    import csv

    with open(logdir / "episodes.csv", newline="") as file:
        return [{k: v for k, v in row.items() if k != "wall_time"} for row in csv.DictReader(file)]


def test_a_run_with_the_command_lines_hooks_resumes_with_its_logs(tmp_path, monkeypatch):
    from stagerl.experiments import runner

    monkeypatch.setattr(runner, "EVAL_EVERY_N_STEPS", 100)

    def experiment(logdir, interrupt_at):
        prepared = runner.prepare("tabular-q-random-walk", steps=400, seed=3, device="cpu",
                                  logdir=logdir, progress=False, tensorboard=False)
        hook = rl.ComposedHook(*runner.default_hooks(prepared), resume_runs.CtrlCAt(interrupt_at))
        return ResumableExperiment(prepared.agent, prepared.env,
                                   rl.StopAfterNSteps(400, progress=False), hook,
                                   checkpoints=CheckpointSchedule(1000, logdir / "checkpoints"),
                                   info={"experiment": "tabular-q-random-walk", "seed": 3})

    whole = experiment(tmp_path / "whole", -1).run()
    with pytest.raises(KeyboardInterrupt, match="checkpoint written to"):
        experiment(tmp_path / "cut", 161).run()
    resumed = resume(tmp_path / "cut").run()
    assert _episode_rows(tmp_path / "cut") == _episode_rows(tmp_path / "whole")
    from stagerl.logging import Evaluate

    evaluations = [next(h for h in run.hook if isinstance(h, Evaluate)) for run in (whole,
                                                                                     resumed)]
    assert evaluations[0].steps == evaluations[1].steps == [100, 200, 300, 400]
    assert evaluations[0].returns == evaluations[1].returns
