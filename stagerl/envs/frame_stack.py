"""FrameStacker: the last ``k`` frames of each sub-env, for a policy that acts on stacked frames.

Pixel envs (``stagerl.envs.atari``) hand out one frame per step and the trajectory stores each
frame once; the sampler stacks ``k`` frames of one episode at sample time
(``NStepBatchSampler(stack_size=k)``). Acting needs the same stack *now*: a policy keeps a
:class:`FrameStacker` and asks it for the stack of the frame it is about to act on. The stack it
returns for a sub-env holds that sub-env's last ``k`` frames of its current episode, oldest first,
which is exactly the window the sampler takes for the same row. It never mixes sub-envs or
episodes: at an episode's first frame the stack is that frame ``k`` times (the sampler never draws
these padded stacks: it only draws rows with ``k`` frames of their own episode behind them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stagerl.core.env import VectorEnv

__all__ = ["FrameStacker"]


class FrameStacker:
    """The last ``num_frames`` frames of each sub-env, refilled at every episode start.

    :meth:`push` takes a batch of frames (one per sub-env) and, per sub-env, whether the frame is
    the first of an episode; it returns the stacks, shape ``(num_envs, num_frames, *frame)``,
    oldest frame first. :meth:`observe` does the same from an env: a
    :class:`~stagerl.core.env.VectorEnv` says which sub-envs start an episode
    (``env.episode_start``); a single env's frame gets no sub-env axis, and its episode starts
    where :meth:`start` was called (a policy calls it at PreEpisode). Call ``push`` or ``observe``
    once per act.

    Args:
        num_frames: the frames per stack (4 for Atari).

    Example:
        >>> import numpy as np
        >>> stacker = FrameStacker(3)
        >>> stacker.push(np.array([[1], [5]]), np.array([True, True]))[..., 0].tolist()
        [[1, 1, 1], [5, 5, 5]]
        >>> stacker.push(np.array([[2], [6]]), np.array([False, False]))[..., 0].tolist()
        [[1, 1, 2], [5, 5, 6]]
        >>> stacker.push(np.array([[3], [9]]), np.array([False, True]))[..., 0].tolist()
        [[1, 2, 3], [9, 9, 9]]
    """

    def __init__(self, num_frames: int = 4) -> None:
        if isinstance(num_frames, bool) or not isinstance(num_frames, (int, np.integer)):
            raise TypeError(f"FrameStacker: num_frames must be a positive int, got "
                            f"num_frames={num_frames!r}")
        if num_frames < 1:
            raise ValueError(f"FrameStacker: num_frames must be a positive int, got "
                             f"num_frames={num_frames}")
        self.num_frames = int(num_frames)
        self.frames: np.ndarray | None = None  # (num_envs, num_frames, *frame), oldest first
        self._single_starts = True

    def start(self) -> None:
        """Forget every stack: the next frame of each sub-env starts an episode."""
        self.frames = None
        self._single_starts = True

    def push(self, frames: Any, episode_start: Any) -> np.ndarray:
        """Add one frame per sub-env; the stacks ending at them (a new array).

        Args:
            frames: shape ``(num_envs, *frame)``.
            episode_start: per sub-env, the frame is the first of an episode (bools, shape
                ``(num_envs,)``; a single bool for all).
        """
        frames = np.asarray(frames)
        if frames.ndim < 1:
            raise ValueError(f"FrameStacker.push needs a batch of frames with a sub-env axis "
                             f"first, got an array of shape {frames.shape}")
        n = frames.shape[0]
        starts = np.broadcast_to(np.asarray(episode_start, dtype=bool), (n,))
        stacks = self.frames
        if stacks is None or stacks.shape[0] != n or stacks.shape[2:] != frames.shape[1:]:
            stacks = self.frames = np.empty((n, self.num_frames) + frames.shape[1:], frames.dtype)
            starts = np.ones(n, dtype=bool)
        # Shift every stack by one frame, then refill those whose episode starts now.
        stacks[:, :-1] = stacks[:, 1:]
        stacks[:, -1] = frames
        if starts.any():
            stacks[starts] = frames[starts][:, None]
        return stacks.copy()

    def observe(self, env: Any) -> np.ndarray:
        """The stacks ending at ``env.state``: ``(num_envs, k, *frame)`` for a vector env,
        ``(k, *frame)`` for a single env (whose episode starts after :meth:`start`)."""
        if isinstance(env, VectorEnv):
            return self.push(env.state, env.episode_start)
        starts, self._single_starts = self._single_starts, False
        return self.push(np.asarray(env.state)[None], starts)[0]

    def __repr__(self) -> str:
        return f"FrameStacker(num_frames={self.num_frames})"
