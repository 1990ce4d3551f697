import numpy as np
import pytest

from trajectories import (
    BatchSampler,
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    DummySampler,
    EpisodesBuffer,
    InsertSampleRatioController,
    Trajectory,
)


class CountingController(InsertSampleRatioController):
    """Records every call, to check the trajectory consults it exactly as specified."""

    def __post_init__(self):
        super().__post_init__()
        self.inserts, self.samples = [], 0

    def on_insert(self, n, data=None):
        self.inserts.append((n, dict(data)))
        super().on_insert(n, data)

    def on_sample(self):
        self.samples += 1
        return super().on_sample()


def test_defaults_wrap_container():
    t = Trajectory(CircularArraySARTSTraces(capacity=10))
    assert isinstance(t.container, EpisodesBuffer)
    assert isinstance(t.sampler, DummySampler)
    assert isinstance(t.controller, InsertSampleRatioController)
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=10))
    assert Trajectory(eb).container is eb
    # defaults are built per trajectory
    assert Trajectory(eb).controller is not Trajectory(eb).controller


def test_only_full_pushes_count_as_inserts():
    c = CountingController()
    t = Trajectory(CircularArraySARTSATraces(capacity=10), controller=c)
    t.push(state=0)
    t.push(state=1, action=0, reward=1.0, terminal=True)
    t.push(next_action=1)
    assert c.inserts == [(1, dict(state=1, action=0, reward=1.0, terminal=True))]
    assert c.n_inserted == 1 and len(t) == 1


def test_empty_container_never_consults_the_controller():
    c = CountingController(threshold=0)
    t = Trajectory(CircularArraySARTSTraces(capacity=10), controller=c)
    assert list(t) == [] and c.samples == 0
    t.push(state=0)  # a first state: still no row
    assert list(t) == [] and c.samples == 0 and c.n_sampled == 0


def test_iteration_yields_as_many_batches_as_the_ratio_allows():
    c = InsertSampleRatioController(ratio=0.5, threshold=2)
    t = Trajectory(CircularArraySARTSTraces(capacity=100), BatchSampler(3, rng=0), c)
    t.push(state=0)
    counts = []
    for s in range(1, 9):
        t.push(state=s, action=1, reward=0.0, terminal=False)
        counts.append(len(list(t)))
    assert counts == [0, 1, 0, 1, 0, 1, 0, 1]
    assert c.n_sampled == 4 == (8 - 2) * 0.5 + 1
    batch = t.sample()
    assert batch["state"].shape == (3,) and c.n_sampled == 4


def test_dummy_sampler_yields_the_container():
    t = Trajectory(CircularArraySARTSTraces(capacity=10))
    t.push(state=0)
    t.push(state=1, action=0, reward=0.0, terminal=False)
    assert [b for b in t] == [t.container]
    assert t.sample() is t.container


def test_extend_counts_transitions_in_one_call():
    c = CountingController()
    t = Trajectory(CircularArraySARTSTraces(capacity=10), controller=c)
    n = t.extend(state=np.arange(4), action=[0, 1, 0], reward=[0.0, 0.0, 1.0],
                 terminal=[False, False, True])
    assert n == 3 and [k for k, _ in c.inserts] == [3] and c.n_inserted == 3
    assert c.inserts[0][1]["action"] == [0, 1, 0]
    t.extend(state=[7], action=[], reward=[], terminal=[])  # a first state only: no insert
    assert [k for k, _ in c.inserts] == [3] and len(t) == 4


def test_forwarding_and_errors():
    t = Trajectory(CircularArraySARTSTraces(capacity=10))
    t.push(state=0)
    t.push(state=1, action=0, reward=0.0, terminal=False)
    assert t.keys() == ("state", "next_state", "action", "reward", "terminal")
    assert t[0]["next_state"] == 1 and t["action"].tolist() == [0]
    with pytest.raises(TypeError):
        Trajectory(CircularArraySARTSTraces(capacity=10), sampler=object())
    with pytest.raises(TypeError):
        Trajectory(CircularArraySARTSTraces(capacity=10), controller=object())
    with pytest.raises(TypeError, match="prioritized"):
        t.set_priority([0], [1.0])


