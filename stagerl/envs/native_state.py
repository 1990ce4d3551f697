"""The state of gymnasium envs whose simulator lives in native code, as data: MuJoCo bodies and
Atari games, so that checkpoints (and copies) hold them and a resumed run goes on bit for bit.

A MuJoCo env's state is its physics (``mujoco.mj_getState`` with ``mjSTATE_INTEGRATION``: time,
positions, velocities, actuator activations, the warm start of the constraint solver, controls
and applied forces), its ``np_random`` and its spaces; an Atari env's is the ALE's own state
(``cloneState(include_rng=True)``: the emulator and its random generator, as the ALE serialises
it), its ``np_random`` and its spaces. Everything else an env holds comes back from its id and
keyword arguments. :func:`env_as_data` puts a :class:`NativeEnvState` where the innermost env of
a wrapper chain was (the wrappers themselves are data: their counters, buffers and flags);
:func:`env_from_data` builds the env again and restores it: made from its id (one checked as
every env id read from a file is: registered with gymnasium, no ``module:`` prefix), reset once,
then given the saved state. ``GymEnv`` and ``GymVectorEnv`` do this in their
``__getstate__``/``__setstate__``.

What a file gives is checked before it is used (a ``ValueError``, which the checkpoint loader
reports as a malformed checkpoint): the kind, the id, keyword arguments (plain
numbers, and strings only as the id registered them: a MuJoCo ``xml_file`` from a file is
refused), the state's dtype and size (MuJoCo: exactly ``mj_stateSize``; the ALE: at most 1 MB,
parsed by the ALE, whose refusal is reported), the generator and spaces of the env's shapes.
"""

from __future__ import annotations

import copy
import sys
from typing import Any

import gymnasium
import numpy as np

from stagerl.envs.atari_wrappers import require_ale
from stagerl.envs.env_ids import env_id_problem

__all__ = ["NativeEnvState", "env_as_data", "env_from_data", "native_kind"]

#: The most bytes an ALE state may have (a game's is about 15 kB).
ALE_STATE_LIMIT = 1 << 20


def native_kind(env: Any) -> str | None:
    """``"mujoco"`` or ``"ale"`` for an unwrapped env of those simulators, else ``None``."""
    mujoco_env = sys.modules.get("gymnasium.envs.mujoco.mujoco_env")
    if mujoco_env is not None and isinstance(env, mujoco_env.MujocoEnv):
        return "mujoco"
    if type(env).__module__.startswith("ale_py") and hasattr(env, "ale"):
        return "ale"
    return None


