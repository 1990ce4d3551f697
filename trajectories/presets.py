"""Ready-made layouts: SARTS, SARTSA and SLART traces on rings or unbounded arrays.

Each trace is given as ``name=(dtype, shape)``, or ``env=`` gives the state and action frames
(see `spaces_of`). A dict or tuple of such pairs (what ``env=`` derives from a ``Dict`` or
``Tuple`` space) stores one ring per leaf and reads back with the same nesting (see
`trajectories.nested`). States (and, with SARTSA/SLART, actions and legal-action masks) are
multiplexed, so their buffers hold more frames than the rows::

    CircularArraySARTSTraces(capacity=3), full:

    state buffer (capacity + 1)   s0 s1 s2 s3
    action, reward, terminal      a0 a1 a2          row i = (s_i, s_{i+1}, a_i, r_i, t_i)

A SARTSA row also needs the action taken at its next state, which arrives one push later (or,
for an episode's last row, with ``push(next_action=...)``). So that ``capacity`` complete rows
fit, the rings hold one more frame: states ``capacity + 2``, actions, rewards and terminals
``capacity + 1``; the extra row is the one still waiting for its next action::

    CircularArraySARTSATraces(capacity=2), full, mid-episode:

    state buffer (4)    s0 s1 s2 s3
    action buffer (3)   a0 a1 a2           rows 0, 1 complete (next_action a1, a2);
    reward (3)          r0 r1 r2           row 2 waits for a3: len == 2 == capacity

Each preset takes ``extra={"name": (dtype, shape), ...}``: more plain traces (a
log-probability, a value estimate, ``truncated``), sized like the preset's other plain traces so
that rows stay aligned. ``preset + Traces(...)`` appends any traces as they are (rings of the
plain traces' size: ``capacity``, or ``capacity + 1`` in SARTSA and SLART layouts).

Details in ``docs/trajectories.md`` (Traces, Multiplex).
"""

from __future__ import annotations

import numpy as np

from trajectories._casting import as_shape
from trajectories.buffers import CircularArrayBuffer, ElasticArrayBuffer, _dtype
from trajectories.checks import require_positive_int
from trajectories.nested import build_buffer, is_nested_spec
from trajectories.traces import Traces

__all__ = ["CircularArraySARTSTraces", "CircularArraySARTSATraces", "CircularArraySLARTTraces",
           "ElasticArraySARTSTraces", "ElasticArraySARTSATraces", "spaces_of", "frame_of_space"]


# -- frames from an env's spaces (recognised by their attributes: no gymnasium import) ----------
def frame_of_space(space, what: str = "space") -> tuple:
    """The ``(dtype, shape)`` of one value of ``space``: ``Discrete`` -> int64 scalar, ``Box`` ->
    its shape and dtype, ``MultiDiscrete`` -> int64 of its shape, ``MultiBinary`` -> int8 of its
    shape (what gymnasium's MultiBinary samples and returns); ``Dict`` and ``Tuple`` -> a dict or
    tuple of their spaces' frames (one buffer per leaf, see `trajectories.nested`).

    Example:
        >>> import gymnasium
        >>> frame_of_space(gymnasium.spaces.Box(-1.0, 1.0, (4,)))
        (dtype('float32'), (4,))
        >>> frame_of_space(gymnasium.spaces.Discrete(3))
        (dtype('int64'), ())
        >>> frame_of_space(gymnasium.spaces.Dict(n=gymnasium.spaces.Discrete(3)))
        {'n': (dtype('int64'), ())}
    """
    spaces = getattr(space, "spaces", None)
    if isinstance(spaces, dict):  # Dict
        return {key: frame_of_space(sub, f"{what}[{key!r}]") for key, sub in spaces.items()}
    if isinstance(spaces, tuple):  # Tuple
        return tuple(frame_of_space(sub, f"{what}[{i}]") for i, sub in enumerate(spaces))
    shape = getattr(space, "shape", None)
    if hasattr(space, "nvec"):  # MultiDiscrete
        return np.dtype(np.int64), as_shape(shape)
    if hasattr(space, "low") and hasattr(space, "high") and hasattr(space, "dtype"):  # Box
        return np.dtype(space.dtype), as_shape(shape)
    if hasattr(space, "n") and hasattr(space, "start") and shape == ():  # Discrete
        return np.dtype(np.int64), ()
    if hasattr(space, "n") and shape is not None:  # MultiBinary
        return np.dtype(np.int8), as_shape(shape)
    raise TypeError(f"cannot derive the frames of the {what} from {space!r}: only Discrete, Box, "
                    f"MultiDiscrete, MultiBinary, Dict and Tuple spaces are known; declare the "
                    f"trace instead, e.g. state=(np.float32, (4,))")


