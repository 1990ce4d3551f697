"""``clear(keep_running_episodes=True)``: every row goes, a running episode keeps its newest state
as the first state of what comes next (a step continues from it, a new episode replaces it), in
every layout, in one buffer, in both laned storages and through a Trajectory."""

import numpy as np
import pytest

from trajectories import (
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    CircularArraySLARTTraces,
    CircularPrioritizedTraces,
    ElasticArraySARTSTraces,
    EpisodeSampleRatioController,
    EpisodesBuffer,
    NormalizedTraces,
    Trajectory,
    split_lanes,
)
from trajectories.lanes import PerLaneEpisodes, RingLanes

LAYOUTS = {
    "sarts": lambda: CircularArraySARTSTraces(capacity=6, state=(np.float32, (2,))),
    "sartsa": lambda: CircularArraySARTSATraces(capacity=6, state=(np.float32, (2,))),
    "slart": lambda: CircularArraySLARTTraces(capacity=6, state=(np.float32, (2,)),
                                              legal_actions_mask=(np.bool_, (2,))),
    "elastic": lambda: ElasticArraySARTSTraces(state=(np.float32, (2,))),
    "normalized": lambda: NormalizedTraces(
        CircularArraySARTSTraces(capacity=6, state=(np.float32, (2,)))),
    "prioritized": lambda: CircularPrioritizedTraces(
        CircularArraySARTSTraces(capacity=6, state=(np.float32, (2,)))),
}


def state_of(layout, t):
    row = {"state": np.array([t, -t], dtype=np.float32)}
    if layout == "slart":
        row["legal_actions_mask"] = np.array([True, t % 2 == 0])
    return row


def step_of(layout, t, terminal=False):
    return {**state_of(layout, t), "action": t % 3, "reward": float(t), "terminal": terminal}


def contents(eb):
    """Everything a reader sees: every column, the metadata, the sampleable rows (keys of
    prioritized traces aside: they go on counting, so that a stale key never names a new row)."""
    return ({k: eb[k].tolist() for k in eb.keys() if k != "key"}, eb.sampleable_inds.tolist(),
            eb.step_numbers.tolist(), eb.episodes_lengths.tolist(), len(eb), eb.n_sampleable)


def played(layout, pushes):
    eb = EpisodesBuffer(LAYOUTS[layout]())
    for row in pushes:
        eb.push(**row)
    return eb


def running(layout, steps=8):
    """A buffer whose episode has ``steps`` steps (the rings wrapped), still running."""
    return played(layout, [state_of(layout, 0)] + [step_of(layout, t) for t in range(1, steps)])


def completes(layout):
    return "next_action" in LAYOUTS[layout]().keys()


WITHOUT_COMPLETION = [layout for layout in LAYOUTS if not completes(layout)]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_step_after_the_clear_continues_from_the_kept_state(layout):
    eb = running(layout)
    eb.clear(keep_running_episodes=True)
    assert len(eb) == 0 and eb.n_sampleable == 0
    eb.push(**step_of(layout, 8))
    eb.push(**step_of(layout, 9))
    # exactly as a fresh buffer given the kept state as an episode's first state (SARTSA: the
    # state before it and the row awaiting the next action too)
    kept = [state_of(layout, 6), step_of(layout, 7)] if completes(layout) else \
        [state_of(layout, 7)]
    fresh = played(layout, [*kept, step_of(layout, 8), step_of(layout, 9)])
    assert contents(eb) == contents(fresh)
    assert eb["state"][0].tolist() == kept[0]["state"].tolist()


@pytest.mark.parametrize("layout", WITHOUT_COMPLETION)
def test_a_new_episode_after_the_clear_replaces_the_kept_state(layout):
    eb = running(layout)
    eb.clear(keep_running_episodes=True)
    eb.push(**state_of(layout, 20))
    eb.push(**step_of(layout, 21))
    assert contents(eb) == contents(played(layout, [state_of(layout, 20), step_of(layout, 21)]))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_clear_keeps_a_first_state_without_steps(layout):
    eb = played(layout, [state_of(layout, 0), step_of(layout, 1, terminal=True)]
                + ([{"next_action": 0}] if "next_action" in LAYOUTS[layout]().keys() else [])
                + [state_of(layout, 5)])
    eb.clear(keep_running_episodes=True)
    eb.push(**step_of(layout, 6))
    assert contents(eb) == contents(played(layout, [state_of(layout, 5), step_of(layout, 6)]))


def test_a_completed_episode_is_not_kept():
    eb = played("sartsa", [state_of("sartsa", 0), step_of("sartsa", 1), {"next_action": 2}])
    eb.clear(keep_running_episodes=True)
    assert eb["state"].tolist() == [] and np.asarray(eb.traces._bufs[0]).size == 0
    with pytest.raises(ValueError, match="a full step into an empty buffer"):
        eb.push(**step_of("sartsa", 2))


