"""The closed world: every call on a differentiated value is understood, or refused.

Three groups of checks:

* functions that were declared non-differentiable but are not (``np.linspace``,
  ``np.arange`` with a float start, ``np.meshgrid``, ``np.heaviside``'s value at 0, a cast to
  an integer dtype) now have rules, checked end to end against finite differences;
* every declaration that remains is proved: at random points the declared function is
  integer or boolean valued, or exactly constant under small changes of its float arguments;
* derivatives at points where a formula would divide 0 by 0 (the deviation of one element,
  the norm of a zero vector) are 0, a subgradient, not NaN.
"""

from __future__ import annotations

import inspect
import operator
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, directional_derivative, numeric_grad

import s2sgrad as sg
from s2sgrad.rules import get_rule, registered_primitives
from s2sgrad.rules.histograms_grid import grid_cell, grid_fixed_edges
from s2sgrad.rules.more_numpy import insert_sources
from s2sgrad.rules.nan_reductions import nan_quantile_cells
from s2sgrad.runtime import scientific, ufunc_methods
from s2sgrad.runtime.core import is_complex, is_dask_array, is_foreign_array, matches_class
from s2sgrad.runtime.fft import fft_axes, fft_length, fft_lengths, half_spectrum_weights
from s2sgrad.runtime.histograms import histogram_bin_index, histogram_fixed_edges
from s2sgrad.runtime.linalg import (
    eigh_gap_mask,
    eigh_tangent_mask,
    einsum_subscripts,
    operand_dtype,
)
from s2sgrad.runtime.orderings import sorted_order, zipped_length
from s2sgrad.runtime.reductions import kept_count
from s2sgrad.runtime.shapes import (
    item_mask,
    rollaxis_destination,
    strided_positions,
    window_axes,
)

MODES = ["s2s", "tape", "auto"]

_rng = np.random.default_rng(20261125)


def r(*shape):
    return _rng.standard_normal(shape)


def check_gradient(f, x, second_order=True, modes=MODES):
    """Gradient of ``f`` in every mode, first and second call, against finite differences;
    and its Hessian-vector product against differences of the gradient."""
    expected = numeric_grad(f, (x,), 0)
    for mode in modes:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = call_twice(sg.grad(f, mode=mode), x)
        assert_close(actual, expected, rtol=1e-5, atol=1e-6)
    if second_order:
        check_second_order(f, x, modes)


def check_second_order(f, x, modes, step=1e-5):
    v = r(*np.shape(x))
    gradient = sg.grad(f, mode="s2s")
    expected = directional_derivative(gradient, x, v, step=step)
    for mode in [m for m in modes if m != "auto"]:
        (actual,) = sg.hvp(f, (x,), (v,), mode=mode)
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-6, err_msg=mode)


# ---------------------------------------------------------------------------------------
# Ranges and grids


def linspace_of_endpoints(x):
    return np.sum(np.sin(np.linspace(x[0], x[1], 7)) * np.arange(7.0))


def linspace_open_interval(x):
    return np.sum(np.linspace(x[0], x[1], 4, endpoint=False) ** 3)


def linspace_with_step(x):
    samples, step = np.linspace(x[0], x[1], 5, retstep=True)
    return np.sum(samples**2) + step**3


def linspace_of_arrays_along_an_axis(x):
    grid = np.linspace(x[:2], x[1:], 3, axis=1)
    return np.sum(np.cos(grid) * np.arange(3.0))


def arange_from_a_float_start(x):
    return np.sum(np.exp(np.arange(x[0], 2.5, 0.5)))


def arange_with_a_float_step(x):
    steps = np.arange(0.25, 3.0, x[1] * x[1] + 0.5)
    return np.sum(np.sin(steps))


def meshgrid_of_two_vectors(x):
    a, b = np.meshgrid(x, x[:2] ** 2)
    return np.sum(np.sin(a) * b)


def meshgrid_ij_sparse(x):
    a, b = np.meshgrid(x[:2], x, indexing="ij", sparse=True)
    return np.sum(a * b**2)


@pytest.mark.parametrize(
    "f",
    [
        linspace_of_endpoints,
        linspace_open_interval,
        linspace_with_step,
        linspace_of_arrays_along_an_axis,
        meshgrid_of_two_vectors,
        meshgrid_ij_sparse,
    ],
)
def test_ranges_and_grids_are_differentiable(f):
    check_gradient(f, np.array([0.3, -0.7, 1.2]) + 0.05 * r(3))


@pytest.mark.parametrize("f", [arange_from_a_float_start, arange_with_a_float_step])
def test_arange_is_differentiable_in_its_start_and_step(f):
    x = np.array([0.3, -0.7, 1.2]) + 0.05 * r(3)
    check_gradient(f, x, modes=["s2s", "auto"])
    # NumPy's arange does not let tape values in: the tape refuses, naming the line
    with pytest.raises(sg.NonDifferentiableError, match=r"test_closed_world\.py:\d+"):
        sg.grad(f, mode="tape")(x)


