"""Per-episode hooks on envs that tell games (``info["game_over"]``, ``info["game_return"]``):
lives are the env's episodes and rewards are clipped, but the hooks report whole games with
their unclipped scores, on single and vector envs (both autoreset modes), as the Atari training
envs need.

``ScriptedGame`` plays games of 3 lives; a life lasts ``2 + lane + life % 2`` steps; step t of
the game scores ``10 * (lane + 1) + t`` (the reward the agent sees is its sign, 1.0); a life lost
ends the env's episode (terminated) and the reset after it goes on with the same game (and scores
5 more points, as the frames a reset plays may), a game over resets the game.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import stagerl as rl
from stagerl.envs.atari import GameScores

LIVES = 3


class ScriptedGame(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(0, 1000, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, lane: int = 0):
        self.lane = lane
        self.over, self.score, self.life, self.t, self.in_life = True, 0.0, 0, 0, 0
        self.life_scores: list[float] = []  # the scores of every step, game by game

    def info(self):
        return {"game_return": self.score, "game_over": False}

    def reset(self, *, seed=None, options=None):
        if self.over:  # a new game
            self.over, self.score, self.life, self.t = False, 0.0, 0, 0
        else:  # the same game after a lost life: the reset's frames score 5
            self.score += 5.0
        self.in_life = 0
        return np.array([self.t], np.float32), self.info()

    def step(self, action):
        self.t += 1
        self.in_life += 1
        gain = 10.0 * (self.lane + 1) + self.t
        self.score += gain
        lost = self.in_life >= 2 + self.lane + self.life % 2
        if lost:
            self.life += 1
        self.over = lost and self.life >= LIVES
        info = {"game_return": self.score, "game_over": self.over}
        return np.array([self.t], np.float32), float(np.sign(gain)), lost, False, info


def game(lane: int) -> tuple[float, int]:
    """The score and length of every game of a lane."""
    score, t = 0.0, 0
    for life in range(LIVES):
        if life:
            score += 5.0
        for _ in range(2 + lane + life % 2):
            t += 1
            score += 10.0 * (lane + 1) + t
    return score, t


class Zeros(rl.Policy):
    pass


@rl.plan.dispatch
def _plan_zeros(policy: Zeros, env):
    return np.zeros(env.num_envs, np.int64) if isinstance(env, rl.VectorEnv) else 0


def hooks():
    return (rl.TotalRewardPerEpisode(), rl.StepsPerEpisode(), rl.RewardsPerEpisode(),
            GameScores())


def test_a_single_env_reports_games_not_lives():
    totals, steps, rewards, scores = hooks()
    score, length = game(0)
    # 3 games of 3 lives: 9 loop episodes
    rl.run(Zeros(), rl.GymEnv(ScriptedGame(0)), rl.StopAfterNEpisodes(9, progress=False),
           totals + steps + rewards + scores)
    assert totals.rewards == [score] * 3 == scores.scores
    assert steps.steps == [length] * 3
    assert [sum(r) for r in rewards.rewards] == [score] * 3
    assert rewards.rewards[0][:3] == [11.0, 12.0, 13.0 + 5.0]  # the reset's 5 with a step


def test_a_single_env_cut_by_the_stop_reports_the_game_so_far():
    totals, steps, _, _ = hooks()
    rl.run(Zeros(), rl.GymEnv(ScriptedGame(0)), rl.StopAfterNSteps(4, progress=False),
           totals + steps)
    # the first life ends after 2 steps, the stop comes 2 steps into the second
    assert totals.rewards == [11.0 + 12.0 + 5.0 + 13.0 + 14.0] and steps.steps == [4]


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_each_sub_env_reports_its_games(mode):
    env = rl.GymVectorEnv(SyncVectorEnv([lambda i=i: ScriptedGame(i) for i in range(3)],
                                        autoreset_mode=mode), seed=0)
    totals, steps, rewards, scores = hooks()
    logger_rows = []

    class Rows(rl.EpisodeHook):
        def on_episode(self, episode, policy, env):
            logger_rows.append((episode.lane, episode.total_reward, episode.length,
                                episode.terminated))

    rl.run(Zeros(), env, rl.StopAfterNSteps(3 * 61, progress=False),
           totals + steps + rewards + scores + Rows())
    finished = [(lane, total, length) for lane, total, length, done in logger_rows if done]
    assert len(finished) >= 6
    for lane, total, length in finished:
        assert (total, length) == game(lane)
    # what GameScores collects is what the per-episode hooks report, game for game
    assert [(lane, total) for lane, total, _ in finished] == list(zip(scores.lanes,
                                                                      scores.scores,
                                                                      strict=True))
    # the last rows are the games the stop cut (not terminated)
    cut = [row for row in logger_rows if not row[3]]
    assert len(cut) == 3 and all(0 < length < game(lane)[1] for lane, _, length, _ in cut)
    assert [sum(r) for r in rewards.rewards] == [row[1] for row in logger_rows]


def test_a_checkpointed_tracker_goes_on_with_the_same_game(tmp_path):
    from stagerl.checkpoints import load, save

    env = rl.GymEnv(ScriptedGame(0))
    totals = rl.TotalRewardPerEpisode()
    rl.run(Zeros(), env, rl.StopAfterNEpisodes(1, progress=False), totals)  # one life
    copy = load(save(totals, tmp_path / "hook"))
    assert copy.tracker.game_mode and copy.tracker.game_goes_on
    assert copy.tracker.running_reward == totals.tracker.running_reward == 23.0
    assert copy.tracker.last_score == 23.0


@pytest.mark.parametrize("vector", [False, True])
def test_the_csv_logger_writes_one_row_per_game(tmp_path, vector):
    import csv

    from stagerl.logging import CSVLogger

    if vector:
        env = rl.GymVectorEnv(SyncVectorEnv([lambda i=i: ScriptedGame(i) for i in range(2)]),
                              seed=0)
        stop = rl.StopAfterNSteps(2 * 40, progress=False)
    else:
        env, stop = rl.GymEnv(ScriptedGame(1)), rl.StopAfterNEpisodes(6, progress=False)
    rl.run(Zeros(), env, stop, CSVLogger(tmp_path))
    with open(tmp_path / "episodes.csv") as f:
        rows = [row for row in csv.DictReader(f) if row["terminated"] == "1"]
    assert len(rows) >= 2
    for row in rows:
        lane = int(row["sub_env"]) if vector else 1
        assert (float(row["return"]), int(row["length"])) == game(lane)