@pytest.mark.parametrize("layout", ["sartsa", "slart"])
def test_a_row_awaiting_its_next_action_is_kept_to_be_completed_after_the_clear(layout):
    eb = running(layout, steps=4)  # states 0..3; row 2 -> 3 awaits the action taken at 3
    eb.clear(keep_running_episodes=True)
    assert len(eb) == 0 and eb.step_numbers.tolist() == [1, 2]
    eb.push(**step_of(layout, 4))
    assert contents(eb) == contents(played(layout, [state_of(layout, 2), step_of(layout, 3),
                                                    step_of(layout, 4)]))
    assert eb[0]["state"].tolist() == [2.0, -2.0] and eb[0]["next_action"] == 4 % 3
    eb.clear(keep_running_episodes=True)
    eb.push(next_action=2)  # the completion of the kept row
    assert eb[0]["state"].tolist() == [3.0, -3.0] and eb[0]["next_action"] == 2
    eb.clear(keep_running_episodes=True)  # completed: nothing is kept
    assert np.asarray(eb.traces._bufs[0]).size == 0


@pytest.mark.parametrize("layout", ["sarts", "sartsa"])
def test_an_empty_buffer_and_plain_clear_stay_empty(layout):
    eb = EpisodesBuffer(LAYOUTS[layout]())
    eb.clear(keep_running_episodes=True)
    with pytest.raises(ValueError, match="empty buffer"):
        eb.push(**step_of(layout, 1))
    eb = running(layout)
    eb.clear()
    with pytest.raises(ValueError, match="empty buffer"):
        eb.push(**step_of(layout, 1))


@pytest.mark.parametrize("layout", ["sarts", "prioritized", "normalized"])
def test_a_kept_state_pops_and_survives_a_bad_push(layout):
    eb = running(layout)
    eb.clear(keep_running_episodes=True)
    with pytest.raises(ValueError):
        eb.push(state=np.array([1.5, 2.0, 3.0]))  # the wrong shape: nothing changes
    with pytest.raises(ValueError):
        eb.push(**{**step_of(layout, 8), "action": 0.5})
    eb.push(**step_of(layout, 8))
    assert contents(eb) == contents(played(layout, [state_of(layout, 7), step_of(layout, 8)]))
    eb.clear(keep_running_episodes=True)
    eb.pop()
    assert len(eb.step_numbers) == 0
    eb.push(**state_of(layout, 30))
    assert eb.step_numbers.tolist() == [1]


def test_statistics_and_keys_go_on_over_a_kept_clear():
    norm = running("normalized", steps=5)
    pushed = norm.traces.normalizers["state"].count
    norm.clear(keep_running_episodes=True)
    norm.push(**state_of("normalized", 9))  # replaces the kept state: one more observation
    assert norm.traces.normalizers["state"].count == pushed + 1
    prio = running("prioritized", steps=5)
    keys = prio["key"].tolist()
    prio.clear(keep_running_episodes=True)
    prio.push(**step_of("prioritized", 5))
    assert prio["key"].tolist() == [keys[-1] + 1]


# -- lanes --------------------------------------------------------------------------------------
def lane_pushes(t, n=3):
    """One value per lane: lane i's state is ``[t, i]``."""
    state = np.stack([np.array([t, i], dtype=np.int64) for i in range(n)])
    return state, {"action": np.full(n, t % 2), "reward": np.full(n, float(t)),
                   "terminal": np.zeros(n, dtype=bool)}


def laned_sarts(n=3):
    return CircularArraySARTSTraces(capacity=8 * n, state=(np.int64, (2,)))


@pytest.mark.parametrize("storage", [split_lanes, PerLaneEpisodes])
@pytest.mark.parametrize("uniform", [True, False])
def test_laned_storages_keep_each_lanes_newest_state(storage, uniform):
    lb = storage(laned_sarts(), 3)
    models = [EpisodesBuffer(CircularArraySARTSTraces(capacity=8, state=(np.int64, (2,))))
              for _ in range(3)]
    state, _ = lane_pushes(0)
    lb.push(state=state)
    for i, m in enumerate(models):
        m.push(state=state[i])
    for t in range(1, 12):  # every ring wraps; lane 2 only every other act unless uniform
        state, rest = lane_pushes(t)
        lanes = None if uniform or t % 2 else np.array([True, True, False])
        lb.push(state=state, **rest, lanes=lanes)
        for i, m in enumerate(models):
            if lanes is None or lanes[i]:
                m.push(state=state[i], **{k: v[i] for k, v in rest.items()})
    lb.clear(keep_running_episodes=True)
    for m in models:
        m.clear(keep_running_episodes=True)
    assert len(lb) == 0 and lb.open_lanes().tolist() == [True] * 3
    # then lane 1 starts a new episode (its kept state goes), the others step on
    for t in (20, 21):
        state, rest = lane_pushes(t)
        start = np.array([False, t == 20, False])
        lb.push(state=state, **rest, episode_start=start)
        for i, m in enumerate(models):
            m.push(state=state[i]) if start[i] else \
                m.push(state=state[i], **{k: v[i] for k, v in rest.items()})
    assert lb.lane_lengths() == [2, 1, 2]
    assert lb["state"].tolist() == np.concatenate([m["state"] for m in models]).tolist()
    assert lb["next_state"].tolist() == np.concatenate([m["next_state"] for m in models]).tolist()
    assert lb.sampleable_inds.tolist() == np.concatenate(
        [m.sampleable_inds[:len(m)] for m in models]).tolist()
    assert lb.step_numbers.tolist() == [1, 2, 1, 1, 2]
    assert lb["state"][:, 0].tolist() == [11, 20, 20, 11, 20]  # the kept states: t = 11


