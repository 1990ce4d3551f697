"""Logging hooks: CSV, TensorBoard, progress, learning curves, periodic evaluation.

Each is a composable hook working on single and vector envs; compose them with ``+``. An
algorithm reports its own scalars (losses, ε, entropy, KL) with :func:`log_scalar`, and every
logger of the experiment writes them. Importing this package imports neither torch, tensorboard,
tqdm nor matplotlib: each hook imports what it needs when a run starts. See ``docs/logging.md``.

Example:
    >>> import tempfile
    >>> import stagerl as rl
    >>> from stagerl.logging import CSVLogger, PlotLearningCurve
    >>> logdir = tempfile.mkdtemp()
    >>> hook = CSVLogger(logdir) + PlotLearningCurve(f"{logdir}/learning_curve.png")
    >>> _ = rl.run(rl.RandomPolicy(rng=0), rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0),
    ...            rl.StopAfterNSteps(200, progress=False), hook)
    >>> sorted(p.name for p in __import__("pathlib").Path(logdir).iterdir())
    ['episodes.csv', 'learning_curve.png', 'updates.csv']
"""

from stagerl.logging.base import LoggingHook
from stagerl.logging.csv_logger import CSVLogger
from stagerl.logging.periodic_evaluation import Evaluate
from stagerl.logging.plotting import PlotLearningCurve, plot_logdirs
from stagerl.logging.progress import ConsoleSummary, ProgressBar
from stagerl.logging.scalars import ScalarListener, is_logging_scalars, log_scalar
from stagerl.logging.tensorboard_logger import TensorBoardLogger, tensorboard_available

__all__ = [
    "log_scalar",
    "is_logging_scalars",
    "ScalarListener",
    "LoggingHook",
    "CSVLogger",
    "TensorBoardLogger",
    "ProgressBar",
    "ConsoleSummary",
    "PlotLearningCurve",
    "Evaluate",
    "plot_logdirs",
    "tensorboard_available",
]
