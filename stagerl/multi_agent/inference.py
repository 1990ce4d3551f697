"""``compute_actions`` for a ``MultiAgentPolicy``: each player's observations through that
player's policy, without a game. Observations, states, actions and extra data are dicts keyed by
player."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stagerl.core.actions import ComputedActions, _compute_actions
from stagerl.core.dispatch import DEFAULT_PRECEDENCE
from stagerl.multi_agent.policy import MultiAgentPolicy

__all__: list[str] = []


def _policy_of(policy: MultiAgentPolicy, player: Any) -> Any:
    """The player's policy: as bound to a game, else by the dict's keys or the mapping."""
    mapping = policy.policy_mapping
    if policy.game is not None or mapping is None:
        try:
            return policy[player]
        except KeyError:
            known = list(policy.players) if policy.game is not None else list(policy.policies)
            raise ValueError(f"MultiAgentPolicy: no policy for player {player!r} (players "
                             f"{known}); key the observations by those players") from None
    policy_id = mapping.get(player, _NONE) if isinstance(mapping, Mapping) else mapping(player)
    if policy_id is _NONE or policy_id not in policy.policies:
        raise ValueError(f"MultiAgentPolicy: policy_mapping maps player {player!r} to no "
                         f"policy of {list(policy.policies)}; key the observations by the "
                         f"players it maps")
    return policy.policies[policy_id]


_NONE = object()


@_compute_actions.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_actions_multi_agent(policy: MultiAgentPolicy, observations, state,
                                 deterministic):
    if not isinstance(observations, Mapping) or not observations:
        raise TypeError(f"MultiAgentPolicy: compute_actions takes a dict {{player: "
                        f"observation(s)}}, got {type(observations).__name__}")
    if state is not None and not isinstance(state, Mapping):
        raise TypeError(f"MultiAgentPolicy: the state is a dict {{player: state}} (as "
                        f"compute_actions returned it), or None; got {type(state).__name__}")
    unknown = [p for p in (state or {}) if p not in observations]
    if unknown:
        raise ValueError(f"MultiAgentPolicy: the state names players {unknown} with no "
                         f"observation; pass back the state compute_actions returned")
    out = {player: _compute_actions(_policy_of(policy, player), observation,
                                    None if state is None else state.get(player), deterministic)
           for player, observation in observations.items()}
    return ComputedActions({p: r.actions for p, r in out.items()},
                           {p: r.state for p, r in out.items()},
                           {p: r.extra for p, r in out.items()})
