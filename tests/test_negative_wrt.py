"""``wrt=-1`` counts from the last positional parameter, as ``jax.grad(f, argnums=-1)``
does (and as ``sg.jacobian`` already did); ``grad``, ``value_and_grad`` and ``hessian``
said it was out of range. Where a default or ``*args`` leaves the last argument unknown
until the call, a negative ``wrt`` is refused with what to write instead.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def weighted(x, y, z):
    return np.sum(np.sin(x) * y**2 * np.exp(z))


def point(shape):
    rng = np.random.default_rng(sum(shape))
    return [rng.uniform(-1.0, 1.0, size=shape) for _ in range(3)]


@pytest.mark.parametrize("shape", [(3,), (2, 2)])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("wrt", [-1, -2, -3])
def test_grad_counts_from_the_last_parameter(wrt, mode, shape):
    args = point(shape)
    expected = numeric_grad(weighted, args, 3 + wrt)
    assert_close(call_twice(sg.grad(weighted, wrt=wrt, mode=mode), *args), expected)


@pytest.mark.parametrize("mode", MODES)
def test_value_and_grad_with_a_tuple_of_mixed_signs(mode):
    args = point((3,))
    value, (first, last) = sg.value_and_grad(weighted, wrt=(0, -1), mode=mode)(*args)
    assert_close(value, weighted(*args))
    assert_close(first, numeric_grad(weighted, args, 0))
    assert_close(last, numeric_grad(weighted, args, 2))


def test_hessian_of_the_last_argument():
    args = point((2,))
    hessian = sg.hessian(weighted, wrt=-1)(*args)
    expected = np.diag(np.sin(args[0]) * args[1] ** 2 * np.exp(args[2]))
    assert_close(hessian, expected)


class Spring:
    def energy(self, x, k):
        return 0.5 * k * np.sum(x**2)


def test_a_bound_method_counts_its_own_arguments():
    x = np.array([0.5, -1.5])
    assert_close(sg.grad(Spring().energy, wrt=-1)(x, 2.0), 0.5 * float(np.sum(x**2)))
    with pytest.raises(ValueError, match="out of range"):
        sg.grad(Spring().energy, wrt=-3)


def with_a_default(x, scale=2.0):
    return scale * np.sum(x**2)


def with_star_args(*xs):
    return xs[0] * xs[1]


@pytest.mark.parametrize("f", [with_a_default, with_star_args])
def test_refused_where_the_last_argument_is_known_only_at_the_call(f):
    with pytest.raises(ValueError, match="give the argument's position from the start"):
        sg.grad(f, wrt=-1)


def test_out_of_range_still_says_so():
    with pytest.raises(ValueError, match="wrt=-4 is out of range"):
        sg.grad(weighted, wrt=-4)
