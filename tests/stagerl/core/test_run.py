"""run() and Experiment: the exact order of calls, errors, and the resolved loop.

Test-only envs, policies and hooks record every call into one shared log.
"""

from __future__ import annotations

import re
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import stagerl as rl
import stagerl.core.run as run_module
from stagerl.core import stage_calls

# ---- scripted components -------------------------------------------------------------------


class CountingEnv(rl.Env):
    """Episodes of ``length`` steps; ``state`` counts the steps, ``reward`` is the new state."""

    def __init__(self, log=None, length=2, truncate=False, done_after_reset=False):
        self.log = [] if log is None else log
        self.length, self.truncate, self.done_after_reset = length, truncate, done_after_reset
        self.t = 0

    def reset(self):
        self.log.append(("env.reset",))
        self.t = 0

    def act(self, action):
        self.log.append(("env.act", action))
        self.t += 1

    @property
    def state(self):
        return self.t

    @property
    def reward(self):
        return float(self.t)

    @property
    def is_terminated(self):
        return (self.t >= self.length and not self.truncate) or self.done_after_reset

    @property
    def is_truncated(self):
        return self.t >= self.length and self.truncate

    @property
    def action_space(self):
        return None

    @property
    def state_space(self):
        return None


class RecordingPolicy(rl.Policy):
    """Defines every push, optimise and plan and records them; plans the env's step count."""

    def __init__(self, log, fail_at=None):
        self.log, self.fail_at = log, fail_at


def _name(stage):
    return type(stage).__name__.removesuffix("Stage")


@rl.push.dispatch
def _push_recording_policy(policy: RecordingPolicy, stage: rl.Stage, env):
    policy.log.append(("push policy", _name(stage)))
    if policy.fail_at == ("push", _name(stage)):
        raise ValueError(f"policy failed at {_name(stage)}")


@rl.push.dispatch
def _push_recording_policy_action(policy: RecordingPolicy, stage: rl.PostActStage, env, action):
    policy.log.append(("push policy", "PostAct", action))


@rl.optimise.dispatch
def _optimise_recording_policy(policy: RecordingPolicy, stage: rl.Stage):
    policy.log.append(("optimise", _name(stage)))


@rl.plan.dispatch
def _plan_recording_policy(policy: RecordingPolicy, env):
    policy.log.append(("plan",))
    if policy.fail_at == "plan":
        raise ValueError("plan failed")
    if policy.fail_at == "plan interrupt":
        raise KeyboardInterrupt
    return 10 + env.state


class RecordingHook(rl.Hook):
    def __init__(self, log, name="hook", fail_at=None):
        self.log, self.name, self.fail_at = log, name, fail_at


@rl.push.dispatch
def _push_recording_hook(hook: RecordingHook, stage: rl.Stage, policy, env):
    hook.log.append((f"push {hook.name}", _name(stage)))
    if hook.fail_at == _name(stage):
        raise OSError(f"{hook.name} failed at {_name(stage)}")


class RecordingStop(rl.StopAfterNSteps):
    def __init__(self, n, log):
        super().__init__(n, progress=False)
        self.log = log

    def check(self, policy, env):
        self.log.append(("stop.check",))
        return super().check(policy, env)


class RecordingReset(rl.ResetIfEnvTerminated):
    def __init__(self, log):
        self.log = log

    def check(self, policy, env):
        self.log.append(("reset.check",))
        return super().check(policy, env)


def step_calls(action, stop=True):
    return [
        ("reset.check",),
        ("push policy", "PreAct"),
        ("optimise", "PreAct"),
        ("push hook", "PreAct"),
        ("plan",),
        ("env.act", action),
        ("push policy", "PostAct", action),
        ("optimise", "PostAct"),
        ("push hook", "PostAct"),
    ] + ([("stop.check",)] if stop else [])


def episode_calls(actions, finished=True):
    calls = [
        ("env.reset",),
        ("push policy", "PreEpisode"),
        ("optimise", "PreEpisode"),
        ("push hook", "PreEpisode"),
    ]
    for action in actions:
        calls += step_calls(action)
    if finished:
        calls.append(("reset.check",))
    return calls + [
        ("push policy", "PostEpisode"),
        ("optimise", "PostEpisode"),
        ("push hook", "PostEpisode"),
    ]


