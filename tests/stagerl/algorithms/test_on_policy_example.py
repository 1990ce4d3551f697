"""The documentation's examples run: a new on-policy algorithm as a loss and a postprocessor
(RLlib's policy-gradient example in stagerl form) learns CartPole; the one-step loss does not."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "algorithms" / "on_policy.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_documented_examples_learn_cartpole():
    blocks = python_blocks()
    # PPO usage, baselines and the KL penalty, the one-step loss, the policy-gradient algorithm
    assert len(blocks) == 4
    namespace: dict = {}
    exec(compile(blocks[0], f"{DOC}:ppo", "exec"), namespace)
    assert np.mean(namespace["returns"]) >= 100  # random play ~22
    exec(compile(blocks[2], f"{DOC}:one-step", "exec"), namespace)
    exec(compile(blocks[3], f"{DOC}:policy-gradient", "exec"), namespace)
    assert type(namespace["policy"]).__name__ == "PolicyGradient"
    assert np.mean(namespace["returns"]) >= 150  # seeds 0-2 give 346 to 500


def test_the_baselines_and_kl_penalty_example_runs_shorter():
    """The page's runs (150k and 100k steps) cut to 30k and 10k: VPG with the linear baseline
    learns, PPO's penalty coefficient adapts from the 0.2 it started at."""
    block = python_blocks()[1]
    for written, shorter in (("150_000", "30_000"), ("100_000", "10_000")):
        assert written in block
        block = block.replace(written, shorter)
    namespace: dict = {}
    exec(compile(block, f"{DOC}:baselines", "exec"), namespace)
    assert np.mean(namespace["linear_returns"]) >= 100  # random play ~22
    kl_coef = namespace["kl_coef"]
    assert kl_coef != 0.2 and kl_coef == namespace["agent"].policy.kl_coef > 0


def test_the_one_step_loss_of_rllibs_first_try_does_not_learn():
    namespace: dict = {}
    for block in python_blocks()[2:4]:
        exec(block.split("\nenv = ")[0], namespace)  # the classes, not the training run
    import stagerl as rl
    from stagerl.algorithms.on_policy import ActorCritic, make_vector_env, rollout_trajectory

    env = make_vector_env("CartPole-v1", num_envs=8, seed=0)
    model = ActorCritic(4, env.single_action_space)
    policy = namespace["OneStepPolicyGradient"](
        model, torch.optim.Adam(model.parameters(), lr=3e-3), gamma=0.99, rng=0)
    agent = rl.Agent(policy, rollout_trajectory(env, n_steps=128))
    rl.run(agent, env, rl.StopAfterNSteps(20_000, progress=False))
    assert np.mean(rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=1), episodes=10)) < 20


def test_the_example_script_runs():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "custom_on_policy.py"), "20000"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "CI": "1"}, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "evaluation" in result.stdout.splitlines()[-1]