def _space(env, names: tuple):
    for name in names:
        try:
            space = getattr(env, name)
        except (AttributeError, NotImplementedError):
            continue
        if space is not None:
            return space
    return None


def spaces_of(env) -> dict:
    """``{"state": (dtype, shape), "action": (dtype, shape)}`` from one sub-env's spaces of
    ``env``: a stagerl or gymnasium env, single or vector (``single_state_space`` or
    ``single_observation_space`` and ``single_action_space`` when it has them, else
    ``state_space`` or ``observation_space`` and ``action_space``)."""
    action = _action_space(env)  # checks that both spaces are there
    return {"state": frame_of_space(_space(env, _STATE_SPACES), "state space"),
            "action": frame_of_space(action, "action space")}


_STATE_SPACES = ("single_state_space", "single_observation_space", "state_space",
                 "observation_space")


def _action_space(env):
    action = _space(env, ("single_action_space", "action_space"))
    state = _space(env, _STATE_SPACES)
    if state is None or action is None:
        raise TypeError(f"env= needs an env with a state (or observation) space and an action "
                        f"space, got {type(env).__name__}")
    return action


def _specs(env, state, action, **others) -> dict:
    """The ``(dtype, shape)`` of every trace: what was given, else from ``env``, else the
    defaults (int64 scalars for state and action)."""
    derived = spaces_of(env) if env is not None else {}
    default = (np.int64, ())
    specs = {"state": state if state is not None else derived.get("state", default),
             "action": action if action is not None else derived.get("action", default)}
    for name, spec in others.items():
        specs[name] = spec
    return {name: _spec(name, spec) for name, spec in specs.items()}


def _spec(name, spec):
    if is_nested_spec(spec):  # a dict or tuple of specs: one buffer per leaf
        if isinstance(spec, dict):
            return {k: _spec(f"{name}.{k}", v) for k, v in spec.items()}
        return tuple(_spec(f"{name}.{i}", v) for i, v in enumerate(spec))
    try:
        dtype, shape = spec
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a (dtype, shape) pair such as (np.float32, (4,)), "
                        f"got {name}={spec!r}") from e
    return _dtype(dtype), as_shape(shape)


def _extra_specs(extra) -> dict:
    """``extra`` checked: a mapping of new trace names to ``(dtype, shape)`` pairs."""
    if extra is None:
        return {}
    if not isinstance(extra, dict):
        raise TypeError(f"extra must be a dict of trace name -> (dtype, shape), such as "
                        f"extra={{'log_prob': (np.float32, ())}}, got extra={extra!r}")
    out = {}
    for name, spec in extra.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"extra trace names must be identifiers (they are push keywords), "
                            f"got {name!r}")
        out[name] = _spec(name, spec)
    return out


def _legal_mask_spec(env, given):
    if given is not None:
        return given
    if env is not None:
        space = _action_space(env)
        if hasattr(space, "n") and getattr(space, "shape", None) == ():
            return (np.bool_, (int(space.n),))
    return (np.bool_, ())


# -- layouts ------------------------------------------------------------------------------------
_SS = ("state", "next_state")
_AA = ("action", "next_action")
_LL = ("legal_actions_mask", "next_legal_actions_mask")


