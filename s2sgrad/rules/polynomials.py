"""Derivative rules of NumPy's polynomial algebra on coefficient vectors (highest power
first, as ``np.polyval`` reads them): ``np.polyadd``, ``np.polysub``, ``np.polymul``,
``np.polyder``, ``np.polyint``, ``np.poly``, ``np.roots``, ``np.polydiv`` and
``np.polynomial.polynomial.polyval`` (lowest power first).

* ``polyadd`` and ``polysub`` add the shorter vector to the end of the longer one: each
  cotangent is the end of ``g`` as long as its argument.
* ``polymul(a1, a2)`` is ``np.convolve(a1, a2)``: the cotangent of ``a1`` is
  ``np.correlate(g, a2, "valid")``.
* ``polyder(p, m)`` and ``polyint(p, m, k)`` scale each coefficient by a fixed factor
  (``polyint`` appends the constants ``k``, each by a fixed factor too): the factors are
  ``polyder`` and ``polyint`` of ones.
* ``poly(r)`` of a vector of real roots is ``prod (x - r_j)``: its derivative in ``r_j``
  is ``-[0, poly(r without r_j)]``. ``poly`` of a matrix (its characteristic polynomial)
  is refused.
* ``roots(p)``: a simple root ``r`` of ``p`` moves by ``-polyval(dp, r) / polyval(p', r)``
  (differentiate ``p(r) = 0``); the roots may be complex. A repeated root has no
  derivative and is refused.
* ``polydiv(u, v)`` gives ``q, r`` with ``u = q v + r``: linear in ``u`` (a triangular
  Toeplitz solve), and ``(dq, dr) = polydiv(-q dv, v)`` in ``v``.
* ``np.polynomial.polynomial.polyval(x, c, tensor)`` is ``sum_i c[i] x ** i`` (lowest power
  first; ``c``'s other axes broadcast against ``x``, or go first with ``tensor=True``), and
  ``chebval``, ``legval``, ``hermval``, ``hermeval`` and ``lagval`` of ``np.polynomial``'s
  other modules are ``sum_i c[i] B_i(x)`` in their bases, each ``B_i`` written as its
  power series (NumPy's ``cheb2poly``, ...).

Polynomials given as ``np.poly1d`` objects are refused (their coefficients are read as
arrays only). Every rule body is made of functions with rules, so derivatives of any order
follow.

Example::

    sg.grad(lambda r: np.sum(np.poly(r) ** 2))(np.array([0.5, -1.0, 2.0]))
"""

from __future__ import annotations

import numpy as np

from s2sgrad.rules.registry import (
    complex_ready,
    complex_source,
    jvp_rule,
    nondifferentiable,
    returns_several,
    vjp_rule,
)
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import unbroadcast
from s2sgrad.runtime.core import is_complex

__all__: list[str] = []

_VECTORS = (
    "np.{name} is differentiated for coefficient vectors (one dimension, or a number); "
    "got an argument of shape {shape}: apply it to each vector in a loop"
)
_POLY_MATRIX = (
    "np.poly of a matrix (its characteristic polynomial) is not differentiated; pass the "
    "roots as a vector, e.g. np.poly(np.linalg.eigvalsh(a)) for a symmetric a"
)
_REPEATED_ROOT = (
    "np.roots has a repeated root here (the polynomial's derivative vanishes at it): a "
    "repeated root moves like a square root of the coefficients and has no derivative"
)


def _vectors(name: str, *arrays) -> None:
    for array in arrays:
        if np.ndim(array) > 1:
            refuse(_VECTORS.format(name=name, shape=np.shape(array)))


def _tail(g, a):
    """The last ``size(a)`` coefficients of ``g``, shaped like ``a``."""
    return np.reshape(g[np.size(g) - np.size(a) :], np.shape(a))


def _lead(t, ans):
    """``t`` (a coefficient vector or a number) with zeros in front, as long as ``ans``."""
    vector = np.ravel(t)
    return np.pad(vector, (np.size(ans) - np.size(vector), 0))


# ---------------------------------------------------------------------------------------
# Sums and products


@vjp_rule(np.polyadd, inline=False)
def _polyadd(g, ans, a1, a2):
    _vectors("polyadd", a1, a2)
    return _tail(g, a1), _tail(g, a2)


