"""EnvPool, a C++ vector env, behind :class:`~stagerl.GymVectorEnv`'s interface.

:func:`make_envpool_env` (any EnvPool task) and ``make_atari_env(..., backend="envpool")`` return
a ``GymVectorEnv`` around an :class:`EnvPoolVectorEnv`, so the Agent, the hooks and the loop see
exactly what they see with gymnasium's vector envs: one rule for autoresets, in ``GymVectorEnv``.

How EnvPool compares with gymnasium's ``NEXT_STEP`` autoreset (what the bridge does):

* Same: the step after a sub-env's episode end only resets it; its action is ignored, its reward
  is 0 and its flags are False (``GymVectorEnv`` marks the lane ``episode_start``, not a step).
* Time limits: EnvPool's own limit reports ``truncated`` and hides a termination at the same
  step (its ``terminated`` is ``done & ~truncated``), so a transition into a terminal state would
  be bootstrapped. The bridge keeps EnvPool's limit out of reach and applies the task's limit
  itself (``max_episode_steps``, EnvPool's default for the task unless given): a lane that hits
  it is truncated, and terminated too when the step also ended the episode, as gymnasium's
  ``TimeLimit`` reports it; the next act resets that lane alone (its action ignored), as
  EnvPool's own autoreset would.
* Seeds: EnvPool seeds its sub-envs when it is made; ``reset(seed=...)`` with another seed is
  refused (build a new env), the same seed is accepted.
* Observations: Atari frames come as ``(84, 84)`` (EnvPool's ``(1, 84, 84)`` without its stack
  axis); actions are cast to the dtype EnvPool wants.
* Atari: EnvPool's own preprocessing (no-ops, frame skip with max-pooling, grey 84×84,
  episodic life, reward clipping, FIRE at reset) with the same settings; its time limit counts
  agent steps (27,000 = 108,000 frames) where the ALE counts frames, and in evaluation it does
  not press FIRE after a lost life. ``info["game_return"]`` and ``info["game_over"]`` are summed
  here from EnvPool's unclipped ``info["reward"]`` and its ``info["terminated"]`` (the true game
  over) or truncation.
* Checkpoints: the sub-envs live in C++ and cannot be saved; pickling refuses with a message.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from stagerl.envs.atari_wrappers import atari_game
from stagerl.envs.gym import check_seed
from stagerl.envs.vector import GymVectorEnv

__all__ = ["EnvPoolVectorEnv", "make_envpool_env", "make_envpool_atari", "require_envpool",
           "ENVPOOL_INSTALL"]

ENVPOOL_INSTALL = "pip install 'stagerl[envpool]'  (envpool>=0.8)"


def require_envpool() -> Any:
    """The ``envpool`` module, or ``ModuleNotFoundError`` naming the ``pip install``."""
    try:
        import envpool
    except ImportError as error:
        raise ModuleNotFoundError(
            f"the EnvPool backend needs envpool, which is not installed: {ENVPOOL_INSTALL}"
        ) from error
    return envpool


_OUT_OF_REACH = 2**30  # EnvPool's own time limit, never reached: the bridge applies the limit


def _fresh_seed() -> int:
    return int.from_bytes(os.urandom(4), "little") >> 1  # EnvPool takes a non-negative int32


class EnvPoolVectorEnv(gymnasium.vector.VectorEnv):
    """A synchronous EnvPool env as a gymnasium vector env with ``NEXT_STEP`` autoreset.

    Wrap it in :class:`~stagerl.GymVectorEnv` (:func:`make_envpool_env` does).

    Args:
        pool: an env from ``envpool.make(..., env_type="gymnasium")`` with
            ``batch_size == num_envs`` (synchronous stepping).
        seed: the seed ``pool`` was made with.
        game_scores: add ``info["game_return"]`` and ``info["game_over"]`` (Atari pools).
        max_episode_steps: the time limit applied here (``None``: none); make ``pool`` with a
            limit it never reaches (see the module docstring).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, pool: Any, seed: int, game_scores: bool = False,
                 max_episode_steps: int | None = None) -> None:
        config = pool.spec.config
        if config.batch_size != config.num_envs:
            raise ValueError(
                f"EnvPoolVectorEnv steps every sub-env at once; make the pool with "
                f"batch_size=num_envs (got batch_size={config.batch_size}, "
                f"num_envs={config.num_envs})")
        self.pool, self.seed, self.game_scores = pool, int(seed), game_scores
        self.num_envs = n = int(config.num_envs)
        space = pool.observation_space
        self._frame_shape = None
        if isinstance(space, gymnasium.spaces.Box) and len(space.shape) == 3 and \
                space.shape[0] == 1:  # EnvPool's stack axis with stack_num=1
            self._frame_shape = (n,) + space.shape[1:]
            space = gymnasium.spaces.Box(0, 255, space.shape[1:], space.dtype)
        self.single_observation_space = space
        self.observation_space = batch_space(space, n)
        self.single_action_space = pool.action_space
        self.action_space = batch_space(pool.action_space, n)
        self._action_dtype = pool.action_space.dtype
        self._game_return = np.zeros(n)
        self._game_over = np.zeros(n, dtype=bool)
        self.max_episode_steps = max_episode_steps
        self._cut = np.zeros(n, dtype=bool)  # lanes the limit cut at the last act: reset next

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        if seed is not None and seed != self.seed:
            raise ValueError(
                f"EnvPool seeds its sub-envs when it is made (seed={self.seed}); reset(seed="
                f"{seed}) cannot reseed them: make a new env with seed={seed}")
        if options is not None:
            raise ValueError(f"EnvPoolVectorEnv.reset takes no options, got {options!r}")
        obs, info = self.pool.reset()
        self._cut[:] = False
        if self._frame_shape is not None:
            obs = obs.reshape(self._frame_shape)
        if self.game_scores:
            self._game_return[:] = 0.0
            self._game_over[:] = False
            info["game_return"] = self._game_return.copy()
            info["game_over"] = self._game_over.copy()
        return obs, info

    def step(self, actions: Any) -> tuple:
        actions = np.asarray(actions)
        if actions.dtype != self._action_dtype:
            actions = actions.astype(self._action_dtype)
        if self._cut.any():
            obs, reward, terminated, truncated, info = self._step_and_reset(actions, self._cut)
        else:
            obs, reward, terminated, truncated, info = self.pool.step(actions)
        if self.max_episode_steps is not None:
            # EnvPool's own limit is out of reach: its terminated is exact, the limit is ours.
            self._cut = (info["elapsed_step"] >= self.max_episode_steps) & ~terminated
            truncated = truncated | (info["elapsed_step"] >= self.max_episode_steps)
        if self._frame_shape is not None:
            obs = obs.reshape(self._frame_shape)
        if self.game_scores:
            # A lane whose game ended last step was only reset now: a new game starts at 0.
            self._game_return[self._game_over] = 0.0
            self._game_return += info["reward"]
            self._game_over = np.asarray(info["terminated"], dtype=bool) | truncated
            info["game_return"] = self._game_return.copy()
            info["game_over"] = self._game_over.copy()
        return obs, reward, terminated, truncated, info

    def _step_and_reset(self, actions: np.ndarray, cut: np.ndarray) -> tuple:
        """Step the lanes not in ``cut`` and only reset those in it (what EnvPool's autoreset does
        for a lane it ended itself): one act's results in lane order, ``cut`` lanes with reward 0
        and no flags."""
        n, stepping, resetting = self.num_envs, np.flatnonzero(~cut), np.flatnonzero(cut)
        reward, terminated = np.zeros(n, np.float32), np.zeros(n, dtype=bool)
        truncated, obs, info = np.zeros(n, dtype=bool), None, {}
        parts = []
        if stepping.size:
            o, r, te, tr, i = self.pool.step(actions[stepping], stepping.astype(np.int32))
            lanes = i["env_id"]
            reward[lanes], terminated[lanes], truncated[lanes] = r, te, tr
            parts.append((lanes, o, i))
        o, i = self.pool.reset(resetting.astype(np.int32))
        parts.append((i["env_id"], o, i))
        for lanes, o, i in parts:
            if obs is None:
                obs = np.empty((n,) + o.shape[1:], o.dtype)
            obs[lanes] = o
            for key, value in i.items():
                if isinstance(value, np.ndarray) and value.shape[:1] == lanes.shape:
                    if key not in info:
                        info[key] = np.zeros((n,) + value.shape[1:], value.dtype)
                    info[key][lanes] = value
        return obs, reward, terminated, truncated, info

    def close(self, **kwargs: Any) -> None:
        self.pool.close()

    def __getstate__(self) -> dict:
        raise TypeError(
            "an EnvPool env keeps its sub-envs in C++ and cannot be pickled, copied or "
            "checkpointed; build it with backend='gymnasium' to checkpoint the env")

    def __repr__(self) -> str:
        return (f"EnvPoolVectorEnv(num_envs={self.num_envs}, seed={self.seed}, "
                f"max_episode_steps={self.max_episode_steps})")