START = [("push hook", "PreExperiment"), ("push policy", "PreExperiment")]
END = [("push policy", "PostExperiment"), ("push hook", "PostExperiment")]


def recorded_run(n_steps, length=2, **kwargs):
    log = []
    hook = RecordingHook(log)
    returned = rl.run(
        RecordingPolicy(log),
        CountingEnv(log, length=length, **kwargs),
        RecordingStop(n_steps, log),
        hook,
        RecordingReset(log),
    )
    assert returned is hook
    return log


# ---- the order of calls -------------------------------------------------------------------


def test_one_short_episode_follows_the_design_order_exactly():
    log = []
    hook = RecordingHook(log)
    rl.run(
        RecordingPolicy(log),
        CountingEnv(log, length=2),
        rl.StopAfterNEpisodes(1, progress=False),
        hook,
        RecordingReset(log),
    )
    assert log == [
        ("push hook", "PreExperiment"),  # hook first here
        ("push policy", "PreExperiment"),
        ("env.reset",),
        ("push policy", "PreEpisode"),
        ("optimise", "PreEpisode"),
        ("push hook", "PreEpisode"),
        ("reset.check",),
        ("push policy", "PreAct"),
        ("optimise", "PreAct"),
        ("push hook", "PreAct"),
        ("plan",),
        ("env.act", 10),
        ("push policy", "PostAct", 10),
        ("optimise", "PostAct"),
        ("push hook", "PostAct"),
        ("reset.check",),
        ("push policy", "PreAct"),
        ("optimise", "PreAct"),
        ("push hook", "PreAct"),
        ("plan",),
        ("env.act", 11),
        ("push policy", "PostAct", 11),
        ("optimise", "PostAct"),
        ("push hook", "PostAct"),
        # the stop condition ends the run at the episode's end, before reset.check is asked again
        ("push policy", "PostEpisode"),
        ("optimise", "PostEpisode"),
        ("push hook", "PostEpisode"),
        ("push policy", "PostExperiment"),  # policy first here
        ("push hook", "PostExperiment"),
    ]


def test_the_helpers_spell_out_the_same_order():
    log = recorded_run(n_steps=2, length=2)
    assert log == START + episode_calls([10, 11], finished=False) + END


def test_stop_condition_cuts_an_episode_and_it_still_gets_post_episode():
    log = recorded_run(n_steps=3, length=2)
    expected = START + episode_calls([10, 11]) + episode_calls([10], finished=False) + END
    assert log == expected


def test_optimise_is_never_called_at_the_experiment_stages():
    log = recorded_run(n_steps=5, length=2)
    assert ("optimise", "PreExperiment") not in log and ("optimise", "PostExperiment") not in log


@pytest.mark.parametrize("n", [1, 2, 3, 7, 50])
def test_stop_after_n_steps_makes_exactly_n_env_acts(n):
    log = recorded_run(n_steps=n, length=3)
    assert sum(call[0] == "env.act" for call in log) == n


def test_truncated_episodes_end_like_terminated_ones():
    log = recorded_run(n_steps=4, length=2, truncate=True)
    assert log.count(("env.reset",)) == 2
    assert log.count(("push hook", "PostEpisode")) == 2


def test_default_stop_condition_is_one_episode_and_default_hook_is_a_fresh_empty_hook():
    log = []
    first = rl.run(RecordingPolicy(log), CountingEnv(log, length=3))
    second = rl.run(RecordingPolicy(log), CountingEnv(log, length=3))
    assert isinstance(first, rl.EmptyHook) and first is not second
    assert log.count(("env.reset",)) == 2 and sum(c[0] == "env.act" for c in log) == 6


def test_reset_after_n_steps_ends_episodes_of_a_continuing_task():
    log = []
    hook = rl.run(
        RecordingPolicy(log),
        CountingEnv(log, length=10**9),
        rl.StopAfterNSteps(7, progress=False),
        rl.StepsPerEpisode(),
        rl.ResetAfterNSteps(3),
    )
    assert hook.steps == [3, 3, 1]


def test_env_last_action_is_set_right_after_act_for_any_env():
    class DuckEnv:  # not an rl.Env: run still records the action
        is_terminated = is_truncated = False
        state, reward = 0, 0.0

        def reset(self):
            pass

        def act(self, action):
            pass

    seen = []
    env = DuckEnv()
    hook = rl.DoEveryNSteps(lambda t, policy, env: seen.append(env.last_action))
    rl.run(RecordingPolicy([]), env, rl.StopAfterNSteps(3, progress=False), hook)
    assert seen == [10, 10, 10] and env.last_action == 10


