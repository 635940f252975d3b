"""Checks the rules for the functions scientists call and for the ufunc methods.

Each rule is checked against central finite differences in float64 by
``rulecheck.check_rule`` (VJP and JVP, float32 in gives float32 out), over shapes, axes and
modes; then, for each function, a program calling it is differentiated by both engines
(``mode="s2s"``, ``"tape"`` and ``"auto"``, first and second call) to first order against
finite differences, to second order (the Hessian against central differences of the
checked gradient) and in forward mode. Points are random and away from kinks (distinct
values for median and quantiles, no sample of ``interp``'s ``x`` on a knot).
``test_every_rule_is_tested`` fails for a rule added without a test.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad
from rulecheck import check_rule

import s2sgrad as sg
from s2sgrad.errors import NonDifferentiableError, S2SGradError
from s2sgrad.rules import get_rule, registered_primitives

RULE_MODULES = (
    "s2sgrad.rules.scientific",
    "s2sgrad.rules.statistics",
    "s2sgrad.rules.ufunc_methods",
    "s2sgrad.runtime.scientific",
)

_rng = np.random.default_rng(21)

# np.trapz before NumPy 2.0, np.trapezoid from 2.0 (np.trapz removed in 2.4)
trapezoid = getattr(np, "trapezoid", None) or np.trapz


def r(*shape):
    return _rng.standard_normal(shape)


def positive(*shape):
    return _rng.uniform(0.5, 2.0, shape)


def increasing(n):
    return np.cumsum(_rng.uniform(0.3, 1.0, n))


def _name(primitive, kwargs=None):
    owner = getattr(primitive, "__self__", None)
    name = getattr(primitive, "__name__", repr(primitive))
    name = f"{owner.__name__}.{name}" if isinstance(owner, np.ufunc) else name
    return name + "".join(f"-{k}={v}" for k, v in (kwargs or {}).items())


def case(primitive, *args, _argnums=None, **kwargs):
    return pytest.param(primitive, args, kwargs, _argnums, id=_name(primitive, kwargs))


# ---------------------------------------------------------------------------------------
# Rule-level cases

POLYNOMIALS = [
    case(np.vander, r(4)),
    case(np.vander, r(4), N=3),
    case(np.vander, r(3), N=5, increasing=True),
    case(np.polyval, r(4), r(3)),
    case(np.polyval, r(1), r(2, 3)),
    case(np.polyval, r(3), 0.7),
    case(np.polyfit, r(7), r(7), 2, _argnums=[0, 1]),
    case(np.polyfit, r(6), r(6, 2), 3, _argnums=[0, 1]),
]

INTEGRALS = [
    case(trapezoid, r(6)),
    case(trapezoid, r(6), dx=0.3),
    case(trapezoid, r(6), increasing(6)),
    case(trapezoid, r(3, 5), increasing(5), axis=1),
    case(trapezoid, r(5, 3), increasing(5), axis=0),
    case(trapezoid, r(2, 4, 3), dx=0.7, axis=1),
    case(trapezoid, r(3, 4), r(3, 4), axis=-1),
]
if hasattr(np, "trapz") and hasattr(np, "trapezoid"):
    INTEGRALS.append(case(np.trapz, r(6), increasing(6)))

_knots = increasing(6)
INTERPOLATION = [
    case(
        np.interp, _rng.uniform(_knots[0] - 0.5, _knots[-1] + 0.5, 9), _knots, r(6), _argnums=[0, 2]
    ),
    case(np.interp, _rng.uniform(_knots[0], _knots[-1], (2, 3)), _knots, r(6), _argnums=[0, 2]),
    case(
        np.interp,
        np.array([_knots[0] - 1.0, 1.7, _knots[-1] + 1.0]),
        _knots,
        r(6),
        0.3,
        -0.2,
        _argnums=[0, 2, 3, 4],
    ),
]

FILTERS = [case(np.convolve, r(5), r(3), mode=mode) for mode in ("full", "same", "valid")] + [
    case(np.convolve, r(2), r(4), mode=mode) for mode in ("full", "same", "valid")
]
FILTERS += [case(np.correlate, r(5), r(3), mode=mode) for mode in ("full", "same", "valid")]
FILTERS += [case(np.correlate, r(3), r(4), mode=mode) for mode in ("full", "same", "valid")]

STATISTICS = [
    case(np.cov, r(3, 6)),
    case(np.cov, r(6)),
    case(np.cov, r(6, 3), rowvar=False),
    case(np.cov, r(3, 6), bias=True),
    case(np.cov, r(3, 6), ddof=2),
    case(np.cov, r(2, 5), r(5)),
    case(np.cov, r(5, 2), r(5, 3), rowvar=False),
    case(np.corrcoef, r(3, 6)),
    case(np.corrcoef, r(6, 3), rowvar=False),
    case(np.corrcoef, r(6), r(6)),
    case(np.corrcoef, r(6)),
]
for shape, axes in [((7,), [None, 0]), ((4, 5), [None, 0, 1, -1]), ((2, 3, 4), [None, 1, (0, 2)])]:
    for axis in axes:
        for keepdims in (False, True):
            STATISTICS.append(case(np.median, r(*shape), axis=axis, keepdims=keepdims))
            STATISTICS.append(case(np.quantile, r(*shape), 0.3, axis=axis, keepdims=keepdims))
            STATISTICS.append(
                case(np.percentile, r(*shape), np.array([15.0, 62.0]), axis=axis, keepdims=keepdims)
            )
STATISTICS += [
    case(np.median, r(6)),
    case(np.quantile, r(4, 5), np.array([[0.1, 0.45], [0.7, 0.95]]), axis=1),
]

REDUCE_UFUNCS = [np.add, np.multiply, np.maximum, np.minimum, np.fmax, np.fmin]
REDUCE_UFUNCS += [np.logaddexp, np.logaddexp2, np.hypot]
UFUNC_METHODS = []
for u in REDUCE_UFUNCS:
    for shape, axis, keepdims in [
        ((5,), 0, False),
        ((3, 4), 0, False),
        ((3, 4), 1, True),
        ((3, 4), None, False),
        ((2, 3, 4), (0, 2), False),
        ((2, 3, 4), -1, True),
    ]:
        UFUNC_METHODS.append(case(u.reduce, r(*shape), axis=axis, keepdims=keepdims))
UFUNC_METHODS += [case(np.subtract.reduce, r(5)), case(np.subtract.reduce, r(3, 4), axis=1)]
UFUNC_METHODS += [case(np.subtract.reduce, r(3, 4), axis=0, keepdims=True)]
for u in [
    np.add,
    np.subtract,
    np.multiply,
    np.maximum,
    np.minimum,
    np.fmax,
    np.fmin,
    np.logaddexp,
    np.logaddexp2,
    np.hypot,
]:
    for shape, axis in [((6,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), -1)]:
        UFUNC_METHODS.append(case(u.accumulate, r(*shape), axis=axis))
OUTER_UFUNCS = [np.add, np.subtract, np.multiply, np.divide, np.hypot, np.arctan2]
OUTER_UFUNCS += [np.logaddexp, np.logaddexp2, np.maximum, np.minimum, np.fmax, np.fmin]
for u in OUTER_UFUNCS:
    UFUNC_METHODS += [case(u.outer, r(3), r(4)), case(u.outer, r(2, 3), r(2))]
UFUNC_METHODS += [
    case(np.power.outer, positive(3), r(4)),
    case(np.power.outer, positive(2, 2), r(3)),
    case(np.float_power.outer, positive(3), r(2)),
    case(np.remainder.outer, r(3) * 3.0, positive(4)),
    case(np.fmod.outer, r(3) * 3.0, positive(2, 2)),
    case(np.ldexp.outer, r(3), np.array([1, -2])),
    case(np.heaviside.outer, np.array([0.0, -1.3, 2.1]), r(4), _argnums=[1]),
    case(np.nextafter.outer, r(3), r(2), _argnums=[0]),
]

HELPERS = []  # the runtime helpers' own rules, checked directly
from s2sgrad.runtime import (  # noqa: E402
    convolution_mode,
    cov_rows,
    cov_rows_embed,
    cov_rows_part,
    full_convolution,
    full_rank,
    pair_means,
    plain_reduction,
    trapezoid_spacing,
    trapezoid_weights,
    undo_spacing,
)

HELPERS += [
    case(trapezoid_weights, r(4)),
    case(trapezoid_weights, r(3, 4), 0),
    case(pair_means, r(5)),
    case(pair_means, r(3, 4), 0),
    case(full_convolution, r(5), 5, 3, "same"),
    case(full_convolution, r(3), 5, 3, "valid"),
    case(convolution_mode, r(7), 5, 3, "same"),
    case(convolution_mode, r(7), 5, 3, "full"),
    case(cov_rows, r(2, 5), r(5)),
    case(cov_rows, r(5, 2), r(5, 3), False),
    case(cov_rows_part, r(3, 5), r(5), True, 2, _argnums=[0]),
    case(cov_rows_part, r(3, 5), r(5, 2), False, 1, _argnums=[0]),
    case(cov_rows_embed, r(5, 2), r(5, 2), False, 1, 3, _argnums=[0]),
    case(trapezoid_spacing, r(5), 2, 1),
    case(trapezoid_spacing, r(3, 5), 2, 1),
    case(undo_spacing, r(1, 4), r(5), 1, _argnums=[0]),
    case(undo_spacing, r(3, 4), r(3, 5), 1, _argnums=[0]),
    case(full_rank, r(4, 2), 2, _argnums=[0]),
    case(plain_reduction, r(3)),
]

ALL = POLYNOMIALS + INTEGRALS + INTERPOLATION + FILTERS + STATISTICS + UFUNC_METHODS + HELPERS


# A JVP rule's entries are each computed from one argument's tangent (the transformer
# inlines only the entry it needs): where the arguments' shapes differ, the whole rule
# cannot run on one tangent, and forward mode is checked through the engines below.
def _whole_jvp_runs(args, kwargs):
    values = [*args, *kwargs.values()]
    shapes = {np.shape(a) for a in values if isinstance(a, (float, np.ndarray))}
    return len(shapes) <= 1


@pytest.mark.parametrize("primitive, args, kwargs, argnums", ALL)
def test_rule(primitive, args, kwargs, argnums):
    floats = [
        i
        for i, a in enumerate(args)
        if isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f")
    ]
    argnums = floats if argnums is None else argnums
    check_rule(
        primitive,
        *args,
        argnums=argnums,
        kwargs=kwargs,
        jvp=_whole_jvp_runs(args, kwargs),
    )


# differentiated inside the programs below (several outputs: not for check_rule)
TESTED_KEYS = [p.values[0] for p in ALL] + [np.linalg.lstsq]


def test_every_rule_is_tested():
    untested = [
        _name(p)
        for p in registered_primitives()
        if (rule := get_rule(p)).differentiable
        and rule.vjp is not None
        and rule.vjp.__module__ in RULE_MODULES
        and not any(p == tested for tested in TESTED_KEYS)
    ]
    assert not untested, f"rules without a test case: {untested}"


# ---------------------------------------------------------------------------------------
# Programs differentiated by both engines, to second order
#
# Each program is a scalar function of one array; the weights make every output count.

W3 = r(3)
W4 = r(4)
W6 = r(6)
W23 = r(2, 3)
KNOTS = increasing(6)
SAMPLES = _rng.uniform(KNOTS[0] - 0.4, KNOTS[-1] + 0.4, 7)
FP = r(6)
Y7 = r(7)
X7 = r(7)
A53 = r(5, 3)
B5 = r(5)


def vander_program(x):
    return np.sum(np.vander(x, 4) * r_vander)


r_vander = r(3, 4)


def polyval_program(p):
    return np.sum(np.polyval(p, W6) * W6) + np.sum(np.polyval(W3, p) ** 2)


def polyfit_wrt_y(y):
    return np.sum(np.polyfit(X7, y, 2) * W3)


def polyfit_wrt_x(x):
    return np.sum(np.polyfit(x, Y7, 2) * W3)


def lstsq_wrt_a(a):
    x, residuals, rank, s = np.linalg.lstsq(a, B5, rcond=None)
    return np.sum(x * W3) + np.sum(residuals)


def lstsq_wrt_b(b):
    x, residuals, rank, s = np.linalg.lstsq(A53, b, rcond=None)
    return np.sum(x * W3) + 0.5 * np.sum(residuals)


def lstsq_square(a):
    """A square system has no residuals: an empty array, whose cotangent the generated
    code holds as zeros of no entries, once met with a matmul error."""
    x, residuals, rank, s = np.linalg.lstsq(a + 3.0 * np.eye(3), B5[:3], rcond=None)
    return np.sum(x**2) + np.sum(residuals)


def lstsq_singular_values(a):
    return np.sum(np.linalg.lstsq(a, B5, rcond=None)[3] ** 2)


def trapezoid_program(y):
    return trapezoid(y**2, KNOTS) + trapezoid(np.sin(y), dx=0.3)


def trapezoid_wrt_x(x):
    return trapezoid(np.cos(x), x)


def trapezoid_wrt_dx(h):
    return trapezoid(np.sin(W6 * h[0]), dx=h[0] ** 2) + trapezoid(W23, dx=h[1], axis=0)[1]


def trapezoid_2d(y):
    return np.sum(trapezoid(y * y, KNOTS[:4], axis=1) * W3)


def interp_wrt_fp(fp):
    return np.sum(np.interp(SAMPLES, KNOTS, fp) ** 2)


def interp_wrt_x(x):
    return np.sum(np.interp(x, KNOTS, FP) ** 2)


MIDPOINTS = (KNOTS[:-1] + KNOTS[1:]) / 2


def interp_mixed(v):
    """x and fp both depend on v: the mixed second derivative goes through the weights."""
    return np.sum(np.interp(MIDPOINTS + 0.02 * v[:5], KNOTS, v**2) ** 2)


def interp_left_right(v):
    return np.sum(np.interp(SAMPLES, KNOTS, v, left=v[0] * 2.0, right=v[1] ** 2) ** 2)


def convolve_program(a):
    return np.sum(np.convolve(a, W3, "same") ** 2) + np.sum(np.convolve(a, a) * 0.1)


def correlate_program(a):
    return np.sum(np.correlate(a, W3, "full") ** 2) + np.sum(np.correlate(a, a[:3]))


def cov_program(m):
    return np.sum(np.cov(m) ** 2) + np.sum(np.cov(m, rowvar=False, bias=True) * 0.5)


def corrcoef_program(m):
    return np.sum(np.corrcoef(m) * W3)


def median_program(a):
    return np.sum(np.median(a, axis=1) * W3) + np.median(a) ** 2


def percentile_program(a):
    return np.sum(np.percentile(a, [20.0, 70.0], axis=0) * W4) + np.quantile(a, 0.4) ** 2


def reduce_program(x):
    return (
        np.sum(np.logaddexp.reduce(x, axis=0) * W4)
        + np.sum(np.add.reduce(x * x, axis=1) * W3)
        + np.multiply.reduce(x[0]) ** 2
        + np.maximum.reduce(x, axis=None) ** 2
        + np.sum(np.hypot.reduce(x, axis=1))
    )


def accumulate_program(x):
    return (
        np.sum(np.add.accumulate(x * x, axis=1) * W4)
        + np.sum(np.multiply.accumulate(x, axis=0) ** 2)
        + np.sum(np.logaddexp.accumulate(x, axis=1) * W4)
        + np.sum(np.maximum.accumulate(x[1]) ** 2)
    )


def outer_program(x):
    return (
        np.sum(np.multiply.outer(x, W4) ** 2)
        + np.sum(np.logaddexp.outer(x, x) * 0.3)
        + np.sum(np.subtract.outer(W4, x) ** 3)
    )


def fill_diagonal_program(x):
    k = np.outer(x, x) * 1.0
    np.fill_diagonal(k, x**2 + 1.0)
    return np.sum(np.sin(k) * W33)


def fill_diagonal_wrapped(x):
    k = x * x
    np.fill_diagonal(k, 0.3, wrap=True)
    return np.sum(k**3)


W33 = r(3, 3)

PROGRAMS = [
    (vander_program, lambda: r(3)),
    (polyval_program, lambda: r(4)),
    (polyfit_wrt_y, lambda: r(7)),
    (polyfit_wrt_x, lambda: r(7)),
    (lstsq_wrt_a, lambda: r(5, 3)),
    (lstsq_wrt_b, lambda: r(5)),
    (lstsq_singular_values, lambda: r(5, 3)),
    (lstsq_square, lambda: r(3, 3)),
    (trapezoid_program, lambda: r(6)),
    (trapezoid_wrt_x, lambda: increasing(6)),
    (trapezoid_2d, lambda: r(3, 4)),
    (trapezoid_wrt_dx, lambda: positive(2)),
    (interp_wrt_fp, lambda: r(6)),
    (interp_wrt_x, lambda: SAMPLES + 0.01),
    (interp_mixed, lambda: r(6)),
    (interp_left_right, lambda: r(6)),
    (convolve_program, lambda: r(5)),
    (correlate_program, lambda: r(5)),
    (cov_program, lambda: r(3, 5)),
    (corrcoef_program, lambda: r(3, 5)),
    (median_program, lambda: r(3, 4)),
    (percentile_program, lambda: r(5, 4)),
    (reduce_program, lambda: positive(3, 4)),
    (accumulate_program, lambda: r(3, 4)),
    (outer_program, lambda: r(3)),
    (fill_diagonal_program, lambda: r(3)),
    (fill_diagonal_wrapped, lambda: r(5, 2)),
]


def _numeric_jacobian(f, x, step=1e-5):
    x = np.asarray(x, dtype=np.float64)
    columns = []
    for position in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[position] += step
        down[position] -= step
        columns.append((np.asarray(f(up)) - np.asarray(f(down))) / (2 * step))
    return np.stack(columns, axis=-1).reshape(x.shape + x.shape)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("program, make", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_program(program, make, mode):
    x = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fall-back to the tape in mode="auto"
        gradient = call_twice(sg.grad(program, mode=mode), x)
        assert_close(gradient, numeric_grad(program, [x], 0), rtol=1e-5, atol=1e-6)
        hessian = call_twice(sg.hessian(program, mode=mode), x)
        expected = _numeric_jacobian(sg.grad(program, mode="s2s"), x)
        np.testing.assert_allclose(hessian, expected, rtol=1e-4, atol=1e-5)
        v = r(*np.shape(x))
        _, tangent = sg.jvp(program, (x,), (v,), mode=mode)
        step = 1e-6
        numeric = (program(x + step * v) - program(x - step * v)) / (2 * step)
        np.testing.assert_allclose(tangent, numeric, rtol=1e-5, atol=1e-6)
        _, hessian_v = sg.jvp(sg.grad(program, mode=mode), (x,), (v,), mode=mode)
        np.testing.assert_allclose(
            hessian_v, np.tensordot(expected, v, np.ndim(v)), rtol=1e-4, atol=1e-5
        )


def fill_diagonal_of_zeros(x):
    t = np.zeros((2, 2))
    np.fill_diagonal(t, x[0])
    return np.sum(t**2) + x[1]


def test_fill_diagonal_into_a_constant_array():
    """The transformer differentiates the write into an array of zeros; the tape cannot
    record a write into a plain NumPy array, and says so naming the line."""
    x = r(3)
    for mode in ("s2s", "auto"):
        gradient = call_twice(sg.grad(fill_diagonal_of_zeros, mode=mode), x)
        assert_close(gradient, numeric_grad(fill_diagonal_of_zeros, [x], 0))
    line = fill_diagonal_of_zeros.__code__.co_firstlineno + 2
    with pytest.raises(NonDifferentiableError, match=rf"scientific.py:{line}: "):
        sg.grad(fill_diagonal_of_zeros, mode="tape")(x)


def fill_diagonal_of_an_argument(x):
    np.fill_diagonal(x, 0.0)
    return np.sum(x)


def item_write_of_an_argument(x):
    x[np.arange(3), np.arange(3)] = 0.0
    return np.sum(x)


def test_fill_diagonal_of_an_argument_is_an_item_write():
    """As for x[i, i] = 0: both engines differentiate it on their own copy and leave the
    caller's array alone."""
    x = r(3, 3)
    before = x.copy()
    for mode in ("s2s", "tape"):
        gradient = sg.grad(fill_diagonal_of_an_argument, mode=mode)(x)
        assert_close(gradient, sg.grad(item_write_of_an_argument, mode=mode)(x.copy()))
        assert_close(gradient, 1.0 - np.eye(3))
        np.testing.assert_array_equal(x, before)


