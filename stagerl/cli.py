"""The ``stagerl`` command (also ``python -m stagerl``): run, list, plot and evaluate experiments.

::

    stagerl list
    stagerl run <experiment> [--steps N] [--seed S] [--device cpu|cuda|auto] [--logdir DIR]
                [--overwrite | --resume] [--checkpoint-every N]
                [--ray-workers N [--ray-address ADDR]]
                [--tensorboard | --no-tensorboard] [name=value ...]
    stagerl run <experiment> --help          the experiment's hyper-parameters and defaults
    stagerl plot <logdir> [<logdir> ...] [--output PNG] [--window N]
    stagerl eval <logdir or checkpoint> [--episodes N] [--seed S] [--device D] [--video F]

Bad input (an unknown experiment or hyper-parameter, a value of the wrong type, a log directory
that holds a run, CUDA asked for on a machine without it, TensorBoard asked for but not
installed, a damaged or crafted checkpoint for ``eval`` or ``run --resume``) is one line on
standard error and exit status 2, with nothing written. Each
subcommand has its own ``argparse`` parser: the hyper-parameters of ``run`` depend on the
experiment named, and ``stagerl list`` must not import torch. See ``docs/logging.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

__all__ = ["main", "UsageError"]

USAGE = """usage: stagerl <command> [arguments]

commands:
  run <experiment> [options] [name=value ...]   train a named experiment, write its log directory
  list                                          the named experiments, one line each
  plot <logdir> [<logdir> ...]                  learning curves of runs in one PNG
  eval <logdir or checkpoint>                   evaluate a run's checkpoint (--video to film it)

`stagerl <command> --help` tells more; `stagerl run <experiment> --help` lists its
hyper-parameters."""


class UsageError(Exception):
    """Bad input: reported as one line and exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _count(text: str) -> int:
    """A positive or zero count: ``50000``, ``50_000`` or ``5e4``."""
    try:
        return int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            value = None
        if value is None or not value.is_integer():
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        return int(value)


# ---- stagerl list ---------------------------------------------------------------------------


def list_command(argv: list[str]) -> int:
    parser = _Parser(prog="stagerl list", description="The named experiments, one line each.")
    parser.parse_args(argv)
    from stagerl.experiments.registry import describe, names

    found = names()
    width = max(map(len, found), default=0)
    for name in found:
        print(f"{name:<{width}}  {describe(name)}")
    return 0


# ---- stagerl run ----------------------------------------------------------------------------


def _run_parser() -> _Parser:
    parser = _Parser(
        prog="stagerl run", add_help=False,
        usage="stagerl run <experiment> [--steps N] [--seed S] [--device cpu|cuda|auto] "
              "[--logdir DIR] [--overwrite | --resume] [--checkpoint-every N] "
              "[--ray-workers N [--ray-address ADDR]] [--tensorboard | --no-tensorboard] "
              "[name=value ...]",
        description="Train a named experiment, evaluate it and write its log directory: "
                    "config.json, episodes.csv, updates.csv, TensorBoard event files, "
                    "learning_curve.png, checkpoints/ and summary.json. Ctrl-C saves a "
                    "checkpoint; --resume continues the run from its newest one.")
    parser.add_argument("experiment", help="a name from `stagerl list`")
    parser.add_argument("overrides", nargs="*", metavar="name=value",
                        help="hyper-parameters (`stagerl run <experiment> --help` lists them)")
    parser.add_argument("--steps", type=_count, metavar="N",
                        help="env steps to train (default: the experiment's)")
    parser.add_argument("--seed", type=_count, metavar="S",
                        help="default 0 (with --resume: the run's)")
    parser.add_argument("--device", default="auto", metavar="cpu|cuda|auto",
                        help="default auto: CUDA where there is one")
    parser.add_argument("--logdir", metavar="DIR",
                        help="default runs/<experiment>/<timestamp>-seed<S>")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the run in a log directory that holds one")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in --logdir DIR from its newest checkpoint, to "
                             "--steps N env steps in all (default: the run's own); it ends as "
                             "the run that was never stopped would have")
    parser.add_argument("--checkpoint-every", type=_count, metavar="N",
                        help="env steps between checkpoints (default 10,000 and the last "
                             "step; 0: no checkpoints)")
    parser.add_argument("--ray-workers", type=_count, metavar="N",
                        help="act in N Ray rollout workers (pip install 'stagerl[ray]'); "
                             "not checkpointed")
    parser.add_argument("--ray-address", metavar="ADDR",
                        help="the Ray cluster to join (default: a local Ray)")
    parser.add_argument("--tensorboard", action=argparse.BooleanOptionalAction, default=None,
                        help="TensorBoard event files (default: when tensorboard is installed)")
    parser.add_argument("-h", "--help", action="store_true", help="show this help")
    return parser


