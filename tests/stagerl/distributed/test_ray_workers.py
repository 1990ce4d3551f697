"""Rollout workers on Ray: DQN and PPO learn with two workers, a killed worker is replaced, and
bad input is refused before any worker starts. One local Ray instance serves the module
(``ray.init(num_cpus=2)``); the module is skipped when Ray is not installed."""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections import Counter

import numpy as np
import pytest

import stagerl as rl
from stagerl.distributed import Learner, RolloutWorkerError, WorkerPool, worker_seed
from stagerl.experiments import configure, learner_for

ray = pytest.importorskip("ray")

# The factories below travel to the workers by value: their processes cannot import this file.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def local_ray():
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def evaluation(agent, episodes=10):
    return float(np.mean(rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=10_000), episodes)))


def consistent(learner):
    """Every inserted batch counted once, and the trajectory holds exactly their steps."""
    figures = learner.figures()
    container = learner.trajectory.container
    per_worker = sum(w["env_steps"] for w in figures["per_worker"])
    return (len(learner._seen) == figures["batches"] + figures["dropped_batches"]
            and per_worker == learner.env_steps == learner.trajectory.controller.n_inserted
            == int(container.sampleable_inds.sum()))


# ---- learning ------------------------------------------------------------------------------------

DQN_SMOKE = dict(learning_starts=500, train_freq=64, gradient_steps=32, net_arch=(64, 64),
                 target_update_interval=10)


def test_dqn_learns_with_two_workers_and_survives_a_killed_worker(local_ray):
    killed = []

    def kill_once(learner, batch):
        if learner.batches == 8 and not killed:  # worker 0 has requests in flight
            learner.pool.kill(0)
            killed.append(learner.worker_steps[0])  # what worker 0 had inserted by then

    # RL-Zoo's constant step size: dqn-cartpole's falls to 0 over these 4,000 steps
    config = configure("dqn-cartpole-zoo", steps=4000, **DQN_SMOKE)
    with learner_for("dqn-cartpole-zoo", config, seed=0, device="cpu", workers=2,
                     callback=kill_once) as learner:
        figures = learner.train(4000)
        assert killed and figures["replaced_workers"] == 1
        assert [w["incarnations"] for w in figures["per_worker"]] == [2, 1]
        assert figures["env_steps"] == 4000 and consistent(learner)
        # What it had inserted stays counted (whether its replacement acted before the end
        # depends on how fast Ray starts it on a busy machine).
        assert figures["per_worker"][0]["env_steps"] >= killed[0] > 0
        assert evaluation(learner.agent) >= 60  # random: ~22


def test_ppo_learns_with_two_workers_from_current_weights_only(local_ray):
    config = configure("ppo-cartpole", steps=8192, num_envs=4, n_steps=32, batch_size=128,
                       n_epochs=10)
    versions = []
    with learner_for("ppo-cartpole", config, seed=0, device="cpu", workers=2,
                     callback=lambda learner, b: versions.append((b.version,
                                                                  learner.version))) as learner:
        figures = learner.train(8192)
        assert figures["dropped_batches"] == 0 and len(learner._seen) == figures["batches"]
        assert all(acted == current for acted, current in versions)  # on-policy: never stale
        assert figures["versions"] == figures["batches"] // 2  # one update per round of two
        assert learner.agent.policy.env_steps == figures["env_steps"] == 8192
        assert evaluation(learner.agent) >= 100  # random: ~22


def test_train_returns_the_runners_summary_and_its_hooks_log_every_worker_step(local_ray,
                                                                              tmp_path):
    import csv

    from stagerl.experiments.distributed import train
    from stagerl.logging import CSVLogger, Evaluate, log_scalar

    def report(learner, batch):  # a scalar reported on the central side, as an update would
        log_scalar("charts/batches", learner.batches)

    config = configure("ppo-cartpole", num_envs=4, n_steps=32, batch_size=128, n_epochs=10)
    evaluations = Evaluate(2048, 2, rl.GymEnv("CartPole-v1", seed=99))
    summary = train("ppo-cartpole", config, 4096, 0, 2, device="cpu",
                    hooks=[CSVLogger(tmp_path), evaluations], callback=report)
    assert summary["env_steps"] == summary["workers"]["env_steps"] == 4096
    assert summary["eval_episodes"] == 20 and summary["config"]["steps"] == 4096
    assert summary["steps_per_second"] == 4096 / summary["wall_seconds"]
    assert [e["env_step"] for e in summary["evaluations"]] == evaluations.steps != []
    with open(tmp_path / "episodes.csv") as file:
        rows = list(csv.DictReader(file))
    assert sum(int(row["length"]) for row in rows) == 4096 == int(rows[-1]["env_step"])
    assert summary["workers"]["episodes"] == sum(int(r["terminated"]) + int(r["truncated"])
                                                 for r in rows)
    with open(tmp_path / "updates.csv") as file:
        names = {row["name"] for row in csv.DictReader(file)}
    # The evaluations, the callback's scalar and what the central PPO reports per update.
    assert names == {"eval/return_mean", "eval/return_std", "charts/batches",
                     "losses/policy_loss", "losses/value_loss", "losses/entropy",
                     "losses/approx_kl", "losses/clip_fraction", "charts/learning_rate"}


