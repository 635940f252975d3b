"""Rules of ``np.unwrap`` (the identity's derivative: the whole periods it adds are chosen by
rounding, constant where differentiable) and ``np.extract`` (the flattened elements where
a condition holds), in every engine, to second order, against central differences."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0), rtol=1e-5)
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        assert_close(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-5)
        hvp = sg.hvp(f, (x,), (v,), mode=mode)
    expected = numeric_jvp(lambda y: sg.grad(f, mode="tape")(y), [x], 0, v, step=1e-5)
    assert_close(np.asarray(hvp).reshape(shape), expected, rtol=1e-4, atol=1e-6)
