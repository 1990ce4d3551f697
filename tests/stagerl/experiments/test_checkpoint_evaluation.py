"""evaluate_checkpoint: a finished run's last checkpoint evaluates to its summary's returns;
the paths it takes; the first episode as a GIF and an MP4; bad input refused before anything
is loaded or written."""

from __future__ import annotations

import importlib.util
import json
import sys

import gymnasium
import numpy as np
import pytest
from PIL import Image

import stagerl as rl
from stagerl.checkpoints import save
from stagerl.experiments import checkpoint_evaluation, train
from stagerl.experiments.checkpoint_evaluation import evaluate_checkpoint
from stagerl.experiments.registry import (
    EVAL_SEED_OFFSET,
    NamedExperiment,
    configure,
    get_experiment,
)
from stagerl.experiments.runner import make_eval_env
from stagerl.experiments.zoo import tabular_q_random_walk

needs_pygame = pytest.mark.skipif(importlib.util.find_spec("pygame") is None,
                                  reason="rendering CartPole needs pygame (stagerl[video])")
needs_ffmpeg = pytest.mark.skipif(importlib.util.find_spec("imageio_ffmpeg") is None,
                                  reason="writing .mp4 needs imageio-ffmpeg (stagerl[video])")


@pytest.fixture(scope="module")
def dqn_run(tmp_path_factory):
    """A finished 3,000-step DQN CartPole run with checkpoints at 1,000, 2,000 and 3,000."""
    logdir = tmp_path_factory.mktemp("dqn") / "run"
    summary = train("dqn-cartpole", steps=3000, seed=0, device="cpu", logdir=logdir,
                    progress=False, tensorboard=False, checkpoint_every=1000)
    return logdir, summary


