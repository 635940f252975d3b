"""Checks the elementwise derivative rules against finite differences.

Every differentiable primitive registered by ``s2sgrad.rules.elementwise`` (and the helpers of
``s2sgrad.runtime.elementwise``) must appear in the tables below: ``test_every_rule_is_tested``
fails for a rule added without a test.
"""

import ast
import builtins
import inspect
import operator
import textwrap
import warnings
import zlib

import numpy as np
import pytest
from rulecheck import assert_every_rule_is_tested, check_rule, rules_defined_in

import s2sgrad as sg
import s2sgrad.runtime
from s2sgrad.rules import get_rule
from s2sgrad.rules.python_math import NUMPY_TWINS
from s2sgrad.rules.registry import per_argument
from s2sgrad.runtime import cast_like, times_power_of_two

RULE_MODULES = ("s2sgrad.rules.elementwise", "s2sgrad.runtime.elementwise")

NUMBER = "number"  # a Python float instead of an array


# Domains: ``domain(rng, size)`` draws values where the function is smooth.
def real(rng, size):
    return rng.uniform(-2, 2, size)


def wide(rng, size):
    return rng.uniform(-4, 4, size)


def positive(rng, size):
    return rng.uniform(0.5, 2, size)


def nonzero(rng, size):
    return rng.choice([-1.0, 1.0], size) * rng.uniform(0.5, 2, size)


def inside_unit(rng, size):
    return rng.uniform(-0.8, 0.8, size)


def above_one(rng, size):
    return rng.uniform(1.2, 3, size)


def above_minus_one(rng, size):
    return rng.uniform(-0.8, 2, size)


def sample(domain, shape, rng):
    if shape == NUMBER:
        return float(domain(rng, None))
    return np.asarray(domain(rng, shape), dtype=np.float64)


def away_from_jumps(rng, shape1, shape2):
    """A pair for mod/fmod whose quotients are not near an integer (where they jump)."""
    while True:
        x1, x2 = sample(wide, shape1, rng), sample(nonzero, shape2, rng)
        fraction = np.mod(np.divide(x1, x2), 1)
        if np.all((fraction > 0.1) & (fraction < 0.9)):
            return x1, x2


def integer_step(rng, shape1, shape2):
    """A pair for heaviside: an integer step argument (zeros included), a real value at 0.

    Only the value at 0 is differentiable; the step is piecewise constant in x1.
    """
    x1 = rng.integers(-1, 2, None if shape1 == NUMBER else shape1)
    return int(x1) if shape1 == NUMBER else x1, sample(real, shape2, rng)


def integer_direction(rng, shape1, shape2):
    """A pair for nextafter: a real value and an integer direction (piecewise constant)."""
    x2 = rng.integers(-3, 4, None if shape2 == NUMBER else shape2)
    return sample(real, shape1, rng), int(x2) if shape2 == NUMBER else x2


def integer_exponent(rng, shape1, shape2):
    """A pair for ldexp: a float mantissa and an integer exponent."""
    x2 = rng.integers(-2, 3, None if shape2 == NUMBER else shape2)
    return sample(real, shape1, rng), int(x2) if shape2 == NUMBER else x2


UNARY = [
    (np.negative, real),
    (operator.neg, real),
    (np.positive, real),
    (operator.pos, real),
    (np.conjugate, real),
    (np.real, real),
    (np.absolute, nonzero),
    (np.fabs, nonzero),
    (abs, nonzero),
    (np.sign, nonzero),
    (np.nan_to_num, real),
    (np.exp, real),
    (np.exp2, real),
    (np.expm1, real),
    (np.log, positive),
    (np.log1p, above_minus_one),
    (np.log2, positive),
    (np.log10, positive),
    (np.sqrt, positive),
    (np.cbrt, nonzero),
    (np.square, real),
    (np.reciprocal, nonzero),
    (np.sin, real),
    (np.cos, real),
    (np.tan, inside_unit),
    (np.arcsin, inside_unit),
    (np.arccos, inside_unit),
    (np.arctan, real),
    (np.sinh, real),
    (np.cosh, real),
    (np.tanh, real),
    (np.arcsinh, real),
    (np.arccosh, above_one),
    (np.arctanh, inside_unit),
    (np.deg2rad, real),
    (np.radians, real),
    (np.rad2deg, real),
    (np.degrees, real),
    (np.sinc, real),
    (np.i0, real),
]

