"""Atari envs with the preprocessing RL-Zoo and SB3 train on: :func:`make_atari_env`.

Each step is 4 emulator frames (the last two max-pooled) seen as one 84×84 grey ``uint8`` frame;
a game starts with up to 30 random no-ops, and games that wait for FIRE get it. Training envs
(``training=True``) also end an episode at every lost life and clip rewards to their sign;
evaluation envs do neither. Frames are not stacked in the env: the trajectory stores each frame
once and stacks at sample time, and a policy acts on the stacks of a
:class:`~stagerl.envs.frame_stack.FrameStacker`.

The true game, for logging: every step's ``env.info`` carries ``game_return`` (the unclipped score
of the running game so far, every emulator frame's reward included) and ``game_over`` (this step
ended the game: no lives left, or the frame limit); on a vector env, one entry per sub-env. In
evaluation the env's episodes are games and each reward is what the score gained (the frames a
reset plays included), so ``env.reward`` and the episode ends tell the true scores already.

Two backends: ``"gymnasium"`` (``ale-py`` and gymnasium's ``AtariPreprocessing``, the
``atari`` extra) and ``"envpool"`` (EnvPool's C++ Atari, the ``envpool`` extra; see
:mod:`stagerl.envs.envpool` for where it differs).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

import gymnasium
import numpy as np

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, push
from stagerl.core.hooks_base import Hook
from stagerl.core.stages import PostActStage
from stagerl.envs.atari_wrappers import atari_game, wrap_atari
from stagerl.envs.gym import GymEnv
from stagerl.envs.vector import GymVectorEnv

__all__ = ["make_atari_env", "GameScores", "require_ale", "ATARI_INSTALL"]

ATARI_INSTALL = "pip install 'stagerl[atari]'  (ale-py>=0.9, which ships the ROMs, and opencv)"


def require_ale() -> None:
    """Import ale-py (and register its envs with gymnasium) and opencv, or say how to install
    them: ``ModuleNotFoundError`` naming the ``pip install``."""
    try:
        import ale_py
    except ImportError as error:
        raise ModuleNotFoundError(
            f"Atari envs need ale-py, which is not installed: {ATARI_INSTALL}") from error
    version = tuple(int(p) for p in re.findall(r"\d+", ale_py.__version__)[:2])
    if version < (0, 9):
        raise ModuleNotFoundError(
            f"ale-py {ale_py.__version__} does not ship the game ROMs; upgrade it: "
            f"pip install -U 'ale-py>=0.9'")
    try:
        import cv2  # noqa: F401  (gymnasium's AtariPreprocessing resizes with it)
    except ImportError as error:
        raise ModuleNotFoundError(
            f"Atari preprocessing needs opencv, which is not installed: {ATARI_INSTALL}"
        ) from error
    gymnasium.register_envs(ale_py)


def _make_one(env_id: str, training: bool, noop_max: int, frame_skip: int, screen_size: int,
              make_kwargs: dict) -> gymnasium.Env:
    """One preprocessed ALE env (a module-level function, so async vector envs can pickle it)."""
    require_ale()
    try:
        env = gymnasium.make(env_id, **{**make_kwargs, "frameskip": 1})
    except (gymnasium.error.NameNotFound, gymnasium.error.NamespaceNotFound) as error:
        raise ValueError(
            f"{env_id!r} is not an ALE game ({error}); ale-py>=0.9 ships every ROM of the ALE "
            f"(ale_py.roms.get_all_rom_ids() lists them): check the name, or {ATARI_INSTALL}"
        ) from error
    except (FileNotFoundError, NotADirectoryError) as error:
        raise FileNotFoundError(
            f"the ROM of {env_id!r} could not be loaded ({error}); ale-py>=0.9 ships the ROMs: "
            f"unset ALE_ROMS_DIR if it points elsewhere, or reinstall them with "
            f"pip install --force-reinstall 'ale-py>=0.9'") from error
    return wrap_atari(env, training=training, noop_max=noop_max, frame_skip=frame_skip,
                      screen_size=screen_size)


def make_atari_env(env_id: str = "PongNoFrameskip-v4", num_envs: int = 1, seed: int | None = None,
                   training: bool = True, *, backend: str = "gymnasium", vector: bool | None = None,
                   noop_max: int = 30, frame_skip: int = 4, screen_size: int = 84,
                   vectorization_mode: str = "sync", **make_kwargs: Any) -> GymEnv | GymVectorEnv:
    """An Atari game, preprocessed as RL-Zoo trains on it, as a stagerl env.

    Args:
        env_id: ``"PongNoFrameskip-v4"`` (no sticky actions, RL-Zoo's ids) or ``"ALE/Pong-v5"``
            (sticky actions with probability 0.25).
        num_envs: sub-envs; 1 gives a :class:`~stagerl.GymEnv` unless ``vector=True``, more
            a :class:`~stagerl.GymVectorEnv` (sub-env ``i`` seeded with ``seed + i``).
        seed: the seed of the first reset (the no-ops drawn, sticky actions) and action spaces.
        training: life loss ends episodes and rewards are clipped to their sign (for learning);
            ``False`` for evaluation: episodes are games and rewards the game's.
        backend: ``"gymnasium"`` or ``"envpool"`` (always a vector env).
        vector: a vector env even for one sub-env.
        noop_max, frame_skip, screen_size: the preprocessing (RL-Zoo's defaults).
        vectorization_mode: ``"sync"`` or ``"async"`` (gymnasium backend).
        **make_kwargs: passed to ``gymnasium.make`` (e.g. ``repeat_action_probability``,
            ``full_action_space``) or, with EnvPool, to ``envpool.make``.

    Raises:
        ModuleNotFoundError: the extra is not installed (the message names the ``pip install``).
        ValueError: not an Atari id, or a bad number.

    Example:
        >>> env = make_atari_env("BreakoutNoFrameskip-v4", num_envs=2, seed=0)  # doctest: +SKIP
        >>> env.reset(); env.state.shape, env.state.dtype  # doctest: +SKIP
        ((2, 84, 84), dtype('uint8'))
    """
    atari_game(env_id)
    for name, value, least in (("num_envs", num_envs, 1), ("noop_max", noop_max, 0),
                               ("frame_skip", frame_skip, 1), ("screen_size", screen_size, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"make_atari_env: {name} must be an int >= {least}, got "
                             f"{name}={value!r}")
    if backend == "envpool":
        from stagerl.envs.envpool import make_envpool_atari

        return make_envpool_atari(env_id, num_envs=num_envs, seed=seed, training=training,
                                  noop_max=noop_max, frame_skip=frame_skip,
                                  screen_size=screen_size, **make_kwargs)
    if backend != "gymnasium":
        raise ValueError(f"make_atari_env: backend must be 'gymnasium' or 'envpool', got "
                         f"backend={backend!r}")
    require_ale()
    make = functools.partial(_make_one, env_id, training, noop_max, frame_skip, screen_size,
                             make_kwargs)
    if num_envs == 1 and not vector:
        return GymEnv(make(), seed=seed)
    if vectorization_mode == "async":
        vector_env = gymnasium.vector.AsyncVectorEnv([make] * num_envs)
    elif vectorization_mode == "sync":
        vector_env = gymnasium.vector.SyncVectorEnv([make] * num_envs)
    else:
        raise ValueError(f"make_atari_env: vectorization_mode must be 'sync' or 'async', got "
                         f"vectorization_mode={vectorization_mode!r}")
    return GymVectorEnv(vector_env, seed=seed)


@dataclass
class GameScores(Hook):
    """The true score of every finished game, read from ``env.info`` after each act.

    Training envs end episodes at lost lives and clip rewards, so the per-episode hooks see
    lives and clipped sums; this hook sees games: ``scores`` (unclipped, in the order the games
    ended) and ``lanes`` (the sub-env of each; 0 on a single env). Any env whose info carries
    ``game_over`` and ``game_return`` works (both Atari backends do).

    Example:
        >>> import stagerl as rl
        >>> env = make_atari_env("PongNoFrameskip-v4", num_envs=2, seed=0)  # doctest: +SKIP
        >>> hook = rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNSteps(20_000, progress=False),
        ...               GameScores())  # doctest: +SKIP
        >>> min(hook.scores) >= -21  # doctest: +SKIP
        True
    """

    scores: list = field(default_factory=list)
    lanes: list = field(default_factory=list)

    def record(self, info: dict) -> None:
        over = info.get("game_over")
        if over is None:
            return
        if np.ndim(over):
            for lane in np.flatnonzero(over).tolist():
                self.scores.append(float(info["game_return"][lane]))
                self.lanes.append(lane)
        elif over:
            self.scores.append(float(info["game_return"]))
            self.lanes.append(0)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_game_scores_post_act(hook: GameScores, stage: PostActStage, policy, env):
    hook.record(getattr(env, "info", {}))
