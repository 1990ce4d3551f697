"""trajectories: experience storage for reinforcement learning.

Circular-buffer traces, episode bookkeeping, an insert/sample-ratio controller and batch
samplers, in numpy (torch only where a sampler is given a device). Re-exports only.
"""

from trajectories._casting import CastError, TraceKeyError
from trajectories.buffers import CircularArrayBuffer, ElasticArrayBuffer
from trajectories.controllers import EpisodeSampleRatioController, InsertSampleRatioController
from trajectories.episodes import EpisodesBuffer
from trajectories.lanes.base import LanedEpisodesBuffer
from trajectories.normalization import NormalizedTraces, Normalizer
from trajectories.presets import (
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    CircularArraySLARTTraces,
    ElasticArraySARTSATraces,
    ElasticArraySARTSTraces,
)
from trajectories.prioritized import CircularPrioritizedTraces, SumTree
from trajectories.samplers import (
    BatchSampler,
    DummySampler,
    EpisodesSampler,
    MetaSampler,
    MultiBatchSampler,
    NStepBatchSampler,
)
from trajectories.sequences import (
    STATE_TRACE,
    RolloutChunker,
    SequenceSampler,
    chop_into_sequences,
)
from trajectories.trace import Trace
from trajectories.traces import MultiplexTraces, Traces
from trajectories.trajectory import Trajectory, split_lanes

__all__: list[str] = [
    "CastError",
    "TraceKeyError",
    "CircularArrayBuffer",
    "ElasticArrayBuffer",
    "Trace",
    "Traces",
    "MultiplexTraces",
    "CircularArraySARTSTraces",
    "CircularArraySARTSATraces",
    "CircularArraySLARTTraces",
    "ElasticArraySARTSTraces",
    "ElasticArraySARTSATraces",
    "EpisodesBuffer",
    "LanedEpisodesBuffer",
    "split_lanes",
    "InsertSampleRatioController",
    "EpisodeSampleRatioController",
    "Trajectory",
    "SumTree",
    "CircularPrioritizedTraces",
    "Normalizer",
    "NormalizedTraces",
    "DummySampler",
    "BatchSampler",
    "MetaSampler",
    "MultiBatchSampler",
    "NStepBatchSampler",
    "EpisodesSampler",
    "SequenceSampler",
    "RolloutChunker",
    "chop_into_sequences",
    "STATE_TRACE",
]
