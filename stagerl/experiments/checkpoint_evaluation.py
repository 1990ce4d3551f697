"""Evaluating a saved run: the deterministic returns of a run's checkpoint, on the evaluation
env and seed of the run's own final evaluation, and a video of its first episode (``.gif`` with
Pillow, ``.mp4`` with imageio-ffmpeg)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from PIL import Image

import stagerl as rl
from stagerl.checkpoints import CheckpointError, find, load, read_manifest
from stagerl.experiments._resuming import checked_run_config
from stagerl.experiments.registry import EVAL_SEED_OFFSET, configure
from stagerl.experiments.registry import get_experiment as load_experiment
from stagerl.experiments.runner import make_eval_env
from stagerl.utils.devices import resolve_device

__all__ = ["evaluate_checkpoint", "VIDEO_SUFFIXES"]

#: The video formats :func:`evaluate_checkpoint` writes, by file suffix.
VIDEO_SUFFIXES = (".gif", ".mp4")
_INSTALL_VIDEO = "pip install 'stagerl[video]'"


def evaluate_checkpoint(path: str | Path, episodes: int = 20, *, video: str | Path | None = None,
                        seed: int | None = None, device: Any = "cpu") -> dict[str, Any]:
    """Evaluate the agent of a run's checkpoint for ``episodes`` deterministic episodes.

    ``path`` is a checkpoint directory (``<logdir>/checkpoints/step-N`` or ``.../best``), a
    directory of checkpoints, or a run's log directory; for the last two the newest ``step-N``
    is evaluated (never ``best``: name it to evaluate it). The experiment, its
    hyper-parameters and the run's seed come from the checkpoint's manifest; the evaluation env
    is the experiment's, seeded ``seed`` (default: the run's seed plus ``EVAL_SEED_OFFSET``, the
    seed of the run's final evaluation), so evaluating a finished run's last checkpoint on the
    device it trained on gives the ``eval_return_mean`` of its ``summary.json``.

    Args:
        path: a checkpoint, a directory of checkpoints or a log directory of ``stagerl run``.
        episodes: how many deterministic episodes.
        video: a ``.gif`` or ``.mp4`` (``pip install 'stagerl[video]'``) of the first episode:
            the frame after the reset and one per step, at the env's ``render_fps`` (else 30).
            The env must render ``rgb_array`` frames (all episodes run on it: same returns).
        seed: the evaluation env's seed; ``None`` for the run's final evaluation's seed.
        device: where the agent runs (``"cpu"``, ``"cuda"``, ``"auto"``, a ``torch.device``).

    Returns:
        ``{"checkpoint": str, "experiment": str, "env_steps": int, "seed": int,
        "episodes": int, "return_mean": float, "return_std": float (population),
        "returns": [float, ...], "video": str | None}``.

    Raises:
        ValueError: ``episodes`` below 1, no checkpoint at ``path``, a checkpoint no run wrote,
            a video suffix other than ``.gif``/``.mp4``, a video directory that does not exist,
            an env that cannot render ``rgb_array``, a manifest naming an env id that is neither
            the experiment's nor a registered gymnasium id (``module:`` prefixes are refused);
            all before anything is loaded or written. ``CheckpointError`` (a ``ValueError``)
            for a damaged or crafted checkpoint.
        ImportError: ``.mp4`` without imageio-ffmpeg, or a renderer without pygame.

    Example:
        >>> import tempfile
        >>> from stagerl.experiments import train
        >>> logdir = tempfile.mkdtemp() + "/run"
        >>> summary = train("tabular-q-random-walk", steps=1000, seed=1, logdir=logdir,
        ...                 progress=False, tensorboard=False)
        >>> result = evaluate_checkpoint(logdir)
        >>> result["env_steps"], result["return_mean"] == summary["eval_return_mean"]
        (1000, True)
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int):
        raise TypeError(f"episodes must be an int, got {episodes!r}")
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1, got episodes={episodes}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TypeError(f"seed must be an int or None (the run's evaluation seed), got {seed!r}")
    if seed is not None and seed < 0:
        raise ValueError(f"seed must be non-negative, got seed={seed}")
    device = resolve_device(device)
    video = _checked_video_path(video)
    checkpoint, info, manifest = _run_checkpoint(path)
    experiment = load_experiment(info["experiment"])
    config = configure(info["experiment"], **info["config"])
    if seed is None:
        seed = info["seed"] + EVAL_SEED_OFFSET
    if video is None:
        env, filming = make_eval_env(experiment, config, seed), None
    else:
        env = _rendering_env(experiment, config, seed, info["experiment"])
        writer = _Mp4Writer if video.suffix.lower() == ".mp4" else _GifWriter
        filming = _Filming(writer(video, float(env.env.metadata.get("render_fps") or 30)))
    agent = load(checkpoint, map_location=device)
    try:
        returns = _evaluate(agent, env, episodes, experiment.eval_max_episode_steps, filming)
    finally:
        getattr(env, "close", lambda: None)()
    summary = manifest.get("summary") or {}
    return {"checkpoint": str(checkpoint), "experiment": info["experiment"],
            "env_steps": summary.get("env_steps"), "seed": seed, "episodes": episodes,
            "return_mean": statistics.fmean(returns), "return_std": statistics.pstdev(returns),
            "returns": returns, "video": None if video is None else str(video)}


