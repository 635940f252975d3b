"""Derivative rules of elementwise functions: arithmetic operators, ufuncs and math builtins.

Unary functions: for a function applied elementwise to one argument, the VJP and the JVP
are the same map (multiply by ``f'(x)``), so one rule serves as both; its first parameter
receives the cotangent in reverse mode and the tangent in forward mode.

Binary functions: reverse-mode rules sum each cotangent down to its argument's shape with
``unbroadcast``; every forward-mode contribution has the output's shape (``np.broadcast_to``
where a tangent passes through unchanged, as in ``x + y`` with ``x`` smaller than ``y``).

Points where the derivative does not exist get these values:

* ``maximum``, ``minimum``, ``fmax``, ``fmin`` and builtin ``max``/``min`` of two values:
  at a tie between two differentiated arguments the derivative is split equally, half to
  each; at a tie with a constant it goes to the constant (``np.maximum(z, 0)`` at ``z == 0``
  has derivative 0 in ``z``, as ReLU has in TensorFlow, PyTorch and JAX);
* ``abs`` and ``fabs``: 0 at 0;
* ``x ** y`` with respect to ``y`` at ``x == 0``: 0 (``0 ** y`` is constant for ``y > 0``).

``np.sign`` has derivative 0 wherever it has one and gets a rule returning zeros; rounding,
comparisons and logical operations are declared non-differentiable. ``np.real`` and
``np.nan_to_num`` are differentiated for real inputs.
"""

import operator

import numpy as np

from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.registry import (
    jvp_rule,
    nondifferentiable,
    vjp_and_jvp_rule,
    vjp_rule,
    zero_by_design,
)
from s2sgrad.runtime import LN2, LN10, bessel_i1, cast_like, unbroadcast, zeros_like_value
from s2sgrad.runtime.core import CotangentList

# ---------------------------------------------------------------------------- unary


@vjp_and_jvp_rule(np.negative, operator.neg)
def _negative(g, ans, x):
    return -g


@vjp_and_jvp_rule(np.positive, operator.pos, float)
def _identity(g, ans, x):
    return g


# Complex values follow docs/complex.md: a cotangent is the derivative of the real loss
# wrt the real part minus i times that wrt the imaginary part. Functions with real results
# take the real part of their cotangent (``np.real(g)``) before using it.


@vjp_rule(np.real, np.ndarray.real)
def _real(g, ans, val):
    return np.real(g)


@jvp_rule(np.real, np.ndarray.real)
def _real_jvp(t, ans, val):
    return np.real(t)


@vjp_rule(np.imag, np.ndarray.imag)
def _imag(g, ans, val):
    return unbroadcast(-1j * np.real(g), val)


@jvp_rule(np.imag, np.ndarray.imag)
def _imag_jvp(t, ans, val):
    return np.imag(t)


@vjp_and_jvp_rule(np.conjugate, np.ndarray.conj, np.ndarray.conjugate)
def _conjugate(g, ans, x):
    return np.conj(g)


# |z| has the direction conj(z) / |z| (sign(x) for a real x), and 0 at 0.
@vjp_rule(np.absolute, np.fabs, abs)
def _absolute(g, ans, x):
    return np.real(g) * np.conj(x) / np.where(ans == 0, 1, ans)


@jvp_rule(np.absolute, np.fabs, abs)
def _absolute_jvp(t, ans, x):
    return np.real(np.conj(x) * t) / np.where(ans == 0, 1, ans)


# angle(z) = arctan2(imag, real): its gradient is -i conj(z) / |z|^2 (0 for a real z).
@vjp_rule(np.angle)
def _angle(g, ans, z, deg=False):
    scale = 1.0
    if deg:
        scale = 180 / np.pi
    squared = np.real(z * np.conj(z))
    squared = np.where(squared == 0, 1, squared)
    return unbroadcast(np.real(g) * (-1j * scale) * np.conj(z) / squared, z)