def test_episodes_csv_of_a_dqn_run_on_workers_holds_the_episodes_the_workers_ended(local_ray,
                                                                                 tmp_path):
    import csv

    from stagerl.experiments.distributed import train
    from stagerl.logging import CSVLogger

    inserted, ended, last = [], Counter(), {}

    def record(learner, batch):
        inserted.append((batch.worker, batch.incarnation, batch.sequence))
        ended.update(batch.episodes)  # (return, length) of the episodes the worker ended
        last[batch.worker] = batch.fragments[-1]

    # Batches of 16 steps, about 190 of them: many episodes span several batches.
    config = configure("dqn-cartpole", learning_starts=100, train_freq=16, gradient_steps=1,
                       net_arch=(16,))
    summary = train("dqn-cartpole", config, 3000, 0, 2, device="cpu",
                    hooks=[CSVLogger(tmp_path)], callback=record)
    for worker in (0, 1):  # each worker's batches went in in its order
        assert [s for w, i, s in inserted if w == worker] == list(
            range(sum(1 for w, *_ in inserted if w == worker)))
    figures = summary["workers"]
    assert figures["staleness"]["max"] <= figures["staleness"]["bound"] == 8
    # A CartPole episode's return is its length. The workers' last episodes: one that ended on
    # a batch's last step reaches the worker's records with its next batch (none came); one
    # still running is logged as cut by the stop.
    running = []
    for fragment in last.values():
        steps = fragment.first_step + fragment.n_steps
        if fragment.columns["terminal"][-1] or fragment.columns["truncated"][-1]:
            ended[(float(steps), steps)] += 1
        else:
            running.append(steps)
    with open(tmp_path / "episodes.csv") as file:
        rows = list(csv.DictReader(file))
    logged = Counter((float(r["return"]), int(r["length"])) for r in rows
                     if r["terminated"] == "1" or r["truncated"] == "1")
    assert logged == ended and sum(ended.values()) > 50
    cut = [int(r["length"]) for r in rows if r["terminated"] == r["truncated"] == "0"]
    assert sorted(cut) == sorted(running)
    assert sum(int(r["length"]) for r in rows) == 3000


def test_train_refuses_a_hook_that_is_not_a_hook(local_ray):
    from stagerl.experiments.distributed import train

    with pytest.raises(TypeError, match="ComposedHook takes Hook instances, got 'csv' of type "
                                        "str"):
        train("ppo-cartpole", None, 4096, 0, 2, device="cpu", hooks=["csv"])


# ---- failures and bad input ------------------------------------------------------------------


class FailingWalk(rl.RandomWalk1D):
    """Raises on its 40th step."""

    def __init__(self):
        super().__init__()
        self.steps = 0

    def act(self, action):
        self.steps += 1
        if self.steps == 40:
            raise ValueError("the walk broke")
        super().act(action)


def walk_for(seed):
    return FailingWalk() if seed == worker_seed(0, 1) else rl.RandomWalk1D()


def walk_agent(env, seed):
    return rl.Agent(rl.RandomPolicy(rng=seed),
                    rl.Trajectory(rl.CircularArraySARTSTraces(capacity=1000)))


