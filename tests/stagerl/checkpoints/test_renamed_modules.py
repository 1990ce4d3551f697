"""Checkpoints written before a module was renamed still load: the old module's name is read as
the new one, and saving writes only the new name."""

from __future__ import annotations

import json

import stagerl as rl
from stagerl.checkpoints import load, save
from stagerl.logging import Evaluate
from tests.stagerl.checkpoints.crafted import rewrite

OLD = "stagerl.logging.evaluation.Evaluate"
NEW = "stagerl.logging.periodic_evaluation.Evaluate"


def test_an_evaluate_hook_saved_under_its_old_module_name_loads_as_the_same_hook(tmp_path):
    hook = Evaluate(every_n_steps=7, episodes=2, env=rl.RandomWalk1D(), max_episode_steps=30)
    hook.steps, hook.returns = [7, 14], [[1.0, -1.0], [1.0, 1.0]]
    save(hook, tmp_path / "ckpt")
    text = (tmp_path / "ckpt" / "objects.json").read_text()
    assert NEW in text and OLD not in text  # saving writes the new name only

    rewrite(tmp_path / "ckpt", json.loads(text.replace(NEW, OLD)))
    assert OLD in (tmp_path / "ckpt" / "objects.json").read_text()

    loaded = load(tmp_path / "ckpt")
    assert type(loaded) is Evaluate
    assert (loaded.every_n_steps, loaded.episodes, loaded.max_episode_steps) == (7, 2, 30)
    assert loaded.steps == [7, 14] and loaded.returns == [[1.0, -1.0], [1.0, 1.0]]
