"""Checks the reduction rules (and their runtime helpers) against finite differences.

Most cases go through ``rulecheck.check_rule``, over the shapes ``(5,)``, ``(3, 4)`` and
``(2, 3, 4)`` and every ``axis`` and ``keepdims``. ``np.average(..., returned=True)`` has two
outputs and goes through ``check_two_outputs``. Ties, zeros in products and the split of a
cotangent among equal maxima are checked against exact values.
``test_every_rule_is_tested`` fails for a rule added without a test.
"""

import numpy as np
import pytest
import scipy.linalg
from oracle import numeric_jvp, numeric_vjp
from rulecheck import assert_every_rule_is_tested, case, check_rule

from s2sgrad.errors import UnsupportedError
from s2sgrad.rules import get_rule
from s2sgrad.runtime import (
    exclusive_cumprod,
    group_axes,
    linear_recurrence,
    nonzero_norm,
    norm_direction,
    prod_of_others,
    shift_along,
    tie_share,
    ungroup_axes,
)

RULE_MODULES = ("s2sgrad.rules.reductions", "s2sgrad.runtime.reductions")

_rng = np.random.default_rng(7)


def r(*shape):
    """Random float64 values, distinct almost surely (so max/min have no ties)."""
    return _rng.standard_normal(shape)


def positive(*shape):
    return _rng.uniform(0.5, 2.0, shape)


AXES = {
    (5,): [None, 0, -1, (0,)],
    (3, 4): [None, 0, 1, -1, (0, 1), (-1, 0)],
    (2, 3, 4): [None, 0, 1, 2, -1, (0, 2), (1, -1), (0, 1, 2)],
}


def every_axis(primitives, make=r, **extra):
    """A case per primitive, shape, axis and keepdims."""
    return [
        case(primitive, make(*shape), axis=axis, keepdims=keepdims, **extra)
        for primitive in primitives
        for shape, axes in AXES.items()
        for axis in axes
        for keepdims in (False, True)
    ]


def with_nan(*shape):
    x = r(*shape)
    x[(0,) * len(shape)] = np.nan
    return x


REDUCTIONS = every_axis([np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.ptp])
METHODS = every_axis([np.ndarray.sum, np.ndarray.mean, np.ndarray.prod])
METHODS += every_axis([np.ndarray.max, np.ndarray.min])
MOMENTS = [
    c
    for ddof in (0, 1)
    for c in every_axis([np.var, np.std, np.ndarray.var, np.ndarray.std], ddof=ddof)
]
NAN_REDUCTIONS = every_axis([np.nansum, np.nanmean], make=with_nan)

x34 = r(3, 4)
x234 = r(2, 3, 4)
with_zero = r(3, 4)
with_zero[1, 2] = 0.0
two_zeros = r(2, 3, 4)
two_zeros[0, 1, 2] = two_zeros[0, 2, 3] = 0.0

