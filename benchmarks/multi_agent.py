"""The multi-agent loop's cost per env step, side by side with a raw PettingZoo AEC loop.

The same pre-drawn games of tic-tac-toe (random legal moves, drawn once from a seeded generator)
are replayed by every loop, interleaved in each repetition so that machine noise hits them alike:

* raw:    PettingZoo's ``tictactoe_v3`` AEC env: ``env.reset()`` per game, then per move
          ``env.last()`` (what an agent reads: observation and mask) and ``env.step(move)``;
* ours:   ``rl.run(MultiAgentPolicy(...), PettingZooEnv(...), StopAfterNSteps(n))`` with a
          policy that replays the moves (no recording)              budget >= 0.50x raw;
* agents: the same with each player an ``Agent`` recording into a SARTS trajectory and a
          ``MultiAgentHook`` of per-player ``TotalRewardPerEpisode`` (for information);
* pure:   ``ours`` on stagerl's pure-Python ``TicTacToe`` (the loop without PettingZoo).

Printed: median steps/s of each loop (a step is a move) and the median of the per-repetition
ratios to raw; with ``--profile``, where the time of ``ours`` goes (cProfile, by own time).

    python benchmarks/multi_agent.py                  # 3,000 games, 5 repetitions
    python benchmarks/multi_agent.py --games 500 --repeats 3 --check   # exit 1 if missed
    python benchmarks/multi_agent.py --profile
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

# Run as a script, this folder comes first on sys.path, and its trajectories.py benchmark would
# shadow the trajectories package that stagerl imports.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import numpy as np  # noqa: E402
import pettingzoo  # noqa: E402

import stagerl as rl  # noqa: E402
from stagerl.multi_agent import (  # noqa: E402
    MultiAgentHook,
    MultiAgentPolicy,
    PettingZooEnv,
    TicTacToe,
)

ENV_ID = "classic/tictactoe-v3"
BUDGETS = {"ours": 0.5}
LABELS = {
    "raw": "raw PettingZoo AEC loop (last() + step())",
    "ours": "run(MultiAgentPolicy, PettingZooEnv)",
    "agents": "the same, Agents recording + per-player hooks",
    "pure": "run(MultiAgentPolicy, TicTacToe) (pure Python)",
}


def draw_games(n: int, seed: int) -> list[list[int]]:
    """``n`` games of uniformly random legal moves (TicTacToe plays PettingZoo's rules)."""
    rng, game, games = np.random.default_rng(seed), TicTacToe(), []
    for _ in range(n):
        game.reset()
        moves = []
        while not game.is_terminated:
            legal = np.flatnonzero(game.legal_actions_mask_of(game.current_player))
            moves.append(int(legal[rng.integers(legal.size)]))
            game.act(moves[-1])
        games.append(moves)
    return games


class Replay(rl.Policy):
    """Plays the pre-drawn moves in order, for whichever player is to move."""

    def __init__(self, games: list[list[int]]) -> None:
        self.moves = [move for game in games for move in game][::-1]


@rl.plan.dispatch
def _plan_replay(policy: Replay, env: rl.Env):
    return policy.moves.pop()


def raw_loop(games: list[list[int]]) -> float:
    env = pettingzoo.make("aec", ENV_ID)
    steps = sum(map(len, games))
    start = time.perf_counter()
    for moves in games:
        env.reset()
        for move in moves:
            env.last()
            env.step(move)
    return steps / (time.perf_counter() - start)


def _ours(games: list[list[int]], game, agents: bool = False) -> float:
    steps = sum(map(len, games))
    replay = Replay(games)
    hook = None
    if agents:
        players = {}
        for player in game.players:
            traces = rl.CircularArraySARTSTraces(capacity=steps, state=(np.int8, (3, 3, 2)))
            players[player] = rl.Agent(replay, rl.Trajectory(traces))
        hook = MultiAgentHook({p: rl.TotalRewardPerEpisode() for p in game.players})
    else:
        players = dict.fromkeys(game.players, replay)
    policy = MultiAgentPolicy(players)
    start = time.perf_counter()
    rl.run(policy, game, rl.StopAfterNSteps(steps, progress=False), hook)
    seconds = time.perf_counter() - start
    if replay.moves:
        raise RuntimeError("the loop did not replay every move")
    if agents and len(hook[game.players[0]].rewards) != len(games):
        raise RuntimeError("the per-player hooks did not see every game")
    return steps / seconds


LOOPS = {
    "raw": raw_loop,
    "ours": lambda games: _ours(games, PettingZooEnv(ENV_ID)),
    "agents": lambda games: _ours(games, PettingZooEnv(ENV_ID), agents=True),
    "pure": lambda games: _ours(games, TicTacToe()),
}


def profile(games: list[list[int]], top: int = 12) -> None:
    """Own time of 'ours' by package, then its stagerl functions with the most own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    LOOPS["ours"](games)
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    steps = sum(map(len, games))
    by_package: dict[str, float] = {}
    ours = []
    for (path, line, name), (_, _, own, _, _) in stats.items():
        package = next((label for key, label in PACKAGES if key in path), "Python builtins")
        by_package[package] = by_package.get(package, 0.0) + own
        if package == "stagerl":
            ours.append((own, f"{Path(path).name}:{line}({name})"))
    total = sum(by_package.values())
    print(f"\nwhere the time of '{LABELS['ours']}' goes (cProfile own time, "
          f"{1e6 * total / steps:.1f} us/step under the profiler):")
    for package, own in sorted(by_package.items(), key=lambda item: -item[1]):
        print(f"  {package:<22}{100 * own / total:5.1f}%  {1e6 * own / steps:6.2f} us/step")
    print("  stagerl's own functions with the most time:")
    for own, where in sorted(ours, reverse=True)[:top]:
        print(f"    {1e6 * own / steps:6.2f} us/step  {where}")


PACKAGES = (("/stagerl/", "stagerl"), ("/trajectories/", "stagerl"),
            ("pettingzoo", "PettingZoo"), ("gymnasium", "gymnasium"), ("numpy", "numpy"),
            ("plum", "plum"), ("benchmarks", "the replaying policy"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="exit 1 when a budget is missed")
    parser.add_argument("--profile", action="store_true", help="also profile 'ours'")
    args = parser.parse_args(argv)

    warm = draw_games(100, seed=1)
    for loop in LOOPS.values():  # warm-up: imports, plum's caches, allocator
        loop(warm)
    rates: dict[str, list[float]] = {name: [] for name in LOOPS}
    for repeat in range(args.repeats):
        games = draw_games(args.games, seed=repeat)
        for name, loop in LOOPS.items():
            rates[name].append(loop(games))

    steps = sum(map(len, draw_games(args.games, seed=0)))
    print(f"stagerl multi-agent loop benchmark: tic-tac-toe, {args.games:,} pre-drawn games "
          f"(~{steps:,} moves) x {args.repeats} repetitions (medians; ratio = median of "
          f"per-repetition ratios to raw)")
    print(f"{'loop':<50}{'steps/s':>10}{'us/step':>9}{'ratio':>8}  budget")
    missed = []
    for name in LOOPS:
        median = statistics.median(rates[name])
        ratio = statistics.median(r / raw for r, raw in zip(rates[name], rates["raw"], strict=True))
        budget = BUDGETS.get(name)
        verdict = ""
        if budget is not None:
            ok = ratio >= budget
            verdict = f">= {budget:.2f}  {'ok' if ok else 'MISSED'}"
            if not ok:
                missed.append(name)
        print(f"{LABELS[name]:<50}{median:>10,.0f}{1e6 / median:>9.2f}{ratio:>8.2f}  {verdict}")
    if args.profile:
        profile(draw_games(args.games, seed=0))
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
