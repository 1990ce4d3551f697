"""Learning curves: the PlotLearningCurve hook, and plots of log directories (``stagerl plot``).

Figures are drawn with matplotlib's object-oriented API on its Agg canvas, never through
``pyplot``: nothing depends on a display or changes the user's backend, and a figure shows
inline in a notebook as a PNG.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stagerl.core.episodes import Episode
from stagerl.logging.base import LoggingHook, ended_in_env
from trajectories.checks import require_positive_int

__all__ = ["PlotLearningCurve", "Curve", "learning_curve_figure", "moving_average",
           "read_curve", "plot_logdirs", "in_notebook", "EVAL_MEAN"]

#: The scalar Evaluate reports; plotted as points over the training curve.
EVAL_MEAN = "eval/return_mean"


def moving_average(values: Any, window: int) -> np.ndarray:
    """The mean of each value and up to ``window - 1`` values before it.

    Example:
        >>> moving_average([1.0, 3.0, 5.0, 7.0], window=2).tolist()
        [1.0, 2.0, 4.0, 6.0]
    """
    values = np.asarray(values, dtype=np.float64)
    sums = np.cumsum(np.concatenate(([0.0], values)))
    ends = np.arange(1, len(values) + 1)
    starts = np.maximum(0, ends - window)
    return (sums[ends] - sums[starts]) / (ends - starts)


@dataclass
class Curve:
    """One line of a learning-curve plot: one run, or the runs of several seeds.

    ``runs`` holds each run's ``(env steps, episode returns)`` arrays, ``evals`` each run's
    ``(env steps, mean evaluation returns)``.
    """

    label: str
    runs: list[tuple[np.ndarray, np.ndarray]]
    evals: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)


def learning_curve_figure(curves: list[Curve], window: int = 20, title: str | None = None):
    """A matplotlib ``Figure``: episode return against env steps, one line per curve.

    A single run shows its returns faintly and their moving average over ``window`` episodes;
    several runs show the mean of their moving averages and a band of one standard deviation
    (over the env steps all of them reached). Evaluations are drawn as points.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for i, curve in enumerate(curves):
        color = f"C{i}"
        runs = [(s, r) for s, r in curve.runs if len(s)]
        if len(runs) == 1:
            steps, returns = runs[0]
            axes.plot(steps, returns, color=color, alpha=0.25, linewidth=0.8)
            axes.plot(steps, moving_average(returns, window), color=color, label=curve.label)
        elif runs:
            grid = np.linspace(max(s[0] for s, _ in runs), min(s[-1] for s, _ in runs), 200)
            smooth = np.stack([np.interp(grid, s, moving_average(r, window)) for s, r in runs])
            mean, std = smooth.mean(axis=0), smooth.std(axis=0)
            axes.plot(grid, mean, color=color, label=f"{curve.label} ({len(runs)} runs)")
            axes.fill_between(grid, mean - std, mean + std, color=color, alpha=0.2)
        _draw_evaluations(axes, curve.evals, color)
    axes.set_xlabel("env steps")
    axes.set_ylabel(f"episode return (mean of {window})")
    if title:
        axes.set_title(title)
    if curves:
        axes.legend(loc="best")
    axes.grid(alpha=0.3)
    return figure


def _draw_evaluations(axes: Any, evals: list, color: str) -> None:
    evals = [(s, m) for s, m in evals if len(s)]
    if not evals:
        return
    if len(evals) == 1:
        steps, means = evals[0]
        axes.plot(steps, means, "o", color=color, markersize=4, label="evaluation")
        return
    common = sorted(set.intersection(*(set(s.tolist()) for s, _ in evals)))
    if common:
        at = np.stack([np.interp(common, s, m) for s, m in evals])
        axes.errorbar(common, at.mean(axis=0), yerr=at.std(axis=0), fmt="o", color=color,
                      markersize=4, capsize=2, label="evaluation")


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (where figures show inline)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def show_inline(figure: Any) -> None:
    """Show ``figure`` in the notebook's output as a PNG."""
    from IPython.display import Image, display

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    display(Image(data=buffer.getvalue()))