@jvp_rule(np.angle)
def _angle_jvp(t, ans, z, deg=False):
    scale = 1.0
    if deg:
        scale = 180 / np.pi
    squared = np.real(z * np.conj(z))
    squared = np.where(squared == 0, 1, squared)
    return np.imag(np.conj(z) * t) * scale / squared


@vjp_and_jvp_rule(np.sign)
def _sign(g, ans, x):
    return np.zeros_like(x)


@vjp_rule(np.nan_to_num)
def _nan_to_num(g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    # the replacement values are numbers: each receives the cotangents of what it replaced
    return (
        np.where(np.isfinite(x), g, 0.0),
        None,
        np.sum(g * np.isnan(x)),
        np.sum(g * np.isposinf(x)),
        np.sum(g * np.isneginf(x)),
    )


@jvp_rule(np.nan_to_num)
def _nan_to_num_jvp(t, ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    return (
        np.where(np.isfinite(x), t, 0.0),
        None,
        t * np.isnan(x),
        t * np.isposinf(x),
        t * np.isneginf(x),
    )


@vjp_and_jvp_rule(np.exp)
def _exp(g, ans, x):
    return g * ans


@vjp_and_jvp_rule(np.exp2)
def _exp2(g, ans, x):
    return g * ans * LN2


@vjp_and_jvp_rule(np.expm1)
def _expm1(g, ans, x):
    return g * (ans + 1)


@vjp_and_jvp_rule(np.log)
def _log(g, ans, x):
    return g / x


@vjp_and_jvp_rule(np.log1p)
def _log1p(g, ans, x):
    return g / (x + 1)


@vjp_and_jvp_rule(np.log2)
def _log2(g, ans, x):
    return g / (x * LN2)


@vjp_and_jvp_rule(np.log10)
def _log10(g, ans, x):
    return g / (x * LN10)


@vjp_and_jvp_rule(np.sqrt)
def _sqrt(g, ans, x):
    return g / (2 * ans)


@vjp_and_jvp_rule(np.cbrt)
def _cbrt(g, ans, x):
    return g / (3 * ans**2)


@vjp_and_jvp_rule(np.square)
def _square(g, ans, x):
    return g * 2 * x


@vjp_and_jvp_rule(np.reciprocal)
def _reciprocal(g, ans, x):
    return -g * ans**2


@vjp_and_jvp_rule(np.sin)
def _sin(g, ans, x):
    return g * np.cos(x)


@vjp_and_jvp_rule(np.cos)
def _cos(g, ans, x):
    return -g * np.sin(x)


@vjp_and_jvp_rule(np.tan)
def _tan(g, ans, x):
    return g * (1 + ans**2)


@vjp_and_jvp_rule(np.arcsin)
def _arcsin(g, ans, x):
    return g / np.sqrt(1 - x**2)


@vjp_and_jvp_rule(np.arccos)
def _arccos(g, ans, x):
    return -g / np.sqrt(1 - x**2)


@vjp_and_jvp_rule(np.arctan)
def _arctan(g, ans, x):
    return g / (1 + x**2)


@vjp_and_jvp_rule(np.sinh)
def _sinh(g, ans, x):
    return g * np.cosh(x)


@vjp_and_jvp_rule(np.cosh)
def _cosh(g, ans, x):
    return g * np.sinh(x)


@vjp_and_jvp_rule(np.tanh)
def _tanh(g, ans, x):
    return g * (1.0 - ans**2)  # 1.0: NumPy 2 subtracts from a float faster than from an int


@vjp_and_jvp_rule(np.arcsinh)
def _arcsinh(g, ans, x):
    return g / np.sqrt(x**2 + 1)


@vjp_and_jvp_rule(np.arccosh)
def _arccosh(g, ans, x):  # sqrt(x - 1) sqrt(x + 1): the branch of complex x too
    return g / (np.sqrt(x - 1) * np.sqrt(x + 1))


@vjp_and_jvp_rule(np.arctanh)
def _arctanh(g, ans, x):
    return g / (1 - x**2)


@vjp_and_jvp_rule(np.deg2rad, np.radians)
def _deg2rad(g, ans, x):
    return g * (np.pi / 180)


@vjp_and_jvp_rule(np.rad2deg, np.degrees)
def _rad2deg(g, ans, x):
    return g * (180 / np.pi)


@vjp_and_jvp_rule(np.sinc)
def _sinc(g, ans, x):
    # sinc'(x) = (cos(pi x) - sinc(x)) / x, which cancels near 0; there its series, whose
    # own derivative is right too (a second derivative at 0 is -pi**2 / 3, not 0)
    near = np.abs(x) < 1e-3
    z = np.pi * x
    series = -np.pi * z / 3 * (1 - z * z / 10 + z**4 / 280)
    return g * np.where(near, series, (np.cos(z) - ans) / np.where(near, 1, x))


@vjp_and_jvp_rule(np.i0)
def _i0(g, ans, x):
    return g * bessel_i1(x)


# ---------------------------------------------------------------------------- binary


@vjp_rule(np.add, operator.add)
def _add(g, ans, x1, x2):
    return unbroadcast(g, x1), unbroadcast(g, x2)


@jvp_rule(np.add, operator.add)
def _add_jvp(t, ans, x1, x2):
    return np.broadcast_to(t, np.shape(ans)), np.broadcast_to(t, np.shape(ans))


@vjp_rule(np.subtract, operator.sub)
def _subtract(g, ans, x1, x2):
    return unbroadcast(g, x1), unbroadcast(-g, x2)


@jvp_rule(np.subtract, operator.sub)
def _subtract_jvp(t, ans, x1, x2):
    return np.broadcast_to(t, np.shape(ans)), np.broadcast_to(-t, np.shape(ans))


@vjp_rule(np.multiply, operator.mul)
def _multiply(g, ans, x1, x2):
    return unbroadcast(g * x2, x1), unbroadcast(g * x1, x2)


@jvp_rule(np.multiply, operator.mul)
def _multiply_jvp(t, ans, x1, x2):
    return t * x2, x1 * t


@vjp_rule(np.divide, operator.truediv)
def _divide(g, ans, x1, x2):
    # x2 is constant along the axes unbroadcast sums, so divide after summing
    return unbroadcast(g / x2, x1), -unbroadcast(g * ans, x2) / x2


@jvp_rule(np.divide, operator.truediv)
def _divide_jvp(t, ans, x1, x2):
    return t / x2, -t * ans / x2


# In ``x ** 2`` the exponent is a constant: the transformer folds ``2 - (2 != 0)`` and
# ``x ** 1``, and computes the second entry (which needs a logarithm) only when the exponent
# is active. The exponent of the derivative is ``x2 - 1`` except where ``x2`` is 0: there
# ``x ** 0`` is constant, and ``0 * x ** -1`` would be nan (or a ZeroDivisionError for a
# Python float) at ``x == 0`` (``x ** i`` for ``i`` in ``range(n)``, the second derivative
# of ``x ** 1``).
# ``cast_like`` keeps a float32 exponent's cotangent float32 when the base is a Python
# number (``np.log(2.0)`` is a float64 NumPy scalar, which NumPy 2 does not treat as weak).
@vjp_rule(np.power, operator.pow)
def _power(g, ans, x1, x2):
    return (
        unbroadcast(g * x2 * x1 ** (x2 - (x2 != 0)), x1),
        cast_like(unbroadcast(g * ans * np.log(np.where(x1 == 0, 1, x1)), x2), x2),
    )


# An exponent's tangent meets log(x1), nan for a negative x1 (x1 ** x2 is real there only
# at integers x2): a zero tangent (an integer exponent's, a constant's) must stay 0, not
# turn the whole tangent nan (so log(1) stands in where the tangent is 0).


@jvp_rule(np.power, operator.pow)
def _power_jvp(t, ans, x1, x2):
    return t * x2 * x1 ** (x2 - (x2 != 0)), (
        t * ans * np.log(np.where((x1 == 0) | (t == 0), 1, x1))
    )


@vjp_rule(pow)
def _pow(g, ans, base, exp, mod=None):
    return (
        unbroadcast(g * exp * base ** (exp - (exp != 0)), base),
        cast_like(unbroadcast(g * ans * np.log(np.where(base == 0, 1, base)), exp), exp),
    )


@jvp_rule(pow)
def _pow_jvp(t, ans, base, exp, mod=None):
    return t * exp * base ** (exp - (exp != 0)), (
        t * ans * np.log(np.where((base == 0) | (t == 0), 1, base))
    )


# float_power computes in float64 (or wider); the cotangents keep their arguments' dtypes.
@vjp_rule(np.float_power)
def _float_power(g, ans, x1, x2):
    return (
        cast_like(unbroadcast(g * x2 * np.float_power(x1, x2 - (x2 != 0)), x1), x1),
        cast_like(unbroadcast(g * ans * np.log(np.where(x1 == 0, 1, x1)), x2), x2),
    )


@jvp_rule(np.float_power)
def _float_power_jvp(t, ans, x1, x2):
    return t * x2 * np.float_power(x1, x2 - (x2 != 0)), (
        t * ans * np.log(np.where((x1 == 0) | (t == 0), 1, x1))
    )


@vjp_rule(np.mod, operator.mod)
def _mod(g, ans, x1, x2):
    return unbroadcast(g, x1), unbroadcast(-g * np.floor_divide(x1, x2), x2)


@jvp_rule(np.mod, operator.mod)
def _mod_jvp(t, ans, x1, x2):
    return np.broadcast_to(t, np.shape(ans)), -t * np.floor_divide(x1, x2)


@vjp_rule(np.fmod)
def _fmod(g, ans, x1, x2):
    return unbroadcast(g, x1), unbroadcast(-g * np.trunc(x1 / x2), x2)


@jvp_rule(np.fmod)
def _fmod_jvp(t, ans, x1, x2):
    return np.broadcast_to(t, np.shape(ans)), -t * np.trunc(x1 / x2)


# At (0, 0) hypot has a corner, as np.linalg.norm at 0: both take the subgradient 0 there
# (so that hypot(x, y) ** 2 has the gradient 0 there, not nan).


@vjp_rule(np.hypot)
def _hypot(g, ans, x1, x2):
    radius = np.where(ans == 0, 1, ans)
    return unbroadcast(g * x1 / radius, x1), unbroadcast(g * x2 / radius, x2)


@jvp_rule(np.hypot)
def _hypot_jvp(t, ans, x1, x2):
    radius = np.where(ans == 0, 1, ans)
    return t * x1 / radius, t * x2 / radius


@vjp_rule(np.arctan2)
def _arctan2(g, ans, x1, x2):
    squared_radius = x1**2 + x2**2
    return unbroadcast(g * x2 / squared_radius, x1), unbroadcast(-g * x1 / squared_radius, x2)


@jvp_rule(np.arctan2)
def _arctan2_jvp(t, ans, x1, x2):
    squared_radius = x1**2 + x2**2
    return t * x2 / squared_radius, -t * x1 / squared_radius


# An argument -inf adds nothing whatever it is moved by: its weight is 0, also where both
# are -inf (ans = -inf too, and exp(x - ans) would be nan: log-space recursions start so)
@vjp_rule(np.logaddexp)
def _logaddexp(g, ans, x1, x2):
    to_x1 = g * np.exp(x1 - np.where(x1 == -np.inf, 0.0, ans))
    to_x2 = g * np.exp(x2 - np.where(x2 == -np.inf, 0.0, ans))
    return unbroadcast(to_x1, x1), unbroadcast(to_x2, x2)


@jvp_rule(np.logaddexp)
def _logaddexp_jvp(t, ans, x1, x2):
    return (
        t * np.exp(x1 - np.where(x1 == -np.inf, 0.0, ans)),
        t * np.exp(x2 - np.where(x2 == -np.inf, 0.0, ans)),
    )


@vjp_rule(np.logaddexp2)
def _logaddexp2(g, ans, x1, x2):
    to_x1 = g * np.exp2(x1 - np.where(x1 == -np.inf, 0.0, ans))
    to_x2 = g * np.exp2(x2 - np.where(x2 == -np.inf, 0.0, ans))
    return unbroadcast(to_x1, x1), unbroadcast(to_x2, x2)


@jvp_rule(np.logaddexp2)
def _logaddexp2_jvp(t, ans, x1, x2):
    return (
        t * np.exp2(x1 - np.where(x1 == -np.inf, 0.0, ans)),
        t * np.exp2(x2 - np.where(x2 == -np.inf, 0.0, ans)),
    )


# The argument equal to the result gets the derivative. At a tie between two differentiated
# arguments each gets half; at a tie with a constant (relu written np.maximum(z, 0)) the
# constant takes it, and z gets 0. Comparing with the result (not with the other argument)
# also covers fmax/fmin, which return the argument that is not NaN.
@vjp_rule(np.maximum)
def _maximum(g, ans, x1, x2, *, differentiated=(True, True)):
    # Against a constant, the argument got the result where the result exceeds the
    # constant (NaN compares false either way, like the general rule): a mask of the
    # result, so the backward keeps the result (as relu written by hand does), not the
    # argument.
    if differentiated == (True, False):
        return unbroadcast(g * (ans > x2), x1)
    if differentiated == (False, True):
        return None, unbroadcast(g * (ans > x1), x2)
    return (
        unbroadcast(np.where(x1 == x2, 0.5 * g, g * (x1 == ans)), x1),
        unbroadcast(np.where(x1 == x2, 0.5 * g, g * (x2 == ans)), x2),
    )


@vjp_rule(np.minimum)
def _minimum(g, ans, x1, x2, *, differentiated=(True, True)):
    if differentiated == (True, False):
        return unbroadcast(g * (ans < x2), x1)
    if differentiated == (False, True):
        return None, unbroadcast(g * (ans < x1), x2)
    return (
        unbroadcast(np.where(x1 == x2, 0.5 * g, g * (x1 == ans)), x1),
        unbroadcast(np.where(x1 == x2, 0.5 * g, g * (x2 == ans)), x2),
    )


@vjp_rule(np.fmax, np.fmin)
def _select(g, ans, x1, x2, *, differentiated=(True, True)):
    if differentiated == (True, False):
        return unbroadcast(g * ((x1 == ans) & (x1 != x2)), x1)
    if differentiated == (False, True):
        return None, unbroadcast(g * ((x2 == ans) & (x1 != x2)), x2)
    return (
        unbroadcast(np.where(x1 == x2, 0.5 * g, g * (x1 == ans)), x1),
        unbroadcast(np.where(x1 == x2, 0.5 * g, g * (x2 == ans)), x2),
    )


@jvp_rule(np.maximum, np.minimum, np.fmax, np.fmin)
def _select_jvp(t, ans, x1, x2, *, differentiated=(True, True)):
    if differentiated == (True, False):
        return t * ((x1 == ans) & (x1 != x2))
    if differentiated == (False, True):
        return None, t * ((x2 == ans) & (x1 != x2))
    return (
        np.where(x1 == x2, 0.5 * t, t * (x1 == ans)),
        np.where(x1 == x2, 0.5 * t, t * (x2 == ans)),
    )


@vjp_rule(np.ldexp)
def _ldexp(g, ans, x1, x2):
    return unbroadcast(np.ldexp(g, x2), x1)


@jvp_rule(np.ldexp)
def _ldexp_jvp(t, ans, x1, x2):
    return np.ldexp(t, x2)


# ``np.heaviside(x, h)`` is ``h`` where ``x == 0``, else 0 or 1; ``np.nextafter(x, y)`` moves
# ``x`` by one unit in the last place, towards ``y``.


@vjp_rule(np.heaviside)
def _heaviside(g, ans, x1, x2):
    return None, unbroadcast(g * (x1 == 0), x2)


@jvp_rule(np.heaviside)
def _heaviside_jvp(t, ans, x1, x2):
    return None, np.broadcast_to(t * (x1 == 0), np.shape(ans))


@vjp_rule(np.nextafter)
def _nextafter(g, ans, x1, x2):
    return unbroadcast(g, x1), None


@jvp_rule(np.nextafter)
def _nextafter_jvp(t, ans, x1, x2):
    return np.broadcast_to(t, np.shape(ans)), None


zero_by_design(np.heaviside, 0)  # 0 or 1 away from x1 == 0: piecewise constant in x1
zero_by_design(np.nextafter, 1)  # y only says which way to move: piecewise constant
zero_by_design(np.ldexp, 1)  # the exponent is an integer (frexp's, say): no derivative


# ---------------------------------------------------------------------------- no derivative

nondifferentiable(
    # comparisons
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
    # logical and bitwise operations
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
    # classification
    np.isfinite,
    np.isnan,
    np.isinf,
    np.isposinf,
    np.isneginf,
    np.signbit,
    # rounding, integer division and other piecewise-constant functions
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
)


@vjp_rule(sum)
def _builtin_sum(g, ans, iterable, start=0):
    # an array's cotangent is an array, which the chain rule's "* 2" multiplies (a list's
    # would be repeated)
    if isinstance(iterable, np.ndarray):
        if len(iterable) == 0:
            return zeros_like_value(iterable), unbroadcast(g, start)
        return np.stack([unbroadcast(g, row) for row in iterable]), unbroadcast(g, start)
    return [unbroadcast(g, item) for item in iterable], unbroadcast(g, start)


@jvp_rule(sum)
def _builtin_sum_jvp(t, ans, iterable, start=0):
    return sum(t), t


# Python's max and min: the value returned is one of those given (the first extreme one,
# of two values too: max(a, b) is a unless b > a), and its cotangent goes to it alone, as
# on the tape, where Python's own max returns that value (docs/conventions.md).


@vjp_rule(max, min, inline=False)
def _builtin_select(g, ans, *args, differentiated=(True, True), **options):
    values, position = _chosen(ans, args, options)
    entries = [zeros_like_value(v) for v in values]
    entries[position] = g
    if len(args) == 1 and isinstance(args[0], np.ndarray):  # an array, as sum's
        return (np.stack(entries),)
    if len(args) == 1:
        return (CotangentList(entries),)
    return tuple(entries)


@jvp_rule(max, min, inline=False)
def _builtin_select_jvp(t, ans, *args, differentiated=(True, True), **options):
    values, position = _chosen(ans, args, options)
    if len(args) == 1:  # t: the sequence's tangent
        return (list(t)[position],)
    # a record's tangent is by attribute (runtime/records.py): its zero is too
    zero = zeros_like_value(t) if isinstance(t, dict) else 0.0 * t
    return tuple(t if i == position else zero for i in range(len(args)))


def _chosen(ans, args, options):
    """The values ``max``/``min`` chose among, and the position of the one it returned
    (whatever ``key`` chose by: the value returned is one of them)."""
    unknown = sorted(set(options) - {"key"})
    if unknown or not args:
        raise UnsupportedError(
            f"max(...)/min(...) with {unknown or 'no values'} is not differentiated; "
            "compute the value with np.max/np.min, or use mode='tape'"
        )
    values = list(args[0]) if len(args) == 1 else list(args)
    for position, value in enumerate(values):
        if value is ans:
            return values, position
    for position, value in enumerate(values):
        if np.all(value == ans):
            return values, position
    raise UnsupportedError("max(...)/min(...) returned none of its values; use mode='tape'")
