"""Execution plans without Ray: the operators over rollout workers run in this process by a
scripted pool (each request acted at once, ready at a tick the test decides, ready ones handed
back newest first, as ``ray.wait`` promises no order). What reaches each training step is what
the workers produced, whole, in each worker's order and (bulk-synchronous) acted by the current
weights; Concurrently interleaves as specified; A3C's gradients come from the weights version
their worker held and stale ones follow the rule; plans that cannot work are refused when
built."""

from __future__ import annotations

import re

import pytest
import torch
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)

from stagerl.algorithms import (
    A3CConfig,
    DQNConfig,
    PPOConfig,
    make_a3c_agent,
    make_dqn_agent,
    make_ppo_agent,
)
from stagerl.algorithms.on_policy import make_vector_env
from stagerl.distributed import (
    NOT_READY,
    ApplyGradients,
    AsyncGradients,
    Batches,
    ConcatBatches,
    Concurrently,
    Gradients,
    Learner,
    ParallelRollouts,
    PlanIterator,
    Replay,
    RolloutWorker,
    StandardMetricsReporting,
    StoreToReplayBuffer,
    TrainOneStep,
    UpdateTargetNetwork,
    WorkerLanes,
    replay_plan,
    stream_plan,
)


class InProcessPool:
    """A WorkerPool stand-in: RolloutWorkers in this process; a request is acted at once and
    becomes ready at the tick ``ready_at(slot, sequence, tick)`` says (a tick passes a wait)."""

    def __init__(self, make_env, make_agent, workers, ready_at=None):
        self.workers, self.ready_at = workers, ready_at or (lambda slot, seq, tick: tick + 1)
        self.actors = [RolloutWorker(make_env, make_agent, worker=slot, seed=0)
                       for slot in range(workers)]
        self.incarnations, self.replaced, self.ray = [0] * workers, 0, self
        self.tick, self.sequences, self.produced = 0, [0] * workers, []
        self._pending: dict = {}
        self._refs = 0

    def put(self, weights):
        return weights

    def wait_ready(self):
        pass

    def submit(self, slot, steps, weights=None, env_steps=0, version=0, gradients=False):
        batch = self.actors[slot].sample(steps, weights, env_steps, version, gradients)
        self.produced.append(batch.key)
        self._refs += 1
        self._pending[self._refs] = (slot, batch,
                                     self.ready_at(slot, self.sequences[slot], self.tick))
        self.sequences[slot] += 1
        return self._refs

    def slot_of(self, ref):
        return self._pending[ref][0]

    def wait(self, refs=None, timeout=None):
        refs = list(self._pending) if refs is None else list(refs)
        self.tick += 1
        if timeout != 0 and not any(self._pending[r][2] <= self.tick for r in refs):
            self.tick = min(self._pending[r][2] for r in refs)
        return sorted((r for r in refs if self._pending[r][2] <= self.tick), reverse=True)

    def result(self, ref):
        return self._pending.pop(ref)[1]

    def shutdown(self):
        for actor in self.actors:
            actor.close()


def cartpole(num_envs):
    return lambda seed: make_vector_env("CartPole-v1", num_envs, seed)


def learner_for(make_agent, workers=2, num_envs=2, ready_at=None, **options):
    env = cartpole(num_envs)(0)
    central = make_agent(WorkerLanes(env, workers), 0)
    pool = InProcessPool(cartpole(num_envs), make_agent, workers, ready_at)
    return Learner(central, pool, lanes_per_worker=num_envs, **options)


def ppo_agent(env, seed):
    return make_ppo_agent(env, PPOConfig(n_steps=8, batch_size=16, n_epochs=1), seed, "cpu")


def a3c_agent(env, seed, **settings):
    return make_a3c_agent(env, A3CConfig(n_steps=5, **settings), seed, "cpu")


def dqn_agent(env, seed):
    config = DQNConfig(total_steps=2000, learning_starts=64, train_freq=32, gradient_steps=4,
                       batch_size=16, buffer_size=4000, net_arch=(16,),
                       target_update_interval=50)
    return make_dqn_agent(env, config, seed=seed, device="cpu")


