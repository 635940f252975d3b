"""Helpers for the derivatives of the functions scientists call (rules/scientific.py and
rules/statistics.py).

Each helper is either piecewise constant (the interpolation and quantile weights, shapes),
and declared non-differentiable, or linear in its array argument with VJP and JVP rules
written with the others, so generated code that calls them can be differentiated again.
They use plain, non-mutating NumPy calls, so the tape can also trace through them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import numpy as np

from s2sgrad.errors import NonDifferentiableError
from s2sgrad.rules.registry import jvp_rule, nondifferentiable, vjp_rule
from s2sgrad.running import running_origin
from s2sgrad.runtime.elementwise import cast_like
from s2sgrad.runtime.shapes import undiff


def located_refusal(message: str) -> NonDifferentiableError:
    """The error for a derivative refused while a gradient runs, naming the user's line:
    the differentiated function's (generated code) or the innermost one outside s2sgrad and
    NumPy (the tape)."""
    origin = running_origin("")
    if not origin:
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith(_LIBRARIES):
            frame = frame.f_back
        if frame is not None:
            origin = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    return NonDifferentiableError(f"{origin or '<unknown location>'}: {message}")


_LIBRARIES = (
    os.path.dirname(np.__file__) + os.sep,
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # s2sgrad's files
)


__all__ = [
    "axis_shape",
    "unit_spacing",
    "trapezoid_weights",
    "pair_means",
    "full_convolution",
    "convolution_mode",
    "quantile_cells",
    "interp_cells",
    "interp_wrapped_cells",
    "full_rank",
    "refuse_derivative",
    "polyfit_degree",
    "cov_rows",
    "cov_rows_part",
    "cov_rows_embed",
    "cov_divisor",
    "cov_row_count",
    "pinv_tangent",
    "vander_tangent",
    "cov_tangent",
    "corrcoef_tangent",
    "trapezoid_spacing",
    "undo_spacing",
]


def axis_shape(ndim: int, axis: int, size: int = -1) -> tuple:
    """The shape ``(1, ..., size, ..., 1)`` of ``ndim`` axes, ``size`` at ``axis``.

    Example::

        axis_shape(3, 1)  # (1, -1, 1)
    """
    shape = [1] * ndim
    shape[axis] = size
    return tuple(shape)


def unit_spacing(y: Any, axis: int) -> Any:
    """Ones, one fewer than ``y`` has along ``axis``, laid along ``axis`` (float like ``y``).

    Example::

        unit_spacing(np.zeros((2, 4)), 1)  # array([[1., 1., 1.]])
    """
    dtype = np.result_type(y, 1.0)
    count = max(np.shape(y)[axis] - 1, 0)
    return np.ones(axis_shape(np.ndim(y), axis, count), dtype=dtype)


nondifferentiable(axis_shape, unit_spacing)


# ---------------------------------------------------------------------------------------
# The trapezoidal rule: sum(pair_means(y) * spacing) is linear in y and in the spacing, and
# trapezoid_weights and pair_means are each other's adjoints.


def trapezoid_weights(spacing: Any, axis: int = -1) -> Any:
    """The weight of each sample in the trapezoidal rule over intervals ``spacing``.

    One more element than ``spacing`` along ``axis``: ``(d[i - 1] + d[i]) / 2`` with zero
    past the ends.

    Example::

        trapezoid_weights(np.array([1.0, 2.0]))  # array([0.5, 1.5, 1. ])
    """
    moved = np.moveaxis(spacing, axis, -1)
    edge = np.zeros_like(moved[..., :1])
    padded = np.concatenate([edge, moved, edge], axis=-1)
    return np.moveaxis(0.5 * (padded[..., :-1] + padded[..., 1:]), -1, axis)


def pair_means(y: Any, axis: int = -1) -> Any:
    """The means of neighbouring elements along ``axis`` (one fewer element).

    Example::

        pair_means(np.array([1.0, 2.0, 4.0]))  # array([1.5, 3. ])
    """
    moved = np.moveaxis(y, axis, -1)
    return np.moveaxis(0.5 * (moved[..., :-1] + moved[..., 1:]), -1, axis)


@vjp_rule(trapezoid_weights)
def _trapezoid_weights_vjp(g, ans, spacing, axis=-1):
    return pair_means(g, axis)


@jvp_rule(trapezoid_weights)
def _trapezoid_weights_jvp(t, ans, spacing, axis=-1):
    return trapezoid_weights(t, axis)


@vjp_rule(pair_means)
def _pair_means_vjp(g, ans, y, axis=-1):
    return trapezoid_weights(g, axis)


@jvp_rule(pair_means)
def _pair_means_jvp(t, ans, y, axis=-1):
    return pair_means(t, axis)


# ---------------------------------------------------------------------------------------
# Convolution modes: 'same' and 'valid' are windows of the 'full' convolution.


def _window(n: int, m: int, mode: str) -> tuple[int, int, int]:
    """``(start, length, full_length)`` of mode's window in the full convolution."""
    full = n + m - 1
    if mode == "full":
        return 0, full, full
    if mode == "same":
        length = max(n, m)
        return (full - length) // 2, length, full
    if mode == "valid":
        return min(n, m) - 1, max(n, m) - min(n, m) + 1, full
    raise ValueError(f"mode must be 'full', 'same' or 'valid', not {mode!r}")