def test_experiment_holds_its_parts_and_run_returns_it():
    log = []
    hook = RecordingHook(log)
    experiment = rl.Experiment(RecordingPolicy(log), CountingEnv(log), RecordingStop(2, log), hook)
    assert isinstance(experiment.reset_condition, rl.ResetIfEnvTerminated)
    assert experiment.run() is experiment and experiment.hook is hook
    assert log[-2:] == END


# ---- exceptions and Ctrl-C ----------------------------------------------------------------


def test_an_exception_in_the_loop_still_announces_post_experiment_and_propagates_unchanged():
    log = []
    with pytest.raises(ValueError, match="plan failed") as caught:
        rl.run(RecordingPolicy(log, fail_at="plan"), CountingEnv(log), hook=RecordingHook(log))
    assert log[-3:] == [("plan",)] + END
    assert not getattr(caught.value, "__notes__", [])


def test_keyboard_interrupt_still_announces_post_experiment_and_propagates():
    log = []
    with pytest.raises(KeyboardInterrupt):
        rl.run(
            RecordingPolicy(log, fail_at="plan interrupt"),
            CountingEnv(log),
            hook=RecordingHook(log),
        )
    assert log[-2:] == END


class FailingOnExitPolicy(RecordingPolicy):
    pass


@rl.push.dispatch
def _push_failing_on_exit(policy: FailingOnExitPolicy, stage: rl.PostExperimentStage, env):
    policy.log.append(("push policy", "PostExperiment"))
    raise RuntimeError("policy could not save")


def test_failures_while_finishing_become_notes_on_the_original_exception():
    log = []
    policy = FailingOnExitPolicy(log, fail_at="plan")
    hook = RecordingHook(log, fail_at="PostExperiment")
    with pytest.raises(ValueError, match="plan failed") as caught:
        rl.run(policy, CountingEnv(log), hook=hook)
    notes = caught.value.__notes__
    assert len(notes) == 2
    assert "push(policy, PostExperimentStage(), env)" in notes[0] and "could not save" in notes[0]
    assert "push(hook, PostExperimentStage(), policy, env)" in notes[1]
    assert "hook failed at PostExperiment" in notes[1]
    assert log[-2:] == END  # the hook ran although the policy's push raised


def test_a_failure_while_finishing_a_clean_run_is_raised_and_the_hook_still_runs():
    log = []
    with pytest.raises(ValueError, match="policy failed at PostExperiment") as caught:
        rl.run(
            RecordingPolicy(log, fail_at=("push", "PostExperiment")),
            CountingEnv(log),
            hook=RecordingHook(log, fail_at="PostExperiment"),
        )
    assert log[-2:] == END
    assert "hook failed at PostExperiment" in caught.value.__notes__[0]


def test_every_member_of_a_composed_hook_is_finished_even_when_one_fails():
    log = []
    failing, second = RecordingHook(log, "first", fail_at="PostExperiment"), RecordingHook(log)
    with pytest.raises(ValueError, match="plan failed") as caught:
        rl.run(RecordingPolicy(log, fail_at="plan"), CountingEnv(log), hook=failing + second)
    assert log[-3:] == [
        ("push policy", "PostExperiment"),
        ("push first", "PostExperiment"),
        ("push hook", "PostExperiment"),
    ]
    (note,) = caught.value.__notes__
    assert "push(RecordingHook (a member of hook), PostExperimentStage(), policy, env)" in note
    assert "first failed at PostExperiment" in note


def test_an_env_done_right_after_reset_raises_before_any_pre_episode_call():
    log = []
    with pytest.raises(RuntimeError, match="CountingEnv"):
        rl.run(
            RecordingPolicy(log), CountingEnv(log, done_after_reset=True), hook=RecordingHook(log)
        )
    assert log == START + [("env.reset",)] + END


