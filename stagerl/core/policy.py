"""The Policy base class."""

from __future__ import annotations

import sys
from typing import Any

from trajectories.checks import as_rng

__all__ = ["Policy", "as_rng"]


class Policy:
    """Base class of everything the run loop can drive.

    A policy answers ``plan(policy, env)`` and may define ``push`` and ``optimise`` methods for the
    stages it cares about; the others fall back to no-ops. :meth:`to` moves every torch module
    and tensor the policy holds; policies with learnable state override :meth:`state_dict` and
    :meth:`load_state_dict`.

    Example:
        >>> import stagerl as rl
        >>> class AlwaysLeft(rl.Policy):
        ...     pass
        >>> @rl.plan.dispatch
        ... def plan(policy: AlwaysLeft, env: rl.Env):
        ...     return 0
        >>> hook = rl.run(AlwaysLeft(), rl.RandomWalk1D(), hook=rl.StepsPerEpisode())
        >>> hook.steps
        [3]

        Single and vector envs: with a :class:`~stagerl.GymVectorEnv`, ``env.state`` holds one
        row per sub-env and ``plan`` returns one action per sub-env. Written on a leading batch
        axis, one ``plan`` serves both, with one forward pass for the whole batch (a policy
        that must act differently dispatches on ``env: rl.GymVectorEnv``, the more specific
        type). The Agent and the per-episode hooks need nothing more:

        >>> import numpy as np
        >>> class LeanFollower(rl.Policy):  # CartPole: push the way the pole falls
        ...     pass
        >>> @rl.plan.dispatch
        ... def plan(policy: LeanFollower, env: rl.Env):
        ...     state = np.asarray(env.state)  # (4,) for one env, (num_envs, 4) for a vector env
        ...     action = (state[..., 2] + state[..., 3] > 0).astype(np.int64)
        ...     return action if action.ndim else int(action)
        >>> one = rl.run(LeanFollower(), rl.GymEnv("CartPole-v1", seed=0),
        ...              rl.StopAfterNEpisodes(1, progress=False), rl.StepsPerEpisode())
        >>> many = rl.run(LeanFollower(), rl.GymVectorEnv("CartPole-v1", num_envs=4, seed=0),
        ...               rl.StopAfterNEpisodes(4, progress=False), rl.StepsPerEpisode())
        >>> one.steps[0] in many.steps  # sub-env 0 is seeded as the single env
        True
    """

    #: While True, ``plan`` should return the policy's deterministic action (greedy, the mean)
    #: and draw nothing from its rngs; evaluation sets it (see ``stagerl.evaluate``).
    deterministic: bool = False

    def to(self, device: Any) -> Policy:
        """Move every torch module, optimiser state, tensor, ``Approximator`` /
        ``TargetNetwork`` and inner policy the policy holds to ``device``; returns ``self``.

        Attributes are found with ``vars(self)`` (lists, tuples and dicts of them too); a policy
        that keeps tensors elsewhere overrides this.
        """
        torch = sys.modules.get("torch")
        if torch is None:  # nothing can hold a tensor before torch is imported
            return self
        device = torch.device(device)
        for name, value in list(vars(self).items()):
            moved = _moved(value, device, torch)
            if moved is not value:
                setattr(self, name, moved)
        return self

    def validate(self, env: Any) -> None:
        """Raise a clear error if this policy cannot act in ``env``; called when an experiment
        is built, before anything runs. The default accepts every env."""

    def state_dict(self) -> dict[str, Any]:
        """The policy's learnable state (plain tensors and arrays)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        if state:
            raise ValueError(
                f"{type(self).__name__} has no state to load, got keys {sorted(state)}; "
                f"override load_state_dict to restore them"
            )


def _moved(value: Any, device: Any, torch: Any) -> Any:
    """``value`` on ``device``: tensors are replaced, modules, optimisers and objects with their
    own ``to`` (approximators, policies) are moved in place, containers are walked."""
    if isinstance(value, torch.nn.Parameter):
        value.data = value.data.to(device)  # in place: optimisers hold the parameter itself
        return value
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, torch.optim.Optimizer):
        move_optimiser_state(value, device, torch)
        return value
    if isinstance(value, (list, tuple)):
        items = [_moved(v, device, torch) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if type(value) in (list, tuple) else value
    if isinstance(value, dict):
        for key, item in list(value.items()):
            value[key] = _moved(item, device, torch)
        return value
    if isinstance(value, (torch.nn.Module, Policy)) or (
        callable(getattr(value, "to", None)) and callable(getattr(value, "parameters", None))
    ):
        value.to(device)  # modules, inner policies, Approximator, TargetNetwork
    return value


def move_optimiser_state(optimiser: Any, device: Any, torch: Any = None) -> None:
    """Move an optimiser's state tensors (Adam's moments) to ``device``.

    ``Module.to`` moves parameters in place, so the optimiser still holds the right ones, but the
    state it already created stays on the old device. The ``step`` counters stay where they are
    (torch keeps them on the CPU unless the optimiser is capturable or fused).
    """
    torch = torch or sys.modules["torch"]
    for state in optimiser.state.values():
        for key, value in state.items():
            if isinstance(value, torch.Tensor) and key != "step":
                state[key] = value.to(device)