def heaviside_value_at_zero(x):
    return np.sum(np.heaviside(np.array([0.0, 1.0, -2.0]), x) * x)


def next_float(x):
    return np.sum(np.nextafter(x, 10.0) ** 2)


def cast_to_integers(x):
    return np.sum(x.astype(int) * x) + np.sum(x.astype(bool) * x)


def reduce_into_integers(x):
    scaled = x * 3.0
    total = np.sum(scaled, dtype=int) * x[0] + np.sum(np.cumsum(scaled, dtype=int) * x)
    return total + np.mean(scaled, dtype=int) * x[1]


def array_of_integers(x):
    return np.sum(np.array(x * 3.0, dtype=int) * x) + np.sum(np.asarray(x, dtype=bool) * x)


def fill_an_integer_array(x):
    return np.sum(np.full_like(np.arange(3), x[0]) * x) + np.sum(np.full(3, x[1], int) * x)


@pytest.mark.parametrize(
    "f", [heaviside_value_at_zero, next_float, cast_to_integers, reduce_into_integers]
)
def test_functions_once_declared_constant(f):
    check_gradient(f, np.array([1.3, -0.7, 2.2]) + 0.05 * r(3))


@pytest.mark.parametrize("f", [fill_an_integer_array, array_of_integers])
def test_integer_arrays_made_from_values_have_no_derivative(f):
    # NumPy's np.full and np.array do not let tape values in: only source transformation
    x = np.array([1.3, -0.7, 2.2]) + 0.05 * r(3)
    check_gradient(f, x, modes=["s2s", "auto"])


# ---------------------------------------------------------------------------------------
# Every remaining declaration of non-differentiability is a claim proved here: at random
# points the function's value is integer/boolean (or not a number at all), or it does not
# change when its float arguments move by a tiny amount.


def _floats(*shape):
    return _rng.uniform(-3.0, 3.0, shape)


