"""A controller's ``would_sample()`` tells what ``on_sample()`` would answer, counting nothing;
a trajectory asks it first, and iterates exactly as it does without it (batches after the same
pushes, the same samples counted, never one while the container is empty)."""

import copy
from dataclasses import asdict

import numpy as np
import pytest

from trajectories import (
    CircularArraySARTSTraces,
    EpisodeSampleRatioController,
    InsertSampleRatioController,
    Trajectory,
    split_lanes,
)


@pytest.mark.parametrize("kind", [InsertSampleRatioController, EpisodeSampleRatioController])
@pytest.mark.parametrize("ratio, threshold", [(1.0, 1), (0.29, 5), (1 / 3, 0), (2.5, 7),
                                              (0.025, 40)])
def test_would_sample_is_on_samples_answer_and_counts_nothing(kind, ratio, threshold):
    rng = np.random.default_rng(threshold)
    controller = kind(ratio=ratio, threshold=threshold)
    answers = []
    for _ in range(400):
        n = int(rng.integers(0, 2))
        controller.on_insert(n, {"terminal": rng.random(n) < 0.5})
        for _ in range(int(rng.integers(0, 4))):
            before = asdict(controller)
            would = controller.would_sample()
            assert asdict(controller) == before  # nothing counted
            asked = copy.deepcopy(controller)
            assert asked.on_sample() is would
            answers.append(would)
            if rng.random() < 0.7:
                assert controller.on_sample() is would
    assert any(answers) and not all(answers)


class WithoutWouldSample(InsertSampleRatioController):
    """The controller as one written without ``would_sample``, its ``on_sample`` calls logged."""

    would_sample = None

    def on_sample(self):
        answer = super().on_sample()
        self.log.append((len(self.trajectory), answer))
        return answer


class Logged(InsertSampleRatioController):
    """The controller itself (its own ``on_sample`` and ``would_sample``), the calls that reach
    its rule logged."""

    def _allows(self, counted):
        answer = super()._allows(counted)
        self.log.append((len(self.trajectory), answer))
        return answer


def test_a_trajectory_iterates_alike_with_and_without_would_sample():
    rng = np.random.default_rng(0)
    trajectories = []
    for kind in (Logged, WithoutWouldSample):
        controller = kind(ratio=1 / 6, threshold=6)
        traces = CircularArraySARTSTraces(capacity=40, state=(np.float64, ()))
        trajectory = split_lanes(Trajectory(traces, controller=controller), 2)
        controller.log, controller.trajectory = [], trajectory
        trajectories.append(trajectory)
    batches = [[], []]
    for t in range(200):
        step = {"state": rng.random(2), "action": rng.integers(3, size=2),
                "reward": rng.random(2), "terminal": rng.random(2) < 0.1}
        for trajectory, seen in zip(trajectories, batches, strict=True):
            if t == 0 or t % 37 == 0:
                trajectory.clear()  # empty now and then: no sample may be counted then
                trajectory.push(state=step["state"])
            else:
                trajectory.push(**step)
            seen.extend(t for _ in trajectory)  # when batches came
    with_it, without = (trajectory.controller for trajectory in trajectories)
    assert batches[0] == batches[1] and len(batches[0]) > 10
    assert (with_it.n_sampled, with_it.n_inserted) == (without.n_sampled, without.n_inserted)
    assert [call for call in without.log if call[1]] == with_it.log  # the allowed ones only
    assert all(length > 0 for length, _ in without.log + with_it.log)


@pytest.mark.parametrize("kind", [InsertSampleRatioController, EpisodeSampleRatioController])
def test_an_overridden_or_replaced_on_sample_decides_for_itself(kind):
    class EveryTime(kind):
        def on_sample(self):  # a user's rule: a batch whenever asked
            return True

    replaced = kind(threshold=1000)
    replaced.on_sample = lambda: True
    for controller in (EveryTime(threshold=1000), replaced):
        assert controller.would_sample() is True  # the base rule would say False
        traces = CircularArraySARTSTraces(capacity=8, state=(np.float32, (4,)))
        trajectory = Trajectory(traces, controller=controller)
        trajectory.push(state=np.zeros(4, dtype=np.float32))
        trajectory.push(state=np.zeros(4, dtype=np.float32), action=0, reward=1.0,
                        terminal=False)
        batches = iter(trajectory)
        assert next(batches) is not None  # the user's on_sample was asked, and allowed
