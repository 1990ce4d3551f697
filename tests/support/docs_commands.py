"""Reading the command lines README.md and docs/**/*.md show, and running them in a temporary
directory: the machinery of tests/test_docs_commands.py, whose tables say how each is run."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
COMMAND_WORDS = ("stagerl", "python", "make", "pip", "pytest", "mkdocs", "flock")
#: Fenced blocks by language: what their lines are.
LANGUAGES = {"bash": "every line a command", "console": "every line a command ($ prompts)",
             "": "a line that begins with a command word is a command (tables, diagrams)",
             "python": "code: run by the page's test (PYTHON_TESTS) or by this file"}
FENCE = re.compile(r"^```(\S*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
INLINE = re.compile(r"(?<!`)`([^`]+)`(?!`)")
ENV = {**os.environ, "CI": "1", "PYTHONPATH": os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}


def commands_in_docs() -> dict[str, list[str]]:
    """Every command the pages show, each with the places (``page:line``) it is shown."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        text, name = page.read_text(), str(page.relative_to(ROOT))
        places = []  # (command, offset)
        for block in FENCE.finditer(text):
            language, offset = block.group(1), block.start(2)
            for line in block.group(2).splitlines(keepends=True):
                words = line.split()
                if words and (language in ("bash", "console") or
                              language == "" and words[0] in COMMAND_WORDS):
                    # a comment (" # ...") or a table's description (after two spaces) left off
                    command = re.split(r"\s#\s|\s{2,}", line.strip().removeprefix("$ "))[0]
                    places.append((" ".join(command.split()), offset))
                offset += len(line)
        prose = FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
        for span in INLINE.finditer(prose):
            words = span.group(1).split()
            if len(words) > 1 and words[0] in COMMAND_WORDS:
                places.append((" ".join(words), span.start()))
        for command, offset in places:
            found.setdefault(command, []).append(f"{name}:{text.count(chr(10), 0, offset) + 1}")
    return found


def is_syntax(command: str) -> bool:
    """A ``stagerl`` command with placeholders, or a subcommand named without what it needs
    (``<run>``, a run's directory, is no placeholder: Workspace.argv puts a run there)."""
    words = command.split()
    if words[0] != "stagerl":
        return False
    if re.search(r"<(?!run>)[^>]*>|\[|\.\.\.|\b[A-Z]+\b", command):
        return True
    positional = [w for w in words[2:] if not w.startswith("-") and "=" not in w]
    return words[1] != "list" and not positional


# ---- running a command ------------------------------------------------------------------------


@dataclass
class Result:
    status: int
    out: str
    err: str

    @property
    def logdir(self) -> Path:
        """The log directory a run printed (``logs: DIR  (...)``)."""
        (line,) = [line for line in self.out.splitlines() if line.startswith("logs: ")]
        return Path(line[len("logs: "):].split("  (")[0])


class Workspace:
    """A temporary directory the commands run in, each at most once (later ones use what
    earlier ones wrote: a run to plot, a run to evaluate, an interrupted run to resume).
    ``rows`` say how each command runs; ``steps`` is the run length of each experiment."""

    def __init__(self, root: Path, rows: dict, steps: dict[str, str]) -> None:
        self.root, self.rows, self.steps, self.results = root, rows, steps, {}

    def run(self, command: str) -> Result:
        if command not in self.results:
            row = self.rows[command]
            for first in row.after:
                self.run(first)
            self.results[command] = row.execute(command, self)
        return self.results[command]

    def main(self, argv: list[str]) -> Result:
        """``stagerl.cli.main(argv)`` in this process, in the workspace, as a terminal-less
        shell would run ``stagerl ARGV`` (``CI`` set: progress as lines, not bars)."""
        from stagerl.cli import main

        out, err = io.StringIO(), io.StringIO()
        before, ci = Path.cwd(), os.environ.get("CI")
        os.chdir(self.root)
        os.environ["CI"] = "1"
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    status = main(argv)
                except SystemExit as exit_:  # argparse's --help
                    status = exit_.code or 0
        finally:
            os.chdir(before)
            if ci is None:
                del os.environ["CI"]
        return Result(status, out.getvalue(), err.getvalue())

    def argv(self, command: str, shorten: bool = True) -> list[str]:
        """``command``'s arguments as a shell passes them: globs expanded, ``<run>`` the run of
        ``stagerl run dqn-cartpole``, and ``--steps`` cut to the experiment's steps."""
        words = shlex.split(command)[1:]
        if "<run>" in command:
            run = self.run("stagerl run dqn-cartpole").logdir
            words = [w.replace("runs/dqn-cartpole/<run>", str(run)) for w in words]
        words = [m for w in words for m in
                 (sorted(str(p.relative_to(self.root)) for p in self.root.glob(w)) or [w]
                  if "*" in w else [w])]
        if shorten and words[0] == "run":
            experiment = next(w for w in words[1:] if not w.startswith("-") and "=" not in w)
            if "--steps" in words:
                words[words.index("--steps") + 1] = self.steps[experiment]
            else:
                words += ["--steps", self.steps[experiment]]
        return words

    def summary(self, command: str) -> dict:
        return json.loads((self.root / self.run(command).logdir / "summary.json").read_text())