PROOFS = {
    sorted_order: [(_floats(5),), (_floats(4), abs, True)],
    zipped_length: [(_floats(3, 4),)],
    np.einsum_path: [("ij,jk,kl->il", _floats(2, 3), _floats(3, 4), _floats(4, 2))],
    kept_count: [(_floats(3, 4) > 0, _floats(3, 4), 1), (_floats(3, 4) > 0, _floats(3, 4))],
    np.diag_indices_from: [(_floats(3, 3),)],
    np.tril_indices_from: [(_floats(3, 3),)],
    np.triu_indices_from: [(_floats(3, 3),)],
    operator.lt: [(_floats(4), _floats(4))],
    operator.le: [(_floats(4), _floats(4))],
    operator.eq: [(_floats(4), _floats(4))],
    operator.ne: [(_floats(4), _floats(4))],
    operator.gt: [(_floats(4), _floats(4))],
    operator.ge: [(_floats(4), _floats(4))],
    np.less: [(_floats(4), _floats(4))],
    np.less_equal: [(_floats(4), _floats(4))],
    np.equal: [(_floats(4), _floats(4))],
    np.not_equal: [(_floats(4), _floats(4))],
    np.greater: [(_floats(4), _floats(4))],
    np.greater_equal: [(_floats(4), _floats(4))],
    np.isclose: [(_floats(4), _floats(4))],
    np.logical_and: [(_floats(4), _floats(4))],
    np.logical_or: [(_floats(4), _floats(4))],
    np.logical_not: [(_floats(4),)],
    np.logical_xor: [(_floats(4), _floats(4))],
    operator.not_: [(1.5,)],
    operator.truth: [(1.5,)],
    # bitwise operations take integers and booleans only
    operator.and_: [(np.arange(4), 3)],
    operator.or_: [(np.arange(4), 3)],
    operator.xor: [(np.arange(4), 3)],
    operator.invert: [(np.arange(4),)],
    operator.inv: [(np.arange(4),)],
    operator.lshift: [(np.arange(4), 2)],
    operator.rshift: [(np.arange(4), 1)],
    np.bitwise_and: [(np.arange(4), 3)],
    np.bitwise_or: [(np.arange(4), 3)],
    np.bitwise_xor: [(np.arange(4), 3)],
    np.invert: [(np.arange(4),)],
    np.left_shift: [(np.arange(4), 2)],
    np.right_shift: [(np.arange(4), 1)],
    np.isfinite: [(_floats(4),)],
    np.isnan: [(_floats(4),)],
    np.isinf: [(_floats(4),)],
    np.isposinf: [(_floats(4),)],
    np.isneginf: [(_floats(4),)],
    np.signbit: [(_floats(4),)],
    np.floor: [(_floats(4),)],
    np.ceil: [(_floats(4),)],
    np.round: [(_floats(4),), (_floats(4), 2)],
    np.around: [(_floats(4),), (_floats(4), 1)],
    np.rint: [(_floats(4),)],
    np.trunc: [(_floats(4),)],
    np.fix: [(_floats(4),)],
    round: [(1.2345,), (1.2345, 2)],
    int: [(2.7,)],
    bool: [(2.7,)],
    np.floor_divide: [(_floats(4), _floats(4))],
    operator.floordiv: [(_floats(4), _floats(4))],
    np.spacing: [(_floats(4),)],
    np.gcd: [(np.arange(4), 6)],
    np.lcm: [(np.arange(4), 6)],
    np.argmax: [(_floats(5),)],
    np.argmin: [(_floats(5),)],
    np.nanargmax: [(_floats(5),)],
    np.nanargmin: [(_floats(5),)],
    np.argsort: [(_floats(5),)],
    np.lexsort: [((_floats(5), _floats(5)),)],
    np.argpartition: [(_floats(5), 2)],
    np.count_nonzero: [(_floats(5),)],
    np.all: [(_floats(5),)],
    np.any: [(_floats(5),)],
    np.ndarray.argmax: [(_floats(5),)],
    np.ndarray.argmin: [(_floats(5),)],
    np.ndarray.argsort: [(_floats(5),)],
    np.ndarray.argpartition: [(_floats(5), 2)],
    np.ndarray.all: [(_floats(5),)],
    np.ndarray.any: [(_floats(5),)],
    np.searchsorted: [
        (np.sort(_floats(6)), _floats(4)),
        (np.sort(_floats(6)), _floats(4), "right"),
    ],
    np.ndarray.searchsorted: [(np.sort(_floats(6)), _floats(4))],
    np.digitize: [(_floats(4), np.sort(_floats(5))), (_floats(4), -np.sort(_floats(5)), True)],
    np.linalg.matrix_rank: [(_floats(3, 3),)],
    np.shape: [(_floats(2, 3),)],
    np.ndim: [(_floats(2, 3),)],
    np.size: [(_floats(2, 3),)],
    len: [(_floats(2, 3),)],
    # constructors: the values never depend on the (integer) arguments' values
    np.zeros: [(3,)],
    np.ones: [(3,)],
    np.empty: [(0,)],
    np.eye: [(3, 4, 1)],
    np.identity: [(3,)],
    np.zeros_like: [(_floats(3),)],
    np.ones_like: [(_floats(3),)],
    np.empty_like: [(_floats(0),)],
    np.nonzero: [(_floats(4),)],
    np.flatnonzero: [(_floats(4),)],
    np.argwhere: [(_floats(4),)],
    np.indices: [((2, 3),)],
    np.tri: [(3, 4, -1)],
    range: [(4,)],
    isinstance: [(_floats(2), np.ndarray)],
    np.ndarray.shape: [(_floats(2, 3),)],
    np.ndarray.ndim: [(_floats(2, 3),)],
    np.ndarray.size: [(_floats(2, 3),)],
    np.ndarray.dtype: [(_floats(2, 3),)],
    np.ndarray.strides: [(_floats(2, 3),), (_floats(3, 4).T,)],
    np.ndarray.itemsize: [(_floats(2, 3),)],
    np.ndarray.nonzero: [(_floats(4),)],
    np.result_type: [(_floats(2), 1.5)],
    np.issubdtype: [(np.float64, np.floating)],
    # type tests the generated code makes (match class patterns, refused argument types)
    matches_class: [(_floats(2), np.ndarray), (1.5, float)],
    is_foreign_array: [(_floats(2),), (np.ma.masked_array(_floats(2)),)],
    is_dask_array: [(_floats(2),), (1.5,)],
    is_complex: [(_floats(2),), (1.5,)],
    rollaxis_destination: [(3, 2, 0), (4, -1, 1)],  # an axis number
    # the fft rules' axes, lengths, norm names and weights: by shape, never by value
    fft_axes: [(_floats(2, 3), None, None), (_floats(2, 3, 4), (3, 4), None)],
    fft_lengths: [(_floats(2, 3), None, (0, 1)), (_floats(2, 3), (4,), (1,))],
    fft_length: [(_floats(2, 3), None, -1), (_floats(2, 3), 5, 0)],
    half_spectrum_weights: [(4, 0, 1, _floats(3)), (5, 1, 2, _floats(2, 3))],
    item_mask: [(_floats(4), (2,)), (_floats(2, 2), (1, -1))],  # a boolean mask
    strided_positions: [(_floats(4), (3, 2), (8, 8)), (_floats(3, 4).T,)],
    window_axes: [(_floats(4, 5), 2, 1), (_floats(3, 4, 5), (2, 2), (0, -1))],  # axes, lengths
    # helpers of the scientific rules: shapes, counts, interpolation cells and weights
    scientific.axis_shape: [(3, 1)],
    scientific.unit_spacing: [(_floats(2, 4), 1)],
    scientific.quantile_cells: [
        (5, 0.3),
        (4, _rng.uniform(0.05, 0.95, 3)),
        (6, 42.0),
    ],
    scientific.interp_cells: [
        (_floats(5), np.array([-3.5, -1.0, 0.5, 3.5])),
        (_floats(3), np.array([-1.0, 1.0]), 0.5, 2.0),
    ],
    scientific.interp_wrapped_cells: [
        (_floats(5) * 4.0, np.array([0.3, 1.9, 0.9, 3.4, -0.7]), 2.5),
        (_floats(3), np.array([-1.0, 1.0]), -1.5),
    ],
    scientific.polyfit_degree: [(2,)],
    # np.histogram's bins of the samples (integers), and its check of fixed edges (0.0)
    histogram_bin_index: [(_floats(6), np.array([-1.0, 0.0, 0.5, 2.0]))],
    histogram_fixed_edges: [
        (_floats(5), np.array([-1.0, 0.0, 2.0]), np.array([-1.0, 2.0])),
        (_floats(3), 4, np.array([0.0, 1.0])),
    ],
    # np.histogramdd's cell of each point (integers), and its check of fixed edges (0.0)
    grid_cell: [(_floats(5, 2), (np.array([-1.0, 0.5, 2.0]), np.array([0.0, 0.3, 1.0])))],
    grid_fixed_edges: [(4, np.array([[0.0, 1.0], [0.0, 1.0]]), 2, "np.histogram2d")],
    # where np.insert's result comes from: integer positions
    insert_sources: [(_floats(2, 3), 1, _floats(2), 1), (_floats(4), [0, 2], 0.5)],
    # np.nanquantile's cells: ranks among the numbers of each slice, and where q falls
    nan_quantile_cells: [
        (np.where(_floats(3, 4) > 0.5, np.nan, _floats(3, 4)), np.array([0.25, 0.7])),
        (np.array([0.3, np.nan, -1.2, 2.0]), 0.4),
    ],
    scientific.cov_row_count: [(_floats(5, 2), False)],
    scientific.cov_divisor: [(_floats(2, 5),), (_floats(2, 5), True), (_floats(2, 5), False, 2)],
    ufunc_methods.outer_shape: [(_floats(3), _floats(2, 4))],
    ufunc_methods.first_positive: [(_floats(3, 4), 1)],
    ufunc_methods.diagonal_index: [(_floats(3, 4),), (_floats(5, 2), True), (_floats(2, 2, 2),)],
    ufunc_methods.along_axis_index: [
        (_floats(3, 4), np.array([[1], [0], [3]]), 1),
        (_floats(3, 4), np.array([0, 11, -1]), None),
    ],
    ufunc_methods.put_index: [(_floats(3, 4), [0, -1, 5]), (_floats(4), np.array([2, 2]))],
    ufunc_methods.unique_index: [(_floats(4), [2, 0]), (_floats(3, 3), np.array([0, 2]))],
    ufunc_methods.running_source: [(_floats(6),), (_floats(3, 4), 1, "minimum")],
    # einsum's subscripts as a string and its operands' positions
    operand_dtype: [([_floats(2), _floats(2)],), (_floats(3, 2),)],
    # a value's class and whether it has an attribute or can be called
    type: [(_floats(3),), (1.5,)],
    hasattr: [(_floats(3), "shape"), (_floats(2), "nothing")],
    callable: [(_floats(3),)],
    # which eigenvalues eigh's rules may divide the gap of: 1 or 0 (equal ones)
    eigh_gap_mask: [
        (np.array([-1.0, 0.5, 2.0]),),
        (np.array([-1.0, 0.5, 2.0]), _floats(3, 3), _floats(3)),
    ],
    eigh_tangent_mask: [(np.array([-1.0, 0.5, 2.0]), _floats(3, 3))],
    einsum_subscripts: [
        ("ij,jk", (_floats(2, 3), _floats(3, 2))),
        (_floats(2, 3), ([0, 1], _floats(3, 2), [1, 2], [0, 2])),
    ],
}