# ---- bad arguments ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"stop_condition": 100}, ["100", "StopAfterNSteps(100)"]),
        ({"stop_condition": lambda p, e: True}, ["StopCondition"]),
        ({"hook": print}, ["hook", "DoEveryNSteps"]),
        ({"hook": "csv"}, ["'csv'", "Hook"]),
        ({"reset_condition": 3}, ["ResetCondition", "ResetAfterNSteps", "check(policy, env)"]),
        ({"stop_condition": object()}, ["check(policy, env)", "StopAfterNSteps"]),
    ],
)
def test_bad_arguments_raise_type_errors_naming_the_value_and_the_fix(kwargs, words):
    log = []
    with pytest.raises(TypeError) as caught:
        rl.run(RecordingPolicy(log), CountingEnv(log), **kwargs)
    for word in words:
        assert word in str(caught.value)
    assert log == []  # checked before anything ran


def test_a_gymnasium_env_or_a_non_policy_is_refused_with_the_fix():
    import gymnasium

    with pytest.raises(TypeError, match="GymEnv"):
        rl.run(RecordingPolicy([]), gymnasium.make("CartPole-v1"))
    with pytest.raises(TypeError, match="stagerl.Policy"):
        rl.run(object(), CountingEnv())


# ---- the resolved loop makes exactly the calls of the plain one ---------------------------


def plain_loop_source() -> str:
    """The plain loop written out in the docstring of stagerl/core/run.py."""
    block = run_module.__doc__.split("::\n\n", 1)[1]
    block = block[: block.index("        return hook") + len("        return hook")]
    return textwrap.dedent(block) + "\n"


def _plain_run():
    namespace = {"push": rl.push, "plan": rl.plan, "optimise": rl.optimise}
    namespace.update({name: getattr(rl, name) for name in (
        "PreExperimentStage", "PreEpisodeStage", "PreActStage", "PostActStage",
        "PostEpisodeStage", "PostExperimentStage")})
    exec(compile(plain_loop_source(), run_module.__file__, "exec"), namespace)
    return namespace["plain_run"]


#: The reference: the loop of stagerl/core/run.py's docstring, every call a plum call.
plain_run = _plain_run()


