"""The learning floor of a DQN that masks its next actions by legality (a game's learner):
``limits_floors``' DQN floor plus the one operation the mask adds to each TD target, done the
cheapest correct way a hand-written loop could: the next state's illegal actions (kept as such,
in memory, beside the batch) set to ``-inf`` before the greedy pick (``argmax``), whose value
is then read from the unmasked output. A next state without a legal action bootstraps nothing:
its rows carry a zero bootstrap factor in the data (as a terminal row), so the pick of such a
row, whatever it is, is multiplied by 0.

The random data has the run's shapes: ``gradient_steps`` batches of ``batch_size`` rows a
burst, the network's observation size and one mask column per action.
"""

from __future__ import annotations

import copy
import math

import torch
from limits_floors import gradient_step, learn_floor, optimiser_steps
from torch.nn import functional as F

from stagerl.algorithms.dqn import DQNPolicy
from stagerl.algorithms.torch_state import denormals_flushed

CPU = torch.device("cpu")


def masked_targets(next_out: torch.Tensor, online_next: torch.Tensor | None,
                   illegal: torch.Tensor, reward: torch.Tensor,
                   bootstrap: torch.Tensor) -> torch.Tensor:
    """``reward + bootstrap * next_out[best legal action]``; the best by ``online_next`` where
    given (double DQN), else by ``next_out``. ``bootstrap`` is 0 where no action is legal."""
    choice = next_out if online_next is None else online_next
    pick = choice.masked_fill(illegal, -math.inf).argmax(1, keepdim=True)
    return reward + bootstrap * next_out.gather(1, pick).squeeze(1)


def random_masks(rows: int, n_actions: int, generator: torch.Generator | None = None):
    """``rows`` random illegal-action masks: each action legal with probability 1/2, about 1 row
    in 100 with none legal (a finished game)."""
    legal = torch.rand(rows, n_actions, generator=generator) < 0.5
    legal[torch.rand(rows, generator=generator) < 0.01] = False
    return ~legal


def masked_dqn_floor(policy: DQNPolicy, state_dim: int, acts: int, seed: int):
    """The gradient steps of ``policy``'s run (a masked DQN) on random data with masks; a
    distributional or prioritized DQN's floor is ``limits_floors``' (unmasked) one."""
    c = policy.config
    if not policy.masked or policy.network.distributional or c.prioritized:
        return learn_floor(policy, state_dim, acts, seed)
    torch.manual_seed(seed)
    net = copy.deepcopy(policy.network)
    target = copy.deepcopy(policy.target) if policy.target is not None else net
    steps = optimiser_steps(policy.q.optimiser)
    per_burst = c.train_freq if c.gradient_steps == -1 else c.gradient_steps
    bursts, size = steps // per_burst, c.batch_size
    rows = per_burst * size
    params = list(net.parameters())
    optimiser = torch.optim.Adam(params, lr=c.learning_rate, eps=c.adam_eps, fused=True)
    state, next_state = torch.randn(rows, state_dim), torch.randn(rows, state_dim)
    action = torch.randint(net.n_actions, (rows, 1))
    reward, illegal = torch.randn(rows), random_masks(rows, net.n_actions)
    bootstrap = (c.gamma ** c.n_step) * ((torch.rand(rows) > 0.01) & ~illegal.all(1)).float()
    syncs = min(bursts, steps and policy.env_steps // c.target_update_interval)
    huber = c.loss == "huber"

    def go() -> None:
        with denormals_flushed(CPU):
            for burst in range(bursts):
                if burst < syncs:
                    torch._foreach_copy_(list(target.parameters()), params)
                with torch.no_grad():  # the target is fixed inside a burst: one pass
                    next_out = torch.cat([target(part) for part in next_state.split(1024)])
                    fixed = None if c.double else masked_targets(next_out, None, illegal,
                                                                 reward, bootstrap)
                for i in range(per_burst):
                    rows_i = slice(i * size, (i + 1) * size)
                    if fixed is None:
                        with torch.no_grad():
                            goal = masked_targets(next_out[rows_i],
                                                  net(next_state[rows_i]), illegal[rows_i],
                                                  reward[rows_i], bootstrap[rows_i])
                    else:
                        goal = fixed[rows_i]
                    q = net(state[rows_i]).gather(1, action[rows_i]).squeeze(1)
                    loss = (F.smooth_l1_loss(q, goal, reduction="none") if huber
                            else (q - goal) ** 2).mean()
                    gradient_step(params, loss, optimiser, c.max_grad_norm)
    go.optimiser = optimiser  # for the tests: its step count is the run's
    go.work = {"gradient_steps": bursts * per_burst, "batch": size,  # type: ignore[attr-defined]
               "masks": tuple(illegal.shape)}
    return go
