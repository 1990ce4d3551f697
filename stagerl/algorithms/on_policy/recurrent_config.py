"""Recurrent PPO's hyper-parameters (:class:`RecurrentPPOConfig`); the algorithm is in
:mod:`stagerl.algorithms.on_policy.recurrent`."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.algorithms._checks import check_choice, check_ints, check_net_arch
from stagerl.algorithms.on_policy.ppo import PPOConfig
from stagerl.algorithms.on_policy.recurrent_networks import RNN_KINDS

__all__ = ["RecurrentPPOConfig"]


@dataclass
class RecurrentPPOConfig(PPOConfig):
    """Recurrent PPO's hyper-parameters: PPO's (:class:`~stagerl.algorithms.PPOConfig`;
    ``batch_size`` counts steps) and the network's and the sequences'.

    Attributes:
        net_arch: hidden sizes of an MLP before the RNN(s) (``()``: the observations go in).
        rnn: ``"lstm"`` or ``"gru"``.
        rnn_hidden_size: the RNNs' units.
        shared_rnn: one RNN for the actor and the critic (else one each).
        actor_net_arch: hidden sizes of the actor's MLP after its RNN.
        critic_net_arch: hidden sizes of the critic's MLP after its RNN.
        max_seq_len: the most steps of a training sequence (sequences are also cut at
            episode starts).
        normalize_rewards: scale the rewards by the running standard deviation of each
            sub-env's discounted return (clipped to [-10, 10]), as Stable-Baselines3's
            ``VecNormalize`` does.
        rnn_prev_action: feed the lane's previous action (one-hot for discrete actions; zeros
            at an episode's start) into the RNN with each observation, as RLlib's
            ``lstm_use_prev_action``: a policy that samples its actions cannot otherwise know
            which one it took. It is kept as one more row of the lane's state.

    Example:
        >>> RecurrentPPOConfig(rnn="transformer")
        Traceback (most recent call last):
        ...
        ValueError: RecurrentPPOConfig: rnn must be 'lstm' or 'gru', got rnn='transformer'
    """

    net_arch: tuple[int, ...] = ()
    rnn: str = "lstm"
    rnn_hidden_size: int = 64
    shared_rnn: bool = False
    actor_net_arch: tuple[int, ...] = ()
    critic_net_arch: tuple[int, ...] = (64,)
    max_seq_len: int = 32
    normalize_rewards: bool = False
    rnn_prev_action: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice(self, "rnn", RNN_KINDS)
        check_ints(self, "rnn_hidden_size", "max_seq_len")
        check_net_arch(self, "actor_net_arch")
        check_net_arch(self, "critic_net_arch")
