"""Forward mode of an item write of a complex value into an array made complex from a real
argument (``z = x + 0j; z[0] = z[0] * 1j``): the tangent of ``z`` was the real tangent of
``x``, and writing the complex item's tangent into its copy dropped the imaginary part
(NumPy's ComplexWarning), a silently wrong jvp and hvp in s2s and auto. The tangent copied
for the write is complex where the array is (``runtime.owned_tangent``)."""

import warnings

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp


def rotated_first(x):
    z = x + 0j
    z[0] = z[0] * 1j
    return np.sum(np.abs(z) ** 2 * x)


def rotated_in_a_loop(x):
    z = x * (1.0 + 0j)
    for i in range(2):
        z[i] = z[i] * np.exp(1j * x[i + 1])
    return np.sum(np.real(z) * np.imag(z)) + np.sum(np.abs(z) ** 3)


@pytest.mark.parametrize("f", [rotated_first, rotated_in_a_loop])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_jvp_and_hvp_of_complex_item_writes(f, mode):
    rng = np.random.default_rng(71)
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        assert_grad_jvp_and_hvp(f, rng.normal(size=4), rng.normal(size=4), mode)