@pytest.mark.parametrize("storage", [split_lanes, PerLaneEpisodes])
def test_laned_kept_states_take_partial_pushes_bulk_inserts_and_pops(storage):
    lb = storage(laned_sarts(), 3)
    state, rest = lane_pushes(0)
    lb.push(state=state)
    lb.push(state=lane_pushes(1)[0], **rest)
    lb.clear(keep_running_episodes=True)
    lb.push(state=lane_pushes(5)[0], lanes=np.array([True, False, False]))  # replaces lane 0's
    assert lb.extend(1, new_episode=False, state=[[2, 1], [3, 1]], action=[0, 1],
                     reward=[0.0, 1.0], terminal=[False, True]) == 2
    assert lb.pop(2) == {}
    assert lb.lane_lengths() == [0, 2, 0] and lb.open_lanes().tolist() == [True, False, False]
    assert lb["state"].tolist() == [[1, 1], [2, 1]]
    lb.push(state=lane_pushes(6)[0], **rest, lanes=np.array([True, False, False]))
    assert lb["state"].tolist() == [[5, 0], [1, 1], [2, 1]]


def test_a_trajectory_clear_keeps_its_controllers_counts_and_lanes():
    t = Trajectory(laned_sarts(), controller=EpisodeSampleRatioController(), n_lanes=3)
    state, rest = lane_pushes(0)
    t.push(state=state)
    t.push(state=lane_pushes(1)[0], **{**rest, "terminal": np.array([True, False, False])})
    assert type(t.container) is RingLanes
    t.clear(keep_running_episodes=True)
    assert t.controller.n_episodes == 1 and len(t) == 0 and t.n_lanes == 3
    t.push(state=lane_pushes(2)[0], **rest, episode_start=np.array([True, False, False]))
    assert t["state"].tolist() == [[1, 1], [1, 2]] and t.controller.n_episodes == 1
    single = Trajectory(CircularArraySARTSTraces(capacity=4))
    single.push(state=0)
    single.push(state=1, action=0, reward=0.0, terminal=False)
    single.clear()
    with pytest.raises(ValueError, match="empty buffer"):
        single.push(state=2, action=0, reward=0.0, terminal=False)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize("storage", ["rings", "per_lane", "single"])
def test_a_copy_made_after_a_kept_clear_goes_on_as_the_original(storage, how):
    import copy
    import pickle

    copies = {"pickle": lambda x: pickle.loads(pickle.dumps(x)), "deepcopy": copy.deepcopy}
    if storage == "single":
        t = Trajectory(CircularArraySARTSTraces(capacity=8, state=(np.int64, (2,))))
        t.push(state=[0, 0])
        t.push(state=[1, 0], action=0, reward=0.0, terminal=False)
        t.clear(keep_running_episodes=True)
        pushes = [dict(state=[5, 0]), dict(state=[6, 0], action=1, reward=1.0, terminal=False)]
    else:
        traces = laned_sarts() if storage == "rings" else CircularArraySARTSATraces(
            capacity=24, state=(np.int64, (2,)))
        t = Trajectory(traces, n_lanes=3)
        state, rest = lane_pushes(0)
        t.push(state=state)
        t.push(state=lane_pushes(1)[0], **rest)
        t.clear(keep_running_episodes=True)
        pushes = [dict(state=lane_pushes(t_)[0], **rest,
                       episode_start=np.array([False, t_ == 2, False])) for t_ in (2, 3)]
        if storage == "per_lane":  # SARTSA: lane 1's kept row is completed before it restarts
            pushes.insert(0, dict(next_action=np.ones(3, dtype=np.int64),
                                  lanes=np.array([False, True, False])))
    twin = copies[how](t)
    for tr in (t, twin):
        for p in pushes:
            tr.push(**p)
    assert {k: twin[k].tolist() for k in t.keys()} == {k: t[k].tolist() for k in t.keys()}
    assert twin.container.sampleable_inds.tolist() == t.container.sampleable_inds.tolist()
    assert twin.controller.n_inserted == t.controller.n_inserted > 0