def _run_help(parser: _Parser, experiment: str | None) -> int:
    parser.print_help()
    if experiment is None:
        return 0
    from stagerl.experiments.registry import describe, get_experiment, hyper_parameters

    config = get_experiment(experiment).config
    rows = [(name, kind, repr(default), comment)
            for name, kind, default, comment in hyper_parameters(experiment)]
    print(f"\n{experiment}: {describe(experiment)}")
    doc = (config.__doc__ or "").strip()
    if doc and not doc.startswith(f"{config.__name__}("):  # not the dataclass's own signature
        print("\n" + "\n".join(line.strip() for line in doc.splitlines()))
    print("\nhyper-parameters (name=value):")
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for name, kind, default, comment in rows:
        line = f"  {name:<{widths[0]}}  {kind:<{widths[1]}}  {default:<{widths[2]}}  {comment}"
        print(line.rstrip())
    return 0


def run_command(argv: list[str]) -> int:
    parser = _run_parser()
    if "-h" in argv or "--help" in argv:
        positional = [a for a in argv if not a.startswith("-") and "=" not in a]
        experiment = positional[0] if positional else None
        if experiment is not None:
            _checked(lambda: __import__("stagerl.experiments.registry").experiments.registry
                     .get_experiment(experiment))
        return _run_help(parser, experiment)
    if not [a for a in argv if not a.startswith("-")]:
        raise UsageError("which experiment? stagerl run <experiment> (stagerl list shows them)")
    args = parser.parse_intermixed_args(argv)
    positional = [args.experiment, *args.overrides]  # the experiment is the one without "="
    names = [p for p in positional if "=" not in p]
    if not names:
        raise UsageError("which experiment? stagerl run <experiment> (stagerl list shows them)")
    args.experiment = names[0]
    args.overrides = [p for p in positional if p is not names[0]]
    from stagerl.experiments.registry import parse_overrides
    from stagerl.experiments.runner import execute, prepare
    from stagerl.logging.logdir import default_logdir

    def checked_request():
        overrides = parse_overrides(args.experiment, args.overrides)
        if args.steps is not None and overrides.get("steps", args.steps) != args.steps:
            raise ValueError(f"steps is given twice: --steps {args.steps} and "
                             f"steps={overrides['steps']}")
        if args.resume and args.logdir is None:
            raise ValueError("--resume continues the run in a log directory: pass its "
                             "--logdir DIR")
        logdir = args.logdir or default_logdir(args.experiment, args.seed or 0)
        every = args.checkpoint_every
        checkpoints = {} if every is None else {"checkpoint_every": every or None}
        return prepare(args.experiment, args.steps, args.seed, args.device, logdir,
                       overwrite=args.overwrite, tensorboard=args.tensorboard,
                       overrides=overrides, resume=args.resume, ray_workers=args.ray_workers,
                       ray_address=args.ray_address, **checkpoints)

    prepared = _checked(checked_request)
    try:
        summary = execute(prepared)
    except KeyboardInterrupt as interrupt:
        saved = str(interrupt).split("checkpoint written to ", 1)
        if len(saved) == 2:
            print(f"stagerl run: interrupted; checkpoint written to {saved[1]}; continue "
                  f"with: stagerl run {prepared.name} --logdir {prepared.logdir} --resume",
                  file=sys.stderr)
        else:
            print(f"stagerl run: interrupted; the logs so far are in {prepared.logdir}",
                  file=sys.stderr)
        return 130
    print(_trained_line(summary))
    print(f"evaluation: return {summary['eval_return_mean']:.4g} ± "
          f"{summary['eval_return_std']:.3g} over {summary['eval_episodes']} deterministic "
          "episodes")
    logdir = summary["logdir"]
    print(f"logs: {logdir}  (stagerl plot {logdir}; tensorboard --logdir "
          f"{Path(logdir).parent})")
    return 0


def _trained_line(summary: dict) -> str:
    """What this process trained: a resumed run counts the steps since the resume."""
    resumed_at = summary.get("resumed_at_step")
    steps = summary["env_steps"] - (resumed_at or 0)
    line = (f"{summary['experiment']} seed {summary['seed']}: {steps:,} env steps in "
            f"{summary['wall_seconds']:.1f} s ({summary['steps_per_second']:,.0f} steps/s)")
    if resumed_at is not None:
        line += f", resumed at env step {resumed_at:,} ({summary['env_steps']:,} in all)"
    return line


