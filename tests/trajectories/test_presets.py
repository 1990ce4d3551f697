import numpy as np
import pytest

from trajectories.presets import (
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    CircularArraySLARTTraces,
    ElasticArraySARTSATraces,
    ElasticArraySARTSTraces,
)


def test_sarts_layout_and_capacities():
    t = CircularArraySARTSTraces(capacity=3, state=(np.float32, (2,)))
    assert t.keys() == ("state", "next_state", "action", "reward", "terminal")
    assert t.slots == (("state", "next_state"), ("action",), ("reward",), ("terminal",))
    assert t.capacity == 3
    assert [b.capacity for b in t._bufs] == [4, 3, 3, 3]
    assert [b.dtype for b in t._bufs] == [np.float32, np.int64, np.float32, np.bool_]
    assert t._bufs[0].frame_shape == (2,)
    assert isinstance(t, CircularArraySARTSTraces)


def test_sarts_rows_after_wrap():
    t = CircularArraySARTSTraces(capacity=3)
    t.push(state=0)
    for s in range(1, 6):
        t.push(state=s, action=10 + s, reward=float(s), terminal=s == 5)
    assert len(t) == 3
    assert t["state"].tolist() == [2, 3, 4]
    assert t["next_state"].tolist() == [3, 4, 5]
    assert t["action"].tolist() == [13, 14, 15]
    assert t["reward"].tolist() == [3.0, 4.0, 5.0]
    assert t["terminal"].tolist() == [False, False, True]


def test_sartsa_and_slart_layouts():
    t = CircularArraySARTSATraces(capacity=5)
    assert t.slots == (("state", "next_state"), ("action", "next_action"), ("reward",),
                       ("terminal",))
    # capacity complete rows plus the one waiting for its next action
    assert [b.capacity for b in t._bufs] == [7, 6, 6, 6] and t.capacity == 5
    s = CircularArraySLARTTraces(capacity=2, legal_actions_mask=(np.bool_, (3,)))
    assert s.keys() == ("state", "next_state", "legal_actions_mask", "next_legal_actions_mask",
                        "action", "next_action", "reward", "terminal")
    assert [b.capacity for b in s._bufs] == [4, 4, 3, 3, 3] and s.capacity == 2
    assert s._bufs[1].frame_shape == (3,)


def test_elastic_layouts_are_unbounded():
    t = ElasticArraySARTSTraces(state=(np.float32, (4,)))
    assert t.capacity == float("inf") and t.keys()[0] == "state"
    t.push(state=np.zeros(4))
    for i in range(1000):
        t.push(state=np.full(4, i), action=i, reward=1.0, terminal=False)
    assert len(t) == 1000 and t["action"][-1] == 999
    assert ElasticArraySARTSATraces().keys() == ("state", "next_state", "action",
                                                 "next_action", "reward", "terminal")


@pytest.mark.parametrize("kwargs, err", [
    (dict(capacity=0), ValueError),
    (dict(capacity=-1), ValueError),
    (dict(capacity="10"), TypeError),
    (dict(capacity=3, state=np.float32), TypeError),
    (dict(capacity=3, state=("not a dtype", ())), TypeError),
])
def test_bad_preset_arguments(kwargs, err):
    with pytest.raises(err):
        CircularArraySARTSTraces(**kwargs)


def test_empty_copy_keeps_preset_type():
    t = CircularArraySARTSTraces(capacity=3, state=(np.float32, (4,)))
    c = t.empty_copy(capacity=7)
    assert isinstance(c, CircularArraySARTSTraces)
    assert c.capacity == 7 and [b.capacity for b in c._bufs] == [8, 7, 7, 7]


# -- frames from an env's spaces ---------------------------------------------------------------


class FakeEnv:
    """An env seen by its spaces only (as stagerl's envs show them: state_space)."""

    def __init__(self, state_space, action_space, vector=False):
        if vector:
            self.single_state_space, self.single_action_space = state_space, action_space
            self.state_space = self.action_space = "batched spaces: never read"
        else:
            self.state_space, self.action_space = state_space, action_space


def frames(t):
    return {name: (b.dtype, b.frame_shape) for (name, *_), b in zip(t.slots, t._bufs,
                                                                      strict=True)}


def test_env_gives_the_state_and_action_frames():
    gymnasium = pytest.importorskip("gymnasium")
    cartpole = gymnasium.make("CartPole-v1")
    t = CircularArraySARTSTraces(capacity=10, env=cartpole)
    assert frames(t) == {"state": (np.float32, (4,)), "action": (np.int64, ()),
                         "reward": (np.float32, ()), "terminal": (np.bool_, ())}
    vector = gymnasium.make_vec("CartPole-v1", num_envs=3)
    assert frames(CircularArraySARTSATraces(capacity=10, env=vector)) == frames(
        CircularArraySARTSATraces(capacity=10, env=cartpole))
    pendulum = gymnasium.make("Pendulum-v1")
    assert frames(ElasticArraySARTSTraces(env=pendulum))["action"] == (np.float32, (1,))
    spaces = gymnasium.spaces
    env = FakeEnv(spaces.MultiDiscrete([3, 4]), spaces.MultiBinary(5))
    assert frames(ElasticArraySARTSATraces(env=env))["state"] == (np.int64, (2,))
    assert frames(ElasticArraySARTSATraces(env=env))["action"] == (np.int8, (5,))
    walk = FakeEnv(spaces.Discrete(7), spaces.Discrete(2), vector=True)
    assert frames(CircularArraySARTSTraces(capacity=4, env=walk))["state"] == (np.int64, ())
    slart = CircularArraySLARTTraces(capacity=4, env=walk)
    assert frames(slart)["legal_actions_mask"] == (np.bool_, (2,))
    image = FakeEnv(spaces.Box(0, 255, (4, 84, 84), np.uint8), spaces.Discrete(6))
    assert frames(CircularArraySARTSTraces(capacity=4, env=image))["state"] == (np.uint8,
                                                                                (4, 84, 84))


