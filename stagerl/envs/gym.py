"""GymEnv: the adapter from any ``gymnasium.Env`` to stagerl's :class:`~stagerl.core.env.Env`.

``act`` is the hot path of the run loop, so it does the least that keeps the contract:

* ``state`` must be a copy later steps cannot mutate. Most gymnasium envs build a fresh array
  every step, which nobody else references; copying those would cost ~140 ns a step for nothing.
  An ndarray that owns its memory (``base is None``) and is referenced only by ``act`` itself
  (:func:`sys.getrefcount`) cannot be changed by anyone later, so it is kept as is (~50 ns to
  check); anything else (a view, an array the env or a wrapper still holds, a dict or tuple of
  arrays) is copied. The test is conservative: a false "shared" only costs a copy.
* A bad action is not validated against the space per step (``Space.contains`` costs µs).
  For ``Discrete`` spaces an int range test (~30 ns; ~90 ns for a numpy integer, converted
  with ``int`` first) catches what some envs silently accept (Acrobot-v1 indexes its torque
  list with ``-1``); for every space, an exception raised by the env's ``step`` is checked
  against ``action_space.contains`` and, when the action is outside the space, re-raised as a
  ``ValueError`` naming the action and the space. Out-of-bounds ``Box`` actions that an env
  clips by design (Pendulum-v1) are passed through, as SB3 does.
* A NaN reward raises ``ValueError`` (``r != r`` costs ~15 ns).
"""

from __future__ import annotations

import copy
import operator
import sys
import warnings
from typing import Any

import gymnasium
import numpy as np

from stagerl.core.env import Env
from stagerl.envs.native_state import env_as_data, env_from_data

__all__ = ["GymEnv", "check_seed", "is_vector_env", "private_copy"]

_ndarray = np.ndarray
_getrefcount = sys.getrefcount
_IMMUTABLE = (int, float, bool, complex, str, bytes, type(None), np.generic)


def _fresh_refcount() -> int:
    """What ``getrefcount`` reports for a fresh array unpacked from a step tuple.

    Measured rather than hard-coded: the count differs between Python versions (3.14 borrows
    references on the stack). The call site has the same shape as the one in ``GymEnv.act``.
    """

    def step():
        return np.zeros(1), 0.0, False, False, {}

    obs, _reward, _terminated, _truncated, _info = step()
    return _getrefcount(obs)


_PRIVATE_REFS = _fresh_refcount()


def private_copy(obs: Any) -> Any:
    """A copy of an observation that shares no mutable memory with it (immutables kept as is).

    Example:
        >>> import numpy as np
        >>> a = np.zeros(2); b = private_copy({"x": a, "n": 3}); a[0] = 1.0
        >>> b["x"].tolist(), b["n"]
        ([0.0, 0.0], 3)
    """
    if isinstance(obs, _ndarray):
        return obs.copy()
    if isinstance(obs, _IMMUTABLE):
        return obs
    if isinstance(obs, tuple):
        return tuple(private_copy(x) for x in obs)
    if isinstance(obs, dict):
        return type(obs)((k, private_copy(v)) for k, v in obs.items())
    return copy.deepcopy(obs)


def is_vector_env(obj: Any) -> bool:
    """Whether ``obj`` is a gymnasium vector env (or wraps one)."""
    return isinstance(obj, gymnasium.vector.VectorEnv) or isinstance(
        getattr(obj, "unwrapped", None), gymnasium.vector.VectorEnv
    )