def test_docs_loop_md_prints_the_plain_loop_of_run_py():
    page = (Path(__file__).resolve().parents[3] / "docs" / "loop.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert blocks[0] == plain_loop_source()


class SparsePolicy(rl.Policy):
    """Defines only a few stages; plans actions of changing types (int, str, numpy int)."""

    def __init__(self, log):
        self.log, self.t = log, 0


@rl.plan.dispatch
def _plan_sparse(policy: SparsePolicy, env):
    policy.t += 1
    policy.log.append(("plan", policy.t))
    return (policy.t, f"a{policy.t}", np.int64(policy.t))[policy.t % 3]


@rl.push.dispatch
def _push_sparse_pre_act(policy: SparsePolicy, stage: rl.PreActStage, env):
    policy.log.append(("sparse PreAct",))


@rl.push.dispatch
def _push_sparse_str_action(policy: SparsePolicy, stage: rl.PostActStage, env, action: str):
    policy.log.append(("sparse PostAct str", action))


@rl.optimise.dispatch
def _optimise_sparse(policy: SparsePolicy, stage: rl.PostEpisodeStage):
    policy.log.append(("sparse optimise PostEpisode",))


class EpisodeHook(rl.Hook):
    def __init__(self, log, name):
        self.log, self.name = log, name


@rl.push.dispatch
def _push_episode_hook(hook: EpisodeHook, stage: rl.PreEpisodeStage, policy, env):
    hook.log.append((hook.name, "PreEpisode"))


@rl.push.dispatch
def _push_episode_hook_post_act(hook: EpisodeHook, stage: rl.PostActStage, policy, env):
    hook.log.append((hook.name, "PostAct", env.last_action))


class LoggingStepsPerEpisode(rl.StepsPerEpisode):
    pass


class LoggingTrajectory:
    """What an Agent needs of a trajectory: push (logged)."""

    def __init__(self, log):
        self.log = log

    def push(self, **step):
        self.log.append(("trajectory.push", tuple(sorted(step.items()))))


@rl.push.dispatch
def _push_sparse_agent_str(
    agent: rl.Agent[SparsePolicy, object], stage: rl.PostActStage, env: object, action: str
):
    agent.trajectory.log.append(("agent PostAct str", action))


def _scenarios(log):
    """(policy, env, stop, hook, reset) builders covering skipped, composed and typed calls."""
    return {
        "recording": lambda: (
            RecordingPolicy(log),
            CountingEnv(log, length=3),
            RecordingStop(8, log),
            RecordingHook(log),
            RecordingReset(log),
        ),
        "sparse composed": lambda: (
            SparsePolicy(log),
            CountingEnv(log, length=4),
            RecordingStop(11, log),
            EpisodeHook(log, "a")
            + rl.StepsPerEpisode()
            + RecordingHook(log, "b")
            + rl.EmptyHook()
            + EpisodeHook(log, "c"),
            RecordingReset(log),
        ),
        "nested composed, continuing": lambda: (
            SparsePolicy(log),
            CountingEnv(log, length=10**9),
            RecordingStop(9, log),
            rl.ComposedHook(rl.ComposedHook(EpisodeHook(log, "x")), LoggingStepsPerEpisode()),
            rl.ResetAfterNSteps(2),
        ),
        "agent with a user method for one action type": lambda: (
            rl.Agent(SparsePolicy(log), LoggingTrajectory(log)),
            CountingEnv(log, length=3),
            RecordingStop(10, log),
            rl.TotalRewardPerEpisode() + RecordingHook(log),
            RecordingReset(log),
        ),
        "nothing to call": lambda: (
            SparsePolicy(log),
            CountingEnv(log, length=2),
            RecordingStop(5, log),
            rl.EmptyHook(),
            RecordingReset(log),
        ),
    }


@pytest.mark.parametrize("scenario", list(_scenarios([])))
def test_the_resolved_loop_makes_exactly_the_calls_of_the_plain_loop(scenario):
    plain_log, resolved_log = [], []
    plain_hook = plain_run(*_scenarios(plain_log)[scenario]())
    resolved_hook = rl.run(*_scenarios(resolved_log)[scenario]())
    assert resolved_log == plain_log
    assert len(resolved_log) > 10
    steps = lambda hook: [getattr(h, "steps", None) for h in getattr(hook, "hooks", (hook,))]
    assert steps(resolved_hook) == steps(plain_hook)


class LateHook(rl.Hook):
    """Gets its PostAct method only while a run is under way."""


def test_a_method_registered_during_the_run_is_called_from_the_next_episode_on():
    log = []

    def register_once(t, policy, env):
        if t == 1:

            @rl.push.dispatch
            def _push_late(hook: LateHook, stage: rl.PostActStage, policy, env):
                log.append(("late", env.state))

    hook = rl.DoEveryNEpisodes(register_once) + LateHook()
    rl.run(
        RecordingPolicy([]), CountingEnv([], length=2), rl.StopAfterNSteps(4, progress=False), hook
    )
    assert log == [("late", 1), ("late", 2)]


def test_skipped_calls_are_exactly_the_no_op_fallbacks():
    names = sorted(f.__name__ for f in stage_calls.no_op_fallbacks())
    assert names == [
        "_optimise_policy",
        "_optimise_policy_trajectory",
        "_push_hook",
        "_push_policy",
        "_push_policy_action",
    ]


def test_the_agents_plan_and_optimise_are_replaced_by_the_calls_they_forward_to():
    agent = rl.Agent(RecordingPolicy([]), LoggingTrajectory([]))
    calls = stage_calls.StageCalls(agent, CountingEnv(), rl.EmptyHook())
    assert calls.plan.func.__name__ == "_plan_recording_policy"
    assert calls.plan.args == (agent.policy, calls.env)


def test_an_agent_whose_policy_does_not_learn_makes_no_optimise_call_per_step():
    calls = stage_calls.StageCalls(
        rl.Agent(SparsePolicy([]), LoggingTrajectory([])), CountingEnv(), rl.EmptyHook()
    )
    assert calls.pre_act == () and calls.post_act == ()
    # only the Agent's PostEpisode push: the Agent forwards optimise(policy, stage, trajectory),
    # and SparsePolicy defines optimise(policy, stage) only
    (call,) = calls.post_episode
    assert call.func.__name__ == "_push_agent_post_episode"


def test_an_agent_records_every_step_of_a_run_in_its_trajectory():
    trajectory = rl.Trajectory(rl.CircularArraySARTSTraces(capacity=1000))
    agent = rl.Agent(rl.RandomPolicy(rng=0), trajectory)
    hook = rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(123, progress=False),
                  rl.StepsPerEpisode())
    steps = hook.steps
    assert sum(steps) == 123
    # one padding row between episodes, none after the last
    assert sum(steps) + len(steps) - 1 == len(trajectory.container)


