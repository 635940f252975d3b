"""An integer order of a SciPy special function is not a differentiated value.

``jv(n, x)``, ``yn``, ``iv``, ``ive``, ``kv``, ``kve``, ``yv``, ``polygamma`` and ``expn``
refuse a derivative in their order (it has no closed form, or no derivative at all). An
integer reaching the order was never moved by the arguments (``int()``, ``round()`` and
``astype(int)`` of a differentiated value have a zero derivative), but the transformer can
take one for a differentiated value: a loop's counter that the gradient of a helper saves in
its tuple is, differentiated again (reverse over reverse, as ``check_grads(order=2)`` and a
Hessian's VJP do), read out of a tuple that also holds differentiated arrays. Those orders
are now a zero, in both engines; a real order that depends on the arguments is still
refused at the user's line.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp
from scipy import special

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
FUNCTIONS = {
    "jv": special.jv,
    "yn": special.yn,
    "iv": special.iv,
    "ive": special.ive,
    "kv": special.kv,
    "kve": special.kve,
    "yv": special.yv,
    "polygamma": special.polygamma,
    "expn": special.expn,
}


def _programs(function):
    def series(x):
        total = 0.0
        for n in range(1, 4):
            total = total + np.sum(function(n, x) * x)
        return total

    def outer(x):  # the helper's gradient saves its loop counter in a tuple
        return 0.5 * series(x) + np.sum(x**2)

    def truncated(x):  # an order made by astype(int) of a differentiated value
        n = np.floor(x[0] + 1.0).astype(np.int64)
        return np.sum(function(n, x))

    return outer, truncated


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_saved_loop_counter_differentiated_again(name, mode):
    outer, _ = _programs(FUNCTIONS[name])
    rng = np.random.default_rng(len(name))
    x = rng.uniform(0.6, 1.8, size=3)
    v = rng.normal(size=3)
    gradient = sg.grad(outer, mode=mode)
    for _ in range(2):
        assert_close(gradient(x), numeric_grad(outer, [x], 0), rtol=1e-5)
    expected = numeric_jvp(sg.grad(outer, mode="tape"), [x], 0, v, step=1e-5)
    for _ in range(2):  # reverse over reverse: the gradient's VJP (a Hessian is symmetric)
        _, pullback = sg.vjp(sg.grad(outer, mode=mode), x, mode=mode)
        assert_close(pullback(v)[0], expected, rtol=1e-4, atol=1e-7)
    _, tangent = sg.jvp(sg.grad(outer, mode=mode), (x,), (v,), mode=mode)
    assert_close(tangent, expected, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["jv", "kv", "polygamma"])
def test_check_grads_to_second_order(name, mode):
    outer, truncated = _programs(FUNCTIONS[name])
    x = np.array([0.7, 1.3, 1.1])
    sg.check_grads(outer, x, order=2, mode=mode)
    sg.check_grads(truncated, x, order=2, mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_an_order_truncated_to_an_integer_has_no_derivative(name, mode):
    _, truncated = _programs(FUNCTIONS[name])
    x = np.array([0.8, 1.2, 1.5])
    v = np.array([0.3, -1.0, 0.5])
    assert_close(sg.grad(truncated, mode=mode)(x), numeric_grad(truncated, [x], 0), rtol=1e-5)
    _, tangent = sg.jvp(truncated, (x,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(truncated, [x], 0, v), rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["jv", "iv", "kv", "yv"])
def test_a_real_order_that_moves_is_still_refused(name, mode):
    function = FUNCTIONS[name]

    def moving(x):
        return np.sum(function(x[0], x))  # the order is a differentiated value

    with pytest.raises(sg.NonDifferentiableError, match=r"test_integer_orders\.py:\d+: .*order"):
        sg.grad(moving, mode=mode)(np.array([1.5, 0.9]))
    with pytest.raises(sg.NonDifferentiableError, match=r"test_integer_orders\.py:\d+: .*order"):
        sg.jvp(moving, (np.array([1.5, 0.9]),), (np.ones(2),), mode=mode)
