import numpy as np
import pytest

from trajectories import (
    BatchSampler,
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    CircularArraySLARTTraces,
    ElasticArraySARTSATraces,
    ElasticArraySARTSTraces,
    EpisodesBuffer,
    EpisodesSampler,
    Traces,
)


def meta(eb):
    return (eb.sampleable_inds.astype(int).tolist(), eb.step_numbers.tolist(),
            eb.episodes_lengths.tolist())


def step(eb, s, a=0, r=0.0, t=False):
    eb.push(state=s, action=a, reward=r, terminal=t)


def test_worked_sarts_example_of_the_design():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=20))
    eb.push(state=0)
    assert meta(eb) == ([0], [1], [0])
    for s in range(1, 6):
        step(eb, s, t=s == 5)
    eb.push(state=6)
    for s in range(7, 11):
        step(eb, s)
    assert meta(eb) == ([1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0],
                        [1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5],
                        [5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4])
    assert len(eb) == 10 and eb.n_sampleable == 9
    assert eb.sampleable_indices().tolist() == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    # the boundary row is padding: state 5 -> state 6 with zero action/reward/terminal
    assert eb.traces[5] == {"state": 5, "next_state": 6, "action": 0, "reward": 0.0,
                            "terminal": False}
    with pytest.raises(IndexError):
        eb[5]
    assert eb[6]["state"] == 6 and eb[-1]["next_state"] == 10
    idx = np.arange(10)
    assert eb.is_sampleable_at(idx).tolist() == [bool(x) for x in meta(eb)[0][:10]]
    assert eb.step_number_at(idx).tolist() == meta(eb)[1][:10]
    assert eb.episode_length_at(idx).tolist() == meta(eb)[2][:10]


def test_lengths_grow_over_the_current_episode_only():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=20))
    eb.push(state=0)
    step(eb, 1)
    eb.push(state=2)
    assert meta(eb)[2] == [1, 1, 0]
    step(eb, 3)
    assert meta(eb)[2] == [1, 1, 1, 1]
    step(eb, 4)
    assert meta(eb)[2] == [1, 1, 2, 2, 2]


def test_first_push_must_be_partial_in_a_multiplexed_layout():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=4))
    with pytest.raises(ValueError, match="partial"):
        step(eb, 1)
    assert len(eb.traces["state"]) == 0 and meta(eb) == ([], [], [])


def test_partial_after_partial_raises_and_changes_nothing():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=4))
    eb.push(state=0)
    with pytest.raises(ValueError, match="partial push right after a partial push"):
        eb.push(state=1)
    assert meta(eb) == ([0], [1], [0]) and np.asarray(eb.traces._bufs[0]).tolist() == [0]


def test_missing_and_unknown_keys():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=4))
    eb.push(state=0)
    with pytest.raises((KeyError, ValueError), match="terminal"):
        eb.push(state=1, action=0, reward=0.0)
    with pytest.raises((KeyError, ValueError), match="'foo'"):
        eb.push(state=1, action=0, reward=0.0, terminal=False, foo=1)
    with pytest.raises(ValueError, match="both"):
        eb.push(state=1, next_state=1, action=0, reward=0.0, terminal=False)
    assert meta(eb) == ([0], [1], [0])


def test_ring_wrap_overwrites_old_episodes_and_metadata_in_step():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=4))
    eb.push(state=0)
    for s in (1, 2, 3):
        step(eb, s, t=s == 3)
    eb.push(state=10)
    for s in (11, 12):
        step(eb, s)
    # 7 states pushed, 5 kept: 2 3 | 10 11 12
    assert eb.traces["state"].tolist() == [2, 3, 10, 11]
    assert eb.traces["next_state"].tolist() == [3, 10, 11, 12]
    assert meta(eb) == ([1, 0, 1, 1, 0], [3, 4, 1, 2, 3], [3, 3, 2, 2, 2])
    assert eb.n_sampleable == 3
    for s in range(13, 20):  # the current episode fills the whole ring
        step(eb, s)
    assert eb.traces["state"].tolist() == [15, 16, 17, 18]
    assert meta(eb) == ([1, 1, 1, 1, 0], [6, 7, 8, 9, 10], [9] * 5)
    eb.push(state=100)
    assert meta(eb) == ([1, 1, 1, 0, 0], [7, 8, 9, 10, 1], [9, 9, 9, 9, 0])
    assert eb.n_sampleable == 3