def test_an_agent_run_with_a_sampler_and_hooks_records_what_the_plain_loop_records():
    def build():
        trajectory = rl.Trajectory(
            rl.CircularArraySARTSTraces(capacity=50), rl.BatchSampler(4, rng=0),
            rl.InsertSampleRatioController(threshold=5),
        )
        return (rl.Agent(rl.RandomPolicy(rng=0), trajectory), rl.RandomWalk1D(),
                rl.StopAfterNSteps(60, progress=False),
                rl.TotalRewardPerEpisode() + rl.StepsPerEpisode(), rl.ResetIfEnvTerminated())

    plain, resolved = build(), build()
    plain_run(*plain)
    rl.run(*resolved)
    # 60 inserted, threshold 5, ratio 1: 56 samples allowed; RandomPolicy does not learn, so
    # the Agent's optimise forwards to a no-op and nothing is sampled in either loop...
    assert plain[0].trajectory.controller.n_sampled == resolved[0].trajectory.controller.n_sampled
    # ...and the batches a learner would get are the same in both.
    for key in ("state", "action", "reward", "terminal", "next_state"):
        assert np.array_equal(plain[0].trajectory.container[key],
                              resolved[0].trajectory.container[key])
    assert plain[3][0].rewards == resolved[3][0].rewards
    assert plain[3][1].steps == resolved[3][1].steps
    for a, b in zip(plain[0].trajectory, resolved[0].trajectory, strict=True):
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


class SamplingPolicy(rl.Policy):
    """Learns nothing, but takes every batch the trajectory allows and keeps it."""

    def __init__(self):
        self.batches = []


@rl.plan.dispatch
def _plan_sampling(policy: SamplingPolicy, env):
    return int(env.state) % 2


@rl.optimise.dispatch
def _optimise_sampling(policy: SamplingPolicy, stage: rl.PostActStage, trajectory):
    for batch in trajectory:
        policy.batches.append(batch)


def test_an_agent_that_samples_gets_the_same_batches_in_the_resolved_and_the_plain_loop():
    def build():
        trajectory = rl.Trajectory(
            rl.CircularArraySARTSTraces(capacity=50), rl.BatchSampler(4, rng=0),
            rl.InsertSampleRatioController(threshold=5),
        )
        return (rl.Agent(SamplingPolicy(), trajectory), rl.RandomWalk1D(),
                rl.StopAfterNSteps(60, progress=False),
                rl.TotalRewardPerEpisode() + rl.StepsPerEpisode(), rl.ResetIfEnvTerminated())

    plain, resolved = build(), build()
    plain_run(*plain)
    rl.run(*resolved)
    batches_plain, batches_resolved = plain[0].policy.batches, resolved[0].policy.batches
    assert len(batches_resolved) == resolved[0].trajectory.controller.n_sampled == 56
    for a, b in zip(batches_plain, batches_resolved, strict=True):
        assert all(np.array_equal(a[k], b[k]) for k in ("state", "action", "reward"))


def test_a_stop_signal_set_from_another_thread_ends_the_run():
    signal = rl.StopSignal()
    timer = threading.Timer(0.05, signal.set)
    timer.start()
    hook = rl.run(RecordingPolicy([]), CountingEnv([], length=10**9), signal, rl.StepsPerEpisode())
    timer.join()
    assert signal.is_set() and hook.steps[0] > 0


class AfterTenActs:
    """A stop condition that is no subclass of anything stagerl has: only ``check``."""

    def __init__(self):
        self.checks = 0

    def check(self, policy, env):
        self.checks += 1
        return self.checks >= 10


class EveryThirdAct:
    """A reset condition that is no subclass of anything stagerl has: only ``check``."""

    def __init__(self):
        self.checks = 0

    def check(self, policy, env):
        self.checks += 1
        return self.checks % 3 == 0


def test_any_object_with_check_stops_and_resets_a_run():
    stop, reset = AfterTenActs(), EveryThirdAct()
    hook = rl.run(rl.RandomPolicy(rng=0), rl.FixedLengthEnv(length=100), stop,
                  rl.StepsPerEpisode(), reset)
    assert stop.checks == 10
    # The reset condition is asked before every act, the first of an episode too: every third
    # answer is yes, so each episode has two acts; the stop comes after the tenth.
    assert hook.steps == [2, 2, 2, 2, 2] and reset.checks == 14