OTHER_CASES = [
    # Products with zeros in the input
    case(np.prod, with_zero),
    case(np.prod, with_zero, axis=1),
    case(np.prod, with_zero, axis=0, keepdims=True),
    case(np.prod, two_zeros),
    case(np.prod, two_zeros, axis=(1, 2)),
    case(np.prod, np.array(3.0)),
    case(np.prod, r(3), axis=()),
    case(np.sum, 2.5),
    case(np.sum, r(3, 4), 1, None, None, False, 0.7, _jvp=False),  # JVP: test_closed_world
    case(np.mean, r(3, 4), 1, None, None, True),
    # Cumulative sums and products
    *[
        case(primitive, x, axis=axis)
        for primitive in (np.cumsum, np.cumprod, np.ndarray.cumsum, np.ndarray.cumprod)
        for x in (r(5), x34, x234)
        for axis in [None, *range(x.ndim), -1]
    ],
    case(np.cumprod, with_zero, axis=1),
    case(np.cumprod, with_zero),
    case(np.cumprod, two_zeros, axis=2),
    case(np.cumprod, two_zeros, axis=-2),
    # Traces
    case(np.trace, r(3, 3)),
    case(np.trace, r(3, 5), 1),
    case(np.trace, r(4, 3), offset=-1),
    case(np.trace, x234),
    case(np.trace, x234, 0, 2, 0),
    case(np.trace, x234, offset=1, axis1=-1, axis2=1),
    case(np.ndarray.trace, r(3, 3)),
    case(np.ndarray.trace, x234, 1, 1, 2),
    # Vector norms
    *[
        case(np.linalg.norm, x, ord=order)
        for x in (r(5), np.array([0.5, -1.5, 2.0, -0.7]))
        for order in (None, 2, 1, np.inf, -np.inf, 3, -1, 0.5, 0)
    ],
    case(np.linalg.norm, x34, axis=1),
    case(np.linalg.norm, x34, 1, 0),
    case(np.linalg.norm, x34, np.inf, axis=-1, keepdims=True, _argnums=[0]),
    case(np.linalg.norm, x234, 3, axis=1),
    case(np.linalg.norm, x234, -np.inf, axis=0, _argnums=[0]),
    case(np.linalg.norm, x234),
    case(np.linalg.norm, x234, keepdims=True),
    # Matrix norms
    *[
        case(np.linalg.norm, x34, ord=order)
        for order in ("fro", None, "nuc", 2, -2, 1, -1, np.inf, -np.inf)
    ],
    case(np.linalg.norm, x234, "fro", (0, 2)),
    # SciPy's norm has NumPy's rules
    case(scipy.linalg.norm, x34, axis=1),
    case(scipy.linalg.norm, x34, "fro"),
    case(scipy.linalg.norm, x234, 2, axis=-1, keepdims=True),
    case(np.linalg.norm, x234, 1, (2, 0), keepdims=True),
    case(np.linalg.norm, x234, -np.inf, axis=(-1, -2), _argnums=[0]),
    case(np.linalg.norm, x234, "nuc", axis=(1, 2)),
    case(np.linalg.norm, x234, 2, axis=(0, 1), keepdims=True),
    # Weighted averages
    case(np.average, x34),
    case(np.average, x34, 1),
    case(np.average, x234, (0, 2), keepdims=True),
    case(np.average, x34, None, positive(3, 4)),
    case(np.average, x234, 1, positive(2, 3, 4)),
    case(np.average, x234, -1, positive(4)),
    case(np.average, x234, 0, positive(2), keepdims=True),
    # Runtime helpers
    case(shift_along, x34),
    case(shift_along, x234, 1, True),
    case(shift_along, x234, axis=0, fill=1.0),
    case(linear_recurrence, r(6), r(6)),
    case(linear_recurrence, r(3, 5), r(3, 5), 1, True),
    case(linear_recurrence, r(5, 2), r(5, 2), axis=0),
    case(linear_recurrence, with_zero, r(3, 4), -1),
    case(exclusive_cumprod, r(6)),
    case(exclusive_cumprod, with_zero, 0, True),
    case(exclusive_cumprod, x234, axis=1),
    case(group_axes, x234),
    case(group_axes, x234, (0, 2)),
    case(group_axes, x234, -2),
    case(ungroup_axes, r(3, 8), x234, (2, 0), _argnums=[0]),
    case(ungroup_axes, r(24), x234, _argnums=[0]),
    case(prod_of_others, r(5)),
    case(prod_of_others, two_zeros),
    case(prod_of_others, two_zeros, (1, 2)),
    case(prod_of_others, with_zero, 0),
    case(tie_share, r(3, 1), np.eye(3, 4, dtype=bool), 1, np.float64, _argnums=[0]),
    case(tie_share, r(1, 4), np.array([[1, 0, 1, 1], [1, 1, 0, 1]], bool), 0, "d", _argnums=[0]),
    case(tie_share, r(2, 1, 1), r(2, 3, 4) > 0, (1, 2), np.float64, _argnums=[0]),
    case(nonzero_norm, positive(4)),
    case(norm_direction, r(5), 1.7, 3),
    case(norm_direction, r(3, 4), positive(3, 1), 2, 1),
    case(norm_direction, r(3, 4), positive(1, 1), None),
    case(norm_direction, r(2, 3, 4), positive(2, 1, 1), "fro", (1, 2)),
    case(norm_direction, r(5), 1.3, np.inf, _argnums=[0]),
    case(norm_direction, r(3, 4), 2.0, 1, _argnums=[0]),
    case(norm_direction, r(3, 4), positive(1, 4), -np.inf, 0, _argnums=[0]),
]

CASES = REDUCTIONS + METHODS + MOMENTS + NAN_REDUCTIONS + OTHER_CASES


@pytest.mark.parametrize("primitive, args, kwargs, argnums, jvp", CASES)
def test_rule(primitive, args, kwargs, argnums, jvp):
    check_rule(primitive, *args, argnums=argnums, kwargs=kwargs, jvp=jvp)


# ------------------------------------------------------------------------- exact values


@pytest.mark.parametrize("primitive", [np.max, np.amax, np.ndarray.max])
def test_ties_split_the_cotangent_equally(primitive):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    vjp = get_rule(primitive).vjp
    np.testing.assert_allclose(vjp(1.0, primitive(x), x), [[0, 0.5, 0.5], [0, 0, 0]])
    g = np.array([6.0, 3.0])
    expected = [[0, 3, 3], [1, 1, 1]]
    np.testing.assert_allclose(vjp(g, primitive(x, axis=1), x, axis=1), expected)
    t = np.arange(6.0).reshape(2, 3)
    jvp = get_rule(primitive).jvp(t, primitive(x, axis=1), x, axis=1)
    np.testing.assert_allclose(jvp, [1.5, 4.0])


