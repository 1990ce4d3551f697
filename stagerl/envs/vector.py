"""GymVectorEnv: a gymnasium vector environment as one Env whose fields are per-sub-env arrays."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from gymnasium.vector import VectorEnv as GymnasiumVectorEnv

from stagerl.core.env import VectorEnv
from stagerl.envs.batched_observations import (
    ARRAY_SPACES,
    array_observations,
    copied,
    with_final_observations,
)
from stagerl.envs.native_state import env_from_data
from stagerl.envs.vector_setup import autoreset_mode_of, without_env_fns

_count_nonzero = np.count_nonzero  # ~0.2 us on 8 lanes, where .any() costs ~1 us

__all__ = ["GymVectorEnv"]

class GymVectorEnv(VectorEnv):
    """A gymnasium ``VectorEnv`` (sync, async or ``gymnasium.make_vec``) as one :class:`Env`.

    ``state``, ``reward``, ``is_terminated``, ``is_truncated`` and ``episode_start`` hold one
    entry per sub-env (lane); ``action_space`` is the batched space, ``single_action_space`` one
    sub-env's. ``act`` takes one action per sub-env.

    The run loop with a vector env (``docs/vector_envs.md`` has the whole story):

    * Sub-envs reset themselves (gymnasium's autoreset), so **the loop's episode spans from
      ``env.reset()`` to the stop**: PreEpisode and PostEpisode run once per run.
      ``ResetIfEnvTerminated`` never resets a vector env.
    * A sub-env's episode end is seen at PostAct as ``is_terminated | is_truncated`` in its lane.
    * ``StopAfterNSteps(n)`` counts env-steps, ``num_envs`` per ``act``: the run stops at the
      first act that brings the count to ``n`` or beyond (``ceil(n / num_envs)`` acts).
      ``StopAfterNEpisodes(n)`` counts finished sub-env episodes.
    * ``plan`` returns one action per sub-env (policies act on the whole batch at once).
    * The Agent stores each sub-env's episodes in its own lane of the trajectory (never a
      transition across sub-envs or episodes; truncation bootstrapped), and the per-episode
      hooks (``TotalRewardPerEpisode``, ``StepsPerEpisode``, ``RewardsPerEpisode``) report each
      sub-env's episodes as if they had been run one after another; at the stop, every
      sub-env's unfinished episode is reported, as a single env's cut episode is.
    * Per-act hooks (``DoEveryNSteps``, ``TimePerStep``) count acts, not env-steps.

    Autoreset modes (``env.metadata["autoreset_mode"]``, gymnasium 1.x):

    * ``NEXT_STEP`` (default): the step after a lane's episode end only resets that lane. In that
      step the lane's ``episode_start`` is True, its ``reward`` is 0 and its flags are False: the
      step is not a transition, only the first state of the lane's next episode.
    * ``SAME_STEP``: a lane whose episode ends is reset in the same step: its ``state`` is already
      the next episode's first state (``episode_start`` True) while ``reward``,
      ``is_terminated``, ``is_truncated`` describe the step that ended the episode, and
      ``final_state`` holds the true last observation. For every lane, ``final_state`` is the
      state the last step led to (the ``next_state`` of its transition); in NEXT_STEP mode it is
      ``state`` itself.

    ``DISABLED`` is refused: nothing would reset a finished sub-env.

    Args:
        env_or_id: a gymnasium ``VectorEnv`` or an environment id for ``gymnasium.make_vec``.
        num_envs: the number of sub-envs to make from an id (default 1); with a ``VectorEnv`` it
            must be ``None`` or equal ``env.num_envs``.
        seed: seeds the first reset (sub-env i gets ``seed + i``) and the action spaces.
        vectorization_mode: ``"sync"`` or ``"async"``, for an id.
        **make_kwargs: passed on to ``gymnasium.make_vec`` (e.g. ``vector_kwargs``, ``wrappers``
            or the environment's own keyword arguments).

    Example:
        >>> import stagerl as rl
        >>> env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
        >>> env.reset()
        >>> env.state.shape, env.episode_start
        ((3, 4), array([ True,  True,  True]))
        >>> env.act(env.action_space.sample())
        >>> env.reward, env.is_terminated, env.episode_start
        (array([1., 1., 1.]), array([False, False, False]), array([False, False, False]))
    """

    # Plain attributes shadow the interface's properties: the Agent reads them on every act.
    any_episode_start: bool = True
    any_episode_end: bool = False

    def __init__(
        self,
        env_or_id: Any,
        num_envs: int | None = None,
        seed: int | None = None,
        vectorization_mode: str = "sync",
        **make_kwargs: Any,
    ) -> None:
        if num_envs is not None and (
            isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer))
        ):
            raise TypeError(f"num_envs must be an int, got num_envs={num_envs!r}")
        if num_envs is not None and num_envs <= 0:
            raise ValueError(f"num_envs must be positive, got num_envs={num_envs}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise TypeError(f"seed must be an int or None, got seed={seed!r}")
        if isinstance(env_or_id, str):
            env = gymnasium.make_vec(
                env_or_id,
                num_envs=1 if num_envs is None else int(num_envs),
                vectorization_mode=vectorization_mode,
                **make_kwargs,
            )
        elif isinstance(env_or_id, GymnasiumVectorEnv):
            if make_kwargs:
                raise TypeError(
                    f"GymVectorEnv got keyword arguments {sorted(make_kwargs)} with an existing "
                    "VectorEnv; they are only used to make one from an id"
                )
            env = env_or_id
            if num_envs is not None and num_envs != env.num_envs:
                raise ValueError(
                    f"num_envs={num_envs} does not match the vector env's num_envs="
                    f"{env.num_envs}; leave num_envs=None when passing a VectorEnv"
                )
        elif isinstance(env_or_id, gymnasium.Env):
            raise TypeError(
                f"GymVectorEnv needs a gymnasium VectorEnv or an id, got the single env "
                f"{env_or_id!r}; wrap a single gymnasium.Env with stagerl.GymEnv instead, or "
                "vectorise it with gymnasium.vector.SyncVectorEnv([lambda: ...] * n)"
            )
        else:
            raise TypeError(
                f"GymVectorEnv needs a gymnasium VectorEnv or an environment id, got "
                f"{env_or_id!r} of type {type(env_or_id).__name__}"
            )
        self.env = env
        self._fresh_obs = type(env) in (SyncVectorEnv, AsyncVectorEnv) and env.copy is True
        # A SyncVectorEnv of array observations is stepped without its deepcopy of them (~2.5 us
        # an act) and they are copied here (ndarray.copy, ~0.1 us): the same fresh array.
        self._copies_obs = type(env) is SyncVectorEnv and isinstance(
            env.single_observation_space, ARRAY_SPACES)
        # gymnasium's own vector envs report reward 0 and no flags in a lane a NEXT_STEP act only
        # resets; anything else (wrappers, custom envs) is masked there (see act).
        self._masks_reset_lanes = type(env) not in (SyncVectorEnv, AsyncVectorEnv)
        self.autoreset_mode = autoreset_mode_of(env)
        self._next_step = self.autoreset_mode == AutoresetMode.NEXT_STEP
        if not array_observations(env.single_observation_space):
            raise TypeError(
                f"GymVectorEnv needs array observations (Box, Discrete, MultiDiscrete, "
                f"MultiBinary, or a Dict or Tuple of them), got {env.single_observation_space}; "
                "flatten them with gymnasium.wrappers.vector.FlattenObservation"
            )
        n = self.num_envs = int(env.num_envs)
        self.seed = None if seed is None else int(seed)
        self._seeded = False
        self._action_batch_checked = isinstance(
            env.single_action_space, (gymnasium.spaces.Tuple, gymnasium.spaces.Dict)
        )
        self._state = None
        self._final_state = None
        self._reward = np.zeros(n)
        self._terminated = np.zeros(n, dtype=bool)
        self._truncated = np.zeros(n, dtype=bool)
        self._episode_start = np.ones(n, dtype=bool)
        self.any_episode_start = True  # episode_start.any(), read on every act: cached
        self.any_episode_end = False
        self._done = None  # the lanes the last act ended (None: none)
        self._stepped = np.zeros(n, dtype=bool)
        self.info: dict[str, Any] = {}

    # ------------------------------------------------------------------ stepping
    def reset(self) -> None:
        """Reset every sub-env (seeded on the first call when a seed was given)."""
        if self._seeded or self.seed is None:
            obs, info = self.env.reset()
        else:
            obs, info = self.env.reset(seed=self.seed)
            self.env.action_space.seed(self.seed)
            self.env.single_action_space.seed(self.seed)
            self._seeded = True
        n = self.num_envs
        self._state = self._final_state = copied(obs)  # a copy the next step cannot touch
        self._reward = np.zeros(n)
        self._terminated = np.zeros(n, dtype=bool)
        self._truncated = np.zeros(n, dtype=bool)
        self._episode_start = np.ones(n, dtype=bool)
        self.any_episode_start = True
        self.any_episode_end = False
        self._done = None  # the lanes the last act ended (None: none)
        self._stepped = np.zeros(n, dtype=bool)
        self.info = info

    def act(self, action: Any) -> None:
        """Step every sub-env with its action (a batch with one action per sub-env)."""
        if type(action) is not np.ndarray:  # numpy first: a miss of hasattr costs ~0.3 us
            if hasattr(action, "detach"):  # a torch tensor from a policy's forward
                action = action.detach().cpu().numpy()
            if not self._action_batch_checked:
                self._check_batch(action)
        elif not self._action_batch_checked and action.shape[:1] != (self.num_envs,):
            self._check_batch(action)
        # A copy the next step cannot touch: gymnasium's own vector envs hand one out already
        # unless built with copy=False; anything else (wrappers, custom envs) is copied here.
        if self._copies_obs:
            env = self.env
            copies = env.copy
            env.copy = False  # its own setting is back after the step, also if the step raises
            try:
                obs, reward, terminated, truncated, info = env.step(action)
            finally:
                env.copy = copies
            state = obs.copy()  # its rewards and flags are new float64 and bool arrays
        else:
            obs, reward, terminated, truncated, info = self.env.step(action)
            state = obs if self._fresh_obs else copied(obs)
            reward = np.asarray(reward, dtype=np.float64)
            terminated = np.asarray(terminated, dtype=bool)
            truncated = np.asarray(truncated, dtype=bool)
        # Most acts end no episode: two counts (~0.2 us each) then, not the ``|`` of the flags
        # (~0.5 us) and its count; a lane mask that is all False is made only when read
        # (``episode_start``), and ``_done`` is None for "no lane ended".
        if self._next_step:
            start = self._done  # the lanes that ended last step were only reset now
            if start is not None and self._masks_reset_lanes:
                reward = reward.copy()
                reward[start] = 0.0
                terminated = terminated & ~start
                truncated = truncated & ~start
            ended = _count_nonzero(terminated) > 0 or _count_nonzero(truncated) > 0
            done = terminated | truncated if ended else None
            self._final_state = state
        else:
            ended = _count_nonzero(terminated) > 0 or _count_nonzero(truncated) > 0
            done = start = terminated | truncated if ended else None
            self._final_state = state
            if ended:
                self._final_state = with_final_observations(
                    state, info["final_obs"], done.nonzero()[0].tolist())
        self._done = done
        self.any_episode_start = start is not None
        self.any_episode_end = ended
        self._state = state
        self._reward = reward
        self._terminated = terminated
        self._truncated = truncated
        self._episode_start = start  # None: no lane started an episode (the mask made when read)
        self._stepped = None  # derived from episode_start when first asked for
        self.info = info

    def _check_batch(self, action: Any) -> None:
        n = self.num_envs
        if isinstance(action, np.ndarray):
            size = action.shape[0] if action.ndim else None
        elif isinstance(action, (list, tuple)):
            size = len(action)
        elif isinstance(action, (int, float, np.generic)):
            size = None
        else:
            return  # another batch type: gymnasium validates it
        if size != n:
            got = "a single action" if size is None else f"{size} actions"
            raise ValueError(
                f"GymVectorEnv with num_envs={n} needs one action per sub-env (a batch of {n}), "
                f"got {got}: {action!r}; sample one with env.action_space.sample()"
            )

    def __getstate__(self) -> dict:
        # gymnasium's SyncVectorEnv keeps the functions that made its sub-envs (often local
        # closures, which do not pickle); it never calls them again, so a copy goes without.
        return {**self.__dict__, "env": without_env_fns(self.env)}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        done = self._done  # saved as an all-False mask by earlier versions: None now
        if done is not None and not _count_nonzero(done):
            self._done = None
        inner = self.env
        while not isinstance(inner, SyncVectorEnv) and isinstance(
                getattr(inner, "env", None), GymnasiumVectorEnv):
            inner = inner.env
        if isinstance(inner, SyncVectorEnv):  # MuJoCo and Atari sub-envs made again
            inner.envs = [env_from_data(sub) for sub in inner.envs]

    def close(self) -> None:
        """Close the sub-envs (and worker processes of an async vector env)."""
        self.env.close()

    def __enter__(self) -> GymVectorEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ fields
    @property
    def state(self) -> np.ndarray:
        """Observations, one row per sub-env (a new array after every step)."""
        return self._state

    @property
    def final_state(self) -> np.ndarray:
        """The state each lane's last step led to (``state``, except in lanes SAME_STEP reset)."""
        return self._final_state

    @contextmanager
    def showing_final_states(self) -> Iterator[GymVectorEnv]:
        """Within the block, ``state`` is ``final_state``: the env seen at the state each lane's
        last step led to, for a plan made there (a SARSA layout completing the episodes that a
        SAME_STEP autoreset ended). ``state`` is back afterwards, also when the block raises.

        Example:
            >>> import gymnasium, stagerl as rl
            >>> env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0,
            ...     vector_kwargs={"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP})
            >>> env.reset(); env.act([0, 0]); before = env.state
            >>> with env.showing_final_states():
            ...     inside = env.state is env.final_state
            >>> inside, env.state is before
            (True, True)
        """
        state = self._state
        self._state = self._final_state
        try:
            yield self
        finally:
            self._state = state

    @property
    def stepped(self) -> np.ndarray:
        """Per sub-env: the last ``act`` was a real step (a transition), not only a reset.

        All False after ``reset()``; after ``act``, False exactly for the lanes that a NEXT_STEP
        autoreset only reset (``~episode_start``), all True in SAME_STEP mode.
        """
        if self._stepped is None:
            self._stepped = ~self.episode_start if self._next_step else \
                np.ones(self.num_envs, dtype=bool)
        return self._stepped

    @property
    def reward(self) -> np.ndarray:
        """Rewards of the last step (float64), one per sub-env."""
        return self._reward

    @property
    def is_terminated(self) -> np.ndarray:
        """Per sub-env: the last step reached a terminal state."""
        return self._terminated

    @property
    def is_truncated(self) -> np.ndarray:
        """Per sub-env: the last step cut the episode (time limit)."""
        return self._truncated

    @property
    def episode_start(self) -> np.ndarray:
        """Per sub-env: ``state`` is the first state of an episode (all True after reset)."""
        start = self._episode_start
        if start is None:  # no lane started one: the mask is made on first read
            start = self._episode_start = np.zeros(self.num_envs, dtype=bool)
        return start

    @property
    def action_space(self) -> gymnasium.Space:
        """The batched action space (one action per sub-env)."""
        return self.env.action_space

    @property
    def single_action_space(self) -> gymnasium.Space:
        """One sub-env's action space."""
        return self.env.single_action_space

    @property
    def state_space(self) -> gymnasium.Space:
        """The batched observation space."""
        return self.env.observation_space

    @property
    def single_state_space(self) -> gymnasium.Space:
        """One sub-env's observation space."""
        return self.env.single_observation_space

    def __repr__(self) -> str:
        return (
            f"GymVectorEnv({self.env!r}, num_envs={self.num_envs}, "
            f"autoreset_mode={self.autoreset_mode.name})"
        )
