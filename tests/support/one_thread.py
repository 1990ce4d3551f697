"""The fixture that runs every test of a module on one torch thread: import it there.

Small networks run as fast on one thread, and two threads stall whenever the other core is busy.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