def test_norm_ties_split_the_cotangent_equally():
    x = np.array([[1.0, -2.0], [-3.0, 2.0]])  # column sums 4 and 4; row sums 3 and 5
    rule = get_rule(np.linalg.norm).vjp
    np.testing.assert_allclose(rule(1.0, 4.0, x, 1), np.sign(x) / 2)
    np.testing.assert_allclose(rule(1.0, 5.0, x, np.inf), [[0, 0], [-1, 1]])
    v = np.array([3.0, -3.0, 1.0])
    np.testing.assert_allclose(rule(2.0, 3.0, v, np.inf), [1.0, -1.0, 0.0])


def test_prod_with_zeros_is_exact():
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0]])
    vjp = get_rule(np.prod).vjp(np.array([1.0, 1.0]), np.prod(x, axis=1), x, axis=1)
    np.testing.assert_array_equal(vjp, [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0]])
    assert np.all(np.isfinite(get_rule(np.cumprod).vjp(np.ones(6), np.cumprod(x), x)))


def test_average_with_two_outputs():
    """``returned=True``: (average, sum of weights); either cotangent may be None."""
    x, w = r(3, 4), positive(4)
    rule = get_rule(np.average)

    def outputs(x, w):
        return np.average(x, axis=1, weights=w, returned=True)

    ans = outputs(x, w)
    g_avg, g_total = r(3), r(3)
    for g in [(g_avg, g_total), (g_avg, None), (None, g_total)]:
        da, _, dw = rule.vjp(g, ans, x, 1, w, True)
        for i, got in ((0, da), (1, dw)):
            expected = numeric_vjp(outputs, (x, w), i, g)
            if got is None:
                np.testing.assert_allclose(expected, 0, atol=1e-6)
            else:
                np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for i, t in ((0, r(3, 4)), (1, r(4))):  # entries 0 and 2: a and weights
        got = rule.jvp(t, ans, x, 1, w, True)[2 * i]
        for k, want in enumerate(numeric_jvp(outputs, (x, w), i, t)):
            np.testing.assert_allclose(got[k], want, atol=1e-6)


def test_spectral_norm_has_no_second_derivative():
    x = r(3, 4)
    with pytest.raises(UnsupportedError, match="nuc"):
        get_rule(norm_direction).vjp(x, x, x, 1.0, "nuc")


def test_sum_gradient_is_a_broadcast_view():
    x = r(3, 4)
    g = get_rule(np.sum).vjp(2.0, np.sum(x), x)[0]
    assert g.shape == (3, 4) and np.all(g == 2.0)


def test_sum_initial_gets_the_summed_cotangent():
    x = r(3, 4)
    cotangents = get_rule(np.sum).vjp(
        np.ones(4), np.sum(x, 0, initial=1.5), x, 0, None, None, False, 1.5
    )
    np.testing.assert_allclose(cotangents[5], 4.0)


# ---------------------------------------------------------------------------- coverage

TESTED = {c.values[0] for c in CASES} | {np.ndarray.max, np.amax}


def test_every_rule_is_tested():
    assert_every_rule_is_tested(RULE_MODULES, TESTED)


@pytest.mark.parametrize(
    "primitive",
    [np.argmax, np.argmin, np.argsort, np.count_nonzero, np.ndarray.argmax, np.ndarray.argsort],
)
def test_declared_non_differentiable(primitive):
    rule = get_rule(primitive)
    assert rule is not None and not rule.differentiable


@pytest.mark.parametrize("order", [1, np.inf, 3, "fro"])
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_second_order_of_matrix_and_vector_norms(order, mode):
    """The locally linear norms' direction has no derivative with respect to the norm; its
    rule says None, which generated code once multiplied (a TypeError): a Hessian-vector
    product of each norm against differences of the tape's gradient."""
    import s2sgrad as sg

    x, direction = r(3, 3), r(3, 3)

    def norms(a):
        return np.linalg.norm(a, order) if order != 3 else np.linalg.norm(a[0], 3)

    along = sg.grad(norms, mode="tape")
    expected = numeric_vjp(lambda a: np.sum(along(a) * direction), (x,), 0, 1.0)
    gradient = sg.grad(norms, mode=mode)
    second = sg.grad(lambda a: np.sum(gradient(a) * direction), mode=mode)
    for _ in range(2):
        np.testing.assert_allclose(second(x), expected, rtol=1e-5, atol=1e-6)
