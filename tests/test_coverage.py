"""Coverage of NumPy's public surface (and SciPy's special functions and distributions).

Every public callable of ``numpy``, ``numpy.linalg``, ``numpy.fft``, ``scipy.special`` and
the methods of the ``scipy.stats`` distributions issue 13 lists (tests/coverage_surface.py)
is exactly one of:

* **a rule**: its sample program below is checked by ``check_grads`` to second order,
  reverse and forward, in both engines, in float64 over broadcasting shapes; where NumPy
  accepts complex values and the rule is declared complex-ready, in complex128 against
  central differences too: the gradient, the JVP along a complex tangent, and to second
  order the VJP of the gradient and ``hvp`` (docs/complex.md, "What is checked"); and
  float32 (complex64) arguments get float32 (complex64) gradients;
* **declared non-differentiable**: proved piecewise constant or integer/boolean valued by
  tests/test_closed_world.py (its ``PROOFS``);
* **refused**: declared in tests/coverage_surface.py with the reason, and checked to raise an
  S2SGradError naming the line of the call.

A new NumPy function that is none of these fails ``test_every_public_callable_is_covered``.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from coverage_surface import public_surface, refused_reason
from oracle import numeric_complex_grad, numeric_grad
from test_closed_world import BY_DESIGN, PROOFS

import s2sgrad as sg
from s2sgrad.errors import S2SGradError
from s2sgrad.rules import get_rule

try:
    import scipy.special as special
    import scipy.stats as stats
except ImportError:  # SciPy is optional: its rows are left out
    special = stats = None

ENGINES = ("s2s", "tape")
HERE = __file__.rsplit("/", 1)[-1]
RNG = np.random.default_rng(2026)


# Domains where each function is smooth
def positive(shape):
    return RNG.uniform(0.5, 2.0, shape)


def real(shape):
    return RNG.uniform(-2.0, 2.0, shape)


def unit(shape):
    return RNG.uniform(-0.8, 0.8, shape)


def above_one(shape):
    return RNG.uniform(1.2, 3.0, shape)


def probability(shape):
    return RNG.uniform(0.1, 0.9, shape)


def spd(shape):  # a well-conditioned matrix, symmetric positive definite
    a = RNG.uniform(-1.0, 1.0, shape)
    return a @ np.swapaxes(a, -1, -2) / shape[-1] + np.eye(shape[-1])


def well_conditioned(shape):
    return RNG.uniform(-1.0, 1.0, shape) / shape[-1] + 2.0 * np.eye(*shape[-2:])


def well_conditioned_tensor(shape):  # (2, 3, 6): a well-conditioned 6 x 6 matrix
    return well_conditioned((shape[-1], shape[-1])).reshape(shape)


class Sample:
    """A program that calls one primitive, and the shapes and domains of its arguments."""

    def __init__(self, primitive, program, *shapes, domain=positive, complex_=True, checks=None):
        self.primitive = primitive
        self.checks = checks or {}  # check_grads' step and tolerances, for a narrow dtype
        self.program = program
        self.shapes = shapes
        self.domains = domain if isinstance(domain, tuple) else (domain,) * len(shapes)
        self.complex = complex_  # False: NumPy accepts complex values but means other math

    def arguments(self, dtype=np.float64):
        return tuple(d(s).astype(dtype) for d, s in zip(self.domains, self.shapes))


# ---------------------------------------------------------------------------- ufuncs

A, B = (2, 3), (3,)  # broadcasting shapes of binary functions
A4 = (2, 4)  # broadcasts against (4,)
UNARY_DOMAINS = {
    # tan: up to 2.0 would pass its pole at pi / 2
    **dict.fromkeys(["arcsin", "arccos", "arctanh", "asin", "acos", "atanh", "tan"], unit),
    **dict.fromkeys(["arccosh", "acosh"], above_one),
    **dict.fromkeys(["sign", "fabs"], real),
}


def _unary(u):
    def program(x):
        return u(x)

    return program


def _binary(u):
    def program(x, y):
        return u(x, y)

    return program


S = Sample


def ufunc_sample(u) -> Sample:
    if u.nin == 1:
        return Sample(u, _unary(u), A, domain=UNARY_DOMAINS.get(u.__name__, positive))
    return Sample(u, _binary(u), A, B)


def _bigger(shape):
    return RNG.uniform(2.5, 3.0, shape)


W, WR = well_conditioned, (well_conditioned, real)
PA, QA = (positive, above_one), (probability, above_one)
UUS = (unit, unit, spd)
I3 = np.eye(3)
XP = np.array([0.0, 1.0, 2.0, 3.0])
MASK = np.array([True, False, True])
IDX = np.array([2, 0, 2])
HISTOGRAM_DATA = np.array([0.1, 0.5, 0.55, 0.9, 0.2, 1.5])  # the last outside the range
BINS = np.array([0, 2, 2, 1, 0, 2])  # bin 3 empty, bin 4 only from minlength
KEEP = np.ones((3, 4), bool)  # NaN in the others (two in column 1, two in row 2)
KEEP[0, 1] = KEEP[2, 1] = KEEP[2, 3] = False


def holes(x):
    return np.where(KEEP, x, np.nan)


# fmt: off
def _if_present(name: str, make) -> list:
    """``[make()]`` where the installed NumPy has ``np.<name>`` (NumPy 2 added some of the
    functions sampled here, and took ``np.trapz`` away), else ``[]``."""
    return [make()] if name in dir(np) else []


# NumPy 2's array-API names, sampled where the installed NumPy has them (NumPy 1.x's
# np.row_stack is np.vstack itself, sampled below)
def row_stack(x, y):
    return np.row_stack([x, y])


def vecdot(x, y):
    return np.vecdot(x, y, axis=0)


def matvec(x, y):
    return np.matvec(x, y)


def vecmat(x, y):
    return np.vecmat(x, y)


def matrix_transpose(x):
    return np.matrix_transpose(x)


def unstack(x):
    return np.unstack(x, axis=1)[2]


def cumulative_sum(x):
    return np.cumulative_sum(x, axis=1, include_initial=True)


def cumulative_prod(x):
    return np.cumulative_prod(x)


def linalg_matmul(x, y):
    return np.linalg.matmul(x, y)


def linalg_outer(x, y):
    return np.linalg.outer(x, y)


def linalg_trace(x):
    return np.linalg.trace(x, offset=1)


def linalg_diagonal(x):
    return np.linalg.diagonal(x)


def linalg_tensordot(x, y):
    return np.linalg.tensordot(x, y, axes=1)


def linalg_vecdot(x, y):
    return np.linalg.vecdot(x, y)


def linalg_matrix_transpose(x):
    return np.linalg.matrix_transpose(x)


def linalg_cross(x, y):
    return np.linalg.cross(x, y, axis=0)


def linalg_matrix_norm(x):
    return np.linalg.matrix_norm(x)


def linalg_vector_norm(x):
    return np.linalg.vector_norm(x, axis=(0, 2))


def linalg_svdvals(x):
    return np.linalg.svdvals(x)


def _array_api_samples() -> list:
    table = [
        (np, "row_stack", row_stack, (A, B), {}),
        (np, "vecdot", vecdot, (A, (2, 1)), {}),
        (np, "matvec", matvec, ((2, 2, 3), B), {}),
        (np, "vecmat", vecmat, ((2, 3), (3, 2)), {}),
        (np, "matrix_transpose", matrix_transpose, (A,), {}),
        (np, "unstack", unstack, (A,), {}),
        (np, "cumulative_sum", cumulative_sum, (A,), {}),
        (np, "cumulative_prod", cumulative_prod, ((4,),), {}),
        (np.linalg, "matmul", linalg_matmul, ((2, 2, 3), (3, 2)), {"domain": real}),
        (np.linalg, "outer", linalg_outer, (B, (2,)), {}),
        (np.linalg, "trace", linalg_trace, ((2, 3, 4),), {}),
        (np.linalg, "diagonal", linalg_diagonal, ((2, 3, 2),), {}),
        (np.linalg, "tensordot", linalg_tensordot, (A, (3, 2)), {}),
        (np.linalg, "vecdot", linalg_vecdot, (A, B), {}),
        (np.linalg, "matrix_transpose", linalg_matrix_transpose, ((2, 1, 3),), {}),
        (np.linalg, "cross", linalg_cross, ((3, 2), (3, 1)), {"domain": real}),
        (np.linalg, "matrix_norm", linalg_matrix_norm, ((2, 2, 3),), {}),
        (np.linalg, "vector_norm", linalg_vector_norm, ((2, 3, 2),), {}),
        (np.linalg, "svdvals", linalg_svdvals, ((2, 3, 2),), {"domain": well_conditioned}),
    ]
    samples = []
    for module, name, program, shapes, options in table:
        function = getattr(module, name, None)
        if function is not None and not (module is np and function is np.vstack):
            samples.append(Sample(function, program, *shapes, **options))
    return samples


ARRAY_API_SAMPLES = _array_api_samples()


SAMPLES = [
    S(np.fmod, lambda x, y: np.fmod(x, y), A, B, domain=(positive, _bigger)),
    S(np.mod, lambda x, y: np.mod(x, y), A, B, domain=(positive, _bigger)),
    S(np.remainder, lambda x, y: np.remainder(x, y), A, B, domain=(positive, _bigger)),
    S(np.ldexp, lambda x: np.ldexp(x, np.array([1, -2, 3])), A),
    S(np.matmul, lambda x, y: np.matmul(x, y), (2, 2, 3), (3, 2), domain=real),
    S(np.amax, lambda x: np.amax(x, axis=0), (3, 4), domain=real),
    S(np.amin, lambda x: np.amin(x, axis=1), (3, 4), domain=real),
    S(np.max, lambda x: np.max(x, axis=0), (3, 4), domain=real),
    S(np.min, lambda x: np.min(x), (3, 4), domain=real),
    S(np.angle, lambda x: np.angle(x), A),
    S(np.append, lambda x, y: np.append(x, y), A, B),
    S(np.arange, lambda x: np.arange(x[0], 3.2, 0.5), (2,)),
    S(np.array, lambda x: np.array([x[0], 2.0 * x[1]]), (2, 3)),
    S(np.array_split, lambda x: np.array_split(x, 3)[1], (7,)),
    S(np.asarray, lambda x: np.asarray([x[1], x[0]]), (2, 3)),
    S(np.asanyarray, lambda x: np.asanyarray([x[1], x[0]]), (2, 3)),
    S(np.ascontiguousarray, lambda x: np.ascontiguousarray(x.T), (2, 3)),
    S(np.asfortranarray, lambda x: np.asfortranarray(x[0], dtype=np.float64), (2, 3)),
    *_if_present("astype", lambda: S(np.astype, lambda x: np.astype(x, x.dtype) * x, A)),
    S(np.atleast_1d, lambda x: np.atleast_1d(x[0, 0]), A),
    S(np.atleast_2d, lambda x: np.atleast_2d(x[0]), A),
    S(np.atleast_3d, lambda x: np.atleast_3d(x), A),
    S(np.average, lambda x, w: np.average(x, axis=1, weights=w), A, B),
    S(np.broadcast_to, lambda x: np.broadcast_to(x, (2, 3)), B),
    S(np.clip, lambda x: np.clip(x, 0.8, 1.6), (3, 4)),
    S(np.column_stack, lambda x, y: np.column_stack([x, y]), B, B),
    S(np.compress, lambda x: np.compress(MASK, x, axis=1), A),
    *_if_present("concat", lambda: S(np.concat, lambda x, y: np.concat([x, y], axis=None), A, B)),
    S(np.concatenate, lambda x, y: np.concatenate([x, y]), A, (1, 3)),
    S(np.convolve, lambda x, y: np.convolve(x, y), (5,), B),
    S(np.correlate, lambda x, y: np.correlate(x, y, "full"), (5,), B),
    S(np.copy, lambda x: np.copy(x), A),
    S(np.corrcoef, lambda x: np.corrcoef(x), (3, 5), domain=real),
    S(np.cov, lambda x: np.cov(x), (3, 5), domain=real),
    S(np.cross, lambda x, y: np.cross(x, y), A, B, domain=real),
    S(np.cumprod, lambda x: np.cumprod(x, axis=1), A),
    S(np.cumsum, lambda x: np.cumsum(x), A),
    S(np.diag, lambda x: np.diag(x), B),
    S(np.diagonal, lambda x: np.diagonal(x, 1), (3, 3)),
    S(np.diff, lambda x: np.diff(x, axis=0), (4, 2)),
    S(np.diagflat, lambda x: np.diagflat(x, -1), (2, 2)),
    S(np.delete, lambda x: np.delete(x, [0, 2], axis=1), A),
    S(np.insert, lambda x, v: np.insert(x, [1, 3], v, axis=1), A, (2, 1)),
    S(np.ediff1d, lambda x, e, b: np.ediff1d(x, to_end=e, to_begin=b), A, (2,), (1,)),
    S(np.resize, lambda x: np.resize(x, (3, 4)), (5,)),
    S(np.geomspace, lambda a, b: np.geomspace(a, b, 4, axis=-1), (2, 1), B),
    S(np.logspace, lambda a, b, c: np.logspace(a, b, 5, base=c), B, (1,), (1,),
      domain=(real, real, above_one)),
    S(np.copysign, lambda x, y: np.copysign(x, y), A, B, domain=real),
    S(np.modf, lambda x: np.modf(x)[0] * 2.0, A, domain=real),
    S(np.divmod, lambda x, y: np.divmod(x, y)[1] * 2.0, A, B, domain=real),
    S(np.dot, lambda x, y: np.dot(x, y), A, B),
    S(np.dsplit, lambda x: np.dsplit(x, 2)[1], (1, 2, 4)),
    S(np.dstack, lambda x, y: np.dstack([x, y]), A, A),
    S(np.einsum, lambda x, y: np.einsum("ij,j->i", x, y), A, B),
    S(np.expand_dims, lambda x: np.expand_dims(x, 1), A),
    S(np.extract, lambda x: np.extract(np.arange(6).reshape(2, 3) % 2 == 0, x), A),
    S(np.flip, lambda x: np.flip(x, 1), A),
    S(np.fliplr, lambda x: np.fliplr(x), A),
    S(np.flipud, lambda x: np.flipud(x), A),
    S(np.full, lambda x: np.full((2, 3), x[1]), B),
    S(np.full_like, lambda x: np.full_like(x, x[0, 1]), A),
    S(np.gradient, lambda x: np.gradient(x, 0.5), (5,)),
    S(np.hsplit, lambda x: np.hsplit(x, 2)[1], (2, 4)),
    S(np.hstack, lambda x, y: np.hstack([x, y]), B, (2,)),
    S(np.imag, lambda x: np.imag(x) + x, A),
    S(np.inner, lambda x, y: np.inner(x, y), A, B),
    S(np.interp, lambda x, fp: np.interp(x, XP, fp), B, (4,), domain=(_bigger, real)),
    S(np.kron, lambda x, y: np.kron(x, y), (2, 2), (2,)),
    S(np.linspace, lambda x: np.linspace(x[0], x[1], 5), (2,)),
    S(np.mean, lambda x: np.mean(x, axis=0), A),
    S(np.median, lambda x: np.median(x, axis=1), (2, 5)),
    S(np.meshgrid, lambda x, y: np.stack(np.meshgrid(x, y)), (2,), B),
    S(np.ix_, lambda x, y: np.ix_(x, y)[0] * np.ix_(x, y)[1] ** 2, (2,), B),
    S(np.broadcast_arrays, lambda x, y: np.stack(np.broadcast_arrays(x, y)), (2, 1), B),
    S(np.block, lambda x, y: np.block([[x, x], [y, 2.0 * y]]), A, (1, 3)),
    S(np.moveaxis, lambda x: np.moveaxis(x, 0, -1), (2, 3, 1)),
    S(np.nan_to_num, lambda x: np.nan_to_num(x), A),
    S(np.nanmean, lambda x: np.nanmean(x, axis=0), A),
    S(np.nansum, lambda x: np.nansum(x, axis=1), A),
    # NaN-ignoring reductions: NaN where KEEP is False
    S(np.nanmax, lambda x: np.nanmax(holes(x), axis=0), (3, 4), domain=real),
    S(np.nanmin, lambda x: np.nanmin(holes(x), axis=1, keepdims=True), (3, 4), domain=real),
    S(np.nanprod, lambda x: np.nanprod(holes(x), axis=(0, 1)), (3, 4)),
    S(np.nanvar, lambda x: np.nanvar(holes(x), axis=1, ddof=1), (3, 4), domain=real),
    S(np.nanstd, lambda x: np.nanstd(holes(x), axis=0, keepdims=True), (3, 4), domain=real),
    S(np.nancumsum, lambda x: np.nancumsum(holes(x), axis=1), (3, 4), domain=real),
    S(np.nancumprod, lambda x: np.nancumprod(holes(x)), (3, 4), domain=real),
    S(np.nanmedian, lambda x: np.nanmedian(holes(x), axis=1), (3, 4), domain=real),
    S(np.nanquantile, lambda x: np.nanquantile(holes(x), [0.3, 0.8], axis=0), (3, 4),
      domain=real),
    S(np.nanpercentile, lambda x: np.nanpercentile(holes(x), 40.0, axis=1), (3, 4),
      domain=real),
    S(np.outer, lambda x, y: np.outer(x, y), B, (2,)),
    S(np.pad, lambda x: np.pad(x, ((1, 0), (0, 2))), A),
    S(np.partition, lambda x: np.partition(x, 2), (5,), domain=real),
    S(np.percentile, lambda x: np.percentile(x, 30.0), (5,), domain=real),
    *_if_present(
        "permute_dims", lambda: S(np.permute_dims, lambda x: np.permute_dims(x, (1, 0)), A)
    ),
    S(np.polyfit, lambda x, y: np.polyfit(x, y, 2), (5,), (5,), domain=(real, real)),
    S(np.polyval, lambda p, x: np.polyval(p, x), B, (4,), domain=(real, real)),
    S(np.polyadd, lambda a, b: np.polyadd(a, b), (4,), (2,), domain=(real, real)),
    S(np.polysub, lambda a, b: np.polysub(a, b), (2,), (3,), domain=(real, real)),
    S(np.polymul, lambda a, b: np.polymul(a, b), (3,), (2,), domain=(real, real)),
    S(np.polyder, lambda p: np.polyder(p, 2), (5,), domain=real),
    S(np.polyint, lambda p, k: np.polyint(p, 2, k), (3,), (2,), domain=(real, real)),
    S(np.poly, lambda r: np.poly(r), (4,), domain=real),
    S(np.roots, lambda p: np.roots(p), (3,), domain=real),
    S(np.polydiv, lambda u, v: np.stack(np.polydiv(u, v)), (4,), (3,), domain=(real, positive)),
    S(np.prod, lambda x: np.prod(x, axis=0), A),
    S(np.ptp, lambda x: np.ptp(x, axis=1), (2, 4), domain=real),
    S(np.quantile, lambda x: np.quantile(x, 0.6), (5,), domain=real),
    S(np.ravel, lambda x: np.ravel(x), A),
    S(np.real, lambda x: np.real(x) * x, A),
    S(np.real_if_close, lambda x: np.real_if_close(x) * x, A),
    S(np.repeat, lambda x: np.repeat(x, 2, axis=0), A),
    S(np.reshape, lambda x: np.reshape(x, (3, 2)), A),
    S(np.roll, lambda x: np.roll(x, 1), A),
    S(np.rollaxis, lambda x: np.rollaxis(x, 1), A),
    S(np.rot90, lambda x: np.rot90(x), A),
    S(np.select, lambda x, y: np.select([x > 1.2], [x * y], default=y), A, B),
    S(np.sinc, lambda x: np.sinc(x), A),
    S(np.sort, lambda x: np.sort(x, axis=0), (3, 2), domain=real),
    S(np.split, lambda x: np.split(x, 2, axis=1)[0], (2, 4)),
    S(np.squeeze, lambda x: np.squeeze(x), (1, 3)),
    S(np.stack, lambda x, y: np.stack([x, y], axis=1), B, B),
    S(np.std, lambda x: np.std(x, axis=1), A),
    S(np.sum, lambda x: np.sum(x, axis=0), A),
    S(np.swapaxes, lambda x: np.swapaxes(x, 0, 1), A),
    S(np.take, lambda x: np.take(x, IDX, axis=1), A),
    S(np.bincount, lambda w: np.bincount(BINS, weights=w, minlength=5), (6,), domain=real),
    S(np.histogram, lambda w: np.histogram(HISTOGRAM_DATA, 3, (0.0, 1.0), weights=w)[0], (6,),
      domain=real),
    S(np.histogram2d, lambda w: np.histogram2d(HISTOGRAM_DATA, HISTOGRAM_DATA[::-1], 2,
      [[0.0, 1.0], [0.0, 1.0]], weights=w)[0], (6,), domain=real),
    S(np.histogramdd, lambda w: np.histogramdd(HISTOGRAM_DATA[:, None], 3, [(0.0, 1.0)],
      weights=w)[0], (6,), domain=real),
    S(np.take_along_axis, lambda x: np.take_along_axis(x, np.array([[2], [0]]), 1), A),
    S(np.tensordot, lambda x, y: np.tensordot(x, y, axes=1), A, (3, 2)),
    S(np.tile, lambda x: np.tile(x, (2, 1)), A),
    S(np.trace, lambda x: np.trace(x), (3, 3)),
    S(np.transpose, lambda x: np.transpose(x), A),
    *_if_present("trapezoid", lambda: S(np.trapezoid, lambda y, x: np.trapezoid(y, x), A4, (4,))),
    *_if_present("trapz", lambda: S(np.trapz, lambda y, x: np.trapz(y, x), A4, (4,))),
    S(np.tril, lambda x: np.tril(x), (3, 3)),
    S(np.triu, lambda x: np.triu(x, 1), (3, 3)),
    S(np.unwrap, lambda x: np.unwrap(x * 4.0), A, domain=real),
    S(np.vander, lambda x: np.vander(x, 3), B, domain=real),
    S(np.var, lambda x: np.var(x), A),
    S(np.vdot, lambda x, y: np.vdot(x, y), A, A),
    S(np.vsplit, lambda x: np.vsplit(x, 2)[0], (4, 2)),
    S(np.vstack, lambda x, y: np.vstack([x, y]), A, B),
    S(np.where, lambda x, y: np.where(x > 1.2, x, y), A, B),
    *ARRAY_API_SAMPLES,
    # numpy.linalg
    S(np.linalg.cholesky, lambda a: np.linalg.cholesky(a @ np.conj(a.T) + I3), (3, 3)),
    S(np.linalg.det, lambda a: np.linalg.det(a), (2, 3, 3), domain=well_conditioned),
    S(np.linalg.eig, lambda a: np.sum(np.linalg.eig(a)[0] ** 2), (3, 3), domain=spd),
    S(np.linalg.eigvals, lambda a: np.linalg.eigvals(a) ** 3, (3, 3), domain=spd),
    S(np.linalg.eigh, lambda a: np.linalg.eigh(a + np.conj(a.T))[0], (3, 3), domain=spd),
    S(np.linalg.eigvalsh, lambda a: np.linalg.eigvalsh(a + np.conj(a.T)), (3, 3), domain=spd),
    S(np.linalg.inv, lambda a: np.linalg.inv(a), (3, 3), domain=well_conditioned),
    S(np.linalg.lstsq, lambda a, b: np.linalg.lstsq(a, b)[0], (4, 2), (4,), domain=WR),
    S(np.linalg.multi_dot, lambda x, y, z: np.linalg.multi_dot([x, y, z]), B, (3, 2), (2, 4)),
    S(np.linalg.matrix_power, lambda a: np.linalg.matrix_power(a, 3), (3, 3), domain=W),
    S(np.linalg.norm, lambda x: np.linalg.norm(x, axis=1), A),
    S(np.float64, lambda x: np.float64(x) * x, A),
    # narrow casts round each value: differences over wider steps, with looser tolerances
    S(np.float32, lambda x: np.float32(x) * x, A, checks=dict(step=1e-2, rtol=1e-3, atol=1e-4)),
    S(np.float16, lambda x: np.float16(x) * x, A, checks=dict(step=0.1, rtol=2e-2, atol=1e-2)),
    S(np.linalg.pinv, lambda a: np.linalg.pinv(a), (3, 2), domain=well_conditioned),
    S(np.linalg.cond, lambda a: np.linalg.cond(a), (3, 3), domain=W, complex_=False),
    S(
        np.linalg.tensorsolve,
        lambda a, b: np.linalg.tensorsolve(a, b),
        (2, 3, 6),
        (2, 3),
        domain=(well_conditioned_tensor, real),
        complex_=False,
    ),
    S(
        np.linalg.tensorinv,
        lambda a: np.linalg.tensorinv(a, ind=1),
        (6, 2, 3),
        domain=lambda shape: well_conditioned((6, 6)).reshape(shape),
        complex_=False,
    ),
    S(np.i0, lambda x: np.i0(x), A, domain=real, complex_=False),
    S(np.linalg.qr, lambda a: np.linalg.qr(a)[1] ** 2, (3, 2), domain=well_conditioned),
    S(np.linalg.slogdet, lambda a: np.linalg.slogdet(a)[1], (3, 3), domain=spd),
    S(np.linalg.solve, lambda a, b: np.linalg.solve(a, b), (3, 3), (3, 2), domain=WR),
    S(np.linalg.svd, lambda a: np.linalg.svd(a, compute_uv=False), (3, 2), domain=W),
    # numpy.fft
    S(np.fft.fft, lambda x: np.fft.fft(x, axis=0), (3, 2)),
    S(np.fft.ifft, lambda x: np.fft.ifft(x, n=4), (3,)),
    S(np.fft.fft2, lambda x: np.fft.fft2(x), A),
    S(np.fft.ifft2, lambda x: np.fft.ifft2(x, norm="ortho"), A),
    S(np.fft.fftn, lambda x: np.fft.fftn(x), A),
    S(np.fft.ifftn, lambda x: np.fft.ifftn(x), A),
    S(np.fft.rfft, lambda x: np.fft.rfft(x), (5,), complex_=False),
    S(np.fft.irfft, lambda x: np.fft.irfft(x), (3,)),
    S(np.fft.hfft, lambda x: np.fft.hfft(x), (3,)),
    S(np.fft.ihfft, lambda x: np.real(np.fft.ihfft(x)) + np.imag(np.fft.ihfft(x)), (4,)),
    S(np.choose, lambda x, y: np.choose(np.array([0, 1, 0]), [x, y]), B, B),
    S(np.unique, lambda x: np.unique(x), (5,)),
    S(np.frexp, lambda x: np.frexp(x)[0] * np.frexp(x)[1], A),
    S(np.fft.rfft2, lambda x: np.fft.rfft2(x), A, complex_=False),
    S(np.fft.irfft2, lambda x: np.fft.irfft2(x), A),
    S(np.fft.rfftn, lambda x: np.fft.rfftn(x), A, complex_=False),
    S(np.fft.irfftn, lambda x: np.fft.irfftn(x), A),
    S(np.fft.fftshift, lambda x: np.fft.fftshift(x), A),
    S(np.fft.ifftshift, lambda x: np.fft.ifftshift(x), A),
]
# fmt: on


def normal_logpdf(x, m, c):
    return stats.multivariate_normal.logpdf(x, m, c + c.T)


def normal_entropy(m, c):
    return stats.multivariate_normal.entropy(m, c + c.T)


# fmt: off
if special is not None:
    SAMPLES += [
        S(special.entr, lambda x: special.entr(x), A),
        S(special.erfcinv, lambda x: special.erfcinv(x), A, domain=probability),
        S(special.erfinv, lambda x: special.erfinv(x), A, domain=unit),
        S(special.logit, lambda x: special.logit(x), A, domain=probability),
        S(special.ndtri, lambda x: special.ndtri(x), A, domain=probability),
        S(special.betainc, lambda x: special.betainc(1.5, 2.5, x), A, domain=probability),
        S(special.gammainc, lambda x: special.gammainc(1.5, x), A),
        S(special.gammaincc, lambda x: special.gammaincc(2.5, x), A),
        S(special.stdtr, lambda x: special.stdtr(2.5, x), A),
        S(special.iv, lambda x: special.iv(1.5, x), A),
        S(special.ive, lambda x: special.ive(0.5, x), A),
        S(special.jv, lambda x: special.jv(1.5, x), A),
        S(special.kv, lambda x: special.kv(1.5, x), A),
        S(special.kve, lambda x: special.kve(0.5, x), A),
        S(special.yv, lambda x: special.yv(1.5, x), A),
        S(special.zeta, lambda q: special.zeta(3.0, q), A),
        S(special.jn, lambda x: special.jn(2, x), A),
        S(special.yn, lambda x: special.yn(1, x), A),
        S(special.log_softmax, lambda x: special.log_softmax(x, axis=1), A),
        S(special.softmax, lambda x: special.softmax(x), A),
        S(special.logsumexp, lambda x: special.logsumexp(x, axis=0), A),
        S(special.multigammaln, lambda x: special.multigammaln(x[0] + 2.0, 2), A),
        S(special.polygamma, lambda x: special.polygamma(1, x), A),
        S(special.sinc, lambda x: special.sinc(x), A),
        S(special.sici, lambda x: special.sici(x)[0] * special.sici(x)[1], A),
        S(special.erfi, lambda x: special.erfi(x), A, domain=unit),
        S(special.loggamma, lambda x: special.loggamma(x), A),
        S(special.k0e, lambda x: special.k0e(x), A),
        S(special.k1e, lambda x: special.k1e(x), A),
        S(special.expm1, lambda x: special.expm1(x), A, domain=unit),
        S(special.log1p, lambda x: special.log1p(x), A),
        S(special.exp2, lambda x: special.exp2(x), A, domain=unit),
        S(special.exp10, lambda x: special.exp10(x), A, domain=unit),
        S(special.cbrt, lambda x: special.cbrt(x), A),
        S(special.softplus, lambda x: special.softplus(x), A, domain=real),
        S(special.sindg, lambda x: special.sindg(40.0 * x), A, domain=real),
        S(special.cosdg, lambda x: special.cosdg(40.0 * x), A, domain=real),
        S(special.tandg, lambda x: special.tandg(40.0 * x), A, domain=unit),
        S(special.cotdg, lambda x: special.cotdg(30.0 * x), A),
        S(special.ellipk, lambda m: special.ellipk(m), A, domain=probability),
        S(special.ellipkm1, lambda p: special.ellipkm1(p), A, domain=probability),
        S(special.ellipe, lambda m: special.ellipe(m), A, domain=probability),
        S(special.gammaincinv, lambda y: special.gammaincinv(2.5, y), A, domain=probability),
        S(special.gammainccinv, lambda y: special.gammainccinv(1.5, y), A, domain=probability),
        S(special.inv_boxcox, lambda y, lam: special.inv_boxcox(y, lam / 4.0), A, B),
        S(special.inv_boxcox1p, lambda y, lam: special.inv_boxcox1p(y, lam / 4.0), A, B),
        S(special.poch, lambda z, m: special.poch(z, m), A, B),
        S(special.owens_t, lambda h, a: special.owens_t(h, a), A, B),
        S(special.expn, lambda x: special.expn(2, x), A),
        S(special.hyp0f1, lambda z: special.hyp0f1(1.5, z), A),
        S(special.hyp1f1, lambda x: special.hyp1f1(0.5, 1.5, x), A),
        S(special.hyperu, lambda x: special.hyperu(0.5, 1.5, x), A),
        S(special.hyp2f1, lambda z: special.hyp2f1(0.5, 1.0, 1.5, z), A, domain=unit),
        S(special.chdtr, lambda x: special.chdtr(3.0, x), A),
        S(special.chdtrc, lambda x: special.chdtrc(2.5, x), A),
        S(special.stdtr, lambda t: special.stdtr(4.0, t), A, domain=real),
        S(special.gdtr, lambda x: special.gdtr(1.5, 2.5, x), A),
        S(special.fdtr, lambda x: special.fdtr(3.0, 5.0, x), A),
        S(special.fresnel, lambda x: special.fresnel(x)[0] * special.fresnel(x)[1], A),
        S(special.airy, lambda x: special.airy(x)[0] * special.airy(x)[3] + special.airy(x)[1], A),
        S(special.struve, lambda x: special.struve(1.5, x), A),
        S(special.lambertw, lambda x: special.lambertw(x), A),
        S(special.modstruve, lambda x: special.modstruve(0.5, x), A),
        S(special.spherical_jn, lambda x: special.spherical_jn(2, x), A),
        S(special.spherical_yn, lambda x: special.spherical_yn(1, x, derivative=True), A),
        S(special.spherical_in, lambda x: special.spherical_in(1, x), A),
        S(special.spherical_kn, lambda x: special.spherical_kn(0, x), A),
        S(special.ellipkinc, lambda p, m: special.ellipkinc(p, m), A, B,
          domain=(positive, probability)),
        S(special.ellipeinc, lambda p, m: special.ellipeinc(p, m), A, B,
          domain=(positive, probability)),
        S(stats.norm.pdf, lambda x, m, s: stats.norm.pdf(x, m, s), A, B, B),
        S(stats.norm.logpdf, lambda x, m, s: stats.norm.logpdf(x, m, s), A, B, B),
        S(stats.norm.cdf, lambda x, m, s: stats.norm.cdf(x, m, s), A, B, B),
        S(stats.norm.logcdf, lambda x, m, s: stats.norm.logcdf(x, m, s), A, B, B),
        S(stats.norm.sf, lambda x, m, s: stats.norm.sf(x, m, s), A, B, B),
        S(stats.norm.logsf, lambda x, m, s: stats.norm.logsf(x, m, s), A, B, B),
        S(stats.norm.ppf, lambda q: stats.norm.ppf(q, 0.5, 2.0), A, domain=probability),
        S(stats.norm.isf, lambda q: stats.norm.isf(q, 0.5, 2.0), A, domain=probability),
        S(stats.t.pdf, lambda x, d: stats.t.pdf(x, d), A, B),
        S(stats.t.logpdf, lambda x, d: stats.t.logpdf(x, d), A, B),
        S(stats.t.cdf, lambda x: stats.t.cdf(x, 2.5), A),
        S(stats.t.logcdf, lambda x: stats.t.logcdf(x, 2.5), A),
        S(stats.t.sf, lambda x: stats.t.sf(x, 2.5), A),
        S(stats.beta.pdf, lambda x, a: stats.beta.pdf(x, a, 2.0), A, B, domain=QA),
        S(stats.beta.logpdf, lambda x, a: stats.beta.logpdf(x, a, 2.0), A, B, domain=QA),
        S(stats.beta.cdf, lambda x: stats.beta.cdf(x, 2.0, 3.0), A, domain=probability),
        S(stats.beta.logcdf, lambda x: stats.beta.logcdf(x, 2.0, 3.0), A, domain=probability),
        S(stats.beta.sf, lambda x: stats.beta.sf(x, 2.0, 3.0), A, domain=probability),
        S(stats.gamma.pdf, lambda x, a: stats.gamma.pdf(x, a), A, B),
        S(stats.gamma.logpdf, lambda x, a: stats.gamma.logpdf(x, a), A, B),
        S(stats.gamma.cdf, lambda x: stats.gamma.cdf(x, 2.0), A),
        S(stats.gamma.logcdf, lambda x: stats.gamma.logcdf(x, 2.0), A),
        S(stats.gamma.sf, lambda x: stats.gamma.sf(x, 2.0), A),
        S(stats.chi2.pdf, lambda x, d: stats.chi2.pdf(x, d), A, B),
        S(stats.chi2.logpdf, lambda x, d: stats.chi2.logpdf(x, d), A, B),
        S(stats.chi2.cdf, lambda x: stats.chi2.cdf(x, 3.0), A),
        S(stats.chi2.logcdf, lambda x: stats.chi2.logcdf(x, 3.0), A),
        S(stats.chi2.sf, lambda x: stats.chi2.sf(x, 3.0), A),
        S(stats.t.ppf, lambda q: stats.t.ppf(q, 2.5), A, domain=probability),
        S(stats.t.isf, lambda q: stats.t.isf(q, 2.5), A, domain=probability),
        S(stats.t.logsf, lambda x: stats.t.logsf(x, 2.5), A),
        S(stats.beta.ppf, lambda q: stats.beta.ppf(q, 2.0, 3.0), A, domain=probability),
        S(stats.beta.isf, lambda q: stats.beta.isf(q, 2.0, 3.0), A, domain=probability),
        S(stats.beta.logsf, lambda x: stats.beta.logsf(x, 2.0, 3.0), A, domain=probability),
        S(stats.gamma.ppf, lambda q: stats.gamma.ppf(q, 2.0), A, domain=probability),
        S(stats.gamma.isf, lambda q: stats.gamma.isf(q, 2.0), A, domain=probability),
        S(stats.gamma.logsf, lambda x: stats.gamma.logsf(x, 2.0), A),
        S(stats.chi2.ppf, lambda q: stats.chi2.ppf(q, 3.0), A, domain=probability),
        S(stats.chi2.isf, lambda q: stats.chi2.isf(q, 3.0), A, domain=probability),
        S(stats.chi2.logsf, lambda x: stats.chi2.logsf(x, 3.0), A),
        S(stats.poisson.pmf, lambda mu: stats.poisson.pmf(np.array([0, 2, 3]), mu), B),
        S(stats.poisson.logpmf, lambda mu: stats.poisson.logpmf(3, mu), A),
        S(stats.poisson.cdf, lambda mu: stats.poisson.cdf(np.array([0, 2, 3]), mu), B),
        S(stats.poisson.logcdf, lambda mu: stats.poisson.logcdf(2, mu), A),
        S(stats.poisson.sf, lambda mu: stats.poisson.sf(np.array([0, 2, 3]), mu), B),
        S(stats.dirichlet.pdf, lambda x, a: stats.dirichlet.pdf(x / np.sum(x), a), B, B, domain=PA),
        S(stats.dirichlet.logpdf, lambda x, a: stats.dirichlet.logpdf(x / np.sum(x), a), B, B,
          domain=PA),
        S(stats.multivariate_normal.pdf, lambda x, m: stats.multivariate_normal.pdf(x, m), A, B,
          domain=unit),
        S(stats.multivariate_normal.logpdf, normal_logpdf, A, B, (3, 3), domain=UUS),
        S(stats.multivariate_normal.entropy, normal_entropy, B, (3, 3), domain=(unit, spd)),
    ]
# fmt: on


BY_PRIMITIVE = {sample.primitive: sample for sample in SAMPLES}

# ------------------------------------------------------------------------- the surface


def _kind(function) -> str:
    rule = get_rule(function)
    if rule is None:
        return "refused"
    return "rule" if rule.differentiable else "non-differentiable"


@functools.cache
def _surface() -> dict:
    return public_surface()


def _by_kind(kind: str) -> list:
    seen, names = set(), []
    for name, function in _surface().items():
        if _kind(function) == kind and id(function) not in seen:
            seen.add(id(function))
            names.append(name)
    return names


def sample_of(function) -> Sample | None:
    if function in BY_PRIMITIVE:
        return BY_PRIMITIVE[function]
    if isinstance(function, np.ufunc):
        return ufunc_sample(function)
    return None


def test_every_public_callable_is_covered():
    """Exactly one of: a rule with a sample program, a proved declaration, a refusal with a
    reason. Prints the counts."""
    counts = {"rule": 0, "non-differentiable": 0, "refused": 0}
    problems = []
    for name, function in _surface().items():
        kind = _kind(function)
        counts[kind] += 1
        if kind == "rule" and sample_of(function) is None:
            problems.append(f"{name}: a rule without a sample program here")
        if kind == "rule" and refused_reason(name) and not name.startswith("scipy."):
            problems.append(f"{name}: has a rule but is declared refused")
        proved = function in PROOFS or getattr(function, "__name__", None) in BY_DESIGN
        if kind == "non-differentiable" and not proved:
            problems.append(f"{name}: declared non-differentiable without a proof")
        if kind == "refused" and refused_reason(name) is None:
            problems.append(f"{name}: no rule, no declaration and no reason for refusing it")
    print(
        f"\ncoverage: {counts['rule']} rules, {counts['non-differentiable']} "
        f"non-differentiable, {counts['refused']} refused, of {len(_surface())} callables"
    )
    assert not problems, "\n".join(problems)


# Functions NumPy does not let a tape value into (it makes a plain array of it): the tape
# refuses them, naming the line, and tells what to write instead
TAPE_REFUSES = {np.arange}  # np.array, np.asarray and np.full of values: tape/conversions.py
TAPE_REFUSES |= {np.float64, np.float32, np.float16}  # a cast: NumPy converts the tape value
TAPE_REFUSES |= {np.ascontiguousarray, np.asfortranarray}  # NumPy makes a plain array too


def _real_valued(program, args):
    """``program``, or its real part plus half its imaginary part if its value is complex
    (``check_grads`` compares real values)."""
    if not np.iscomplexobj(program(*args)):
        return program

    def real_valued(*args):
        out = program(*args)
        return np.real(out) + 0.5 * np.imag(out)

    return real_valued


@pytest.mark.parametrize("name", _by_kind("rule"))
def test_rule_to_second_order_in_both_engines(name):
    function = _surface()[name]
    sample = sample_of(function)
    if sample is None:
        pytest.fail(f"{name} has a rule but no sample program")
    args = sample.arguments()
    program = _real_valued(sample.program, args)
    engines = ENGINES
    if function in TAPE_REFUSES:
        with pytest.raises(S2SGradError, match=rf"{HERE}:\d+"):
            sg.grad(_loss(program), mode="tape")(*args)
        engines = ("s2s",)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for engine in engines:
            sg.check_grads(program, *args, order=2, mode=engine, **sample.checks)
    if function in TAPE_REFUSES:
        return
    _check_float32(sample, np.float32)
    if get_rule(function).complex and sample.complex and _accepts_complex(sample):
        _check_complex(sample)
        _check_float32(sample, np.complex64)


def test_rules_with_one_number_out_as_the_whole_gradient_on_later_calls():
    """A rule whose output is one number, differentiated by ``grad`` itself (``np.median(x)``
    as the loss): its backward starts from the seed, which the code specialised for later
    calls holds as the float 1.0. The first call and a later one are both checked, and the
    tangent of the number is a number too."""
    failures = []
    checked = 0
    for name in _by_kind("rule"):
        sample = sample_of(_surface()[name])
        args = sample.arguments()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = sample.program(*args)
            if np.ndim(out) != 0 or np.iscomplexobj(out):
                continue
            checked += 1
            gradient = sg.grad(sample.program, wrt=tuple(range(len(args))), mode="s2s")
            expected = [numeric_grad(sample.program, args, i) for i in range(len(args))]
            for call in ("first call", "later call"):
                try:
                    actual = gradient(*args)
                    for a, e in zip(actual, expected):
                        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-6)
                except Exception as error:  # every rule's result is reported at once
                    failures.append(f"{name}, {call}: {type(error).__name__}: {error}"[:300])
                    break
            tangents = tuple(np.ones_like(a) for a in args)
            _, tangent = sg.jvp(sample.program, args, tangents, mode="s2s")
            if isinstance(out, float) and not isinstance(tangent, float):
                failures.append(f"{name}: the tangent of a number is a {type(tangent).__name__}")
    assert checked > 5
    assert not failures, "\n".join(failures)


@functools.cache  # one loss per program: its derivatives are built once for every check
def _loss(program):
    def loss(*args):
        out = program(*args)
        return np.sum(np.real(out) * 0.7 + np.imag(out) * 1.3)

    return loss


def _complex_arguments(sample):
    return tuple(
        a + 0.3j * RNG.uniform(-1.0, 1.0, np.shape(a)) for a in sample.arguments(np.float64)
    )


def _accepts_complex(sample) -> bool:
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            sample.program(*_complex_arguments(sample))
    except (TypeError, ValueError, np.exceptions.ComplexWarning):
        return False
    return True


STEP = 1e-6  # of the central differences along a complex direction


def _check_complex(sample):
    """At a complex point, in every engine: the gradient (reverse), the JVP along a complex
    tangent (forward), and to second order the gradient of a real function of the gradient
    (reverse over reverse) and ``hvp`` (forward over reverse), each against central
    differences under docs/complex.md's convention."""
    args = _complex_arguments(sample)
    loss = _loss(sample.program)
    for index in range(len(args)):
        expected = numeric_complex_grad(loss, args, index)
        for engine in ENGINES:
            actual = sg.grad(loss, wrt=index, mode=engine)(*args)
            _assert_close(actual, expected, f"{engine}: grad wrt {index}")
    tangents = _complex_like(args)
    expected = _along(sample.program, args, tangents)
    for engine in ENGINES:
        _, actual = sg.jvp(sample.program, args, tangents, mode=engine)
        _assert_close(actual, expected, f"{engine}: jvp")
    _check_complex_second_order(loss, args, tangents)


