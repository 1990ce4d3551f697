"""Hyper-parameters from strings (the command line) and their listing."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import stagerl as rl
from stagerl.experiments import configure
from stagerl.experiments.registry import (
    NamedExperiment,
    describe,
    hyper_parameters,
    names,
    parse_overrides,
)


@dataclass
class DemoConfig:
    """Every kind of field a named experiment may have."""

    steps: int = 100  # env steps of a run
    env_id: str = "CartPole-v1"
    #: the optimiser's step size,
    #: before any schedule
    lr: float = 1e-3
    double: bool = False
    net_arch: tuple[int, ...] = (64, 64)
    target_return: float | None = None


DEMO = NamedExperiment(DemoConfig, lambda config, seed: rl.RandomWalk1D(),
                       lambda config, env, seed, device: rl.RandomPolicy(rng=seed))


@pytest.mark.parametrize("pair, expected", [
    ("steps=5000", {"steps": 5000}),
    ("steps=50_000", {"steps": 50_000}),
    ("steps=5e4", {"steps": 50_000}),
    ("lr=0.01", {"lr": 0.01}),
    ("lr=3", {"lr": 3.0}),
    ("lr=-1e-4", {"lr": -1e-4}),
    ("double=true", {"double": True}),
    ("double=False", {"double": False}),
    ("double=1", {"double": True}),
    ("double=0", {"double": False}),
    ("env_id=Acrobot-v1", {"env_id": "Acrobot-v1"}),
    ("net_arch=128,128", {"net_arch": (128, 128)}),
    ("net_arch=[32, 16]", {"net_arch": (32, 16)}),
    ("net_arch=(8,)", {"net_arch": (8,)}),
    ("net_arch=32", {"net_arch": (32,)}),
    ("net_arch=[]", {"net_arch": ()}),
    ("target_return=none", {"target_return": None}),
    ("target_return=475", {"target_return": 475.0}),
])
def test_values_are_parsed_by_the_field_type(pair, expected):
    parsed = parse_overrides(DEMO, [pair])
    assert parsed == expected
    assert [type(v) for v in parsed.values()] == [type(v) for v in expected.values()]
    configure(DEMO, **parsed)  # and pass the typed check


@pytest.mark.parametrize("pair, error, match", [
    ("steps=1.5", TypeError, "hyper-parameter steps expects int, got '1.5'"),
    ("lr=fast", TypeError, "hyper-parameter lr expects float, got 'fast'"),
    ("double=maybe", TypeError, "hyper-parameter double expects bool, got 'maybe'"),
    ("net_arch=64,x", TypeError, r"net_arch expects tuple\[int, \.\.\.\], got '64,x'"),
    ("target_return=high", TypeError, r"target_return expects float \| None"),
    ("lrr=0.1", ValueError, r"DemoConfig has no hyper-parameter 'lrr' \(did you mean lr\?\); "
                            "the hyper-parameters are: steps, env_id, lr, double, net_arch, "
                            "target_return"),
    ("lr", ValueError, "given as name=value, got 'lr'"),
    ("=3", ValueError, "given as name=value"),
])
def test_bad_values_name_the_type_and_unknown_names_list_the_valid_ones(pair, error, match):
    with pytest.raises(error, match=match):
        parse_overrides(DEMO, [pair])


def test_a_name_given_twice_is_refused():
    with pytest.raises(ValueError, match="lr is given twice"):
        parse_overrides(DEMO, ["lr=0.1", "lr=0.2"])


def test_by_name_the_errors_name_the_experiment():
    with pytest.raises(ValueError, match="tabular-q-random-walk has no hyper-parameter 'alpha'"):
        parse_overrides("tabular-q-random-walk", ["alpha=0.1"])
    with pytest.raises(ValueError, match="did you mean tabular-q-random-walk"):
        parse_overrides("tabular-q-randomwalk", [])


def test_hyper_parameters_list_type_default_and_comment():
    assert hyper_parameters(DEMO) == [
        ("steps", "int", 100, "env steps of a run"),
        ("env_id", "str", "CartPole-v1", ""),
        ("lr", "float", 1e-3, "the optimiser's step size, before any schedule"),
        ("double", "bool", False, ""),
        ("net_arch", "tuple[int, ...]", (64, 64), ""),
        ("target_return", "float | None", None, ""),
    ]


def test_every_named_experiment_has_a_summary_and_listable_hyper_parameters():
    for name in names():
        assert describe(name)
        assert "steps" in [row[0] for row in hyper_parameters(name)]
