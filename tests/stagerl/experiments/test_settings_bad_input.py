"""Every hyper-parameter of every named experiment given NaN, +inf, -inf, 0 and -1 on the command
line: one line on stderr, exit status 2 and no log directory, or, where the value is valid, a
run that writes it into config.json and resumes from its checkpoint.

Most cases run in this process through ``stagerl.cli.main`` (the path ``python -m stagerl``
takes); a handful run the real ``python -m stagerl`` in a fresh process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from stagerl.cli import main
from stagerl.experiments import names, runner
from stagerl.experiments.registry import hyper_parameters, json_value, parse_overrides

VALUES = ("nan", "inf", "-inf", "0", "-1")
#: Where +inf means something (and is accepted): never clip, never stop early.
INF_OK = {"max_grad_norm", "clip_range", "clip_range_vf", "target_kl", "kl_target"}
#: Where 0 is in the field's range.
ZERO_OK = {"learning_starts", "gamma", "gae_lambda", "exploration_fraction",
           "exploration_initial_eps", "exploration_final_eps", "beta0", "alpha", "vf_coef",
           "cg_damping", "target_policy_noise", "target_noise_clip", "action_noise",
           "torch_threads", "log_std_init", "epsilon", "decay_fraction", "target_entropy",
           "v_min", "baseline_reg_coeff", "kl_coef", "l2_reg_dual", "l2_reg_loss",
           "gradient_staleness",
           "burn_in"}  # drqn-cartpole-novel: no burn-in
#: Where -1 is in the field's range.
MINUS_ONE_OK = {"log_std_init", "target_entropy", "v_min"}


def valid(name: str, field: str, kind: str, text: str) -> bool:
    """The spec: which of the five values each field accepts."""
    if kind == "bool":
        return text == "0"  # false
    if text == "inf":
        return field in INF_OK and name != "trpo-cartpole"  # TRPO's target_kl: the step size
    if text == "0":
        if (name, field) == ("reps-cartpole", "epsilon"):  # REPS's KL bound, not exploration
            return False
        return (field in ZERO_OK or (field == "ent_coef" and kind == "float")
                or (field == "v_max" and name != "rainbow-cartpole"))  # above v_min = -10
    if text == "-1":
        return (field in MINUS_ONE_OK or (field == "gradient_steps" and name in DQN)
                or (field == "v_max" and name != "rainbow-cartpole"))
    return False


DQN = ("dqn-cartpole", "dqn-cartpole-zoo", "dqn-acrobot", "rainbow-cartpole", "dqn-atari",
       "dqn-tictactoe", "dqn-tictactoe-selfplay")


CASES = [(name, field, kind, text) for name in names()
         for field, kind, _, _ in hyper_parameters(name) for text in VALUES]
INVALID = [c for c in CASES if not valid(*c)]
VALID = [c for c in CASES if valid(*c)]


def test_the_walk_covers_every_setting_of_every_experiment():
    assert len(CASES) == 5 * sum(len(hyper_parameters(name)) for name in names())
    assert 40 < len(VALID) < len(CASES) / 5 < len(INVALID)  # mostly refusals


@pytest.fixture(scope="module")
def quick_runs():
    """One final evaluation episode and no learning-curve PNG: a value's fate depends on
    neither, and drawing is most of a tiny run's time."""
    from stagerl.logging.plotting import PlotLearningCurve

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "EVAL_EPISODES", 1)
        patch.setattr(PlotLearningCurve, "finish", lambda self, *args, **kwargs: None)
        yield


def _cli(capsys, *args):
    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("name", names())
def test_each_refused_value_is_one_line_exit_2_and_nothing_written(name, tmp_path, capsys):
    for _, field, _, text in (c for c in INVALID if c[0] == name):
        logdir = tmp_path / f"{field}={text}"
        steps = [] if field == "steps" else ["--steps", "8"]
        status, out, err = _cli(capsys, "run", name, f"{field}={text}", *steps, "--logdir",
                                str(logdir))
        assert status == 2, (field, text, out, err)
        assert len(err.splitlines()) == 1 and err.startswith("stagerl run: error: "), err
        assert field in err and "Traceback" not in err, err
        assert not logdir.exists() and out == ""


#: Their accepted values take minutes (a game of Atari per evaluation): in the slow tests; the
#: smoke runs of tests/stagerl/experiments/test_real_envs.py resume them in every run.
SLOW_TO_ACCEPT = ("dqn-atari", "ppo-atari")


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow)
                                  if n in SLOW_TO_ACCEPT else n for n in names()])