BAD_STEPS = [
    dict(state=1.5, action=0, reward=0.0, terminal=False),           # float into int state
    dict(state=[1, 2], action=0, reward=0.0, terminal=False),        # wrong shape
    dict(state=1, action="a", reward=0.0, terminal=False),           # string into int
    dict(state=1, action=0, reward="x", terminal=False),             # string into float
    dict(state=1, action=float("nan"), reward=0.0, terminal=False),  # NaN into int
    dict(state=1, action=0, reward=0.0, terminal=float("nan")),      # NaN into bool
    dict(state=1, action=0, reward=0.0, terminal=2),                 # 2 into bool
    dict(state=1, action=2**80, reward=0.0, terminal=False),         # out of range
    dict(state=1, action=0, reward=0.0),                             # missing terminal
    dict(state=1, action=0, reward=0.0, terminal=False, extra=1),    # unknown key
    dict(state=1, next_state=1, action=0, reward=0.0, terminal=False),  # both names
    dict(state=3),                                                   # partial after partial
    dict(next_action=1),                                             # not in this layout
]


def snapshot(t):
    eb = t.container
    return ({k: eb.traces[k].tolist() for k in eb.keys()},
            [np.asarray(b).tolist() for b in eb.traces._bufs],
            eb.sampleable_inds.tolist(), eb.step_numbers.tolist(), eb.episodes_lengths.tolist(),
            eb.n_sampleable, t.controller.n_inserted, t.controller.n_sampled)


@pytest.mark.parametrize("bad", BAD_STEPS)
def test_bad_push_into_full_wrapped_trajectory_changes_nothing(bad):
    t = Trajectory(CircularArraySARTSTraces(capacity=4), controller=CountingController())
    t.push(state=0)
    for s in range(1, 8):
        t.push(state=s, action=s, reward=float(s), terminal=False)
    t.push(state=10)
    before = snapshot(t)
    with pytest.raises((TypeError, ValueError)):
        t.push(**bad)
    assert snapshot(t) == before
    assert len(t.controller.inserts) == 7


def test_memory_of_a_million_step_cartpole_trajectory():
    t = Trajectory(CircularArraySARTSTraces(capacity=1_000_000, state=(np.float32, (4,))))
    eb = t.container
    arrays = [b._data for b in eb.traces._bufs] + [eb._meta.samp, eb._meta.steps, eb._meta.lens]
    total = sum(a.nbytes for a in arrays)
    assert eb.traces._bufs[0]._data.nbytes == (1_000_000 + 2) * 16  # states stored once
    assert total <= 60e6, total


# -- first pushes that fail, truncation --------------------------------------------------------


def test_a_failed_first_push_leaves_the_trajectory_as_it_was():
    t = Trajectory(CircularArraySARTSTraces(capacity=10))  # int64 scalar states
    cartpole_state = np.array([0.01, -0.2, 0.03, 0.4], dtype=np.float32)
    with pytest.raises(ValueError, match=r"declare the trace for it: "
                                         r"state=\(np\.float32, \(4,\)\)") as error:
        t.push(state=cartpole_state)  # one CartPole state, not 4 sub-envs' states
    assert "build the preset with env=" in str(error.value)
    assert type(t.container) is EpisodesBuffer and t.n_lanes is None
    assert len(t.container.step_numbers) == 0 and t.controller.n_inserted == 0
    assert "extend" not in vars(t)
    t.push(state=np.array([3, 4]))  # still decided by the first push that works: 2 lanes
    assert t.n_lanes == 2 and t.container.lane_lengths() == [0, 0]


def test_a_failed_single_env_first_push_still_waits_for_lanes():
    t = Trajectory(CircularArraySARTSTraces(capacity=10))
    with pytest.raises(ValueError, match="not a whole number"):
        t.push(state=1.5)
    assert type(t.container) is EpisodesBuffer and len(t.container.step_numbers) == 0
    t.push(state=1)
    assert "push" not in vars(t) and t.n_lanes is None


def test_truncated_in_extend_reaches_the_controller_and_is_not_stored():
    from trajectories import EpisodeSampleRatioController

    c = CountingController()
    t = Trajectory(CircularArraySARTSTraces(capacity=10), controller=c)
    t.extend(state=np.arange(4), action=[0, 1, 0], reward=[0.0, 0.0, 1.0],
             terminal=[False, False, False], truncated=[False, False, True])
    assert t.keys() == ("state", "next_state", "action", "reward", "terminal")
    assert c.inserts[0][0] == 3 and c.inserts[0][1]["truncated"] == [False, False, True]
    with pytest.raises(ValueError, match="truncated must hold one bool per step"):
        t.extend(new_episode=False, state=[4], action=[0], reward=[0.0], terminal=[False],
                 truncated=[True, False])
    assert len(t) == 3
    e = Trajectory(CircularArraySARTSTraces(capacity=10),
                   controller=EpisodeSampleRatioController())
    e.extend(state=np.arange(4), action=[0, 1, 0], reward=[0.0, 0.0, 1.0],
             terminal=[False, True, False], truncated=[False, False, True])
    assert e.controller.n_episodes == 2  # one terminated, one cut by a time limit