def sartsa(cap=20, elastic=False):
    return EpisodesBuffer(ElasticArraySARTSATraces() if elastic else
                          CircularArraySARTSATraces(capacity=cap))


@pytest.mark.parametrize("elastic", [False, True])
def test_sartsa_rows_become_sampleable_once_next_action_is_known(elastic):
    eb = sartsa(elastic=elastic)
    eb.push(state=0)
    step(eb, 1, a=10)
    assert meta(eb)[0] == [0, 0]
    step(eb, 2, a=11)
    assert meta(eb)[0] == [1, 0, 0]
    step(eb, 3, a=12, t=True)
    assert meta(eb)[0] == [1, 1, 0, 0]
    eb.push(next_action=13)  # rule 4: completes row 2, no entry, no episode
    assert meta(eb) == ([1, 1, 1, 0], [1, 2, 3, 4], [3, 3, 3, 3])
    assert eb[2] == {"state": 2, "next_state": 3, "action": 12, "next_action": 13,
                     "reward": 0.0, "terminal": True}
    eb.push(state=20)
    step(eb, 21, a=30)
    step(eb, 22, a=31)
    assert meta(eb) == ([1, 1, 1, 0, 1, 0, 0], [1, 2, 3, 4, 1, 2, 3],
                        [3, 3, 3, 3, 2, 2, 2])
    # boundary row: last state 3 -> first state 20, action 13 (the completion), reward padded
    assert eb.traces[3] == {"state": 3, "next_state": 20, "action": 13, "next_action": 30,
                            "reward": 0.0, "terminal": False}
    assert eb.traces["action"].tolist() == [10, 11, 12, 13, 30]
    assert eb.traces["next_action"].tolist() == [11, 12, 13, 30, 31]


@pytest.mark.parametrize("setup, push, match", [
    ([], dict(next_action=1), "empty"),
    ([dict(state=0)], dict(next_action=1), "no step"),
    ([dict(state=0), dict(state=1, action=0, reward=0.0, terminal=True), dict(next_action=1)],
     dict(next_action=2), "twice"),
    ([dict(state=0), dict(state=1, action=0, reward=0.0, terminal=True)],
     dict(state=5), "not complete"),
    ([dict(state=0), dict(state=1, action=0, reward=0.0, terminal=True), dict(next_action=1)],
     dict(state=2, action=0, reward=0.0, terminal=False), "complete"),
])
def test_sartsa_next_action_misuse_raises_and_changes_nothing(setup, push, match):
    eb = sartsa()
    for row in setup:
        eb.push(**row)
    before = (meta(eb), {k: eb.traces[k].tolist() for k in eb.keys()},
              [np.asarray(b).tolist() for b in eb.traces._bufs])
    with pytest.raises(ValueError, match=match):
        eb.push(**push)
    after = (meta(eb), {k: eb.traces[k].tolist() for k in eb.keys()},
             [np.asarray(b).tolist() for b in eb.traces._bufs])
    assert before == after


def test_sartsa_ring_wrap_keeps_states_and_actions_aligned():
    eb = sartsa(cap=3)
    for ep in range(3):
        eb.push(state=100 * ep)
        for k in (1, 2):
            step(eb, 100 * ep + k, a=100 * ep + k - 1, t=k == 2)
        eb.push(next_action=100 * ep + 2)
    tr = eb.traces
    assert tr["state"].tolist() == [102, 200, 201]
    assert tr["next_state"].tolist() == [200, 201, 202]
    assert tr["action"].tolist() == [102, 200, 201]
    assert tr["next_action"].tolist() == [200, 201, 202]
    assert meta(eb) == ([0, 1, 1, 0], [3, 1, 2, 3], [2, 2, 2, 2])


def test_slart_partial_push_carries_state_and_mask():
    eb = EpisodesBuffer(CircularArraySLARTTraces(capacity=5, legal_actions_mask=(np.bool_, (2,))))
    eb.push(state=0, legal_actions_mask=[True, False])
    eb.push(state=1, legal_actions_mask=[True, True], action=0, reward=1.0, terminal=False)
    eb.push(state=2, legal_actions_mask=[False, True], action=1, reward=1.0, terminal=True)
    eb.push(next_action=1)
    assert meta(eb)[0] == [1, 1, 0]
    assert eb[0]["next_legal_actions_mask"].tolist() == [True, True]
    eb.push(state=5, legal_actions_mask=[True, True])
    assert meta(eb)[1] == [1, 2, 3, 1]