class TensorActions(rl.Policy):
    """Plans a 0-d torch tensor, as a torch policy's argmax gives."""

    def __init__(self):
        self.calls = 0


@rl.plan.dispatch
def _plan_tensor(policy: TensorActions, env: rl.Env):
    import torch

    policy.calls += 1
    return torch.tensor(policy.calls % 2)


def test_a_zero_dimensional_tensor_is_an_action():
    import torch  # noqa: F401

    policy = TensorActions()
    hook = rl.run(policy, rl.GymEnv("CartPole-v1", seed=0),
                  rl.StopAfterNSteps(30, progress=False), rl.StepsPerEpisode())
    assert policy.calls == 30 and sum(hook.steps) == 30
    vector = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0)
    vector.reset()
    import torch as t

    vector.act(t.tensor([1, 0]))
    assert vector.state.shape == (2, 4)


# ---- after_step, start_at and describe -------------------------------------------------------


def test_after_step_callbacks_run_after_every_stop_check_in_order():
    log = []
    stop = RecordingStop(5, log)
    parts = (RecordingPolicy(log), CountingEnv(log, length=3), stop, RecordingHook(log),
             RecordingReset(log))
    calls = [lambda stopped: log.append(("after_step a", stopped)),
             lambda stopped: log.append(("after_step b", stopped))]
    rl.Experiment(*parts, after_step=calls).run()
    checks = [i for i, entry in enumerate(log) if entry == ("stop.check",)]
    assert len(checks) == 5
    for n, i in enumerate(checks):
        last = n == 4
        assert log[i + 1: i + 3] == [("after_step a", last), ("after_step b", last)]
    plain = []
    plain_run(RecordingPolicy(plain), CountingEnv(plain, length=3), RecordingStop(5, plain),
              RecordingHook(plain), RecordingReset(plain))
    assert [e for e in log if not e[0].startswith("after_step")] == plain


@pytest.mark.parametrize("after_step, words", [
    (print, ["a list of callables", "[f]"]),
    ([3], ["holds 3, which is not callable"]),
    (5, ["a list of callables f(stop), got 5"]),
])
def test_bad_after_step_callbacks_are_refused_before_anything_runs(after_step, words):
    log = []
    with pytest.raises(TypeError) as caught:
        rl.Experiment(RecordingPolicy(log), CountingEnv(log), None, None, after_step=after_step)
    assert all(word in str(caught.value) for word in words) and log == []


def test_start_at_a_step_end_continues_the_episode_without_a_reset():
    whole = []
    plain_run(RecordingPolicy(whole), CountingEnv(whole, length=3), RecordingStop(5, whole),
              RecordingHook(whole), RecordingReset(whole))
    # The same run, cut after the stop check of step 2 (mid-episode): the parts carry on.
    log = []
    env = CountingEnv(log, length=3)
    parts = (RecordingPolicy(log), env, RecordingStop(2, log), RecordingHook(log),
             RecordingReset(log))
    experiment = rl.Experiment(*parts)
    experiment.run()
    cut = log.index(("stop.check",), log.index(("stop.check",)) + 1) + 1
    assert log[:cut] == whole[:cut] and env.t == 2
    del log[:]
    experiment.stop_condition = RecordingStop(5, log)
    experiment.stop_condition.step = 2
    experiment.run(start_at=run_module.StepEnd(stopped=False))
    first_act = next(i for i, entry in enumerate(log) if entry[0] == "env.act")
    assert ("env.reset",) not in log[:first_act]
    start = [("push hook", "PreExperiment"), ("push policy", "PreExperiment")]
    assert log == start + whole[cut:]
    assert not hasattr(rl.Experiment, "position")


def test_start_at_a_stopped_step_end_ends_the_episode_at_once():
    log = []
    experiment = rl.Experiment(RecordingPolicy(log), CountingEnv(log, length=3),
                               RecordingStop(2, log), RecordingHook(log), RecordingReset(log))
    experiment.run(start_at=run_module.StepEnd(stopped=True))
    assert [e for e in log if e[0] in ("env.act", "env.reset", "stop.check")] == []
    assert ("push hook", "PostEpisode") in log
    with pytest.raises(TypeError, match="start_at must be None or a StepEnd"):
        experiment.run(start_at={"stopped": True})


