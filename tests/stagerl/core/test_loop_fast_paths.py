"""The run loop's fast paths against the general ones, on the same inputs, with exact values:

* the default conditions checked inline (``ResetIfEnvTerminated``, ``StopAfterNSteps``) against
  their own ``check`` (a subclass that overrides nothing is never inlined);
* consecutive per-episode hooks run in one call per stage (``stagerl.core.hooks_together``)
  against each hook's own ``pre_episode``, ``post_act`` and ``post_episode`` (the grouping
  turned off);
* the episode lengths filled by slices (``EpisodeMeta.fill_lens``) against the indexed fill.
"""

from __future__ import annotations

import dataclasses

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from hypothesis import given, settings
from hypothesis import strategies as st

import stagerl as rl
import stagerl.core.stage_calls as stage_calls
from trajectories._episode_meta import EpisodeMeta


class Game(gymnasium.Env):
    """An env whose info tells games: three lives of two steps each, a score of 10 a step."""

    observation_space = gymnasium.spaces.Box(0, 1000, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self):
        self.over, self.score, self.lives, self.t = True, 0.0, 3, 0

    def reset(self, *, seed=None, options=None):
        if self.over:
            self.over, self.score, self.lives = False, 0.0, 3
        self.t = 0
        return np.zeros(1, np.float32), {"game_return": self.score, "game_over": False}

    def step(self, action):
        self.t += 1
        self.score += 10.0
        lost = self.t == 2
        self.lives -= lost
        self.over = self.lives == 0
        info = {"game_return": self.score, "game_over": self.over}
        return np.zeros(1, np.float32), 1.0, lost, False, info


class GeneralReset(rl.ResetIfEnvTerminated):
    """The same rule, through check(): a subclass is never checked inline."""


class GeneralStop(rl.StopAfterNSteps):
    """The same rule, through check()."""


class CountingReset(rl.ResetIfEnvTerminated):
    calls = 0

    def check(self, policy, env):
        self.calls += 1
        return super().check(policy, env)


class NumpyFlags:
    """Flags as numpy bools (not plain bools): the inline check must defer to check(); with
    ``flag=bool``, plain bools, truncations among them."""

    action_space = gymnasium.spaces.Discrete(2)
    state_space = gymnasium.spaces.Discrete(10)

    def __init__(self, flag=np.bool_):
        self.t, self.flag = 0, flag

    def reset(self):
        self.state, self.reward = 0, 0.0
        self.is_terminated = self.is_truncated = self.flag(False)

    def act(self, action):
        self.t += 1
        self.state += 1
        self.reward = float(self.t % 3)
        self.is_terminated = self.flag(self.state >= 4)
        self.is_truncated = self.flag(self.t % 7 == 0)


def agent_run(env, stop, reset, hook):
    traces = rl.CircularArraySARTSTraces(capacity=16, env=env)
    agent = rl.Agent(rl.RandomPolicy(rng=3), rl.Trajectory(traces))
    rl.run(agent, env, stop, hook, reset)
    container = agent.trajectory.container
    return ([np.asarray(b).tolist() for b in container.traces._bufs],
            container.step_numbers.tolist(), container.sampleable_inds.tolist(),
            agent.trajectory.controller.n_inserted)


def figures(hook):
    return [(type(h).__name__, dataclasses.asdict(h), h.tracker.__getstate__()) for h in hook]


@pytest.mark.parametrize("make_env", [lambda: rl.GymEnv("CartPole-v1", seed=1), NumpyFlags,
                                      lambda: NumpyFlags(bool), lambda: rl.RandomWalk1D()])
@pytest.mark.parametrize("steps", [1, 5, 333])
def test_inline_conditions_make_the_run_of_their_checks(make_env, steps):
    runs = []
    for stop, reset in ((rl.StopAfterNSteps(steps, progress=False), rl.ResetIfEnvTerminated()),
                        (GeneralStop(steps, progress=False), GeneralReset())):
        hook = rl.TotalRewardPerEpisode() + rl.StepsPerEpisode()
        runs.append((agent_run(make_env(), stop, reset, hook), figures(hook), stop.step))
    assert runs[0] == runs[1]
    assert runs[0][2] == steps and sum(runs[0][1][1][1]["steps"]) + runs[0][1][1][1]["count"] \
        == steps


