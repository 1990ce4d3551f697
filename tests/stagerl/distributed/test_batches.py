"""Rollout workers and the central trajectory, without Ray: workers called directly, batches
inserted by a Learner over a stand-in pool. What arrives in the central trajectory must be what
the ordinary loop records in one process, lane by lane, whatever the batch boundaries."""

from __future__ import annotations

import pickle
import subprocess
import sys
import traceback

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import stagerl as rl
from stagerl.distributed import Learner, RolloutWorker, RolloutWorkerError
from stagerl.distributed.batches import FragmentReader
from stagerl.distributed.protocol import get_weights, set_weights
from stagerl.distributed.worker import WorkerTraceback

NAMES = ("state", "next_state", "action", "reward", "terminal")


class StandInPool:
    """What a Learner reads of a pool when batches are inserted by hand."""

    def __init__(self, workers: int):
        self.workers = workers


# ---- factories: every worker uses a fixed seed, so a one-process run can repeat it ----------


def walk_env(seed):
    return rl.RandomWalk1D()


def walk_agent(env, seed):
    return rl.Agent(rl.RandomPolicy(rng=7),
                    rl.Trajectory(rl.CircularArraySARTSTraces(capacity=500)))


def cartpole_vector(mode):
    def make_env(seed):
        return rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=11,
                               vector_kwargs={"autoreset_mode": mode})
    return make_env


def cartpole_agent(env, seed):
    traces = rl.CircularArraySARTSTraces(capacity=3000, state=(np.float32, (4,)))
    return rl.Agent(rl.RandomPolicy(rng=5), rl.Trajectory(traces))


def one_process(make_env, make_agent, steps):
    """The trajectory the ordinary loop records for ``steps`` acts."""
    env = make_env(0)
    agent = make_agent(env, 0)
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    return agent.trajectory


def central_from(workers, make_agent, acts_per_batch, batches, lanes=1, drop=()):
    env = workers[0].env
    central = make_agent(env, 0)
    learner = Learner(central, StandInPool(len(workers)), lanes_per_worker=lanes,
                      steps_per_batch=1)
    for k in range(batches):
        for worker in workers:
            batch = worker.sample(acts_per_batch * lanes)
            if (worker.worker, k) not in drop:
                learner.insert([batch])
    return learner


def same_columns(a, b):
    for name in NAMES:
        np.testing.assert_array_equal(np.asarray(a.container[name]),
                                      np.asarray(b.container[name]), err_msg=name)
    n = len(b.container)  # one entry per row (an EpisodesBuffer has one more: its newest state)
    assert len(a.container) == n
    for name in ("sampleable_inds", "step_numbers"):
        np.testing.assert_array_equal(getattr(a.container, name)[:n],
                                      getattr(b.container, name)[:n], err_msg=name)


# ---- the batches carry exactly the loop's steps ------------------------------------------------