def _checked(build):
    """``build()``, its bad-input errors turned into :class:`UsageError`."""
    import gymnasium

    try:
        return build()
    except (ValueError, TypeError, gymnasium.error.Error) as error:
        raise UsageError(str(error)) from None


# ---- stagerl plot ---------------------------------------------------------------------------


def plot_command(argv: list[str]) -> int:
    parser = _Parser(prog="stagerl plot",
                     description="Learning curves of one or several runs in one PNG; runs of "
                                 "one experiment and hyper-parameters (seeds apart) are drawn "
                                 "as their mean and a band of one standard deviation.")
    parser.add_argument("logdirs", nargs="+", metavar="logdir")
    parser.add_argument("-o", "--output", metavar="PNG",
                        help="default: <logdir>/learning_curve.png for one run, "
                             "learning_curves.png here for several")
    parser.add_argument("--window", type=_count, default=20, metavar="N",
                        help="episodes in the moving average (default 20)")
    args = parser.parse_args(argv)
    if args.window < 1:
        raise UsageError(f"--window must be at least 1, got {args.window}")
    missing = [d for d in args.logdirs if not Path(d).is_dir()]
    if missing:
        raise UsageError(f"no such log directory: {', '.join(missing)}")
    from stagerl.logging.plotting import plot_logdirs

    output = args.output or (Path(args.logdirs[0]) / "learning_curve.png"
                             if len(args.logdirs) == 1 else Path("learning_curves.png"))
    path = _checked(lambda: plot_logdirs(args.logdirs, output, args.window))
    print(path)
    return 0


# ---- stagerl eval ---------------------------------------------------------------------------


def eval_command(argv: list[str]) -> int:
    """``stagerl eval <logdir or checkpoint> [--episodes N] [--seed S] [--device D]
    [--video out.gif|out.mp4]``: deterministic episodes of a run's checkpoint."""
    parser = _Parser(prog="stagerl eval",
                     description="Evaluate a run's checkpoint: deterministic episodes on the "
                                 "run's evaluation env. A log directory or a directory of "
                                 "checkpoints means its newest step-N checkpoint.")
    parser.add_argument("path", metavar="logdir_or_checkpoint")
    parser.add_argument("--episodes", type=_count, default=20, metavar="N",
                        help="default 20")
    parser.add_argument("--seed", type=_count, metavar="S",
                        help="the evaluation env's seed (default: that of the run's final "
                             "evaluation, which this then repeats)")
    parser.add_argument("--device", default="cpu", metavar="cpu|cuda|auto",
                        help="default cpu")
    parser.add_argument("--video", metavar="out.gif|out.mp4",
                        help="film the first episode (.mp4: pip install 'stagerl[video]')")
    args = parser.parse_args(argv)
    if args.video is not None:
        import os

        # Frames are drawn off-screen: no display wanted (SDL, under gymnasium's renderers,
        # otherwise complains on stderr on a machine without a desktop session).
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    from stagerl.experiments.checkpoint_evaluation import evaluate_checkpoint

    def evaluated():
        try:
            return evaluate_checkpoint(args.path, args.episodes, video=args.video,
                                       seed=args.seed, device=args.device)
        except ImportError as error:
            raise ValueError(str(error)) from None

    result = _checked(evaluated)
    print(f"{result['experiment']} at env step {result['env_steps']:,} "
          f"({result['checkpoint']}): return {result['return_mean']:.4g} ± "
          f"{result['return_std']:.3g} over {result['episodes']} deterministic episodes "
          f"(seed {result['seed']})")
    if result["video"] is not None:
        print(f"video: {result['video']}")
    return 0


# ---- entry point ----------------------------------------------------------------------------

COMMANDS = {"run": run_command, "list": list_command, "plot": plot_command,
            "eval": eval_command}


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] == "--version":
        from importlib.metadata import version

        print(f"stagerl {version('stagerl')}")
        return 0
    command = COMMANDS.get(argv[0])
    try:
        if command is None:
            import difflib

            close = difflib.get_close_matches(argv[0], list(COMMANDS), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise UsageError(f"unknown command {argv[0]!r}{hint} (run, list, plot, eval)")
        return command(argv[1:])
    except UsageError as error:
        name = f"stagerl {argv[0]}" if command is not None else "stagerl"
        print(f"{name}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before a run started (a run reports its own)
        print("stagerl: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