@jvp_rule(np.polyadd, inline=False)
def _polyadd_jvp(t, ans, a1, a2):
    _vectors("polyadd", a1, a2)
    return _lead(t, ans), _lead(t, ans)


@vjp_rule(np.polysub, inline=False)
def _polysub(g, ans, a1, a2):
    _vectors("polysub", a1, a2)
    return _tail(g, a1), -_tail(g, a2)


@jvp_rule(np.polysub, inline=False)
def _polysub_jvp(t, ans, a1, a2):
    _vectors("polysub", a1, a2)
    return _lead(t, ans), -_lead(t, ans)


@vjp_rule(np.polymul, inline=False)
def _polymul(g, ans, a1, a2):
    _vectors("polymul", a1, a2)
    first = np.reshape(np.correlate(g, np.ravel(a2), "valid"), np.shape(a1))
    second = np.reshape(np.correlate(g, np.ravel(a1), "valid"), np.shape(a2))
    return first, second


@jvp_rule(np.polymul, inline=False)
def _polymul_jvp(t, ans, a1, a2):
    _vectors("polymul", a1, a2)
    return np.convolve(np.ravel(t), np.ravel(a2)), np.convolve(np.ravel(a1), np.ravel(t))


# ---------------------------------------------------------------------------------------
# Derivatives and integrals: fixed factors on each coefficient


@vjp_rule(np.polyder, inline=False)
def _polyder(g, ans, p, m=1):
    _vectors("polyder", p)
    factors = np.polyder(np.ones(np.size(p)), m)
    scaled = np.pad(g * factors, (0, np.size(p) - np.size(factors)))
    return np.reshape(scaled, np.shape(p))


@jvp_rule(np.polyder, inline=False)
def _polyder_jvp(t, ans, p, m=1):
    _vectors("polyder", p)
    return np.polyder(t, m)


@vjp_rule(np.polyint, inline=False)
def _polyint(g, ans, p, m=1, k=None):
    _vectors("polyint", p)
    count = np.size(p)
    factors = np.polyint(np.ones(count), m)[:count]
    constants = np.polyint(np.zeros(count), m, np.ones(m))[count:]
    gk = None
    if k is not None and m > 0:
        gk = unbroadcast(g[count:] * constants, k)
    return np.reshape(g[:count] * factors, np.shape(p)), None, gk


@jvp_rule(np.polyint, inline=False)
def _polyint_jvp(t, ans, p, m=1, k=None):
    # forward mode calls this once per differentiated argument, with that argument's
    # tangent: an entry is computed only for a tangent of its argument's shape
    _vectors("polyint", p)
    from_p = from_k = None
    if np.shape(t) == np.shape(p):
        from_p = np.polyint(t, m)
    if k is not None and np.shape(t) == np.shape(k):
        from_k = np.polyint(np.zeros(np.size(p)), m, t)
    return from_p, None, from_k


# ---------------------------------------------------------------------------------------
# Roots to coefficients and back


def _cofactors(seq_of_zeros):
    """Row ``j``: the coefficients of ``prod_{i != j} (x - r_i)``."""
    count = np.size(seq_of_zeros)
    return np.stack([np.poly(np.delete(seq_of_zeros, j)) for j in range(count)])


@vjp_rule(np.poly, inline=False)
def _poly(g, ans, seq_of_zeros):
    if np.ndim(seq_of_zeros) > 1:
        refuse(_POLY_MATRIX)
    if np.size(seq_of_zeros) == 0:
        return np.zeros(np.shape(seq_of_zeros))
    return np.reshape(-np.matmul(_cofactors(seq_of_zeros), g[1:]), np.shape(seq_of_zeros))


@jvp_rule(np.poly, inline=False)
def _poly_jvp(t, ans, seq_of_zeros):
    if np.ndim(seq_of_zeros) > 1:
        refuse(_POLY_MATRIX)
    if np.size(seq_of_zeros) == 0:
        return np.zeros(np.shape(ans))
    moved = -np.matmul(np.ravel(t), _cofactors(seq_of_zeros))
    return np.concatenate([np.zeros(1, dtype=moved.dtype), moved])