@pytest.mark.parametrize("acts", [1, 3, 7, 40])
def test_batches_of_a_single_env_rebuild_the_one_process_trajectory(acts):
    worker = RolloutWorker(walk_env, walk_agent)
    learner = central_from([worker], walk_agent, acts, batches=120 // acts)
    worker.close()
    reference = one_process(walk_env, walk_agent, acts * (120 // acts))
    same_columns(learner.trajectory, reference)
    assert learner.env_steps == learner.trajectory.controller.n_inserted == acts * (120 // acts)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_batches_of_a_vector_env_rebuild_each_lane(mode):
    make_env = cartpole_vector(mode)
    worker = RolloutWorker(make_env, cartpole_agent)
    learner = central_from([worker], cartpole_agent, 13, batches=9, lanes=3)
    worker.close()
    reference = one_process(make_env, cartpole_agent, 13 * 9 * 3)  # env steps: 3 an act
    same_columns(learner.trajectory, reference)


def test_two_workers_fill_their_own_lanes_and_never_join_each_other():
    workers = [RolloutWorker(walk_env, walk_agent, worker=i) for i in range(2)]
    learner = central_from(workers, walk_agent, 5, batches=8)
    for w in workers:
        w.close()
    reference = one_process(walk_env, walk_agent, 40)  # both workers act as this run did
    container = learner.trajectory.container
    rows = np.arange(len(container))
    lane, _ = container.lane_of(rows)
    assert container.lane_lengths() == [len(reference.container)] * 2
    for name in NAMES:
        for k in range(2):
            np.testing.assert_array_equal(container.take(name, rows[lane == k]),
                                          np.asarray(reference.container[name]))


def test_a_dropped_batch_leaves_a_boundary_instead_of_joining_the_rest():
    worker = RolloutWorker(walk_env, walk_agent)
    central = walk_agent(None, 0)
    learner = Learner(central, StandInPool(1), steps_per_batch=1)
    batches = [worker.sample(4) for _ in range(3)]
    worker.close()
    assert batches[2].fragments[0].first_step > 0  # batch 2 goes on with an episode of batch 1
    learner.insert([batches[0], batches[2]])
    steps = batches[0].env_steps + batches[2].env_steps
    assert learner.env_steps == steps
    container = learner.trajectory.container
    assert int(container.sampleable_inds.sum()) == steps  # every shipped step, none invented
    first = batches[2].fragments[0].columns["state"][0]
    starts = np.flatnonzero(container.step_numbers == 1)
    assert container["state"][starts[-1]] == first  # it starts an episode of its own


def test_truncated_steps_reach_the_central_controller():
    def make_env(seed):
        return rl.GymEnv(gymnasium.make("CartPole-v1", max_episode_steps=5), seed=3)

    worker = RolloutWorker(make_env, cartpole_agent)
    batches = [worker.sample(7) for _ in range(3)]
    worker.close()
    flags = np.concatenate([f.columns["truncated"] for b in batches for f in b.fragments])
    terminal = np.concatenate([f.columns["terminal"] for b in batches for f in b.fragments])
    episode_ends = np.flatnonzero(flags | terminal)
    assert flags.sum() == 4 and np.all(np.diff(np.concatenate([[-1], episode_ends])) == 5)
    central = cartpole_agent(None, 0)
    central.trajectory.controller = rl.EpisodeSampleRatioController(ratio=1.0, threshold=1)
    learner = Learner(central, StandInPool(1), steps_per_batch=1)
    learner.insert(batches)
    assert central.trajectory.controller.n_episodes == 4  # four episodes cut at 5 steps


def test_episode_ids_are_unique_across_workers_and_incarnations():
    ids = set()
    for worker, incarnation in ((0, 0), (1, 0), (0, 1)):
        reader = FragmentReader(worker, incarnation, n_lanes=2)
        ids.update(reader._episode)
    assert len(ids) == 6


def test_batches_report_the_episodes_that_ended():
    worker = RolloutWorker(walk_env, walk_agent)
    batches = [worker.sample(50) for _ in range(3)]
    worker.close()
    env = walk_env(0)
    reference = rl.run(walk_agent(None, 0), env, rl.StopAfterNSteps(100, progress=False),
                       rl.TotalRewardPerEpisode())
    ended = reference.rewards if env.is_terminated else reference.rewards[:-1]  # not the cut one
    reported = [r for b in batches for r, _ in b.episodes]
    # On a single env an episode ends at PostEpisode, after the batch's last step was handed
    # over: one that ends on that step is reported with the next batch.
    assert reported[:len(ended)] == ended and len(reported) > len(ended)
    assert len([r for b in batches[:2] for r, _ in b.episodes]) >= len(ended) - 1


# ---- bad input and failures --------------------------------------------------------------------


class FailingWalk(rl.RandomWalk1D):
    """Raises on its 12th step."""

    def __init__(self):
        super().__init__()
        self.steps = 0

    def act(self, action):
        self.steps += 1
        if self.steps == 12:
            raise ValueError("the walk broke")
        super().act(action)


def test_a_worker_whose_env_raises_names_itself_and_the_cause():
    worker = RolloutWorker(lambda seed: FailingWalk(), walk_agent, worker=2)
    batch = worker.sample(10)
    assert batch.env_steps == 10
    for _ in range(2):  # and ever after
        with pytest.raises(RolloutWorkerError, match=r"rollout worker 2 .*ValueError: the walk "
                                                     r"broke") as error:
            worker.sample(10)
        assert isinstance(error.value.__cause__, ValueError)


def test_a_worker_error_sent_to_another_process_keeps_its_cause_and_the_env_frames():
    worker = RolloutWorker(lambda seed: FailingWalk(), walk_agent, worker=2)
    with pytest.raises(RolloutWorkerError) as raised:
        worker.sample(20)
    arrived = pickle.loads(pickle.dumps(raised.value))  # as a Ray actor sends it
    assert str(arrived) == str(raised.value) and type(arrived) is RolloutWorkerError
    cause = arrived.__cause__
    assert type(cause) is ValueError and str(cause) == "the walk broke"
    assert isinstance(cause.__cause__, WorkerTraceback)
    printed = "".join(traceback.format_exception(arrived))
    assert printed.index('in act\n    raise ValueError("the walk broke")') < printed.index(
        "ValueError: the walk broke")


class Unbuildable(Exception):
    """An exception that cannot be rebuilt from its arguments (pickling it fails)."""

    def __init__(self, code, detail):
        super().__init__(f"code {code}: {detail}")


class UnbuildableWalk(rl.RandomWalk1D):
    def act(self, action):
        raise Unbuildable(7, "the walk broke")


def test_a_worker_error_whose_cause_cannot_travel_keeps_its_type_name_and_frames():
    worker = RolloutWorker(lambda seed: UnbuildableWalk(), walk_agent, worker=0)
    with pytest.raises(RolloutWorkerError) as raised:
        worker.sample(5)
    assert isinstance(raised.value.__cause__, Unbuildable)  # in this process: the exception
    arrived = pickle.loads(pickle.dumps(raised.value))
    assert type(arrived.__cause__) is RuntimeError
    assert str(arrived.__cause__) == f"{__name__}.Unbuildable: code 7: the walk broke"
    assert "in act\n    raise Unbuildable(7" in arrived.__cause__.__cause__.text


def test_a_worker_refuses_an_agent_it_cannot_ship():
    with pytest.raises(TypeError, match="rollout worker 4: make_agent must return a stagerl.Agent"):
        RolloutWorker(walk_env, lambda env, seed: rl.RandomPolicy(), worker=4)
    sartsa = rl.Trajectory(rl.CircularArraySARTSATraces(capacity=10))
    with pytest.raises(ValueError, match="no next_action"):
        RolloutWorker(walk_env, lambda env, seed: rl.Agent(rl.RandomPolicy(), sartsa))


def test_a_batch_larger_than_the_worker_trajectory_is_refused():
    def small(env, seed):
        return rl.Agent(rl.RandomPolicy(), rl.Trajectory(rl.CircularArraySARTSTraces(10)))

    worker = RolloutWorker(walk_env, small, worker=1)
    with pytest.raises(ValueError, match="rollout worker 1: a batch of 6 acts needs lanes of 13"):
        worker.sample(6)


def test_a_central_trajectory_with_other_lanes_is_refused():
    central = rl.Agent(rl.RandomPolicy(), rl.Trajectory(rl.CircularArraySARTSTraces(100),
                                                        n_lanes=3))
    with pytest.raises(ValueError, match="has 3 lanes, but 2 workers of 1 sub-envs need 2"):
        Learner(central, StandInPool(2), lanes_per_worker=1, steps_per_batch=4)


def test_stagerl_distributed_imports_without_ray():
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "import stagerl, stagerl.distributed as d\n"
        "assert d.RolloutWorker and d.Learner and d.get_weights\n"
        "try:\n"
        "    d.WorkerPool(lambda s: None, lambda e, s: None, workers=1)\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "pip install 'stagerl[ray]'" in out


# ---- what the algorithms send their workers ---------------------------------------------------


def test_dqn_workers_take_the_network_and_the_global_step_count_but_not_the_rng():
    import torch

    from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent

    config = DQNConfig(total_steps=1000, learning_starts=100, net_arch=(8,))
    env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0)
    learner = make_dqn_agent(env, config, seed=1, device="cpu").policy
    worker = make_dqn_agent(env, config, seed=2, device="cpu").policy
    rng_before = worker.explorer.rng.bit_generator.state
    weights = get_weights(learner)
    assert sorted(weights) == ["network"]
    set_weights(worker, weights, 300, env)
    for a, b in zip(worker.network.parameters(), learner.network.parameters(), strict=True):
        assert torch.equal(a, b)
    assert (worker.env_steps, worker.explorer.step) == (300, 151)  # two sub-envs per act
    assert worker.explorer.rng.bit_generator.state == rng_before


def test_on_policy_workers_take_the_model_and_keep_their_own_rng():
    import torch

    from stagerl.algorithms import PPOConfig, make_ppo_agent
    from stagerl.algorithms.on_policy import make_vector_env
    from stagerl.distributed import on_policy

    env = make_vector_env("CartPole-v1", 2, seed=0)
    config = PPOConfig(n_steps=8, batch_size=16)
    learner = make_ppo_agent(env, config, seed=1, device="cpu").policy
    worker = make_ppo_agent(env, config, seed=2, device="cpu").policy
    rng_before = worker.rng.bit_generator.state
    set_weights(worker, get_weights(learner), 64, env)
    for a, b in zip(worker.model.parameters(), learner.model.parameters(), strict=True):
        assert torch.equal(a, b)
    assert worker.rng.bit_generator.state == rng_before and on_policy(learner)


def test_tabular_q_workers_take_the_table_and_keep_their_explorer():
    def q_policy(seed):
        return rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(7, 2), lr=0.5),
                               rl.EpsilonGreedyExplorer(0.1, rng=seed))

    learner, worker = q_policy(1), q_policy(2)
    learner.learner.approximator.table[3, 1] = 0.75
    explorer_before = worker.explorer.state_dict()
    weights = get_weights(learner)
    assert sorted(weights) == ["table"]
    set_weights(worker, weights, 100, rl.RandomWalk1D())
    assert worker.learner.approximator.table[3, 1] == 0.75
    assert worker.explorer.state_dict() == explorer_before


def test_the_examples_of_docs_distributed_run():
    import doctest
    from pathlib import Path

    page = Path(__file__).resolve().parents[3] / "docs" / "distributed.md"
    failures, tried = doctest.testfile(str(page), module_relative=False)
    assert tried > 0 and failures == 0
