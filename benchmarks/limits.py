"""How close each named experiment runs to its floor: the env steps plus the network arithmetic
its hyper-parameters demand, each done the cheapest way a hand-written loop could.

For every named experiment, on the CPU (``--device cuda``: the networks on the GPU), in one
process, the parts take turns in every repetition (medians of repetitions are printed):

* floor, env:   the raw env loop (gymnasium's, or the env's own ``act``/``reset``) with the
                run's number of acts and actions drawn before the clock starts;
* floor, act:   the acting forward passes of the run (one per act at the run's batch, the
                sub-envs; only the acts whose action needs the network: none in a warm-up of
                random actions, the greedy share of epsilon-greedy ones), through a numpy copy
                of the network, with no env;
* floor, learn: the run's gradient steps on the same networks, shapes and optimiser (fused
                Adam, foreach RMSprop) on random data already in memory: no sampling, one
                target-network forward per burst where the target is fixed inside it
                (prioritized replay: one per batch, as each batch is drawn after the last
                one's priorities are written), denormals flushed;
* run:          the experiment as ``stagerl run`` runs it (``stagerl.experiments.prepare`` and
                the run loop), without logging hooks;
* ratio:        run / (env + act + learn); budget: 1.25.

Each part is timed by the CPU seconds of this process (``--clock cpu``, the default; torch runs
at the run's one thread and the envs step in this process, so they are the seconds of work): on
a machine shared with other jobs, wall-clock seconds also count the time this process waited for
a core, which lands on whichever part ran then and moves a ratio by half either way.
``--clock wall`` times wall-clock seconds (for an idle machine, or an env in other processes).
On ``--device cuda`` the clock is the wall clock and each part waits for the GPU's work before
it stops (CPU seconds would miss that work); the floor's random data is made on the GPU.

The counts (acts, gradient steps, rollouts) are read from a first, untimed run of the same seed,
which makes the same decisions. A last run under ``cProfile`` splits the run's time by module:
the env, network arithmetic (torch, numpy acting), and what the floor does not have: sampling,
pushing (the traces), dispatch (the stages, plum), hooks, evaluation, the algorithms' Python.

    python benchmarks/limits.py                              # every experiment, full length
    python benchmarks/limits.py --only dqn-cartpole sac-pendulum --scale 0.1 --repeats 3
    python benchmarks/limits.py --scale 0.1 --write          # and write docs/performance.md

``--scale`` shortens every run (its ``steps`` and ``learning_starts`` alike, so a run keeps its
mix of warm-up and learning); ``--steps N`` runs every experiment ``N`` env steps;
``--max-steps N`` caps every run at ``N`` env steps (the long Atari and MuJoCo runs) after
either, but not below two rollouts of an on-policy run.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# Run as a script, this folder comes first on sys.path, and its trajectories.py benchmark would
# shadow the trajectories package that stagerl imports: the repository goes first, this folder
# last (for limits_floors).
_HERE = Path(__file__).resolve().parent
sys.path[:] = ([str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]
               + [str(_HERE)])

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402
from limits_floors import act_floor, env_floor, greedy_acts, learn_floor  # noqa: E402
from limits_floors_more import more_floors  # noqa: E402

import stagerl as rl  # noqa: E402
from stagerl.algorithms._checks import single_spaces  # noqa: E402
from stagerl.experiments import configure, names  # noqa: E402
from stagerl.experiments.runner import prepare  # noqa: E402
from stagerl.experiments.settings import torch_threads  # noqa: E402

BUDGET = 1.25
DOC = _HERE.parent / "docs" / "performance.md"
CPU = torch.device("cpu")
#: The profile's shares: the first entry whose fragment a function's file holds names it.
SHARES = (
    ("env", ("gymnasium/", "ale_py/", "cv2/", "pettingzoo/", "stagerl/envs/", "stagerl/core/env.py",
             "stagerl/multi_agent/env.py", "stagerl/multi_agent/wrappers.py",
             "stagerl/multi_agent/tic_tac_toe.py", "stagerl/multi_agent/rock_paper_scissors.py",
             "stagerl/multi_agent/pettingzoo.py")),
    ("network", ("torch/", "algorithms/dqn/networks.py", "algorithms/on_policy/networks.py",
                 "algorithms/off_policy/networks.py", "stagerl/utils/distributions.py")),
    ("evaluation", ("stagerl/core/evaluate.py",)),
    ("hooks", ("stagerl/logging/", "stagerl/core/hooks", "stagerl/core/episodes.py")),
    ("sampling", ("trajectories/samplers", "trajectories/controllers", "trajectories/prioritized",
                  "trajectories/sumtree", "algorithms/dqn/replay.py",
                  "algorithms/off_policy/replay.py", "algorithms/on_policy/rollout",
                  "trajectories/sequences", "trajectories/_window_starts", "trajectories/_rows",
                  "trajectories/lanes/ring_reads")),
    ("pushing", ("trajectories/", "stagerl/policies/agent.py", "<string>")),
    ("dispatch", ("plum/", "beartype/", "stagerl/core/")),
    ("python", ("stagerl/",)),
)
#: Library code whose time is its caller's share (numpy's Python layer, functools).
CALLERS_PAY = ("numpy/", "functools.py", "contextlib.py", "copy.py")
SPLIT = ("sampling", "pushing", "dispatch", "hooks", "evaluation", "python", "other")


@dataclass
class Row:
    """One experiment's medians (seconds) and its profile's shares of the run (fractions)."""

    name: str
    steps: int
    env: float
    act: float
    learn: float
    run: float
    shares: dict[str, float] = field(default_factory=dict)
    note: str = ""

    @property
    def floor(self) -> float:
        return self.env + self.act + self.learn

    @property
    def ratio(self) -> float:
        return self.run / self.floor


# ---- the run -----------------------------------------------------------------------------------


def prepared_run(name: str, overrides: dict, seed: int, device: str = "cpu"):
    """The experiment's env and agent, built as ``stagerl run`` builds them (no log directory,
    no progress: no logging hooks), its networks on ``device``."""
    return prepare(name, seed=seed, device=device, progress=False, overrides=dict(overrides),
                   checkpoint_every=None)


def run_loop(prepared) -> Callable[[], None]:
    stop = rl.StopAfterNSteps(prepared.steps, progress=False)
    experiment = rl.Experiment(prepared.agent, prepared.env, stop, rl.ComposedHook())
    threads = getattr(prepared.config, "torch_threads", 1)

    def go() -> None:
        with torch_threads(threads, CPU):
            experiment.run()
    return go




# ---- measuring -------------------------------------------------------------------------------


def overrides_for(name: str, steps: int | None, scale: float,
                  max_steps: int | None = None) -> dict:
    """The settings a shortened run changes: ``steps`` (and, scaled, ``learning_starts``);
    ``max_steps`` caps the length ``steps`` or ``scale`` gives, but not below two rollouts of
    an on-policy run."""
    config = configure(name)
    length = steps if steps is not None else max(1, round(config.steps * scale))
    if max_steps is not None and length > max_steps:
        # never below two rollouts of an on-policy run: a shorter one learns once or not at all
        rollout = (getattr(config, "n_steps", None) or 0) * (getattr(config, "num_envs", 1) or 1)
        length = max(max_steps, min(length, 2 * rollout))
    if length == config.steps:
        return {}
    changed = {"steps": length}
    starts = getattr(config, "learning_starts", None)
    if starts:
        changed["learning_starts"] = min(starts, round(starts * length / config.steps))
    return changed


class NoFloor(Exception):
    """The floor's hand-written parts cover flat observations only (an MLP's input)."""


def state_dim_of(env) -> int:
    """The size of one sub-env's flat observation; :class:`NoFloor` for the others (pixels,
    Dict and Tuple observations, games of several players)."""
    if hasattr(env, "players"):
        raise NoFloor("a game of several players")
    space = single_spaces(env, "limits")[0]  # one sub-env's
    if isinstance(space, gym.spaces.Discrete):
        return 1
    if isinstance(space, gym.spaces.Box) and len(space.shape) == 1:
        return int(space.shape[0])
    raise NoFloor(f"observations {space} (the floor's networks are MLPs on flat vectors)")


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def measure(name: str, overrides: dict, repeats: int, seed: int, clock: str = "cpu",
            device: str = "cpu") -> Row:
    """The experiment's floor parts and run, interleaved, ``repeats`` times, timed by ``clock``
    (:data:`CLOCKS`); then its profile. On an accelerator (``device``) the run's networks and
    the floor's live there, and every part waits for the device's work before its clock stops."""
    now = CLOCKS[clock]
    accelerator = torch.device(device).type != "cpu"
    counted = prepared_run(name, overrides, seed, device)
    env, policy = counted.env, getattr(counted.agent, "policy", counted.agent)
    more = more_floors(counted)  # pixels, games, memory, REPS (before the run: it counts)
    state_dim = 0 if more else state_dim_of(env)  # NoFloor for what the floor cannot build
    run_loop(counted)()  # untimed: warms the caches up and counts what the run does
    num_envs = getattr(env, "num_envs", 1)
    acts = -(-counted.steps // num_envs)
    parts = {
        "env": lambda: env_floor(counted, acts, seed),
        "act": lambda: act_floor(policy, round(greedy_acts(policy, acts, num_envs)), num_envs,
                                 state_dim, seed),
        "learn": lambda: learn_floor(policy, state_dim, acts, seed),
        "run": lambda: run_loop(prepared_run(name, overrides, seed, device)),
    }
    if more:  # limits_floors_more's parts in place of the MLP floor's
        parts.update(more.parts(acts, num_envs, seed))
    times: dict[str, list[float]] = {part: [] for part in parts}
    note = ""
    threads = getattr(counted.config, "torch_threads", 1)
    for _ in range(repeats):
        for part, build in parts.items():
            # The floor's random data is made on the run's device (the run places its own). Only
            # while it is built: a default device costs every torch call a Python hook.
            with contextlib.nullcontext() if part == "run" or not accelerator \
                    else torch.device(device):
                go = build()  # built outside the clock
            if go is None:
                note = "no learning floor for this policy"
                times[part].append(0.0)
                continue
            with torch_threads(threads, "cpu"):  # the floor at the run's threads
                start = now()
                go()
                if accelerator:
                    torch.accelerator.synchronize()
                times[part].append(now() - start)
    median = {part: statistics.median(values) for part, values in times.items()}
    return Row(name, counted.steps, median["env"], median["act"], median["learn"], median["run"],
               profile_shares(run_loop(prepared_run(name, overrides, seed, device))), note)


def profile_shares(go: Callable[[], None]) -> dict[str, float]:
    """Each share's fraction of the run's profiled time (a builtin counts as its caller, torch's
    own builtins as network arithmetic)."""
    profiler = cProfile.Profile()
    profiler.runcall(go)
    stats = pstats.Stats(profiler).stats
    totals: dict[str, float] = {}
    for (filename, _, function), (_, _, own, _, callers) in stats.items():
        if "torch" in function and filename == "~":
            totals["network"] = totals.get("network", 0.0) + own
        elif filename == "~" or any(part in filename for part in CALLERS_PAY):
            for caller, (_, _, caller_own, _) in callers.items():
                share = share_of(caller[0])
                totals[share] = totals.get(share, 0.0) + caller_own
        else:
            totals[share_of(filename)] = totals.get(share_of(filename), 0.0) + own
    whole = sum(totals.values()) or 1.0
    return {share: value / whole for share, value in totals.items()}


def share_of(filename: str) -> str:
    path = filename.replace(os.sep, "/")
    for share, fragments in SHARES:
        if any(fragment in path for fragment in fragments):
            return share
    return "other"


# ---- the table ---------------------------------------------------------------------------------


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (f"{model}, {os.cpu_count()} cores, {platform.system()}, Python "
            f"{platform.python_version()}, torch {torch.__version__} at 1 thread, "
            f"load average {load} at the start")


def table(rows: list[Row], repeats: int) -> list[str]:
    lines = [f"| experiment | env steps | env s | act s | learn s | floor s | run s | run/floor "
             f"| profile of the run: {', '.join(('env', 'network') + SPLIT)} (%) |",
             "|---|--:|--:|--:|--:|--:|--:|--:|---|"]
    for row in rows:
        shares = " / ".join(f"{100 * row.shares.get(s, 0.0):.0f}"
                            for s in ("env", "network") + SPLIT)
        flag = "" if row.ratio <= BUDGET else " (above)"
        note = f" {row.note}" if row.note else ""
        lines.append(f"| {row.name} | {row.steps:,} | {row.env:.2f} | {row.act:.2f} | "
                     f"{row.learn:.2f} | {row.floor:.2f} | {row.run:.2f} | "
                     f"{row.ratio:.2f}{flag} | {shares}{note} |")
    return lines


def write_doc(lines: list[str], command: str, where: str) -> None:
    text = DOC.read_text() if DOC.exists() else ""
    begin, end = "<!-- limits table: begin -->", "<!-- limits table: end -->"
    # The command without "python" first: the docs' command test runs what a page shows.
    block = "\n".join([begin, "", f"`{command}`, on {where}:", "", *lines, "", end])
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    DOC.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these experiments only")
    parser.add_argument("--steps", type=int, help="env steps of every run (default: its own)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="each run's steps and learning_starts times this (0 < scale <= 1)")
    parser.add_argument("--max-steps", type=int,
                        help="at most this many env steps in any run (after --steps/--scale)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock", choices=tuple(CLOCKS),
                        help="time CPU seconds of this process (the default on the CPU) or "
                             "wall-clock seconds (the default, and the only clock, on cuda)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="where the networks of the runs and floors live (default cpu)")
    parser.add_argument("--write", action="store_true", help="write docs/performance.md too")
    args = parser.parse_args(argv)
    chosen = args.only or names()
    unknown = [name for name in chosen if name not in names()]
    if unknown:
        parser.error(f"no experiment named {', '.join(unknown)}; the names: {', '.join(names())}")
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be a positive int, got {args.steps}")
    if args.max_steps is not None and args.max_steps < 1:
        parser.error(f"--max-steps must be a positive int, got {args.max_steps}")
    if not 0 < args.scale <= 1:
        parser.error(f"--scale must be in (0, 1], got {args.scale}")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: this machine's torch sees no CUDA device; use --device cpu")
    if args.device == "cuda" and args.clock == "cpu":
        parser.error("--clock cpu misses the GPU's work on --device cuda; use --clock wall")
    args.clock = args.clock or ("cpu" if args.device == "cpu" else "wall")
    if args.repeats < 1 or args.seed < 0:
        parser.error(f"--repeats must be >= 1 and --seed >= 0, got {args.repeats}, {args.seed}")
    where = machine()
    rows, left_out = [], []
    for name in chosen:
        try:
            rows.append(measure(name, overrides_for(name, args.steps, args.scale, args.max_steps),
                                args.repeats, args.seed, args.clock, args.device))
        except NoFloor as why:
            left_out.append(f"{name} ({why})")
    lines = table(rows, args.repeats)
    if left_out:
        lines += ["", "No floor measured (the floor's parts are written for MLPs on flat "
                  "observations): " + "; ".join(left_out) + "."]
    seconds = "CPU seconds of this process" if args.clock == "cpu" else "wall-clock seconds"
    on = "the CPU" if args.device == "cpu" else f"{torch.cuda.get_device_name()} (cuda)"
    print(f"stagerl limits: run / floor on {on}, {seconds}, medians of {args.repeats} "
          f"repetitions; {where}")
    print("\n".join(lines))
    if args.write:
        command = "benchmarks/limits.py " + " ".join(argv if argv is not None
                                                      else sys.argv[1:])
        write_doc(lines, command.strip(), f"{where}, in {seconds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