# Declarations that are design decisions, not claims about a function's values.
BY_DESIGN = {
    "stop_gradient": "its purpose: the value with no derivative",
    "grad": "makes a function, not a value",
    "value_and_grad": "makes a function, not a value",
    "jacobian": "makes a function, not a value",
    "jacfwd": "makes a function, not a value",
    "hessian": "makes a function, not a value",
    "zeros_like_value": "generated code's zero cotangents",
    "seed_cotangent": "generated code's output seed",
    "zeros_like_structure": "generated code's zero cotangents",
    "shape_only": "generated code's saves read for their shape alone",
    "grid_volumes": "the cells' volumes of a histogram's edges, which carry no derivative",
    "zero_edges": "zeros: the tangents of a histogram's edges",
    "refuse_if_array": "a check that raises or returns None",
    "refuse_unless_stored_plainly": "a check that raises or returns None",
    "plain_callable": "a check that returns the function it is given (not a value) or raises",
    "keywords_at_the_end": "makes a function (the one it is given, called by keywords)",
    "note_stored": "bookkeeping of stored state: returns None",
    "body_reached": "marks the end of a try body run as nothing_raised's block: returns None",
    "_refuse_repeated_roots": "a check that raises or returns None",
    "_square_pair": "a check that raises or returns None",
    "_power_series": "constants of a polynomial basis: of its function and a count, no values",
    "store_entry": "stores a plain value into a caller's dict: returns None",
    "forget_stored": "bookkeeping of stored state: returns None",
    "entry_snapshot": "saves an entry of a dict of the code around, whose values are plain",
    "put_back_entry": "puts back (or deletes) that entry: returns None",
    "refuse_stored_state": "a check that raises or returns None",
    "opaque": "a check that returns the function it is given (not a value) or raises",
    "refuse_unless_array": "a check that raises or returns None",
    "refuse_unless_ndarray": "a check that raises or returns None",
    "require_aux_pair": "a check that raises or returns None",
    "array_receiver": "a check that raises or returns None",
    "answered_plainly": "a check that raises or returns None",
    "chained_index": "an index: integers and slices, never the array's values",
    "is_view_of": "a boolean: whether two arrays share memory",
    "item_reads_are_views": "a boolean: whether items read by integers are rows (views)",
    "refuse_derivative": "a check that raises or returns None",
    "ravel_positions": "integer positions",
    "clip_regions": "boolean masks",
    "dict_keys": "a dict's keys, never its values",
    "inverse_norm": "the name of an fft normalisation",
    "constant_argument": "its purpose: a called rule's argument held constant",
}


