"""Named experiments: an algorithm, an env and its hyper-parameters, runnable by name.

Each experiment is one module of this package whose name, with ``_`` read as ``-``, is the
experiment's name (``dqn_cartpole.py`` is ``dqn-cartpole``) and whose docstring's first line is
its one-line summary. The module defines ``EXPERIMENT = NamedExperiment(...)``: a
hyper-parameter dataclass (its defaults are the experiment's settings) and the functions that
build the env and the agent.

Example:
    >>> import stagerl.experiments as experiments
    >>> "tabular-q-random-walk" in experiments.names()
    True
    >>> summary = experiments.run("tabular-q-random-walk", steps=500, progress=False)
    >>> summary["env_steps"], summary["eval_episodes"]
    (500, 20)
"""

from stagerl.experiments.registry import NamedExperiment, configure, describe, load, names
from stagerl.experiments.runner import run

__all__ = ["NamedExperiment", "names", "describe", "load", "configure", "run", "learner_for"]


def __getattr__(name: str):
    # Loaded on first use: the distributed machinery is not needed to list experiments.
    if name == "learner_for":
        from stagerl.experiments.distributed import learner_for

        return learner_for
    raise AttributeError(f"module 'stagerl.experiments' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"learner_for"})