def _check_complex_second_order(loss, args, tangents):
    """Reverse over reverse: the gradient of ``h = sum(real(conj(c) * grad(loss)))``, as the
    VJP of the gradient with the cotangent ``conj(c)`` (docs/complex.md); forward over
    reverse: ``hvp``; in both engines (s2s through the code of a called rule too)."""
    wrt = tuple(range(len(args)))
    weights = _complex_like(args)
    gradient = sg.grad(loss, wrt=wrt, mode="s2s")  # first order checked before

    def h(*args):
        gradients = gradient(*args)
        return sum(np.sum(np.real(np.conj(c) * g)) for c, g in zip(weights, gradients))

    expected = [numeric_complex_grad(h, args, index) for index in wrt]
    expected_hvp = _along(gradient, args, tangents)
    cotangent = tuple(np.conj(w) for w in weights)
    for engine in ENGINES:
        _, pullback = sg.vjp(sg.grad(loss, wrt=wrt, mode=engine), *args, mode=engine)
        actual = pullback(cotangent)
        products = sg.hvp(loss, args, tangents, mode=engine)
        for index in wrt:
            _assert_close(actual[index], expected[index], f"{engine}: grad of grad wrt {index}")
            _assert_close(products[index], expected_hvp[index], f"{engine}: hvp, {index}")