def _layout(traces, specs, multiplexed, plain, make, extra=None):
    """Fill ``traces`` with multiplexed pairs first, then plain traces, then the ``extra`` plain
    traces (sized as the plain traces: ``make(plain[-1], spec)``); ``make(name, spec)`` builds
    each buffer (named by the slot's first name)."""
    slots = [((left, right), make(left, specs[left])) for left, right in multiplexed]
    slots += [((name,), make(name, specs[name])) for name in plain]
    for name, spec in _extra_specs(extra).items():
        buffer = make(plain[-1], spec)
        slots.append(((name,), buffer))
    traces._init_slots(slots)


def _rings(capacity, sizes: dict):
    """Ring buffers of ``capacity + sizes[name]`` frames (one per leaf of a nested spec)."""
    def make(name, spec):
        size = capacity + sizes.get(name, 0)
        return build_buffer(spec, lambda dtype, shape: CircularArrayBuffer(size, shape, dtype))
    return make


def _elastic(name, spec):
    return build_buffer(spec, lambda dtype, shape: ElasticArrayBuffer(shape, dtype))


class CircularArraySARTSTraces(Traces):
    """States multiplexed as state/next_state (``capacity + 1`` frames), and action, reward,
    terminal rings of ``capacity``.

    Args:
        capacity: the most transitions held.
        state, action, reward, terminal: ``(dtype, shape)`` of each trace; an explicit spec
            wins over ``env``. Without either, state and action are int64 scalars.
        env: an env (stagerl or gymnasium, single or vector) whose single-env spaces give the
            state and action frames (see `frame_of_space`).
        extra: more plain traces, ``{"name": (dtype, shape)}``, as rings of ``capacity``.
        legal_actions_mask: ``(dtype, shape)`` of each state's legal-action mask, stored
            multiplexed like the states (``legal_actions_mask`` / ``next_legal_actions_mask``,
            ``capacity + 1`` frames): what a max over the legal next actions (masked DQN)
            reads. ``True`` takes ``(np.bool_, (n,))`` from ``env``'s ``Discrete(n)`` actions;
            ``None`` (default): no mask.

    Example:
        >>> t = CircularArraySARTSTraces(capacity=2, state=(np.float32, (2,)))
        >>> t.keys(), t.capacity, len(t)
        (('state', 'next_state', 'action', 'reward', 'terminal'), 2, 0)
        >>> t.push(state=[0, 0]); t.push(state=[1, 1], action=1, reward=1.0, terminal=False)
        >>> t[0]["next_state"], t[0]["action"]
        (array([1., 1.], dtype=float32), np.int64(1))
        >>> import gymnasium
        >>> CircularArraySARTSTraces(100, env=gymnasium.make("CartPole-v1"))["state"].shape
        (0, 4)
        >>> CircularArraySARTSTraces(100, extra={"log_prob": (np.float32, ())}).keys()[-2:]
        ('terminal', 'log_prob')
        >>> CircularArraySARTSTraces(100, legal_actions_mask=(np.bool_, (9,))).slots[1]
        ('legal_actions_mask', 'next_legal_actions_mask')
    """

    def __init__(self, capacity: int, state=None, action=None, reward=(np.float32, ()),
                 terminal=(np.bool_, ()), *, env=None, extra=None, legal_actions_mask=None):
        capacity = require_positive_int(None, "capacity", capacity)
        if legal_actions_mask is None:
            specs = _specs(env, state, action, reward=reward, terminal=terminal)
            _layout(self, specs, [_SS], ["action", "reward", "terminal"],
                    _rings(capacity, {"state": 1}), extra)
            return
        mask = _legal_mask_spec(env, None if legal_actions_mask is True else legal_actions_mask)
        specs = _specs(env, state, action, reward=reward, terminal=terminal,
                       legal_actions_mask=mask)
        _layout(self, specs, [_SS, _LL], ["action", "reward", "terminal"],
                _rings(capacity, {"state": 1, "legal_actions_mask": 1}), extra)


