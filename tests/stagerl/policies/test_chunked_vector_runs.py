"""Chunked training on a vector env: one agent, many short runs, a SARTSA trajectory.

A run may stop right after a sub-env restarted (its lane holds a first state and nothing else);
the next run's first push starts that lane again, and the episode before it stays completed.
"""

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import stagerl as rl


def lane_rows(container):
    """Per lane, the sampleable rows in order: (state, next_state, action, next_action)."""
    out = []
    for lane in container._lanes:
        out.append([(r["state"].tolist(), r["next_state"].tolist(), int(r["action"]),
                     int(r["next_action"]), int(r["terminal"])) for r in lane])
    return out


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP],
                         ids=["next_step", "same_step"])
def test_many_short_runs_of_one_sartsa_agent_on_a_vector_env(mode):
    env = rl.GymVectorEnv("CartPole-v1", num_envs=4, seed=0,
                          vector_kwargs={"autoreset_mode": mode})
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(
        rl.CircularArraySARTSATraces(capacity=1000, state=(np.float32, (4,)))))
    stopped_after_a_restart = 0
    for steps in np.random.default_rng(0).integers(40, 160, size=40):  # 4 env-steps an act
        rl.run(agent, env, rl.StopAfterNSteps(int(steps), progress=False))
        container = agent.trajectory.container
        stopped_after_a_restart += int(container.open_lanes().any())
    assert stopped_after_a_restart > 0  # the case this test is about did happen
    container = agent.trajectory.container
    assert container.n_lanes == 4 and container.n_sampleable > 300
    chained = 0
    for rows in lane_rows(container):
        # consecutive rows of an episode chain: a row's next state and next action are the
        # next row's state and action
        for (_, s2, _, a2, _), (t, _, b, _, _) in zip(rows, rows[1:], strict=False):
            if s2 == t:
                assert a2 == b
                chained += 1
    assert chained > 250
