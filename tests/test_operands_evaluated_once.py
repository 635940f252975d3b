"""Operands Python evaluates once stay evaluated once in generated code: the index of an
augmented item update (``y[next(it)] += v`` was ``y[next(it)] = y[next(it)] + v``: two
items read and written, or a StopIteration) and the middle operand of a chained comparison
(``lo < rng.uniform() < hi`` drew twice, and could take the other branch)."""

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp

MODES = ("s2s", "auto", "tape")
SHAPES = [(3,), (4,), (6,)]


def updated_at_drawn_indices(x):
    rng = np.random.default_rng(4)
    order = iter([2, 0, 1, 0])
    y = np.zeros_like(x)
    y[next(order)] += x[0] ** 2
    y[next(order)] *= x[1]
    y[rng.integers(0, x.size)] += np.sin(x[2])
    y[1 : next(order) + 1] -= x[:1] * x[2]
    return np.sum(y * np.arange(1, x.size + 1) * x)


def branch_on_a_drawn_band(x):
    rng = np.random.default_rng(1)
    if -1.0 < rng.normal() < 0.5:  # noqa: SIM108 (an if statement; the 2nd draw is outside)
        y = np.sum(x**2)
    else:
        y = np.sum(x**3)
    inside = 0.0 < rng.uniform() * 2 < 1.9
    extra = np.sum(np.sin(x)) if 0 < rng.normal() < 9 else 0.0
    return y * (2.0 if inside else 3.0) + extra


@pytest.mark.parametrize(
    "f", [updated_at_drawn_indices, branch_on_a_drawn_band], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
def test_gradient_tangent_and_hessian_vector_product(f, shape, mode):
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(size=shape)
    v = rng.normal(size=shape)
    assert_grad_jvp_and_hvp(f, x, v, mode)
