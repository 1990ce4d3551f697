import math
from fractions import Fraction

import numpy as np
import pytest

from trajectories import EpisodeSampleRatioController, InsertSampleRatioController


def allowed(c):
    n = 0
    while c.on_sample():
        n += 1
    return n


@pytest.mark.parametrize("ratio, exact, threshold", [
    (1.0, 1, 1), (0.25, Fraction(1, 4), 10), (2.0, 2, 5), (1 / 3, Fraction(1, 3), 0),
    (0.29, Fraction(29, 100), 0), (0.1, Fraction(1, 10), 3), (0.7, Fraction(7, 10), 2),
    (np.float32(0.29), Fraction(29, 100), 0), (Fraction(2, 7), Fraction(2, 7), 1)])
def test_batches_allowed_after_n_inserts(ratio, exact, threshold):
    c = InsertSampleRatioController(ratio=ratio, threshold=threshold)
    total = 0
    for n in range(1, 301):
        c.on_insert(1, {"state": 0})
        total += allowed(c)
        expected = math.floor((n - threshold) * exact) + 1 if n >= threshold else 0
        assert total == expected == c.n_sampled
    assert c.n_inserted == 300


@pytest.mark.parametrize("controller", [InsertSampleRatioController,
                                        EpisodeSampleRatioController])
def test_a_decimal_ratio_counts_exactly_whatever_the_float_rounding(controller):
    assert 100 * 0.29 < 29  # the float product rounds down: 28.999999999999996
    c = controller(ratio=0.29, threshold=0)
    c.on_insert(100, {"terminal": np.ones(100, dtype=bool)})
    assert allowed(c) == 30  # floor(100 * 29 / 100) + 1
    c.ratio = 0.5  # a new ratio takes effect: floor(100 * 0.5) + 1 = 51 in all
    assert allowed(c) == 21


def test_nothing_before_threshold_and_defaults():
    c = InsertSampleRatioController()
    assert (c.ratio, c.threshold, c.n_inserted, c.n_sampled) == (1.0, 1, 0, 0)
    assert not c.on_sample()
    c.on_insert(1)
    assert c.on_sample() and not c.on_sample()
    c.on_insert(3)
    assert allowed(c) == 3


def test_bulk_insert_counts_its_transitions():
    c = InsertSampleRatioController(ratio=0.5, threshold=4)
    c.on_insert(10, {"reward": [0.0] * 10})
    assert c.n_inserted == 10 and allowed(c) == 4


def test_resume_from_counters():
    c = InsertSampleRatioController(ratio=1.0, threshold=1, n_inserted=5, n_sampled=5)
    assert allowed(c) == 0
    c.on_insert(1)
    assert allowed(c) == 1


@pytest.mark.parametrize("kwargs, err", [
    (dict(ratio=0), ValueError), (dict(ratio=-1.0), ValueError), (dict(ratio="1"), TypeError),
    (dict(ratio=float("inf")), ValueError), (dict(ratio=float("nan")), ValueError),
    (dict(threshold=-1), ValueError), (dict(threshold=1.5), TypeError),
])
def test_bad_arguments(kwargs, err):
    with pytest.raises(err):
        InsertSampleRatioController(**kwargs)
    with pytest.raises(err):
        EpisodeSampleRatioController(**kwargs)


def test_negative_insert_raises():
    c = InsertSampleRatioController()
    with pytest.raises(ValueError):
        c.on_insert(-1)
    with pytest.raises(TypeError):
        c.on_insert(1.5)
    assert c.n_inserted == 0


def test_episode_controller_counts_terminated_and_truncated_steps():
    c = EpisodeSampleRatioController(ratio=1.0, threshold=1)
    c.on_insert(3, {"terminal": [False, True, False], "truncated": [True, True, False]})
    assert c.n_episodes == 2  # one step ended by both counts once
    c.on_insert(1, {"terminal": False, "truncated": True})
    assert c.n_episodes == 3 and allowed(c) == 3


def test_episode_controller_counts_terminal_rows():
    c = EpisodeSampleRatioController(ratio=1.0, threshold=2)
    c.on_insert(1, {"terminal": False})
    c.on_insert(1, {"terminal": True})
    assert c.n_episodes == 1 and not c.on_sample()
    c.on_insert(4, {"terminal": [True, False, True, False]})
    assert c.n_episodes == 3 and allowed(c) == 2
    c.on_insert(1, {"state": 3})  # no terminal: counts zero
    assert c.n_episodes == 3
