"""A method of an array held in a global (``ys.dot(x)``) is differentiated by its rule.

The transformer knows ``c.dot(x)`` of a local array; the same call on a module-level array
was dispatched at run time, which source transformation refused (and the tape cannot see
inside ``ndarray.dot``)."""

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

weights = np.array([0.5, -1.0, 2.0])
design = np.arange(6.0).reshape(2, 3) / 4


def quadratic_form(x):
    return weights.dot(x * x)


def two_products(x):
    return np.sum(np.sin(design.dot(np.sin(x)))) + np.sum(design.T.dot(design.dot(x)))


@pytest.mark.parametrize("f", [quadratic_form, two_products])
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_global_array_method_follows_its_rule(f, mode):
    x = np.array([0.3, -0.2, 0.5])
    assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
    assert "dynamic_vjp" not in sg.source(sg.grad(f, mode=mode))


def test_second_order_through_a_global_array_method():
    x = np.array([0.3, -0.2, 0.5])
    sg.check_grads(two_products, x, order=2)
    hessian = call_twice(sg.hessian(two_products, mode="s2s"), x)
    expected = np.stack(
        [numeric_grad(lambda y, i=i: sg.grad(two_products)(y)[i], [x], 0) for i in range(3)]
    )
    assert_close(hessian, expected, rtol=1e-5, atol=1e-6)


def test_rebinding_the_global_array_is_followed():
    global design
    x = np.array([0.3, -0.2, 0.5])
    g = sg.grad(two_products, mode="s2s")
    g(x)
    saved = design
    try:
        design = np.ones((4, 3))
        assert_close(g(x), numeric_grad(two_products, [x], 0))
    finally:
        design = saved
