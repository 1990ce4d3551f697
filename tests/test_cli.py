"""The stagerl command, run as users run it: `python -m stagerl ...` in a fresh process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from stagerl.experiments import names, train

NAME = "tabular-q-random-walk"
ENV = {**os.environ, "CI": "1"}


def stagerl(*args: str, cwd: Path, env: dict | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stagerl", *args], cwd=cwd, env=env or ENV,
                          capture_output=True, text=True, timeout=timeout)


def test_list_names_every_experiment_in_under_a_second(tmp_path):
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        result = stagerl("list", cwd=tmp_path)
        walls.append(time.perf_counter() - start)
        assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == names()
    assert any(line.startswith(NAME) and "Tabular Q-learning" in line for line in lines)
    assert min(walls) < 1.0, walls


def test_list_does_not_import_torch(tmp_path):
    code = ("import sys; from stagerl.cli import main; main(['list']); "
            "print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert result.stdout.splitlines()[-1] == "False"


def test_the_console_script_runs(tmp_path):
    script = Path(sys.executable).parent / "stagerl"
    if not script.exists():
        pytest.skip("stagerl is not installed as a console script in this environment")
    result = subprocess.run([str(script), "list"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and NAME in result.stdout


def test_run_writes_a_log_directory_with_every_file(tmp_path):
    result = stagerl("run", NAME, "--steps", "300", "--seed", "1", "--device", "cpu",
                     "--logdir", "out", "lr=0.3", "n_states=9", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    logdir = tmp_path / "out"
    files = sorted(p.name for p in logdir.iterdir())
    assert [f for f in files if not f.startswith("events.out.tfevents.")] == [
        "checkpoints", "config.json", "episodes.csv", "learning_curve.png", "summary.json",
        "updates.csv"]
    assert len(files) == 7
    assert sorted(p.name for p in (logdir / "checkpoints").iterdir()) == ["best",
                                                                          "step-000000300"]
    config = json.loads((logdir / "config.json").read_text())
    assert config["seed"] == 1 and config["steps"] == 300
    assert config["config"]["lr"] == 0.3 and config["config"]["n_states"] == 9
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary["env_steps"] == 300 and summary["eval_episodes"] == 20
    out = result.stdout.splitlines()
    assert out[-3].startswith(f"{NAME} seed 1: 300 env steps in ")
    assert out[-2].startswith("evaluation: return ")
    assert out[-1].startswith("logs: out")
    assert result.stderr == ""


def test_options_and_overrides_may_come_in_any_order(tmp_path):
    result = stagerl("run", "gamma=0.5", NAME, "--steps", "5e2", "lr=0.2", "--logdir", "out",
                     "--no-tensorboard", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert (config["steps"], config["config"]["gamma"], config["config"]["lr"]) == (
        500, 0.5, 0.2)
    assert not list((tmp_path / "out").glob("events.out.tfevents.*"))


def test_the_default_log_directory_is_under_runs(tmp_path):
    result = stagerl("run", NAME, "--steps", "100", "--seed", "4", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (logdir,) = (tmp_path / "runs" / NAME).iterdir()
    assert logdir.name.endswith("-seed4") and (logdir / "summary.json").exists()


def test_run_help_lists_the_hyper_parameters_with_defaults(tmp_path):
    result = stagerl("run", NAME, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1:3] for line in result.stdout.splitlines()
            if line.startswith("  ") and len(line.split()) >= 3}
    assert rows["steps"] == ["int", "5000"] and rows["lr"] == ["float", "0.5"]
    assert rows["epsilon"] == ["float", "0.05"]
    assert "--overwrite" in result.stdout and "name=value" in result.stdout
    assert not list(tmp_path.iterdir())


def test_help_without_an_experiment(tmp_path):
    assert "--logdir" in stagerl("run", "--help", cwd=tmp_path).stdout
    top = stagerl("--help", cwd=tmp_path)
    assert top.returncode == 0 and "stagerl run <experiment>" not in top.stderr
    assert all(f"  {command}" in top.stdout for command in ("run", "list", "plot", "eval"))


NO_TENSORBOARD = {**ENV, "PYTHONPATH": ""}


@pytest.mark.parametrize("args, message", [
    (["run", "tabular-q-randomwalk"],
     "stagerl run: error: unknown experiment 'tabular-q-randomwalk'; did you mean "
     "tabular-q-random-walk?"),
    (["run", NAME, "alpha=0.1"],
     "stagerl run: error: tabular-q-random-walk has no hyper-parameter 'alpha'"),
    (["run", NAME, "epsilom=0.1"], "(did you mean epsilon?); the hyper-parameters are: steps, "),
    (["run", NAME, "lr=fast"], "stagerl run: error: hyper-parameter lr expects float, got "
                               "'fast'"),
    (["run", NAME, "n_states=7.5"], "hyper-parameter n_states expects int, got '7.5'"),
    (["run", NAME, "lr"], "hyper-parameters are given as name=value, got 'lr'"),
    (["run", NAME, "--steps", "0"], "steps must be a positive int, got steps=0"),
    (["run", NAME, "--steps", "many"], "argument --steps: expected a whole number"),
    (["run", NAME, "--steps", "10", "steps=20"], "steps is given twice"),
    (["run", NAME, "--bogus"], "unrecognized arguments: --bogus"),
    (["run"], "which experiment?"),
    (["run", "nope", "--help"], "unknown experiment 'nope'"),
    (["runn", NAME], "stagerl: error: unknown command 'runn'; did you mean run?"),
    (["eval", "runs/x"], "stagerl eval: error: no checkpoint to evaluate at runs/x (runs/x does "
                         "not exist)"),
    (["plot", "missing"], "stagerl plot: error: no such log directory: missing"),
])
def test_bad_input_is_one_line_exit_status_2_and_nothing_written(tmp_path, args, message):
    result = stagerl(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_bad_input(tmp_path):
    result = stagerl("run", NAME, "--device", "cuda", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("stagerl run: error: device='cuda' but this machine has no "
                                    "CUDA device")
    assert len(result.stderr.splitlines()) == 1 and not list(tmp_path.iterdir())


def _without_tensorboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    code = ("import sys; sys.modules['tensorboard'] = None; from stagerl.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=120)


def test_tensorboard_asked_for_but_not_installed_is_bad_input(tmp_path):
    result = _without_tensorboard("run", NAME, "--tensorboard", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == ("stagerl run: error: tensorboard is not installed: pip install "
                             "'stagerl[tensorboard]'\n")
    assert not list(tmp_path.iterdir())


def test_tensorboard_not_installed_is_a_notice_otherwise(tmp_path):
    result = _without_tensorboard("run", NAME, "--steps", "100", "--logdir", "out",
                                  cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "stagerl: no TensorBoard logs: tensorboard is not installed: pip install "
        "'stagerl[tensorboard]'"]
    assert (tmp_path / "out" / "summary.json").exists()


def test_an_existing_log_directory_is_refused_untouched_unless_overwrite(tmp_path):
    logdir = tmp_path / "out"
    logdir.mkdir()
    (logdir / "episodes.csv").write_text("an earlier run")
    before = (logdir / "episodes.csv").stat().st_mtime_ns
    result = stagerl("run", NAME, "--steps", "100", "--logdir", "out", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == ("stagerl run: error: log directory 'out' already exists and is "
                             "not empty; choose another --logdir, or pass --overwrite to "
                             "replace its run\n")
    assert [p.name for p in logdir.iterdir()] == ["episodes.csv"]
    assert (logdir / "episodes.csv").stat().st_mtime_ns == before
    result = stagerl("run", NAME, "--steps", "100", "--logdir", "out", "--overwrite",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (logdir / "episodes.csv").read_text().startswith("env_step,episode,")


def test_plot_one_and_several_runs(tmp_path):
    for seed in (0, 1):
        train(NAME, steps=300, seed=seed, logdir=tmp_path / f"s{seed}", progress=False,
            tensorboard=False)
    one = stagerl("plot", "s0", cwd=tmp_path)
    assert one.returncode == 0 and one.stdout.strip() == str(Path("s0") / "learning_curve.png")
    both = stagerl("plot", "s0", "s1", "-o", "both.png", "--window", "5", cwd=tmp_path)
    assert both.returncode == 0, both.stderr
    assert (tmp_path / "both.png").read_bytes()[:4] == b"\x89PNG"


def test_ctrl_c_flushes_the_logs_and_exits_130(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "stagerl", "run", NAME, "--steps", "10000000", "--logdir", "out"],
        cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "out" / "config.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # some episodes: the CSV's 5-second flush has not come yet
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    last = err.splitlines()[-1]
    assert last.startswith("stagerl run: interrupted; checkpoint written to "
                           f"{Path('out') / 'checkpoints' / 'step-'}"), err
    assert last.endswith(f"; continue with: stagerl run {NAME} --logdir out --resume")
    assert "Traceback" not in err
    rows = (tmp_path / "out" / "episodes.csv").read_text().splitlines()
    assert rows[0].startswith("env_step,") and len(rows) > 10
    assert list((tmp_path / "out").glob("events.out.tfevents.*"))
    assert not (tmp_path / "out" / "summary.json").exists()