def test_a_worker_whose_env_raises_stops_the_run_and_the_data_stays_intact(local_ray):
    pool = WorkerPool(walk_for, walk_agent, workers=2, seed=0)
    learner = Learner(walk_agent(None, 0), pool, steps_per_batch=5)
    with learner, pytest.raises(RolloutWorkerError,
                                match=r"rollout worker 1 .*ValueError: the walk broke") as error:
        learner.train(400)
    # The env's exception is the cause, and a printed traceback shows where the env raised it.
    cause = error.value.__cause__
    assert type(cause) is ValueError and str(cause) == "the walk broke"
    printed = "".join(traceback.format_exception(error.value))
    assert printed.index("in act\n    raise ValueError(\"the walk broke\")") < printed.index(
        "ValueError: the walk broke\n\nThe above exception was the direct cause")
    assert "in train" in printed  # and where the learner was when it arrived
    # Nothing of the failing batch arrived; how much the other worker gave by then depends on
    # how the two actors were scheduled.
    assert learner.figures()["per_worker"][1]["env_steps"] < 40
    assert learner.env_steps % 5 == 0 and consistent(learner)  # whole batches only


class CrashingWalk(rl.RandomWalk1D):
    """Its process dies on the third step, in every actor (a crash that always recurs)."""

    def act(self, action):
        self.steps = getattr(self, "steps", 0) + 1
        if self.steps == 3:
            import os

            os._exit(1)
        super().act(action)


def test_a_worker_that_always_dies_stops_the_run_after_its_replacements(local_ray):
    pool = WorkerPool(lambda seed: CrashingWalk(), walk_agent, workers=1, max_replacements=1)
    learner = Learner(walk_agent(None, 0), pool, steps_per_batch=5)
    with learner, pytest.raises(RolloutWorkerError, match="rollout worker 0 died 2 times in a "
                                                          "row without delivering a batch"):
        learner.train(50)
    assert pool.replaced == 1 and learner.env_steps == 0


def test_unpicklable_factories_are_refused_before_any_worker_starts():
    lock = threading.Lock()

    def make_env(seed):
        with lock:
            return rl.RandomWalk1D()

    started = ray.is_initialized()
    with pytest.raises(TypeError, match=r"rollout workers 0\.\.2: make_env .* cannot be sent to a "
                                        r"worker: pickling it raised TypeError: .*lock"):
        WorkerPool(make_env, walk_agent, workers=3)
    assert ray.is_initialized() == started  # not even connected


def test_an_unreachable_address_is_refused_at_once(local_ray):
    start = time.perf_counter()
    with pytest.raises(ConnectionError, match=r"cannot reach the Ray cluster at "
                                              r"address='127\.0\.0\.1:1'"):
        WorkerPool(walk_for, walk_agent, workers=1, address="127.0.0.1:1")
    assert time.perf_counter() - start < 10


def test_more_workers_than_cpus_are_refused(local_ray):
    with pytest.raises(ValueError, match="3 workers of 1.0 CPU each need 3.0 CPUs, the Ray "
                                         "cluster has 2"):
        WorkerPool(walk_for, walk_agent, workers=3)


# ---- fuller learning runs ------------------------------------------------------------------------


@pytest.mark.slow
def test_dqn_cartpole_on_two_workers_with_the_default_plan_reaches_475_in_two_of_three_seeds(
        local_ray):
    # One process: 500, 500, 500. The default plan is asynchronous (batches acted by weights
    # about 3 updates old, arriving as the workers finish them), so a seed's runs differ from
    # one try to the next; measured 500, 184, 500 (docs/distributed.md).
    from stagerl.experiments import get_experiment
    from stagerl.experiments.registry import EVAL_SEED_OFFSET, make_eval_env

    returns = []
    for seed in (0, 1, 2):
        with learner_for("dqn-cartpole", seed=seed, device="cpu", workers=2) as learner:
            learner.train(50_000)
            env = make_eval_env(get_experiment("dqn-cartpole"), configure("dqn-cartpole"),
                                seed + EVAL_SEED_OFFSET)
            returns.append(float(np.mean(rl.evaluate(learner.agent, env, 20))))
        assert learner.plan.source.startswith("StandardMetricsReporting(Concurrently(")
    assert sum(r >= 475 for r in returns) >= 2, returns


@pytest.mark.slow
def test_ppo_cartpole_with_two_workers_reaches_the_single_process_return(local_ray):
    config = configure("ppo-cartpole")  # two workers: updates on 2 rollouts of 32 x 8 steps
    with learner_for("ppo-cartpole", config, seed=0, device="cpu", workers=2) as learner:
        learner.train(100_000)
        assert evaluation(learner.agent, 20) >= 475