def full_convolution(g: Any, n: int, m: int, mode: str = "full") -> Any:
    """``g``, the cotangent of ``np.convolve(a, v, mode)`` (``len(a) == n``, ``len(v) ==
    m``), placed in zeros where it sits in the full convolution.

    Example::

        full_convolution(np.ones(2), 3, 2, "valid")  # array([0., 1., 1., 0.])
    """
    start, length, full = _window(n, m, mode)
    return np.pad(g, (start, full - start - length))


def convolution_mode(c: Any, n: int, m: int, mode: str = "full") -> Any:
    """The part of the full convolution ``c`` that ``mode`` keeps (the adjoint of
    :func:`full_convolution`).

    Example::

        convolution_mode(np.arange(4.0), 3, 2, "valid")  # array([1., 2.])
    """
    start, length, _ = _window(n, m, mode)
    return c[start : start + length]


@vjp_rule(full_convolution)
def _full_convolution_vjp(g, ans, c, n, m, mode="full"):
    return convolution_mode(g, n, m, mode)


@jvp_rule(full_convolution)
def _full_convolution_jvp(t, ans, c, n, m, mode="full"):
    return full_convolution(t, n, m, mode)


@vjp_rule(convolution_mode)
def _convolution_mode_vjp(g, ans, c, n, m, mode="full"):
    return full_convolution(g, n, m, mode)


@jvp_rule(convolution_mode)
def _convolution_mode_jvp(t, ans, c, n, m, mode="full"):
    return convolution_mode(t, n, m, mode)


# ---------------------------------------------------------------------------------------
# Quantiles with linear interpolation: a fixed mix of the sorted values