# Vector-valued: Jacobians from batched pullbacks and pushforwards of the generated code


def interp_values(fp):
    return np.interp(SAMPLES, KNOTS, fp) ** 2


def quantiles_of_columns(a):
    return np.quantile(a, [0.2, 0.7], axis=0).ravel()


def covariance_entries(m):
    return np.corrcoef(m).ravel() + np.cov(m, ddof=0).ravel()


def running_log_sums(x):
    return np.logaddexp.accumulate(x, axis=1).ravel() + np.repeat(np.hypot.reduce(x), 3)


def filled(x):
    k = np.outer(x, x) * 1.0
    np.fill_diagonal(k, x)
    return k.ravel()


VECTOR_PROGRAMS = [
    (interp_values, lambda: r(6)),
    (quantiles_of_columns, lambda: r(5, 3)),
    (covariance_entries, lambda: r(3, 5)),
    (running_log_sums, lambda: r(3, 4)),
    (filled, lambda: r(3)),
]


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize(
    "program, make", VECTOR_PROGRAMS, ids=[p[0].__name__ for p in VECTOR_PROGRAMS]
)
def test_jacobians(program, make, mode):
    x = make()
    outputs = np.size(program(x))
    rows = [numeric_grad(lambda z, i=i: program(z)[i], [x], 0) for i in range(outputs)]
    expected = np.stack(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for jacobian in (sg.jacobian, sg.jacfwd):
            actual = jacobian(program, mode=mode)(x)
            np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# ufunc.at: an item write in both engines


def ufunc_at_program(x):
    y = x * 1.0
    np.multiply.at(y, [0, 2], x[1])
    np.negative.at(y, [1])
    np.maximum.at(y, np.array([3]), 0.5)
    np.logaddexp.at(y, (slice(1, 3),), x[3:5])
    np.add.at(y, [0, 0, 1], x[2:5])
    np.subtract.at(y, [3], 2.0 * x[0])
    return np.sum(y**3)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_ufunc_at(mode):
    """np.u.at(t, i, v) is t[i] = np.u(t[i], v) for indices that pick each element once
    (np.add.at and np.subtract.at add up repeats). Second order on the tape: the
    transformer refuses second derivatives of item writes that read the old value."""
    x = r(5)
    x[3] = 0.9  # away from np.maximum's kink at 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = call_twice(sg.grad(ufunc_at_program, mode=mode), x)
    assert_close(gradient, numeric_grad(ufunc_at_program, [x], 0))
    expected = _numeric_jacobian(sg.grad(ufunc_at_program, mode="s2s"), x)
    hessian = sg.hessian(ufunc_at_program, mode="tape")(x)
    np.testing.assert_allclose(hessian, expected, rtol=1e-4, atol=1e-5)


def repeated_product_at(x):
    y = x * 1.0
    np.multiply.at(y, np.array([0, 0]), x[1])  # a literal [0, 0] is refused when transformed
    return np.sum(y)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_ufunc_at_with_repeated_indices_is_refused(mode):
    with pytest.raises(NonDifferentiableError, match=r"scientific.py:\d+: ufunc.at with an index"):
        sg.grad(repeated_product_at, mode=mode)(r(3))


# ---------------------------------------------------------------------------------------
# Refusals: clear errors naming the user's file, in every mode


def inverted_cdf_quantile(a):
    return np.quantile(a, 0.3, method="inverted_cdf")


def interp_wrt_xp(xp):
    return np.sum(np.interp(np.array([0.5, 1.5]), xp, np.array([1.0, 2.0, 0.0])))


def weighted_polyfit(x):
    return np.sum(np.polyfit(x, x**2, 1, w=np.ones(3)))


def rank_deficient_lstsq(a):
    return np.sum(np.linalg.lstsq(a, np.ones(3), rcond=None)[0])


def weighted_cov(m):
    return np.sum(np.cov(m, aweights=np.ones(4)))


def reduce_with_initial(x):
    return np.sum(np.add.reduce(x, axis=0, initial=1.0))


REFUSED = [
    (inverted_cdf_quantile, lambda: r(3, 4), "not method='inverted_cdf'"),
    (interp_wrt_xp, lambda: np.array([0.0, 1.0, 2.0]), "not the sample points xp"),
    (weighted_polyfit, lambda: np.array([0.0, 1.0, 2.0]), "without full=, w= and cov="),
    (rank_deficient_lstsq, lambda: np.ones((3, 2)), "rank-deficient"),
    (reduce_with_initial, lambda: r(3, 4), "without initial= and where="),
]


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("program, make, says", REFUSED, ids=[p[0].__name__ for p in REFUSED])
def test_refused(program, make, says, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(NonDifferentiableError, match=says) as caught:
            sg.grad(program, mode=mode)(make())
    assert __file__.rsplit("/", 1)[-1] in str(caught.value)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_a_refused_argument_names_the_line_that_gives_it(mode):
    """np.interp's xp (``registry.refused_argument``): refused where the user's code gives
    it a differentiated value, in reverse and forward mode, not where the function starts
    (the transformer's backward) or where it was called (the tape's pullback)."""
    line = interp_wrt_xp.__code__.co_firstlineno + 1
    where = rf"test_rules_scientific.py:{line}: .*sample points xp"
    xp = np.array([0.0, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        with pytest.raises(NonDifferentiableError, match=where):
            sg.grad(interp_wrt_xp, mode=mode)(xp)
        with pytest.raises(NonDifferentiableError, match=where):
            sg.jvp(interp_wrt_xp, (xp,), (np.ones(3),), mode=mode)


def divide_accumulate(x):
    return np.sum(np.divide.accumulate(x))


def power_reduce(x):
    return np.sum(np.power.reduce(x, axis=0))


@pytest.mark.parametrize("program", [divide_accumulate, power_reduce])
def test_ufunc_method_without_rule_is_refused_at_transform_time(program):
    """In mode="s2s" nothing reaches the tape: a ufunc method with no rule is refused when
    the function is transformed, naming the line of the call."""
    line = program.__code__.co_firstlineno + 1
    with pytest.raises(
        S2SGradError, match=rf"test_rules_scientific.py:{line}: .* no derivative rule"
    ):
        sg.grad(program, mode="s2s")(positive(3))
    with pytest.raises(NonDifferentiableError, match="no derivative rule"):
        sg.grad(program, mode="tape")(positive(3))


def test_s2s_gradient_calls_no_dispatch():
    """The generated code inlines the rules: no dynamic dispatch, no tape."""
    for program in (reduce_program, accumulate_program, outer_program, percentile_program):
        source = sg.source(sg.grad(program, mode="s2s"))
        assert "dynamic_vjp" not in source and "vjp_call" not in source, source


def relu_outer(z):
    return np.sum(np.maximum.outer(z, np.array([0.0, 1.0])) * np.array([2.0, 3.0]))


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_maximum_outer_at_a_tie_with_a_constant(mode):
    """As for np.maximum: at a tie with a constant the derivative goes to the constant."""
    z = np.array([0.0, 1.0, -0.5, 2.0])
    assert_close(sg.grad(relu_outer, mode=mode)(z), np.array([0.0, 2.0, 0.0, 5.0]))


def interpolated_from_a_list(c):
    return np.interp(0.25, [0.0, 1.0], [c, 2.0 * c + 1.0]) * c


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_interp_of_sample_values_written_as_a_list(mode):
    """fp as a list literal holding differentiated values (cast_like met the list)."""
    gradient = sg.grad(interpolated_from_a_list, mode=mode)
    for c in (0.7, -0.4):
        expected = numeric_grad(interpolated_from_a_list, (c,), 0)
        assert gradient(c) == pytest.approx(expected, rel=1e-6)