BINARY = [
    (np.add, (real, real)),
    (operator.add, (real, real)),
    (np.subtract, (real, real)),
    (operator.sub, (real, real)),
    (np.multiply, (real, real)),
    (operator.mul, (real, real)),
    (np.divide, (real, nonzero)),
    (operator.truediv, (real, nonzero)),
    (np.power, (positive, real)),
    (operator.pow, (positive, real)),
    (pow, (positive, real)),
    (np.float_power, (positive, real)),
    (np.mod, away_from_jumps),
    (operator.mod, away_from_jumps),
    (np.fmod, away_from_jumps),
    (np.hypot, (nonzero, nonzero)),
    (np.arctan2, (nonzero, nonzero)),
    (np.logaddexp, (real, real)),
    (np.logaddexp2, (real, real)),
    (np.maximum, (real, real)),
    (np.minimum, (real, real)),
    (np.fmax, (real, real)),
    (np.fmin, (real, real)),
    (np.ldexp, integer_exponent),
    (np.heaviside, integer_step),
    (np.nextafter, integer_direction),
]

# Builtins defined only on numbers and 0-d arrays.
SCALAR_UNARY = [(float, real)]
SCALAR_BINARY = [(max, (real, real)), (min, (real, real))]

UNARY_SHAPES = [NUMBER, (), (3,), (2, 3)]
SCALAR_UNARY_SHAPES = [NUMBER, ()]
BINARY_SHAPES = [
    ((), ()),
    ((3,), (3,)),
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 1), (1, 3)),
    (NUMBER, (2, 3)),
    ((2, 3), NUMBER),
    (NUMBER, NUMBER),
]
SCALAR_BINARY_SHAPES = [(NUMBER, NUMBER), ((), ()), (NUMBER, ())]

# Checked by the dedicated tests at the end of this file; the complex ones (taking a complex
# number apart) by tests/test_complex.py, against differences in the real and imaginary parts.
SPECIAL = [cast_like, times_power_of_two, sum, np.imag, np.angle]
SPECIAL += [np.ndarray.real, np.ndarray.imag, np.ndarray.conj, np.ndarray.conjugate]

TESTED = [p for p, _ in UNARY + BINARY + SCALAR_UNARY + SCALAR_BINARY] + SPECIAL
# Python's math functions share these rules (rules/python_math.py): each is tested, to
# second order, in test_python_math.py
TESTED += list(NUMPY_TWINS)


def name(primitive):
    module = getattr(primitive, "__module__", None) or "numpy"
    prefix = {"numpy": "np", "_operator": "operator", "builtins": "builtins"}.get(module, module)
    return f"{prefix}.{primitive.__name__}"


def shape_id(shape):
    return "num" if shape == NUMBER else "x".join(map(str, shape)) or "0d"


def cases(table, shapes):
    return [
        pytest.param(primitive, domain, shape, id=f"{name(primitive)}-{shape_id(shape)}")
        for primitive, domain in table
        for shape in shapes
    ]


def binary_cases(table, shapes):
    return [
        pytest.param(
            primitive,
            domain,
            pair,
            id=f"{name(primitive)}-{shape_id(pair[0])}-{shape_id(pair[1])}",
        )
        for primitive, domain in table
        for pair in shapes
    ]


def rng_for(*parts):
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def check_jvp_shapes(primitive, *args):
    """Each forward-mode contribution has the output's shape (not a broadcastable one)."""
    ans = primitive(*args)
    rule = get_rule(primitive)
    for i, arg in enumerate(args):
        t = np.ones(np.shape(arg))
        contribution = per_argument(rule.jvp(t, ans, *args), len(args))[i]
        if contribution is None:  # a non-differentiable argument
            continue
        assert np.shape(contribution) == np.shape(ans), f"JVP of {name(primitive)} wrt {i}"


@pytest.mark.parametrize(
    "primitive, domain, shape",
    cases(UNARY, UNARY_SHAPES) + cases(SCALAR_UNARY, SCALAR_UNARY_SHAPES),
)
def test_unary_rule(primitive, domain, shape):
    x = sample(domain, shape, rng_for(name(primitive), shape))
    check_rule(primitive, x)
    check_jvp_shapes(primitive, x)


@pytest.mark.parametrize(
    "primitive, domain, shapes",
    binary_cases(BINARY, BINARY_SHAPES) + binary_cases(SCALAR_BINARY, SCALAR_BINARY_SHAPES),
)
def test_binary_rule(primitive, domain, shapes):
    rng = rng_for(name(primitive), shapes)
    if callable(domain):
        x1, x2 = domain(rng, *shapes)
    else:
        x1, x2 = (sample(d, s, rng) for d, s in zip(domain, shapes))
    check_rule(primitive, x1, x2)
    check_jvp_shapes(primitive, x1, x2)