def quantile_cells(
    n: int, q: Any, method: str = "linear", weights: Any = None, scale: float = 1.0
) -> tuple:
    """For ``np.quantile(a, q * scale)`` of ``n`` values: ``(lower, upper, position, rate,
    offset)``, where ``lower`` and ``upper`` (``np.shape(q) + (n,)``) pick the two sorted
    values the result lies between, ``position`` is the lower one's index, and the result
    is ``(lower + f * (upper - lower)) @ np.sort(a)`` with ``f = rate * q + offset``;
    everything here changes only where ``q`` crosses a sample, so ``f`` carries the
    derivative in ``q``. Methods ``"linear"`` (the default) and the other continuous ones
    of Hyndman and Fan (``"hazen"``, ``"weibull"``, ``"median_unbiased"``,
    ``"normal_unbiased"``, ``"interpolated_inverted_cdf"``) interpolate; ``"lower"``,
    ``"higher"``, ``"nearest"`` and ``"midpoint"`` pick a sample or the middle of two, with
    ``rate`` 0. Weights and the other methods are refused.

    Example::

        quantile_cells(3, 0.25)[:3]  # (array([1., 0., 0.]), array([0., 1., 0.]), 0.0)
    """
    _refuse_method(method, weights)
    basis = np.eye(n)
    q = np.asarray(q, dtype=np.float64)
    if method == "linear":
        position = (n - 1) * scale * q
        lower = np.clip(np.floor(position), 0, max(n - 2, 0)).astype(np.intp)
        upper = np.minimum(lower + 1, n - 1)
        rate = np.full(np.shape(q), (n - 1) * scale)
        return basis[lower], basis[upper], lower.astype(np.float64), rate, -lower.astype(np.float64)
    if method in _PICKED_INDEX:
        index = _PICKED_INDEX[method]((n - 1) * scale * q)
        lower = np.clip(index, 0, n - 1).astype(np.intp)
        upper = np.minimum(lower + 1, n - 1)
        offset = np.zeros(np.shape(q))
        if method == "midpoint":
            offset = np.where(index % 1 == 0, 0.0, 0.5)
            lower = np.clip(np.floor(index), 0, n - 1).astype(np.intp)
            upper = np.minimum(lower + 1, n - 1)
        rate = np.zeros(np.shape(q))
        return basis[lower], basis[upper], lower.astype(np.float64), rate, offset
    alpha, beta = _PLOTTING_POSITIONS[method]
    virtual = n * scale * q + (alpha + scale * q * (1.0 - alpha - beta)) - 1.0
    inside = (virtual >= 0) & (virtual < n - 1)
    lower = np.where(virtual < 0, 0, np.where(inside, np.floor(virtual), n - 1)).astype(np.intp)
    upper = np.where(inside, lower + 1, lower)
    rate = np.where(inside, scale * (n + 1.0 - alpha - beta), 0.0)
    offset = np.where(inside, alpha - 1.0 - lower, 0.0)
    return basis[lower], basis[upper], lower.astype(np.float64), rate, offset


# NumPy's continuous methods: the virtual index is n q + alpha + q (1 - alpha - beta) - 1
_PLOTTING_POSITIONS = {
    "interpolated_inverted_cdf": (0.0, 1.0),
    "hazen": (0.5, 0.5),
    "weibull": (0.0, 0.0),
    "median_unbiased": (1.0 / 3.0, 1.0 / 3.0),
    "normal_unbiased": (3.0 / 8.0, 3.0 / 8.0),
}
# the methods that pick a sample (or, midpoint, the middle of two) at the index (n - 1) q
_PICKED_INDEX: dict[str, Callable[[Any], Any]] = {
    "lower": np.floor,
    "higher": np.ceil,
    "nearest": np.around,
    "midpoint": lambda index: index,
}


def _refuse_method(method: str, weights: Any) -> None:
    known = method == "linear" or method in _PLOTTING_POSITIONS or method in _PICKED_INDEX
    if not known or weights is not None:
        what = f"method={method!r}" if not known else "weights="
        raise located_refusal(
            f"s2sgrad differentiates np.quantile, np.percentile and np.median with the "
            f"interpolating methods ('linear', 'hazen', 'weibull', 'median_unbiased', "
            f"'normal_unbiased', 'interpolated_inverted_cdf') and 'lower', 'higher', "
            f"'nearest', 'midpoint', without weights, not {what}; use one of those, or wrap "
            "the call in s2sgrad.stop_gradient(...) if no derivative should flow through it"
        )


nondifferentiable(quantile_cells)


# ---------------------------------------------------------------------------------------
# np.interp: each value mixes two neighbouring samples fp[lower] and fp[upper]


