"""A new on-policy algorithm as a loss and a postprocessor: RLlib's policy-gradient example.

    python examples/custom_on_policy.py [steps]

REINFORCE on CartPole-v1 with 8 sub-envs: the postprocessor turns rewards into discounted
returns, the loss is -mean(log pi(a|s) * return); everything else (acting, recording the
log-probabilities and values, rollouts of n_steps per sub-env, the update step) comes with
stagerl's OnPolicy. See docs/algorithms/on_policy.md.
"""

from __future__ import annotations

import sys

import numpy as np
import torch

import stagerl as rl
from stagerl.algorithms.on_policy import (
    ActorCritic,
    OnPolicy,
    make_vector_env,
    rollout_trajectory,
)


class PolicyGradient(OnPolicy):
    """REINFORCE: RLlib's policy-gradient example, a loss and a postprocessor."""

    def postprocess(self, rollout):
        # the discounted return from each step to its chain's end (episode or rollout)
        rollout["advantage"] = rl.discount_rewards(rollout["reward"], self.gamma,
                                                   terminal=rollout["chain_end"])
        return rollout

    def loss(self, batch):
        log_prob, _ = self.model.log_prob_entropy(batch["state"], batch["action"])
        return -(log_prob * batch["advantage"]).mean()


def main(steps: int = 40_000, seed: int = 0) -> list[float]:
    torch.set_num_threads(1)  # small networks: one thread is fastest
    env = make_vector_env("CartPole-v1", num_envs=8, seed=seed)
    torch.manual_seed(seed)
    model = ActorCritic(4, env.single_action_space)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    agent = rl.Agent(PolicyGradient(model, optimiser, gamma=0.99, rng=seed),
                     rollout_trajectory(env, n_steps=128))
    hook = rl.TotalRewardPerEpisode()
    rl.run(agent, env, rl.StopAfterNSteps(steps), hook)
    returns = rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=seed + 1), episodes=10)
    print(f"{len(hook.rewards)} training episodes, last 20 returns "
          f"{np.mean(hook.rewards[-20:]):.1f}; evaluation {np.mean(returns):.1f}")
    return returns


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40_000)
