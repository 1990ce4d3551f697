"""The six stages of an experiment.

The run loop announces each stage by calling the generic functions with an *instance* of the
stage class; methods dispatch on the class. Stages carry no data: they are pure tags, so one
shared instance of each is enough (the run loop keeps one per stage), which saves an allocation per
step on the hot path.
"""

from __future__ import annotations

__all__ = [
    "Stage",
    "PreExperimentStage",
    "PreEpisodeStage",
    "PreActStage",
    "PostActStage",
    "PostEpisodeStage",
    "PostExperimentStage",
]


class Stage:
    """Base class of every stage.

    Example:
        >>> import stagerl as rl
        >>> isinstance(rl.PreActStage(), rl.Stage)
        True
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class PreExperimentStage(Stage):
    """Once, before the first episode."""

    __slots__ = ()


class PreEpisodeStage(Stage):
    """At the start of every episode, right after ``env.reset()``."""

    __slots__ = ()


class PreActStage(Stage):
    """Before every ``plan``/``env.act`` pair."""

    __slots__ = ()


class PostActStage(Stage):
    """After every ``env.act``; the only stage whose policy push receives the action."""

    __slots__ = ()


class PostEpisodeStage(Stage):
    """At the end of every episode, also the one cut short by the stop condition."""

    __slots__ = ()


class PostExperimentStage(Stage):
    """Once, after the last episode, also when the loop is left by an exception."""

    __slots__ = ()