@dataclass
class PlotLearningCurve(LoggingHook):
    """Plots the learning curve at PostExperiment: the return of every episode the env ended
    and its moving average over ``window`` episodes, against env steps, with the evaluations
    (``eval/return_mean``, as ``Evaluate`` reports it) as points.

    The figure is saved as a PNG at ``path`` (``None``: not saved) and, with ``show=None``,
    shown inline when running in a notebook (``True``: always try, ``False``: never).
    :meth:`figure` draws it at any time. ``steps`` and ``returns`` hold the points.

    Example:
        >>> import tempfile, pathlib
        >>> import stagerl as rl
        >>> from stagerl.logging import PlotLearningCurve
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "curve.png"
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...               rl.StopAfterNEpisodes(5, progress=False), PlotLearningCurve(path))
        >>> len(hook.returns), path.read_bytes()[:4]
        (5, b'\\x89PNG')
    """

    path: str | Path | None = None
    window: int = 20
    show: bool | None = None
    title: str | None = None
    steps: list[int] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_returns: list[float] = field(default_factory=list)

    listens_to_scalars = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.path is not None and not isinstance(self.path, (str, Path)):
            raise TypeError(f"PlotLearningCurve: path must be a file path or None, got "
                            f"path={self.path!r}")
        require_positive_int("PlotLearningCurve", "window", self.window)
        import matplotlib.figure  # noqa: F401  (about 0.5 s: paid here, not inside the run)

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        if ended_in_env(episode):
            self.steps.append(self.env_step)
            self.returns.append(episode.total_reward)

    def on_scalar(self, name: str, value: float, step: int) -> None:
        if name == EVAL_MEAN:
            self.eval_steps.append(step)
            self.eval_returns.append(value)

    def figure(self) -> Any:
        """The learning curve so far, as a matplotlib ``Figure``."""
        curve = Curve("training", [(np.asarray(self.steps), np.asarray(self.returns))],
                      [(np.asarray(self.eval_steps), np.asarray(self.eval_returns))])
        return learning_curve_figure([curve], self.window, self.title)

    def finish(self, policy: Any, env: Any) -> None:
        show = in_notebook() if self.show is None else self.show
        if self.path is None and not show:
            return
        figure = self.figure()
        if self.path is not None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            figure.savefig(self.path, dpi=100)
        if show:
            show_inline(figure)


# ---- log directories -----------------------------------------------------------------------


@dataclass
class _Run:
    logdir: Path
    experiment: str
    config: dict
    steps: np.ndarray
    returns: np.ndarray
    eval_steps: np.ndarray
    eval_means: np.ndarray


def read_curve(logdir: str | Path) -> _Run:
    """A log directory's episodes (those the env ended) and evaluations; ``ValueError`` when
    it holds no ``episodes.csv``."""
    logdir = Path(logdir)
    episodes = logdir / "episodes.csv"
    if not episodes.is_file():
        raise ValueError(f"{logdir} is not a stagerl log directory: it has no episodes.csv")
    steps, returns = [], []
    with episodes.open(newline="") as file:
        for row in csv.DictReader(file):
            if row["terminated"] == "1" or row["truncated"] == "1":
                steps.append(int(row["env_step"]))
                returns.append(float(row["return"]))
    eval_steps, eval_means = [], []
    updates = logdir / "updates.csv"
    if updates.is_file():
        with updates.open(newline="") as file:
            for row in csv.DictReader(file):
                if row["name"] == EVAL_MEAN:
                    eval_steps.append(int(row["env_step"]))
                    eval_means.append(float(row["value"]))
    info = {}
    if (logdir / "config.json").is_file():
        info = json.loads((logdir / "config.json").read_text())
    return _Run(logdir, info.get("experiment", logdir.name), info.get("config", {}),
                np.asarray(steps), np.asarray(returns), np.asarray(eval_steps),
                np.asarray(eval_means))


def plot_logdirs(logdirs: list[str | Path], output: str | Path, window: int = 20) -> Path:
    """Plot the runs of ``logdirs`` in one PNG at ``output``; returns its path.

    Runs of one experiment with the same hyper-parameters (seeds apart) make one curve: the
    mean over the runs and a band of one standard deviation. Curves of one experiment with
    different hyper-parameters are labelled with the ones that differ.
    """
    runs = [read_curve(d) for d in logdirs]
    empty = [str(r.logdir) for r in runs if not len(r.steps)]
    if empty:
        raise ValueError(f"no finished episode to plot in {', '.join(empty)}")
    groups: dict[tuple[str, str], list[_Run]] = {}
    for run in runs:
        key = (run.experiment, json.dumps({k: v for k, v in run.config.items()
                                           if k != "steps"}, sort_keys=True))
        groups.setdefault(key, []).append(run)
    curves = []
    for (experiment, _), members in groups.items():
        label = experiment + _differences(members[0], [g[0] for g in groups.values()])
        curves.append(Curve(label, [(r.steps, r.returns) for r in members],
                            [(r.eval_steps, r.eval_means) for r in members]))
    figure = learning_curve_figure(curves, window)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=100)
    return output


def _differences(run: _Run, firsts: list[_Run]) -> str:
    others = [o for o in firsts if o.experiment == run.experiment and o is not run]
    names = sorted({k for o in others for k in run.config if o.config.get(k) != run.config[k]}
                   - {"steps"})
    return (" " + " ".join(f"{k}={run.config[k]}" for k in names)) if names else ""
