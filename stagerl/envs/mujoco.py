"""MuJoCo bodies (gymnasium's ``HalfCheetah-v5``, ``Hopper-v5``...): what they need. Make them
as any gymnasium env (``stagerl.GymEnv("Hopper-v5")``); their state is saved as data in
checkpoints (see :mod:`stagerl.envs.native_state`)."""

from __future__ import annotations

from typing import Any

__all__ = ["MUJOCO_INSTALL", "require_mujoco"]

MUJOCO_INSTALL = "pip install 'stagerl[mujoco]'  (mujoco>=3, gymnasium's MuJoCo bodies)"


def require_mujoco() -> Any:
    """The ``mujoco`` module, or ``ModuleNotFoundError`` naming the ``pip install``."""
    try:
        import mujoco
    except ImportError as error:
        raise ModuleNotFoundError(
            f"MuJoCo envs need the mujoco package, which is not installed: {MUJOCO_INSTALL}"
        ) from error
    return mujoco