def _refuse_repeated_roots(p, roots) -> None:
    """Refuse where ``p'`` vanishes at a root (a repeated root): checked on values only."""
    slopes = np.abs(np.polyval(np.polyder(p), roots))
    scale = np.max(np.abs(p)) * (1.0 + np.max(np.abs(roots), initial=0.0)) ** np.size(p)
    if np.any(slopes <= 1e-8 * scale):
        refuse(_REPEATED_ROOT)


nondifferentiable(_refuse_repeated_roots)


def _root_slopes(p, roots):
    """``p'(r)`` at each root, refused where it vanishes (a repeated root)."""
    _refuse_repeated_roots(p, roots)
    return np.polyval(np.polyder(p), roots)


@vjp_rule(np.roots, inline=False)
def _roots(g, ans, p):
    _vectors("roots", p)
    if np.size(ans) == 0:
        return np.zeros(np.shape(p))
    coefficients = np.ravel(p)
    weights = g / _root_slopes(coefficients, ans)
    moved = -np.matmul(weights, np.vander(ans, np.size(coefficients)))
    if not is_complex(p):  # the convention for a real argument: the real part
        moved = np.real(moved)
    return np.reshape(moved, np.shape(p))


@jvp_rule(np.roots, inline=False)
def _roots_jvp(t, ans, p):
    _vectors("roots", p)
    if np.size(ans) == 0:
        return np.zeros(np.shape(ans))
    coefficients = np.ravel(p)
    return -np.polyval(np.ravel(t), ans) / _root_slopes(coefficients, ans)


complex_source(np.roots)
# holomorphic, and written without conjugates (docs/complex.md): the rules of np.roots and
# of the functions its rule calls are right for complex coefficients and roots
complex_ready(np.roots, np.polyder, np.polyval, np.vander)


# ---------------------------------------------------------------------------------------
# Division: u = q v + r


returns_several(np.polydiv)


def _fit_remainder(dr, r):
    """``dr`` cut or padded in front to the length of ``r``, which NumPy trims of leading
    zeros."""
    count = np.size(r)
    if np.size(dr) >= count:
        return dr[np.size(dr) - count :]
    return np.pad(dr, (count - np.size(dr), 0))


def _division_transposed(gq, gr, q, r, u, v):
    """The cotangent of ``u`` when ``gq`` and ``gr`` are those of ``polydiv(u, v)``."""
    length = np.size(u)
    count = np.size(q)
    top = length - np.size(v) + 1  # the coefficients of u that make q
    if top <= 0:  # u shorter than v: q = 0 and r = u
        return _fit_remainder(gr, u)
    below = _fit_remainder(gr, np.zeros(length - top))
    through_r = np.correlate(np.concatenate([np.zeros(count), below]), v, "valid")
    target = gq - through_r
    # solve T^T y = target for T, the lower triangular Toeplitz matrix of v: reversed, T y = ..
    solved = np.polydiv(np.concatenate([target[::-1], np.zeros(np.size(v) - 1)]), v)[0]
    return np.concatenate([solved[::-1], below])


@vjp_rule(np.polydiv, inline=False)
def _polydiv(g, ans, u, v):
    _vectors("polydiv", u, v)
    q = ans[0]
    r = ans[1]
    gq = np.zeros(np.shape(q)) if g[0] is None else g[0]
    gr = np.zeros(np.shape(r)) if g[1] is None else g[1]
    gu = _division_transposed(gq, gr, q, r, np.ravel(u), np.ravel(v))
    # u shorter than v: q = 0 and r = u, whatever v
    shorter = np.size(u) < np.size(v)
    gv = np.zeros(np.shape(v)) if shorter else -np.correlate(gu, q, "valid")
    return np.reshape(gu, np.shape(u)), np.reshape(gv, np.shape(v))


@jvp_rule(np.polydiv, inline=False)
def _polydiv_jvp(t, ans, u, v):
    _vectors("polydiv", u, v)
    q = ans[0]
    r = ans[1]
    by_u = np.polydiv(np.ravel(t), np.ravel(v))
    by_v = np.polydiv(-np.convolve(q, np.ravel(t)), np.ravel(v))
    return (
        (_fit_remainder(by_u[0], q), _fit_remainder(by_u[1], r)),
        (_fit_remainder(by_v[0], q), _fit_remainder(by_v[1], r)),
    )


