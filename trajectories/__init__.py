"""trajectories: experience storage for reinforcement learning.

Circular-buffer traces, episode bookkeeping, an insert/sample-ratio controller and batch
samplers, in numpy (torch only where a sampler is given a device). Re-exports only.
"""

__all__: list[str] = []