# ---------------------------------------------------------------------------- coverage


def test_every_rule_is_tested():
    assert_every_rule_is_tested(RULE_MODULES, TESTED)


NONDIFFERENTIABLE = [
    operator.lt,
    operator.le,
    operator.eq,
    operator.ne,
    operator.gt,
    operator.ge,
    np.less,
    np.less_equal,
    np.equal,
    np.not_equal,
    np.greater,
    np.greater_equal,
    np.isclose,
    np.logical_and,
    np.logical_or,
    np.logical_not,
    np.logical_xor,
    operator.not_,
    operator.truth,
    operator.and_,
    operator.or_,
    operator.xor,
    operator.invert,
    operator.inv,
    operator.lshift,
    operator.rshift,
    np.bitwise_and,
    np.bitwise_or,
    np.bitwise_xor,
    np.invert,
    np.left_shift,
    np.right_shift,
    np.isfinite,
    np.isnan,
    np.isinf,
    np.isposinf,
    np.isneginf,
    np.signbit,
    np.floor,
    np.ceil,
    np.round,
    np.around,
    np.rint,
    np.trunc,
    np.fix,
    round,
    int,
    bool,
    np.floor_divide,
    operator.floordiv,
    np.spacing,
    np.gcd,
    np.lcm,
]


@pytest.mark.parametrize("primitive", NONDIFFERENTIABLE, ids=name)
def test_declared_nondifferentiable(primitive):
    rule = get_rule(primitive)
    assert rule is not None, f"{name(primitive)} is not registered"
    assert not rule.differentiable
    assert rule.vjp is None and rule.jvp is None


def test_sign_has_a_zero_rule_not_a_declaration():
    rule = get_rule(np.sign)
    assert rule.differentiable
    x = np.array([[-1.5, 0.0, 2.0]], dtype=np.float32)
    cotangent = rule.vjp(np.ones((1, 3), np.float32), np.sign(x), x)
    assert cotangent.shape == (1, 3) and cotangent.dtype == np.float32
    assert not np.any(cotangent)


# ---------------------------------------------------------------------------- rule style


def _rule_functions():
    functions = {}
    for primitive in rules_defined_in(RULE_MODULES):
        rule = get_rule(primitive)
        for function, inline in ((rule.vjp, rule.inline_vjp), (rule.jvp, rule.inline_jvp)):
            if inline and function.__module__ == "s2sgrad.rules.elementwise":
                functions[function.__name__] = function
    return sorted(functions.values(), key=lambda f: f.__name__)


@pytest.mark.parametrize("rule", _rule_functions(), ids=lambda f: f.__name__)
def test_rule_is_inlinable(rule):
    """Assignments then one return; free names only ``np``, builtins and runtime helpers."""
    function = ast.parse(textwrap.dedent(inspect.getsource(rule))).body[0]
    *statements, last = function.body
    assert isinstance(last, ast.Return)
    assert all(isinstance(s, (ast.Assign, ast.If)) for s in statements)
    names = [n for s in function.body for n in ast.walk(s) if isinstance(n, ast.Name)]
    parameters = {a.arg for a in function.args.args + function.args.kwonlyargs}
    assigned = {n.id for n in names if isinstance(n.ctx, ast.Store)}
    used = {n.id for n in names if isinstance(n.ctx, ast.Load)}
    allowed = parameters | assigned | {"np", *dir(builtins)} | set(s2sgrad.runtime.__all__)
    assert used <= allowed, f"free names {used - allowed}"


# ---------------------------------------------------------------------------- special points


@pytest.mark.parametrize("primitive", [operator.pow, np.power, pow], ids=name)
@pytest.mark.parametrize("exponent", [2, 3, -1, 0.5])
def test_power_with_constant_exponent(primitive, exponent):
    rng = rng_for(name(primitive), exponent)
    x = positive(rng, (2, 3)) if exponent == 0.5 else nonzero(rng, (2, 3))
    # The exponent's entry takes log(x), which warns for negative x; it is computed here
    # because the rule is called whole, but the transformer emits it only for an active y.
    with np.errstate(invalid="ignore"):
        check_rule(primitive, x, exponent)
        cotangent = get_rule(primitive).vjp(np.ones((2, 3)), primitive(x, exponent), x, exponent)
    assert np.all(np.isfinite(cotangent[0]))