def _declared():
    return [p for p in registered_primitives() if not get_rule(p).differentiable]


def _label(primitive):
    owner = getattr(primitive, "__objclass__", None)
    name = getattr(primitive, "__name__", repr(primitive))
    return f"{owner.__name__}.{name}" if owner else name


def _call(primitive, args):
    if hasattr(primitive, "__get__") and not callable(primitive):  # ndarray.shape and kin
        return primitive.__get__(args[0])
    return primitive(*args)


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, range):
        return [np.asarray(value)]
    return [value]


def _is_real_valued(value) -> bool:
    if isinstance(value, (bool, int, str, np.dtype, type)):
        return False
    return isinstance(value, float) or np.issubdtype(np.result_type(value), np.inexact)


def test_every_declaration_has_a_proof():
    unproved = [
        _label(p)
        for p in _declared()
        if p not in PROOFS and getattr(p, "__name__", None) not in BY_DESIGN
    ]
    assert not unproved, f"declared non-differentiable without a proof: {unproved}"


@pytest.mark.parametrize(
    ("primitive", "args"),
    [pytest.param(p, a, id=_label(p)) for p, calls in PROOFS.items() for a in calls],
)
def test_declared_nondifferentiable_is_piecewise_constant(primitive, args):
    rule = get_rule(primitive)
    assert rule is not None and not rule.differentiable
    out = _call(primitive, args)
    if not any(_is_real_valued(leaf) for leaf in _leaves(out)):
        return  # integer, boolean, shapes, dtypes: no derivative by type
    for index, arg in enumerate(args):
        if not _is_real_valued(arg):
            continue
        for sign in (1.0, -1.0):
            moved = list(args)
            moved[index] = arg + sign * 1e-7 * _rng.uniform(0.5, 1.0, np.shape(arg))
            for a, b in zip(_leaves(out), _leaves(_call(primitive, moved))):
                np.testing.assert_array_equal(a, b, err_msg=f"argument {index} moved")


# ---------------------------------------------------------------------------------------
# 0/0 points: the derivative is 0, a subgradient, where the formula would divide 0 by 0


def deviation_of_one_element(x):
    return np.std(x[:1]) + np.var(x[:1]) + np.sum(x)


def deviation_of_equal_values(x):
    return np.std(np.stack([x[0], x[0]])) + np.sum(np.std(np.ones((2, 3)) * x[1], axis=0))


def norm_of_a_zero_vector(x):
    return np.linalg.norm(x * 0.0) + np.linalg.norm(x[:2] * 0.0, ord=3) + x[2]


def norm_along_an_axis_with_a_zero_row(x):
    rows = np.stack([x, x * 0.0])
    return np.sum(np.linalg.norm(rows, axis=1))


@pytest.mark.parametrize(
    "f",
    [
        deviation_of_one_element,
        deviation_of_equal_values,
        norm_of_a_zero_vector,
        norm_along_an_axis_with_a_zero_row,
    ],
)
def test_zero_deviation_and_zero_norm_have_zero_derivative(f):
    x = np.array([0.4, -1.1, 0.8])
    expected = numeric_grad(f, (x,), 0)
    for mode in MODES:
        gradient = call_twice(sg.grad(f, mode=mode), x)
        assert np.all(np.isfinite(gradient)), mode
        assert_close(gradient, expected)
    direction = r(3)
    _, tangent = sg.jvp(f, (x,), (direction,))
    np.testing.assert_allclose(tangent, expected @ direction, atol=1e-6)


# ---------------------------------------------------------------------------------------
# np.r_ and np.c_ are concatenations


def r_of_vectors_and_numbers(x):
    joined = np.r_[x, np.sin(x[:2]), 2.0, x[0] * x[1]]
    return np.sum(joined**2 * np.arange(1.0, 8.0))


def r_with_a_range(x):
    return np.sum(np.r_[0:3, x, -2:0] * np.r_[x, x, x[:2]])


def r_of_matrices(x):
    rows = np.r_[np.outer(x, x), x[None, :] * 2.0]
    return np.sum(np.tanh(rows) * np.arange(12.0).reshape(4, 3))


