"""Lanes: the episodes of each sub-env of a vector env kept apart, seen as one container.

`lane_storage(traces, n_lanes)` (``factory``; what `trajectories.split_lanes` calls for
traces) builds the storage that suits the traces: lane-major rings (`RingLanes`) when
`ring_layout` holds, else one `EpisodesBuffer` per lane (`PerLaneEpisodes`); both implement the
`LanedEpisodesBuffer` interface. The modules import downward only: ``base`` (the interface),
``ring_reads`` and ``ring_edits`` (functions over the rings), ``rings`` and ``per_lane`` (the
storages), ``factory``, then this package (re-exports only). See ``docs/trajectories.md``
(Lanes).
"""

from trajectories.lanes.base import LanedEpisodesBuffer
from trajectories.lanes.factory import lane_storage, ring_layout
from trajectories.lanes.per_lane import PerLaneEpisodes
from trajectories.lanes.rings import RingLanes

__all__ = ["LanedEpisodesBuffer", "PerLaneEpisodes", "RingLanes", "lane_storage", "ring_layout"]
