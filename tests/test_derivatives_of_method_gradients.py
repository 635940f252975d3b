"""Differentiating the gradient of a bound method (``gf = sg.grad(model.loss)``) inside
another transform: a gradient of ``gf``, its Jacobian, a jvp over it. The code generated
for ``gf`` takes the object first, as the method's function does; calling it without the
object shifted every argument by one (a TypeError from generated code)."""

import numpy as np
import pytest

import s2sgrad as sg


class LeastSquares:
    def __init__(self, scale):
        self.scale = scale

    def loss(self, w, x, y):
        return self.scale * np.sum((x @ w - y) ** 2) + np.sum(np.sin(w))


def problem(n, m, seed):
    rng = np.random.default_rng(seed)
    model = LeastSquares(rng.uniform(0.5, 2.0))
    w, v = rng.normal(size=n), rng.normal(size=n)
    x, y = rng.normal(size=(m, n)), rng.normal(size=m)
    hessian = 2 * model.scale * x.T @ x - np.diag(np.sin(w))
    return model, w, v, x, y, hessian


SHAPES = [(3, 4, 0), (5, 2, 1), (1, 3, 2)]


def central_differences(f, w, h=1e-6):
    columns = []
    for i in range(w.size):
        step = np.zeros_like(w)
        step[i] = h
        columns.append((f(w + step) - f(w - step)) / (2 * h))
    return np.stack(columns, axis=-1)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("n, m, seed", SHAPES)
def test_gradient_of_a_product_with_the_gradient_of_a_method(mode, n, m, seed):
    model, w, v, x, y, hessian = problem(n, m, seed)
    gf = sg.grad(model.loss, mode=mode)

    def along_v(w, x, y):
        return np.sum(gf(w, x, y) * v)

    np.testing.assert_allclose(sg.grad(along_v, mode=mode)(w, x, y), hessian @ v, rtol=1e-9)
    numeric = central_differences(lambda w: along_v(w, x, y), w)
    np.testing.assert_allclose(sg.grad(along_v, mode=mode)(w, x, y), numeric, rtol=1e-5)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("n, m, seed", SHAPES)
def test_jacobians_of_the_gradient_of_a_method(mode, n, m, seed):
    model, w, v, x, y, hessian = problem(n, m, seed)
    gf = sg.grad(model.loss, mode=mode)
    numeric = central_differences(lambda w: gf(w, x, y), w)
    np.testing.assert_allclose(numeric, hessian, rtol=1e-5, atol=1e-7)
    for jacobian in (sg.jacobian, sg.jacfwd):
        got = jacobian(lambda w: gf(w, x, y), mode=mode)(w)
        np.testing.assert_allclose(got, hessian, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("n, m, seed", SHAPES)
def test_jvp_and_vjp_over_the_gradient_of_a_method(mode, n, m, seed):
    model, w, v, x, y, hessian = problem(n, m, seed)
    gf = sg.grad(model.loss, mode=mode)
    _, tangent = sg.jvp(lambda w: gf(w, x, y), (w,), (v,), mode=mode)
    np.testing.assert_allclose(tangent, hessian @ v, rtol=1e-9, atol=1e-12)
    _, pullback = sg.vjp(lambda w: gf(w, x, y), w, mode=mode)
    np.testing.assert_allclose(pullback(v)[0], hessian.T @ v, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_value_and_grad_and_tuple_wrt_of_a_method_differentiated_again(mode):
    model, w, v, x, y, hessian = problem(4, 3, 5)
    value_and_gradient = sg.value_and_grad(model.loss, mode=mode)
    both = sg.grad(model.loss, wrt=(0, 2), mode=mode)

    def along_v(w, x, y):
        value, g = value_and_gradient(w, x, y)
        return np.sum(g * v) + 0.0 * value + np.sum(both(w, x, y)[0] * v)

    np.testing.assert_allclose(sg.grad(along_v, mode=mode)(w, x, y), 2 * hessian @ v, rtol=1e-9)