class CircularArraySARTSATraces(Traces):
    """`CircularArraySARTSTraces` with actions multiplexed as action/next_action.

    ``capacity`` complete transitions fit, plus the newest row still waiting for its next
    action: states hold ``capacity + 2`` frames, actions, rewards and terminals
    ``capacity + 1``; ``len`` counts complete rows only.

    Example:
        >>> t = CircularArraySARTSATraces(capacity=1)
        >>> t.keys()
        ('state', 'next_state', 'action', 'next_action', 'reward', 'terminal')
        >>> t.push(state=0)
        >>> for s in (1, 2, 3):
        ...     t.push(state=s, action=10 + s, reward=1.0, terminal=False)
        >>> len(t), t.capacity, t[0]["state"], t[0]["next_action"]    # row 2 -> 3 waits
        (1, 1, np.int64(1), np.int64(13))
    """

    def __init__(self, capacity: int, state=None, action=None, reward=(np.float32, ()),
                 terminal=(np.bool_, ()), *, env=None, extra=None):
        capacity = require_positive_int(None, "capacity", capacity)
        specs = _specs(env, state, action, reward=reward, terminal=terminal)
        _layout(self, specs, [_SS, _AA], ["reward", "terminal"],
                _rings(capacity, {"state": 2, "action": 1, "reward": 1, "terminal": 1}), extra)


class CircularArraySLARTTraces(Traces):
    """States, legal-action masks and actions multiplexed, with reward and terminal rings;
    sized like `CircularArraySARTSATraces` (states and masks ``capacity + 2`` frames, the
    others ``capacity + 1``). With ``env=`` and a ``Discrete(n)`` action space the mask is
    ``(np.bool_, (n,))``.

    Example:
        >>> t = CircularArraySLARTTraces(capacity=8, legal_actions_mask=(np.bool_, (3,)))
        >>> t.slots[1], t.capacity
        (('legal_actions_mask', 'next_legal_actions_mask'), 8)
    """

    def __init__(self, capacity: int, state=None, legal_actions_mask=None, action=None,
                 reward=(np.float32, ()), terminal=(np.bool_, ()), *, env=None, extra=None):
        capacity = require_positive_int(None, "capacity", capacity)
        specs = _specs(env, state, action, reward=reward, terminal=terminal,
                       legal_actions_mask=_legal_mask_spec(env, legal_actions_mask))
        _layout(self, specs, [_SS, _LL, _AA], ["reward", "terminal"],
                _rings(capacity, {"state": 2, "legal_actions_mask": 2, "action": 1,
                                  "reward": 1, "terminal": 1}), extra)


class ElasticArraySARTSTraces(Traces):
    """The SARTS layout on unbounded buffers (no capacity).

    Example:
        >>> t = ElasticArraySARTSTraces(state=(np.float32, (4,)))
        >>> t.capacity, t.keys()[:2]
        (inf, ('state', 'next_state'))
    """

    def __init__(self, state=None, action=None, reward=(np.float32, ()),
                 terminal=(np.bool_, ()), *, env=None, extra=None):
        specs = _specs(env, state, action, reward=reward, terminal=terminal)
        _layout(self, specs, [_SS], ["action", "reward", "terminal"], _elastic, extra)


class ElasticArraySARTSATraces(Traces):
    """The SARTSA layout on unbounded buffers (no capacity; ``len`` counts complete rows).

    Example:
        >>> ElasticArraySARTSATraces().slots
        (('state', 'next_state'), ('action', 'next_action'), ('reward',), ('terminal',))
    """

    def __init__(self, state=None, action=None, reward=(np.float32, ()),
                 terminal=(np.bool_, ()), *, env=None, extra=None):
        specs = _specs(env, state, action, reward=reward, terminal=terminal)
        _layout(self, specs, [_SS, _AA], ["reward", "terminal"], _elastic, extra)
