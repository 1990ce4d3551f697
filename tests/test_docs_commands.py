"""Every command line README.md and docs/**/*.md show runs, in a temporary directory with fewer
steps; the pages' Python blocks that no other test runs run here too.

Commands are read from the pages: every line of a ``bash`` or ``console`` block, each line of an
unlabeled block that begins with a command word (``stagerl``, ``python``, ``make``, ...), and
inline code that begins with one. ``COMMANDS`` says how each is run here;
``test_every_command_the_docs_show_has_a_row`` fails for a command without a row (or a row
without a command), so a command added to a page is run from then on, or skipped in that table
with its reason in plain sight. A ``stagerl`` command written as syntax (``stagerl run NAME
--logdir DIR``, ``stagerl plot <logdir> [...]``) or naming a subcommand alone (``stagerl
eval``) is checked against the command line's own help instead: the subcommand exists and takes
every option named.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from docs_commands import (
    LANGUAGES,
    PAGES,
    RAY_SESSION,
    ROOT,
    Interrupted,
    Make,
    OnRay,
    Page,
    Process,
    RaySession,
    Run,
    Skip,
    Workspace,
    benchmarks_exist,
    commands_in_docs,
    extras_exist,
    is_syntax,
    scripts_exist,
    site_builds_elsewhere,
)

#: The run length each experiment's commands are cut to.
STEPS = {"dqn-cartpole": "300", "ppo-cartpole": "512", "sac-pendulum": "300",
         "dqn-atari": "300", "ppo-atari": "256", "sac-halfcheetah": "300", "ppo-hopper": "512",
         "td3-hopper": "300", "dqn-tictactoe": "300", "dqn-tictactoe-selfplay": "300",
         "ppo-rps": "300", "vpg-cartpole": "1000", "a3c-cartpole": "480"}
INTERRUPTED = "stagerl run dqn-cartpole --logdir runs/a --steps 1000, stopped by Ctrl-C"
#: docs/distributed.md's Python blocks: on Ray, in the Ray session (PYTHON_HERE).
DISTRIBUTED = Page(lambda namespace: None, shorter=(("50_000", "600"),),
                   left_out=(('ray_address="head-node:6379"', "a Ray cluster at head-node:6379"),))
#: What some commands need first, that no page shows as a command.
SETUP = {
    RAY_SESSION: RaySession("docs/distributed.md", DISTRIBUTED),
    INTERRUPTED: Interrupted(),
}


# ---- what a command must have done ------------------------------------------------------------


def ran(**settings):
    """It trained (the cut length) and evaluated (20 episodes); its log directory is where the
    docs say (``runs/<experiment>/<YYYYmmdd-HHMMSS>-seed<S>`` unless ``--logdir``) and its
    config.json holds ``settings`` (the seed, hyper-parameters)."""
    def check(command, result, ws):
        summary = json.loads((ws.root / result.logdir / "summary.json").read_text())
        config = json.loads((ws.root / result.logdir / "config.json").read_text())
        assert summary["env_steps"] == config["steps"] == int(STEPS[summary["experiment"]])
        assert summary["eval_episodes"] == 20
        if "--logdir" not in command:
            assert re.fullmatch(rf"runs/{summary['experiment']}/\d{{8}}-\d{{6}}-seed"
                                rf"{config['seed']}(-\d+)?", result.logdir.as_posix())
        for key, value in settings.items():
            assert (config[key] if key == "seed" else config["config"][key]) == value, key
    return check


def limits_names_exist(command):
    """benchmarks/limits.py is there and the experiments its ``--only`` names exist (its own
    test, tests/test_limits.py, runs it tiny)."""
    from stagerl.experiments import names

    words = command.split()
    assert (ROOT / words[1]).is_file(), words[1]
    if "--only" in words:
        chosen = words[words.index("--only") + 1:]
        chosen = chosen[:next((i for i, w in enumerate(chosen) if w.startswith("--")),
                              len(chosen))]
        assert chosen and set(chosen) <= set(names()), chosen


def printed(*texts):
    def check(command, result, ws):
        for text in texts:
            assert text in result.out, result.out
    return check


def listed_every_experiment(command, result, ws):
    from stagerl.experiments import names

    assert [line.split()[0] for line in result.out.splitlines()] == names()


def resumed(command, result, ws):
    summary = ws.summary(command)
    interrupted_at = int(ws.run(INTERRUPTED).err.split("step-")[-1].split(";")[0])
    assert summary["env_steps"] == 1000 and summary["resumed_at_step"] == interrupted_at
    assert f"resumed at env step {interrupted_at:,} (1,000 in all)" in result.out


def plotted_runs(count):
    def check(command, result, ws):
        path = ws.root / result.out.split()[-1]
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(ws.argv(command)) - 1 >= count  # the runs the glob matched
    return check


def evaluated(episodes, video=None, repeats=None):
    """``episodes`` episodes evaluated; ``video`` written; the return of the final evaluation
    of the run of command ``repeats`` repeated."""
    def check(command, result, ws):
        assert f"over {episodes} deterministic episodes" in result.out, result.out
        if repeats is not None:
            mean = ws.summary(repeats)["eval_return_mean"]
            assert f"return {mean:.4g} ±" in result.out, result.out
        if video is not None:
            assert f"video: {video}" in result.out
            head = (ws.root / video).read_bytes()[:12]
            assert head[:6] == b"GIF89a" if video.endswith(".gif") else head[4:8] == b"ftyp"
    return check


def on_cuda_or_refused(command, result, ws):
    """On a machine with CUDA, a run there; without, one line naming the devices that work,
    exit 2, nothing written (as docs/gpu.md says)."""
    import torch

    if torch.cuda.is_available():
        assert result.status == 0 and ws.summary(command)["device"].startswith("cuda")
        return
    assert result.status == 2 and len(result.err.splitlines()) == 1, result.err
    assert "'cpu'" in result.err and "'auto'" in result.err, result.err
    assert all((d / "summary.json").exists() for d in (ws.root / "runs").glob("*/*"))


def on_two_workers(command, result, ws):
    assert ws.summary(command)["workers"]["workers"] == 2
    ran()(command, result, ws)


LONG_BENCHMARK = "a long benchmark: full trainings of stagerl and Stable-Baselines3, seeds 0-2"
TIMING = "a timing benchmark (minutes, meaningful only on an idle machine)"
MEMORY = "allocates and fills a replay of several GB (run it alone, on a machine with room)"
GAME_LEARNING = ("a long benchmark: full trainings of the three game experiments, seeds 0-2 "
                 "(tests/stagerl/multi_agent/test_multi_agent_docs.py runs it small)")
PACKAGE_INDEX = "installs from the package index (the test runs where it is installed)"

#: How each command the docs show runs here (commands written as syntax are checked by
#: test_the_syntax_the_docs_show_is_the_command_lines; see the module's docstring).
COMMANDS = {
    "stagerl list": Process(listed_every_experiment),
    "python -m stagerl ...": Process(listed_every_experiment,  # "..." stands for a command
                                     argv=("python", "-m", "stagerl", "list")),
    "stagerl run dqn-cartpole": Run(ran(seed=0)),
    "stagerl run dqn-cartpole --help": Run(printed("dqn-cartpole:", "hyper-parameters",
                                                   "learning_rate", "exploration_fraction")),
    "stagerl run ppo-cartpole --help": Run(printed("ppo-cartpole:", "net_arch", "clip_range")),
    "stagerl run ppo-cartpole --seed 1 --steps 50000 learning_rate=3e-4 net_arch=64,64":
        Run(ran(seed=1, learning_rate=3e-4, net_arch=[64, 64])),
    "stagerl run ppo-cartpole --seed 1 learning_rate=3e-4": Run(ran(seed=1, learning_rate=3e-4)),
    "stagerl run ppo-cartpole net_arch=64,64": Run(ran(net_arch=[64, 64])),
    "stagerl run ppo-cartpole net_arch=64,64 max_grad_norm=inf":
        Run(ran(net_arch=[64, 64], max_grad_norm={"float": "inf"})),
    "stagerl run ppo-cartpole --steps 4000": Run(ran(seed=0)),
    "stagerl run dqn-cartpole --steps 20000 --seed 3 learning_rate=1e-3 net_arch=64,64":
        Run(ran(seed=3, learning_rate=1e-3, net_arch=[64, 64])),
    "stagerl run sac-pendulum": Run(ran(seed=0)),
    "stagerl run dqn-cartpole --device cuda": Run(on_cuda_or_refused, status=None),
    "stagerl run dqn-cartpole --logdir runs/a --resume":
        Run(resumed, after=(INTERRUPTED,), shorten=False),
    "stagerl plot runs/dqn-cartpole/*": Run(plotted_runs(2), after=(
        "stagerl run dqn-cartpole",
        "stagerl run dqn-cartpole --steps 20000 --seed 3 learning_rate=1e-3 net_arch=64,64")),
    "stagerl eval runs/dqn-cartpole/<run> --video first.mp4": Run(
        evaluated(20, "first.mp4", repeats="stagerl run dqn-cartpole"),
        needs=("imageio_ffmpeg", "pygame")),
    "stagerl eval runs/a --episodes 10": Run(
        evaluated(10), after=("stagerl run dqn-cartpole --logdir runs/a --resume",)),
    "stagerl run dqn-cartpole --logdir runs/dqn": Run(ran(seed=0)),
    "stagerl eval runs/dqn": Run(evaluated(20, repeats="stagerl run dqn-cartpole --logdir "
                                                      "runs/dqn"),
                                 after=("stagerl run dqn-cartpole --logdir runs/dqn",)),
    "stagerl eval runs/dqn/checkpoints/best --episodes 5 --video best.gif": Run(
        evaluated(5, "best.gif"), after=("stagerl run dqn-cartpole --logdir runs/dqn",),
        needs=("pygame",)),
    "stagerl run ppo-cartpole --ray-workers 2": OnRay(on_two_workers),
    "stagerl run dqn-atari --logdir runs/breakout": Run(ran(seed=0), needs=("ale_py", "cv2")),
    "stagerl run ppo-atari env_id=PongNoFrameskip-v4 --logdir runs/pong --seed 1": Run(
        ran(seed=1, env_id="PongNoFrameskip-v4"), needs=("ale_py", "cv2")),
    "stagerl run sac-halfcheetah --steps 50000 --logdir runs/cheetah": Run(
        ran(seed=0), needs=("mujoco",)),
    "stagerl run ppo-hopper --logdir runs/hopper --seed 1": Run(ran(seed=1),
                                                                 needs=("mujoco",)),
    "stagerl run td3-hopper env_id=Walker2d-v5 --logdir runs/walker": Run(
        ran(seed=0, env_id="Walker2d-v5"), needs=("mujoco",)),
    "stagerl run dqn-tictactoe --logdir runs/ttt": Run(ran(seed=0)),
    "stagerl run dqn-tictactoe-selfplay --logdir runs/selfplay gamma=0.95": Run(ran(gamma=0.95)),
    "stagerl run ppo-rps --logdir runs/rps --seed 1": Run(ran(seed=1)),
    "stagerl eval runs/ttt --episodes 100": Run(
        evaluated(100), after=("stagerl run dqn-tictactoe --logdir runs/ttt",)),
    "stagerl plot runs/ttt": Run(plotted_runs(1),
                                 after=("stagerl run dqn-tictactoe --logdir runs/ttt",)),
    "stagerl run vpg-cartpole baseline=linear": Run(ran(seed=0, baseline="linear")),
    "stagerl run a3c-cartpole --ray-workers 2": OnRay(on_two_workers),
    "make run": Make(".venv/bin/stagerl run dqn-cartpole", variables=("STEPS=300",),
                     tiny=".venv/bin/stagerl run dqn-cartpole --steps 300",
                     check=ran(seed=0)),
    "make test": Make('.venv/bin/python -m pytest -m "not slow" -q',
                      narrowed=("tests/test_layers.py", "-p", "no:cacheprovider"),
                      check=printed("passed")),
    "make bench": Skip(TIMING, benchmarks_exist),
    "python benchmarks/algorithms.py": Skip(LONG_BENCHMARK, scripts_exist),
    "python benchmarks/algorithms.py --only dqn": Skip(LONG_BENCHMARK, scripts_exist),
    "python benchmarks/algorithms.py --only dqn:rl-zoo --seeds 0 1 2 3 4 5 6 7 8 9":
        Skip(LONG_BENCHMARK, scripts_exist),
    "python benchmarks/algorithms.py --only dqn:rl-zoo": Skip(LONG_BENCHMARK, scripts_exist),
    "python benchmarks/algorithms.py --only on_policy": Skip(LONG_BENCHMARK, scripts_exist),
    "python benchmarks/algorithms.py --only source_algorithms": Skip(LONG_BENCHMARK,
                                                                  scripts_exist),
    "flock /tmp/stagerl-timing.lock python benchmarks/algorithms.py --only "
    "off_policy_continuous": Skip(LONG_BENCHMARK, scripts_exist),
    "flock /tmp/stagerl-timing.lock .venv/bin/python benchmarks/checkpoints.py":
        Skip(TIMING, scripts_exist),
    # The loop benchmarks are quick: a short run of each prints its table (the figures need an
    # idle machine, so nothing is asserted on them).
    "python benchmarks/loop.py --steps 100000 --repeats 5": Process(
        printed("run(RandomPolicy(), GymEnv, StopAfterNSteps)", ">= 0.90"),
        argv=("python", str(ROOT / "benchmarks/loop.py"), "--steps", "2000", "--repeats", "1")),
    "python benchmarks/vector.py --steps 40000 --repeats 5": Process(
        printed("ratio (median of repetitions)", "budget >= 0.85"),
        argv=("python", str(ROOT / "benchmarks/vector.py"), "--steps", "2000", "--repeats", "1")),
    "python benchmarks/multi_agent.py": Skip(TIMING, scripts_exist),
    "python benchmarks/envpool.py": Skip(TIMING, scripts_exist),
    "python benchmarks/real_envs_speed.py dqn-atari": Skip(TIMING, scripts_exist),
    "python benchmarks/atari_memory.py --library stagerl --transitions 1000000":
        Skip(MEMORY, scripts_exist),
    "python benchmarks/atari_memory.py --library sb3 --transitions 1000000 --limit-gb 3":
        Skip(MEMORY, scripts_exist),
    "python benchmarks/limits.py": Skip(TIMING, limits_names_exist),
    "python benchmarks/limits.py --only dqn-cartpole sac-pendulum --scale 0.1 --repeats 3":
        Skip(TIMING, limits_names_exist),
    "python benchmarks/limits.py --scale 0.1 --max-steps 4000 --write": Skip(TIMING,
                                                                         limits_names_exist),
    "python benchmarks/limits.py --device cuda --only dqn-cartpole dqn-atari ppo-atari --scale "
    "0.1 --max-steps 3000 --repeats 3": Skip("needs a CUDA device and times it",
                                             limits_names_exist),
    "python benchmarks/multi_agent_learning.py": Skip(GAME_LEARNING, scripts_exist),
    "python benchmarks/recurrent.py": Skip(LONG_BENCHMARK, scripts_exist),
    "python benchmarks/scaling.py": Skip(TIMING, scripts_exist),
    "python benchmarks/scaling.py --section waits --quick": Skip(TIMING, scripts_exist),
    "pytest -m slow tests/stagerl/algorithms/test_dqn_learning.py":
        Skip("the slow learning tests: full trainings, minutes each", scripts_exist),
    "mkdocs serve": Skip("serves the site until stopped; tests/test_docs.py builds it "
                         "(mkdocs build --strict)", site_builds_elsewhere),
    "pip install stagerl": Skip(PACKAGE_INDEX, extras_exist),
    "pip install -e '.[dev]'": Skip(PACKAGE_INDEX, extras_exist),
    'pip install "stagerl[tensorboard]"': Skip(PACKAGE_INDEX, extras_exist),
    "pip install 'stagerl[tensorboard]'": Skip(PACKAGE_INDEX, extras_exist),
    'pip install "stagerl[notebook]"': Skip(PACKAGE_INDEX, extras_exist),
    "pip install 'stagerl[video]'": Skip(PACKAGE_INDEX, extras_exist),
    "pip install 'stagerl[ray]'": Skip(PACKAGE_INDEX, extras_exist),
    "pip install 'stagerl[pettingzoo]'": Skip(PACKAGE_INDEX, extras_exist),
    "pip install 'stagerl[atari]'": Skip(PACKAGE_INDEX, extras_exist),
    "pip install 'stagerl[envpool]'": Skip(PACKAGE_INDEX, extras_exist),
    "pip install 'stagerl[mujoco]'": Skip(PACKAGE_INDEX, extras_exist),
}


# ---- the pages' Python blocks -----------------------------------------------------------------



def _acts_counted(namespace):
    import stagerl as rl

    hook = namespace["CountActs"]() + namespace["BestReturn"]()
    rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), rl.StopAfterNSteps(50, progress=False),
           hook)
    assert hook[0].acts == 50 and hook[1].best == 1.0


def _longest_episode_found(namespace):
    import stagerl as rl

    assert len(namespace["hook"].rewards) > 10  # every sub-env's episodes
    hook = namespace["LongestEpisode"]()
    rl.run(rl.RandomPolicy(rng=0), rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0),
           rl.StopAfterNSteps(200, progress=False), hook)
    assert 8 <= hook.longest < 200


def _always_right(namespace):
    import stagerl as rl

    assert rl.plan(namespace["AlwaysRight"](), rl.RandomWalk1D()) == 1


def _trained_briefly(namespace):
    assert namespace["summary"]["env_steps"] == 300 and len(namespace["hook"].rewards) > 3


#: Pages whose Python blocks no other test runs.
PYTHON_HERE = {
    "docs/dispatch.md": Page(_always_right),
    "docs/index.md": Page(lambda namespace: len(namespace["hook"].rewards) > 10),
    "docs/getting_started.md": Page(_trained_briefly,
                                    shorter=(("50_000", "300"), ("20_000", "300"))),
    "docs/vector_envs.md": Page(_longest_episode_found, shorter=(("50_000", "500"),)),
    "docs/write_a_hook.md": Page(_acts_counted),
    "docs/distributed.md": DISTRIBUTED,  # checked in test_the_commands_and_examples_on_ray_run
}
#: Pages whose Python blocks run in a test of their own.
PYTHON_TESTS = {
    "README.md": "tests/test_readme.py",
    "docs/algorithms/index.md": "tests/stagerl/algorithms/test_algorithm_docs.py",
    "docs/algorithms/dqn.md": "tests/stagerl/algorithms/test_algorithm_docs.py",
    "docs/algorithms/sac_td3.md": "tests/stagerl/algorithms/test_algorithm_docs.py",
    "docs/algorithms/on_policy.md": "tests/stagerl/algorithms/test_on_policy_example.py",
    "docs/atari.md": "tests/stagerl/envs/test_atari_docs.py",
    "docs/checkpoints.md": "tests/stagerl/checkpoints/test_checkpoint_docs.py",
    "docs/logging.md": "tests/stagerl/logging/test_logging_docs.py",
    "docs/loop.md": "tests/stagerl/core/test_run.py",
    "docs/mujoco.md": "tests/stagerl/envs/test_mujoco_docs.py",
    "docs/multi_agent.md": "tests/stagerl/multi_agent/test_multi_agent_docs.py",
    "docs/recurrent.md": "tests/stagerl/policies/test_recurrent_docs.py",
    "docs/trajectories.md": "tests/trajectories/test_trajectories_docs.py",
    "docs/write_a_policy.md": "tests/stagerl/policies/test_policy_docs.py",
}
#: Pages with doctest blocks (>>>), and the test that runs them with doctest.testfile.
DOCTESTS = {"docs/distributed.md": "tests/stagerl/distributed/test_batches.py"}


# ---- the tests --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("docs_commands"), {**COMMANDS, **SETUP}, STEPS)


def test_every_command_the_docs_show_has_a_row():
    found = {c: where for c, where in commands_in_docs().items() if not is_syntax(c)}
    missing = {c: where for c, where in found.items() if c not in COMMANDS}
    assert not missing, ("commands the docs show that no row of COMMANDS runs (add a row that "
                         f"runs each, or a Skip with its reason): {missing}")
    assert not set(COMMANDS) - set(found), f"rows for no command: {set(COMMANDS) - set(found)}"
    # the reading itself: the README's command table and blocks were found
    assert {"make run", "make test", "stagerl list", "stagerl run dqn-cartpole --help",
            "stagerl plot runs/dqn-cartpole/*"} <= set(found)


def test_every_fenced_block_is_of_a_language_this_test_reads():
    for page in PAGES:
        for language in re.findall(r"^```(\S*)\n", page.read_text(), re.MULTILINE):
            assert language in LANGUAGES, (f"{page.relative_to(ROOT)}: a ```{language} block; "
                                           "say in LANGUAGES whether its lines are commands")


def _rows(kind):
    return [pytest.param(c, id=c[:70]) for c, row in COMMANDS.items() if isinstance(row, kind)
            and not isinstance(row, OnRay)]


@pytest.mark.parametrize("command", _rows((Run, Process, Make)))
def test_the_command_runs(workspace, command):
    row = COMMANDS[command]
    for module in row.needs:
        pytest.importorskip(module, reason=f"{command!r} needs {module} (an extra)")
    result = workspace.run(command)
    if row.status is not None:
        assert result.status == row.status, result.err
    if row.check is not None:
        row.check(command, result, workspace)


@pytest.mark.parametrize("command", _rows(Skip))
def test_what_a_skipped_command_names_is_there(command):
    """Skipped commands (their reasons in COMMANDS) name scripts, extras and sections that
    exist."""
    COMMANDS[command].check(command)


def test_the_syntax_the_docs_show_is_the_command_lines(workspace):
    from stagerl.cli import COMMANDS as SUBCOMMANDS

    syntax = [c for c in commands_in_docs() if is_syntax(c)]
    assert "stagerl run NAME --logdir DIR --resume" in syntax and "stagerl eval" in syntax
    helps = {}
    for command in syntax:
        subcommand = command.split()[1]
        assert subcommand in SUBCOMMANDS, command
        if subcommand not in helps:
            helps[subcommand] = workspace.main([subcommand, "--help"])
            assert helps[subcommand].status == 0, helps[subcommand].err
        for option in re.findall(r"(?<![\w-])--?[a-z][\w-]*", command):
            assert re.search(rf"(?<![\w-]){option}\b", helps[subcommand].out), (command, option)


def test_the_commands_and_examples_on_ray_run(workspace):
    pytest.importorskip("ray")
    session = workspace.run(RAY_SESSION).out
    for command, row in COMMANDS.items():
        if isinstance(row, OnRay):
            result = workspace.run(command)
            assert result.status == 0, result.err
            row.check(command, result, workspace)
    assert session["docs/distributed.md"] == {"workers": 2, "env_steps": 600}


@pytest.mark.parametrize("page", [p for p in PYTHON_HERE if p != "docs/distributed.md"])
def test_the_python_blocks_of_a_page_without_a_test_of_its_own_run(page, tmp_path,
                                                                    monkeypatch):
    from stagerl.experiments import torch_threads

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CI", "1")
    namespace: dict = {"__name__": "docs"}
    with torch_threads():  # one thread, as the named experiments (the pages' loops are short)
        for block in PYTHON_HERE[page].blocks(page):
            exec(compile(block, str(ROOT / page), "exec", dont_inherit=True), namespace)
    assert PYTHON_HERE[page].check(namespace) is not False


def test_every_pages_python_blocks_are_run_by_a_test():
    for page in PAGES:
        name, text = str(page.relative_to(ROOT)), page.read_text()
        blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
        if any(not b.startswith(">>>") for b in blocks):
            assert (name in PYTHON_HERE) != (name in PYTHON_TESTS), (
                f"{name}: say in PYTHON_HERE or PYTHON_TESTS which test runs its Python blocks")
        if any(b.startswith(">>>") for b in blocks):
            assert name in DOCTESTS, f"{name}: say in DOCTESTS which test runs its doctests"
    for page, test in [*PYTHON_TESTS.items(), *DOCTESTS.items()]:
        assert Path(page).name in (ROOT / test).read_text(), (page, test)
    assert "doctest.testfile" in (ROOT / DOCTESTS["docs/distributed.md"]).read_text()


def test_the_docs_examples_and_library_use_the_current_names():
    """``experiments.run`` / ``experiments.load`` (deprecated: they shadowed ``stagerl.run`` and
    ``stagerl.load``) appear only where they are defined, never in what users copy from."""
    old = re.compile(r"experiments\.(run|load)\(|from stagerl\.experiments(\.registry)? import "
                     r"[^\n]*\b(run|load)\b")
    defined = {ROOT / "stagerl" / "experiments" / "__init__.py",
               ROOT / "stagerl" / "experiments" / "registry.py"}
    files = [*PAGES, *(ROOT / "examples").iterdir(), *(ROOT / "stagerl").rglob("*.py"),
             *(ROOT / "benchmarks").rglob("*.py")]
    found = [f"{path.relative_to(ROOT)}: {match.group(0)}" for path in files
             if path.is_file() and path not in defined
             for match in old.finditer(path.read_text(errors="replace"))]
    assert not found, found
