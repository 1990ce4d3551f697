"""Checkpoints that are data, and experiments that resume exactly.

``save(obj, path)`` writes any object made of registered components (an Agent with its
trajectory, a policy, an env, a hook) as a checkpoint directory: a JSON manifest, the objects as
JSON naming their types, and the arrays and tensors in a ``torch.save`` file read back with
``weights_only=True``. ``load(path)`` builds it back; it builds only registered classes, through
their declared state, and runs nothing named in the file. A :class:`ResumableExperiment` with a
:class:`CheckpointSchedule` saves the whole experiment every so many steps (and on Ctrl-C);
:func:`resume` continues it exactly. See ``docs/checkpoints.md``.
"""

from stagerl.checkpoints.api import config_differences, load, load_state_dict, read, save
from stagerl.checkpoints.experiment import ResumableExperiment, resume
from stagerl.checkpoints.files import FORMAT_VERSION, find, latest, read_manifest
from stagerl.checkpoints.hook import Checkpoint
from stagerl.checkpoints.registry import CheckpointError, register
from stagerl.checkpoints.schedule import CheckpointSchedule

__all__ = [
    "save",
    "load",
    "load_state_dict",
    "read",
    "read_manifest",
    "find",
    "latest",
    "config_differences",
    "register",
    "CheckpointSchedule",
    "Checkpoint",  # deprecated: ResumableExperiment(..., checkpoints=CheckpointSchedule(...))
    "ResumableExperiment",
    "resume",
    "CheckpointError",
    "FORMAT_VERSION",
]