class NativeEnvState:
    """A MuJoCo or Atari env as data (see the module docstring); ``build()`` makes it again.

    Attributes:
        kind: ``"mujoco"`` or ``"ale"``.
        env_id: the id the env was made with.
        kwargs: the keyword arguments of its spec.
        physics: the simulator's state (MuJoCo: float64 state vector; ALE: its bytes).
        np_random: the env's generator.
        action_space, observation_space: the env's spaces (with their own generators).
    """

    def __init__(self, env: gymnasium.Env):
        kind = native_kind(env)
        if kind is None:
            raise TypeError(f"{type(env).__name__} is neither a MuJoCo nor an Atari env")
        spec = env.spec
        if spec is None:
            raise TypeError(f"cannot save the {kind} env {type(env).__name__}: it was not made "
                            "with gymnasium.make, so it has no id to make it again from")
        self.kind = kind
        self.env_id = spec.id
        self.kwargs = dict(spec.kwargs)
        if kind == "mujoco":
            import mujoco

            what = mujoco.mjtState.mjSTATE_INTEGRATION
            self.physics = np.empty(mujoco.mj_stateSize(env.model, what), dtype=np.float64)
            mujoco.mj_getState(env.model, env.data, self.physics, what)
        else:
            state = env.ale.cloneState(include_rng=True)
            self.physics = np.frombuffer(state.__getstate__(), dtype=np.uint8).copy()
        self.np_random = copy.deepcopy(env.np_random)
        self.action_space = env.action_space
        self.observation_space = env.observation_space

    def build(self) -> gymnasium.Env:
        """The env made again from its id and given this state (everything checked first)."""
        where = "the checkpoint's env state"
        if self.kind == "ale":
            require_ale()
        elif self.kind == "mujoco":
            from stagerl.envs.mujoco import require_mujoco

            require_mujoco()
        else:
            raise ValueError(f"{where}: unknown kind {self.kind!r}")
        problem = env_id_problem(self.env_id)
        if problem is not None:
            raise ValueError(f"{where}: {problem}; nothing was built")
        env_id = self.env_id
        kwargs = _checked_kwargs(env_id, self.kwargs, where)
        if not isinstance(self.np_random, np.random.Generator):
            raise ValueError(f"{where}: np_random is not a numpy Generator")
        env = gymnasium.make(env_id, **kwargs).unwrapped
        if native_kind(env) != self.kind:
            raise ValueError(f"{where}: {env_id!r} is not a {self.kind} env")
        for name in ("action_space", "observation_space"):
            saved, made = getattr(self, name), getattr(env, name)
            if type(saved) is not type(made) or saved.shape != made.shape or \
                    saved.dtype != made.dtype:
                raise ValueError(f"{where}: its {name} {saved!r} is not {env_id}'s {made}")
        env.reset(seed=0)  # a fresh env is reset once before its state is set
        physics = self.physics
        if not isinstance(physics, np.ndarray) or physics.ndim != 1:
            raise ValueError(f"{where}: the simulator state is not a flat array")
        if self.kind == "mujoco":
            import mujoco

            what = mujoco.mjtState.mjSTATE_INTEGRATION
            size = mujoco.mj_stateSize(env.model, what)
            if physics.dtype != np.float64 or physics.shape != (size,):
                raise ValueError(f"{where}: {env_id} has a state of {size} float64s, the "
                                      f"file gives {physics.shape} {physics.dtype}")
            mujoco.mj_setState(env.model, env.data, np.ascontiguousarray(physics), what)
            mujoco.mj_forward(env.model, env.data)
        else:
            import ale_py

            if physics.dtype != np.uint8 or len(physics) > ALE_STATE_LIMIT:
                raise ValueError(f"{where}: the ALE state must be at most "
                                      f"{ALE_STATE_LIMIT} bytes")
            state = ale_py.ALEState.__new__(ale_py.ALEState)
            try:
                state.__setstate__(physics.tobytes())
                env.ale.restoreState(state)
            except Exception as error:  # the ALE refuses what it cannot parse
                raise ValueError(f"{where}: the ALE refused the saved state of "
                                      f"{env_id} ({type(error).__name__})") from None
        env.np_random = self.np_random
        env.action_space = self.action_space
        env.observation_space = self.observation_space
        return env


def _checked_kwargs(env_id: str, kwargs: Any, where: str) -> dict:
    """The spec's keyword arguments read from a file: plain numbers, and strings (a path, a
    game's name) only where they are what gymnasium registered for ``env_id``."""

    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise ValueError(f"{where}: the env's keyword arguments are not a dict of names")
    registered = gymnasium.envs.registry[env_id].kwargs
    for key, value in kwargs.items():
        plain = value is None or isinstance(value, (bool, int, float))
        if not plain and not (isinstance(value, str) and registered.get(key) == value):
            raise ValueError(f"{where}: the keyword argument {key}={value!r} of {env_id} "
                                  "is not one a checkpoint may set (numbers, or the registered "
                                  "strings)")
    return dict(kwargs)


def env_as_data(env: gymnasium.Env) -> Any:
    """``env`` (a wrapper chain) with its innermost env as a :class:`NativeEnvState` when it is
    a MuJoCo or Atari env: shallow copies of the wrappers, the chain itself left as it is;
    ``env`` itself otherwise."""
    chain = [env]
    while isinstance(chain[-1], gymnasium.Wrapper):
        chain.append(chain[-1].env)
    if native_kind(chain[-1]) is None:
        return env
    inner: Any = NativeEnvState(chain[-1])
    for wrapper in reversed(chain[:-1]):
        copied = copy.copy(wrapper)
        copied.env = inner
        if "_cached_spec" in vars(copied):  # a cache of the spec, made again when asked for
            copied._cached_spec = None
        inner = copied
    return inner


def env_from_data(env: Any) -> Any:
    """The env :func:`env_as_data` gave, with its native env built again (in place: the
    wrappers are the loaded ones)."""
    if isinstance(env, NativeEnvState):
        return env.build()
    outer = env
    while isinstance(env, gymnasium.Wrapper):
        if isinstance(env.env, NativeEnvState):
            env.env = env.env.build()
            break
        env = env.env
    return outer