def _run_checkpoint(path: Any) -> tuple[Path, dict, dict]:
    """The checkpoint at ``path``, its run's info (experiment, seed, config) and its manifest."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path (a run's log directory or checkpoint), "
                        f"got {path!r}")
    try:
        checkpoint = find(path)
    except CheckpointError as error:
        raise ValueError(f"no checkpoint to evaluate at {path} ({error}); evaluating needs a "
                         "run's checkpoints, which `stagerl run NAME --logdir DIR` writes into "
                         "DIR/checkpoints") from None
    manifest = read_manifest(checkpoint)
    info = manifest.get("info")
    if manifest.get("kind") != "experiment" or not isinstance(info, dict) or not (
            isinstance(info.get("experiment"), str) and isinstance(info.get("config"), dict)
            and type(info.get("seed")) is int and info["seed"] >= 0):
        raise ValueError(f"{checkpoint} is not a checkpoint of a stagerl run (its manifest names "
                         "no experiment, seed and config); evaluating needs a run's checkpoint "
                         "(`stagerl run NAME --logdir DIR` writes them), or load this one with "
                         "stagerl.load and call rl.evaluate(policy, env, episodes)")
    # The manifest has no checksum of its own: what it names is checked before anything is
    # built from it (the evaluation env is made from its env id).
    info = {**info, "experiment": checked_run_config(info["experiment"], info["config"],
                                                     checkpoint)}
    return checkpoint, info, manifest


def _checked_video_path(video: Any) -> Path | None:
    if video is None:
        return None
    if not isinstance(video, (str, Path)):
        raise TypeError(f"video must be a file path ending in .gif or .mp4, got {video!r}")
    video = Path(video)
    if video.suffix.lower() not in VIDEO_SUFFIXES:
        raise ValueError(f"video {str(video)!r} must end in .gif or .mp4 (got the suffix "
                         f"{video.suffix!r}); e.g. --video run.gif")
    if not video.parent.is_dir():
        raise ValueError(f"cannot write the video {str(video)!r}: its directory "
                         f"{str(video.parent)!r} does not exist; create it first")
    if video.is_dir():
        raise ValueError(f"video {str(video)!r} is a directory; name a file in it")
    if video.suffix.lower() == ".mp4":
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError:
            raise ImportError(f"writing an .mp4 needs imageio-ffmpeg: {_INSTALL_VIDEO} (or write "
                              "a .gif, which needs nothing more)") from None
    return video


def _rendering_env(experiment: Any, config: Any, seed: int, name: str) -> Any:
    """The evaluation env, rendering ``rgb_array`` frames; refused if it cannot."""
    if experiment.make_eval_env is None:  # the default evaluation env, made to render
        env = rl.GymEnv(config.env_id, seed=seed, render_mode="rgb_array")
    else:
        env = experiment.make_eval_env(config, seed)
    if getattr(getattr(env, "env", None), "render_mode", None) != "rgb_array":
        getattr(env, "close", lambda: None)()
        raise ValueError(f"the evaluation env {env!r} of {name} cannot render rgb_array frames; "
                         "a video needs an env that renders rgb_array (a gymnasium env made "
                         "with render_mode='rgb_array')")
    if env.env.spec is not None:  # a renderer missing pygame fails at its first frame: on a
        probe = gymnasium.make(env.env.spec, render_mode="rgb_array")  # copy, before loading
        try:
            probe.reset(seed=0)
            probe.render()
        except gymnasium.error.DependencyNotInstalled as error:
            raise ImportError(f"rendering {env!r} needs pygame ({error}): {_INSTALL_VIDEO}"
                              ) from None
        finally:
            probe.close()
    return env


class _GifWriter:
    """Frames kept as palette images (a third of RGB's memory), written as one GIF at the end.
    Pillow merges a frame identical to the one before into it (its time is kept)."""

    def __init__(self, path: Path, fps: float) -> None:
        self.path, self.images = path, []
        self.duration_ms = max(2, round(100 / fps)) * 10  # GIF times are in hundredths

    def add(self, frame: np.ndarray) -> None:
        self.images.append(Image.fromarray(frame).convert("P", palette=Image.Palette.ADAPTIVE))

    def close(self) -> None:
        if self.images:
            first, *rest = self.images
            first.save(self.path, save_all=True, append_images=rest, loop=0,
                       duration=self.duration_ms, optimize=False)


class _Mp4Writer:
    """Frames streamed to ffmpeg (H.264, yuv420p) as they come: none is kept in memory."""

    def __init__(self, path: Path, fps: float) -> None:
        self.path, self.fps, self.stream = path, fps, None

    def add(self, frame: np.ndarray) -> None:
        import imageio_ffmpeg

        # yuv420p needs even sides: repeat the last row or column of an odd one
        frame = np.pad(frame, ((0, frame.shape[0] % 2), (0, frame.shape[1] % 2), (0, 0)),
                       mode="edge")
        if self.stream is None:
            self.stream = imageio_ffmpeg.write_frames(
                str(self.path), (frame.shape[1], frame.shape[0]), fps=self.fps,
                macro_block_size=1, ffmpeg_log_level="error")
            self.stream.send(None)
        self.stream.send(np.ascontiguousarray(frame))

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


class _Filming(rl.Hook):
    """Hands the env's frame after the reset and after every step to a video writer."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer

    def film(self, env: Any) -> None:
        frame = np.asarray(env.render(), dtype=np.uint8)
        if frame.ndim != 3 or frame.shape[2] != 3:
            raise ValueError(f"{env!r} rendered a frame of shape {frame.shape}; a video needs "
                             "rgb_array frames of shape (height, width, 3)")
        self.writer.add(frame)


@rl.push.dispatch(precedence=-1)
def _(hook: _Filming, stage: rl.PreEpisodeStage | rl.PostActStage, policy: object, env: object):
    hook.film(env)


def _evaluate(agent: Any, env: Any, episodes: int, max_steps: int | None,
              filming: _Filming | None) -> list[float]:
    """``rl.evaluate``'s returns; with ``filming``, its first episode is run here, filmed."""
    if filming is None:
        return rl.evaluate(agent, env, episodes, max_steps)
    try:
        with rl.deterministic(agent) as acting:  # what rl.evaluate does for one episode
            stop: Any = rl.StopAfterNEpisodes(1, progress=False)
            if max_steps is not None:
                stop = rl.StopIfAny(stop, rl.StopAfterNSteps(max_steps, progress=False))
            first = rl.TotalRewardPerEpisode()
            rl.Experiment(acting, env, stop, first + filming, check_methods=False).run()
    finally:
        filming.writer.close()
    rest = rl.evaluate(agent, env, episodes - 1, max_steps) if episodes > 1 else []
    return [float(first.rewards[-1]), *rest]
