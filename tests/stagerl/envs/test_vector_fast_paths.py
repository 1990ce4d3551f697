"""GymVectorEnv's SyncVectorEnv path (stepped without gymnasium's deepcopy) against the general
path (any other vector env: copied, converted), on the same sub-envs, seeds and actions: exact
same fields every act, and the same trajectory contents through an Agent."""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorWrapper

import stagerl as rl
from stagerl.envs.vector import GymVectorEnv

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]


def sync_env(mode, n=4):
    # A short time limit: episodes end by truncation as well as by termination.
    make = [lambda: gymnasium.make("CartPole-v1", max_episode_steps=9)] * n
    return SyncVectorEnv(make, autoreset_mode=mode)


class Plain(VectorWrapper):
    """A wrapper that changes nothing: GymVectorEnv takes its general path for it."""


def fields(env):
    return (env.state.tolist(), env.final_state.tolist(), env.reward.tolist(),
            env.is_terminated.tolist(), env.is_truncated.tolist(), env.episode_start.tolist(),
            env.stepped.tolist(), env.any_episode_start, env.any_episode_end)


@pytest.mark.parametrize("mode", MODES)
def test_the_sync_path_gives_the_fields_of_the_general_path(mode):
    fast = GymVectorEnv(sync_env(mode), seed=3)
    general = GymVectorEnv(Plain(sync_env(mode)), seed=3)
    assert fast._copies_obs and not general._copies_obs
    fast.reset()
    general.reset()
    actions = np.random.default_rng(0).integers(2, size=(60, 4))
    ends = np.zeros(2, dtype=int)
    for action in actions:
        fast.act(action)
        general.act(action)
        assert fields(fast) == fields(general)
        assert type(fast.reward) is np.ndarray and fast.reward.dtype == np.float64
        ends += fast.is_terminated.sum(), fast.is_truncated.sum()
    assert ends.min() > 0  # both kinds of episode end were seen


def test_sync_states_are_fresh_arrays_and_the_copy_setting_stays():
    inner = sync_env(AutoresetMode.NEXT_STEP)
    env = GymVectorEnv(inner, seed=0)
    env.reset()
    env.act(np.zeros(4, dtype=np.int64))
    first, kept = env.state, env.state.copy()
    env.act(np.ones(4, dtype=np.int64))
    assert inner.copy is True
    assert not np.shares_memory(env.state, inner._observations)
    assert not np.shares_memory(first, env.state)
    assert first.tolist() == kept.tolist()  # the next step did not touch it
    with pytest.raises(AssertionError, match="invalid"):
        env.act(np.full(4, 7))  # CartPole refuses the action inside the step
    assert inner.copy is True  # set back also when the step raises
    copies_off = sync_env(AutoresetMode.NEXT_STEP)
    copies_off.copy = False
    env = GymVectorEnv(copies_off, seed=0)
    env.reset()
    env.act(np.zeros(4, dtype=np.int64))
    assert copies_off.copy is False and not np.shares_memory(env.state,
                                                            copies_off._observations)


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_stores_the_same_rows_from_either_path(mode):
    def stored(env):
        traces = rl.CircularArraySARTSTraces(  # 6 rows a lane: the rings wrap many times
            capacity=24, state=(np.float32, (4,)), action=(np.int64, ()),
            extra={"truncated": (np.bool_, ())})
        agent = rl.Agent(rl.RandomPolicy(rng=5), rl.Trajectory(traces))
        rl.run(agent, env, rl.StopAfterNSteps(4 * 57, progress=False))
        c = agent.trajectory.container
        return ({name: c[name].tolist() for name in c.keys()}, c.sampleable_inds.tolist(),
                c.episodes_lengths.tolist(), c.step_numbers.tolist(), c.lane_lengths(),
                agent.trajectory.controller.n_inserted)

    fast = stored(GymVectorEnv(sync_env(mode), seed=1))
    assert fast == stored(GymVectorEnv(Plain(sync_env(mode)), seed=1))
    assert fast[-1] > 24  # wrapped


def expected_fields(mode, before, obs, reward, terminated, truncated, info):
    """What every field must be after a step, from gymnasium's own results: ``before`` is the
    lanes that ended at the act before (NEXT_STEP: reset-only now)."""
    done = terminated | truncated
    start = before if mode == AutoresetMode.NEXT_STEP else done
    final = obs.copy()
    if mode == AutoresetMode.SAME_STEP:
        for lane in np.flatnonzero(done):
            final[lane] = info["final_obs"][lane]
    stepped = ~start if mode == AutoresetMode.NEXT_STEP else np.ones_like(done)
    return (obs.tolist(), final.tolist(), reward.tolist(), terminated.tolist(),
            truncated.tolist(), start.tolist(), stepped.tolist(), bool(start.any()),
            bool(done.any()))


@pytest.mark.parametrize("wrapped", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_every_field_is_what_gymnasiums_own_step_says(mode, wrapped):
    """The counts and the masks made only when read (no lane started or ended an episode)
    against the flags gymnasium returns, on either path; the lane masks are new arrays at
    every act, as before."""
    ours = GymVectorEnv(Plain(sync_env(mode)) if wrapped else sync_env(mode), seed=4)
    raw = sync_env(mode)
    ours.reset()
    raw.reset(seed=4)
    assert ours.episode_start.tolist() == [True] * 4 and ours.any_episode_start
    before = np.zeros(4, dtype=bool)  # no lane ended before the first act
    seen_masks = []
    for step, action in enumerate(np.random.default_rng(1).integers(2, size=(80, 4))):
        ours.act(action)
        obs, reward, terminated, truncated, info = raw.step(action)
        expected = expected_fields(mode, before, obs, reward, terminated, truncated, info)
        if step % 2:  # the fields read in another order: the masks made on first read
            assert ours.stepped.tolist() == expected[6]
        assert fields(ours) == expected
        assert ours.episode_start is ours.episode_start  # made once per act
        seen_masks.append(ours.episode_start)
        before = terminated | truncated
    pairs = zip(seen_masks[:-1], seen_masks[1:], strict=True)
    assert not any(np.shares_memory(a, b) for a, b in pairs)
    starts = [m.any() for m in seen_masks]
    assert any(starts) and not all(starts)


def test_a_copy_made_by_an_earlier_version_goes_on_as_the_original():
    """An env pickled when no lane had ended kept an all-False mask of ended lanes; loaded,
    it reads as no lane ending (the next act starts no episode)."""
    import pickle

    env = GymVectorEnv(sync_env(AutoresetMode.NEXT_STEP), seed=0)
    env.reset()
    env.act(np.zeros(4, dtype=np.int64))
    assert env._done is None
    state = env.__getstate__()
    state["_done"] = np.zeros(4, dtype=bool)  # as earlier versions saved it
    copy = GymVectorEnv.__new__(GymVectorEnv)
    copy.__setstate__(pickle.loads(pickle.dumps(state)))
    original = pickle.loads(pickle.dumps(env))
    for action in np.random.default_rng(2).integers(2, size=(30, 4)):
        copy.act(action)
        original.act(action)
        assert fields(copy) == fields(original)
