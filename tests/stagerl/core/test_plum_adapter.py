"""What stagerl asks of plum, in one place: fails with a clear message if plum changes it."""

from __future__ import annotations

import importlib.metadata

import plum
import pytest

from stagerl.core import plum_adapter

PLUM = importlib.metadata.version("plum-dispatch")
dispatch = plum.Dispatcher()


class A:
    pass


class B(A):
    pass


@dispatch
def f(x: A, y):
    return "A"


@dispatch
def f(x: B, y: int):  # noqa: F811 - a second method of the same generic function
    return "B"


def _explain(what: str) -> str:
    return (f"plum-dispatch {PLUM} changed {what}; stagerl.core.plum_adapter relies on it "
            "(update the adapter, or pin plum-dispatch to the range in pyproject.toml)")


def test_resolve_returns_the_implementation_a_call_would_run():
    implementation, _ = plum_adapter.resolve(f, (B(), 1))
    assert implementation(B(), 1) == "B", _explain("Function.resolve_method(args)")
    implementation, _ = plum_adapter.resolve(f, (B(), "not an int"))
    assert implementation(B(), "x") == "A", _explain("Function.resolve_method(args)")


def test_resolve_types_resolves_by_argument_types():
    implementation, _ = plum_adapter.resolve_types(f, (B, int))
    assert implementation(B(), 1) == "B", _explain("Function.resolve_method(Signature)")


def test_a_failed_lookup_raises_one_of_the_lookup_errors():
    with pytest.raises(plum_adapter.LOOKUP_ERRORS):
        plum_adapter.resolve(f, (object(), 1))


def test_registration_count_grows_exactly_when_a_method_is_registered():
    local = plum.Dispatcher()

    @local
    def g(x: A):
        return "A"

    before = plum_adapter.registration_count(g)
    assert before == 1, _explain("Function.methods")
    assert plum_adapter.registration_count(g) == before  # reading it registers nothing

    @local
    def g(x: B):  # noqa: F811 - a second method of the same generic function
        return "B"

    assert plum_adapter.registration_count(g) == before + 1, _explain("Function.methods")


def test_methods_expose_implementation_types_varargs_and_precedence():
    (method,) = [m for m in plum_adapter.methods(f) if m.implementation(B(), 1) == "B"]
    signature = method.signature
    assert signature.types == (B, int), _explain("Method.signature.types")
    assert not signature.has_varargs and signature.precedence == 0, _explain(
        "Method.signature.has_varargs / precedence")


def test_kept_lookups_are_those_plum_makes_on_the_values():
    # stagerl's own generic functions, looked up twice (the second time from the kept
    # lookups), against plum's own lookup on the same arguments
    import stagerl as rl

    env = rl.RandomWalk1D()
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(rl.CircularArraySARTSTraces(
        capacity=4)))
    calls = [(rl.push, (agent, rl.PreEpisodeStage(), env)),
             (rl.push, (agent, rl.PostActStage(), env, 1)),
             (rl.push, (rl.StepsPerEpisode(), rl.PostActStage(), agent, env)),
             (rl.plan, (agent, env)), (rl.plan, (rl.RandomPolicy(), env)),
             (rl.optimise, (agent, rl.PostActStage()))]
    for function, args in calls * 2:
        assert plum_adapter.resolve(function, args) == function.resolve_method(args)
        types = tuple(map(type, args))
        assert plum_adapter.resolve_types(function, types) == function.resolve_method(args)


def test_a_kept_lookup_follows_a_new_or_redefined_method():
    local = plum.Dispatcher()

    @local
    def g(x: A):
        return "A"

    assert plum_adapter.resolve(g, (B(),))[0](B()) == "A"

    @local
    def g(x: B):  # noqa: F811 - more specific: found from now on
        return "B"

    assert plum_adapter.resolve(g, (B(),))[0](B()) == "B"
    assert plum_adapter.resolve_types(g, (B,))[0](B()) == "B"

    @local
    def g(x: B):  # noqa: F811 - the same signature again (a notebook cell run twice)
        return "B again"

    assert plum_adapter.resolve(g, (B(),))[0](B()) == "B again"
    assert plum_adapter.resolve_types(g, (B,))[0](B()) == "B again"


def test_a_function_with_an_unfaithful_method_is_looked_up_on_the_values():
    from typing import Literal

    local = plum.Dispatcher()

    @local
    def h(x: int):
        return "int"

    @local
    def h(x: Literal[1]):  # noqa: F811 - an unfaithful type: the value decides
        return "one"

    assert plum_adapter.resolve(h, (1,))[0](1) == "one"
    assert plum_adapter.resolve(h, (2,))[0](2) == "int"
    assert plum_adapter.resolve(h, (1,))[0](1) == "one"
