"""Logged runs for the resume tests, in this process or each in a process of its own.

A run: ``rl.RandomPolicy`` on ``RandomWalk1D`` (``"single"``) or on a CartPole vector env of 3
sub-envs (``"vector"``), with every logger hook (CSV, TensorBoard, the learning curve, the
evaluations, a progress bar, summary lines), checkpointed every ``k`` env steps.

As a script (``python resumed_logs.py first|resumed DIR SETUP``):

* ``first``: the run never interrupted, logged in ``DIR/whole``, then the same run logged in
  ``DIR/killed``, which this process kills (SIGKILL) at env step ``kill_at``, after its checkpoint
  at env step ``k``;
* ``resumed`` (a fresh process): ``DIR/killed``'s newest checkpoint resumed and run to the end.

Each run that ends writes its hooks' records to ``<logdir>/hooks.json``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import stagerl as rl
from stagerl.checkpoints import CheckpointSchedule, ResumableExperiment, register, resume
from stagerl.logging import (
    ConsoleSummary,
    CSVLogger,
    Evaluate,
    PlotLearningCurve,
    ProgressBar,
    TensorBoardLogger,
)

SETUPS = {
    "single": {"steps": 300, "k": 120, "wait_at": 150, "kill_at": 190, "eval_every": 40},
    "vector": {"steps": 600, "k": 240, "wait_at": 300, "kill_at": 381, "eval_every": 60},
}


@register(name="resumed_logs.KillAt")  # one name whether run as a script or imported
@dataclass
class KillAt(rl.Hook):
    """Kills the process that built it (SIGKILL: nothing is flushed or closed) at env step
    ``at``, having waited ``wait`` seconds at env step ``wait_at`` (so that writers flushing
    every second have written what came after the checkpoint). A copy in another process
    kills nothing."""

    at: int
    wait_at: int
    wait: float = 0.0
    pid: int | None = None
    env_step: int = 0


@rl.push.dispatch
def _push_kill(hook: KillAt, stage: rl.PostActStage, policy, env):
    hook.env_step += getattr(env, "num_envs", 1)
    if hook.pid != os.getpid():
        return
    if hook.env_step == hook.wait_at:
        time.sleep(hook.wait)
    if hook.env_step == hook.at:
        os.kill(os.getpid(), signal.SIGKILL)


def experiment(setup: str, logdir: Path, *, steps: int | None = None,
               kill: KillAt | None = None, console_file=None) -> ResumableExperiment:
    """The run of ``setup`` logged in ``logdir`` (its checkpoints in ``logdir/checkpoints``)."""
    config = SETUPS[setup]
    if setup == "single":
        env, eval_env = rl.RandomWalk1D(), rl.RandomWalk1D()
    else:
        env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
        eval_env = rl.GymEnv("CartPole-v1", seed=1)
    steps = config["steps"] if steps is None else steps
    hooks = [
        Evaluate(config["eval_every"], 2, eval_env, max_episode_steps=50),
        # every row reaches the file at once: the worst case for rows written twice
        CSVLogger(logdir, flush_seconds=0),
        TensorBoardLogger(logdir, sps_every=50, flush_seconds=1),
        PlotLearningCurve(logdir / "learning_curve.png", window=5),
        ProgressBar(total=steps),
        ConsoleSummary(every_n_steps=config["eval_every"], total=steps, file=console_file),
        kill or KillAt(at=0, wait_at=0),
    ]
    return ResumableExperiment(rl.RandomPolicy(rng=0), env,
                               rl.StopAfterNSteps(steps, progress=False), rl.ComposedHook(*hooks),
                               checkpoints=CheckpointSchedule(config["k"], logdir / "checkpoints",
                                                              at_end=False))


def records(run: ResumableExperiment) -> dict:
    """What the hooks of ``run`` hold at its end, as JSON data."""
    evaluate, _, tensorboard, plot, bar, console = run.hook.hooks[:6]
    return {
        "plot": [plot.steps, plot.returns, plot.eval_steps, plot.eval_returns],
        "evaluate": [evaluate.env_step, evaluate.steps, evaluate.returns],
        "counts": [[h.env_step, h.episodes] for h in (tensorboard, plot, bar, console)],
        "bar": bar._bar is None,
    }


def main(mode: str, directory: str, setup: str) -> None:
    directory = Path(directory)
    if mode == "first":
        whole = experiment(setup, directory / "whole").run()
        (directory / "whole" / "hooks.json").write_text(json.dumps(records(whole)))
        print("--- killed run ---", flush=True)
        config = SETUPS[setup]
        kill = KillAt(config["kill_at"], config["wait_at"], wait=1.1, pid=os.getpid())
        experiment(setup, directory / "killed", kill=kill).run()
        raise SystemExit("the killed run was not killed")
    resumed = resume(directory / "killed" / "checkpoints").run()
    (directory / "killed" / "hooks.json").write_text(json.dumps(records(resumed)))


if __name__ == "__main__":
    main(*sys.argv[1:])