def test_a_stop_condition_with_a_progress_bar_counts_and_redraws_as_its_check(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    stop, general = rl.StopAfterNSteps(250, progress=True), GeneralStop(250, progress=True)
    for condition in (stop, general):
        rl.run(rl.RandomPolicy(rng=0), rl.GymEnv("CartPole-v1", seed=0), condition)
    assert stop.step == general.step == 250
    assert stop._bar.n == general._bar.n == 250 and stop._next_redraw == general._next_redraw


def test_a_reset_condition_subclass_is_asked_before_every_step():
    reset = CountingReset()
    hook = rl.run(rl.RandomPolicy(rng=0), rl.GymEnv("CartPole-v1", seed=0),
                  rl.StopAfterNSteps(100, progress=False), rl.StepsPerEpisode(), reset)
    # once before every step, and once more at the end of every episode but the last (the
    # stop ends that one)
    assert reset.calls == 100 + len(hook.steps) - 1


def vector_env(mode, n=3, limit=9):
    # A short time limit: episodes end by truncation as well as by termination.
    return rl.GymVectorEnv(gymnasium.vector.SyncVectorEnv(
        [lambda: gymnasium.make("CartPole-v1", max_episode_steps=limit)] * n,
        autoreset_mode=mode), seed=0)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("steps", [1, 3, 61, 300])
def test_a_vector_env_runs_as_with_the_general_checks(mode, steps):
    # inline: no reset check (the terminations are an array) and num_envs steps counted per
    # act; general: both checks called; the same calls and the same stored rows either way
    runs = []
    for stop, reset in ((rl.StopAfterNSteps(steps, progress=False), rl.ResetIfEnvTerminated()),
                        (GeneralStop(steps, progress=False), GeneralReset())):
        hook = rl.TotalRewardPerEpisode() + rl.StepsPerEpisode()
        runs.append((agent_run(vector_env(mode), stop, reset, hook), repr(figures(hook)),
                     stop.step))
    assert runs[0] == runs[1]
    assert runs[0][2] == -(-steps // 3) * 3  # whole acts of 3 env-steps, the last one over
    assert runs[0][0][3] > 0  # rows stored, lanes wrapped: 16 rows, many more acts
    if steps == 300:
        assert runs[0][0][3] > 16


def test_a_vector_env_counts_and_redraws_as_the_stop_conditions_check(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    stop, general = rl.StopAfterNSteps(250, progress=True), GeneralStop(250, progress=True)
    for condition in (stop, general):
        rl.run(rl.RandomPolicy(rng=0), vector_env(AutoresetMode.NEXT_STEP, n=4), condition)
    assert stop.step == general.step == 252  # 63 acts of 4 env-steps
    assert stop._bar.n == general._bar.n == 250 and stop._next_redraw == general._next_redraw


def test_replaced_checks_of_the_default_conditions_are_called_on_a_vector_env():
    seen = []
    reset, stop = rl.ResetIfEnvTerminated(), rl.StopAfterNSteps(30, progress=False)
    reset_check, stop_check = reset.check, stop.check
    reset.check = lambda policy, env: seen.append("reset") or reset_check(policy, env)
    stop.check = lambda policy, env: seen.append("stop") or stop_check(policy, env)
    rl.run(rl.RandomPolicy(rng=0), vector_env(AutoresetMode.NEXT_STEP), stop, None, reset)
    assert seen == ["reset", "stop"] * 10  # 10 acts of 3 env-steps, one episode


def no_grouping(monkeypatch):
    monkeypatch.setattr(stage_calls, "_episode_hooks_together", lambda calls, *args: calls)


ENVS = {
    "cartpole": lambda: rl.GymEnv("CartPole-v1", seed=2),
    "numpy flags": NumpyFlags,
    "bool flags": lambda: NumpyFlags(bool),
    "game": lambda: rl.GymEnv(Game()),
    "vector": lambda: rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0),
}


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("steps", [1, 17, 200])
def test_episode_hooks_stepped_together_record_what_each_records_alone(env, steps, monkeypatch):
    def run():
        hook = (rl.TotalRewardPerEpisode() + rl.StepsPerEpisode() + rl.RewardsPerEpisode()
                + rl.StepsPerEpisode() + rl.DoEveryNEpisodes(lambda *a: None))
        rl.run(rl.RandomPolicy(rng=0), ENVS[env](), rl.StopAfterNSteps(steps, progress=False), hook)
        return [(type(h).__name__, repr({k: v for k, v in dataclasses.asdict(h).items()
                                         if k != "f"}),
                 repr(h.tracker.__getstate__())) for h in hook]

    calls = stage_calls.StageCalls(rl.RandomPolicy(), rl.RandomWalk1D(),
                                   rl.TotalRewardPerEpisode() + rl.StepsPerEpisode()
                                   + rl.RewardsPerEpisode() + rl.StepsPerEpisode()
                                   + rl.DoEveryNEpisodes(lambda *a: None))
    # two runs of default methods around RewardsPerEpisode's own: two calls and one
    members = calls.hook.hooks
    first, own, last = calls.post_act
    assert first.__globals__["hooks"] == members[:2] and last.__globals__["hooks"] == members[3:]
    assert own.func.__self__ is members[2]
    # RewardsPerEpisode and DoEveryNEpisodes have a pre_episode of their own, and no member
    # has a post_episode of its own
    assert [(c.func.__name__, c.args[0]) for c in calls.pre_episode] == [
        ("pre_episode_together", members[:2])] + [
        ("pre_episode", calls.policy)] * 3
    assert [(c.func.__name__, c.args[0]) for c in calls.post_episode] == [
        ("post_episode_together", members)]
    together = run()
    no_grouping(monkeypatch)
    assert run() == together


def test_describe_lists_grouped_hooks_one_by_one():
    hook = rl.TotalRewardPerEpisode() + rl.StepsPerEpisode()
    lines = rl.Experiment(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), None, hook).describe()
    assert "TotalRewardPerEpisode.post_act(RandomPolicy, RandomWalk1D)" in lines
    assert "StepsPerEpisode.post_act(RandomPolicy, RandomWalk1D)" in lines


@settings(max_examples=200, deadline=None)
@given(capacity=st.integers(1, 9), ops=st.lists(st.integers(0, 12), min_size=1, max_size=40))
def test_fill_lens_by_slices_writes_what_the_indexed_fill_writes(capacity, ops):
    meta = EpisodeMeta(capacity)
    for op in ops:  # append op entries, then fill the last min(op, n) with op
        for step in range(op):
            meta.append(step + 1, 1 if step else 0)
        k = min(op, meta.n)
        expected = meta.lens.copy()
        expected[meta.phys(np.arange(meta.n - k, meta.n))] = op + 100
        meta.fill_lens(k, op + 100)
        assert meta.lens.tolist() == expected.tolist()


def test_a_replaced_check_of_a_default_condition_is_called():
    seen = []
    reset, stop = rl.ResetIfEnvTerminated(), rl.StopAfterNSteps(30, progress=False)
    reset_check, stop_check = reset.check, stop.check
    reset.check = lambda policy, env: seen.append("reset") or reset_check(policy, env)
    stop.check = lambda policy, env: seen.append("stop") or stop_check(policy, env)
    rl.run(rl.RandomPolicy(rng=0), rl.GymEnv("CartPole-v1", seed=0), stop, None, reset)
    assert seen.count("stop") == 30 and seen.count("reset") >= 30


@pytest.mark.parametrize("make_env", [lambda: rl.GymEnv("CartPole-v1", seed=1),
                                      lambda: rl.GymEnv("CartPole-v1", seed=1,
                                                        max_episode_steps=6),
                                      lambda: NumpyFlags(bool), lambda: rl.RandomWalk1D()])
@pytest.mark.parametrize("steps", [1, 40, 333])
def test_the_agents_generated_pushes_store_what_the_general_push_stores(make_env, steps,
                                                                          monkeypatch):
    # generated: the step push and the first-state push (trajectories._step_push), the
    # Agent's PostAct push specialised for a single env's plain steps; general: the trajectory's
    # dict push for both, every rule checked at every push, the Agent's general method
    def run():
        hook = rl.TotalRewardPerEpisode() + rl.StepsPerEpisode()
        return agent_run(make_env(), rl.StopAfterNSteps(steps, progress=False),
                         rl.ResetIfEnvTerminated(), hook), figures(hook)

    generated = run()
    monkeypatch.setattr("trajectories.trajectory.compile_step_push", lambda *args: None)
    monkeypatch.setattr(stage_calls, "_specialised", lambda method, policy, env: method)
    assert run() == generated
    assert generated[0][3] == steps  # every step inserted once


def test_the_agent_keeps_the_generated_pushes_after_its_first_episode():
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(rl.CircularArraySARTSTraces(
        capacity=100, state=(np.float32, (4,)))))
    rl.run(agent, rl.GymEnv("CartPole-v1", seed=0), rl.StopAfterNSteps(60, progress=False))
    # the generated functions (trajectories._step_push), not the dict fallbacks ("<lambda>")
    assert agent._push_first_state.__name__ == agent._push_values.__name__ == "push"
    calls = stage_calls.StageCalls(agent, rl.GymEnv("CartPole-v1"), rl.EmptyHook())
    assert calls.push_with_action[int].__name__ == "_push_plain_step"
    vector = stage_calls.StageCalls(agent, rl.GymVectorEnv("CartPole-v1", num_envs=2),
                                    rl.EmptyHook())
    assert vector.push_with_action[np.ndarray].__name__ == "_push_plain_vector_step"
    same_step = stage_calls.StageCalls(agent, rl.GymVectorEnv(
        "CartPole-v1", num_envs=2, vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}),
        rl.EmptyHook())
    assert same_step.push_with_action[np.ndarray].__name__ == "_push_agent_post_act"


