"""Scalars an algorithm reports (losses, ε, entropy, KL) for whatever loggers listen.

An algorithm calls :func:`log_scalar` where it computes a value, without knowing which loggers
the experiment has, or whether it has any::

    rl.log_scalar("losses/td_loss", loss)          # a number, a 0-d array or a one-element tensor
    rl.log_scalar("charts/epsilon", explorer.epsilon)

The logger hooks (``CSVLogger``, ``TensorBoardLogger``, ``ConsoleSummary``, ...) each open a
:class:`ScalarListener` when an experiment starts, read what arrived after every step and close
it when the experiment ends (also after an exception). A scalar is written at the env step of
the step in which it was reported, unless ``step=`` says otherwise.

With no listener open a call returns at once (one global read, about 50 ns), so an algorithm may
call it on every update. A value that is expensive to compute (a KL estimate, say) can be skipped
when :func:`is_logging_scalars` is False. Listeners are per process: one logged experiment at a
time (experiments in other processes, Ray workers say, have listeners of their own).
"""

from __future__ import annotations

from typing import Any

__all__ = ["log_scalar", "is_logging_scalars", "ScalarListener"]

# The listeners open now. A plain list read by one global lookup: log_scalar costs next to
# nothing while it is empty.
_listeners: list[ScalarListener] = []


def log_scalar(name: str, value: Any, step: int | None = None) -> None:
    """Report the scalar ``name`` to every logger that listens; nothing happens when none does.

    Args:
        name: a tag such as ``"losses/td_loss"`` or ``"charts/epsilon"`` (TensorBoard groups
            tags by the part before ``/``).
        value: an int, a float, a 0-d numpy array or a one-element tensor, also one that
            requires gradients (detached and converted with ``float`` only while a logger
            listens: on a GPU that waits for the value).
        step: the env step to file it under; default: the step being run.

    Example:
        >>> from stagerl.logging import ScalarListener, log_scalar
        >>> log_scalar("losses/td_loss", 0.5)    # nobody listens: nothing happens
        >>> with ScalarListener() as listener:
        ...     log_scalar("losses/td_loss", 0.25)
        >>> listener.drain()
        [('losses/td_loss', 0.25, None)]
    """
    if _listeners:
        record = _record(name, value, step)
        for listener in _listeners:
            listener.received.append(record)


def is_logging_scalars() -> bool:
    """Whether some logger listens, i.e. whether :func:`log_scalar` does anything now."""
    return bool(_listeners)


def _record(name: Any, value: Any, step: Any) -> tuple[str, float, int | None]:
    if not isinstance(name, str) or not name:
        raise TypeError(f"log_scalar needs a non-empty str name such as 'losses/td_loss', got "
                        f"name={name!r}")
    detach = getattr(value, "detach", None)
    if callable(detach):  # a tensor in a graph: its value, without converting the graph's node
        value = detach()
    try:
        number = float(value)
    except (TypeError, ValueError, RuntimeError) as error:  # RuntimeError: a tensor of many
        raise TypeError(
            f"log_scalar({name!r}, ...) needs a number (an int, a float, a 0-d array or a "
            f"one-element tensor), got {value!r} of type {type(value).__name__}; for a batch "
            "report its mean, e.g. loss.mean()"
        ) from error
    if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
        raise TypeError(f"log_scalar({name!r}, ...): step must be a non-negative int or None, "
                        f"got step={step!r}")
    return name, number, step


class ScalarListener:
    """Receives every scalar reported while it is open, in ``received`` as ``(name, value,
    step)`` records (``step`` is ``None`` unless the caller gave one).

    Logger hooks open one at PreExperiment and close it at PostExperiment; use it directly to
    see what an algorithm reports. Open it with :meth:`open` and :meth:`close`, or as a context
    manager. A copy (pickle, ``deepcopy``) starts closed.

    Example:
        >>> from stagerl.logging import ScalarListener, is_logging_scalars, log_scalar
        >>> listener = ScalarListener().open()
        >>> log_scalar("charts/epsilon", 0.1, step=500)
        >>> listener.close().drain()
        [('charts/epsilon', 0.1, 500)]
        >>> is_logging_scalars()
        False
    """

    def __init__(self) -> None:
        self.received: list[tuple[str, float, int | None]] = []

    @property
    def is_open(self) -> bool:
        return any(listener is self for listener in _listeners)

    def open(self) -> ScalarListener:
        """Start receiving (opening an open listener changes nothing); returns ``self``."""
        if not self.is_open:
            _listeners.append(self)
        return self

    def close(self) -> ScalarListener:
        """Stop receiving; what was received stays in ``received``. Returns ``self``."""
        for i, listener in enumerate(_listeners):
            if listener is self:
                del _listeners[i]
                break
        return self

    def drain(self) -> list[tuple[str, float, int | None]]:
        """What was received since the last drain, oldest first; ``received`` is emptied."""
        received, self.received = self.received, []
        return received

    def __enter__(self) -> ScalarListener:
        return self.open()

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __getstate__(self) -> dict:
        return {"received": list(self.received)}

    def __setstate__(self, state: dict) -> None:
        self.received = state["received"]

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"ScalarListener({state}, {len(self.received)} received)"
