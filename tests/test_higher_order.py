"""Forward mode, Jacobians, Hessians and derivatives of any order, against finite differences."""

from __future__ import annotations

import linecache

import numpy as np
import pytest
from oracle import directional_derivative, numeric_grad, numeric_jacobian

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning

RNG = np.random.default_rng(11)


def helper(u, v):
    return np.tanh(u) * v


def straight(x, y):
    return np.sin(x * y) + np.exp(-(x**2)) * y


def branches(x, y):
    if np.sum(x) > 0:
        return x * y
    return np.cos(x) - y


def loops(x, y):
    z = x
    for i in range(3):
        z = np.sin(z) * y + 0.1 * i
    while np.sum(z**2) < 20.0:
        z = z * 1.5 + y
        if np.sum(z) > 100.0:
            break
    return z


def in_place(x, y):
    out = np.zeros((2, len(x)))
    out[0] = x * y
    out[1, :] = np.cos(x)
    out[:, 0] += y[0]
    return out


def calls(x, y):
    return helper(x, y) + helper(y, x) * 2.0


def writes_into_a_broadcast(x, y):
    out = np.ones((2, 1)) * x  # its tangent is a broadcast of dx: read-only
    out[..., :1] = np.tanh(out[..., -1:]) * y[0]
    return out


def writes_into_a_copy(x, y):
    out = x + 0.0  # its tangent may be the caller's tangent of x itself
    for i in range(2):
        out[i] = out[i] * y[i]
    return out


FUNCTIONS = [
    straight,
    branches,
    loops,
    in_place,
    calls,
    writes_into_a_broadcast,
    writes_into_a_copy,
]


