"""The central side's hooks, without Ray: the episodes an EpisodeReplay tells them are those the
ordinary loop tells its hooks in one process, whatever the batch boundaries."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

import stagerl as rl
from stagerl.distributed import EpisodeReplay, RolloutWorker
from stagerl.logging import CSVLogger


@dataclass
class Episodes(rl.EpisodeHook):
    seen: list = field(default_factory=list)
    stages: list = field(default_factory=list)

    def on_episode(self, episode, policy, env):
        self.seen.append((episode.total_reward, episode.length, episode.terminated,
                          episode.truncated))


@rl.push.dispatch
def _(hook: Episodes, stage: rl.PreExperimentStage, policy, env):
    hook.stages.append("PreExperiment")


@rl.push.dispatch
def _(hook: Episodes, stage: rl.PostExperimentStage, policy, env):
    hook.stages.append("PostExperiment")


def cartpole(seed):
    return rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=11)


def random_agent(env, seed):
    traces = rl.CircularArraySARTSTraces(capacity=300, state=(np.float32, (4,)))
    return rl.Agent(rl.RandomPolicy(rng=5), rl.Trajectory(traces))


def test_the_replayed_episodes_are_those_one_process_sees_on_a_vector_env():
    env = cartpole(0)  # 200 acts of 3 sub-envs, episodes cut by the stop included
    alone = rl.run(random_agent(env, 0), env, rl.StopAfterNSteps(600, progress=False),
                   Episodes())
    worker, hook = RolloutWorker(cartpole, random_agent), Episodes()
    replay = EpisodeReplay([hook], worker.agent)
    batches = [worker.sample(60) for _ in range(10)]  # 20 acts: episodes span batches
    worker.close()
    for batch in batches:
        replay(None, batch)
    replay.finish()
    assert sorted(hook.seen) == sorted(alone.seen)
    # The acts that only reset a sub-env are no steps: 574 of the 600 acted were.
    steps = sum(batch.env_steps for batch in batches)
    assert replay.env_steps == sum(length for _, length, _, _ in hook.seen) == steps == 574
    assert sum(not t and not u for _, _, t, u in hook.seen) == 3  # one cut per sub-env
    assert hook.stages == ["PreExperiment", "PostExperiment"]


def test_an_episode_whose_rest_never_arrives_is_told_as_cut(tmp_path):
    worker, csv = RolloutWorker(cartpole, random_agent), CSVLogger(tmp_path)
    replay = EpisodeReplay(csv, worker.agent)
    batches = [worker.sample(60) for _ in range(4)]
    worker.close()
    for batch in batches[:1] + batches[2:]:  # the second is lost (a dropped batch)
        replay(None, batch)
    replay.finish()
    rows = np.genfromtxt(tmp_path / "episodes.csv", delimiter=",", names=True)
    steps = sum(batch.env_steps for batch in batches) - batches[1].env_steps
    assert rows["length"].sum() == replay.env_steps == steps == csv.env_step
    assert rows["env_step"][-1] == steps and (rows["sub_env"] == 0).all()
    assert len(rows) == replay.episodes
    lost = {f.episode_id for f in batches[1].fragments}
    cut_mid_run = sum(1 for f in batches[0].fragments if f.episode_id in lost
                      and not (f.columns["terminal"][-1] or f.columns["truncated"][-1]))
    assert cut_mid_run > 0  # the episodes running into the lost batch, told where they stop
    told_cut = int(((rows["terminated"] == 0) & (rows["truncated"] == 0)).sum())
    assert told_cut >= cut_mid_run + 3


def test_a_hook_that_is_not_a_hook_is_refused():
    with pytest.raises(TypeError, match="EpisodeReplay needs stagerl Hooks, got 'csv' of type "
                                        "str"):
        EpisodeReplay([rl.StepsPerEpisode(), "csv"], policy=None)