# ---------------------------------------------------------------------------------------
# np.polynomial.polynomial.polyval: lowest power first


_polynomial_polyval = np.polynomial.polynomial.polyval

# polyval(x, c) = sum_i c[i] x ** i, with c's first axis the powers: moved last, each
# coefficient array meets x ** i by broadcasting (tensor=True: c's other axes first, then x's).


@vjp_rule(_polynomial_polyval)
def _polynomial_polyval_vjp(g, ans, x, c, tensor=True):
    exponents = np.arange(np.shape(c)[0])
    powers = np.expand_dims(x, -1) ** exponents
    slopes = np.concatenate([powers[..., :1] * 0.0, powers[..., :-1] * exponents[1:]], axis=-1)
    moved = np.moveaxis(c, 0, -1)
    if tensor:
        c_last = np.reshape(moved, np.shape(moved)[:-1] + (1,) * np.ndim(x) + exponents.shape)
    else:
        c_last = moved
    spread = np.expand_dims(g, -1)
    gx = unbroadcast(np.sum(spread * c_last * slopes, axis=-1), x)
    gc = np.moveaxis(np.reshape(unbroadcast(spread * powers, c_last), np.shape(moved)), -1, 0)
    return gx, gc


@jvp_rule(_polynomial_polyval)
def _polynomial_polyval_jvp(t, ans, x, c, tensor=True):
    exponents = np.arange(np.shape(c)[0])
    powers = np.expand_dims(x, -1) ** exponents
    slopes = np.concatenate([powers[..., :1] * 0.0, powers[..., :-1] * exponents[1:]], axis=-1)
    moved = np.moveaxis(c, 0, -1)
    if tensor:
        c_last = np.reshape(moved, np.shape(moved)[:-1] + (1,) * np.ndim(x) + exponents.shape)
        t_shape = np.shape(moved)[:-1] + (1,) * np.ndim(x) + exponents.shape
    else:
        c_last = moved
        t_shape = np.shape(moved)
    return (
        t * np.sum(c_last * slopes, axis=-1),
        np.sum(np.reshape(np.moveaxis(t, 0, -1), t_shape) * powers, axis=-1),
    )


# The other bases (chebval, legval, hermval, hermeval, lagval): f(x, c) = sum_i c[i] B_i(x),
# with B_i = sum_k M[k, i] x ** k, M the power series of the basis (NumPy's cheb2poly, ...,
# of the identity: constants), so the rules are made of powers of x and products.


def _power_series(to_power, count: int) -> np.ndarray:
    """``M``: column ``i`` the power series of the basis polynomial ``B_i``."""
    columns = [np.pad(to_power(row), (0, count - len(to_power(row)))) for row in np.eye(count)]
    return np.stack(columns, axis=1)


nondifferentiable(_power_series)


def _basis_values(to_power, x, count):
    """``(B(x), B'(x))``, each with the basis index last."""
    exponents = np.arange(count)
    powers = np.expand_dims(x, -1) ** exponents
    slopes = np.concatenate([powers[..., :1] * 0.0, powers[..., :-1] * exponents[1:]], axis=-1)
    series = _power_series(to_power, count)
    return np.matmul(powers, series), np.matmul(slopes, series)


def _c_last(c, x, tensor):
    moved = np.moveaxis(c, 0, -1)
    if tensor:
        return np.reshape(moved, np.shape(moved)[:-1] + (1,) * np.ndim(x) + np.shape(c)[:1])
    return moved


def _in_basis_vjp(g, x, c, tensor, basis, slopes):
    c_last = _c_last(c, x, tensor)
    spread = np.expand_dims(g, -1)
    gx = unbroadcast(np.sum(spread * c_last * slopes, axis=-1), x)
    moved_shape = np.shape(np.moveaxis(c, 0, -1))
    gc = np.moveaxis(np.reshape(unbroadcast(spread * basis, c_last), moved_shape), -1, 0)
    return gx, gc


