"""Behaviour that NumPy (1.x and 2.x) and Python versions differ on, where s2sgrad meets it.

NumPy 1.x promotes by value: ``np.result_type(np.float64(2.0), np.float32)`` is float32
there (float64 from NumPy 2.0, NEP 50), which once seeded ``grad`` in float32.
"""

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.runtime import seed_cotangent

RNG = np.random.default_rng(7)


@pytest.mark.parametrize(
    "output, dtype",
    [
        (np.float64(2.0), np.float64),
        (np.ones((), np.float64), np.float64),
        (2.5, float),
        (np.float32(2.0), np.float32),
        (np.int64(3), np.float64),
        (np.complex128(1.0), np.complex128),
    ],
)
def test_the_seed_has_the_outputs_floating_dtype(output, dtype):
    seed = seed_cotangent(output)
    assert np.result_type(seed) == np.dtype(dtype)
    assert seed == 1


def product_of_sum_and_norm(x):
    return np.sum(np.sin(x) * np.linalg.norm(x))  # the seed is broadcast to an array


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_a_float64_scalar_output_is_differentiated_in_float64(mode):
    x = RNG.uniform(0.2, 1.2, size=5)
    total, norm = np.sum(np.sin(x)), np.linalg.norm(x)
    expected = np.cos(x) * norm + total * x / norm
    gradient = call_twice(sg.grad(product_of_sum_and_norm, mode=mode), x)
    assert gradient.dtype == np.float64
    np.testing.assert_allclose(gradient, expected, rtol=1e-14)  # float32 would be ~1e-8


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_a_jacobian_of_a_float64_scalar_stays_float64(mode):
    def f(t):
        return np.sin(t) * np.array([1.0, 3.0])

    t = np.float64(0.3)
    jacobian = sg.jacobian(f, mode=mode)(t)
    assert np.result_type(jacobian) == np.float64
    np.testing.assert_allclose(jacobian, np.cos(t) * np.array([1.0, 3.0]), rtol=1e-15)


def solved_sines(a, b):
    return np.sum(np.sin(np.linalg.solve(a, b)))


@pytest.mark.skipif(
    np.lib.NumpyVersion(np.__version__) >= "2.0.0",
    reason="only NumPy 1.x's solve reads b one dimension short of a as stacked vectors",
)
@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_solve_with_stacked_vectors_on_numpy_1(mode):
    a = RNG.standard_normal((2, 3, 3)) + 3.0 * np.eye(3)
    b = RNG.standard_normal((2, 3))
    gradients = call_twice(sg.grad(solved_sines, wrt=(0, 1), mode=mode), a, b)
    for index in range(2):
        assert_close(gradients[index], numeric_grad(solved_sines, (a, b), index), rtol=1e-6)


def test_generated_code_prints_tuple_targets_bare_on_every_python():
    # Python 3.10's ast.unparse writes (a, b) = f(x); 3.11 and later a, b = f(x)
    import gast

    from s2sgrad.compiler.codegen import to_source

    text = "def f(x):\n    a, b = g(x)\n    for i, v in z:\n        pass\n    return (a, b)\n"
    assert to_source(gast.parse(text).body[0]) == text
