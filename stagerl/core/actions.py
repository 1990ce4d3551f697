"""``compute_actions``: the actions a policy takes for observations, without an env.

``plan(policy, env)`` acts inside the run loop; ``compute_actions(policy, observations,
state=None, deterministic=False)`` is the same decision for observations held in hand
(deployment code, a notebook, a server), as RLlib's ``compute_actions(obs_batch,
state_batches)``. Every stagerl policy answers it: one observation or a batch in; the actions,
the new recurrent state (``None`` for a policy without memory) and the extra per-step data
(log-probabilities, values, action values, ...) out, as a :class:`ComputedActions`.

Policies extend it with ``@stagerl.compute_actions.dispatch`` on a method that takes all four
arguments (``policy, observations, state, deterministic``); :func:`as_batch`,
:func:`checked_state` and :func:`one_or_batch` are the rules every method shares (what is one
observation and what a batch, what state fits, how one observation's results come back).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, MissingMethodError, dispatch
from stagerl.core.policy import Policy
from trajectories.nested import is_leaf_spec

__all__ = ["compute_actions", "ComputedActions", "as_batch", "as_batch_of_spec", "one_or_batch",
           "checked_state", "no_state", "acting_as"]


class ComputedActions(NamedTuple):
    """What :func:`compute_actions` returns; it unpacks as ``actions, state, extra``.

    Attributes:
        actions: one action for one observation, an array of them for a batch.
        state: the recurrent state after these observations (what goes in as ``state`` with
            the next ones); ``None`` for a policy without memory.
        extra: name -> the extra per-step data (one value, or one per observation):
            ``log_prob`` and ``value`` for actor-critics, ``q_values`` for Q-learners, ...
    """

    actions: Any
    state: Any
    extra: dict


@dispatch.abstract
def _compute_actions(*args):
    """The methods of :func:`compute_actions` (all four arguments are given)."""


def compute_actions(policy: Any, observations: Any, state: Any = None,
                    deterministic: bool = False) -> ComputedActions:
    """The actions ``policy`` takes for ``observations`` (one, or a batch with a leading axis),
    from the recurrent ``state`` (``None``: the policy's initial state; memoryless policies
    take ``None`` only), without an env.

    With ``deterministic=True`` the policy's deterministic choice (greedy, the mean) and
    nothing is drawn from its rngs; otherwise it draws from its rngs as ``plan`` does, but
    counts no env step. An Agent answers for its policy. Extend it for a policy of your own
    with ``@stagerl.compute_actions.dispatch`` (see ``docs/recurrent.md``).

    Example:
        >>> import numpy as np, gymnasium, stagerl as rl
        >>> policy = rl.RandomPolicy(gymnasium.spaces.Discrete(3), rng=0)
        >>> actions, state, extra = rl.compute_actions(policy, [np.zeros(4), np.ones(4)])
        >>> actions.shape, state, extra
        ((2,), None, {})
    """
    if not isinstance(deterministic, (bool, np.bool_)):
        raise TypeError(f"compute_actions: deterministic must be True or False, got "
                        f"deterministic={deterministic!r}")
    return _compute_actions(policy, observations, state, bool(deterministic))


compute_actions.dispatch = _compute_actions.dispatch  # @stagerl.compute_actions.dispatch
compute_actions.function = _compute_actions  # the plum function (its methods)


@_compute_actions.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_actions_missing(policy: Policy, observations, state, deterministic):
    name = type(policy).__name__
    raise MissingMethodError(
        f"no compute_actions(...) method for {name}; define one with "
        f"@stagerl.compute_actions.dispatch, e.g.\n"
        f"    @stagerl.compute_actions.dispatch\n"
        f"    def compute_actions(policy: {name}, observations, state, deterministic):\n"
        f"        return stagerl.ComputedActions(actions, None, {{}})  # one per observation")


@_compute_actions.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_actions_not_a_policy(policy, observations, state, deterministic):
    raise TypeError(f"compute_actions(policy, observations) needs a stagerl policy, got "
                    f"{policy!r} of type {type(policy).__name__}")


def as_batch(observations: Any, frame_shape: tuple | None, who: str) -> tuple[np.ndarray, bool]:
    """``(batch, single)``: the observations with a leading batch axis, and whether one
    observation was given.

    With the policy's ``frame_shape`` (one observation's shape) an array of that shape is one
    observation and one of ``(n, *frame_shape)`` a batch of ``n``; anything else raises
    ``ValueError`` naming both shapes. Without it (a policy that never reads the observations)
    a list or tuple is a batch (one entry per observation) and anything else one observation.

    Example:
        >>> batch, single = as_batch(np.zeros(4), (4,), "DQNPolicy")
        >>> batch.shape, single
        ((1, 4), True)
        >>> as_batch(np.zeros((2, 3)), (4,), "DQNPolicy")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: DQNPolicy takes one observation of shape (4,) or a batch ..., got ... (2, 3)
    """
    if frame_shape is None:
        if isinstance(observations, (list, tuple)):
            if not observations:
                raise ValueError(f"{who}: compute_actions got an empty batch of observations")
            return np.asarray(observations), False
        return np.asarray(observations)[np.newaxis], True
    array = np.asarray(observations)
    frame = tuple(frame_shape)
    if array.shape == frame:
        return array[np.newaxis], True
    if array.ndim == len(frame) + 1 and array.shape[1:] == frame and array.shape[0] > 0:
        return array, False
    batch = f"(n, {', '.join(map(str, frame))})" if frame else "(n,)"
    raise ValueError(f"{who} takes one observation of shape {frame} or a batch of shape "
                     f"{batch}, got an array of shape {array.shape}")


def as_batch_of_spec(observations: Any, spec: Any, who: str) -> tuple[Any, bool]:
    """:func:`as_batch` for observations stored as ``spec`` (a ``(dtype, shape)`` pair, or for
    ``Dict`` and ``Tuple`` observations a dict or tuple of them, as
    ``stagerl.algorithms.extractors.observation_spec`` gives): leaf by leaf, in the spec's
    dtypes. A dict observation has the spec's keys, a tuple its length; every leaf holds one
    observation, or a batch of the same size.

    Example:
        >>> spec = {"pos": (np.float32, (2,)), "n": (np.int64, ())}
        >>> batch, single = as_batch_of_spec({"pos": [0.0, 1.0], "n": 2}, spec, "PPOPolicy")
        >>> batch["pos"].shape, batch["n"], single
        ((1, 2), array([2]), True)
        >>> as_batch_of_spec({"pos": np.zeros((3, 2)), "n": [0, 1]}, spec, "PPOPolicy")
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: PPOPolicy: every part of ... the same size, got sizes {'pos': 3, 'n': 2}
    """
    sizes: dict = {}
    batch = _batch_of_spec(observations, spec, who, "", sizes)
    if len({(single, n) for single, n in sizes.values()}) > 1:
        shown = {path.strip("[]'") if path.count("[") == 1 else path: 1 if single else n
                 for path, (single, n) in sizes.items()}
        raise ValueError(f"{who}: every part of a dict or tuple observation holds one "
                         f"observation or a batch of the same size, got sizes {shown}")
    return batch, next(iter(sizes.values()))[0]


def _batch_of_spec(observations: Any, spec: Any, who: str, path: str, sizes: dict) -> Any:
    if isinstance(spec, Mapping):
        if not isinstance(observations, Mapping) or set(observations) != set(spec):
            got = sorted(observations) if isinstance(observations, Mapping) else \
                type(observations).__name__
            raise ValueError(f"{who} takes observations{path} as a dict with the keys "
                             f"{sorted(spec)} (one array per key), got {got}")
        return {key: _batch_of_spec(observations[key], sub, who, f"{path}[{key!r}]", sizes)
                for key, sub in spec.items()}
    if not is_leaf_spec(spec):  # a tuple of specs
        if not isinstance(observations, tuple) or len(observations) != len(spec):
            raise ValueError(f"{who} takes observations{path} as a tuple of {len(spec)} "
                             f"arrays, got {type(observations).__name__}")
        return tuple(_batch_of_spec(obs, sub, who, f"{path}[{i}]", sizes)
                     for i, (obs, sub) in enumerate(zip(observations, spec, strict=True)))
    dtype, shape = spec
    batch, single = as_batch(observations, tuple(shape), f"{who}{' ' + path if path else ''}")
    sizes[path] = (single, len(batch))
    return np.asarray(batch, dtype=dtype)


def one_or_batch(actions: Any, state: Any, extra: dict, single: bool) -> ComputedActions:
    """The results for a batch as :class:`ComputedActions`, or for its one observation
    (``single``): the first action (a Python number for a scalar action), state row and extra
    values."""
    if not single:
        return ComputedActions(actions, state, extra)
    action = actions[0]
    if isinstance(action, np.generic):
        action = action.item()
    return ComputedActions(action, None if state is None else state[0],
                           {name: value[0] for name, value in extra.items()})


def no_state(policy: Any, state: Any) -> None:
    """``ValueError`` when a memoryless ``policy`` is given a recurrent state."""
    if state is not None:
        raise ValueError(f"{type(policy).__name__} keeps no state between steps; call "
                         f"compute_actions without state (or state=None), got a "
                         f"{type(state).__name__}")


def checked_state(who: str, state: Any, state_shape: tuple, n: int, single: bool,
                  initial: Any) -> np.ndarray:
    """The recurrent state for ``n`` observations as a float32 ``(n, *state_shape)`` array:
    ``initial`` (a callable ``n -> array``) for ``None``; for one observation a state of
    ``state_shape`` (or ``(1, *state_shape)``); for a batch ``(n, *state_shape)``. Anything
    else (a wrong shape, another batch size, NaN) raises ``ValueError`` naming the shapes."""
    if state is None:
        return initial(n)
    array = np.asarray(state, dtype=np.float32)
    shape = tuple(state_shape)
    if single and array.shape == shape:
        array = array[np.newaxis]
    if array.shape != (n, *shape):
        wanted = f"{shape}" if single else f"({n}, {', '.join(map(str, shape))})"
        raise ValueError(
            f"{who}: the state for {'one observation' if single else f'{n} observations'} "
            f"has shape {wanted} (one state of shape {shape} per observation), got shape "
            f"{array.shape}; pass the state compute_actions returned with the previous "
            f"observations, or state=None at an episode's start")
    if not np.isfinite(array).all():
        raise ValueError(f"{who}: the state holds NaN or infinite values; pass the state "
                         "compute_actions returned, or state=None at an episode's start")
    return array


@contextmanager
def acting_as(policy: Any, deterministic: bool) -> Iterator[Any]:
    """Within the block ``policy.deterministic`` is ``deterministic`` (for the methods that
    read it); it is what it was after."""
    before = policy.__dict__.get("deterministic", _UNSET)
    policy.deterministic = deterministic
    try:
        yield policy
    finally:
        if before is _UNSET:
            del policy.deterministic
        else:
            policy.deterministic = before


_UNSET = object()
