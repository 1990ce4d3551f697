"""Which laned storage suits which traces: `lane_storage(traces, n_lanes)` and `ring_layout`.

`trajectories.split_lanes(traces, n)` calls `lane_storage`; this is the only place that
chooses between the two storages of the `LanedEpisodesBuffer` interface.
"""

from __future__ import annotations

import math

import numpy as np

from trajectories.episodes import EpisodesBuffer
from trajectories.lanes.base import _NO_ROWS, LanedEpisodesBuffer
from trajectories.lanes.per_lane import PerLaneEpisodes
from trajectories.lanes.rings import RingLanes
from trajectories.traces import Traces

__all__ = ["lane_storage", "ring_layout"]


def lane_storage(traces, n_lanes: int) -> LanedEpisodesBuffer:
    """Empty storage for ``n_lanes`` lanes of the layout of ``traces`` (empty traces, or an
    empty `EpisodesBuffer`): `RingLanes` when `ring_layout` holds, else `PerLaneEpisodes`.

    Example:
        >>> from trajectories import CircularArraySARTSATraces, CircularArraySARTSTraces
        >>> type(lane_storage(CircularArraySARTSTraces(capacity=8), 2)).__name__
        'RingLanes'
        >>> type(lane_storage(CircularArraySARTSATraces(capacity=8), 2)).__name__
        'PerLaneEpisodes'
    """
    storage = RingLanes if ring_layout(traces) else PerLaneEpisodes
    return storage(traces, n_lanes)


def ring_layout(traces) -> bool:
    """Whether ``traces`` suit `RingLanes`: plain `Traces` of rings (no wrapper), one state
    multiplex, every other slot a plain trace, every dtype known."""
    if isinstance(traces, EpisodesBuffer):
        traces = traces.traces
    if not isinstance(traces, Traces) or any(
            getattr(type(traces), name) is not getattr(Traces, name)
            for name in ("push", "pad", "write_function")):
        return False
    if not math.isfinite(traces.capacity) or len(traces):
        return False
    mux = [s for s in traces.slots if len(s) == 2]
    if len(mux) != 1 or mux[0][1] == "next_action" or any(len(s) > 2 for s in traces.slots):
        return False
    return all(_known_array(traces.take(name, _NO_ROWS)) for name in traces.keys())


def _known_array(ref) -> bool:
    """A plain array trace whose dtype is known (nested traces go to `PerLaneEpisodes`)."""
    return isinstance(ref, np.ndarray) and ref.dtype != object
