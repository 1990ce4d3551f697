"""log_scalar and ScalarListener: with and without listeners."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import timeit

import numpy as np
import pytest
import torch

from stagerl.logging import ScalarListener, is_logging_scalars, log_scalar
from stagerl.logging import scalars as scalars_module


def test_without_a_listener_nothing_is_kept_and_nothing_is_checked():
    assert not is_logging_scalars()
    log_scalar("losses/x", 1.0)
    log_scalar(None, object())  # not even checked: the call returns at once
    assert scalars_module._listeners == []


def test_without_a_listener_a_call_costs_well_under_a_microsecond():
    seconds = min(timeit.repeat(lambda: log_scalar("losses/x", 1.0), number=20_000, repeat=5))
    assert seconds / 20_000 < 1e-6


def test_every_open_listener_receives_every_scalar_in_order():
    first, second = ScalarListener().open(), ScalarListener()
    try:
        log_scalar("a", 1)
        second.open()
        log_scalar("b", np.float32(2.5), step=7)
        log_scalar("c", torch.tensor(3.0))
        log_scalar("d", np.array(4))
        assert is_logging_scalars()
    finally:
        first.close()
        second.close()
    assert first.drain() == [("a", 1.0, None), ("b", 2.5, 7), ("c", 3.0, None),
                             ("d", 4.0, None)]
    assert second.drain() == [("b", 2.5, 7), ("c", 3.0, None), ("d", 4.0, None)]
    assert first.received == [] and not is_logging_scalars()


def test_a_closed_listener_receives_nothing_more_and_keeps_what_it_had():
    with ScalarListener() as listener:
        log_scalar("a", 1.0)
    log_scalar("b", 2.0)
    assert listener.received == [("a", 1.0, None)] and not listener.is_open


def test_opening_twice_registers_once():
    listener = ScalarListener().open().open()
    try:
        log_scalar("a", 1.0)
    finally:
        listener.close()
    assert listener.drain() == [("a", 1.0, None)]


@pytest.mark.parametrize("name, value, step, match", [
    ("", 1.0, None, "non-empty str name"),
    (3, 1.0, None, "non-empty str name"),
    ("x", "high", None, "needs a number"),
    ("x", None, None, "needs a number"),
    ("x", torch.ones(3), None, "loss.mean()"),
    ("x", 1.0, -1, "step must be a non-negative int"),
    ("x", 1.0, 2.5, "step must be a non-negative int"),
])
def test_bad_reports_raise_type_error_while_listening(name, value, step, match):
    with ScalarListener() as listener, pytest.raises(TypeError, match=match):
        log_scalar(name, value, step)
    assert listener.received == []


def test_a_tensor_that_requires_gradients_is_logged_without_a_warning():
    # torch warns once per process when such a tensor is converted: a fresh process tells.
    code = (
        "import warnings, torch\n"
        "from stagerl.logging import ScalarListener, log_scalar\n"
        "loss = (torch.ones(3, requires_grad=True) * 2).mean()\n"
        "warnings.simplefilter('error')\n"
        "with ScalarListener() as listener:\n"
        "    log_scalar('losses/loss', loss)\n"
        "print(listener.drain(), loss.requires_grad, loss.grad_fn is not None)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout == "[('losses/loss', 2.0, None)] True True\n"  # the graph is kept


def test_copies_start_closed_and_keep_what_was_received():
    with ScalarListener() as listener:
        log_scalar("a", 1.0)
        for copied in (pickle.loads(pickle.dumps(listener)), copy.deepcopy(listener)):
            assert copied.received == [("a", 1.0, None)] and not copied.is_open
