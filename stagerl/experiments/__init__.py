"""Named experiments: an algorithm, an env and its hyper-parameters, runnable by name.

Each experiment is one module of :mod:`stagerl.experiments.zoo` whose name, with ``_`` read as
``-``, is the experiment's name (``dqn_cartpole.py`` is ``dqn-cartpole``) and whose docstring's
first line is its one-line summary. The module defines ``EXPERIMENT = NamedExperiment(...)``:
its settings dataclass (the run's settings and its algorithm's config, with the defaults it
changes; see :mod:`stagerl.experiments.settings`) and the functions that build the env and the
agent.

* :func:`train` runs one by name and returns its summary; :func:`get_experiment` gives its
  :class:`NamedExperiment`, :func:`configure` its settings, :func:`names` every name.
* ``run`` and ``load``, the names these had, still work for one release and warn: they shadowed
  ``stagerl.run`` and ``stagerl.load``.

Example:
    >>> import stagerl.experiments as experiments
    >>> "tabular-q-random-walk" in experiments.names()
    True
    >>> summary = experiments.train("tabular-q-random-walk", steps=500, progress=False)
    >>> summary["env_steps"], summary["eval_episodes"]
    (500, 20)
"""

import warnings
from typing import Any

from stagerl.experiments.registry import (
    NamedExperiment,
    configure,
    describe,
    get_experiment,
    names,
)
from stagerl.experiments.runner import train
from stagerl.experiments.settings import GymRunSettings, RunSettings, torch_threads

__all__ = ["NamedExperiment", "RunSettings", "GymRunSettings", "names", "describe",
           "get_experiment", "configure", "train", "torch_threads", "learner_for"]


def run(*args: Any, **kwargs: Any) -> dict:
    """Deprecated: :func:`train` (``stagerl.experiments.run`` shadowed ``stagerl.run``)."""
    warnings.warn("stagerl.experiments.run is deprecated (it shadowed stagerl.run); use "
                  "stagerl.experiments.train", DeprecationWarning, stacklevel=2)
    return train(*args, **kwargs)


def load(name: str) -> NamedExperiment:
    """Deprecated: :func:`get_experiment` (``stagerl.experiments.load`` shadowed
    ``stagerl.load``)."""
    warnings.warn("stagerl.experiments.load is deprecated (it shadowed stagerl.load); use "
                  "stagerl.experiments.get_experiment", DeprecationWarning, stacklevel=2)
    return get_experiment(name)


def __getattr__(name: str):
    # Loaded on first use: the distributed machinery is not needed to list experiments.
    if name == "learner_for":
        from stagerl.experiments.distributed import learner_for

        return learner_for
    raise AttributeError(f"module 'stagerl.experiments' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"learner_for"})