@pytest.fixture(scope="module")
def walk_run(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("walk") / "run"
    train("tabular-q-random-walk", steps=1000, seed=4, device="cpu", logdir=logdir,
          progress=False, tensorboard=False)
    return logdir


def test_a_finished_runs_last_checkpoint_reproduces_its_summarys_evaluation(dqn_run):
    logdir, summary = dqn_run
    result = evaluate_checkpoint(logdir)
    assert result["checkpoint"] == str(logdir / "checkpoints" / "step-000003000")
    assert result["experiment"] == "dqn-cartpole" and result["env_steps"] == 3000
    assert result["seed"] == EVAL_SEED_OFFSET and result["episodes"] == 20
    assert result["video"] is None and len(result["returns"]) == 20
    assert result["return_mean"] == summary["eval_return_mean"]
    assert result["return_std"] == summary["eval_return_std"]
    assert len(set(result["returns"])) > 1  # episodes that differ: the seed sequence matters
    assert json.loads((logdir / "summary.json").read_text())["eval_return_mean"] == \
        result["return_mean"]


def test_a_log_directory_its_checkpoints_and_one_checkpoint_name_what_is_evaluated(dqn_run):
    logdir, _ = dqn_run
    last = evaluate_checkpoint(logdir, episodes=3)
    assert evaluate_checkpoint(logdir / "checkpoints", episodes=3) == last
    assert evaluate_checkpoint(logdir / "checkpoints" / "step-000003000", episodes=3) == last
    earlier = evaluate_checkpoint(logdir / "checkpoints" / "step-000001000", episodes=3)
    assert earlier["env_steps"] == 1000
    assert earlier["checkpoint"] == str(logdir / "checkpoints" / "step-000001000")


def test_a_given_seed_evaluates_on_the_evaluation_env_of_that_seed(dqn_run):
    logdir, _ = dqn_run
    result = evaluate_checkpoint(logdir, episodes=4, seed=7)
    agent = rl.load(logdir)
    config = configure("dqn-cartpole", steps=3000)
    env = make_eval_env(get_experiment("dqn-cartpole"), config, 7)
    assert result["seed"] == 7
    assert result["returns"] == rl.evaluate(agent, env, 4)
    assert result["returns"] != evaluate_checkpoint(logdir, episodes=4)["returns"]


@needs_pygame
def test_a_gif_shows_every_frame_of_the_first_episode_at_the_envs_frame_rate(dqn_run, tmp_path):
    logdir, _ = dqn_run
    path = tmp_path / "first.gif"
    result = evaluate_checkpoint(logdir, episodes=3, video=path)
    assert result["video"] == str(path)
    assert result["returns"] == evaluate_checkpoint(logdir, episodes=3)["returns"]
    length = int(result["returns"][0])  # CartPole pays 1 per step
    with Image.open(path) as gif:
        assert gif.size == (600, 400)
        durations = []
        for i in range(gif.n_frames):
            gif.seek(i)
            durations.append(gif.info["duration"])
    # the frame after the reset and one per step, 20 ms each (CartPole renders at 50 fps);
    # Pillow shows a frame identical to the one before as a longer showing of that one
    assert sum(durations) == (length + 1) * 20
    assert len(durations) <= length + 1 and set(durations) <= {20 * k for k in range(1, 9)}


@needs_pygame
@needs_ffmpeg
def test_an_mp4_holds_every_frame_of_the_first_episode(dqn_run, tmp_path):
    import imageio_ffmpeg

    logdir, _ = dqn_run
    path = tmp_path / "first.mp4"
    result = evaluate_checkpoint(logdir, episodes=2, video=path)
    frames, seconds = imageio_ffmpeg.count_frames_and_secs(str(path))
    assert frames == int(result["returns"][0]) + 1
    assert seconds == pytest.approx(frames / 50, abs=0.05)


class PaintedWalk(gymnasium.Env):
    """A random walk on 7 cells that renders a 4 x 15 frame with its position painted white."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, render_mode=None):
        self.render_mode = render_mode
        self.observation_space = gymnasium.spaces.Discrete(7)
        self.action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = 3
        return self.position, {}

    def step(self, action):
        self.position += 1 if action == 1 else -1
        reward = float(self.position == 6) - float(self.position == 0)
        return self.position, reward, self.position in (0, 6), False, {}

    def render(self):
        frame = np.zeros((4, 15, 3), dtype=np.uint8)
        frame[:, 2 * self.position] = 255
        return frame


@pytest.fixture
def painted_walk_experiment(monkeypatch):
    """tabular-q-random-walk evaluated on PaintedWalk (renders without pygame)."""
    experiment = NamedExperiment(
        tabular_q_random_walk.Config, tabular_q_random_walk.make_env,
        tabular_q_random_walk.make_agent,
        lambda config, seed: rl.GymEnv(PaintedWalk(render_mode="rgb_array"), seed=seed),
        eval_max_episode_steps=100)
    monkeypatch.setattr(checkpoint_evaluation, "load_experiment", lambda name: experiment)


def test_a_gif_of_an_env_that_renders_without_pygame_holds_its_frames(
        walk_run, painted_walk_experiment, tmp_path):
    path = tmp_path / "walk.GIF"
    result = evaluate_checkpoint(walk_run, episodes=2, video=path)
    assert result["returns"] == [1.0, 1.0]
    with Image.open(path) as gif:
        assert gif.size == (15, 4) and gif.n_frames == 4  # reset and three steps right
        painted = []
        for i in range(gif.n_frames):
            gif.seek(i)
            assert gif.info["duration"] == 100
            painted.append(int(np.flatnonzero(np.asarray(gif.convert("L"))[0])[0]))
    assert painted == [6, 8, 10, 12]


@needs_ffmpeg
def test_an_mp4_of_frames_with_odd_sides_is_written(walk_run, painted_walk_experiment, tmp_path):
    import imageio_ffmpeg

    path = tmp_path / "walk.mp4"
    evaluate_checkpoint(walk_run, episodes=1, video=path)
    assert imageio_ffmpeg.count_frames_and_secs(str(path)) == (4, 0.4)


# ---- bad input ------------------------------------------------------------------------------


def test_episodes_must_be_a_positive_int(walk_run):
    with pytest.raises(ValueError, match="episodes must be at least 1, got episodes=0"):
        evaluate_checkpoint(walk_run, episodes=0)
    with pytest.raises(TypeError, match="episodes must be an int, got '3'"):
        evaluate_checkpoint(walk_run, episodes="3")


def test_a_seed_must_be_a_non_negative_int_and_a_device_one_torch_knows(walk_run):
    with pytest.raises(ValueError, match="seed must be non-negative, got seed=-1"):
        evaluate_checkpoint(walk_run, seed=-1)
    with pytest.raises(TypeError, match=r"seed must be an int or None .*got 1.5"):
        evaluate_checkpoint(walk_run, seed=1.5)
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or 'auto'"):
        evaluate_checkpoint(walk_run, device="tpu")


def test_a_path_without_checkpoints_is_refused_with_how_runs_write_them(tmp_path):
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "empty", tmp_path / "missing"):
        with pytest.raises(ValueError, match=f"no checkpoint to evaluate at {path} .*"
                                             "`stagerl run NAME --logdir DIR` writes"):
            evaluate_checkpoint(path)


def test_a_checkpoint_saved_by_hand_is_refused_with_what_to_do_instead(tmp_path):
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(
        rl.CircularArraySARTSTraces(capacity=8)))
    path = save(agent, tmp_path / "agent", info={"note": "by hand"})
    with pytest.raises(ValueError, match="is not a checkpoint of a stagerl run .*stagerl.load "
                                         r"and call rl.evaluate\(policy, env, episodes\)"):
        evaluate_checkpoint(path)


def test_a_video_path_is_checked_before_anything_is_written(walk_run, tmp_path):
    with pytest.raises(ValueError, match=r"must end in .gif or .mp4 \(got the suffix '.avi'\)"):
        evaluate_checkpoint(walk_run, video=tmp_path / "run.avi")
    with pytest.raises(ValueError, match="its directory .*nowhere' does not exist; create it"):
        evaluate_checkpoint(walk_run, video=tmp_path / "nowhere" / "run.gif")
    (tmp_path / "taken.gif").mkdir()
    with pytest.raises(ValueError, match="is a directory; name a file in it"):
        evaluate_checkpoint(walk_run, video=tmp_path / "taken.gif")
    with pytest.raises(TypeError, match="video must be a file path ending in .gif or .mp4"):
        evaluate_checkpoint(walk_run, video=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.gif"]


def test_a_video_of_an_env_that_cannot_render_frames_is_refused(walk_run, tmp_path):
    with pytest.raises(ValueError, match=r"evaluation env RandomWalk1D\(.*\) of "
                                         "tabular-q-random-walk cannot render rgb_array frames; "
                                         "a video needs an env that renders rgb_array"):
        evaluate_checkpoint(walk_run, video=tmp_path / "walk.gif")
    assert not (tmp_path / "walk.gif").exists()


def test_an_mp4_without_imageio_ffmpeg_names_the_extra(walk_run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'stagerl\[video\]' \(or write a .gif"):
        evaluate_checkpoint(walk_run, video=tmp_path / "walk.mp4")
    assert not (tmp_path / "walk.mp4").exists()