# ---- Concurrently --------------------------------------------------------------------------


def items(name, values):
    return PlanIterator(iter(values), object, name)


def test_round_robin_alternates_by_its_weights_and_outputs_the_named_iterators():
    a, b = items("a", ["a1", "a2", "a3"]), items("b", ["b1", "b2", "b3", "b4"])
    assert list(Concurrently([a, b])) == ["a1", "b1", "a2", "b2", "a3", "b3", "b4"]
    a, b = items("a", ["a1", "a2"]), items("b", ["b1", "b2", "b3", "b4"])
    assert list(Concurrently([a, b], round_robin_weights=[1, 2])) == [
        "a1", "b1", "b2", "a2", "b3", "b4"]
    # "*": as many as the iterator has ready, until it says NOT_READY
    a = items("a", ["a1", "a2", "a3"])
    b = items("b", ["b1", "b2", NOT_READY, "b3", NOT_READY, NOT_READY, NOT_READY, "b4"])
    assert list(Concurrently([a, b], round_robin_weights=[1, "*"])) == [
        "a1", "b1", "b2", "a2", "b3", "a3", NOT_READY, "b4"]  # NOT_READY: none had any
    # output_indexes: the others run for their side effects
    seen = []
    a = items("a", ["a1", "a2"]).for_each(lambda x: seen.append(x) or x)
    b = items("b", ["b1", "b2"])
    assert list(Concurrently([a, b], output_indexes=[1])) == ["b1", "b2"] and seen == [
        "a1", "a2"]


def test_async_takes_whatever_is_ready_and_waits_for_none():
    a = items("a", [NOT_READY, NOT_READY, "a1", NOT_READY, "a2"])
    b = items("b", ["b1", "b2", NOT_READY, "b3"])
    out = list(Concurrently([a, b], mode="async"))
    assert out == ["b1", "b2", "a1", "b3", "a2"]