def test_truncated_in_a_laned_extend_and_push_counts_per_lane():
    from trajectories import EpisodeSampleRatioController

    t = Trajectory(CircularArraySARTSTraces(capacity=20),
                   controller=EpisodeSampleRatioController(), n_lanes=2)
    t.push(state=np.array([0, 10]))
    t.push(state=np.array([1, 11]), action=np.array([0, 0]), reward=np.zeros(2),
           terminal=np.array([False, False]), truncated=np.array([True, False]))
    assert t.controller.n_episodes == 1
    t.push(state=np.array([2, 12]), action=np.array([0, 0]), reward=np.zeros(2),
           terminal=np.array([False, True]), truncated=np.array([True, True]),
           episode_start=np.array([True, False]))  # lane 0 only restarts: no step to count
    assert t.controller.n_episodes == 2
    assert t.extend(1, new_episode=False, state=[13, 14], action=[0, 0], reward=[0.0, 0.0],
                    terminal=[False, False], truncated=[False, True]) == 2
    assert t.controller.n_episodes == 3 and "truncated" not in t.keys()


def _random_pushes(rng, n_lanes, steps):
    """A run of pushes with episode boundaries and truncations: ``(names -> values)`` dicts, one
    value per lane when ``n_lanes``; the ring of capacity 8 wraps many times over."""
    shape = () if n_lanes is None else (n_lanes,)
    pushes = [{"state": rng.integers(100, size=shape)}]
    started = np.ones(shape, dtype=bool)  # lanes whose episode has no step yet
    for _ in range(steps):
        step = {"state": rng.integers(100, size=shape), "action": rng.integers(3, size=shape),
                "reward": rng.random(size=shape), "terminal": rng.random(size=shape) < 0.1}
        if n_lanes is None:
            step = {k: v.item() if isinstance(v, np.ndarray) else v for k, v in step.items()}
            if rng.random() < 0.1:
                step["truncated"] = True
            pushes.append(step)
            if step["terminal"] or step.get("truncated"):
                pushes.append({"state": int(rng.integers(100))})
        else:
            starts = (rng.random(size=shape) < 0.3) & ~started  # a step between two starts
            if rng.random() < 0.3 and starts.any():
                step["episode_start"] = starts
                started = starts
            else:
                started = np.zeros(shape, dtype=bool)
            if rng.random() < 0.1:
                step["truncated"] = rng.random(size=shape) < 0.5
            pushes.append(step)
    return pushes


@pytest.mark.parametrize("n_lanes", [None, 3, "learned"])
def test_push_row_and_push_function_store_and_count_exactly_what_push_does(n_lanes):
    # push_row and push_function(keys) are push without packing the names: the same rows,
    # episodes, lanes and counts ("learned": the first push makes the 3 lanes)
    from trajectories import EpisodeSampleRatioController

    def make():
        return Trajectory(CircularArraySARTSTraces(capacity=8),
                          n_lanes=None if n_lanes == "learned" else n_lanes,
                          controller=EpisodeSampleRatioController())

    by_push, by_row, by_function = make(), make(), make()
    functions = {}  # one push function per set of names, made once and kept
    lanes = 3 if n_lanes == "learned" else n_lanes
    for values in _random_pushes(np.random.default_rng(0), lanes, 300):
        by_push.push(**values)
        by_row.push_row(dict(values))
        keys = tuple(values)
        if keys not in functions:
            functions[keys] = by_function.push_function(keys)
        functions[keys](dict(values))
        for other in (by_row, by_function):
            for name in ("state", "next_state", "action", "reward", "terminal"):
                np.testing.assert_array_equal(other[name], by_push[name])
            np.testing.assert_array_equal(other.container.sampleable_inds,
                                          by_push.container.sampleable_inds)
            np.testing.assert_array_equal(other.container.step_numbers,
                                          by_push.container.step_numbers)
            assert other.controller.n_episodes == by_push.controller.n_episodes
    assert by_push.controller.n_episodes > 10 and by_push.n_lanes == lanes
    assert len(by_row) == len(by_function) == len(by_push) > 0


def test_push_row_leaves_the_dict_it_was_given_unchanged():
    t = Trajectory(CircularArraySARTSTraces(capacity=8))
    t.push_row({"state": 0})
    step = {"state": 1, "action": 0, "reward": 1.0, "terminal": False, "truncated": True}
    t.push_row(step)
    assert step == {"state": 1, "action": 0, "reward": 1.0, "terminal": False,
                    "truncated": True}
    assert t["next_state"].tolist() == [1]