def _in_basis_jvp(t, x, c, tensor, basis, slopes):
    # called once per differentiated argument with its tangent: an entry is computed only
    # for a tangent of its argument's shape
    from_x = from_c = None
    if np.shape(t) == np.shape(x):
        from_x = t * np.sum(_c_last(c, x, tensor) * slopes, axis=-1)
    if np.shape(t) == np.shape(c):
        from_c = np.sum(_c_last(t, x, tensor) * basis, axis=-1)
    return from_x, from_c


_chebyshev = np.polynomial.chebyshev
_legendre = np.polynomial.legendre
_hermite = np.polynomial.hermite
_hermite_e = np.polynomial.hermite_e
_laguerre = np.polynomial.laguerre


@vjp_rule(_chebyshev.chebval, inline=False)
def _chebval(g, ans, x, c, tensor=True):
    basis = _basis_values(_chebyshev.cheb2poly, x, np.shape(c)[0])
    gx, gc = _in_basis_vjp(g, x, c, tensor, *basis)
    return gx, gc


@jvp_rule(_chebyshev.chebval, inline=False)
def _chebval_jvp(t, ans, x, c, tensor=True):
    basis = _basis_values(_chebyshev.cheb2poly, x, np.shape(c)[0])
    from_x, from_c = _in_basis_jvp(t, x, c, tensor, *basis)
    return from_x, from_c


@vjp_rule(_legendre.legval, inline=False)
def _legval(g, ans, x, c, tensor=True):
    basis = _basis_values(_legendre.leg2poly, x, np.shape(c)[0])
    gx, gc = _in_basis_vjp(g, x, c, tensor, *basis)
    return gx, gc


@jvp_rule(_legendre.legval, inline=False)
def _legval_jvp(t, ans, x, c, tensor=True):
    basis = _basis_values(_legendre.leg2poly, x, np.shape(c)[0])
    from_x, from_c = _in_basis_jvp(t, x, c, tensor, *basis)
    return from_x, from_c


@vjp_rule(_hermite.hermval, inline=False)
def _hermval(g, ans, x, c, tensor=True):
    basis = _basis_values(_hermite.herm2poly, x, np.shape(c)[0])
    gx, gc = _in_basis_vjp(g, x, c, tensor, *basis)
    return gx, gc


@jvp_rule(_hermite.hermval, inline=False)
def _hermval_jvp(t, ans, x, c, tensor=True):
    basis = _basis_values(_hermite.herm2poly, x, np.shape(c)[0])
    from_x, from_c = _in_basis_jvp(t, x, c, tensor, *basis)
    return from_x, from_c


@vjp_rule(_hermite_e.hermeval, inline=False)
def _hermeval(g, ans, x, c, tensor=True):
    basis = _basis_values(_hermite_e.herme2poly, x, np.shape(c)[0])
    gx, gc = _in_basis_vjp(g, x, c, tensor, *basis)
    return gx, gc


@jvp_rule(_hermite_e.hermeval, inline=False)
def _hermeval_jvp(t, ans, x, c, tensor=True):
    basis = _basis_values(_hermite_e.herme2poly, x, np.shape(c)[0])
    from_x, from_c = _in_basis_jvp(t, x, c, tensor, *basis)
    return from_x, from_c


@vjp_rule(_laguerre.lagval, inline=False)
def _lagval(g, ans, x, c, tensor=True):
    basis = _basis_values(_laguerre.lag2poly, x, np.shape(c)[0])
    gx, gc = _in_basis_vjp(g, x, c, tensor, *basis)
    return gx, gc


@jvp_rule(_laguerre.lagval, inline=False)
def _lagval_jvp(t, ans, x, c, tensor=True):
    basis = _basis_values(_laguerre.lag2poly, x, np.shape(c)[0])
    from_x, from_c = _in_basis_jvp(t, x, c, tensor, *basis)
    return from_x, from_c


# NumPy's polynomial package is Python code without __array_function__ (tape/library_calls.py
# routes these calls to their rules on the tape)
IN_A_BASIS = (
    _polynomial_polyval,
    _chebyshev.chebval,
    _legendre.legval,
    _hermite.hermval,
    _hermite_e.hermeval,
    _laguerre.lagval,
)
