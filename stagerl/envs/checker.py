"""check_env: run a custom env for a few episodes and say what it gets wrong."""

from __future__ import annotations

import copy
import math
from typing import Any

import gymnasium
import numpy as np

from stagerl.core.env import Env
from stagerl.envs.gym import GymEnv, is_vector_env, private_copy

__all__ = ["check_env", "EnvCheckError"]

_MEMBERS = ("state", "reward", "is_terminated", "is_truncated", "action_space", "state_space")


class EnvCheckError(ValueError):
    """Raised by :func:`check_env`; ``problems`` lists every problem found, one line each."""

    def __init__(self, env_name: str, problems: list[str]):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{env_name} fails {len(self.problems)} env check(s):\n{lines}")


def check_env(env: Any, steps: int = 200, seed: int = 0) -> None:
    """Reset and step ``env`` with random actions, and raise one error listing every problem.

    Checks that the members the run loop uses exist, that ``action_space`` and ``state_space``
    are gymnasium spaces, that an episode does not end right after ``reset()``, that ``state``
    lies in ``state_space`` and is a copy later steps do not mutate, that ``reward`` is a finite
    number, that ``is_terminated`` and ``is_truncated`` are bools and never both true, and
    (``Discrete`` actions) that an action outside the space is refused. A problem is reported
    once, at the first step it shows.

    The env is reset and stepped (about ``steps`` steps); actions come from a copy of its action
    space seeded with ``seed``. A ``gymnasium.Env`` is checked through :class:`GymEnv`.

    Raises:
        EnvCheckError: (a ``ValueError``) with one line per problem, in ``error.problems``.
        TypeError: ``env`` is not an env at all, or is a vector env.

    Example:
        >>> import stagerl as rl
        >>> rl.check_env(rl.RandomWalk1D())
        >>> class NoSpaces(rl.RandomWalk1D):
        ...     action_space = None
        >>> rl.check_env(NoSpaces())
        Traceback (most recent call last):
        ...
        stagerl.envs.checker.EnvCheckError: NoSpaces fails 1 env check(s):
          - action_space is None, not a gymnasium space: ...
    """
    if is_vector_env(env) or type(env).__name__ == "GymVectorEnv":
        raise TypeError(f"check_env checks single envs, got the vector env {env!r}")
    if isinstance(env, gymnasium.Env):
        env = GymEnv(env)
    if not isinstance(env, Env) and not (hasattr(env, "reset") and hasattr(env, "act")):
        raise TypeError(
            f"check_env needs a stagerl.Env (subclass it and define reset, act, state, reward, "
            f"is_terminated, action_space, state_space), got {env!r} of type {type(env).__name__}"
        )
    problems = _Problems()
    _check(env, problems, steps, seed)
    if problems:
        raise EnvCheckError(type(env).__name__, problems.lines)