@pytest.mark.parametrize("primitive", [np.power, np.float_power], ids=name)
def test_power_exponent_derivative_at_zero_base(primitive):
    x1, x2 = np.array([0.0, 1.5]), np.array([2.0, 2.5])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        dx1, dx2 = get_rule(primitive).vjp(np.ones(2), primitive(x1, x2), x1, x2)
    np.testing.assert_allclose(dx1, [0.0, 2.5 * 1.5**1.5])
    np.testing.assert_allclose(dx2, [0.0, 1.5**2.5 * np.log(1.5)])


@pytest.mark.parametrize("primitive", [np.maximum, np.minimum, np.fmax, np.fmin], ids=name)
def test_ties_split_the_derivative_equally(primitive):
    x1 = np.array([1.0, 2.0, 3.0])
    x2 = np.array([1.0, 0.0, 5.0])
    g = np.array([2.0, 2.0, 2.0])
    rule = get_rule(primitive)
    dx1, dx2 = rule.vjp(g, primitive(x1, x2), x1, x2)
    first_wins = 2.0 if primitive in (np.maximum, np.fmax) else 0.0
    np.testing.assert_array_equal(dx1, [1.0, first_wins, 2.0 - first_wins])
    np.testing.assert_array_equal(dx2, [1.0, 2.0 - first_wins, first_wins])
    t1, t2 = rule.jvp(g, primitive(x1, x2), x1, x2)
    np.testing.assert_array_equal(t1 + t2, g)


@pytest.mark.parametrize("primitive", [max, min], ids=name)
def test_builtin_max_min_ties(primitive):
    # the value Python returns, the first of equals, gets it all (docs/conventions.md)
    first, second = np.float64(1.5), np.float64(1.5)
    dx1, dx2 = get_rule(primitive).vjp(3.0, primitive(first, second), first, second)
    assert (dx1, dx2) == (3.0, 0.0)


@pytest.mark.parametrize("primitive", [np.fmax, np.fmin], ids=name)
def test_fmax_fmin_differentiate_the_number_not_the_nan(primitive):
    x1 = np.array([1.0, np.nan])
    x2 = np.array([np.nan, 4.0])
    dx1, dx2 = get_rule(primitive).vjp(np.ones(2), primitive(x1, x2), x1, x2)
    np.testing.assert_array_equal(dx1, [1.0, 0.0])
    np.testing.assert_array_equal(dx2, [0.0, 1.0])


def _numpy_sinc_underflows_at_a_float32_zero() -> bool:
    """NumPy before 2.3 computes ``sinc(0)`` as ``sin(y) / y`` with ``y = pi * 1e-20``, whose
    sine underflows in float32 (numpy/numpy#27784 changed it); that is NumPy's primal."""
    with np.errstate(under="raise"):
        try:
            np.sinc(np.zeros(1, np.float32))
        except FloatingPointError:
            return True
    return False


def test_sinc_at_zero():
    x = np.array([-0.5, 0.0, 0.7])
    x32 = x.astype(np.float32)
    primal_underflows = _numpy_sinc_underflows_at_a_float32_zero()
    with np.errstate(under="ignore"):
        ans32 = np.sinc(x32)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        check_rule(np.sinc, x, float32=not primal_underflows)
        dx = get_rule(np.sinc).vjp(np.ones(3), np.sinc(x), x)
        dx32 = get_rule(np.sinc).vjp(np.ones(3, np.float32), ans32, x32)
    assert dx[1] == 0.0
    assert dx32[1] == 0.0 and dx32.dtype == np.float32
    if primal_underflows:  # the float32 check, with NumPy's own underflow allowed
        with np.errstate(under="ignore"):
            check_rule(np.sinc, x)


def test_abs_at_zero_is_zero():
    x = np.array([0.0, -2.0])
    np.testing.assert_array_equal(get_rule(np.abs).vjp(np.ones(2), np.abs(x), x), [0.0, -1.0])


def test_nan_to_num_passes_the_derivative_only_where_finite():
    x = np.array([1.0, np.inf, -np.inf, np.nan])
    dx = get_rule(np.nan_to_num).vjp(np.full(4, 3.0), np.nan_to_num(x), x)[0]
    np.testing.assert_array_equal(dx, [3.0, 0.0, 0.0, 0.0])


def replaced(c, x):
    return np.sum(np.nan_to_num(x, True, c, 2.0 * c, neginf=-c) * np.arange(1.0, 6.0))


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_nan_to_num_differentiates_its_replacement_values(mode):
    """nan, posinf and neginf stand where the array had them (np.nan_to_num(x, True, c)
    gave 0 for c)."""
    x = np.array([1.5, np.nan, np.inf, -np.inf, np.nan])
    expected = 1.0 * 0.0 + (2.0 + 5.0) + 2.0 * 3.0 - 4.0  # d/dc of the replaced entries
    gradient = sg.grad(replaced, mode=mode)
    for c in (0.3, -0.8):
        assert gradient(c, x) == pytest.approx(expected)
        _, tangent = sg.jvp(replaced, (c, x), (1.0, np.zeros(5)), mode=mode)
        assert tangent == pytest.approx(expected)


