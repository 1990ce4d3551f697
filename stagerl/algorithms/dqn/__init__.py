"""The DQN family: DQN and its extensions (target network, double, dueling, n-step,
prioritized replay, C51) as one Policy subtype, and Rainbow as their combination.

* :mod:`~stagerl.algorithms.dqn.config`: ``DQNConfig``, the hyper-parameters, and the env check;
* :mod:`~stagerl.algorithms.dqn.policy`: ``DQNPolicy`` and how it acts (ε-greedy, through its
  ``EpsilonGreedyExplorer``), and the weights it sends to Ray rollout workers;
* :mod:`~stagerl.algorithms.dqn.update`: how it learns (the TD target, the loss, the step);
* :mod:`~stagerl.algorithms.dqn.networks` and :mod:`~stagerl.algorithms.dqn.replay`: the
  Q-network and the replay trajectory;
* :mod:`~stagerl.algorithms.dqn.agent`: ``make_dqn_agent``, which builds all of it;
* :mod:`~stagerl.algorithms.dqn.recurrent`: a recurrent DQN (DRQN with R2D2's stored-state
  replay and burn-in), ``make_drqn_agent``.
"""

from stagerl.algorithms.dqn.agent import make_dqn_agent, make_q_network, state_spec
from stagerl.algorithms.dqn.config import DQNConfig
from stagerl.algorithms.dqn.policy import DQNPolicy
from stagerl.algorithms.dqn.recurrent import (
    DRQNConfig,
    DRQNNetwork,
    DRQNPolicy,
    drqn_update,
    make_drqn_agent,
)
from stagerl.algorithms.dqn.update import (
    clip_grad_norm,
    dqn_update,
    learn_burst,
    project_distribution,
    td_target,
)

__all__ = ["DQNConfig", "DQNPolicy", "make_dqn_agent", "dqn_update", "td_target",
           "project_distribution", "learn_burst", "clip_grad_norm", "make_q_network",
           "state_spec", "DRQNConfig", "DRQNNetwork", "DRQNPolicy", "drqn_update",
           "make_drqn_agent"]