def c_of_columns(x):
    columns = np.c_[x, x**2, np.cos(x)]
    return np.sum(columns @ np.array([1.0, -2.0, 0.5]) ** 2)


@pytest.mark.parametrize(
    "f", [r_of_vectors_and_numbers, r_with_a_range, r_of_matrices, c_of_columns]
)
def test_r_and_c_are_concatenations(f):
    x = np.array([0.3, -0.7, 1.2]) + 0.05 * r(3)
    # the tape too: each item np.r_ makes an array of joins as itself (tape/index_joins.py)
    check_gradient(f, x, modes=["s2s", "auto", "tape"])


def r_with_a_directive(x):
    return np.sum(np.r_["0,2", x, x])


def r_with_a_computed_range(x):
    n = len(x)
    return np.sum(np.r_[0:n, x])


def mgrid_of_a_value(x):
    return np.sum(np.mgrid[0.0 : x[0] : 5j])


def constant_mgrid(x):
    return np.sum(np.mgrid[0.0:1.0:5j] * x[0])


def test_a_complex_step_counts_points_and_is_no_complex_number():
    x = np.array([0.3, -0.7, 1.2])
    for mode in ("s2s", "tape"):
        assert_close(
            call_twice(sg.grad(constant_mgrid, mode=mode), x), numeric_grad(constant_mgrid, (x,), 0)
        )


@pytest.mark.parametrize("f", [r_with_a_directive, r_with_a_computed_range, mgrid_of_a_value])
def test_exotic_index_tricks_are_refused(f):
    x = np.array([0.3, -0.7, 1.2])
    with pytest.raises(sg.UnsupportedError) as error:
        sg.grad(f, mode="s2s")(x)
    assert f"test_closed_world.py:{_line_of(f, 'np.')}" in str(error.value)
    assert "np.concatenate" in str(error.value)
    # auto: the tape takes over, and is right (np.mgrid calls np.linspace) or refuses
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = sg.grad(f, mode="auto")(x)
    except sg.S2SGradError as refusal:
        assert f"test_closed_world.py:{_line_of(f, 'np.')}" in str(refusal)
    else:
        assert_close(actual, numeric_grad(f, (x,), 0))


# ---------------------------------------------------------------------------------------
# Writes into an argument through a call: np.add.at is differentiated, the others refused


def _line_of(f, text):
    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, line in enumerate(lines) if text in line)


def scatter_add(x):
    t = np.zeros(3)
    np.add.at(t, [0, 0, 2], x * x[1])
    return np.sum(np.sin(t) * np.arange(1.0, 4.0))


def scatter_subtract_in_a_loop(x):
    t = np.ones((2, 3)) * x[2]
    for i in range(2):
        np.subtract.at(t, (np.array([i, i]), np.array([0, 2])), x[:2] * x[i])
    return np.sum(np.sin(t))


def scatter_counts_then_use(x):
    counts = np.zeros(3)
    np.add.at(counts, [0, 0, 2], 1.0)
    return np.sum(np.exp(x) * counts)


def fill_before_use(x):
    t = np.ones(3)
    t.fill(2.0)
    np.copyto(t, t * 3.0)
    return np.sum(x * t)


@pytest.mark.parametrize(
    "f", [scatter_add, scatter_subtract_in_a_loop, scatter_counts_then_use, fill_before_use]
)
def test_in_place_writes_that_are_understood(f):
    x = np.array([0.3, -0.7, 1.2]) + 0.05 * r(3)
    # the tape writes into its own values (t = np.ones(...) * x[2]), and takes np.zeros(3)
    # over at the np.add.at into it
    check_gradient(f, x, modes=MODES)


def scatter_add_into_a_given_buffer(x, t):
    np.add.at(t, [0, 0, 2], x * x[1])
    return np.sum(np.sin(t) * np.arange(1.0, 4.0))


def test_scatter_add_on_the_tape_says_to_use_source_transformation():
    with pytest.raises(sg.NonDifferentiableError) as error:
        sg.grad(scatter_add_into_a_given_buffer, mode="tape")(np.ones(3), np.zeros(3))
    message = str(error.value)
    line = _line_of(scatter_add_into_a_given_buffer, "add.at")
    assert f"test_closed_world.py:{line}" in message
    assert "mode='s2s'" in message


def sine_into_a_buffer(x):
    t = np.zeros(3)
    np.sin(x, out=t)
    return np.sum(t)


def sine_into_a_buffer_by_position(x):
    t = np.zeros(3)
    np.sin(x, t)
    return np.sum(t)


def product_into_a_buffer(x):
    t = np.zeros(3)
    y = np.multiply(x, 2.0, out=t)
    return np.sum(y * t)


def multiply_at(x):
    t = np.ones(3)
    np.multiply.at(t, [0, 0], x[:2])
    return np.sum(t)


def copy_into(x):
    t = np.zeros(3)
    np.copyto(t, x)
    return np.sum(t**2)


