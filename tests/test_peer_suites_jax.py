"""What JAX's suite (``tests/api_test.py`` grad/jvp/vjp/vmap/custom_jvp/custom_vjp
semantics, the gradient checks of ``tests/lax_numpy_test.py`` and ``tests/linalg_test.py``)
asks, asked of s2sgrad's API: float32 arguments keep float32 derivatives, a custom
derivative with arguments it does not differentiate (``nondiff_argnums``), a custom forward
rule, ``stop_gradient`` at every order, ``vmap`` of ``grad``, ``jvp`` and ``hessian``,
``grad`` with keyword arguments, ``vjp`` of a structured output, ``jacobian`` against
``jacfwd``, and the gradients of NumPy and ``scipy.linalg`` functions those files check;
in every engine, on a first and a later call, against central differences in float64.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jacobian, numeric_jvp
from peer_suite_checks import MODES, check_function
from scipy import linalg as sla
from scipy import special

import s2sgrad as sg

rng = np.random.default_rng(1010045)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)  # mode="auto" may use the tape
        yield


def normal(*shape):
    return rng.standard_normal(shape)


def sym(x):
    return (x + np.swapaxes(x, -1, -2)) / 2.0


def spd(n):
    a = normal(n, n)
    return a @ a.T + n * np.eye(n)


def well_conditioned(n):
    return normal(n, n) + 3.0 * np.eye(n)


# --- dtypes: float32 in, float32 out ---------------------------------------------------

_TRAPEZOID = getattr(np, "trapezoid", None) or np.trapz  # NumPy 1.26: trapz only

FLOAT32_FUNCTIONS = [
    ("sin", lambda x: np.sum(np.sin(x))),
    ("python_scale", lambda x: np.sum(x * 2.5)),
    ("cube", lambda x: np.sum(x**3)),
    ("mean_square", lambda x: np.mean(x**2)),
    ("tanh_dot", lambda x: np.tanh(x) @ x),
    ("norm", np.linalg.norm),
    ("logsumexp", special.logsumexp),
    ("leaky_relu", lambda x: np.sum(np.where(x > 0, x, 0.1 * x))),
    ("softmax_weighted", lambda x: np.sum(np.exp(x) / np.sum(np.exp(x)) * x)),
    ("cumsum", lambda x: np.sum(np.cumsum(x) ** 2)),
    ("erf", lambda x: np.sum(special.erf(x))),
    ("inv", lambda x: np.sum(np.linalg.inv(np.outer(x, x) + 3 * np.eye(3, dtype=x.dtype)))),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, f", FLOAT32_FUNCTIONS, ids=[c[0] for c in FLOAT32_FUNCTIONS])
def test_float32_arguments_get_float32_derivatives(name, f, mode):
    x = normal(3).astype(np.float32)
    v = normal(3).astype(np.float32)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        gradient = call_twice(sg.grad(f, mode=mode), x)
    else:  # NumPy 1.x rounds some float32 steps of the generic code through float64
        transformed = sg.grad(f, mode=mode)
        gradient = transformed(x)
        np.testing.assert_allclose(transformed(x), gradient, rtol=1e-6)
    assert gradient.dtype == np.float32
    wide = np.asarray(x, dtype=np.float64)
    np.testing.assert_allclose(gradient, numeric_grad(f, [wide], 0), rtol=2e-3, atol=2e-4)
    _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":  # NumPy 1.x widens some 0-d results
        assert np.asarray(tangent).dtype == np.float32
    (product,) = sg.hvp(f, (x,), (v,), mode=mode)
    assert product.dtype == np.float32


# --- custom derivatives --------------------------------------------------------------


def clip_gradient(lo, hi, x):
    return x


@sg.derivative(of=clip_gradient)
def _clip_gradient_derivative(lo, hi, x):
    return x, lambda g: (None, None, np.clip(g, lo, hi))


def uses_clip(x):
    return np.sum(np.sin(clip_gradient(-0.1, 0.1, x * 3.0)))


@pytest.mark.parametrize("mode", MODES)
def test_a_custom_derivative_with_arguments_it_does_not_differentiate(mode):
    x = normal(5)
    expected = 3.0 * np.clip(np.cos(3.0 * x), -0.1, 0.1)
    np.testing.assert_allclose(call_twice(sg.grad(uses_clip, mode=mode), x), expected)


def test_forward_mode_of_a_reverse_only_custom_derivative_is_refused_by_s2s():
    x = normal(5)
    with pytest.raises(sg.NonDifferentiableError, match="jvp= companion") as refused:
        sg.jvp(uses_clip, (x,), (np.ones(5),), mode="s2s")
    assert f"{__file__}:" in str(refused.value)


def log1pexp(x):
    return np.log1p(np.exp(x))


def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * special.expit(x)


@sg.derivative(of=log1pexp, jvp=_log1pexp_jvp)
def _log1pexp_derivative(x):
    return log1pexp(x), lambda g: g * special.expit(x)


def uses_log1pexp(x):
    return np.sum(log1pexp(x) * x)


@pytest.mark.parametrize("mode", MODES)
def test_a_custom_forward_rule_serves_jvp_and_reverse_serves_grad(mode):
    x = np.array([-800.0, -1.0, 0.5, 30.0])  # exp(-800) underflows: the rule stays exact
    expected = np.log1p(np.exp(x)) + x * special.expit(x)
    np.testing.assert_allclose(call_twice(sg.grad(uses_log1pexp, mode=mode), x), expected)
    v = normal(4)
    _, tangent = sg.jvp(uses_log1pexp, (x,), (v,), mode=mode)
    np.testing.assert_allclose(tangent, expected @ v)


def _block(h):
    return np.tanh(h * 1.3 + 0.1)


checkpointed_block = sg.checkpoint(_block)


def through_a_checkpoint(x):
    return np.sum(checkpointed_block(checkpointed_block(x)) ** 2)


@pytest.mark.parametrize("f, name", [(uses_log1pexp, "log1pexp"), (through_a_checkpoint, "_block")])
def test_second_order_through_a_users_derivative_is_refused_by_s2s_with_advice_that_works(f, name):
    x, v = normal(3), normal(3)
    with pytest.raises(
        sg.UnsupportedError, match=f"gradient of {name},.*use mode='auto'"
    ) as refused:
        sg.hvp(f, (x,), (v,), mode="s2s")
    assert f"{__file__}:" in str(refused.value)
    gradient = sg.grad(f, mode="tape")
    expected = numeric_jvp(lambda t: gradient(x + t * v), [0.0], 0, 1.0, step=1e-5)
    for mode in ("auto", "tape"):
        (product,) = sg.hvp(f, (x,), (v,), mode=mode)
        np.testing.assert_allclose(product, expected, rtol=1e-5, atol=1e-7)


def x_times_stopped_square(x):
    return np.sum(x * sg.stop_gradient(x) ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_stop_gradient_stops_at_every_order(mode):
    x, v = normal(4), normal(4)
    np.testing.assert_allclose(call_twice(sg.grad(x_times_stopped_square, mode=mode), x), x**2)
    _, tangent = sg.jvp(x_times_stopped_square, (x,), (v,), mode=mode)
    np.testing.assert_allclose(tangent, x**2 @ v)
    # the gradient is stop_gradient(x) ** 2, whose own derivative is zero (as in JAX)
    (product,) = sg.hvp(x_times_stopped_square, (x,), (v,), mode=mode)
    np.testing.assert_allclose(product, 0.0, atol=1e-12)


def stopped_parameters(p, x):
    frozen = sg.stop_gradient(p)
    return np.sum(np.tanh(x @ p["w"]) * frozen["w"][0]) + np.sum(p["b"] ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_stop_gradient_of_a_dict_of_parameters(mode):
    p = {"w": normal(3, 2), "b": normal(2)}
    x = normal(4, 3)
    gradient = call_twice(sg.grad(stopped_parameters, mode=mode), p, x)

    def along_w(w):
        return np.sum(np.tanh(x @ w) * p["w"][0])

    np.testing.assert_allclose(gradient["w"], numeric_grad(along_w, [p["w"]], 0), rtol=1e-6)
    np.testing.assert_allclose(gradient["b"], 2 * p["b"])


# --- vmap ------------------------------------------------------------------------------


def example_loss(w, xi, yi):
    return (np.tanh(xi @ w) - yi) ** 2


@pytest.mark.parametrize("mode", MODES)
def test_vmap_of_grad_jvp_and_hessian_per_example(mode):
    w, xs, ys = normal(3), normal(5, 3), normal(5)
    per_example = sg.vmap(sg.grad(example_loss, mode=mode), in_axes=(None, 0, 0))
    expected = np.stack([numeric_grad(example_loss, [w, xs[i], ys[i]], 0) for i in range(5)])
    np.testing.assert_allclose(call_twice(per_example, w, xs, ys), expected, rtol=1e-5)
    hessians = sg.vmap(sg.hessian(example_loss, mode=mode), in_axes=(None, 0, 0))(w, xs, ys)
    gradient = sg.grad(example_loss, mode="tape")
    for i in range(5):
        wanted = numeric_jacobian(lambda u, i=i: gradient(u, xs[i], ys[i]), [w], 0)
        np.testing.assert_allclose(hessians[i], wanted, rtol=1e-4, atol=1e-7)

    def tangent_of(x, v):
        return sg.jvp(lambda u: np.sin(u) * u, (x,), (v,), mode=mode)[1]

    np.testing.assert_allclose(sg.vmap(tangent_of)(xs, xs), (np.cos(xs) * xs + np.sin(xs)) * xs)


def summed_over_examples(w, xs, ys):
    return np.sum(sg.vmap(example_loss, in_axes=(None, 0, 0))(w, xs, ys))


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_grad_of_vmap(mode):
    w, xs, ys = normal(3), normal(5, 3), normal(5)
    gradient = call_twice(sg.grad(summed_over_examples, mode=mode), w, xs, ys)
    np.testing.assert_allclose(gradient, numeric_grad(summed_over_examples, [w, xs, ys], 0))


def test_grad_of_vmap_is_refused_by_s2s_with_advice():
    w, xs, ys = normal(3), normal(5, 3), normal(5)
    with pytest.raises(sg.UnsupportedError, match="mode='auto'") as refused:
        sg.grad(summed_over_examples, mode="s2s")(w, xs, ys)
    assert f"{__file__}:" in str(refused.value)


# --- transforms' semantics ---------------------------------------------------------------


def scaled_sines(x, scale=1.0):
    return np.sum(np.sin(x) * scale)


@pytest.mark.parametrize("mode", MODES)
def test_grad_with_a_keyword_argument_differentiates_the_positional_one(mode):
    x = normal(4)
    np.testing.assert_allclose(
        call_twice(sg.grad(scaled_sines, mode=mode), x, scale=2.0), 2.0 * np.cos(x)
    )


def structured_output(x, y):
    return np.sin(x) * y, {"a": x @ y}


@pytest.mark.parametrize("mode", MODES)
def test_vjp_of_a_tuple_and_dict_output(mode):
    x, y = normal(4), normal(4)
    out, pullback = sg.vjp(structured_output, x, y, mode=mode)
    np.testing.assert_allclose(out[0], np.sin(x) * y)
    g = (normal(4), {"a": 2.0})
    gx, gy = pullback(g)
    np.testing.assert_allclose(gx, np.cos(x) * y * g[0] + 2.0 * y)
    np.testing.assert_allclose(gy, np.sin(x) * g[0] + 2.0 * x)


def outer_product(x):
    return np.outer(np.sin(x), x[:2])


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_reverse_and_forward_agree_with_differences(mode):
    x = normal(4)
    reverse = sg.jacobian(outer_product, mode=mode)(x)
    forward = sg.jacfwd(outer_product, mode=mode)(x)
    assert reverse.shape == forward.shape == (4, 2, 4)
    np.testing.assert_allclose(reverse, numeric_jacobian(outer_product, [x], 0), atol=1e-8)
    np.testing.assert_allclose(forward, reverse, atol=1e-12)


def weighted_squares(p):
    return np.sum(p["a"] ** 2 * p["b"])


@pytest.mark.parametrize("mode", MODES)
def test_hessian_of_a_dict_is_nested_by_argument_structure(mode):
    p = {"a": normal(2), "b": normal(2)}
    hessian = sg.hessian(weighted_squares, mode=mode)(p)
    assert_close(hessian["a"]["a"], np.diag(2 * p["b"]))
    assert_close(hessian["a"]["b"], np.diag(2 * p["a"]))
    assert_close(hessian["b"]["b"], np.zeros((2, 2)))


@pytest.mark.parametrize("mode", MODES)
def test_gradient_wrt_an_integer_is_a_type_error(mode):
    with pytest.raises(TypeError, match="integer"):
        sg.grad(lambda n: n * 2.0, mode=mode)(3)


def grad_inside(x):
    return sg.grad(lambda u: np.sin(u) * u)(x) * x


@pytest.mark.parametrize("mode", MODES)
def test_grad_of_a_function_calling_grad(mode):
    assert call_twice(sg.grad(grad_inside, mode=mode), 0.3) == pytest.approx(
        numeric_grad(grad_inside, [0.3], 0), rel=1e-6
    )


# --- gradient checks of lax_numpy_test.py and linalg_test.py ------------------------------

W = normal(4, 4)


def _add_at(x):
    y = np.zeros(3)
    np.add.at(y, [0, 1, 0, 2], x)
    return y


def lu_all_factors(a):
    p, lower, upper = sla.lu(a)
    return np.sum(lower * upper.T) + np.sum(np.sin(upper)) + np.sum(p @ lower * W[:3, :3])


PIVOTED = well_conditioned(3)[[2, 0, 1]]  # LAPACK swaps rows: P is not the identity

# (name, function, arguments)
CASES = [
    ("expm", lambda a: np.sum(sla.expm(a / 3) * W[:3, :3]), [normal(3, 3)]),
    ("expm_product", lambda a: np.sum(sla.expm(a / 3) @ a), [normal(3, 3)]),
    (
        "solve_triangular_lower",
        lambda a, b: np.sum(sla.solve_triangular(a, b, lower=True) * W[:3, :2]),
        [np.tril(well_conditioned(3)), normal(3, 2)],
    ),
    (
        "solve_triangular_trans",
        lambda a, b: np.sum(sla.solve_triangular(a, b, trans="T") * W[:3, 0]),
        [np.triu(well_conditioned(3)), normal(3)],
    ),
    (
        "cho_solve",
        lambda a, b: np.sum(sla.cho_solve(sla.cho_factor(sym(a)), b) * W[:3, 0]),
        [spd(3), normal(3)],
    ),
    ("cholesky_scipy", lambda a: np.sum(sla.cholesky(sym(a), lower=True) * W[:3, :3]), [spd(3)]),
    (
        "lu_solve",
        lambda a, b: np.sum(sla.lu_solve(sla.lu_factor(a), b) * W[:3, 0]),
        [well_conditioned(3), normal(3)],
    ),
    ("lu_lower", lambda a: np.sum(sla.lu(a)[1] * W[:3, :3]), [PIVOTED]),
    ("lu_upper", lambda a: np.sum(sla.lu(a)[2] * W[:3, :3]), [PIVOTED]),
    ("lu_all_factors", lu_all_factors, [PIVOTED]),
    ("polar_u", lambda a: np.sum(sla.polar(a)[0] * W[:3, :3]), [well_conditioned(3)]),
    ("polar_p_left", lambda a: np.sum(sla.polar(a, "left")[1] * W[:3, :3]), [normal(3, 3)]),
    (
        "polar_tall",
        lambda a: np.sum(sla.polar(a)[0] * W[:4, :2]) + np.sum(sla.polar(a)[1]),
        [normal(4, 2)],
    ),
    ("sqrtm", lambda a: np.sum(np.real(sla.sqrtm(sym(a))) * W[:3, :3]), [spd(3)]),
    ("logm", lambda a: np.sum(np.real(sla.logm(sym(a))) * W[:3, :3]), [spd(3)]),
    ("inv_scipy", lambda a: np.sum(sla.inv(a) * W[:3, :3]), [well_conditioned(3)]),
    ("det_scipy", sla.det, [well_conditioned(3)]),
    ("eigh_vectors", lambda a: np.sum(np.abs(sla.eigh(sym(a))[1][:, 0])), [spd(3)]),
    ("qr_reduced_q", lambda a: np.sum(np.linalg.qr(a)[0] * W[:4, :2]), [normal(4, 2)]),
    ("svd_vt", lambda a: np.sum(np.abs(np.linalg.svd(a)[2][0])), [normal(3, 3)]),
    ("cumprod", lambda x: np.sum(np.cumprod(x, axis=0) * W[:3, :2]), [normal(3, 2)]),
    ("diff_n2", lambda x: np.sum(np.diff(x, n=2, axis=1) * W[:2, :2]), [normal(2, 4)]),
    (
        "interp_x",
        lambda x: np.sum(np.interp(x, [0.0, 0.5, 1.0], [1.0, 3.0, 2.0]) * W[0, :3]),
        [rng.uniform(0.05, 0.45, 3)],
    ),
    ("interp_fp", lambda fp: np.sum(np.interp([0.2, 0.7], [0.0, 0.5, 1.0], fp)), [normal(3)]),
    ("polyval", lambda p, x: np.sum(np.polyval(p, x) * W[0, :3]), [normal(4), normal(3)]),
    ("trapezoid", lambda y, x: _TRAPEZOID(y**2, x), [normal(5), np.sort(normal(5))]),
    (
        "convolve_same",
        lambda a, b: np.sum(np.convolve(a, b, mode="same") * W[0, :4]),
        [normal(4), normal(3)],
    ),
    (
        "correlate_full",
        lambda a, b: np.sum(np.correlate(a, b, mode="full") * np.arange(6.0)),
        [normal(4), normal(3)],
    ),
    ("ptp", lambda x: np.ptp(x * W[0, :4]), [normal(4)]),
    ("median", lambda x: np.median(x * W[:, 0]), [normal(4)]),
    ("percentile", lambda x: np.percentile(x, 30.0), [normal(5)]),
    (
        "quantile_axis",
        lambda x: np.sum(np.quantile(x, [0.25, 0.6], axis=1) * W[:2, :2]),
        [normal(2, 5)],
    ),
    (
        "clip_array_bounds",
        lambda x, lo: np.sum(np.clip(x, lo, lo + 1.0) ** 2),
        [normal(4), normal(4)],
    ),
    ("heaviside_times", lambda x: np.sum(np.heaviside(x, 0.5) * x**2), [normal(4)]),
    ("floor_round", lambda x: np.sum(np.floor(x) * x + np.round(x * 3) * x), [normal(4) + 0.13]),
    ("logaddexp_reduce", lambda x: np.logaddexp.reduce(x), [normal(4)]),
    ("add_reduce_axis", lambda x: np.sum(np.add.reduce(x, axis=1) ** 2), [normal(3, 2)]),
    ("multiply_accumulate", lambda x: np.sum(np.multiply.accumulate(x) * W[0]), [normal(4)]),
    ("maximum_accumulate", lambda x: np.sum(np.maximum.accumulate(x) * W[0]), [normal(4)]),
    ("add_outer", lambda x, y: np.sum(np.add.outer(x, y) ** 2), [normal(3), normal(2)]),
    ("add_at", lambda x: np.sum(np.sin(_add_at(x))), [normal(4)]),
    ("i0_sinc", lambda x: np.sum(np.i0(x) * np.sinc(x)), [normal(3)]),
    ("vander", lambda x: np.sum(np.vander(x, 3) * W[:3, :3]), [normal(3)]),
    ("cov", lambda x: np.sum(np.cov(x) * W[:2, :2]), [normal(2, 5)]),
    ("corrcoef", lambda x: np.sum(np.corrcoef(x) * W[:2, :2]), [normal(2, 5)]),
    (
        "einsum_ellipsis",
        lambda x, y: np.sum(np.einsum("...ij,...jk->...ik", x, y) * W[:2, :2]),
        [normal(3, 2, 3), normal(3, 3, 2)],
    ),
    (
        "logsumexp_weights",
        lambda x, b: special.logsumexp(x, b=b),
        [normal(3), np.abs(normal(3)) + 0.1],
    ),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, f, args", CASES, ids=[c[0] for c in CASES])
def test_numpy_and_scipy_linalg_gradients(name, f, args, mode):
    check_function(f, args, mode, key=f)


# (name, function, arguments, what the refusal says)
REFUSED = [
    (
        "qr_complete",
        lambda a: np.sum(np.linalg.qr(a, mode="complete")[0] * W),
        [normal(4, 2)],
        "mode='complete'",
    ),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, f, args, match", REFUSED, ids=[c[0] for c in REFUSED])
def test_what_s2sgrad_does_not_differentiate_is_refused_at_the_users_line(
    name, f, args, match, mode
):
    with pytest.raises(sg.S2SGradError, match=match) as refused:
        sg.grad(f, mode=mode)(*args)
    assert f"{__file__}:" in str(refused.value)


def lu_of(a, **options):
    return np.sum(sla.lu(a, **options)[-1] ** 2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "a, options, what",
    [
        (normal(3, 2), {}, r"shape \(3, 2\)"),
        (normal(2, 3, 3), {}, r"shape \(2, 3, 3\)"),
        (well_conditioned(3), {"permute_l": True}, "permute_l=True"),
        (well_conditioned(3), {"p_indices": True}, "p_indices=True"),
    ],
)
def test_lu_of_what_its_rule_does_not_cover_is_refused_at_the_users_line(a, options, what, mode):
    with pytest.raises(sg.NonDifferentiableError, match=f"scipy.linalg.lu .*{what}") as refused:
        sg.grad(lu_of, mode=mode)(a, **options)
    assert f"{__file__}:" in str(refused.value)


def complex_polar(a):
    return np.sum(np.abs(sla.polar(a * (1.0 + 0.5j))[0]))


@pytest.mark.parametrize("mode", MODES)
def test_polar_of_a_complex_matrix_is_refused_at_the_users_line(mode):
    with pytest.raises(sg.S2SGradError, match="polar .*complex") as refused:
        sg.grad(complex_polar, mode=mode)(well_conditioned(3))
    assert f"{__file__}:" in str(refused.value)