def test_describe_lists_the_method_each_stage_resolves_to_with_its_file_and_line():
    agent = rl.Agent(rl.RandomPolicy(rng=0),
                     rl.Trajectory(rl.CircularArraySARTSTraces(capacity=8)))
    experiment = rl.Experiment(agent, rl.RandomWalk1D(), None,
                               rl.StepsPerEpisode() + RecordingHook([]))
    text = experiment.describe()
    lines = text.splitlines()
    assert lines[0] == "Experiment(Agent, RandomWalk1D, hook StepsPerEpisode + RecordingHook):"
    stages = [line.strip() for line in lines if not line.startswith("    ")]
    assert stages[1:] == ["PreEpisode:", "PreAct:", "plan:", "PostAct:", "PostEpisode:"]
    def line_of(path, name):
        text = Path(path).read_text().splitlines()
        return next(i + 1 for i, t in enumerate(text) if t.startswith(f"def {name}("))

    line = line_of(Path(rl.__file__).parent / "policies" / "agent.py", "_push_agent_pre_episode")
    expected = ("    push(Agent, PreEpisode, RandomWalk1D) -> _push_agent_pre_episode "
                f"(stagerl/policies/agent.py:{line})")
    assert lines[2] == expected
    recording = [line for line in lines if "RecordingHook, PostAct" in line]
    hook_line = line_of(__file__, "_push_recording_hook")
    assert recording == [f"    push(RecordingHook, PostAct, Agent, RandomWalk1D) -> "
                         f"_push_recording_hook (tests/stagerl/core/test_run.py:{hook_line})"]
    assert "plan(RandomPolicy, RandomWalk1D) -> _plan_random_policy" in text
    assert repr(stage_calls.StageCalls(agent, experiment.env, experiment.hook)).splitlines()[
        1:] == lines[1:]


def test_the_snippets_of_docs_loop_md_run(capsys, monkeypatch):
    monkeypatch.setenv("CI", "1")
    page = Path(__file__).resolve().parents[3] / "docs" / "loop.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.DOTALL)
    namespace = {"__name__": "docs"}
    for block in blocks[1:]:  # the first is the plain loop (the reference above)
        exec(compile(block, str(page), "exec", dont_inherit=True), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[False, False, True]"
    line = next(i + 1 for i, t in enumerate(
        (Path(rl.__file__).parent / "policies" / "agent.py").read_text().splitlines())
        if t.startswith("def _push_agent_pre_episode("))
    described = ['Experiment(Agent, RandomWalk1D, hook TotalRewardPerEpisode):', '  PreEpisode:',
                 '    push(Agent, PreEpisode, RandomWalk1D) -> _push_agent_pre_episode '
                 f'(stagerl/policies/agent.py:{line})']
    assert out[1] == repr(described)
    assert len(blocks) == 3


class CountedSteps(rl.StepsPerEpisode):
    """A per-episode hook with a more specific PostAct method of a user's own."""


@rl.push.dispatch
def _push_counted_steps_post_act(hook: CountedSteps, stage: rl.PostActStage, policy, env):
    hook.log.append("user PostAct")
    hook.post_act(policy, env)


def test_a_per_episode_hooks_own_methods_are_called_directly_unless_a_user_method_wins():
    plain, mine = rl.StepsPerEpisode(), CountedSteps()
    mine.log = []
    calls = stage_calls.StageCalls(RecordingPolicy([]), CountingEnv(), plain + mine)
    # the default push only calls the hook's method: the loop calls that method itself
    first, second = calls.post_act[-2:]  # the hook's calls come last
    assert first.func == plain.post_act and first.args == (calls.policy, calls.env)
    # the user's more specific method wins, as plain dispatch would pick it
    assert second.func.__name__ == "_push_counted_steps_post_act"
    # both keep EpisodeHook's pre_episode: one call for the two (stagerl.core.hooks_together)
    assert calls.pre_episode[-1].func.__name__ == "pre_episode_together"
    assert calls.pre_episode[-1].args == ((plain, mine), calls.policy, calls.env)
    hook = rl.run(RecordingPolicy([]), CountingEnv([], length=3),
                  rl.StopAfterNSteps(7, progress=False), plain + mine)
    assert hook[0].steps == hook[1].steps == [3, 3, 1] and hook[0].count == hook[1].count == 0
    assert mine.log == ["user PostAct"] * 7
    assert "StepsPerEpisode.post_act(RecordingPolicy, CountingEnv) -> EpisodeHook.post_act" \
        in "\n".join(calls.lines())
