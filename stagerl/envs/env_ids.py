"""The rule for an env id read from a file (a checkpoint, a run's ``config.json``): which ids
may be made. The checkpoint loader and the envs that make themselves again from a saved id
(``stagerl.envs.native_state``) both follow it."""

from __future__ import annotations

from typing import Any

__all__ = ["env_id_problem"]


def env_id_problem(env_id: Any, expected: str | None = None) -> str | None:
    """Why ``env_id`` (read from a file) may not be made, or ``None``: it must be ``expected``
    (the id the experiment was defined with) or an id gymnasium has registered, without a
    ``module:`` prefix (``gymnasium.make`` would import that module)."""
    if not isinstance(env_id, str):
        return f"the env id {env_id!r} is not a string"
    if expected is not None and env_id == expected:
        return None
    if ":" in env_id:
        return (f"the env id {env_id!r} names a module to import; ids read from a file must be "
                "registered with gymnasium, without a module: prefix")
    import gymnasium

    if env_id not in gymnasium.envs.registry:
        return (f"the env id {env_id!r} is not registered with gymnasium (import the package "
                "that registers it before loading)")
    return None
