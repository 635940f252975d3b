"""Rules of ``np.unwrap`` (the identity's derivative: the whole periods it adds are chosen by
rounding, constant where differentiable) and ``np.extract`` (the flattened elements where
a condition holds), in every engine, to second order, against central differences."""

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp

MODES = ("s2s", "auto", "tape")
SHAPES = [(5,), (2, 3), (3, 1, 4)]


def unwrapped(x):
    return np.sum(np.sin(np.unwrap(4.0 * x, axis=0)) * np.unwrap(3.0 * x, period=2.5) ** 2)


def extracted(x):
    kept = np.arange(x.size).reshape(x.shape) % 3 != 1
    return np.sum(np.extract(kept, x * x[::-1]) ** 3) + np.sum(np.extract(x > 0.2, x) ** 2)


@pytest.mark.parametrize("f", [unwrapped, extracted], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
def test_gradient_tangent_and_hessian_vector_product(f, shape, mode):
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(size=shape)
    v = rng.normal(size=shape)
    assert_grad_jvp_and_hvp(f, x, v, mode)
