"""Ready-made layouts: SARTS, SARTSA and SLART traces on rings or unbounded arrays.

Each trace is given as ``name=(dtype, shape)``. States (and, with SARTSA/SLART, actions and
legal-action masks) are multiplexed, so their buffers hold one frame more than the rows::

    CircularArraySARTSTraces(capacity=3), full:

    state buffer (capacity + 1)   s0 s1 s2 s3
    action, reward, terminal      a0 a1 a2          row i = (s_i, s_{i+1}, a_i, r_i, t_i)
"""

from __future__ import annotations

import numpy as np

from trajectories._casting import as_shape
from trajectories.buffers import CircularArrayBuffer, ElasticArrayBuffer, _capacity, _dtype
from trajectories.traces import Traces

__all__ = ["CircularArraySARTSTraces", "CircularArraySARTSATraces", "CircularArraySLARTTraces",
           "ElasticArraySARTSTraces", "ElasticArraySARTSATraces"]


def _spec(name, spec):
    try:
        dtype, shape = spec
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a (dtype, shape) pair such as (np.float32, (4,)), "
                        f"got {name}={spec!r}") from e
    return _dtype(dtype), as_shape(shape)


def _ring(capacity):
    return lambda spec: CircularArrayBuffer(capacity, spec[1], spec[0])


def _elastic(spec):
    return ElasticArrayBuffer(spec[1], spec[0])


def _layout(traces, make_mux, make_plain, multiplexed, plain, specs):
    """Fill ``traces`` with multiplexed pairs first, then plain traces, in the order given."""
    specs = {name: _spec(name, spec) for name, spec in specs.items()}
    slots = [((left, right), make_mux(specs[left])) for left, right in multiplexed]
    slots += [((name,), make_plain(specs[name])) for name in plain]
    traces._init_slots(slots)


_SS = ("state", "next_state")
_AA = ("action", "next_action")
_LL = ("legal_actions_mask", "next_legal_actions_mask")


class CircularArraySARTSTraces(Traces):
    """States multiplexed as state/next_state (``capacity + 1`` frames), and action, reward,
    terminal rings of ``capacity``.

    Args:
        capacity: the most transitions held.
        state, action, reward, terminal: ``(dtype, shape)`` of each trace.

    Example:
        >>> t = CircularArraySARTSTraces(capacity=2, state=(np.float32, (2,)))
        >>> t.keys(), t.capacity, len(t)
        (('state', 'next_state', 'action', 'reward', 'terminal'), 2, 0)
        >>> t.push(state=[0, 0]); t.push(state=[1, 1], action=1, reward=1.0, terminal=False)
        >>> t[0]["next_state"], t[0]["action"]
        (array([1., 1.], dtype=float32), np.int64(1))
    """

    def __init__(self, capacity: int, state=(np.int64, ()), action=(np.int64, ()),
                 reward=(np.float32, ()), terminal=(np.bool_, ())):
        capacity = _capacity(capacity)
        _layout(self, _ring(capacity + 1), _ring(capacity), [_SS],
                ["action", "reward", "terminal"],
                dict(state=state, action=action, reward=reward, terminal=terminal))


class CircularArraySARTSATraces(Traces):
    """`CircularArraySARTSTraces` with actions multiplexed as action/next_action.

    Example:
        >>> t = CircularArraySARTSATraces(capacity=4)
        >>> t.keys()
        ('state', 'next_state', 'action', 'next_action', 'reward', 'terminal')
        >>> t.capacity
        4
    """

    def __init__(self, capacity: int, state=(np.int64, ()), action=(np.int64, ()),
                 reward=(np.float32, ()), terminal=(np.bool_, ())):
        capacity = _capacity(capacity)
        _layout(self, _ring(capacity + 1), _ring(capacity), [_SS, _AA], ["reward", "terminal"],
                dict(state=state, action=action, reward=reward, terminal=terminal))


class CircularArraySLARTTraces(Traces):
    """States, legal-action masks and actions multiplexed (``capacity + 1`` frames each), with
    reward and terminal rings of ``capacity``.

    Example:
        >>> t = CircularArraySLARTTraces(capacity=8, legal_actions_mask=(np.bool_, (3,)))
        >>> t.slots[1]
        ('legal_actions_mask', 'next_legal_actions_mask')
    """

    def __init__(self, capacity: int, state=(np.int64, ()), legal_actions_mask=(np.bool_, ()),
                 action=(np.int64, ()), reward=(np.float32, ()), terminal=(np.bool_, ())):
        capacity = _capacity(capacity)
        _layout(self, _ring(capacity + 1), _ring(capacity), [_SS, _LL, _AA],
                ["reward", "terminal"],
                dict(state=state, legal_actions_mask=legal_actions_mask, action=action,
                     reward=reward, terminal=terminal))


class ElasticArraySARTSTraces(Traces):
    """The SARTS layout on unbounded buffers (no capacity).

    Example:
        >>> t = ElasticArraySARTSTraces(state=(np.float32, (4,)))
        >>> t.capacity, t.keys()[:2]
        (inf, ('state', 'next_state'))
    """

    def __init__(self, state=(np.int64, ()), action=(np.int64, ()), reward=(np.float32, ()),
                 terminal=(np.bool_, ())):
        _layout(self, _elastic, _elastic, [_SS], ["action", "reward", "terminal"],
                dict(state=state, action=action, reward=reward, terminal=terminal))


class ElasticArraySARTSATraces(Traces):
    """The SARTSA layout on unbounded buffers (no capacity).

    Example:
        >>> ElasticArraySARTSATraces().slots
        (('state', 'next_state'), ('action', 'next_action'), ('reward',), ('terminal',))
    """

    def __init__(self, state=(np.int64, ()), action=(np.int64, ()), reward=(np.float32, ()),
                 terminal=(np.bool_, ())):
        _layout(self, _elastic, _elastic, [_SS, _AA], ["reward", "terminal"],
                dict(state=state, action=action, reward=reward, terminal=terminal))
