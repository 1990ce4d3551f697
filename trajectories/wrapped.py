"""`WrappedTraces`: the base of traces that wrap other traces and add behaviour to them.

A wrapper keeps the wrapped traces in ``self.traces`` and forwards the parts of the traces
interface it leaves as they are: the push slots, the capacity and the length.
"""

from __future__ import annotations

__all__ = ["WrappedTraces"]


class WrappedTraces:
    """Base of `NormalizedTraces` and `CircularPrioritizedTraces`."""

    def __init__(self, traces) -> None:
        if not hasattr(traces, "keys") or not hasattr(traces, "slots"):
            raise TypeError(f"{type(self).__name__} wraps traces, got {type(traces).__name__}")
        self.traces = traces

    @property
    def slots(self):
        return self.traces.slots

    @property
    def capacity(self):
        return self.traces.capacity

    def __len__(self) -> int:
        return len(self.traces)
