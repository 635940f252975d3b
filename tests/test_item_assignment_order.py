"""``y[i] = v`` evaluates ``v`` before ``y`` and ``i``, as Python does: the normal form
named the index first, so an index and a value that both draw from one generator (or
both call anything with an effect) swapped their draws, a wrong value and gradient."""

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp

MODES = ("s2s", "auto", "tape")
SHAPES = [(3,), (5,), (2, 3)]


def written_at_drawn_places(x):
    rng = np.random.default_rng(0)
    flat = x.ravel()
    y = np.zeros_like(flat)
    y[rng.integers(0, flat.size)] = flat[0] * rng.normal()
    y[rng.integers(0, flat.size) :] = y[:1] * rng.normal() + flat[-1] ** 2
    grid = np.zeros((flat.size, flat.size)) + np.outer(flat, flat)
    grid[rng.integers(0, flat.size), rng.integers(0, flat.size)] = flat[1] * rng.normal()
    items = [flat[0], flat[1], flat[-1]]
    items[rng.integers(0, 3)] = flat[0] ** 2 * rng.normal()
    return np.sum(y * np.arange(1, flat.size + 1)) + np.sum(np.sin(grid)) + items[0] * items[2]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
def test_gradient_tangent_and_hessian_vector_product(shape, mode):
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(size=shape)
    v = rng.normal(size=shape)
    f = written_at_drawn_places
    assert_grad_jvp_and_hvp(f, x, v, mode)
