"""Guards on the generic functions: faithful signatures everywhere, cached calls, and the
precedence rules that let a user's method beat stagerl's defaults.

One unfaithful type in any method turns plum's per-type cache off for every call of that
function (a cached call costs ~0.4 µs, an uncached one 4-18 µs), so every module that registers
methods is imported here and every method of push / plan / optimise is checked.
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import plum
import pytest

import stagerl as rl

GENERIC_FUNCTIONS = {"push": rl.push, "plan": rl.plan, "optimise": rl.optimise,
                     "compute_actions": rl.compute_actions.function}
OPTIONAL_DEPENDENCIES = {"ray", "tensorboard", "matplotlib", "safetensors"}


def _import_every_stagerl_module():
    for module in pkgutil.walk_packages(rl.__path__, prefix="stagerl."):
        if module.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(module.name)
        except ImportError as error:  # an optional extra that is not installed
            if (error.name or "").split(".")[0] not in OPTIONAL_DEPENDENCIES:
                raise


_import_every_stagerl_module()


def _methods():
    return [
        pytest.param(function, method, id=f"{name}:{method.implementation.__qualname__}")
        for name, function in GENERIC_FUNCTIONS.items()
        for method in function.methods
    ]


@pytest.mark.parametrize("function, method", _methods())
def test_every_method_signature_is_faithful(function, method):
    signature = method.signature
    unfaithful = [t for t in signature.types if not plum.is_faithful(t)]
    if signature.has_varargs:
        unfaithful += [] if plum.is_faithful(signature.varargs) else [signature.varargs]
    assert not unfaithful, (
        f"{method.implementation.__module__}.{method.implementation.__qualname__} annotates the "
        f"unfaithful type(s) {unfaithful}; this turns off plum's cache for every "
        f"{function.__name__} call. Use plain classes, ABCs or unions of them."
    )
    assert signature.is_faithful


@pytest.mark.parametrize("name, function", list(GENERIC_FUNCTIONS.items()))
def test_every_generic_function_caches_by_argument_types(name, function):
    assert function.methods  # reading them resolves what is pending, as a first call would
    assert function._resolver.is_faithful


class CachedPolicy(rl.Policy):
    pass


@rl.plan.dispatch
def _plan_cached(policy: CachedPolicy, env):
    return 0


class CachedHook(rl.Hook):
    pass


class CachedEnv(rl.Env):
    pass


@pytest.mark.parametrize(
    "function, args",
    [
        (rl.push, (CachedPolicy(), rl.PreActStage(), CachedEnv())),
        (rl.push, (CachedPolicy(), rl.PostActStage(), CachedEnv(), 1)),
        (rl.push, (CachedHook(), rl.PostEpisodeStage(), CachedPolicy(), CachedEnv())),
        (rl.push, (rl.StepsPerEpisode(), rl.PostActStage(), CachedPolicy(), CachedEnv())),
        (rl.plan, (CachedPolicy(), CachedEnv())),
        (rl.optimise, (CachedPolicy(), rl.PostActStage())),
        (rl.optimise, (CachedPolicy(), rl.PostActStage(), object())),
    ],
)
def test_a_second_call_hits_the_cache(function, args):
    types = tuple(map(type, args))
    function(*args)
    entry = function._cache[types]
    function(*args)
    assert function._cache[types] is entry


# ---- user methods against stagerl's defaults ------------------------------------------------


class MyPolicy(rl.Policy):
    pass


@rl.plan.dispatch
def _plan_my_policy(policy: MyPolicy, env):
    return 1


class ListTrajectory:
    """The least an Agent needs: a trajectory with push."""

    def __init__(self):
        self.pushed = []

    def push(self, **step):
        self.pushed.append(step)


@rl.push.dispatch
def _push_my_agent(agent: rl.Agent[MyPolicy, object], stage: rl.Stage, env: object):
    agent.trajectory.pushed.append(("user", type(stage).__name__))


class Observed(rl.Env):
    state, reward, is_terminated = 3, 0.0, False


def test_a_user_method_on_agent_of_my_policy_beats_the_agent_default_at_pre_episode():
    agent = rl.Agent(MyPolicy(), ListTrajectory())
    rl.push(agent, rl.PreEpisodeStage(), Observed())
    # The default would have pushed {"state": 3}: equally specific, the user's method wins.
    assert agent.trajectory.pushed == [("user", "PreEpisodeStage")]


def test_the_agent_default_still_serves_other_policies():
    agent = rl.Agent(rl.RandomPolicy(rng=0), ListTrajectory())
    rl.push(agent, rl.PreEpisodeStage(), Observed())
    assert agent.trajectory.pushed == [{"state": 3}]


class UnannotatedEnvPolicy(rl.Policy):
    pass


@rl.plan.dispatch
def _plan_unannotated_env(policy: UnannotatedEnvPolicy, env):
    return "left"


class ObjectEnvPolicy(rl.Policy):
    pass


@rl.plan.dispatch
def _plan_object_env(policy: ObjectEnvPolicy, env: object):
    return "right"


@rl.push.dispatch
def _push_unannotated_env(policy: UnannotatedEnvPolicy, stage: rl.PostActStage, env, action):
    policy.seen = action


def test_user_methods_with_unannotated_or_object_envs_are_not_ambiguous_with_fallbacks():
    assert rl.plan(UnannotatedEnvPolicy(), Observed()) == "left"
    assert rl.plan(ObjectEnvPolicy(), Observed()) == "right"
    assert rl.plan(ObjectEnvPolicy(), None) == "right"
    policy = UnannotatedEnvPolicy()
    rl.push(policy, rl.PostActStage(), Observed(), 7)
    assert policy.seen == 7


def test_a_missing_plan_names_the_method_to_define():
    planless = type("Planless", (rl.Policy,), {})()
    with pytest.raises(plum.NotFoundLookupError, match="@stagerl.plan.dispatch"):
        rl.plan(planless, Observed())


# ---- every method stagerl registers yields to an equally specific user method ---------------


@pytest.mark.parametrize("function, method", _methods())
def test_every_method_stagerl_registers_has_precedence_minus_one(function, method):
    module = method.implementation.__module__ or ""
    if not module.startswith("stagerl."):
        pytest.skip("a test's or a user's method")
    assert method.signature.precedence == -1, (
        f"{module}.{method.implementation.__qualname__} has precedence "
        f"{method.signature.precedence}; register it with precedence=-1 so that a user's equally "
        "specific method wins"
    )


class MyTotals(rl.TotalRewardPerEpisode):
    pass


@rl.push.dispatch
def _push_my_totals(hook: MyTotals, stage: rl.Stage, policy, env):
    hook.rewards.append(("mine", type(stage).__name__))


def test_a_subclass_of_a_built_in_hook_with_an_equally_specific_method_wins():
    hook = MyTotals()
    rl.push(hook, rl.PostEpisodeStage(), None, Observed())
    assert hook.rewards == [("mine", "PostEpisodeStage")]


class MyQ(rl.QBasedPolicy):
    pass


@rl.plan.dispatch
def _plan_my_q(policy: MyQ, env):
    return "mine"


@rl.optimise.dispatch
def _optimise_my_q(policy: MyQ, stage: rl.Stage, trajectory):
    policy.learned = type(stage).__name__


def test_a_subclass_of_q_based_policy_with_equally_specific_methods_wins():
    policy = MyQ(rl.TDLearner(rl.TabularQApproximator(7, 2)), rl.GreedyExplorer())
    assert rl.plan(policy, Observed()) == "mine"
    rl.optimise(policy, rl.PostActStage(), None)
    assert policy.learned == "PostActStage"


class Recorder(rl.Policy):
    pass


@rl.plan.dispatch(precedence=-1)
def _plan_recorder(policy: Recorder, env):
    return np.zeros(env.num_envs, dtype=np.int64) if isinstance(env, rl.VectorEnv) else 0


@rl.push.dispatch(precedence=-1)  # as stagerl's own algorithms register theirs
def _push_recorder_step(agent: rl.Agent[Recorder, object], stage: rl.PostActStage, env: object,
                        action: object):
    rl.record_step(agent, env, action, tag=np.full(np.shape(env.reward), 7, dtype=np.int64))


def test_an_agent_specialisation_at_the_defaults_precedence_is_not_ambiguous_on_vector_envs():
    traces = rl.CircularArraySARTSTraces(50, state=(np.float32, (4,))) + rl.Traces(
        tag=rl.CircularArrayBuffer(50, dtype=np.int64))
    agent = rl.Agent(Recorder(), rl.Trajectory(traces))
    rl.run(agent, rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0),
           rl.StopAfterNSteps(10, progress=False))
    assert agent.trajectory.container["tag"].tolist() == [7] * 10
