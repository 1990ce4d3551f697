"""The multi-agent experiments learn: each named experiment trained at its settings, then its
learning player evaluated greedily against its evaluation opponent.

* ``dqn-tictactoe``: mean reward per game >= 0.6 against masked random within 50k env steps,
  in every seed (Tianshou's threshold for its tic-tac-toe DQN; masked random scores -0.3 as
  the second player);
* ``ppo-rps``: mean reward per match >= 6.0 within 200k env steps (RLlib's stop value for its
  rock-paper-scissors example; the best policy that sees only the opponent's last move scores
  about 7.0): the mean of the last 100 training matches (RLlib's ``episode_reward_mean``)
  reaches it (the env step where it first does is printed), and so does the evaluation;
* ``dqn-tictactoe-selfplay``: within 200k env steps, at most 10% of 1,000 evaluation games lost
  against masked random in either seat (win / draw / loss rates of both seats printed).

Each run trains in this process exactly as ``stagerl run <experiment> --seed S`` does (the same
settings, seeds and torch threads), evaluates with ``--games`` games per seat (default 1,000)
on an evaluation game of its own, and prints one line; the runs go one at a time.

    python benchmarks/multi_agent_learning.py                               # all, seeds 0 1 2
    python benchmarks/multi_agent_learning.py dqn-tictactoe --seeds 0 1 2 --check
    python benchmarks/multi_agent_learning.py ppo-rps --seeds 0 --steps 50000   # shorter
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

# Run as a script, this folder comes first on sys.path, and its trajectories.py benchmark would
# shadow the trajectories package that stagerl imports.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import torch  # noqa: E402

import stagerl as rl  # noqa: E402
from stagerl.experiments import configure, get_experiment, torch_threads  # noqa: E402
from stagerl.experiments.registry import EVAL_SEED_OFFSET  # noqa: E402
from stagerl.multi_agent import Versus  # noqa: E402

#: What each experiment must reach.
TARGETS = {
    "dqn-tictactoe": "evaluation mean >= 0.6 at 50k env steps",
    "ppo-rps": "training mean of 100 matches >= 6.0 within 200k env steps, evaluation too",
    "dqn-tictactoe-selfplay": "losses <= 10% in each seat at 200k env steps",
}
WINDOW = 100  # training episodes in RLlib's episode_reward_mean


def train(name: str, seed: int, steps: int | None) -> tuple:
    """The experiment's policy trained for ``steps`` (default: its own) as ``stagerl run``
    trains it; the training games' returns (of the player the game scores: the learner) and
    the env step each ended at; the config and the seconds it took."""
    experiment = get_experiment(name)
    config = configure(name, **({} if steps is None else {"steps": steps}))
    torch.manual_seed(seed)
    with torch_threads(config.torch_threads, "cpu"):
        game = experiment.make_env(config, seed)
        policy = experiment.make_agent(config, game, seed, torch.device("cpu"))
        returns, lengths = rl.TotalRewardPerEpisode(), rl.StepsPerEpisode()
        start = time.perf_counter()
        rl.run(policy, game, rl.StopAfterNSteps(config.steps, progress=False),
               returns + lengths)
        seconds = time.perf_counter() - start
    ends = list(itertools.accumulate(lengths.steps))
    return policy, (returns.rewards, ends), config, seconds


def first_reached(returns: list[float], ends: list[int], target: float) -> int | None:
    """The env step where the mean of the last ``WINDOW`` training games first reached
    ``target`` (RLlib's stop rule), or None."""
    for i in range(WINDOW, len(returns) + 1):
        if statistics.fmean(returns[i - WINDOW:i]) >= target:
            return ends[i - 1]
    return None


def seat_results(policy, name: str, config, seed: int, games: int) -> dict:
    """``{seat: (mean reward, win, draw, loss rates)}`` over ``games`` greedy games per seat on
    the experiment's evaluation game (its evaluation opponent), seeded as the run's final
    evaluation."""
    evaluation = get_experiment(name).make_eval_env(config, seed + EVAL_SEED_OFFSET)
    out = {}
    for seat in evaluation.seats:
        env = Versus(evaluation.game, evaluation.opponents, seats=seat)
        returns = rl.evaluate(policy, env, games)
        n = len(returns)
        out[seat] = (statistics.fmean(returns), sum(r > 0 for r in returns) / n,
                     sum(r == 0 for r in returns) / n, sum(r < 0 for r in returns) / n)
    return out


def judge(name: str, seats: dict, reached: int | None) -> bool:
    if name == "dqn-tictactoe":
        return all(mean >= 0.6 for mean, *_ in seats.values())
    if name == "ppo-rps":
        return reached is not None and all(mean >= 6.0 for mean, *_ in seats.values())
    return all(loss <= 0.10 for *_, loss in seats.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiments", nargs="*", metavar="experiment",
                        help=f"default: all ({', '.join(TARGETS)})")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, help="env steps (default: each experiment's)")
    parser.add_argument("--games", type=int, default=1000, help="evaluation games per seat")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    unknown = [name for name in args.experiments if name not in TARGETS]
    if unknown:
        parser.error(f"unknown experiments {unknown}; choose from {', '.join(TARGETS)}")
    missed = 0
    for name in args.experiments or list(TARGETS):
        print(f"{name}: target {TARGETS[name]}")
        for seed in args.seeds:
            policy, (returns, ends), config, seconds = train(name, seed, args.steps)
            scored = "+".join(policy.game.scored_players or ("all",))
            reached = first_reached(returns, ends, 6.0) if name == "ppo-rps" else None
            seats = seat_results(policy, name, config, seed, args.games)
            ok = judge(name, seats, reached)
            missed += not ok
            last, last_1000 = (statistics.fmean(returns[-n:]) for n in (WINDOW, 1000))
            parts = [f"  seed {seed}: {config.steps:,} env steps in {seconds:.0f} s; training "
                     f"({scored}) mean of the last {WINDOW} {last:+.3f}, of the last 1000 "
                     f"{last_1000:+.3f}"]
            if name == "ppo-rps":
                parts[-1] += f", {WINDOW}-match mean first >= 6.0 at env step {reached}"
            for seat, (mean, win, draw, loss) in seats.items():
                parts.append(f"{seat} vs evaluation opponent: mean {mean:+.3f} (win {win:.1%}, "
                             f"draw {draw:.1%}, loss {loss:.1%}, {args.games} games)")
            print("; ".join(parts) + ("" if ok else "  MISSED"), flush=True)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
