"""What autograd's ``test_wrappers.py`` and ``test_graphs.py`` ask of its function
transforms, asked of s2sgrad's: gradients by parameter name, Jacobians (reverse and
forward), Hessians and Hessian-vector products, vector-Jacobian products of several
outputs, per-element gradients (``sg.vmap(sg.grad(f))`` for autograd's
``elementwise_grad``), ``value_and_grad`` and ``has_aux`` (``grad_and_aux``),
``checkpoint``, the Gauss-Newton product built from ``jvp`` and ``vjp``
(``make_ggnvp``), gradients of gradients of gradients, and ``sg.grad`` called inside the
function being differentiated; in every engine, against central differences.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import numeric_grad, numeric_jacobian, numeric_vjp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
rng = np.random.default_rng(980059)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)  # mode="auto" may use the tape
        yield


def three(x, y, z):
    return np.sum(np.sin(x) * y**2 + z * x)


@pytest.mark.parametrize("mode", MODES)
def test_gradients_by_parameter_name(mode):
    x, y, z = rng.standard_normal((3, 3))
    np.testing.assert_allclose(
        sg.grad(three, wrt="y", mode=mode)(x, y=y, z=z), numeric_grad(three, [x, y, z], 1)
    )
    gz, gx = sg.grad(three, wrt=("z", "x"), mode=mode)(x, y, z)
    np.testing.assert_allclose(gz, numeric_grad(three, [x, y, z], 2))
    np.testing.assert_allclose(gx, numeric_grad(three, [x, y, z], 0))


def outer_of_sines(x):
    return np.outer(np.sin(x), x**2)


@pytest.mark.parametrize("mode", MODES)
def test_jacobians_reverse_and_forward(mode):
    x = rng.standard_normal(3)
    expected = numeric_jacobian(outer_of_sines, [x], 0)
    np.testing.assert_allclose(sg.jacobian(outer_of_sines, mode=mode)(x), expected, atol=1e-8)
    np.testing.assert_allclose(sg.jacfwd(outer_of_sines, mode=mode)(x), expected, atol=1e-8)


def curved(x):
    return np.sum(np.sin(x) * x[::-1] ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_hessian_and_hessian_vector_product(mode):
    x, v = rng.standard_normal((2, 4))
    hessian = numeric_jacobian(sg.grad(curved, mode="tape"), [x], 0, step=1e-5)
    np.testing.assert_allclose(sg.hessian(curved, mode=mode)(x), hessian, rtol=1e-5, atol=1e-7)
    product = np.reshape(sg.hvp(curved, (x,), (v,), mode=mode), 4)
    np.testing.assert_allclose(product, hessian @ v, rtol=1e-5, atol=1e-7)


def two_outputs(x, y):
    return np.sin(x) * y, x**2


@pytest.mark.parametrize("mode", MODES)
def test_vjp_of_two_outputs(mode):
    x, y, c1, c2 = rng.standard_normal((4, 3))
    _, pullback = sg.vjp(two_outputs, x, y, mode=mode)
    gx, gy = pullback((c1, c2))
    np.testing.assert_allclose(gx, numeric_vjp(two_outputs, [x, y], 0, (c1, c2)), atol=1e-8)
    np.testing.assert_allclose(gy, numeric_vjp(two_outputs, [x, y], 1, (c1, c2)), atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_elementwise_gradient_by_vmap(mode):
    x = rng.standard_normal(5)

    def f(v):
        return np.tanh(v) * v

    expected = [numeric_grad(f, [float(v)], 0) for v in x]
    np.testing.assert_allclose(sg.vmap(sg.grad(f, mode=mode))(x), expected, atol=1e-8)


def with_aux(x):
    return np.sum(np.sin(x) * x), {"doubled": 2 * x}


@pytest.mark.parametrize("mode", MODES)
def test_value_and_grad_with_aux(mode):
    x = rng.standard_normal(3)
    (value, aux), gradient = sg.value_and_grad(with_aux, has_aux=True, mode=mode)(x)
    assert value == pytest.approx(with_aux(x)[0])
    np.testing.assert_allclose(aux["doubled"], 2 * x)
    np.testing.assert_allclose(gradient, numeric_grad(lambda v: with_aux(v)[0], [x], 0))
    gradient_alone, aux_alone = sg.grad(with_aux, has_aux=True, mode=mode)(x)
    np.testing.assert_allclose(gradient_alone, gradient)
    np.testing.assert_allclose(aux_alone["doubled"], 2 * x)


def _inner_layer(x):
    return np.sin(np.cos(x)) * x


_checkpointed = sg.checkpoint(_inner_layer)


def twice_checkpointed(x):
    return np.sum(_checkpointed(_checkpointed(x)) ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_checkpointed_calls(mode):
    x = rng.standard_normal(4)
    gradient = sg.grad(twice_checkpointed, mode=mode)
    for _ in range(2):
        np.testing.assert_allclose(gradient(x), numeric_grad(twice_checkpointed, [x], 0))


@pytest.mark.parametrize("mode", MODES)
def test_gauss_newton_vector_product_from_jvp_and_vjp(mode):
    w = rng.standard_normal((3, 2))
    x, v = rng.standard_normal((2, 2))

    def f(u):
        return np.tanh(w @ u)

    _, jv = sg.jvp(f, (x,), (v,), mode=mode)
    _, pullback = sg.vjp(f, x, mode=mode)
    j = numeric_jacobian(f, [x], 0)
    np.testing.assert_allclose(pullback(jv)[0], j.T @ j @ v, rtol=1e-5, atol=1e-8)


def sines(x, y):
    return np.sin(np.sin(x) + np.sin(y))


@pytest.mark.parametrize("mode", MODES)
def test_third_derivatives_in_mixed_arguments(mode):
    x, y = 0.37, -0.6
    d_x = sg.grad(sines, mode=mode)
    d_xy = sg.grad(d_x, wrt=1, mode=mode)
    d_xyx = sg.grad(d_xy, mode=mode)
    # by hand: with s = sin x + sin y, d/dx d/dy f = -sin(s) cos x cos y
    assert d_xy(x, y) == pytest.approx(-np.sin(np.sin(x) + np.sin(y)) * np.cos(x) * np.cos(y))

    def mixed(u, v):
        return -np.sin(np.sin(u) + np.sin(v)) * np.cos(u) * np.cos(v)

    assert d_xyx(x, y) == pytest.approx(numeric_grad(mixed, [x, y], 0), rel=1e-6)


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_grad_called_inside_the_function_differentiated(mode):
    def f(x):
        inner = lambda y: y * np.sin(x * y)  # noqa: E731 (autograd's test writes a lambda)
        return x * sg.grad(inner, mode=mode)(2.0)

    for _ in range(2):
        assert sg.grad(f, mode=mode)(1.3) == pytest.approx(numeric_grad(f, [1.3], 0), rel=1e-6)


def test_grad_inside_reading_a_differentiated_value_is_refused_by_source_transformation():
    def f(x):
        inner = lambda y: x * y  # noqa: E731
        return x * sg.grad(inner, mode="s2s")(2.0)

    with pytest.raises(sg.UnsupportedError, match="as constants") as refused:
        sg.grad(f, mode="s2s")(1.3)
    assert f"{__file__}:" in str(refused.value)


# autograd's test_direct differentiates library functions directly; a builtin without a
# signature (max, min) is refused by every transform that would read its parameters
REFUSING = {
    "grad": lambda mode: sg.grad(max, mode=mode)([0.3, 0.7]),
    "value_and_grad": lambda mode: sg.value_and_grad(min, mode=mode)([0.3, 0.7]),
    "vjp": lambda mode: sg.vjp(max, [0.3, 0.7], mode=mode),
    "jacobian": lambda mode: sg.jacobian(max, mode=mode)(np.array([0.3, 0.7])),
    "hessian": lambda mode: sg.hessian(max, mode=mode)(np.array([0.3, 0.7])),
    "hvp": lambda mode: sg.hvp(max, ([0.3, 0.7],), ([1.0, 0.0],), mode=mode),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transform", list(REFUSING))
def test_a_builtin_without_a_signature_is_refused_at_the_users_line(transform, mode):
    with pytest.raises(sg.UnsupportedError, match="builtin without a signature") as refused:
        REFUSING[transform](mode)
    assert f"{__file__}:" in str(refused.value)


@pytest.mark.parametrize("mode", MODES)
def test_forward_mode_of_a_builtin_runs_on_the_tape_or_is_refused(mode):
    xs = np.array([0.3, 0.7])
    if mode == "s2s":
        with pytest.raises(sg.UnsupportedError, match="builtin without a signature"):
            sg.jvp(max, (xs,), (np.ones(2),), mode=mode)
        return
    value, tangent = sg.jvp(max, (xs,), (np.array([0.5, 2.0]),), mode=mode)
    assert (value, tangent) == (0.7, 2.0)
    np.testing.assert_array_equal(sg.jacfwd(max, mode=mode)(xs), [0.0, 1.0])