@dataclass(frozen=True)
class Run:
    """Through ``stagerl.cli.main`` in this process, in the workspace (``Workspace.argv``);
    exit status ``status`` (``None``: the check's to judge), then ``check(command, result,
    workspace)``."""
    check: Callable | None = None
    after: tuple[str, ...] = ()
    shorten: bool = True
    status: int = 0
    needs: tuple[str, ...] = ()  # modules of an extra; the row is skipped without them

    def execute(self, command: str, ws: Workspace) -> Result:
        return ws.main(ws.argv(command, self.shorten))


@dataclass(frozen=True)
class Process:
    """As written (or as ``argv``), in a subprocess in the workspace."""
    check: Callable | None = None
    argv: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    status: int = 0
    needs: tuple[str, ...] = ()

    def execute(self, command: str, ws: Workspace) -> Result:
        argv = list(self.argv) or shlex.split(command)
        argv = [sys.executable if w == "python" else w for w in argv]
        if argv[0] == "stagerl":  # the console script of the Python running the tests
            argv[0] = str(Path(sys.executable).with_name("stagerl"))
        done = subprocess.run(argv, cwd=ws.root, env=ENV, capture_output=True, text=True,
                              timeout=300)
        return Result(done.returncode, done.stdout, done.stderr)


RAY_SESSION = "(the Ray session)"


@dataclass(frozen=True)
class OnRay(Run):
    """Through ``stagerl.cli.main`` in the one subprocess that holds a local Ray instance
    (starting Ray takes seconds: the Ray commands and docs/distributed.md's examples share
    one)."""
    needs: tuple[str, ...] = ("ray",)

    def execute(self, command: str, ws: Workspace) -> Result:
        return Result(*ws.run(RAY_SESSION).out[command])