@pytest.mark.parametrize("function", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_jvp_matches_finite_differences_and_vjp(function, sign):
    x = sign * RNG.uniform(0.2, 0.9, size=3)
    y = RNG.uniform(0.2, 0.9, size=3)
    tx, ty = RNG.standard_normal(3), RNG.standard_normal(3)
    tx_before, ty_before = tx.copy(), ty.copy()
    out, tangent = sg.jvp(function, (x, y), (tx, ty), mode="s2s")
    np.testing.assert_array_equal(tx, tx_before)  # the caller's tangents are never changed
    np.testing.assert_array_equal(ty, ty_before)
    np.testing.assert_allclose(out, function(x, y))
    np.testing.assert_allclose(
        tangent,
        directional_derivative(lambda xy: function(*xy), (x, y), (tx, ty)),
        rtol=1e-5,
        atol=1e-7,
    )
    u = RNG.standard_normal(np.shape(out))
    _, pullback = sg.vjp(function, x, y, mode="s2s")
    cx, cy = pullback(u)
    np.testing.assert_allclose(np.sum(u * tangent), np.sum(cx * tx) + np.sum(cy * ty), rtol=1e-9)


def test_show_forward_prints_tangent_code(capsys):
    sg.show(straight, forward=True)
    text = capsys.readouterr().out
    assert "def straight_jvp" in text and "# tangent of:" in text


@pytest.mark.parametrize(
    "f, x, derivatives",
    [
        (lambda x: x**5, 1.3, lambda x: (5 * x**4, 20 * x**3, 60 * x**2)),
        (lambda x: np.sin(x), 0.7, lambda x: (np.cos(x), -np.sin(x), -np.cos(x))),
    ],
)
def test_derivatives_of_any_order(f, x, derivatives):
    first, second, third = sg.grad(f), sg.grad(sg.grad(f)), sg.grad(sg.grad(sg.grad(f)))
    expected = derivatives(x)
    for transform, value in zip((first, second, third), expected):
        assert transform(x) == pytest.approx(value, rel=1e-10)
        assert transform(x) == pytest.approx(value, rel=1e-10)  # specialised second call


def small_loop(x):
    y = x
    for _ in range(3):
        y = np.sin(y) * x
    return y


def test_third_derivative_through_a_loop():
    x = 0.8
    third = sg.grad(sg.grad(sg.grad(small_loop)))
    second = sg.grad(sg.grad(small_loop))
    expected = directional_derivative(second, x, 1.0, step=1e-4)
    assert third(x) == pytest.approx(expected, rel=1e-6)


def test_second_derivatives_through_branches_and_calls():
    def f(x):
        y = helper(x, x) if x > 0 else x**3
        return y * np.exp(x)

    for x in (0.6, -0.6):
        second = sg.grad(sg.grad(f))(x)
        expected = directional_derivative(sg.grad(f), x, 1.0, step=1e-4)
        assert second == pytest.approx(expected, rel=1e-6)


def two_layer_loss(W1, W2, x, y):
    h = np.tanh(x @ W1)
    return np.mean((h @ W2 - y) ** 2)


def test_hessian_equals_jacobian_of_gradient_and_newton_step_lowers_loss():
    W1, W2 = RNG.standard_normal((3, 4)) * 0.5, RNG.standard_normal((4, 2)) * 0.5
    x, y = RNG.standard_normal((16, 3)), RNG.standard_normal((16, 2))
    H = sg.hessian(two_layer_loss)(W1, W2, x, y)
    assert H.shape == (3, 4, 3, 4)
    J = sg.jacobian(sg.grad(two_layer_loss))(W1, W2, x, y)
    np.testing.assert_allclose(H, J, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(H, H.transpose(2, 3, 0, 1), atol=1e-10)
    v = RNG.standard_normal(W1.shape)
    (product,) = sg.hvp(lambda W: two_layer_loss(W, W2, x, y), (W1,), (v,))
    np.testing.assert_allclose(product, np.tensordot(H, v, axes=2), rtol=1e-8, atol=1e-10)
    g = sg.grad(two_layer_loss)(W1, W2, x, y)
    matrix = H.reshape(12, 12)
    lowest = np.linalg.eigvalsh(matrix).min()  # a network's Hessian need not be definite:
    matrix = matrix + (max(0.0, -lowest) + 0.1) * np.eye(12)  # shift it (Levenberg)
    step = np.linalg.solve(matrix, g.ravel()).reshape(W1.shape)
    assert two_layer_loss(W1 - step, W2, x, y) < two_layer_loss(W1, W2, x, y)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_hessian_of_several_arguments_has_blocks_in_jaxs_layout(mode):
    """``H[i][j]`` differentiates wrt arguments i then j, of shape arg_i + arg_j (the
    blocks were [j][i], laid out arg_i + arg_j: H[0][1] had b's shape first)."""
    W1, W2 = RNG.standard_normal((3, 4)) * 0.5, RNG.standard_normal((4, 2)) * 0.5
    x, y = RNG.standard_normal((16, 3)), RNG.standard_normal((16, 2))
    arguments = (W1, W2)
    H = sg.hessian(two_layer_loss, wrt=(0, 1), mode=mode)(W1, W2, x, y)
    for i in range(2):
        for j in range(2):

            def gradient_i(value, i=i, j=j):
                args = [W1, W2, x, y]
                args[j] = value
                return sg.grad(two_layer_loss, wrt=i, mode="tape")(*args)

            expected = numeric_jacobian(gradient_i, [arguments[j]], 0)
            assert H[i][j].shape == arguments[i].shape + arguments[j].shape
            np.testing.assert_allclose(H[i][j], expected, rtol=1e-5, atol=1e-7)


def test_jacobian_and_jacfwd_agree_with_finite_differences():
    def f(x, W):
        return np.tanh(W @ x) * x[:2]

    x, W = RNG.standard_normal(3), RNG.standard_normal((2, 3))
    reverse = sg.jacobian(f)(x, W)
    forward = sg.jacfwd(f)(x, W)
    assert reverse.shape == forward.shape == (2, 3)
    np.testing.assert_allclose(reverse, forward, rtol=1e-10)
    np.testing.assert_allclose(reverse, numeric_jacobian(f, (x, W), 0), rtol=1e-6, atol=1e-8)
    wrt_matrix = sg.jacobian(f, wrt=1)(x, W)
    assert wrt_matrix.shape == (2, 2, 3)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_jacfwd_of_a_dict_of_parameters_in_either_engine(mode):
    def layer(params, x):
        return np.tanh(x @ params["w"] + params["b"])

    params = {"w": RNG.standard_normal((3, 2)) * 0.5, "b": RNG.standard_normal(2)}
    x = RNG.standard_normal((4, 3))
    forward = sg.jacfwd(layer, mode=mode)(params, x)
    reverse = sg.jacobian(layer, mode=mode)(params, x)
    for key, value in params.items():
        assert forward[key].shape == (4, 2) + value.shape
        np.testing.assert_allclose(forward[key], reverse[key], rtol=1e-9, atol=1e-12)
        numeric = numeric_jacobian(lambda v, key=key: layer({**params, key: v}, x), [value], 0)
        np.testing.assert_allclose(forward[key], numeric, rtol=1e-6, atol=1e-8)


def test_input_gradient_regularisation_with_grad_of_grad():
    def loss(W, x):
        return np.sum(np.tanh(x @ W) ** 2)

    def penalty(W, x):
        input_gradient = sg.grad(loss, wrt=1)(W, x)
        return np.sum(input_gradient**2)

    W, x = RNG.standard_normal((3, 2)) * 0.7, RNG.standard_normal((4, 3))
    gradient = sg.grad(penalty)(W, x)
    np.testing.assert_allclose(gradient, numeric_grad(penalty, [W, x], 0), rtol=1e-5, atol=1e-8)


def test_custom_derivative_in_forward_mode_needs_a_jvp():
    def softplus(x):
        return np.log1p(np.exp(x))

    @sg.derivative(of=softplus)
    def softplus_vjp(x):
        value = softplus(x)
        return value, lambda g: g / (1.0 + np.exp(-x))

    def f(x):
        return softplus(x) * 2.0

    x = np.array([0.3, -0.2])
    with pytest.raises(sg.NonDifferentiableError, match="softplus"):
        sg.jvp(f, (x,), (np.ones(2),), mode="s2s")

    def logistic(x):
        return 1.0 / (1.0 + np.exp(-x))

    @sg.derivative(
        of=logistic,
        jvp=lambda primals, tangents: (
            logistic(primals[0]),
            tangents[0] * logistic(primals[0]) * (1 - logistic(primals[0])),
        ),
    )
    def logistic_vjp(x):
        value = logistic(x)
        return value, lambda g: g * value * (1 - value)

    def h(x):
        return logistic(x) * 3.0

    _, tangent = sg.jvp(h, (x,), (np.ones(2),), mode="s2s")
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(tangent, 3.0 * s * (1 - s))


def test_grad_of_a_function_that_calls_vjp_and_jvp():
    def uses_vjp(x):
        _, pullback = sg.vjp(np.sin, x)
        (g,) = pullback(np.ones_like(x))
        return np.sum(g * x)

    def uses_jvp(x):
        _, tangent = sg.jvp(lambda v: v**3, (x,), (np.ones_like(x),))
        return np.sum(tangent)

    x = RNG.uniform(0.2, 1.0, size=3)
    with pytest.warns(UserWarning):  # both run on the tape, and say so once
        np.testing.assert_allclose(sg.grad(uses_vjp)(x), np.cos(x) - x * np.sin(x))
        np.testing.assert_allclose(sg.grad(uses_jvp)(x), 6 * x)


def test_jacobians_and_hessians_over_containers_of_arrays():
    def f(params, x):
        return np.tanh(x @ params["w"] + params["b"])

    def loss(params, x):
        return np.sum(f(params, x) ** 2)

    params = {"w": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2)}
    x = RNG.standard_normal((4, 3))
    reverse = sg.jacobian(f)(params, x)
    forward = sg.jacfwd(f)(params, x)
    assert reverse["w"].shape == (4, 2, 3, 2) and reverse["b"].shape == (4, 2, 2)
    for key in params:
        np.testing.assert_allclose(reverse[key], forward[key], rtol=1e-10, atol=1e-12)
    numeric = numeric_jacobian(lambda w: f({**params, "w": w}, x), [params["w"]], 0)
    np.testing.assert_allclose(reverse["w"], numeric, rtol=1e-6, atol=1e-8)
    H = sg.hessian(loss)(params, x)
    assert H["w"]["w"].shape == (3, 2, 3, 2) and H["w"]["b"].shape == (3, 2, 2)
    np.testing.assert_allclose(H["w"]["b"], H["b"]["w"].transpose(1, 2, 0), rtol=1e-8, atol=1e-10)


def test_repeated_hvp_reuses_generated_code():
    def f(x):
        return np.sum(np.sin(x) * x**2)

    def generated_files():
        return {name for name in linecache.cache if "s2sgrad-" in name or "<s2sgrad" in name}

    x = RNG.standard_normal(3)
    before = generated_files()
    for _ in range(2):  # the generic code, then the code specialised to these shapes
        sg.hvp(f, (x,), (x,))
    made = generated_files()
    assert made - before  # the check below sees code being made
    for _ in range(3):
        sg.hvp(f, (x,), (x,))
    assert generated_files() == made


def test_second_derivative_through_a_custom_derivative_is_refused_or_taped_not_zero():
    def logistic(x):
        return 1.0 / (1.0 + np.exp(-x))

    @sg.derivative(of=logistic)
    def logistic_derivative(x):
        value = logistic(x)
        return value, lambda g: g * value * (1 - value)

    with pytest.raises(sg.NonDifferentiableError, match="custom derivative"):
        sg.grad(sg.grad(logistic, mode="s2s"), mode="s2s")(0.3)
    # mode="auto" has the tape record logistic itself, through the custom pullback
    s = logistic(0.3)
    with pytest.warns(FallbackWarning, match="custom derivative"):
        second = sg.grad(sg.grad(logistic))(0.3)
    assert second == pytest.approx(s * (1 - s) * (1 - 2 * s), rel=1e-10)


def test_tape_over_tape_through_function_transforms():
    def f(x):
        return np.sin(x) * x

    second = sg.grad(sg.grad(f, mode="tape"), mode="tape")
    assert second(0.3) == pytest.approx(-np.sin(0.3) * 0.3 + 2 * np.cos(0.3))


class _Scaled:
    def __init__(self, scale):
        self.scale = scale

    def apply(self, x, w):
        return np.tanh(w @ x) * self.scale


@pytest.mark.parametrize("jacobian", [sg.jacobian, sg.jacfwd])
def test_jacobian_of_a_method_by_parameter_name(jacobian):
    model = _Scaled(2.0)
    x, w = RNG.standard_normal(3), RNG.standard_normal((2, 3))
    by_name = jacobian(model.apply, wrt="w")(x, w)
    by_index = jacobian(model.apply, wrt=1)(x, w)
    assert by_name.shape == (2, 2, 3)
    np.testing.assert_allclose(by_name, by_index)
    np.testing.assert_allclose(jacobian(model.apply, wrt="x")(x, w), jacobian(model.apply)(x, w))


def test_hessian_through_a_slice_write_of_a_broadcast():
    # the gradient restores v[..., :1] in place; its JVP writes into the tangent of v, which
    # began as a read-only broadcast
    def f(x, y):
        v = np.ones_like(y) * x - y
        v[..., :1] = np.tanh(v[..., -1:]) * 2.0
        return np.sum(np.sin(v))

    x, y = RNG.uniform(-1.5, 1.5, size=(3, 1, 2)), RNG.uniform(-1.5, 1.5, size=(4, 1))
    hessian = sg.hessian(f, mode="s2s")(x, y)
    gradient = sg.grad(f, mode="s2s")
    numeric = numeric_jacobian(gradient, (x, y), 0, step=1e-5)
    np.testing.assert_allclose(hessian, numeric, rtol=1e-5, atol=1e-7)


def two_argument_helper(a, b):
    return a * b + np.sin(a)


def calls_a_two_argument_helper(x):
    return np.sum(two_argument_helper(x, 2.0) * x)


def calls_it_with_two_active_arguments(x):
    return np.sum(two_argument_helper(x, np.cos(x)) * x)


@pytest.mark.parametrize("f", [calls_a_two_argument_helper, calls_it_with_two_active_arguments])
@pytest.mark.parametrize("mode", ["auto", "s2s", "tape"])
def test_grad_of_grad_through_a_helper_of_two_arguments(mode, f):
    # the helper's saved values got None cotangents, which its second derivative added
    x = RNG.normal(size=3)
    outer = sg.grad(lambda x: np.sum(sg.grad(f, mode=mode)(x)), mode=mode)
    expected = numeric_grad(lambda x: np.sum(sg.grad(f, mode="tape")(x)), (x,), 0)
    np.testing.assert_allclose(outer(x), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(outer(x), expected, rtol=1e-5, atol=1e-7)
    y = RNG.normal()
    second = sg.grad(sg.grad(lambda y: f(y * np.ones(3)), mode=mode), mode=mode)
    expected = numeric_grad(sg.grad(lambda y: f(y * np.ones(3)), mode="tape"), (y,), 0)
    np.testing.assert_allclose(second(y), expected, rtol=1e-5, atol=1e-7)


def _decaying_sum(w, x):
    total = x
    for k in range(3):
        total = total + np.exp(-x * w * k)
    return np.sum(total)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_hvp_through_a_lambda_over_a_helper_with_a_loop(mode):
    # forward mode over the helper's backward sweep reads the loop's range from the saved
    # values: its elements are integers, with zero tangents
    rng = np.random.default_rng(4)
    x, w, v = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2)
    (product,) = sg.hvp(lambda w: _decaying_sum(w, x), (w,), (v,), mode=mode)
    gradient = sg.grad(_decaying_sum, mode="tape")
    expected = directional_derivative(lambda w: gradient(w, x), w, v)
    np.testing.assert_allclose(product, expected, rtol=1e-5, atol=1e-8)


def _filled_after_use(x):
    t = np.ones(3)
    y = np.sum(np.sin(x) * t)
    t.fill(2.0)  # the transformer refuses this; the tape differentiates it
    return y + np.sum(np.sin(x) * t)


def test_an_inner_auto_gradient_that_needs_the_tape_takes_it_inside_an_outer_auto_one():
    import warnings

    v = np.array([1.0, 0.5, -0.3])

    def outer(x):
        return np.sum(sg.grad(_filled_after_use, mode="auto")(x) * v)

    x = np.array([0.3, -0.2, 0.8])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = sg.grad(outer, mode="auto")(x)
        expected = numeric_grad(outer, (x,), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


def _product_of(x, y):
    return x * y


def _loss_of_args(*args):
    return np.sum(_product_of(*args) ** 2)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_second_order_wrt_several_entries_of_star_args(mode):
    # the gradient of a *args function wrt (0, 1) hands back entries of one tuple: the
    # VJP of that step got the tuple's cotangent as one array (a NumPy ValueError in s2s)
    x, y = RNG.normal(size=(2, 3)), RNG.normal(size=3)
    v = (RNG.normal(size=(2, 3)), RNG.normal(size=3))
    gradient = sg.grad(_loss_of_args, wrt=(0, 1), mode=mode)
    _, pullback = sg.vjp(gradient, x, y, mode=mode)
    got = pullback(v)
    reference = sg.grad(_loss_of_args, wrt=(0, 1), mode="tape")
    for index in range(2):

        def projected(*args):
            return np.sum(reference(*args)[0] * v[0]) + np.sum(reference(*args)[1] * v[1])

        expected = numeric_grad(projected, (x, y), index)
        np.testing.assert_allclose(got[index], expected, rtol=1e-5, atol=1e-7)


def _clipped_bounce(h, v):
    v = np.where(h < 0, -0.9 * v, v)
    return np.clip(h, 0.0, None) * v + h**3


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_hvp_of_float_arguments_gives_floats(mode):
    # the tape's forward pass over its gradient of np.clip / np.where gave 0-d arrays
    products = sg.hvp(_clipped_bounce, (1.0, 0.3), (1.0, 1.0), mode=mode)
    assert [type(p) for p in products] == [float, float]
    np.testing.assert_allclose(products, (7.0, 1.0))