def make_envpool_env(task_id: str, num_envs: int = 1, seed: int | None = None,
                     game_scores: bool = False, **envpool_kwargs: Any) -> GymVectorEnv:
    """An EnvPool task as a :class:`~stagerl.GymVectorEnv`.

    Args:
        task_id: EnvPool's id (``"CartPole-v1"``, ``"Pong-v5"``, ``"HalfCheetah-v5"``...).
        num_envs: sub-envs, stepped together.
        seed: EnvPool's seed (``None``: fresh entropy); also seeds the action spaces.
        game_scores: add ``info["game_return"]`` and ``info["game_over"]`` (Atari tasks).
        **envpool_kwargs: passed to ``envpool.make`` (``num_threads``, the task's settings...);
            ``max_episode_steps`` (default: the task's) is applied by the bridge.

    Example:
        >>> env = make_envpool_env("CartPole-v1", num_envs=4, seed=0)  # doctest: +SKIP
        >>> env.reset(); env.state.shape  # doctest: +SKIP
        (4, 4)
    """
    envpool = require_envpool()
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"make_envpool_env: num_envs must be a positive int, got "
                         f"num_envs={num_envs!r}")
    seed = check_seed(seed, "make_envpool_env")
    for fixed in ("env_type", "num_envs", "batch_size", "seed"):
        if fixed in envpool_kwargs:
            raise TypeError(f"make_envpool_env sets {fixed} itself; leave it out of the keyword "
                            "arguments")
    if task_id not in envpool.list_all_envs():
        raise ValueError(f"{task_id!r} is not an EnvPool task (envpool.list_all_envs() lists them)")
    pool_seed = _fresh_seed() if seed is None else seed
    limit = envpool_kwargs.pop("max_episode_steps", None)
    if limit is None:
        limit = envpool.make_spec(task_id).config.max_episode_steps
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1:
        raise ValueError(f"make_envpool_env: max_episode_steps must be a positive int, got "
                         f"max_episode_steps={limit!r}")
    with warnings.catch_warnings():  # EnvPool's float64 bounds on float32 Boxes
        warnings.simplefilter("ignore", UserWarning)
        pool = envpool.make(task_id, env_type="gymnasium", num_envs=int(num_envs),
                            batch_size=int(num_envs), seed=pool_seed,
                            max_episode_steps=_OUT_OF_REACH, **envpool_kwargs)
        vector_env = EnvPoolVectorEnv(pool, pool_seed, game_scores, int(limit))
    return GymVectorEnv(vector_env, seed=seed)


def make_envpool_atari(env_id: str, num_envs: int = 1, seed: int | None = None,
                       training: bool = True, noop_max: int = 30, frame_skip: int = 4,
                       screen_size: int = 84, **envpool_kwargs: Any) -> GymVectorEnv:
    """``make_atari_env(..., backend="envpool")``: the same preprocessing, in EnvPool."""
    game, sticky = atari_game(env_id)
    settings = dict(stack_num=1, gray_scale=True, img_height=screen_size, img_width=screen_size,
                    noop_max=noop_max, frame_skip=frame_skip, episodic_life=training,
                    reward_clip=training, use_fire_reset=True, repeat_action_probability=sticky,
                    max_episode_steps=108_000 // frame_skip)
    settings.update(envpool_kwargs)
    return make_envpool_env(f"{game}-v5", num_envs=num_envs, seed=seed, game_scores=True,
                            **settings)
