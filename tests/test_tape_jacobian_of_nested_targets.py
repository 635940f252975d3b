"""``GradientTape.jacobian`` of a nested target (a list, tuple or dict of results): the
target's structure of Jacobians, each mirroring the sources, against central differences.
A list target reached NumPy as one ragged array and raised ValueError."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, numeric_jacobian

import s2sgrad as sg


def parts(x):
    return [np.sin(x) * x[0], np.sum(x**2)], {"cube": x**3}


@pytest.mark.parametrize("size", [2, 4])
def test_list_and_dict_targets(size):
    x_value = np.random.default_rng(size).normal(size=size)
    x = sg.constant(x_value)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        (first, total), named = parts(x)
    listed = tape.jacobian([first, total], x)
    keyed = tape.jacobian({"cube": named["cube"], "pair": (total, first)}, [x])
    assert isinstance(listed, list) and len(listed) == 2
    assert_close(listed[0], numeric_jacobian(lambda v: parts(v)[0][0], [x_value], 0))
    assert_close(listed[1], numeric_jacobian(lambda v: parts(v)[0][1], [x_value], 0))
    assert_close(keyed["cube"][0], np.diag(3 * x_value**2))
    assert_close(keyed["pair"][0][0], 2 * x_value)
    assert_close(keyed["pair"][1][0], listed[0])


def test_unconnected_part_of_a_nested_target():
    x, y = sg.constant(np.ones(2)), sg.constant(np.ones(3))
    with sg.GradientTape() as tape:
        tape.watch([x, y])
        out = [x * 2.0, y * 0.0 + 1.0]
    none = tape.jacobian(out, x)
    assert_close(none[0], 2 * np.eye(2))
    assert none[1] is None


def test_second_order_through_a_nested_target():
    x_value = np.array([0.3, -0.7])
    x = sg.constant(x_value)
    with sg.GradientTape() as outer:
        outer.watch(x)
        with sg.GradientTape() as inner:
            inner.watch(x)
            out = [np.sum(np.sin(x)), np.sum(x**3)]
        gradients = inner.jacobian(out, x)
        total = np.sum(gradients[0]) + np.sum(gradients[1])
    assert_close(outer.gradient(total, x), -np.sin(x_value) + 6 * x_value)