@pytest.mark.parametrize("args, message", [
    (dict(mode="fifo"), "Concurrently's mode must be 'round_robin' or 'async', got mode='fifo'"),
    (dict(output_indexes=[2]), "output_indexes must name some of the 2 iterators (0 to 1), got "
                               "output_indexes=[2]"),
    (dict(round_robin_weights=[1, 0]), "round_robin_weights must give each of the 2 iterators "
                                       "an int >= 1 or '*', got round_robin_weights=[1, 0]"),
    (dict(mode="async", round_robin_weights=[1, 1]), "round_robin_weights are for "
                                                     "mode='round_robin'"),
])
def test_concurrently_refuses_settings_that_do_not_exist(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Concurrently([items("a", []), items("b", [])], **args)


# ---- what reaches the training step -------------------------------------------------------------


def test_bulk_sync_rounds_reach_train_one_step_whole_in_worker_order_and_current():
    # Worker 1 is always ready first: a round still goes in in worker order.
    reached = []

    def plan(learner):
        def record(batches):
            reached.append(([b.key for b in batches], [b.version for b in batches],
                            learner.current_version()))
            return batches

        return (ParallelRollouts(learner, mode="bulk_sync")
                .for_each(ConcatBatches(learner.steps_per_batch * 2))
                .for_each(record).for_each(TrainOneStep(learner)))

    learner = learner_for(ppo_agent, ready_at=lambda s, q, t: t + (3 if s == 0 else 1),
                          plan=plan)
    with learner:
        learner.train(32 * 5)
    assert len(reached) == 5 and learner.agent.policy.n_updates == 5
    for r, (keys, versions, current) in enumerate(reached):
        assert keys == [(0, 0, r), (1, 0, r)]  # every worker's batch of the round, in order
        assert versions == [current, current] == [r, r]  # acted by the weights now trained
    assert sorted(k for keys, _, _ in reached for k in keys) == sorted(learner.pool.produced)
    assert learner.figures()["dropped_batches"] == 0


def test_the_replay_plan_stores_every_batch_once_in_order_and_learns_as_the_loop_does():
    # The DQN plan (store, update target, replay, train) against inserting and optimising each
    # batch (the loop's order in one process): the same schedule gives the same network.
    def ready_at(slot, sequence, tick):  # worker 0 slow now and then: batches come out of order
        return tick + (4 if slot == 0 and sequence % 3 == 0 else 1)

    stored, runs = [], {}
    for plan in (replay_plan, stream_plan):
        learner = learner_for(dqn_agent, ready_at=ready_at, plan=plan,
                              callback=lambda lr, b, plan=plan: stored.append((plan, b.key)))
        with learner:
            learner.train(1600)
        runs[plan] = learner
    replay, stream = runs[replay_plan], runs[stream_plan]
    keys = [k for p, k in stored if p is replay_plan]
    assert sorted(keys) == sorted(replay.pool.produced) and len(set(keys)) == len(keys)
    for worker in (0, 1):
        assert [s for w, _, s in keys if w == worker] == sorted(s for w, _, s in keys
                                                                  if w == worker)
    assert keys == [k for p, k in stored if p is stream_plan]
    assert replay.env_steps == stream.env_steps == 1600
    assert replay.trajectory.controller.n_sampled == stream.trajectory.controller.n_sampled > 30
    for a, b in zip(replay.agent.policy.network.parameters(),
                    stream.agent.policy.network.parameters(), strict=True):
        assert torch.equal(a, b)
    assert replay.agent.policy.target_updates == stream.agent.policy.target_updates


# ---- A3C ---------------------------------------------------------------------------------------


def test_a3c_applies_gradients_computed_with_the_weights_their_worker_held():
    def checksum(policy):
        params = [p for g in policy.optimiser.param_groups for p in g["params"]]
        return float(sum(p.double().sum() for p in params))

    central_at = {}  # version -> the central weights' checksum then
    results = []

    def plan(learner):
        return AsyncGradients(learner).for_each(ApplyGradients(learner)).for_each(
            lambda result: results.append(result) or result)

    # Worker 0 takes three ticks a request, worker 1 one: worker 0's gradients come stale.
    learner = learner_for(a3c_agent, ready_at=lambda s, q, t: t + (3 if s == 0 else 1),
                          plan=plan)
    gradients = []
    apply = learner.apply

    def applying(item, scale, staleness):  # the central weights of each version, then apply
        central_at.setdefault(learner.current_version(), checksum(learner.agent.policy))
        gradients.append(item)
        apply(item, scale, staleness)

    learner.apply = applying
    with learner:
        learner.train(20 * 30)
    assert len(gradients) > 20
    for item in gradients:
        assert item.gradients["weights_checksum"] == pytest.approx(
            central_at[item.batch.version], rel=1e-12)
    figures = learner.figures()["gradients"]
    assert figures["dropped"] == sum(1 for r in results if not r["trained"]) > 0
    assert all(r["staleness"] > 1 for r in results if not r["trained"])  # the default bound
    assert all(r["staleness"] <= 1 and r["scale"] == 1.0 for r in results if r["trained"])
    assert learner.agent.policy.n_updates == figures["applied"] == len(gradients)


def test_scaled_stale_gradients_are_applied_times_one_over_one_plus_their_staleness():
    seen = []

    def plan(learner):
        return AsyncGradients(learner).for_each(ApplyGradients(learner, stale="scale")).for_each(
            lambda result: seen.append(result) or result)

    learner = learner_for(a3c_agent, ready_at=lambda s, q, t: t + (4 if s == 0 else 1),
                          plan=plan)
    with learner:
        learner.train(20 * 20)
    assert all(r["trained"] and r["scale"] == 1.0 / (1 + r["staleness"]) for r in seen)
    assert max(r["staleness"] for r in seen) >= 2 and "dropped" not in learner.figures()


# ---- bad plans, refused when built --------------------------------------------------------------


def bad(plan, message, error=TypeError):
    with pytest.raises(error, match=re.escape(message)):
        learner_for(ppo_agent, plan=plan).close()


def test_an_operator_fed_the_wrong_kind_of_item_is_refused_when_the_plan_is_built():
    bad(lambda lr: AsyncGradients(lr).for_each(TrainOneStep(lr)),
        "TrainOneStep() takes RolloutBatch or Batches or ReplaySample, got Gradients items "
        "from AsyncGradients(); TrainOneStep follows ParallelRollouts, ConcatBatches or Replay "
        "(gradients go to ApplyGradients)")
    bad(lambda lr: ParallelRollouts(lr, mode="async").for_each(ApplyGradients(lr)),
        "ApplyGradients(max_staleness=1, stale='drop') takes Gradients, got RolloutBatch "
        "items from ParallelRollouts(mode='async'); ApplyGradients follows AsyncGradients")
    bad(lambda lr: Replay(lr).for_each(ConcatBatches(64)).for_each(TrainOneStep(lr)),
        "ConcatBatches(64) takes RolloutBatch or Batches, got ReplaySample items from Replay()")
    bad(lambda lr: ParallelRollouts(lr).for_each(TrainOneStep(lr)).for_each(
        StoreToReplayBuffer(lr)), "StoreToReplayBuffer() takes RolloutBatch or Batches, got "
                                  "TrainResult items")
    bad(lambda lr: 3, "plan '<lambda>' must return the plan's last iterator (a PlanIterator), "
                      "got int")
    bad(lambda lr: ParallelRollouts(lr, mode="sync"), "ParallelRollouts' mode must be "
                                                      "'bulk_sync' or 'async', got mode='sync'",
        ValueError)
    bad(lambda lr: ParallelRollouts(lr).for_each(ConcatBatches(0)),
        "ConcatBatches' min_batch_size must be an int >= 1, got min_batch_size=0", ValueError)


def test_a_plan_without_a_training_step_is_refused_when_the_plan_is_built():
    bad(lambda lr: ParallelRollouts(lr).for_each(StoreToReplayBuffer(lr)).for_each(
        UpdateTargetNetwork(lr)),
        "the plan ParallelRollouts(mode='bulk_sync').for_each(StoreToReplayBuffer())"
        ".for_each(UpdateTargetNetwork()) never trains: nothing in it changes the weights; "
        "end it with TrainOneStep(learner)", ValueError)
    with pytest.raises(ValueError, match="never trains"):
        StandardMetricsReporting(items("numbers", [1, 2]), None)


def test_a_wrong_item_from_a_plain_function_is_refused_with_its_value():
    def plan(learner):
        return ParallelRollouts(learner).for_each(lambda batches: "oops").for_each(
            TrainOneStep(learner))

    learner = learner_for(ppo_agent, plan=plan)
    with learner, pytest.raises(TypeError, match=re.escape(
            "TrainOneStep() takes RolloutBatch or Batches or ReplaySample, got 'oops' of type "
            "str")):
        learner.train(64)


def test_gradients_from_a_policy_that_cannot_send_them_are_refused_by_name():
    def plan(learner):
        return AsyncGradients(learner).for_each(ApplyGradients(learner))

    learner = learner_for(ppo_agent, plan=plan)
    with learner, pytest.raises(Exception, match="PPOPolicy cannot send gradients to a learner"):
        learner.train(64)
    assert isinstance(Batches([]), list) and Gradients(None, None).batch is None


def test_the_plans_docs_show_are_the_plans_the_learner_runs():
    """docs/distributed.md shows replay_plan, on_policy_plan and a3c_plan as code: the same
    statements as stagerl.distributed.plans' (docstrings and annotations apart)."""
    import ast
    import inspect
    from pathlib import Path

    from stagerl.distributed import plans

    def body(function: ast.FunctionDef) -> list[str]:
        statements = function.body
        if isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant):
            statements = statements[1:]  # the docstring
        return [ast.dump(s) for s in statements]

    page = (Path(__file__).resolve().parents[3] / "docs" / "distributed.md").read_text()
    shown = {node.name: node for block in re.findall(r"```python\n(.*?)```", page, re.DOTALL)
             if not block.startswith(">>>") for node in ast.parse(block).body
             if isinstance(node, ast.FunctionDef)}
    for name in ("replay_plan", "on_policy_plan", "a3c_plan"):
        library = ast.parse(inspect.getsource(getattr(plans, name))).body[0]
        assert body(shown[name]) == body(library), name