def test_pop_and_popleft_keep_metadata_in_step():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=10))
    eb.push(state=0)
    for s in (1, 2):
        step(eb, s)
    eb.push(state=3)
    step(eb, 4)
    row = eb.pop()
    assert row["next_state"] == 4
    assert meta(eb) == ([1, 1, 0, 0], [1, 2, 3, 1], [2, 2, 2, 0])
    eb.pop()  # removes the new episode's first state and its padding row
    assert meta(eb) == ([1, 1, 0], [1, 2, 3], [2, 2, 2]) and len(eb) == 2
    step(eb, 5)  # the previous episode continues
    assert meta(eb) == ([1, 1, 1, 0], [1, 2, 3, 4], [3, 3, 3, 3])
    assert eb.popleft()["state"] == 0
    assert meta(eb) == ([1, 1, 0], [2, 3, 4], [3, 3, 3]) and eb.n_sampleable == 2
    eb.clear()
    assert len(eb) == 0 and meta(eb) == ([], [], []) and eb.n_sampleable == 0
    with pytest.raises(IndexError):
        eb.pop()
    with pytest.raises(IndexError):
        eb.popleft()
    eb.push(state=7)
    assert meta(eb) == ([0], [1], [0])


def test_sartsa_pop_undoes_completion_with_the_next_first_state():
    eb = sartsa()
    eb.push(state=0)
    step(eb, 1, a=10)
    step(eb, 2, a=11, t=True)
    eb.push(next_action=12)
    eb.push(state=5)
    eb.pop()
    assert meta(eb)[0] == [1, 0, 0]
    with pytest.raises(ValueError, match="not complete"):
        eb.push(state=5)
    eb.push(next_action=13)
    assert meta(eb)[0] == [1, 1, 0] and eb[1]["next_action"] == 13


def test_bare_traces_without_multiplex():
    eb = EpisodesBuffer(Traces(a=[], b=[]))
    eb.push(a=1, b=2)
    eb.push(a=3, b=4)
    assert meta(eb)[:2] == ([1, 0], [1, 2])
    eb.push(a=5)  # partial: pads b
    assert eb.traces["b"].tolist() == [2, 4, 0]
    assert meta(eb)[:2] == ([1, 0, 0], [1, 2, 1])


def test_construction_errors():
    with pytest.raises(TypeError):
        EpisodesBuffer([1, 2])
    t = CircularArraySARTSTraces(capacity=3)
    t.push(state=0)
    t.push(state=1, action=0, reward=0.0, terminal=False)
    with pytest.raises(ValueError, match="empty"):
        EpisodesBuffer(t)
    with pytest.raises(TypeError):
        EpisodesBuffer(EpisodesBuffer(CircularArraySARTSTraces(capacity=3)))


def test_iteration_yields_sampleable_rows_in_order():
    eb = EpisodesBuffer(ElasticArraySARTSTraces())
    eb.push(state=0)
    step(eb, 1)
    eb.push(state=2)
    step(eb, 3)
    assert [(r["state"], r["next_state"]) for r in eb] == [(0, 1), (2, 3)]


def test_set_priority_needs_prioritized_traces():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=3))
    with pytest.raises(TypeError, match="prioritized"):
        eb.set_priority([0], [1.0])


def test_extend_matches_single_pushes_sarts():
    def pushes(eb):
        eb.push(state=0)
        for s in range(1, 4):
            step(eb, s, a=s, r=float(s), t=s == 3)
        eb.push(state=10)
        for s in range(11, 13):
            step(eb, s, a=s, r=float(s))
        step(eb, 13, a=13, r=13.0)

    def extends(eb):
        n = eb.extend(state=[0, 1, 2, 3], action=[1, 2, 3], reward=[1.0, 2.0, 3.0],
                      terminal=[False, False, True])
        assert n == 3
        eb.extend(state=[10, 11, 12], action=[11, 12], reward=[11.0, 12.0],
                  terminal=[False, False])
        eb.extend(new_episode=False, state=[13], action=[13], reward=[13.0], terminal=[False])

    for cap in (3, 5, 100):
        a = EpisodesBuffer(CircularArraySARTSTraces(capacity=cap))
        b = EpisodesBuffer(CircularArraySARTSTraces(capacity=cap))
        pushes(a)
        extends(b)
        assert meta(a) == meta(b) and a.n_sampleable == b.n_sampleable
        for k in a.keys():
            assert a.traces[k].tolist() == b.traces[k].tolist()


