"""Adapters for PettingZoo's two APIs: AEC (turn-based) and Parallel (simultaneous).

They wrap an env made by PettingZoo (``pip install 'stagerl[pettingzoo]'``; this module itself
imports nothing from it) and present the :class:`~stagerl.multi_agent.MultiAgentEnv` interface:

* ``players`` are the env's ``possible_agents``;
* a legal-action mask found in a dict observation (``{"observation": ..., "action_mask": ...}``,
  as in ``pettingzoo.classic``) is lifted out: ``state_of`` gives the ``"observation"`` part and
  ``legal_actions_mask_of`` the mask as bools (``action_mask="info"`` reads it from the infos);
* rewards are summed per player after every step from ``env.rewards`` (as PettingZoo's own
  AEC-to-Parallel conversion does), into the reward since each player last acted;
* the AEC API's dead steps (``step(None)`` for an agent that is done while others play on) are
  taken inside the adapter: the loop never sees them, and the agent's last observation and flags
  stay readable.

PettingZoo envs pickle by their constructor arguments: a copy is a fresh env, to be reset.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stagerl.multi_agent.env import MultiAgentEnv
from stagerl.multi_agent.styles import SEQUENTIAL, SIMULTANEOUS

__all__ = ["PettingZooEnv", "PettingZooParallelEnv"]

_MASK_SOURCES = ("auto", "observation", "info", None)


class _PettingZooBase(MultiAgentEnv):
    _api = ""  # pettingzoo.make's env_type

    def __init__(self, env: Any, seed: int | None = None, action_mask: Any = "auto",
                 **make_kwargs: Any) -> None:
        if isinstance(env, str):
            import pettingzoo  # the optional extra, needed only to make an env from its id

            env = pettingzoo.make(self._api, env, **make_kwargs)
        elif make_kwargs:
            raise TypeError(f"{type(self).__name__}: keyword arguments {sorted(make_kwargs)} "
                            "make an env from its id; pass them to the env given instead")
        if action_mask not in _MASK_SOURCES:
            raise ValueError(f"action_mask must be one of {_MASK_SOURCES}, got {action_mask!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be an int or None, got seed={seed!r}")
        players = tuple(getattr(env, "possible_agents", ()) or ())
        if not players:
            raise TypeError(f"{type(self).__name__} needs a PettingZoo env (with "
                            f"possible_agents), got {env!r}")
        self.env, self.seed, self.players = env, seed, players
        self._raw = getattr(env, "unwrapped", env)
        in_observation = all(_mask_in_space(env.observation_space(p)) for p in players)
        if action_mask == "auto":
            action_mask = "observation" if in_observation else None
        if action_mask == "observation" and not in_observation:
            raise ValueError(f"{type(self).__name__}: the observations of {env} are not dicts "
                             "with an 'action_mask'; pass action_mask='info' or None")
        self.mask_source = action_mask
        self.has_legal_actions_mask = action_mask is not None
        self._seeded = False
        self._state_spaces = {p: _inner_space(env.observation_space(p), in_observation)
                              for p in players}
        self._terminated = dict.fromkeys(players, False)
        self._truncated = dict.fromkeys(players, False)
        self._observed: dict = {}  # player -> (state, mask) of the current step
        self._over = self._cut = False
        self.open_ledger()

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_raw"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        # The unwrapped env inside this copy's env: a pickled PettingZoo env is made anew.
        self._raw = getattr(self.env, "unwrapped", self.env)

    def _reset_seed(self) -> int | None:
        if self._seeded or self.seed is None:
            return None
        self._seeded = True
        for i, player in enumerate(self.players):
            self.env.action_space(player).seed(self.seed + 1 + i)
        return self.seed

    def _lift(self, observation: Any, info: Any) -> tuple:
        """``(state, mask)`` from an observation and its info dict."""
        mask = None
        if self.mask_source == "observation":
            observation, mask = observation["observation"], observation["action_mask"]
        elif self.mask_source == "info":
            mask = (info or {}).get("action_mask")
        if mask is not None:
            mask = np.asarray(mask).astype(bool)
        return observation, mask

    def _note_flags(self) -> None:
        """Whether the episode is over (every player done), read once per step."""
        terminated, truncated = self._terminated, self._truncated
        self._over = all(terminated[p] or truncated[p] for p in self.players)
        self._cut = self._over and any(truncated.values())

    def state_of(self, player: Any) -> Any:
        return self._observe(player)[0]

    def legal_actions_mask_of(self, player: Any) -> Any:
        return self._observe(player)[1]

    def action_space_of(self, player: Any) -> Any:
        return self.env.action_space(player)

    def state_space_of(self, player: Any) -> Any:
        return self._state_spaces[player]

    @property
    def is_terminated(self) -> bool:
        return self._over and not self._cut

    @property
    def is_truncated(self) -> bool:
        return self._cut

    def is_terminated_for(self, player: Any) -> bool:
        return self._terminated[player]

    def is_truncated_for(self, player: Any) -> bool:
        return self._truncated[player]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env})"


class PettingZooEnv(_PettingZooBase):
    """A PettingZoo AEC env (turn-based) as a sequential game.

    Args:
        env: an AEC env, or the id of one for ``pettingzoo.make("aec", id, **make_kwargs)``
            (e.g. ``"classic/tictactoe-v3"``).
        seed: seeds the first ``reset`` (and the action spaces); later resets are unseeded.
        action_mask: where the legal-action masks are: ``"auto"`` (in dict observations if
            there are such, else none), ``"observation"``, ``"info"`` or ``None``.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.multi_agent import MultiAgentPolicy, PettingZooEnv
        >>> game = PettingZooEnv("classic/tictactoe-v3", seed=0)
        >>> game.players, game.has_legal_actions_mask
        (('player_1', 'player_2'), True)
        >>> policy = MultiAgentPolicy({p: rl.RandomPolicy(rng=i)
        ...                            for i, p in enumerate(game.players)})
        >>> hook = rl.run(policy, game, rl.StopAfterNEpisodes(2, progress=False),
        ...               rl.StepsPerEpisode())
        >>> len(hook.steps), min(hook.steps) >= 5       # a game lasts 5 moves or more
        (2, True)
    """

    dynamic_style = SEQUENTIAL
    _api = "aec"

    def __init__(self, env: Any, seed: int | None = None, action_mask: Any = "auto",
                 **make_kwargs: Any) -> None:
        super().__init__(env, seed, action_mask, **make_kwargs)
        self._final: dict = {}  # a player done before the others: its last (state, mask)

    def reset(self) -> None:
        self.env.reset(seed=self._reset_seed())
        self.open_ledger()
        self._observed.clear()
        self._final.clear()
        live = set(self.env.agents)
        for player in self.players:  # a player not in this episode counts as done
            self._terminated[player] = player not in live
            self._truncated[player] = False
        self._collect()

    @property
    def current_player(self) -> Any:
        return self._raw.agent_selection

    def act(self, action: Any) -> None:
        self.begin_act((self._raw.agent_selection,))
        self.env.step(action)
        self._collect()

    def _collect(self) -> None:
        """Rewards and flags of the last step; then the dead steps of agents done before the
        others, so that the current player is one that can move."""
        # Read from the unwrapped env, where PettingZoo's wrappers keep (and write) these
        # dicts: through the wrappers every read costs three __getattr__ calls.
        raw = self._raw
        while True:
            self._observed.clear()
            for agent, reward in raw.rewards.items():
                if reward:
                    self.credit(agent, float(reward))
            terminations, truncations = raw.terminations, raw.truncations
            for agent in raw.agents:
                self._terminated[agent] = bool(terminations[agent])
                self._truncated[agent] = bool(truncations[agent])
            self._note_flags()
            if self._over or not raw.agents:
                return
            agent = raw.agent_selection
            if not (terminations[agent] or truncations[agent]):
                return
            self._final[agent] = self._observe(agent)
            self.env.step(None)  # PettingZoo's dead step: the done agent leaves the game

    def _observe(self, player: Any) -> tuple:
        observed = self._observed.get(player)
        if observed is None:
            final = self._final.get(player)
            if final is not None:
                return final
            observed = self._observed[player] = self._lift(
                self.env.observe(player), self._raw.infos.get(player))
        return observed


class PettingZooParallelEnv(_PettingZooBase):
    """A PettingZoo Parallel env (every live agent moves at once) as a simultaneous game.

    Args: as :class:`PettingZooEnv`; ``env`` is a Parallel env or the id of one for
    ``pettingzoo.make("parallel", id, **make_kwargs)``.

    Example:
        >>> from stagerl.multi_agent import PettingZooParallelEnv
        >>> game = PettingZooParallelEnv("classic/rps-v2", seed=0, max_cycles=3)
        >>> game.reset(); game.acting_players
        ('player_0', 'player_1')
        >>> game.act({"player_0": 1, "player_1": 0})    # paper covers rock
        >>> game.reward_of("player_0"), int(game.state_of("player_1"))
        (1.0, 1)
    """

    dynamic_style = SIMULTANEOUS
    _api = "parallel"

    def reset(self) -> None:
        observations, infos = self.env.reset(seed=self._reset_seed())
        self.open_ledger()
        live = set(self.env.agents)
        for player in self.players:
            self._terminated[player] = player not in live
            self._truncated[player] = False
        self._note_flags()
        self._store(observations, infos)

    def act(self, action: Any) -> None:
        if not isinstance(action, dict):
            raise TypeError(f"{type(self).__name__}.act takes {{player: action}}, got {action!r}")
        self.begin_act(tuple(action))
        observations, rewards, terminations, truncations, infos = self.env.step(action)
        for player, reward in rewards.items():
            if reward:
                self.credit(player, float(reward))
        for player in terminations:
            self._terminated[player] = bool(terminations[player])
            self._truncated[player] = bool(truncations[player])
        self._note_flags()
        self._store(observations, infos)

    def _store(self, observations: dict, infos: dict) -> None:
        # Kept per player: a player done before the others keeps its last observation.
        for player, observation in observations.items():
            self._observed[player] = self._lift(observation, infos.get(player))

    def _observe(self, player: Any) -> tuple:
        return self._observed[player]


def _mask_in_space(space: Any) -> bool:
    spaces = getattr(space, "spaces", None)
    return isinstance(spaces, dict) and "observation" in spaces and "action_mask" in spaces


def _inner_space(space: Any, masked: bool) -> Any:
    return space.spaces["observation"] if masked else space