def test_an_explicit_spec_wins_over_env():
    gymnasium = pytest.importorskip("gymnasium")
    t = CircularArraySARTSTraces(capacity=10, env=gymnasium.make("CartPole-v1"),
                                 state=(np.float64, (4,)), action=(np.int32, ()))
    assert frames(t)["state"] == (np.float64, (4,)) and frames(t)["action"] == (np.int32, ())


def test_env_without_known_spaces_is_refused_with_the_fix():
    gymnasium = pytest.importorskip("gymnasium")
    spaces = gymnasium.spaces
    with pytest.raises(TypeError, match="only Discrete, Box, MultiDiscrete, MultiBinary, Dict "
                                        "and Tuple"):
        CircularArraySARTSTraces(capacity=4, env=FakeEnv(
            spaces.Dict({"a": spaces.Text(5)}), spaces.Discrete(2)))
    with pytest.raises(TypeError, match="env= needs an env with a state"):
        CircularArraySARTSTraces(capacity=4, env=object())


def test_a_mismatching_push_names_the_spec_to_declare():
    gymnasium = pytest.importorskip("gymnasium")
    from trajectories import Trajectory

    t = Trajectory(CircularArraySARTSTraces(capacity=10))  # the default int64 frames
    cartpole = gymnasium.make("CartPole-v1")
    state, _ = cartpole.reset(seed=0)
    with pytest.raises(ValueError) as error:
        t.push(state=state)
    message = str(error.value)
    assert "trace 'state' takes frames of shape () (int64)" in message
    assert "state=(np.float32, (4,))" in message and "env=" in message
    assert "convert it to int64 first" not in message
    good = Trajectory(CircularArraySARTSTraces(capacity=10, env=cartpole))
    good.push(state=state)
    pendulum = gymnasium.make("Pendulum-v1")
    p = Trajectory(CircularArraySARTSTraces(capacity=10, state=(np.float32, (3,))))
    p.push(state=pendulum.reset(seed=0)[0])
    with pytest.raises(ValueError, match=r"action=\(np\.float32, \(1,\)\)"):
        p.push(state=pendulum.reset(seed=1)[0], action=pendulum.action_space.sample(),
               reward=0.0, terminal=False)


# -- extra traces -------------------------------------------------------------------------------
PRESETS = [
    lambda **kw: CircularArraySARTSTraces(capacity=2, **kw),
    lambda **kw: CircularArraySARTSATraces(capacity=2, **kw),
    lambda **kw: CircularArraySLARTTraces(capacity=2, legal_actions_mask=(np.bool_, (2,)), **kw),
    lambda **kw: ElasticArraySARTSTraces(**kw),
    lambda **kw: ElasticArraySARTSATraces(**kw),
]


@pytest.mark.parametrize("make", PRESETS)
def test_extra_traces_are_sized_as_the_plain_traces_and_stay_aligned_when_rings_wrap(make):
    from trajectories import EpisodesBuffer

    t = make(extra={"log_prob": (np.float32, ()), "hidden": (np.float32, (3,))})
    assert t.keys()[-2:] == ("log_prob", "hidden") and t.slots[-1] == ("hidden",)
    plain = [b.capacity for slot, b in zip(t.slots, t._bufs, strict=True) if len(slot) == 1]
    assert len(set(plain)) == 1  # the added traces hold as many frames as reward, terminal
    eb = EpisodesBuffer(t)
    mask = {"legal_actions_mask": [True, False]} if "legal_actions_mask" in t.keys() else {}
    eb.push(state=0, **mask)
    for s in range(1, 8):
        eb.push(state=s, action=s, reward=float(s), terminal=False, log_prob=-float(s),
                hidden=[s, s, s], **mask)
    rows = [eb[int(i)] for i in eb.sampleable_indices()]
    assert rows and all(r["reward"] == -r["log_prob"] == r["hidden"][0] == r["next_state"]
                        for r in rows)


def test_extra_traces_are_checked():
    with pytest.raises(TypeError, match="extra must be a dict"):
        CircularArraySARTSTraces(4, extra=[("log_prob", (np.float32, ()))])
    with pytest.raises(TypeError, match="identifiers"):
        CircularArraySARTSTraces(4, extra={"log prob": (np.float32, ())})
    with pytest.raises(TypeError, match=r"log_prob must be a \(dtype, shape\) pair"):
        CircularArraySARTSTraces(4, extra={"log_prob": np.float32})
    with pytest.raises(ValueError, match="unique"):
        CircularArraySARTSTraces(4, extra={"reward": (np.float32, ())})


def test_added_traces_too_small_for_the_layout_are_refused_before_they_misalign():
    from trajectories import CircularArrayBuffer, Traces

    ok = CircularArraySARTSTraces(4) + Traces(log_prob=CircularArrayBuffer(4, (), np.float32))
    assert ok.keys()[-1] == "log_prob"
    # SARTSA's plain traces hold capacity + 1 frames (the row awaiting its next action)
    with pytest.raises(ValueError, match=r"'log_prob' holds 4 frames .* at least 5 frames"):
        CircularArraySARTSATraces(4) + Traces(log_prob=CircularArrayBuffer(4, (), np.float32))
    with pytest.raises(ValueError, match="an unbounded buffer"):
        ElasticArraySARTSTraces() + Traces(log_prob=CircularArrayBuffer(4, (), np.float32))
