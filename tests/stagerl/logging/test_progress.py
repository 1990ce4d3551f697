"""ProgressBar and ConsoleSummary on single and vector envs."""

from __future__ import annotations

import io

import numpy as np
import pytest

import stagerl as rl
from stagerl.logging import ConsoleSummary, ProgressBar, log_scalar


class Right(rl.Policy):
    pass


@rl.plan.dispatch
def plan(policy: Right, env: rl.Env):
    return 1


@rl.plan.dispatch
def plan(policy: Right, env: rl.VectorEnv):  # noqa: F811
    return np.ones(env.num_envs, dtype=np.int64)


def test_console_summary_lines_on_a_single_env():
    out = io.StringIO()
    hook = ConsoleSummary(every_n_steps=3, total=7, window=2, file=out)
    hook.clock = lambda: hook.env_step / 1000  # 1 ms per env step: 1,000 steps/s
    rl.run(Right(), rl.RandomWalk1D(start=3), rl.StopAfterNSteps(7, progress=False),
           hook + rl.DoEveryNSteps(lambda t, p, e: log_scalar("losses/x", t / 8), n=5))
    # A single env's episode ends at PostEpisode, after the line of its last step.
    assert out.getvalue().splitlines() == [
        "env steps 3/7 | episodes 0 | 1,000 steps/s",
        "env steps 6/7 | episodes 1 | return 1 (mean of last 1) | 1,000 steps/s | "
        "losses/x 0.625",
        "done: env steps 7/7 | episodes 3 | return 1 (mean of last 2) | 1,000 steps/s",
    ]


def test_console_summary_on_a_vector_env_counts_every_sub_env():
    out = io.StringIO()
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    totals = rl.TotalRewardPerEpisode()
    hook = ConsoleSummary(every_n_steps=150, file=out)
    rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNSteps(300, progress=False),
           hook + totals)
    lines = out.getvalue().splitlines()
    assert [line.split(" | ")[0] for line in lines] == [
        "env steps 150", "env steps 300", "done: env steps 300"]
    assert f"episodes {len(totals.rewards)} |" in lines[-1]


def test_progress_bar_draws_steps_episodes_and_return(capsys, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    hook = ProgressBar(total=200, window=5)
    rl.run(Right(), rl.RandomWalk1D(start=3), rl.StopAfterNSteps(200, progress=False), hook)
    drawn = capsys.readouterr().err
    assert "200/200" in drawn
    assert "episodes 67, return 1" in drawn
    assert hook._bar is None and hook.episodes == 67


def test_progress_bar_on_a_vector_env(capsys, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    hook = ProgressBar(total=3000)
    rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNSteps(3000, progress=False), hook)
    assert "3.00k/3.00k" in capsys.readouterr().err and hook.env_step == 3000


def test_no_progress_bar_where_ci_is_set(capsys, monkeypatch):
    monkeypatch.setenv("CI", "1")
    hook = ProgressBar(total=50)
    rl.run(Right(), rl.RandomWalk1D(), rl.StopAfterNSteps(50, progress=False), hook)
    assert capsys.readouterr().err == "" and hook.env_step == 50


@pytest.mark.parametrize("make", [lambda: ProgressBar(total=0),
                                  lambda: ProgressBar(window=0),
                                  lambda: ConsoleSummary(every_n_steps=0)])
def test_bad_arguments_are_refused(make):
    with pytest.raises(ValueError, match="must be positive"):
        make()


def test_progress_bar_and_console_summary_continue_counting_after_a_resume(tmp_path, capsys,
                                                                           monkeypatch):
    import re
    import sys

    from stagerl.checkpoints import CheckpointSchedule, ResumableExperiment, resume

    monkeypatch.delenv("CI", raising=False)  # the bar is drawn: its tqdm is left out of saves
    bar, summary = ProgressBar(total=40), ConsoleSummary(every_n_steps=10, total=40,
                                                         file=sys.stderr)
    ResumableExperiment(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
                        rl.StopAfterNSteps(40, progress=False),
                        bar + summary, checkpoints=CheckpointSchedule(20, tmp_path)).run()
    def summary_lines(text):  # the summary lines without their speed, among the bar's
        return [re.sub(r" \| [\d,]+ steps/s", "", found) for found in
                re.findall(r"(?:done: )?env steps [^\n\r]*", text)]

    lines = summary_lines(capsys.readouterr().err)
    assert len(lines) == 5

    resumed = resume(tmp_path / "step-000000020")
    assert resumed.hook[0]._bar is None and resumed.hook[0].env_step == 20
    resumed.run()
    resumed_bar, resumed_summary = resumed.hook[0], resumed.hook[1]
    assert (resumed_bar.env_step, resumed_bar.episodes) == (bar.env_step, bar.episodes)
    assert list(resumed_bar.recent) == list(bar.recent)
    # The summary lines go on where they were, to standard error as before.
    out = capsys.readouterr()
    assert "env steps" not in out.out
    assert summary_lines(out.err) == lines[2:]
    assert resumed_summary.episodes == summary.episodes


def test_in_a_notebook_the_bar_is_a_widget_and_tqdm_does_not_warn(monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.delenv("CI", raising=False)  # the kernel inherits the environment: a bar
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    cell = nbformat.v4.new_code_cell(
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "import stagerl as rl\n"
        "bar = rl.ProgressBar(total=300)\n"
        "_ = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),\n"
        "           rl.StopAfterNSteps(300, progress=False), bar)\n"
        "print('steps', bar.env_step)")
    notebook = nbformat.v4.new_notebook(cells=[cell])
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    outputs = notebook.cells[0].outputs
    text = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    assert "TqdmWarning" not in text and "IProgress" not in text, text
    widgets = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in
               o.get("data", {})]
    assert len(widgets) == 1 and "steps 300" in text  # one widget bar, the run to its end


def test_the_notebook_extra_brings_the_widgets_the_bar_needs():
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    for extra in ("notebook", "dev"):
        assert any(r.startswith("ipywidgets") for r in extras[extra]), extra