def interp_cells(x: Any, xp: Any, left: Any = None, right: Any = None, period: Any = None):
    """For ``np.interp(x, xp, fp, left, right)``: ``(lower, upper, inside, above_end, keep,
    left_used, right_used)``, arrays shaped like ``x`` that change only where ``x`` crosses
    a sample point.

    Inside ``xp``'s range the value mixes ``fp[lower]`` and ``fp[upper]`` by the fraction
    ``(x - xp[lower]) / (xp[upper] - xp[lower])``; outside it is ``fp[0]`` or ``fp[-1]``
    (``above_end`` is 1 past the right end) times ``keep``, or ``left``/``right`` where
    given (``left_used``, ``right_used``).

    Example::

        interp_cells(np.array([0.5]), np.array([0.0, 1.0]))[:3]  # ([0], [1], [1.])
    """
    if period is not None:
        raise located_refusal(
            "s2sgrad differentiates np.interp without period=; map x into one period "
            "yourself (x % period, with xp and fp extended by one sample at each end)"
        )
    xp = np.asarray(xp, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    n = np.shape(xp)[0]
    lower = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, max(n - 2, 0))
    upper = np.minimum(lower + 1, n - 1)
    below, above = x < xp[0], x > xp[-1]
    inside = (~below & ~above & (upper > lower)).astype(np.float64)
    left_used = below if left is not None else np.zeros(np.shape(x), dtype=bool)
    right_used = above if right is not None else np.zeros(np.shape(x), dtype=bool)
    keep = 1.0 - (left_used | right_used)
    return lower, upper, inside, above * 1.0, keep, left_used, right_used


def interp_wrapped_cells(x: Any, xp: Any, period: Any):
    """For ``np.interp(x, xp, fp, period=period)``: ``(lower, upper, lower_turns,
    upper_turns)``, arrays shaped like ``x`` that change only where ``x`` crosses a sample
    point. NumPy interpolates ``x % period`` between the samples ``xp % period`` sorted and
    extended by one period at each end: the cell's ends are ``xp[lower] % period +
    lower_turns * period`` and ``xp[upper] % period + upper_turns * period`` (turns -1, 0 or
    1), which hold ``fp[lower]`` and ``fp[upper]``.

    Example::

        interp_wrapped_cells(np.array([0.9]), np.array([0.0, 0.5]), 1.0)  # ([1], [0], [0], [1])
    """
    period = abs(float(period))
    x = np.asarray(x, dtype=np.float64) % period
    xp = np.asarray(xp, dtype=np.float64) % period
    order = np.argsort(xp, kind="stable")
    extended = np.concatenate([xp[order][-1:] - period, xp[order], xp[order][:1] + period])
    origin = np.concatenate([order[-1:], order, order[:1]])
    turns = np.concatenate([[-1], np.zeros(np.size(order), dtype=int), [1]])
    lower = np.clip(np.searchsorted(extended, x, side="right") - 1, 0, np.size(extended) - 2)
    return origin[lower], origin[lower + 1], turns[lower], turns[lower + 1]


nondifferentiable(interp_cells, interp_wrapped_cells)


# ---------------------------------------------------------------------------------------
# Refusals from inside a rule


def full_rank(a: Any, rank: Any) -> Any:
    """``a`` itself, when its ``rank`` (from ``np.linalg.lstsq``) is full; refused otherwise.

    Example::

        full_rank(np.eye(2), 2)  # the identity matrix
    """
    if int(np.max(rank)) < min(np.shape(a)[-2:]):
        raise located_refusal(
            "np.linalg.lstsq of a rank-deficient matrix has no derivative (its solution "
            "jumps as the rank changes); s2sgrad differentiates it for full-rank matrices "
            "only. Regularise the problem (solve (a.T @ a + lam * I) x = a.T @ b with "
            "np.linalg.solve), or drop the dependent columns"
        )
    return a


@vjp_rule(full_rank)
def _full_rank_vjp(g, ans, a, rank):
    return g


@jvp_rule(full_rank)
def _full_rank_jvp(t, ans, a, rank):
    return t