class Recording(rl.InsertSampleRatioController):
    """Keeps what every ``on_insert`` was given."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def on_insert(self, n, data=None):
        super().on_insert(n, data)
        self.seen.append((n, {k: np.asarray(data[k]).tolist() for k in data}))


@pytest.mark.parametrize("controller", [rl.InsertSampleRatioController, Recording])
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("steps", [3, 40, 600])
def test_the_agents_vector_push_stores_what_the_general_push_stores(mode, steps, controller,
                                                                     monkeypatch):
    # the Agent's PostAct push specialised for a vector env's plain steps (NEXT_STEP) and the
    # generated ring push, against the Agent's general method and the trajectory's dict push:
    # terminations, 20-step truncations, each lane's ring of 6 rows wrapped many times
    def run():
        env = vector_env(mode, limit=20)
        traces = rl.CircularArraySARTSTraces(capacity=16, env=env)
        agent = rl.Agent(rl.RandomPolicy(rng=3), rl.Trajectory(traces, controller=controller()))
        hook = rl.TotalRewardPerEpisode() + rl.StepsPerEpisode()
        rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False), hook)
        t, c = agent.trajectory, agent.trajectory.container
        return ([t[k].tolist() for k in ("state", "next_state", "action", "reward", "terminal")],
                c.lane_lengths(), c.episodes_lengths.tolist(), c.sampleable_inds.tolist(),
                c.step_numbers.tolist(), repr(vars(t.controller)), repr(figures(hook)),
                hook[1].steps)

    fast = run()
    with monkeypatch.context() as patch:
        patch.setattr(stage_calls, "_specialised", lambda method, policy, env: method)
        assert run() == fast
        patch.setattr("trajectories.trajectory.ring_step_push", lambda *args: None)
        assert run() == fast
    if steps == 600:  # 200 acts: every lane's ring full; truncations and terminations
        assert fast[1] == [6, 6, 6] and 20 in fast[-1] and min(fast[-1]) < 20


@dataclasses.dataclass
class OddFields(rl.StepsPerEpisode):
    """Mirrored fields the generated post_act cannot write out (a name that is no identifier),
    and one set on the instance during the run."""

    running_fields = (("count", "running_length"), ("not a name", "running_reward"))


@pytest.mark.parametrize("env", ["cartpole", "bool flags", "game"])
def test_hooks_the_generated_post_act_cannot_write_out_record_what_they_record_alone(
        env, monkeypatch):
    def run():
        odd, plain = OddFields(), rl.TotalRewardPerEpisode()
        stop = rl.StopAfterNSteps(50, progress=False)

        def swap(steps):  # mid-run, a field list of the instance's own
            if steps == 20:
                plain.running_fields = (("reward", "running_length"),)
        hook = odd + plain + rl.StepsPerEpisode() + rl.DoEveryNSteps(
            lambda policy, env, *rest: swap(stop.step))
        rl.run(rl.RandomPolicy(rng=0), ENVS[env](), stop, hook)
        assert "running_fields" in vars(plain)  # the swap happened
        return [(dataclasses.asdict(h) if dataclasses.is_dataclass(h) else None,
                 getattr(h, "not a name", None)) for h in hook.hooks[:3]]

    calls = stage_calls.StageCalls(rl.RandomPolicy(), rl.RandomWalk1D(),
                                   OddFields() + rl.StepsPerEpisode())
    assert calls.post_act[0].__name__ == "<lambda>"  # the general post_act_together
    together = run()
    no_grouping(monkeypatch)
    assert run() == together


class EndsAtReset(NumpyFlags):
    """A reset that leaves a flag set (``flag`` its type): the loop must refuse it."""

    def __init__(self, flag, which):
        super().__init__(flag)
        self.which = which

    def reset(self):
        super().reset()
        setattr(self, self.which, self.flag(True))


@pytest.mark.parametrize("which", ["is_terminated", "is_truncated"])
@pytest.mark.parametrize("flag", [bool, np.bool_, int])
def test_an_episode_finished_right_after_reset_is_refused_whatever_the_flags_type(flag, which):
    with pytest.raises(RuntimeError, match="already terminated or truncated right after reset"):
        rl.run(rl.RandomPolicy(rng=0), EndsAtReset(flag, which),
               rl.StopAfterNSteps(5, progress=False))


@pytest.mark.parametrize("flag", [np.bool_, int])
def test_flags_false_of_another_type_after_reset_are_not_refused(flag):
    hook = rl.run(rl.RandomPolicy(rng=0), NumpyFlags(flag), rl.StopAfterNSteps(5, progress=False),
                  rl.StepsPerEpisode())
    assert sum(hook.steps) + hook.count == 5
