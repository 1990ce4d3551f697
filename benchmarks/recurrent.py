"""Recurrent policies: learning figures, speed against sb3-contrib's RecurrentPPO, and the cost
of compute_actions against a bare torch forward pass.

    python benchmarks/recurrent.py learning --what ppo --seeds 0 1 2   # ppo-lstm-cartpole-novel
    python benchmarks/recurrent.py learning --what ppo-mlp              # the same PPO, an MLP
    python benchmarks/recurrent.py learning --what drqn                # drqn-cartpole-novel
    python benchmarks/recurrent.py learning --what dqn-mlp             # dqn-cartpole's MLP DQN
    python benchmarks/recurrent.py learning --what rps                 # ppo-lstm-rps
    python benchmarks/recurrent.py memoryless-rps                      # the best memoryless score
    python benchmarks/recurrent.py speed --seeds 0 1 2                 # vs sb3-contrib
    python benchmarks/recurrent.py inference                           # compute_actions cost

``learning`` runs the named experiments as ``stagerl run`` does (the final evaluation: 20
deterministic episodes on an env of its own); ``--steps`` shortens them. ``speed`` trains
recurrent PPO at ``ppo-lstm-cartpole-novel``'s settings (sb3-contrib's recurrent test settings)
and sb3-contrib's ``RecurrentPPO`` at the same ones, each seed's two runs interleaved, each in
a fresh process with one torch thread, and prints env-steps/s over training (medians, and the
median of the per-seed ratios). ``inference`` times, interleaved in one process, one
observation through ``stagerl.compute_actions`` and through the bare torch forward pass of the
same CartPole-sized MLP (medians of repeated blocks). The ``bench`` extra has sb3-contrib.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

# Run as a script, this folder comes first on sys.path, and its trajectories.py benchmark would
# shadow the trajectories package that stagerl imports.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import numpy as np  # noqa: E402

EVAL_EPISODES = 20
EVAL_SEED_OFFSET = 10_000


# ---- learning -------------------------------------------------------------------------------


def _named(name: str, seed: int, steps: int | None, **overrides) -> dict:
    import stagerl.experiments as experiments

    summary = experiments.train(name, steps=steps, seed=seed, device="cpu", progress=False,
                                **overrides)
    return {"return": summary["eval_return_mean"], "seconds": summary["wall_seconds"],
            "steps": summary["env_steps"]}


def _masked_cartpole_mlp(algorithm: str, seed: int, steps: int | None) -> dict:
    """The memoryless baselines on CartPole without velocities: PPO at ppo-lstm-cartpole-novel's
    settings with an MLP (no reward normalisation: PPO has none), or DQN at dqn-cartpole's
    (RL-Zoo's) settings, for drqn-cartpole-novel's steps."""
    import dataclasses

    import torch

    import stagerl as rl
    from stagerl.algorithms import PPOConfig, make_ppo_agent
    from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
    from stagerl.experiments import get_experiment
    from stagerl.experiments.settings import torch_threads
    from stagerl.experiments.zoo import ppo_lstm_cartpole_novel as novel

    if algorithm == "ppo":
        settings = get_experiment("ppo-lstm-cartpole-novel").config()
        steps = steps or settings.steps
        shared = {f.name: getattr(settings, f.name) for f in dataclasses.fields(PPOConfig)
                  if f.init and f.name not in ("net_arch", "ortho_init", "total_steps")}
        config = PPOConfig(**shared, total_steps=steps)
        env = novel.make_env(settings, seed)
        make = make_ppo_agent
    else:
        settings = get_experiment("dqn-cartpole").config()
        steps = steps or get_experiment("drqn-cartpole-novel").config().steps
        config = DQNConfig(**{f.name: getattr(settings, f.name)
                              for f in dataclasses.fields(DQNConfig)
                              if f.init and f.name != "total_steps"}, total_steps=steps)
        env = novel.make_eval_env(settings, seed)
        make = make_dqn_agent
    with torch_threads(1):
        torch.manual_seed(seed)
        agent = make(env, config, seed, "cpu")
        start = time.perf_counter()
        rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
        seconds = time.perf_counter() - start
        returns = rl.evaluate(agent, novel.make_eval_env(settings, seed + EVAL_SEED_OFFSET),
                              EVAL_EPISODES)
    return {"return": statistics.fmean(returns), "seconds": seconds, "steps": steps}


LEARNING = {
    "ppo": ("ppo-lstm-cartpole-novel", ">= 450 within 50k steps, 3 of 3 seeds"),
    "ppo-mlp": (None, "below 100 (the same PPO with an MLP)"),
    "drqn": ("drqn-cartpole-novel", ">= 300 within 100k steps, above the MLP DQN"),
    "dqn-mlp": (None, "the MLP DQN (dqn-cartpole's settings) on the same env"),
    "rps": ("ppo-lstm-rps", "above 9.0 per match (best memoryless ~7.0)"),
}


def learning(what: str, seeds: list[int], steps: int | None) -> None:
    name, target = LEARNING[what]
    print(f"{what}: {name or 'memoryless baseline'}; target {target}")
    returns = []
    for seed in seeds:
        if name is None:
            result = _masked_cartpole_mlp(what.split("-")[0], seed, steps)
        else:
            result = _named(name, seed, steps)
        returns.append(result["return"])
        print(f"  seed {seed}: eval return {result['return']:.1f} after {result['steps']:,} "
              f"steps ({result['seconds']:.0f} s training)", flush=True)
    print(f"  mean {statistics.fmean(returns):.1f}, min {min(returns):.1f}")


def memoryless_rps(matches: int = 1000) -> float:
    """The best expected return per match of a deterministic memoryless policy (a move for
    each observation) against ppo-lstm-rps's opponents, every one of the 81 tried."""
    import itertools

    from stagerl.experiments.zoo.ppo_lstm_rps import RockPaperScissorsAgainstHeuristics

    env = RockPaperScissorsAgainstHeuristics()
    best = (-np.inf, None)
    for table in itertools.product(range(3), repeat=4):
        total = 0.0
        observation, _ = env.reset(seed=0)
        for _ in range(matches):
            done = False
            while not done:
                observation, reward, _, done, _ = env.step(table[int(observation.argmax())])
                total += reward
            observation, _ = env.reset()
        best = max(best, (total / matches, table))
    print(f"best memoryless policy {best[1]} (move per opponent's last move rock, paper, "
          f"scissors, none): {best[0]:.2f} per match")
    return best[0]


# ---- speed against sb3-contrib ------------------------------------------------------------------


def _side(side: str, seed: int, steps: int) -> dict:
    """One timed training run, in this (fresh) process."""
    import torch

    torch.set_num_threads(1)
    if side == "stagerl":
        import stagerl as rl
        from stagerl.experiments import configure, get_experiment

        experiment = get_experiment("ppo-lstm-cartpole-novel")
        config = configure("ppo-lstm-cartpole-novel", steps=steps)
        env = experiment.make_env(config, seed)
        torch.manual_seed(seed)
        agent = experiment.make_agent(config, env, seed, torch.device("cpu"))
        start = time.perf_counter()
        rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
        seconds = time.perf_counter() - start
        returns = rl.evaluate(agent, experiment.make_eval_env(config, seed + EVAL_SEED_OFFSET),
                              EVAL_EPISODES)
        return {"steps_per_second": steps / seconds, "return": statistics.fmean(returns)}
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from stagerl.envs.wrappers import CARTPOLE_POSITIONS, MaskedEnvMaker

    env = VecNormalize(make_vec_env(MaskedEnvMaker("CartPole-v1", CARTPOLE_POSITIONS), n_envs=8,
                                    seed=seed))
    model = RecurrentPPO("MlpLstmPolicy", env, n_steps=128, learning_rate=7e-4, batch_size=256,
                         seed=seed, n_epochs=10, max_grad_norm=1, gae_lambda=0.98,
                         policy_kwargs={"net_arch": {"vf": [64], "pi": []},
                                        "lstm_hidden_size": 64, "ortho_init": False,
                                        "enable_critic_lstm": True}, device="cpu")
    start = time.perf_counter()
    model.learn(steps)
    seconds = time.perf_counter() - start
    env.training, env.norm_reward = False, False
    eval_env = MaskedEnvMaker("CartPole-v1", CARTPOLE_POSITIONS)()
    total = []
    for episode in range(EVAL_EPISODES):
        observation, _ = eval_env.reset(seed=seed + EVAL_SEED_OFFSET + episode)
        state, start_flag, done, reward_sum = None, np.ones(1, bool), False, 0.0
        while not done:
            action, state = model.predict(env.normalize_obs(observation[None]), state=state,
                                          episode_start=start_flag, deterministic=True)
            observation, reward, terminated, truncated, _ = eval_env.step(int(action[0]))
            start_flag, done = np.zeros(1, bool), terminated or truncated
            reward_sum += reward
        total.append(reward_sum)
    return {"steps_per_second": steps / seconds, "return": statistics.fmean(total)}


def _fresh(side: str, seed: int, steps: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "_side", side, str(seed), str(steps)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def speed(seeds: list[int], steps: int) -> float:
    rows = {"stagerl": [], "sb3-contrib": []}
    for seed in seeds:  # each seed's two runs one after the other
        for side, key in (("stagerl", "stagerl"), ("sb3", "sb3-contrib")):
            result = _fresh(side, seed, steps)
            rows[key].append(result)
            print(f"  seed {seed} {key}: {result['steps_per_second']:,.0f} env-steps/s, "
                  f"eval return {result['return']:.1f}", flush=True)
    ratios = [a["steps_per_second"] / b["steps_per_second"]
              for a, b in zip(rows["stagerl"], rows["sb3-contrib"], strict=True)]
    for key, results in rows.items():
        print(f"{key}: median {statistics.median(r['steps_per_second'] for r in results):,.0f} "
              f"env-steps/s, median eval return "
              f"{statistics.median(r['return'] for r in results):.1f}")
    ratio = statistics.median(ratios)
    print(f"recurrent PPO / sb3-contrib RecurrentPPO: {ratio:.2f}x (median of per-seed ratios, "
          f"{steps:,} steps each)")
    return ratio


# ---- compute_actions against the bare forward pass -----------------------------------------------


def inference(repeats: int = 2000, blocks: int = 15) -> dict:
    import torch

    import stagerl as rl
    from stagerl.algorithms import PPOConfig, make_ppo_agent
    from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent

    torch.set_num_threads(1)
    env = rl.GymEnv("CartPole-v1", seed=0)
    observation = np.zeros(4, dtype=np.float32)
    ppo = make_ppo_agent(env, PPOConfig(n_steps=8, batch_size=8), device="cpu")
    dqn = make_dqn_agent(env, DQNConfig(total_steps=10), device="cpu")
    actor, q_network = ppo.policy.model.actor, dqn.policy.network

    def bare(net):
        def forward():
            with torch.no_grad():
                net(torch.as_tensor(observation)[None])
        return forward

    cases = {
        "PPO actor (64, 64): bare torch forward": bare(actor),
        "PPO: compute_actions(agent, obs, deterministic=True)":
            lambda: rl.compute_actions(ppo, observation, deterministic=True),
        "DQN Q-network (64, 64): bare torch forward": bare(q_network),
        "DQN: compute_actions(agent, obs, deterministic=True)":
            lambda: rl.compute_actions(dqn, observation, deterministic=True),
    }
    times = {name: [] for name in cases}
    for _ in range(blocks):  # interleaved blocks
        for name, call in cases.items():
            start = time.perf_counter()
            for _ in range(repeats):
                call()
            times[name].append((time.perf_counter() - start) / repeats * 1e6)
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name, value in medians.items():
        print(f"  {name}: {value:.1f} us")
    names = list(medians)
    for bare_name, ours in ((names[0], names[1]), (names[2], names[3])):
        print(f"  {ours.split(':')[0]}: compute_actions / bare forward = "
              f"{medians[ours] / medians[bare_name]:.2f}")
    return medians


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    learn = commands.add_parser("learning")
    learn.add_argument("--what", choices=list(LEARNING), default="ppo")
    learn.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    learn.add_argument("--steps", type=int, default=None)
    commands.add_parser("memoryless-rps")
    fast = commands.add_parser("speed")
    fast.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    fast.add_argument("--steps", type=int, default=50_000)
    commands.add_parser("inference")
    side = commands.add_parser("_side")  # one side of the speed comparison, in a fresh process
    side.add_argument("side", choices=("stagerl", "sb3"))
    side.add_argument("seed", type=int)
    side.add_argument("steps", type=int)
    args = parser.parse_args(argv)
    if args.command == "learning":
        learning(args.what, args.seeds, args.steps)
    elif args.command == "memoryless-rps":
        memoryless_rps()
    elif args.command == "speed":
        speed(args.seeds, args.steps)
    elif args.command == "inference":
        inference()
    else:
        print(json.dumps(_side(args.side, args.seed, args.steps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
