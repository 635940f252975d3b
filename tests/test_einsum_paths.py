"""``np.einsum_path`` of values being differentiated, its path then given to ``np.einsum``'s
``optimize=`` (JAX's and NumPy's einsum tests do this): it was refused ("np.einsum_path has
no derivative rule"), though the path it returns depends on the shapes alone. And an
explicit path given to ``optimize=`` reached the cotangent einsums, whose operands differ
(NumPy raised "Invalid einsum_path is specified" from the generated code, in every mode).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp, call_twice, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def chain_along_path(x, b, c):
    path, _ = np.einsum_path("ij,jk,kl->il", x, b, c, optimize="optimal")
    return np.sum(np.einsum("ij,jk,kl->il", x, b, c, optimize=path) ** 2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [2, 3])
def test_gradients_through_an_einsum_along_its_path(n, mode):
    rng = np.random.default_rng(n)
    x, b, c = rng.normal(size=(n, 4)), rng.normal(size=(4, 5)), rng.normal(size=(5, n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradients = call_twice(sg.grad(chain_along_path, wrt=(0, 1, 2), mode=mode), x, b, c)
    for index, gradient in enumerate(gradients):
        assert_close(gradient, numeric_grad(chain_along_path, [x, b, c], index))


B = np.linspace(-1.0, 1.0, 20).reshape(4, 5)


def squares_along_path(x):
    path = np.einsum_path("ij,jk,lj->lk", x, B, x, optimize="greedy")[0]
    return np.sum(np.einsum("ij,jk,lj->lk", x, B, x, optimize=path) ** 2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(2, 4), (3, 4)])
def test_second_order_along_the_path(shape, mode):
    rng = np.random.default_rng(len(shape))
    x, v = rng.normal(size=shape), rng.normal(size=shape)
    assert_grad_jvp_and_hvp(squares_along_path, x, v, mode)
