"""Lanes: the episodes of each sub-env of a vector env kept apart, seen as one container.

`LanedEpisodesBuffer(traces, n_lanes)` builds the storage that suits the traces (lane-major
rings, or one `EpisodesBuffer` per lane); `split_lanes(trajectory, n)` makes a `Trajectory`
store lanes. The modules import downward only: ``base`` (the interface and the factory), then
``ring_edits`` and ``rings``, ``per_lane`` (the storages, which register themselves with the
factory), then ``trajectory`` (a `Trajectory` over lanes). See ``docs/trajectories.md`` (Lanes).
"""

from trajectories.lanes.base import LanedEpisodesBuffer
from trajectories.lanes.per_lane import PerLaneEpisodes
from trajectories.lanes.rings import RingLanes
from trajectories.lanes.trajectory import split_lanes

__all__ = ["LanedEpisodesBuffer", "PerLaneEpisodes", "RingLanes", "split_lanes"]
