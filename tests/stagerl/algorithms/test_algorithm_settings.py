"""The algorithms' settings: one checks module, every config checked when it is built (NaN,
infinities, zero and negatives refused unless a field says what they mean), the single-env view
every env answers, and the shape of the algorithms package."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import typing
from pathlib import Path

import numpy as np
import pytest

import stagerl as rl
from stagerl.algorithms import (
    A2CConfig,
    DQNConfig,
    PPOConfig,
    SACConfig,
    TD3Config,
    TRPOConfig,
    VPGConfig,
)
from stagerl.algorithms._checks import (
    check_int,
    check_number,
    check_numbers,
    single_spaces,
)

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = [DQNConfig, PPOConfig, A2CConfig, VPGConfig, TRPOConfig, SACConfig, TD3Config]
#: The fields whose documentation gives +inf a meaning (and accepts it).
INF_MEANS = {"max_grad_norm", "clip_range", "clip_range_vf", "target_kl", "kl_target"}


def _fields_of(config_type, kind):
    """The fields annotated ``kind`` or ``kind | None``."""
    hints = typing.get_type_hints(config_type)
    return [f.name for f in dataclasses.fields(config_type) if f.init and (
        hints[f.name] is kind or (typing.get_origin(hints[f.name]) is not tuple
                                  and kind in typing.get_args(hints[f.name])))]


@pytest.mark.parametrize("config_type", CONFIGS, ids=lambda c: c.__name__)
def test_every_float_setting_refuses_nan_and_infinities_unless_inf_has_a_meaning(config_type):
    fields = _fields_of(config_type, float)
    assert "learning_rate" in fields and "gamma" in fields
    for name in fields:
        for bad in (math.nan, -math.inf):
            with pytest.raises(ValueError, match=f"{config_type.__name__}: {name} must be"):
                config_type(**{name: bad})
        if name in INF_MEANS and not (config_type is TRPOConfig and name == "target_kl"):
            assert getattr(config_type(**{name: math.inf}), name) == math.inf
        else:
            with pytest.raises(ValueError, match=f"{name} must be"):
                config_type(**{name: math.inf})


@pytest.mark.parametrize("config_type", CONFIGS, ids=lambda c: c.__name__)
def test_every_count_is_a_positive_int(config_type):
    counts = _fields_of(config_type, int)
    assert counts
    may_be_zero = {"learning_starts"}
    for name in counts:
        with pytest.raises(TypeError, match=f"{name} expects int"):
            config_type(**{name: 2.5})
        with pytest.raises(TypeError, match=f"{name} expects int"):
            config_type(**{name: True})
        with pytest.raises(ValueError, match=f"{name} must be an int >= "):
            config_type(**{name: -2})
        if name not in may_be_zero:
            with pytest.raises(ValueError, match=f"{name} must be an int >= "):
                config_type(**{name: 0})


def test_the_one_minus_one_that_has_a_meaning():
    assert DQNConfig(gradient_steps=-1).steps_per_burst == 4  # as many as train_freq
    with pytest.raises(ValueError, match="gradient_steps must be an int >= 1, or -1"):
        DQNConfig(gradient_steps=-2)


def test_values_are_made_the_type_their_field_says():
    config = PPOConfig(learning_rate=1, net_arch=[32, np.int64(16)], n_steps=np.int64(8))
    assert type(config.learning_rate) is float and config.net_arch == (32, 16)
    assert type(config.n_steps) is int and type(config.net_arch[1]) is int


@pytest.mark.parametrize("config_type", CONFIGS, ids=lambda c: c.__name__)
def test_the_ranges_are_named_in_the_message(config_type):
    with pytest.raises(ValueError, match=r"gamma must be in \[0, 1\], got gamma=1.5"):
        config_type(gamma=1.5)
    with pytest.raises(ValueError, match=r"learning_rate must be a finite number > 0, got "
                                         r"learning_rate=0.0"):
        config_type(learning_rate=0.0)


def test_a_derived_config_checks_its_bases_fields_once_and_its_own():
    calls = []

    @dataclasses.dataclass
    class Mine(PPOConfig):
        extra: float = 1.0

        def __post_init__(self):
            super().__post_init__()
            calls.append(self.extra)
            check_numbers(self, "extra", above=0, inf="unlimited")

    assert Mine(extra=math.inf).extra == math.inf and calls == [math.inf]
    with pytest.raises(ValueError, match=r"Mine: extra must be > 0 \(inf: unlimited\)"):
        Mine(extra=0.0)
    with pytest.raises(ValueError, match="Mine: gamma must be in"):
        Mine(gamma=2.0)


def test_the_checks_read_as_sentences():
    assert check_int("make_x", "seed", 3, low=0) == 3
    with pytest.raises(ValueError, match="make_x: seed must be an int >= 0, got seed=-1"):
        check_int("make_x", "seed", -1, low=0)
    with pytest.raises(TypeError, match="seed must be an int, got seed='1'"):
        check_int("make_x", "seed", "1")
    assert check_number("C", "x", 0.5, above=0, below=1) == 0.5
    with pytest.raises(ValueError, match=r"C: x must be in \(0, 1\), got x=1.0"):
        check_number("C", "x", 1.0, above=0, below=1)
    with pytest.raises(ValueError, match="C: x must be a finite number, got x=inf"):
        check_number("C", "x", math.inf)
    with pytest.raises(ValueError, match=r"C: x must be >= 0 \(inf: unbounded\), got x=nan"):
        check_number("C", "x", math.nan, at_least=0, inf="unbounded")
    assert check_number("C", "x", math.inf, at_least=0, inf="unbounded") == math.inf


# ---- the single-env view -----------------------------------------------------------------


def test_every_env_answers_the_single_env_view():
    walk = rl.RandomWalk1D()
    assert (walk.num_envs, walk.single_state_space, walk.single_action_space) == (
        1, walk.state_space, walk.action_space)
    cartpole = rl.GymEnv("CartPole-v1")
    assert single_spaces(cartpole, "me") == (cartpole.state_space, cartpole.action_space, 1)
    vector = rl.GymVectorEnv("CartPole-v1", num_envs=3)
    state_space, action_space, n = single_spaces(vector, "me")
    assert (state_space.shape, action_space.n, n) == ((4,), 2, 3)


def test_an_object_that_is_not_a_stagerl_env_is_refused_naming_the_fix():
    import gymnasium

    with pytest.raises(TypeError, match="DQN needs a stagerl env .* wrap gymnasium envs in "
                                        "stagerl.GymEnv"):
        from stagerl.algorithms import make_dqn_agent

        make_dqn_agent(gymnasium.make("CartPole-v1"), DQNConfig(total_steps=10))


# ---- the package -------------------------------------------------------------------------


def test_the_public_names_stay_and_are_the_families_objects():
    import stagerl.algorithms as algorithms
    from stagerl.algorithms import dqn, off_policy, on_policy

    assert len(algorithms.__all__) == 44  # 23, recurrent PPO and DRQN, baselines, ERWR, REPS, A3C
    for name in algorithms.__all__:
        family = next(f for f in (dqn, on_policy, off_policy) if hasattr(f, name))
        assert getattr(algorithms, name) is getattr(family, name)


def test_importing_the_algorithms_package_or_its_checks_does_not_import_torch():
    code = ("import sys, stagerl.algorithms, stagerl.algorithms._checks; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for package in ("stagerl", "trajectories")
            for p in (ROOT / package).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long