REFUSALS = {  # what refuse_derivative says, by reason (rules declare them too)
    "interp xp": (
        "s2sgrad differentiates np.interp(x, xp, fp) with respect to x, fp, left and right, "
        "not the sample points xp; keep xp constant (s2sgrad.stop_gradient(xp)), or write "
        "the interpolation with np.searchsorted and arithmetic on xp"
    ),
    "overwritten input": (  # np.median, np.quantile, np.percentile and their nan twins
        "with overwrite_input=True NumPy may reorder the input array in place, which neither "
        "the derivative nor the code after the call sees change; drop overwrite_input"
    ),
}


def refuse_derivative(reason: str, when: Any = True) -> None:
    """Raise ``NonDifferentiableError`` for ``reason`` (a key of the refusals listed here)
    when ``when`` is true: a rule's entry for an argument whose derivative s2sgrad refuses.
    The transformer computes an entry only for an argument it differentiates; the tape
    passes ``when=differentiated[i]``.

    Example::

        refuse_derivative("interp xp", False)  # None
    """
    if when:
        raise located_refusal(REFUSALS[reason])
    return None


nondifferentiable(refuse_derivative)


def polyfit_degree(deg: int, full: bool = False, w: Any = None, cov: Any = False) -> int:
    """``deg``, for ``np.polyfit`` called without ``full``, ``w`` and ``cov``; refused otherwise.

    Example::

        polyfit_degree(2)  # 2
    """
    if full or w is not None or cov is not False:
        raise located_refusal(
            "s2sgrad differentiates np.polyfit(x, y, deg) without full=, w= and cov=; for "
            "weights, fit np.vander(x, deg + 1) * w[:, None] to y * w with np.linalg.lstsq, "
            "which is differentiated"
        )
    return deg


nondifferentiable(polyfit_degree)


# ---------------------------------------------------------------------------------------
# np.cov and np.corrcoef: the variables as the rows of one matrix


def _as_rows(x: Any, rowvar: bool) -> Any:
    rows = np.reshape(x, (1, -1)) if np.ndim(x) < 2 else x
    if not rowvar and np.shape(rows)[0] != 1:
        rows = np.swapaxes(rows, 0, 1)
    return rows


def cov_row_count(x: Any, rowvar: bool = True) -> int:
    """How many of ``np.cov``'s variables ``x`` holds.

    Example::

        cov_row_count(np.zeros((5, 2)), rowvar=False)  # 2
    """
    return np.shape(_as_rows(np.empty(np.shape(x)), rowvar))[0]


nondifferentiable(cov_row_count)


def cov_rows(m: Any, y: Any = None, rowvar: bool = True) -> Any:
    """The observations of ``np.cov(m, y, rowvar)``'s variables as the rows of one matrix.

    Example::

        cov_rows(np.zeros((5, 2)), rowvar=False).shape  # (2, 5)
    """
    rows = _as_rows(m, rowvar)
    if y is None:
        return rows
    return np.concatenate([rows, _as_rows(y, rowvar)], axis=0)


def cov_rows_part(rows: Any, x: Any, rowvar: bool, start: int) -> Any:
    """The rows of ``rows`` from ``start`` that came from ``x``, in ``x``'s shape.

    Example::

        cov_rows_part(np.ones((3, 4)), np.zeros(4), True, 2).shape  # (4,)
    """
    part = rows[start : start + cov_row_count(x, rowvar)]
    if not rowvar and np.ndim(x) == 2 and np.shape(x)[0] != 1:
        part = np.swapaxes(part, 0, 1)
    return np.reshape(part, np.shape(x))


def cov_rows_embed(part: Any, x: Any, rowvar: bool, start: int, total: int) -> Any:
    """``part`` (shaped like ``x``) as rows ``start`` onwards of ``total`` rows of zeros
    (the adjoint of :func:`cov_rows_part`).

    Example::

        cov_rows_embed(np.ones(4), np.zeros(4), True, 2, 3)[2]  # array([1., 1., 1., 1.])
    """
    if x is None:  # no y: the entry for it is never used
        return None
    rows = _as_rows(part, rowvar)
    before = np.zeros((start, np.shape(rows)[1]), dtype=rows.dtype)
    after = np.zeros((total - start - np.shape(rows)[0], np.shape(rows)[1]), dtype=rows.dtype)
    return np.concatenate([before, rows, after], axis=0)


