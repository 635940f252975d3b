"""Python's ``statistics`` module computes exactly (with fractions) on plain floats: a call
on values being differentiated is refused at the user's line (not inside statistics.py),
with the advice to use NumPy, in every mode."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

import s2sgrad as sg


def mean_of_list(x):
    return statistics.mean([x[0], x[1], x[2] * 2])


def spread_of_list(x):
    return statistics.pstdev([x[0], x[1], x[2]])


def median_of_list(x):
    return statistics.median([x[0], x[1], x[2]])


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("f", [mean_of_list, spread_of_list])
def test_refused_at_the_users_line(mode, f):
    with pytest.raises(sg.NonDifferentiableError) as refused:
        sg.grad(f, mode=mode)(np.array([0.3, -0.7, 1.2]))
    message = str(refused.value)
    assert "test_statistics_module_refused.py:" in message
    assert "statistics.py" not in message


def test_source_transformation_advises_numpy():
    with pytest.raises(sg.NonDifferentiableError, match="use np.mean"):
        sg.grad(mean_of_list, mode="s2s")(np.array([0.3, -0.7, 1.2]))


def test_a_median_picked_on_the_tape_in_auto():
    g = sg.grad(median_of_list, mode="auto")(np.array([0.3, -0.7, 1.2]))
    assert np.array_equal(g, [1.0, 0.0, 0.0])
