"""What ``GymVectorEnv`` checks and prepares around a gymnasium vector env: the autoreset modes
it supports, and a copy of the env that pickles (no functions that made its sub-envs)."""

from __future__ import annotations

import copy
from typing import Any

from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from gymnasium.vector import VectorEnv as GymnasiumVectorEnv

from stagerl.envs.native_state import env_as_data

__all__ = ["autoreset_mode_of", "without_env_fns"]

_SUPPORTED_MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)


def autoreset_mode_of(env: GymnasiumVectorEnv) -> AutoresetMode:
    """``env``'s autoreset mode (NEXT_STEP when untagged); a clear error for DISABLED."""
    mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    # gymnasium's own vector wrappers assume NEXT_STEP when the tag is missing; so do we.
    try:
        mode = AutoresetMode(mode)
    except ValueError:
        mode = None
    if mode not in _SUPPORTED_MODES:
        raise ValueError(
            f"GymVectorEnv supports the autoreset modes NEXT_STEP and SAME_STEP, got "
            f"autoreset_mode={env.metadata.get('autoreset_mode')!r}; build the vector env with "
            "autoreset_mode=gymnasium.vector.AutoresetMode.NEXT_STEP (the default) or SAME_STEP "
            "(DISABLED leaves resetting finished sub-envs to the caller, which the run loop "
            "never does)"
        )
    return mode


def without_env_fns(env: Any) -> Any:
    """``env`` (a vector env, possibly wrapped) with the innermost SyncVectorEnv's ``env_fns``
    left out and its MuJoCo or Atari sub-envs as data (``stagerl.envs.native_state``), as
    shallow copies; an AsyncVectorEnv cannot be copied at all."""
    if isinstance(env, AsyncVectorEnv):
        raise TypeError(
            "an AsyncVectorEnv runs its sub-envs in other processes and cannot be pickled or "
            "copied; build the GymVectorEnv with vectorization_mode='sync' to copy it"
        )
    if isinstance(env, SyncVectorEnv):
        copied = copy.copy(env)
        copied.env_fns = None
        copied.envs = [env_as_data(sub) for sub in env.envs]
        return copied
    inner = getattr(env, "env", None)
    if isinstance(inner, GymnasiumVectorEnv):
        copied = copy.copy(env)
        copied.env = without_env_fns(inner)
        return copied
    return env