@vjp_rule(cov_rows)
def _cov_rows_vjp(g, ans, m, y=None, rowvar=True):
    if y is None:  # noqa: SIM108 (a rule body: statements, not expressions)
        gy = None
    else:
        gy = cov_rows_part(g, y, rowvar, cov_row_count(m, rowvar))
    return cov_rows_part(g, m, rowvar, 0), gy


@jvp_rule(cov_rows)
def _cov_rows_jvp(t, ans, m, y=None, rowvar=True):
    count = np.shape(ans)[0]
    if y is None:
        from_y = None
    else:
        from_y = cov_rows_embed(t, y, rowvar, count - cov_row_count(y, rowvar), count)
    return cov_rows_embed(t, m, rowvar, 0, count), from_y


@vjp_rule(cov_rows_part)
def _cov_rows_part_vjp(g, ans, rows, x, rowvar, start):
    return cov_rows_embed(g, x, rowvar, start, np.shape(rows)[0])


@jvp_rule(cov_rows_part)
def _cov_rows_part_jvp(t, ans, rows, x, rowvar, start):
    return cov_rows_part(t, x, rowvar, start)


@vjp_rule(cov_rows_embed)
def _cov_rows_embed_vjp(g, ans, part, x, rowvar, start, total):
    return cov_rows_part(g, x, rowvar, start)


@jvp_rule(cov_rows_embed)
def _cov_rows_embed_jvp(t, ans, part, x, rowvar, start, total):
    return cov_rows_embed(t, x, rowvar, start, total)


def cov_divisor(rows: Any, bias: bool = False, ddof: Any = None, fweights=None, aweights=None):
    """What ``np.cov`` divides the sums of products by: observations less ``ddof`` (1
    unless ``bias``); with weights, their sum less ``ddof`` times the share the weighted
    mean removes (NumPy's divisor).

    Example::

        cov_divisor(np.zeros((2, 5)))  # 4
    """
    if fweights is None and aweights is None:
        if ddof is None:
            ddof = 0 if bias else 1
        return np.shape(rows)[1] - ddof
    weights = np.ones(np.shape(rows)[1]) if fweights is None else np.ones(1) * fweights
    removed_share = 1.0
    if aweights is not None:
        weights = weights * aweights
        removed_share = np.sum(weights * aweights) / np.sum(weights)
    if ddof is not None:
        return np.sum(weights) - ddof * removed_share
    return np.sum(weights) if bias else np.sum(weights) - removed_share


nondifferentiable(cov_divisor)


# ---------------------------------------------------------------------------------------
# Tangents that forward-mode rules compute from one argument's tangent. Plain NumPy with no
# rule of their own: a transform that meets them differentiates their code.


def pinv_tangent(t: Any, a: Any, inverse: Any) -> Any:
    """The tangent of ``np.linalg.pinv(a)`` (``inverse``, full rank) when ``a`` moves by ``t``.

    Example::

        pinv_tangent(np.eye(2), np.eye(2), np.eye(2))  # -identity
    """
    t_t = np.swapaxes(t, -1, -2)
    inverse_t = np.swapaxes(inverse, -1, -2)
    through = -np.matmul(inverse, np.matmul(t, inverse))
    left_null = np.matmul(inverse @ inverse_t, t_t - t_t @ a @ inverse)
    right_null = np.matmul(t_t - inverse @ a @ t_t, inverse_t @ inverse)
    return through + left_null + right_null