class _Problems:
    """Problems in the order found, each kind reported once."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._kinds: set[str] = set()

    def add(self, kind: str, line: str) -> None:
        if kind not in self._kinds:
            self._kinds.add(kind)
            self.lines.append(line)

    def __bool__(self) -> bool:
        return bool(self.lines)


def _read(env: Any, name: str, problems: _Problems) -> tuple[bool, Any]:
    try:
        return True, getattr(env, name)
    except NotImplementedError:
        problems.add(f"missing {name}", f"{name} is not implemented: define the {name} property")
    except Exception as error:
        problems.add(f"missing {name}", f"reading {name} raised {type(error).__name__}: {error}")
    return False, None


def _check(env: Any, problems: _Problems, steps: int, seed: int) -> None:
    for name in ("reset", "act"):
        if not callable(getattr(env, name, None)):
            problems.add(name, f"{name} is missing or not callable: define {name}()")
    spaces = {}
    for name in ("action_space", "state_space"):
        ok, space = _read(env, name, problems)
        if ok and not isinstance(space, gymnasium.spaces.Space):
            problems.add(
                name,
                f"{name} is {space!r}, not a gymnasium space: use gymnasium.spaces.Discrete(n) "
                f"or Box(low, high, shape, dtype)",
            )
        elif ok:
            spaces[name] = space
    if problems:
        return  # without its members and spaces the env cannot be stepped meaningfully

    sampler = copy.deepcopy(spaces["action_space"])
    sampler.seed(seed)
    if not _reset(env, problems, step=0):
        return
    previous = None  # (state object handed out, snapshot of it, where it came from)
    t = 0
    for t in range(1, steps + 1):
        state = env.state
        previous = (state, private_copy(state), f"step {t - 1}")
        action = sampler.sample()
        try:
            env.act(action)
        except Exception as error:
            problems.add("act", f"act({action!r}) raised {type(error).__name__}: {error}")
            return
        if not _check_step(env, action, previous, problems, t):
            return
        if _episode_ended(env):
            previous = (env.state, private_copy(env.state), f"the end of an episode (step {t})")
            if not _reset(env, problems, step=t):
                return
            _check_not_mutated(previous, "reset()", problems)
    _check_invalid_action(env, spaces["action_space"], problems)


def _episode_ended(env: Any) -> bool:
    try:
        return bool(env.is_terminated) or bool(env.is_truncated)
    except Exception:
        return True


def _reset(env: Any, problems: _Problems, step: int) -> bool:
    try:
        result = env.reset()
    except Exception as error:
        problems.add("reset", f"reset() raised {type(error).__name__}: {error}")
        return False
    if result is not None:
        problems.add(
            "reset returns",
            f"reset() returned {type(result).__name__}; it should return None (the run loop reads "
            "env.state instead)",
        )
    ok_t, terminated = _read(env, "is_terminated", problems)
    ok_u, truncated = _read(env, "is_truncated", problems)
    if (ok_t and terminated) or (ok_u and truncated):
        problems.add(
            "done after reset",
            f"the episode has ended right after reset() (after step {step}: is_terminated="
            f"{terminated!r}, is_truncated={truncated!r}); reset() must start an episode that "
            "can be stepped, and clear both flags",
        )
    ok_s, state = _read(env, "state", problems)
    if ok_s:
        _check_in_space(env, state, "after reset()", problems)
    return ok_s and ok_t and ok_u


def _check_step(env: Any, action: Any, previous: tuple, problems: _Problems, t: int) -> bool:
    """Check the step just taken; ``False`` when a member is missing and stepping must stop."""
    where = f"step {t} (action {action!r})"
    _check_not_mutated(previous, where, problems)
    values = {}
    for name in _MEMBERS[:4]:
        ok, values[name] = _read(env, name, problems)
        if not ok:
            return False
    state, reward = values["state"], values["reward"]
    terminated, truncated = values["is_terminated"], values["is_truncated"]
    _check_in_space(env, state, f"at {where}", problems)
    if isinstance(reward, (bool, np.bool_)) or not isinstance(reward, (int, float, np.number)):
        problems.add(
            "reward type",
            f"reward at {where} is {reward!r} of type {type(reward).__name__}; it must be a "
            "number (convert with float(r))",
        )
    elif isinstance(reward, (complex, np.complexfloating)) or not math.isfinite(float(reward)):
        problems.add(
            "reward finite",
            f"reward at {where} is {reward!r}; it must be a finite number (NaN and inf poison "
            "learning targets)",
        )
    for name, value in (("is_terminated", terminated), ("is_truncated", truncated)):
        if not isinstance(value, (bool, np.bool_)):
            problems.add(
                f"{name} type",
                f"{name} at {where} is {value!r} of type {type(value).__name__}; it must be a bool",
            )
    if bool(terminated) and bool(truncated):
        problems.add(
            "both",
            f"is_terminated and is_truncated are both true at {where}; an episode either reached "
            "a terminal state (no bootstrapping) or was cut (bootstrapping): set one",
        )
    return True


def _check_in_space(env: Any, state: Any, where: str, problems: _Problems) -> None:
    space = env.state_space
    try:
        inside = bool(space.contains(state))
    except Exception:
        inside = False
    if not inside:
        detail = ""
        if isinstance(state, np.ndarray) and isinstance(space, gymnasium.spaces.Box):
            detail = (
                f" (state dtype {state.dtype} shape {state.shape}, space dtype {space.dtype} "
                f"shape {space.shape})"
            )
        problems.add(
            "state in space",
            f"state {where} is {_short(state)}, outside state_space {space}{detail}; make "
            "state_space describe every state (dtype, shape and bounds)",
        )


def _check_not_mutated(previous: tuple | None, by: str, problems: _Problems) -> None:
    if previous is None:
        return
    handed_out, snapshot, origin = previous
    if not _equal(handed_out, snapshot):
        problems.add(
            "state mutated",
            f"the state handed out at {origin} was changed by {by}: env.state must be a copy "
            "later steps cannot mutate (return self._state.copy(), or build a new array each "
            "step)",
        )


def _check_invalid_action(env: Any, space: Any, problems: _Problems) -> None:
    if not isinstance(space, gymnasium.spaces.Discrete):
        return
    bad = int(space.start + space.n)
    if not _reset(env, problems, step=0):
        return
    try:
        env.act(bad)
    except Exception:
        return
    problems.add(
        "invalid action",
        f"act({bad}) with action_space {space} did not raise; refuse actions outside the space "
        "with a ValueError that names the action",
    )


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        try:
            return bool(np.array_equal(a, b, equal_nan=True))
        except TypeError:  # equal_nan needs a numeric dtype
            return bool(np.array_equal(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(a == b) or (a != a and b != b)
    except Exception:
        return False


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."
