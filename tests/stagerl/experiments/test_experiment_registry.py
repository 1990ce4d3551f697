"""The named experiments: found in stagerl/experiments/zoo/, their settings (each the run's
settings plus its algorithm's config), hyper-parameters from strings (the command line), their
listing, and their JSON form (config.json and checkpoints)."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

import stagerl as rl
import stagerl.experiments as experiments
from stagerl.experiments import configure
from stagerl.experiments.registry import (
    NamedExperiment,
    config_to_json,
    describe,
    get_experiment,
    hyper_parameters,
    names,
    parse_overrides,
    settable_fields,
)
from stagerl.experiments.settings import GymRunSettings, RunSettings

ZOO = Path(experiments.__file__).parent / "zoo"


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
    assert dataclasses.asdict(configure(DEMO, **parsed)).items() >= parsed.items()


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


# ---- the zoo ---------------------------------------------------------------------------------


def test_every_module_of_the_zoo_is_a_named_experiment():
    modules = sorted(p.stem.replace("_", "-") for p in ZOO.glob("*.py")
                     if not p.stem.startswith("_"))
    assert names() == modules and len(modules) == 27
    for name in names():
        experiment = get_experiment(name)
        assert issubclass(experiment.config, RunSettings), name
        assert type(experiment.config()).settings_name == name  # messages name the experiment


def test_each_experiment_is_its_algorithms_config_with_the_defaults_it_changes():
    from stagerl.algorithms import (
        A2CConfig,
        A3CConfig,
        DQNConfig,
        DRQNConfig,
        ERWRConfig,
        PPOConfig,
        REPSConfig,
        SACConfig,
        TD3Config,
        TRPOConfig,
        VPGConfig,
    )

    algorithm_of = {"dqn": DQNConfig, "rainbow": DQNConfig, "ppo": PPOConfig, "a2c": A2CConfig,
                    "vpg": VPGConfig, "trpo": TRPOConfig, "sac": SACConfig, "td3": TD3Config,
                    "ddpg": TD3Config, "drqn": DRQNConfig, "erwr": ERWRConfig,
                    "reps": REPSConfig, "a3c": A3CConfig}
    for name in names():
        config_type = get_experiment(name).config
        algorithm = algorithm_of.get(name.split("-")[0])
        if algorithm is None:  # the tabular experiment builds its own policy
            continue
        assert issubclass(config_type, RunSettings) and issubclass(config_type, algorithm)
        if "env_id" in settable_fields(config_type):  # a gymnasium env (else a game)
            assert issubclass(config_type, GymRunSettings), name
        # every setting of the algorithm can be set for the experiment, and its schedules
        # span the run
        assert set(settable_fields(algorithm)) - {"total_steps"} <= set(
            settable_fields(config_type)), name
        config = configure(name, steps=1234)
        assert config.total_steps == 1234 and "total_steps" not in settable_fields(config_type)
    rainbow = get_experiment("rainbow-cartpole").config
    zoo, dqn = get_experiment("dqn-cartpole-zoo").config, get_experiment("dqn-cartpole").config
    assert issubclass(rainbow, zoo) and rainbow().buffer_size == zoo().buffer_size
    assert issubclass(dqn, zoo) and {  # the default experiment changes four of RL-Zoo's settings
        name for name in settable_fields(dqn) if getattr(dqn(), name) != getattr(zoo(), name)
    } == {"learning_rate_schedule", "double", "n_step", "gradient_steps"}


def test_run_help_lists_every_setting_of_every_experiment(capsys):
    from stagerl.cli import main

    for name in names():
        assert main(["run", name, "--help"]) == 0
        out = capsys.readouterr().out
        listed = [line.split()[0] for line in out.split("hyper-parameters (name=value):")[1]
                  .splitlines() if line.startswith("  ")]
        assert listed == [row[0] for row in hyper_parameters(name)], name
        assert set(listed) == set(settable_fields(get_experiment(name).config)), name
        assert listed[0] == "steps"
    rows = {row[0]: row for row in hyper_parameters("sac-pendulum")}
    assert rows["n_critics"][2:] == (2, "critics whose minimum bootstraps the target (2: "
                                        "clipped double Q).")


@pytest.mark.parametrize("name", names())
def test_the_settings_round_trip_through_standard_json_with_infinities(name):
    config = configure(name)
    hints = {row[0]: row[1] for row in hyper_parameters(name)}
    infinite = {k: math.inf for k in ("max_grad_norm", "clip_range", "clip_range_vf",
                                      "target_kl") if k in hints and name != "trpo-cartpole"}
    config = configure(name, **infinite)
    text = json.dumps(config_to_json(config), allow_nan=False)  # no bare Infinity in the file
    assert configure(name, **json.loads(text)) == config
    for key in infinite:
        assert json.loads(text)[key] == {"float": "inf"}


def test_the_former_names_work_for_one_release_and_warn():
    with pytest.warns(DeprecationWarning, match="use stagerl.experiments.get_experiment"):
        assert experiments.load("dqn-cartpole") is get_experiment("dqn-cartpole")
    with pytest.warns(DeprecationWarning, match="use get_experiment"):
        from stagerl.experiments.registry import load
    assert load is get_experiment
    with pytest.warns(DeprecationWarning, match="use stagerl.experiments.train"):
        summary = experiments.run("tabular-q-random-walk", steps=50, progress=False)
    assert summary["env_steps"] == 50



def test_the_run_settings_are_those_listed_first():
    assert [f.name for f in dataclasses.fields(GymRunSettings) if f.init] == [
        "steps", "torch_threads", "env_id", "num_envs"]
    assert settable_fields(get_experiment("ppo-cartpole").config)[:4] == [
        "steps", "torch_threads", "env_id", "num_envs"]
