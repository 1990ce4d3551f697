"""The recurrent DQN's hyper-parameters (:class:`DRQNConfig`); the algorithm is in
:mod:`stagerl.algorithms.dqn.recurrent`."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.algorithms._checks import (
    Settings,
    check_choice,
    check_ints,
    check_net_arch,
    check_numbers,
    settings_name,
)

__all__ = ["DRQNConfig"]


@dataclass
class DRQNConfig(Settings):
    """The recurrent DQN's hyper-parameters (steps are env steps).

    Attributes:
        learning_rate: Adam's step size.
        batch_size: windows (sequences) per gradient step.
        buffer_size: steps the replay ring holds (split over a vector env's sub-envs).
        learning_starts: env steps of uniformly random actions before learning starts.
        gamma: the discount.
        target_update_interval: env steps between target-network updates.
        tau: 1.0 copies the online network into the target; less blends (Polyak averaging).
        train_freq: env steps per ``gradient_steps`` gradient steps.
        gradient_steps: gradient steps per ``train_freq`` env steps.
        exploration_fraction: the share of ``total_steps`` over which ε falls linearly.
        exploration_initial_eps, exploration_final_eps: ε at the start and at the end.
        max_grad_norm: clip the gradient norm to this (``None`` or inf: never clip).
        net_arch: hidden sizes of an MLP (ReLU) before the RNN.
        rnn: ``"lstm"`` or ``"gru"``.
        rnn_hidden_size: the RNN's units.
        head_net_arch: hidden sizes of an MLP (ReLU) between the RNN and the action values.
        sequence_length: steps per replayed window, burn-in included.
        burn_in: steps at the start of a window that only warm the memory up (no loss).
        period: steps between the starts of a window and the next of the same episode
            (``None``: ``sequence_length - burn_in``).
        pad: zero-pad windows cut by an episode's end (else they are not replayed).
        double: the online network picks the next action, the target network rates it.
        loss: ``"huber"`` or ``"mse"``.
        total_steps: the run's length in env steps (``exploration_fraction`` is a fraction of
            it; named experiments set it to ``steps``).
        adam_eps: Adam's epsilon.

    Example:
        >>> DRQNConfig(sequence_length=8, burn_in=8)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: DRQNConfig: burn_in must be below sequence_length=8 ..., got burn_in=8; ...
    """

    learning_rate: float = 1e-3
    batch_size: int = 32
    buffer_size: int = 100_000
    learning_starts: int = 1_000
    gamma: float = 0.99
    target_update_interval: int = 500
    tau: float = 1.0
    train_freq: int = 4
    gradient_steps: int = 1
    exploration_fraction: float = 0.2
    exploration_initial_eps: float = 1.0
    exploration_final_eps: float = 0.05
    max_grad_norm: float | None = 10.0
    net_arch: tuple[int, ...] = (64,)
    rnn: str = "lstm"
    rnn_hidden_size: int = 64
    head_net_arch: tuple[int, ...] = ()
    sequence_length: int = 20
    burn_in: int = 4
    period: int | None = None
    pad: bool = True
    double: bool = True
    loss: str = "huber"
    total_steps: int | None = None
    adam_eps: float = 1e-8

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "batch_size", "buffer_size", "target_update_interval", "train_freq",
                   "gradient_steps", "rnn_hidden_size", "sequence_length", "period",
                   "total_steps")
        check_ints(self, "learning_starts", "burn_in", low=0)
        if self.burn_in >= self.sequence_length:
            raise ValueError(
                f"{settings_name(self)}: burn_in must be below sequence_length="
                f"{self.sequence_length} (a window needs a step to learn from after its "
                f"burn-in), got burn_in={self.burn_in}; lower burn_in or raise sequence_length")
        check_numbers(self, "learning_rate", "adam_eps", above=0)
        check_numbers(self, "gamma", "exploration_fraction", "exploration_initial_eps",
                      "exploration_final_eps", at_least=0, at_most=1)
        check_numbers(self, "tau", above=0, at_most=1)
        check_numbers(self, "max_grad_norm", above=0, inf="never clip")
        check_net_arch(self)
        check_net_arch(self, "head_net_arch")
        check_choice(self, "rnn", ("lstm", "gru"))
        check_choice(self, "loss", ("huber", "mse"))