def check_seed(seed: Any, owner: str) -> int | None:
    """``seed`` as a non-negative int or ``None``; ``TypeError``/``ValueError`` naming ``owner``."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{owner}: seed must be a non-negative int or None, got seed={seed!r}")
    if seed < 0:
        raise ValueError(f"{owner}: seed must be a non-negative int or None, got seed={seed}")
    return int(seed)


def _check_space(space: Any, what: str, owner: str) -> gymnasium.spaces.Space:
    if not isinstance(space, gymnasium.spaces.Space):
        raise TypeError(
            f"{owner}: the env's {what} must be a gymnasium.spaces.Space, got {space!r} of type "
            f"{type(space).__name__}; set self.{what} = gymnasium.spaces.Discrete(...) or Box(...)"
        )
    return space


def _make(env_or_id: Any, make_kwargs: dict[str, Any]) -> gymnasium.Env:
    if isinstance(env_or_id, str):
        if "num_envs" in make_kwargs or "vectorization_mode" in make_kwargs:
            raise TypeError(
                f"GymEnv({env_or_id!r}) adapts one env; for {make_kwargs.get('num_envs', 'n')} "
                f"copies use stagerl.GymVectorEnv({env_or_id!r}, num_envs=...)"
            )
        env = gymnasium.make(env_or_id, **make_kwargs)
    else:
        if make_kwargs:
            raise TypeError(
                f"GymEnv got make_kwargs {sorted(make_kwargs)} with an env object; they only "
                "apply to an id (GymEnv('CartPole-v1', max_episode_steps=100))"
            )
        env = env_or_id
    if is_vector_env(env):
        raise TypeError(
            f"GymEnv adapts a single gymnasium.Env, got the vector env {env!r}; use "
            "stagerl.GymVectorEnv(...) for gymnasium vector envs"
        )
    if isinstance(env, Env):
        raise TypeError(
            f"GymEnv adapts gymnasium envs, got {type(env).__name__}, which is already a "
            "stagerl.Env; pass it to run(...) directly"
        )
    if not isinstance(env, gymnasium.Env):
        raise TypeError(
            "GymEnv(env_or_id) needs a gymnasium.Env or a registered id such as 'CartPole-v1', "
            f"got {env!r} of type {type(env).__name__}"
        )
    return env


class GymEnv(Env):
    """A gymnasium env as a stagerl :class:`~stagerl.core.env.Env`.

    The first :meth:`reset` passes ``seed`` to the env and seeds its action space; later resets
    pass no seed, so a seeded run is reproducible and its episodes differ. ``terminated`` and
    ``truncated`` stay apart: ``is_terminated`` means no bootstrapping past ``state``,
    ``is_truncated`` (a time limit) means the episode was cut and learning bootstraps.

    ``state``, ``reward``, ``is_terminated``, ``is_truncated`` and ``info`` (the info dict of
    the last reset or step) are plain attributes for speed; treat them as read-only. ``state``
    is never mutated by later steps. ``reward`` is a Python float.

    Args:
        env_or_id: a ``gymnasium.Env`` (wrapped or not) or an id for ``gymnasium.make``.
        seed: seed of the first reset and of the action space; ``None`` for fresh entropy.
        **make_kwargs: passed to ``gymnasium.make`` (only with an id).

    Raises:
        TypeError: a vector env (use ``GymVectorEnv``), or not a gymnasium env.

    Example:
        >>> import stagerl as rl
        >>> env = rl.GymEnv("CartPole-v1", seed=0, max_episode_steps=3)
        >>> env.reset(); env.state.shape
        (4,)
        >>> for _ in range(3): env.act(1)
        >>> env.reward, env.is_terminated, env.is_truncated
        (1.0, False, True)
    """

    # Class attributes shadow the base class's properties, so the loop's per-step reads are
    # plain attribute reads (~15 ns instead of ~45 ns for a property).
    state: Any = None
    reward: float = 0.0
    is_terminated: bool = False
    is_truncated: bool = False

    def __init__(self, env_or_id: Any, seed: int | None = None, **make_kwargs: Any):
        self.env = _make(env_or_id, make_kwargs)
        self.seed = check_seed(seed, "GymEnv")
        name = type(self).__name__
        self._action_space = _check_space(self.env.action_space, "action_space", name)
        self._state_space = _check_space(self.env.observation_space, "observation_space", name)
        self._step = self.env.step
        self._seeded = False
        self._t = 0  # steps in the current episode, for error messages
        self.info: dict[str, Any] = {}
        # Discrete actions get an int range test; other spaces rely on the env's own checks.
        if isinstance(self._action_space, gymnasium.spaces.Discrete):
            self._low = int(self._action_space.start)
            self._high = self._low + int(self._action_space.n)
        else:
            self._low = self._high = None

    @property
    def action_space(self) -> gymnasium.spaces.Space:
        return self._action_space

    @property
    def state_space(self) -> gymnasium.spaces.Space:
        return self._state_space

    @property
    def unwrapped(self) -> gymnasium.Env:
        """The innermost gymnasium env."""
        return self.env.unwrapped

    def reset(self) -> None:
        if not self._seeded and self.seed is not None:
            obs, info = self.env.reset(seed=self.seed)
            self._action_space.seed(self.seed)
        else:
            obs, info = self.env.reset()
        self._seeded = True
        # The same rule as act's (the module docstring): a fresh array nobody else holds is kept.
        if type(obs) is not _ndarray or obs.base is not None or _getrefcount(obs) > _PRIVATE_REFS:
            obs = private_copy(obs)
        self.state = obs
        self.info = info
        self.reward = 0.0
        self.is_terminated = False
        self.is_truncated = False
        self._t = 0

    def act(self, action: Any) -> None:
        low = self._low
        try:
            if low is not None:
                # Compare as a Python int: comparing a numpy integer costs ~200 ns per operator.
                # The env gets that int, so a 0-d tensor or array from an argmax is an action.
                if type(action) is not int:
                    action = _as_index(action)
                if not low <= action < self._high:
                    raise _OutOfRange
            elif hasattr(action, "detach"):  # a torch tensor: the env wants numpy
                action = action.detach().cpu().numpy()
            obs, reward, terminated, truncated, info = self._step(action)
        except Exception as error:
            self._raise_for_action(action, error)
        # Keep the array only if nobody else holds it (see the module docstring).
        if type(obs) is not _ndarray or obs.base is not None or _getrefcount(obs) > _PRIVATE_REFS:
            obs = private_copy(obs)
        # The conversions are skipped for values already of the stored type (what most envs
        # return): a type test costs a third of the call it avoids.
        if type(reward) is not float:
            reward = float(reward)
        self._t += 1
        if reward != reward:
            raise ValueError(
                f"{self!r} returned a NaN reward at step {self._t} of the episode (action "
                f"{action!r}); check the env's reward computation"
            )
        self.state = obs
        self.reward = reward
        self.is_terminated = terminated if terminated is True or terminated is False \
            else bool(terminated)
        self.is_truncated = truncated if truncated is False or truncated is True \
            else bool(truncated)
        self.info = info

    def _raise_for_action(self, action: Any, error: Exception) -> None:
        """Called from ``act``'s except block: turn an invalid action into a ``ValueError``.

        An error raised by a valid action is the env's own and propagates unchanged.
        """
        if not isinstance(error, _OutOfRange):
            try:
                with warnings.catch_warnings():  # Box.contains warns while casting lists
                    warnings.simplefilter("ignore")
                    valid = bool(self._action_space.contains(action))
            except Exception:
                valid = False
            if valid:
                raise  # the error being handled in act, unchanged
        hint = ""
        if self._low is not None:
            hint = (f"; its actions are the ints {self._low}..{self._high - 1} (an integer numpy "
                    "scalar, 0-d array or 0-d tensor is taken as one)")
        raise ValueError(
            f"action {action!r} (of type {type(action).__name__}) is outside the action space "
            f"{self._action_space} of {self!r}{hint}"
        ) from (None if isinstance(error, _OutOfRange) else error)

    def __getstate__(self) -> dict:
        # A MuJoCo or Atari env's simulator is native: saved as data (its state, rng, spaces)
        # and made again when loaded; its bound step goes with it (see __setstate__).
        env = env_as_data(self.env)
        if env is self.env:
            return self.__dict__
        return {**self.__dict__, "env": env, "_step": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._step is None:
            self.env = env_from_data(self.env)
            self._step = self.env.step

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def __repr__(self) -> str:
        spec = getattr(self.env, "spec", None)
        name = repr(spec.id) if spec is not None else type(self.env.unwrapped).__name__
        return f"GymEnv({name}, seed={self.seed})"


class _OutOfRange(Exception):
    """Raised inside ``act`` when a Discrete action fails the range test."""


def _as_index(action: Any) -> int:
    """A Discrete action as a Python int: ints, numpy integers, and 0-d integer arrays and
    tensors (what an argmax returns); anything else (floats, arrays of several actions) is
    refused as outside the space."""
    try:
        return operator.index(action)
    except TypeError:
        raise _OutOfRange from None
