"""Consecutive per-episode hooks run as one call per stage.

A composed hook such as ``TotalRewardPerEpisode() + StepsPerEpisode()`` costs the run loop one
call per member and stage, and each member's method calls its tracker's, whose per-step work is
two additions. When two or more consecutive members keep :class:`~stagerl.core.episodes.
EpisodeHook`'s own ``pre_episode``, ``post_act`` or ``post_episode``, the loop makes one call
for them instead (:class:`~stagerl.core.stage_calls.StageCalls` groups them):

* PreEpisode: :func:`pre_episode_together`; PostEpisode: :func:`post_episode_together`;
* PostAct: :func:`post_act_function`, a function generated for the hooks (their mirrored
  fields written out), which does what :func:`~stagerl.core.episodes.post_act_together` does.

Each moves a hook's tracker as the hook's own method would, on a single env whose tracker is
bound to it; anything else (a vector env, a game's info, kept rewards, a tracker not bound to
the env yet) goes through the hook's own method. ``tests/stagerl/core/test_loop_fast_paths.py``
runs both ways on the same steps.
"""

from __future__ import annotations

import keyword
import math
from typing import Any

from stagerl.core.episodes import EpisodeHook, post_act_together

__all__ = ["pre_episode_together", "post_episode_together", "post_act_function",
           "DEFAULT_METHODS"]

#: The stage methods of :class:`EpisodeHook` that hooks grouped together keep.
DEFAULT_METHODS = {"pre_episode": EpisodeHook.pre_episode, "post_act": EpisodeHook.post_act,
                   "post_episode": EpisodeHook.post_episode}


def _tracker_of(hook: Any, env: Any) -> Any:
    """The hook's tracker when the common case applies to it (bound to the single env
    ``env``), else None (then the hook's own method runs)."""
    tracker = hook.__dict__.get("_tracker")
    if tracker is None or tracker._env is not env or tracker.vector:
        return None
    return tracker


def pre_episode_together(hooks: tuple, policy: Any, env: Any) -> None:
    """``hook.pre_episode(policy, env)`` for each of ``hooks`` in turn, as one call."""
    for hook in hooks:
        tracker = _tracker_of(hook, env)
        if tracker is None or tracker.game_goes_on:
            hook.pre_episode(policy, env)
            continue
        tracker._zero(None)  # EpisodeTracker.start for its bound single env
        for name, attribute in hook.running_fields:
            setattr(hook, name, getattr(tracker, attribute))


def post_episode_together(hooks: tuple, policy: Any, env: Any) -> None:
    """``hook.post_episode(policy, env)`` for each of ``hooks`` in turn, as one call."""
    for hook in hooks:
        tracker = _tracker_of(hook, env)
        if tracker is None or tracker.game_mode:
            hook.post_episode(policy, env)
            continue
        # EpisodeTracker.finish for a single env that does not tell games
        terminated = bool(getattr(env, "is_terminated", False))
        truncated = bool(getattr(env, "is_truncated", False))
        tracker.game_over = False
        hook.on_episode(tracker._end(0, terminated, truncated), policy, env)
        for name, attribute in hook.running_fields:
            setattr(hook, name, getattr(tracker, attribute))


# The lines of one hook in the generated post_act: EpisodeTracker.step for a single env with no
# game, then the mirrored fields. {j}: the hook's index; its fields' lines are added after.
_POST_ACT_HOOK = """\
    t = h{j}.__dict__.get("_tracker")
    if t is None or t._env is not env or t.vector or t.keep_rewards or \\
            h{j}.running_fields is not F{j}:
        h{j}.post_act(policy, env)
    else:
        t.running_reward += reward
        t.running_length += 1"""


def post_act_function(hooks: tuple, policy: Any, env: Any) -> Any:
    """``f()``: :func:`~stagerl.core.episodes.post_act_together` for these ``hooks``,
    ``policy`` and ``env``, generated with each hook's mirrored fields written out (a hook
    whose ``running_fields`` has a name that is not a plain identifier: the general function).
    """
    ns: dict[str, Any] = {"general": post_act_together, "hooks": hooks, "policy": policy,
                          "env": env, "nan": math.nan}
    lines = ["def post_act():",
             "    info = getattr(env, 'info', None)",
             "    if type(info) is dict and 'game_over' in info:",
             "        return general(hooks, policy, env)",
             "    try:",
             "        reward = env.reward",
             "    except (AttributeError, NotImplementedError):",
             "        reward = nan"]
    for j, hook in enumerate(hooks):
        fields = hook.running_fields
        if type(fields) is not tuple or not all(
                type(pair) is tuple and len(pair) == 2 and all(_plain_name(n) for n in pair)
                for pair in fields):
            return lambda: post_act_together(hooks, policy, env)
        ns[f"h{j}"], ns[f"F{j}"] = hook, fields
        lines.append(_POST_ACT_HOOK.format(j=j))
        lines += [f"        h{j}.{name} = t.{attribute}" for name, attribute in fields]
    exec("\n".join(lines), ns)  # noqa: S102 - only identifiers checked above go into the text
    return ns["post_act"]


def _plain_name(name: Any) -> bool:
    return type(name) is str and name.isidentifier() and not keyword.iskeyword(name) and \
        not name.startswith("__")