def test_each_accepted_value_is_written_and_resumed(name, tmp_path, capsys, quick_runs):
    fields = [row[0] for row in hyper_parameters(name)]
    smaller = ["buffer_size=64"] if "buffer_size" in fields else []  # quicker checkpoints
    for _, field, _, text in (c for c in VALID if c[0] == name):
        logdir = tmp_path / f"{field}={text}"
        pair = f"{field}={text}"
        extra = [p for p in smaller if not p.startswith(f"{field}=")]
        status, out, err = _cli(capsys, "run", name, pair, *extra, "--steps", "4", "--logdir",
                                str(logdir), "--no-tensorboard")
        assert status == 0, (field, text, err)
        written = json.loads((logdir / "config.json").read_text())["config"][field]
        assert written == json_value(parse_overrides(name, [pair])[field])
        assert written != "inf"  # inf is {"float": "inf"}, which the resume reads back
        status, out, err = _cli(capsys, "run", name, "--steps", "8", "--logdir", str(logdir),
                                "--resume")
        assert status == 0, (field, text, err)
        summary = json.loads((logdir / "summary.json").read_text())
        assert summary["env_steps"] >= 8 and summary["config"][field] == written
        assert summary["resumed_at_step"] >= 4


# ---- a handful through the real command --------------------------------------------------


ENV = {**os.environ, "CI": "1"}


@pytest.mark.parametrize("name, pair, message", [
    ("ppo-cartpole", "ent_coef=nan", "ent_coef must be a finite number >= 0, got ent_coef=nan"),
    ("dqn-cartpole", "learning_rate=inf", "learning_rate must be a finite number > 0"),
    ("sac-pendulum", "num_envs=-3", "sac-pendulum: num_envs must be an int >= 1, got "
                                    "num_envs=-3"),
    ("tabular-q-random-walk", "decay_fraction=inf", "decay_fraction must be in [0, 1]"),
    ("tabular-q-random-walk", "lr=inf", "lr must be in (0, 1], got lr=inf"),
    ("trpo-cartpole", "cg_damping=nan", "cg_damping must be a finite number >= 0"),
    ("dqn-atari", "stack_size=0", "dqn-atari: stack_size must be an int >= 1, got stack_size=0"),
    ("ppo-atari", "frame_stack=-1", "ppo-atari: frame_stack must be an int >= 1"),
    ("ppo-atari", "features_extractor=resnet", "features_extractor must be 'auto' or 'mlp' or "
                                               "'nature_cnn' or 'combined'"),
    ("sac-halfcheetah", "learning_starts=-1", "learning_starts must be an int >= 0"),
    ("td3-hopper", "action_noise=inf", "action_noise must be a finite number >= 0"),
    ("ppo-hopper", "activation=sigmoid", "activation must be 'tanh' or 'relu'"),
    ("erwr-cartpole", "baseline=linaer", "erwr-cartpole: baseline must be 'zero' or 'network' "
                                         "or 'linear', got baseline='linaer'"),
    ("erwr-cartpole", "baseline_reg_coeff=-inf", "baseline_reg_coeff must be a finite number"),
    ("reps-cartpole", "epsilon=0", "reps-cartpole: epsilon must be a finite number > 0, got "
                                   "epsilon=0.0"),
    ("reps-cartpole", "max_opt_iter=0", "max_opt_iter must be an int >= 1, got max_opt_iter=0"),
    ("a3c-cartpole", "stale_gradients=late", "a3c-cartpole: stale_gradients must be 'drop' or "
                                             "'scale', got stale_gradients='late'"),
    ("a3c-cartpole", "gradient_staleness=-1", "a3c-cartpole: gradient_staleness must be an int "
                                              ">= 0, got gradient_staleness=-1"),
])
def test_the_command_refuses_them_in_one_line(tmp_path, name, pair, message):
    result = subprocess.run([sys.executable, "-m", "stagerl", "run", name, pair, "--logdir",
                             "out"], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"stagerl run: error: {message}"] or (
        len(result.stderr.splitlines()) == 1 and message in result.stderr), result.stderr
    assert not list(tmp_path.iterdir())


def test_the_command_writes_inf_resumes_it_and_evaluates_it(tmp_path):
    def stagerl(*args):
        return subprocess.run([sys.executable, "-m", "stagerl", "run", "ppo-cartpole", *args,
                               "--logdir", "out", "--no-tensorboard"], cwd=tmp_path, env=ENV,
                              capture_output=True, text=True, timeout=300)

    first = stagerl("max_grad_norm=inf", "clip_range=inf", "num_envs=2", "n_steps=8",
                    "batch_size=16", "--steps", "32", "--checkpoint-every", "16")
    assert first.returncode == 0, first.stderr
    config = json.loads((tmp_path / "out" / "config.json").read_text())["config"]
    assert config["max_grad_norm"] == config["clip_range"] == {"float": "inf"}
    resumed = stagerl("--steps", "64", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["env_steps"] == 64 and summary["resumed_at_step"] == 32
    assert summary["config"]["max_grad_norm"] == {"float": "inf"}
    assert main(["eval", str(tmp_path / "out"), "--episodes", "1"]) == 0  # and evaluates
