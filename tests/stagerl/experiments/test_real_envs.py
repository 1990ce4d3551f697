"""The Atari and MuJoCo experiments: short runs of each that learn (updates happen), are
checkpointed and resume; a missing extra is refused naming the ``pip install`` that brings it.

A few thousand env steps at most each, the final evaluation cut to one episode: what is checked
is that everything runs together on the real ROMs and bodies, not the scores (the learning runs
are in ``benchmarks/real_envs_learning.py``).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from stagerl.cli import main
from stagerl.experiments import runner, train

#: The module of the extra each experiment needs (its tests are skipped without it).
NEEDS = {"dqn-atari": "ale_py", "ppo-atari": "ale_py", "sac-halfcheetah": "mujoco",
         "td3-hopper": "mujoco", "ppo-hopper": "mujoco"}

SMOKE = {
    # 600 env steps, the last 200 learning (a gradient step every 4), a target copy every 100
    "dqn-atari": ({"learning_starts": 400, "buffer_size": 600, "target_update_interval": 100},
                  600),
    # 8 sub-envs x 16 steps a rollout: 4 updates
    "ppo-atari": ({"n_steps": 16, "batch_size": 64, "n_epochs": 2}, 8 * 16 * 4),
    "sac-halfcheetah": ({"learning_starts": 400, "buffer_size": 1_000, "batch_size": 64}, 600),
    "td3-hopper": ({"learning_starts": 400, "buffer_size": 1_000, "batch_size": 64}, 600),
    "ppo-hopper": ({"n_steps": 128}, 512),
}


@pytest.fixture
def one_evaluation_episode(monkeypatch):
    monkeypatch.setattr(runner, "EVAL_EPISODES", 1)


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_a_short_run_learns_checkpoints_and_resumes(name, tmp_path, one_evaluation_episode):
    pytest.importorskip(NEEDS[name], reason=f"{name} needs an extra")
    overrides, steps = SMOKE[name]
    half = steps // 2
    first = train(name, steps=half, seed=0, device="cpu", logdir=tmp_path, progress=False,
                  tensorboard=False, checkpoint_every=half, **overrides)
    assert first["env_steps"] == half
    summary = train(name, steps=steps, seed=0, device="cpu", logdir=tmp_path, progress=False,
                    resume=True, tensorboard=False)
    assert summary["env_steps"] == steps and summary["resumed_at_step"] == half
    assert np.isfinite(summary["eval_return_mean"])
    config = json.loads((tmp_path / "config.json").read_text())["config"]
    assert all(config[key] == value for key, value in overrides.items())
    updates = (tmp_path / "updates.csv").read_text().splitlines()
    assert len(updates) > 1  # losses were reported: the agent learned


def test_the_atari_experiments_store_frames_once_or_stacks_once():
    pytest.importorskip("ale_py", reason="the Atari experiments need ale-py")
    from stagerl.experiments import get_experiment
    from stagerl.experiments.registry import configure

    dqn = get_experiment("dqn-atari")
    config = configure("dqn-atari", buffer_size=100)
    env = dqn.make_env(config, 0)
    agent = dqn.make_agent(config, env, 0, "cpu")
    state = agent.trajectory.container.traces._where["state"][1]
    assert state.frame_shape == (84, 84) and state.dtype == np.uint8  # one frame per state
    assert type(agent.policy.network.body[0]).__name__ == "NatureCNN"
    ppo = get_experiment("ppo-atari")
    config = configure("ppo-atari", num_envs=2)
    env = ppo.make_env(config, 0)
    agent = ppo.make_agent(config, env, 0, "cpu")
    assert env.single_state_space.shape == (4, 84, 84)
    assert agent.policy.model.shares_extractor
    assert type(agent.policy.model.extractor).__name__ == "NatureCNN"


@pytest.mark.parametrize("name, module, install", [
    ("sac-halfcheetah", "mujoco", "pip install 'stagerl[mujoco]'"),
    ("ppo-hopper", "mujoco", "pip install 'stagerl[mujoco]'"),
    ("dqn-atari", "ale_py", "pip install 'stagerl[atari]'"),
    ("ppo-atari", "cv2", "pip install 'stagerl[atari]'"),
])
def test_a_missing_extra_is_one_line_naming_the_pip_install(name, module, install, tmp_path,
                                                             monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    status = main(["run", name, "--steps", "8", "--logdir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1 and install in err, err
    assert not (tmp_path / "run").exists()