def make_dry_run(*arguments: str) -> subprocess.CompletedProcess:
    """``make -n ARGUMENTS`` as a top-level make prints it, also when the tests themselves run
    under ``make test`` (a sub-make would announce "Entering directory" around the recipe)."""
    outer = {"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"}
    env = {key: value for key, value in os.environ.items() if key not in outer}
    return subprocess.run(["make", "--no-print-directory", "-n", *arguments], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


@dataclass(frozen=True)
class Make:
    """``make -n TARGET`` shows ``recipe`` (the ``.venv``'s programs), ``make -n TARGET
    VARIABLES`` shows ``tiny`` for the tiny form, and that runs (``stagerl`` in this process,
    ``python`` in a subprocess in the repository, with ``narrowed`` added)."""
    recipe: str
    variables: tuple[str, ...] = ()
    tiny: str = ""
    narrowed: tuple[str, ...] = ()
    check: Callable | None = None
    after: tuple[str, ...] = ()
    status: int = 0
    needs: tuple[str, ...] = ()

    def execute(self, command: str, ws: Workspace) -> Result:
        target = command.split()[1:]
        for variables, recipe in (((), self.recipe), (self.variables, self.tiny or self.recipe)):
            shown = make_dry_run(*target, *variables)
            assert shown.returncode == 0, shown.stderr
            assert " ".join(shown.stdout.splitlines()[-1].split()) == recipe, shown.stdout
        words = [*shlex.split(self.tiny or self.recipe), *self.narrowed]
        if words[0] == ".venv/bin/stagerl":
            return ws.main(words[1:])
        assert words[0] == ".venv/bin/python", words
        done = subprocess.run([sys.executable, *words[1:]], cwd=ROOT, env=ENV,
                              capture_output=True, text=True, timeout=300)
        return Result(done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class Skip:
    """Not run here, for ``reason``; ``check(command)`` checks what it names is there."""
    reason: str
    check: Callable | None = None
    after: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()


class Interrupted:
    """``stagerl run dqn-cartpole --logdir runs/a --steps 1000`` stopped by Ctrl-C (SIGINT,
    raised from inside CartPole's 250th step, as a user's key press would arrive)."""
    after: tuple[str, ...] = ()
    at = 250

    def execute(self, command: str, ws: Workspace) -> Result:
        from gymnasium.envs.classic_control import CartPoleEnv

        step, calls = CartPoleEnv.step, []

        def step_then_ctrl_c(env, action):
            calls.append(action)
            if len(calls) == self.at:
                # The run's own handler (a checkpoint at the step's end), never pytest's.
                assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
                signal.raise_signal(signal.SIGINT)
            return step(env, action)

        CartPoleEnv.step = step_then_ctrl_c
        try:
            result = ws.main(["run", "dqn-cartpole", "--logdir", "runs/a", "--steps", "1000"])
        finally:
            CartPoleEnv.step = step
        assert result.status == 130, result.err
        assert result.err.splitlines()[-1].endswith(
            "continue with: stagerl run dqn-cartpole --logdir runs/a --resume"), result.err
        return result


@dataclass(frozen=True)
class RaySession:
    """One subprocess with a local Ray instance: the OnRay commands, then ``page``'s Python
    blocks (as ``python`` gives them) in one namespace; ``out`` maps each command to its result
    and ``page`` to the workers and env steps of the last ``summary`` the blocks made."""
    page: str
    python: Page
    after: tuple[str, ...] = ()

    def execute(self, command: str, ws: Workspace) -> Result:
        commands = {c: ws.argv(c) for c, row in ws.rows.items() if isinstance(row, OnRay)}
        blocks = self.python.blocks(self.page)
        done = subprocess.run([sys.executable, "-c", RAY_DRIVER, json.dumps(commands),
                               json.dumps(blocks), self.page], cwd=ws.root, env=ENV,
                              capture_output=True, text=True, timeout=400)
        assert done.returncode == 0, done.stderr[-3000:]
        return Result(0, json.loads((ws.root / "ray_results.json").read_text()), done.stderr)


RAY_DRIVER = """
import contextlib, io, json, sys
from stagerl.cli import main
results = {}
for command, argv in json.loads(sys.argv[1]).items():
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        results[command] = [main(argv), out.getvalue(), err.getvalue()]
namespace = {"__name__": "docs"}
for block in json.loads(sys.argv[2]):
    exec(compile(block, sys.argv[3], "exec", dont_inherit=True), namespace)
results[sys.argv[3]] = {"workers": namespace["summary"]["workers"]["workers"],
                                  "env_steps": namespace["summary"]["env_steps"]}
with open("ray_results.json", "w") as file:
    json.dump(results, file)
"""



@dataclass(frozen=True)
class Page:
    """A page's Python blocks run in one namespace, training lengths ``shorter``, statements
    holding a key of ``left_out`` left out (the value says why); then ``check(namespace)``."""
    check: Callable
    shorter: tuple[tuple[str, str], ...] = ()
    left_out: tuple[tuple[str, str], ...] = ()

    def blocks(self, page: str) -> list[str]:
        found = []
        for block in re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), re.DOTALL):
            if block.startswith(">>>"):
                continue  # a doctest: DOCTESTS
            for written, shorter in self.shorter:
                block = block.replace(written, shorter)
            lines = block.splitlines(keepends=True)
            for node in reversed(ast.parse(block).body):
                source = "".join(lines[node.lineno - 1:node.end_lineno])
                if any(text in source for text, _ in self.left_out):
                    del lines[node.lineno - 1:node.end_lineno]
            found.append("".join(lines))
        return found


# ---- what a skipped command names is there -------------------------------------------------


def extras_exist(command):
    """The extras ``pip install ...`` names are pyproject.toml's (``stagerl`` alone: its name)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    section = pyproject.split("\n[project.optional-dependencies]\n")[1].split("\n[")[0]
    extras = re.findall(r"\[(\w+)\]", command)
    assert extras or command.split()[-1] == re.search(r'^name = "(.+)"', pyproject, re.M)[1]
    for extra in extras:
        assert re.search(rf"^{extra} = \[", section, re.M), extra


def scripts_exist(command):
    """The scripts named are there, and so are a benchmark's ``--only`` section and the slow
    tests of ``pytest -m slow``."""
    scripts = [w for w in command.split() if w.endswith(".py")]
    assert scripts and all((ROOT / s).is_file() for s in scripts), scripts
    if "--only" in command:  # benchmarks/algorithms.py's sections
        section = command.split()[command.split().index("--only") + 1]
        assert (ROOT / "benchmarks" / "algorithm_runs" / f"{section}.py").is_file(), section
    if command.startswith("pytest -m slow"):
        assert "pytest.mark.slow" in (ROOT / scripts[0]).read_text()


def benchmarks_exist(command):
    """``make bench``'s recipe runs benchmark scripts that are there."""
    shown = make_dry_run("bench").stdout
    scripts = re.findall(r"benchmarks/\w+\.py", shown)
    assert len(scripts) >= 3 and all((ROOT / s).is_file() for s in scripts), shown


def site_builds_elsewhere(command):
    """The site ``mkdocs serve`` would serve is built by tests/test_docs.py."""
    assert (ROOT / "mkdocs.yml").is_file()
    assert "mkdocs" in (ROOT / "tests" / "test_docs.py").read_text()