def vander_tangent(t: Any, basis: Any) -> Any:
    """The tangent of ``basis = np.vander(x, n)`` (decreasing powers) when ``x`` moves by ``t``.

    Example::

        vander_tangent(np.ones(1), np.vander(np.array([2.0]), 3))  # [[4., 1., 0.]]
    """
    count = np.shape(basis)[1]
    powers = cast_like(np.arange(count - 1, 0, -1), basis)
    edge = np.zeros_like(basis[:, :1])
    return np.expand_dims(t, 1) * np.concatenate([basis[:, 1:] * powers, edge], axis=1)


def cov_tangent(t_rows: Any, centered: Any, divisor: Any, shape: Any = None) -> Any:
    """The tangent of ``np.cov``'s matrix (reshaped to ``shape``) when its variables' rows
    move by ``t_rows``.

    Example::

        cov_tangent(np.ones((1, 3)), np.array([[-1.0, 0.0, 1.0]]), 2)  # [[0.]]
    """
    if t_rows is None:  # no y: the entry for it is never used
        return None
    t_centered = t_rows - np.mean(t_rows, axis=1, keepdims=True)
    half = np.matmul(t_centered, np.swapaxes(centered, 0, 1))
    tangent = (half + np.swapaxes(half, 0, 1)) / divisor
    return tangent if shape is None else np.reshape(tangent, shape)


def corrcoef_tangent(t_rows: Any, centered: Any, shape: Any = None) -> Any:
    """The tangent of ``np.corrcoef``'s matrix (reshaped to ``shape``) when its variables'
    rows move by ``t_rows``.

    Example::

        corrcoef_tangent(np.ones((1, 3)), np.array([[-1.0, 0.0, 1.0]]))  # [[0.]]
    """
    if t_rows is None:  # no y: the entry for it is never used
        return None
    products = np.matmul(centered, np.swapaxes(centered, 0, 1))
    variances = np.diagonal(products)
    scales = np.sqrt(variances)
    correlation = products / np.outer(scales, scales)
    t_products = cov_tangent(t_rows, centered, 1.0)
    relative = np.diagonal(t_products) / (2.0 * variances)
    spread = np.expand_dims(relative, 1) + np.expand_dims(relative, 0)
    tangent = t_products / np.outer(scales, scales) - correlation * spread
    return tangent if shape is None else np.reshape(tangent, shape)


def trapezoid_spacing(x: Any, ndim: int, axis: int) -> Any:
    """The intervals between the sample points ``x`` of ``np.trapezoid(y, x, axis=axis)``
    for a ``y`` with ``ndim`` axes, laid along ``axis`` (``np.diff`` of ``x``).

    Example::

        trapezoid_spacing(np.array([0.0, 1.0, 3.0]), 2, 1)  # array([[1., 2.]])
    """
    if np.ndim(x) == 1:
        return np.reshape(np.diff(x), axis_shape(ndim, axis))
    return np.diff(x, axis=axis)


@vjp_rule(trapezoid_spacing)
def _trapezoid_spacing_vjp(g, ans, x, ndim, axis):
    return undo_spacing(g, x, axis)


@jvp_rule(trapezoid_spacing)
def _trapezoid_spacing_jvp(t, ans, x, ndim, axis):
    return trapezoid_spacing(t, ndim, axis)


def undo_spacing(g: Any, x: Any, axis: int) -> Any:
    """The cotangent of ``x`` when ``g`` is that of :func:`trapezoid_spacing` of ``x``.

    Example::

        undo_spacing(np.array([[1.0, 1.0]]), np.zeros(3), 1)  # array([-1.,  0.,  1.])
    """
    if np.ndim(x) == 1:
        return undiff(np.ravel(g))
    return undiff(g, 1, axis)


@vjp_rule(undo_spacing)
def _undo_spacing_vjp(g, ans, spacing_cotangent, x, axis):
    return trapezoid_spacing(g, np.ndim(spacing_cotangent), axis)


@jvp_rule(undo_spacing)
def _undo_spacing_jvp(t, ans, spacing_cotangent, x, axis):
    return undo_spacing(t, x, axis)
