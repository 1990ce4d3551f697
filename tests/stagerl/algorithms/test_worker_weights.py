"""What each policy sends to Ray rollout workers (``stagerl.distributed.get_weights``): declared
by each algorithm family beside its policy, the same whatever was imported before, and for a
user's policy its state_dict without random-number-generator states."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch

import stagerl as rl
from stagerl.distributed import get_weights, on_policy, set_env_steps, set_weights

ROOT = Path(__file__).resolve().parents[3]


def test_the_distributed_package_imports_no_algorithm():
    for path in (ROOT / "stagerl" / "distributed").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.startswith("stagerl.algorithms") for n in names), path


_WHAT_IS_SENT = """
import json, sys
first = sys.argv[1]
if first == "distributed":
    from stagerl.distributed import get_weights
import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
from stagerl.algorithms.on_policy import PPOConfig, make_ppo_agent, make_vector_env
from stagerl.algorithms.off_policy import SACConfig, make_sac_agent
if first == "algorithms":
    from stagerl.distributed import get_weights
policies = {
    "dqn": make_dqn_agent(rl.GymEnv("CartPole-v1"), DQNConfig(total_steps=10, net_arch=(4,)),
                          device="cpu").policy,
    "ppo": make_ppo_agent(make_vector_env("CartPole-v1", 2, 0), PPOConfig(
        n_steps=8, batch_size=16, net_arch=(4,)), device="cpu").policy,
    "sac": make_sac_agent(rl.GymEnv("Pendulum-v1"), SACConfig(net_arch=(4,), buffer_size=10),
                          device="cpu").policy,
}
print(json.dumps({name: sorted(get_weights(p)) for name, p in policies.items()}))
"""


def test_what_a_policy_sends_does_not_depend_on_what_was_imported_first():
    sent = [json.loads(subprocess.run([sys.executable, "-c", _WHAT_IS_SENT, first],
                                      capture_output=True, text=True, check=True).stdout)
            for first in ("distributed", "algorithms")]
    assert sent[0] == sent[1] == {"dqn": ["network"], "ppo": ["model"], "sac": ["actor"]}


# ---- a user's policy: the documented default -------------------------------------------------


@dataclass
class Counter(rl.Policy):
    """A user's policy with a table, a counter and two generators of its own."""

    seed: int = 0
    table: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rng: np.random.Generator = field(init=False)
    noise: np.random.Generator = field(init=False)

    def __post_init__(self):
        self.rng = np.random.default_rng(self.seed)
        self.noise = np.random.default_rng(self.seed + 100)

    def state_dict(self):
        return {"table": self.table.copy(), "rng": self.rng.bit_generator.state,
                "extra": {"noise": self.noise.bit_generator.state, "version": 3}}

    def load_state_dict(self, state):
        self.table = np.asarray(state["table"]).copy()
        self.rng.bit_generator.state = state["rng"]
        self.noise.bit_generator.state = state["extra"]["noise"]


def test_a_users_policy_sends_its_state_dict_without_its_rngs_and_workers_keep_theirs():
    learner, worker = Counter(seed=1), Counter(seed=2)
    learner.table[:] = [1.0, 2.0, 3.0]
    before = worker.state_dict()
    weights = get_weights(learner)
    assert set(weights) == {"table", "extra"} and set(weights["extra"]) == {"version"}
    set_weights(worker, weights, 10, rl.RandomWalk1D())
    after = worker.state_dict()
    assert after["table"].tolist() == [1.0, 2.0, 3.0]
    assert after["rng"] == before["rng"] and after["extra"]["noise"] == before["extra"]["noise"]
    assert not on_policy(worker)


# ---- each family -----------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", ["sac", "td3"])
def test_continuous_workers_take_the_actor_and_all_workers_steps_but_not_the_rngs(algorithm):
    from stagerl.algorithms import SACConfig, TD3Config, make_sac_agent, make_td3_agent

    make, config = {"sac": (make_sac_agent, SACConfig), "td3": (make_td3_agent, TD3Config)}[
        algorithm]
    env = rl.GymEnv("Pendulum-v1", seed=0)
    settings = config(net_arch=(8,), buffer_size=50, learning_starts=200)
    learner = make(env, settings, seed=1, device="cpu").policy
    worker = make(env, settings, seed=2, device="cpu").policy
    rng, generator = worker.rng.bit_generator.state, worker.generator.get_state()
    weights = get_weights(learner)
    assert sorted(weights) == ["actor"]
    set_weights(worker, weights, 250, env)
    for a, b in zip(worker.actor.parameters(), learner.actor.parameters(), strict=True):
        assert torch.equal(a, b)
    assert worker.env_steps == 250  # past learning_starts: the warm-up is over for all
    assert worker.rng.bit_generator.state == rng
    assert torch.equal(worker.generator.get_state(), generator)
    set_env_steps(learner, 300)
    assert learner.env_steps == 300 and not on_policy(learner)


def test_a_dqn_worker_explores_at_the_rate_all_workers_steps_give():
    from stagerl.algorithms import DQNConfig, make_dqn_agent

    env = rl.GymEnv("CartPole-v1", seed=0)
    config = DQNConfig(total_steps=1000, exploration_fraction=0.5, learning_starts=0)
    learner = make_dqn_agent(env, config, seed=1, device="cpu").policy
    worker = make_dqn_agent(env, config, seed=2, device="cpu").policy
    set_weights(worker, get_weights(learner), 500, env)
    assert worker.explorer.epsilon == pytest.approx(learner.explorer.epsilon_at(501))
    assert worker.explorer.epsilon == pytest.approx(config.exploration_final_eps)