def place_into(x):
    t = np.zeros(3)
    np.place(t, x > 0, x)
    return np.sum(t**2)


def fill_with(x):
    t = np.zeros(3)
    t.fill(x[0])
    return np.sum(t**2)


def sort_in_place(x):
    t = x * 1.0
    t.sort()
    return t[0] * 2.0 + t[2]


def put_method(x):
    t = np.zeros(3)
    t.put([0], x[0])
    return np.sum(t**2)


def flat_assignment(x):
    t = np.zeros(3)
    t.flat = x
    return np.sum(t**2)


def extend_a_list(x):
    items = [x[0]]
    items.extend([x[1], x[2]])
    return items[0] * items[1] * items[2]


def sort_a_list(x):
    items = [x[0], x[1], x[2]]
    items.sort()
    return items[0] * 2.0 + items[2]


_DEFAULTS = {"a": 1.0}


def update_a_dict(x):
    d = {"a": x[0]}
    d.update(_DEFAULTS)  # another dict's entries (d.update({"a": v}) is entries written)
    return d["a"] * 3.0 + x[1]


REFUSED = [
    (multiply_at, "multiply.at"),
    (place_into, "np.place"),
    (put_method, ".put("),
    (flat_assignment, ".flat"),
    (extend_a_list, ".extend("),
    (sort_a_list, ".sort()"),
    (update_a_dict, ".update("),
]


def sine_into_a_copy(x):
    t = x * 1.0
    np.sin(t, out=t)
    return np.sum(t * x)


def clipped_into_itself_in_a_loop(x):
    t = x * 2.0
    for _ in range(2):
        np.clip(t * x, -0.5, 0.5, out=(t,))
    return np.sum(t * x)


def column_sums_into_a_buffer(x):
    s = np.zeros(3)
    np.sum(np.outer(x, x), axis=0, out=s)
    return np.sum(s * x)


def read_then_copy_in_a_loop(x):
    t = np.ones(3)
    total = 0.0
    for _ in range(2):
        np.copyto(t, t * 3.0)
        total = total + np.sum(x * t)
    return total


WRITTEN_BY_OUT = [
    fill_with,
    sort_in_place,
    read_then_copy_in_a_loop,
    sine_into_a_buffer,
    sine_into_a_buffer_by_position,
    copy_into,
    sine_into_a_copy,
    clipped_into_itself_in_a_loop,
    column_sums_into_a_buffer,
]