def _complex_like(args):
    return tuple(
        RNG.uniform(-1.0, 1.0, np.shape(a)) + 1j * RNG.uniform(-1.0, 1.0, np.shape(a)) for a in args
    )


def _along(f, args, tangents):
    """The derivative of ``f`` at ``args`` along the complex ``tangents`` (a real step)."""
    up = f(*(a + STEP * t for a, t in zip(args, tangents)))
    down = f(*(a - STEP * t for a, t in zip(args, tangents)))
    if isinstance(up, tuple):
        return tuple((np.asarray(u) - d) / (2 * STEP) for u, d in zip(up, down))
    return (np.asarray(up) - down) / (2 * STEP)


def _assert_close(actual, expected, message):
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, err_msg=message)


def _check_float32(sample, dtype):
    args = sample.arguments(np.float64)
    if np.dtype(dtype).kind == "c":
        args = _complex_arguments(sample)
    args = tuple(a.astype(dtype) for a in args)
    loss = _loss(sample.program)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            loss(*args)
        except ValueError:  # the library refuses the rounded values (a simplex's sum)
            return
        for engine in ENGINES:
            gradients = sg.grad(loss, wrt=tuple(range(len(args))), mode=engine)(*args)
            for gradient in gradients:
                assert np.result_type(gradient) == dtype, f"{engine}: {np.result_type(gradient)}"


# ------------------------------------------------------------------- refused callables

X = np.array([0.3, 0.7, 1.4])


def _applied(function):
    def program(x):
        return function(x)

    return program


@pytest.mark.parametrize("name", _by_kind("refused"))
def test_refused_where_it_meets_a_differentiated_value(name):
    """The source transformer refuses every call without a rule on a differentiated value,
    naming the line of the call."""
    with pytest.raises(S2SGradError, match=rf"{HERE}:\d+"):
        sg.grad(_applied(_surface()[name]), mode="s2s")(X)