def test_float_power_keeps_float32_cotangents():
    x1 = np.array([1.5, 2.0], np.float32)
    ans = np.float_power(x1, 3.0)
    assert ans.dtype == np.float64
    dx1 = get_rule(np.float_power).vjp(np.ones(2), ans, x1, 3.0)[0]
    assert dx1.dtype == np.float32
    np.testing.assert_allclose(dx1, 3 * x1**2)


@pytest.mark.parametrize(
    "primitive",
    [operator.add, operator.mul, operator.truediv, operator.pow, np.maximum, np.mod, np.arctan2],
    ids=name,
)
def test_python_number_with_float32_array_keeps_float32(primitive):
    x = np.array([1.5, 2.5], np.float32)
    g = np.ones(2, np.float32)
    assert get_rule(primitive).vjp(g, primitive(x, 2.0), x, 2.0)[0].dtype == np.float32
    assert get_rule(primitive).vjp(g, primitive(2.0, x), 2.0, x)[1].dtype == np.float32


# ---------------------------------------------------------------------------- cast_like


def test_cast_like():
    x64 = np.array([1.0, 2.0])
    x32 = x64.astype(np.float32)
    assert cast_like(x64, x32).dtype == np.float32
    assert cast_like(x32, 3.0).dtype == np.float64
    assert cast_like(x32, np.arange(2)).dtype == np.float64
    assert cast_like(x64, x64) is x64
    assert cast_like(2.5, 1.0) == 2.5 and isinstance(cast_like(2.5, 1.0), float)
    assert type(cast_like(2.5, x32)) is np.float32


@pytest.mark.parametrize("shape", [(), (3,)], ids=shape_id)
def test_cast_like_rules(shape):
    value = real(rng_for("cast_like", shape), shape)
    check_rule(cast_like, value, np.zeros(shape), argnums=[0])
    check_jvp_shapes(cast_like, value, np.zeros(shape))


def test_times_power_of_two():
    assert times_power_of_two(3.0, 4) == 48.0 and type(times_power_of_two(3.0, 4)) is float
    with np.errstate(over="ignore"):
        assert times_power_of_two(1e300, 100) == np.inf  # as doubling would, not an error
    x32 = np.array([1.5, -2.0], np.float32)
    np.testing.assert_array_equal(times_power_of_two(x32, 3), [12.0, -16.0])
    assert times_power_of_two(x32, 3).dtype == np.float32
    assert type(times_power_of_two(np.float32(1.5), 2)) is np.float32


@pytest.mark.parametrize("shape", [(), (3,)], ids=shape_id)
def test_times_power_of_two_rules(shape):
    value = real(rng_for("times_power_of_two", shape), shape)
    check_rule(times_power_of_two, value, 3, argnums=[0])
    check_jvp_shapes(times_power_of_two, value, 3)


@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(2, 3), (3,), ()]])
def test_builtin_sum_of_a_list(shapes):
    rng = np.random.default_rng(5)
    items = [rng.standard_normal(shape) for shape in shapes]
    check_rule(sum, items, 0.5, argnums=[0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64])
@pytest.mark.parametrize("shape", [(), (3,)], ids=shape_id)
def test_tanh_keeps_a_narrow_dtype(dtype, shape):
    # the rule's float literal (1.0 - ans ** 2) must not widen float16 or float32. NumPy
    # before 2 widens a 0-d value with any Python number, 1 as much as 1.0 (value-based
    # casting of scalars), so there only arrays of one or more dimensions keep theirs
    if shape == () and np.lib.NumpyVersion(np.__version__) < "2.0.0":
        pytest.skip("NumPy 1.x casts 0-d values by value")
    x = np.linspace(-0.5, 0.7, int(np.prod(shape))).reshape(shape).astype(dtype)
    cotangent = get_rule(np.tanh).vjp(np.ones(shape, dtype), np.tanh(x), x)
    assert np.result_type(cotangent) == dtype
    for mode in ("s2s", "tape"):
        gradient = sg.grad(lambda v: np.sum(np.tanh(v)).real, mode=mode)
        assert np.result_type(gradient(x)) == dtype
        np.testing.assert_allclose(
            gradient(x), 1 / np.cosh(x.astype(np.complex128)) ** 2, rtol=1e-2
        )