@pytest.mark.parametrize("f", WRITTEN_BY_OUT, ids=lambda f: f.__name__)
def test_a_result_written_with_out_is_an_item_write(f):
    """``f(..., out=t)``, ``np.copyto(t, v)``, ``t.fill(v)`` and ``t.sort()`` as statements
    are ``t[...] = f(...)``: by source always; on the tape where ``t`` is a value being
    differentiated (into a plain buffer such as ``np.zeros(3)``, refused)."""
    x = np.array([0.3, -0.7, 1.2])
    expected = numeric_grad(f, (x,), 0)
    for mode in ("s2s", "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert_close(call_twice(sg.grad(f, mode=mode), x), expected)
    v = np.array([0.5, 1.0, -2.0])
    _, tangent = call_twice(lambda a: sg.jvp(f, (a,), (v,), mode="s2s"), x)
    assert_close(tangent, directional_derivative(f, x, v))
    try:
        actual = call_twice(sg.grad(f, mode="tape"), x)
    except sg.S2SGradError as refusal:
        assert "test_closed_world.py:" in str(refusal)
        plain_buffers = (sine_into_a_buffer, sine_into_a_buffer_by_position, copy_into)
        assert f in (*plain_buffers, column_sums_into_a_buffer, fill_with, sort_in_place)
    else:
        assert_close(actual, expected)


@pytest.mark.parametrize(("f", "text"), REFUSED, ids=[f.__name__ for f, _ in REFUSED])
def test_writes_into_a_differentiated_array_are_refused(f, text):
    x = np.array([0.3, -0.7, 1.2])
    with pytest.raises(sg.UnsupportedError) as error:
        sg.grad(f, mode="s2s")(x)
    message = str(error.value)
    assert f"test_closed_world.py:{_line_of(f, text)}" in message
    assert "in place" in message and "use " in message
    # auto: the tape takes over; it differentiates the lists and dicts, and refuses the rest
    expected = numeric_grad(f, (x,), 0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = sg.grad(f, mode="auto")(x)
    except (sg.S2SGradError, TypeError) as refusal:
        assert "test_closed_world.py:" in str(refusal)
    else:
        assert_close(actual, expected)


def read_then_fill(x):
    t = np.ones(3)
    y = x * t
    t.fill(2.0)
    return np.sum(y * y)


def test_changing_a_constant_a_derivative_still_needs():
    """The derivative of x * t needs t as it was: the item write t[...] = 2.0 that
    t.fill(2.0) is keeps it (s2s), and the tape keeps a copy of t."""
    x = np.array([0.3, -0.7, 1.2])
    for mode in ("s2s", "auto", "tape"):
        assert_close(sg.grad(read_then_fill, mode=mode)(x), numeric_grad(read_then_fill, (x,), 0))


# ---------------------------------------------------------------------------------------
# A differentiated value passed by keyword reaches the rule like a positional one


def fill_by_keyword(x):
    return np.sum(np.full(shape=3, fill_value=x[0]) ** 2) + x[1]


def take_by_keyword(x):
    return np.sum(np.take(a=x * 2.0, indices=[0, 0, 2]) ** 3)


def linspace_by_keyword(x):
    return np.sum(np.linspace(start=x[0], stop=x[1], num=4) ** 2)


def clip_method_by_keyword(x):
    return np.sum(x.clip(min=x[0] * 0.5) ** 2)


@pytest.mark.parametrize(
    "f", [fill_by_keyword, take_by_keyword, linspace_by_keyword, clip_method_by_keyword]
)
def test_differentiated_keyword_arguments(f):
    x = np.array([0.3, -0.7, 1.2]) + 0.05 * r(3)
    check_gradient(f, x, modes=["s2s", "auto"])


def sum_with_an_initial_value(x):
    return np.sum(np.sum(np.outer(x, x), axis=1, initial=x[2] ** 2) ** 2)


def test_the_initial_value_of_a_sum_is_differentiated():
    x = np.array([0.3, -0.7, 1.2]) + 0.05 * r(3)
    check_gradient(sum_with_an_initial_value, x)
    direction = r(3)
    _, tangent = sg.jvp(sum_with_an_initial_value, (x,), (direction,))
    expected = numeric_grad(sum_with_an_initial_value, (x,), 0) @ direction
    np.testing.assert_allclose(tangent, expected, rtol=1e-5)


def item_of_a_value(x):
    v = x[0].item()
    return v * v + x[1]


def list_of_a_value(x):
    v = x.tolist()
    return v[0] * v[1]


def test_item_of_a_value_differentiates_by_source_and_is_refused_on_the_tape():
    # x.item() has a rule: source transformation follows the number; the tape cannot
    x = np.array([0.3, -0.7, 1.2])
    for mode in ("s2s", "auto"):
        assert_close(sg.grad(item_of_a_value, mode=mode)(x), numeric_grad(item_of_a_value, [x], 0))
    with pytest.raises(sg.NonDifferentiableError) as error:
        sg.grad(item_of_a_value, mode="tape")(x)
    assert f"test_closed_world.py:{_line_of(item_of_a_value, 'v = ')}" in str(error.value)


@pytest.mark.parametrize("f", [list_of_a_value])
def test_plain_numbers_taken_from_a_value_are_refused(f):
    # the number carries no derivative: the gradient would silently miss its path
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(sg.S2SGradError) as error:
                sg.grad(f, mode=mode)(np.array([0.3, -0.7, 1.2]))
        assert f"test_closed_world.py:{_line_of(f, 'v = ')}" in str(error.value)


@pytest.mark.parametrize("f", [put_method, multiply_at])
def test_forward_mode_refuses_the_same_writes(f):
    x = np.array([0.3, -0.7, 1.2])
    with pytest.raises(sg.UnsupportedError, match=r"test_closed_world\.py:\d+: .* in place"):
        sg.jvp(f, (x,), (np.ones(3),), mode="s2s")


X_FOR_KEYWORDS = np.linspace(-2.0, 2.5, 7)


def covariance_weighted_by(c):
    return np.sum(np.cov(X_FOR_KEYWORDS, aweights=np.abs(X_FOR_KEYWORDS) + c))


@pytest.mark.parametrize("f, keyword", [(covariance_weighted_by, "aweights")])
def test_a_differentiated_keyword_the_rule_does_not_answer_for_is_refused(f, keyword):
    """A rule that answers only for some arguments must not give a keyword argument that
    is being differentiated a zero (np.cov(x, aweights=w) gave 0, and np.nan_to_num's
    nan= did before its rule answered for it)."""
    for transform in (
        lambda: sg.grad(f, mode="s2s")(0.7),
        lambda: sg.jvp(f, (0.7,), (1.0,), mode="s2s"),
    ):
        with pytest.raises(sg.S2SGradError, match=rf"test_closed_world\.py:\d+: .*'{keyword}='"):
            transform()


def squares_by_vectorize(x):
    square = np.vectorize(lambda t: t * t)
    return np.sum(square(x))


@pytest.mark.parametrize("mode", MODES)
def test_numpy_code_without_a_rule_is_refused_at_the_users_line(mode):
    """``np.vectorize(f)(x)`` runs NumPy's own Python code, which has no rule: refused naming
    this file (never numpy's source or generated code), in both engines."""
    with pytest.raises(sg.NonDifferentiableError) as caught:
        sg.grad(squares_by_vectorize, mode=mode)(r(3))
    assert f"{__file__}:" in str(caught.value)
    assert "generated" not in str(caught.value) and "numpy/lib" not in str(caught.value)
    if mode != "tape":  # named by its public name (the tape names the np.asarray inside it)
        assert "np.vectorize" in str(caught.value) and "_impl" not in str(caught.value)