def test_extend_validates_everything_first():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=5))
    eb.extend(state=[0, 1], action=[0], reward=[0.0], terminal=[False])
    before = (meta(eb), {k: eb.traces[k].tolist() for k in eb.keys()})
    bad = [
        dict(state=[5, 6], action=[0, 1], reward=[0.0], terminal=[False]),        # counts
        dict(state=[5, 6], action=[0.5], reward=[0.0], terminal=[False]),         # cast
        dict(state=[5, 6], action=[0], reward=[0.0]),                             # missing
        dict(state=[5, 6], action=[0], reward=["x"], terminal=[False]),           # cast
    ]
    for cols in bad:
        with pytest.raises((TypeError, ValueError)):
            eb.extend(**cols)
    with pytest.raises(ValueError):
        eb.extend(new_episode=False, state=[[1, 2]], action=[0], reward=[0.0], terminal=[0])
    assert before == (meta(eb), {k: eb.traces[k].tolist() for k in eb.keys()})


# -- pops and the SARTSA layout -----------------------------------------------------------------


def test_sartsa_popleft_then_steps_mark_only_rows_that_exist():
    eb = EpisodesBuffer(CircularArraySARTSATraces(capacity=3))
    eb.push(state=0)
    eb.push(state=1, action=1, reward=1.0, terminal=False)
    eb.popleft()
    eb.push(state=2, action=2, reward=2.0, terminal=False)
    # row 1 -> 2 waits for the action at state 2; the row of state 0 is gone
    assert eb.n_sampleable == 0 and eb.sampleable_inds.tolist() == [False, False]
    assert list(eb) == [] and len(eb) == 0
    assert [e["state"].tolist() for e in EpisodesSampler().sample(eb)] == [[]]
    eb.push(state=3, action=3, reward=3.0, terminal=False)
    assert eb.n_sampleable == 1 and eb.sampleable_inds.tolist() == [True, False, False]
    assert list(eb) == [{"state": 1, "next_state": 2, "action": 2, "next_action": 3,
                         "reward": 2.0, "terminal": False}]
    eb.push(next_action=4)
    assert eb.n_sampleable == 2 and [row["next_action"] for row in eb] == [3, 4]
    batch = BatchSampler(64, rng=0).sample(eb)
    pairs = zip(batch["state"].tolist(), batch["next_action"].tolist(), strict=True)
    assert set(pairs) == {(1, 3), (2, 4)}


def test_sartsa_popleft_then_completion_marks_nothing_that_is_gone():
    eb = EpisodesBuffer(CircularArraySARTSATraces(capacity=3))
    eb.push(state=0)
    eb.push(state=1, action=1, reward=1.0, terminal=True)
    eb.popleft()
    eb.push(next_action=5)  # the action at state 1; the row of state 0 was popped
    assert eb.n_sampleable == 0 and list(eb) == [] and eb.sampleable_inds.tolist() == [False]
    eb.push(state=10)
    eb.push(state=11, action=6, reward=1.0, terminal=False)
    eb.push(state=12, action=7, reward=1.0, terminal=False)
    assert [(r["state"], r["next_action"]) for r in eb] == [(10, 7)]


def test_sartsa_pop_returns_the_row_it_removes():
    eb = EpisodesBuffer(CircularArraySARTSATraces(capacity=10))
    eb.push(state=0)
    for s in (1, 2, 3):
        eb.push(state=s, action=10 + s - 1, reward=float(s), terminal=s == 3)
    # mid-episode: the row 2 -> 3 has no next action yet
    assert eb.pop() == {"state": 2, "next_state": 3, "action": 12, "reward": 3.0,
                        "terminal": True}
    assert [r["state"] for r in eb] == [0] and eb.sampleable_inds.tolist() == [1, 0, 0]
    eb.push(state=3, action=12, reward=3.0, terminal=True)
    eb.push(next_action=13)
    assert eb.pop() == {"state": 2, "next_state": 3, "action": 12, "next_action": 13,
                        "reward": 3.0, "terminal": True}
    # the action taken at state 2 now completes the episode there
    assert [(r["state"], r["next_action"]) for r in eb] == [(0, 11), (1, 12)]
    with pytest.raises(ValueError, match="twice"):
        eb.push(next_action=1)
    eb.push(state=20)
    assert eb.pop() == {"state": 2, "next_state": 20, "action": 12, "reward": 0.0,
                        "terminal": False}  # the boundary row: padding and the completion
    assert eb.popleft() == {"state": 0, "next_state": 1, "action": 10, "next_action": 11,
                            "reward": 1.0, "terminal": False}


