"""The Hook base class and hook composition (built-in hooks: :mod:`stagerl.core.hooks`)."""

from __future__ import annotations

__all__ = ["Hook", "ComposedHook"]


class Hook:
    """Base class of hooks: ``push(hook, stage, policy, env)`` does nothing unless defined.

    ``h1 + h2`` builds a flat :class:`ComposedHook` whose members run left to right.

    Example:
        >>> import stagerl as rl
        >>> hook = rl.StepsPerEpisode() + rl.TotalRewardPerEpisode()
        >>> len(hook), type(hook[1]).__name__
        (2, 'TotalRewardPerEpisode')
    """

    def __add__(self, other: Hook) -> ComposedHook:
        if not isinstance(other, Hook):
            return NotImplemented
        return ComposedHook(*_members(self), *_members(other))


def _members(hook: Hook) -> tuple[Hook, ...]:
    return hook.hooks if isinstance(hook, ComposedHook) else (hook,)


class ComposedHook(Hook):
    """Several hooks run left to right as one; composing composed hooks stays flat.

    Example:
        >>> import stagerl as rl
        >>> a, b, c = rl.EmptyHook(), rl.StepsPerEpisode(), rl.TotalRewardPerEpisode()
        >>> hook = (a + b) + rl.ComposedHook(c)
        >>> [type(h).__name__ for h in hook]
        ['EmptyHook', 'StepsPerEpisode', 'TotalRewardPerEpisode']
    """

    def __init__(self, *hooks: Hook) -> None:
        flat: list[Hook] = []
        for hook in hooks:
            if not isinstance(hook, Hook):
                raise TypeError(
                    f"ComposedHook takes Hook instances, got {hook!r} of type "
                    f"{type(hook).__name__}; subclass stagerl.Hook"
                )
            flat.extend(_members(hook))
        self.hooks: tuple[Hook, ...] = tuple(flat)

    def __getitem__(self, i: int) -> Hook:
        return self.hooks[i]

    def __len__(self) -> int:
        return len(self.hooks)

    def __iter__(self):
        return iter(self.hooks)

    def __repr__(self) -> str:
        return "ComposedHook(" + ", ".join(map(repr, self.hooks)) + ")"