def test_sarts_pop_and_popleft_return_their_rows():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=10))
    eb.push(state=0)
    assert eb.pop() == {} and len(eb.step_numbers) == 0
    eb.push(state=0)
    step(eb, 1, a=3, r=1.0)
    assert eb.popleft() == {"state": 0, "next_state": 1, "action": 3, "reward": 1.0,
                            "terminal": False}
    assert eb.popleft() == {} and len(eb.step_numbers) == 0


@pytest.mark.parametrize("capacity", [1, 2, 3])
def test_sartsa_capacity_holds_complete_rows_and_the_one_awaiting_its_action(capacity):
    eb = EpisodesBuffer(CircularArraySARTSATraces(capacity=capacity))
    eb.push(state=0)
    for s in range(1, 8):  # the action taken at state k is 100 + k
        eb.push(state=s, action=100 + s - 1, reward=float(s), terminal=s == 7)
        assert len(eb) == min(capacity, s - 1) == eb.n_sampleable
        if s >= 2:  # the newest complete row: its next action just arrived
            assert list(eb)[-1] == {"state": s - 2, "next_state": s - 1, "action": 100 + s - 2,
                                    "next_action": 100 + s - 1, "reward": float(s - 1),
                                    "terminal": False}
    eb.push(next_action=107)  # completes the last row; a full action ring drops the oldest
    assert len(eb) == capacity == eb.n_sampleable
    assert list(eb)[-1] == {"state": 6, "next_state": 7, "action": 106, "next_action": 107,
                            "reward": 7.0, "terminal": True}
    assert len(eb.step_numbers) == capacity + 1  # states 7 - capacity .. 7
    eb.push(state=20)  # a new episode: the boundary row waits for the first action there
    assert len(eb) == capacity == eb.n_sampleable
    eb.push(state=21, action=200, reward=1.0, terminal=False)
    assert len(eb) == capacity and eb.n_sampleable == capacity - 1  # the boundary is padding
    assert [r["state"] for r in eb] == list(range(8 - capacity, 7))
    assert eb.step_numbers.tolist()[-2:] == [1, 2]


def test_a_completion_that_fills_the_action_ring_drops_the_oldest_row_everywhere():
    eb = EpisodesBuffer(CircularArraySARTSATraces(capacity=1))
    eb.push(state=0)
    for s in (1, 2):
        eb.push(state=s, action=s, reward=float(s), terminal=s == 2)
    assert meta(eb) == ([1, 0, 0], [1, 2, 3], [2, 2, 2])
    eb.push(next_action=9)  # the action ring (2 frames) overflows: state 0's row goes
    assert meta(eb) == ([1, 0], [2, 3], [2, 2]) and eb.n_sampleable == 1
    assert eb.traces["state"].tolist() == [1] and eb.traces["next_action"].tolist() == [9]
    eb.push(state=5)
    assert meta(eb) == ([1, 0, 0], [2, 3, 1], [2, 2, 0]) and len(eb) == 1
    cols = {k: eb.traces[k].tolist() for k in eb.keys()}
    assert cols == {"state": [1, 2], "next_state": [2, 5], "action": [2], "next_action": [9],
                    "reward": [2.0, 0.0], "terminal": [True, False]}
    eb.push(state=6, action=7, reward=1.0, terminal=False)  # the states' ring overflows
    assert meta(eb) == ([0, 0, 0], [3, 1, 2], [2, 1, 1]) and list(eb) == []
    assert eb.traces[0] == {"state": 2, "next_state": 5, "action": 9, "next_action": 7,
                            "reward": 0.0, "terminal": False}


def test_a_full_step_is_allowed_in_every_phase_from_step_phases_from_on():
    from trajectories._episode_rules import FULL, STEP_PHASES_FROM, EpisodeRules

    for multiplexed in (False, True):
        for completion in (None, "next_action"):
            allowed = EpisodeRules(multiplexed, completion).allowed[FULL]
            assert all(allowed[STEP_PHASES_FROM:])  # EpisodesBuffer's one-comparison case
