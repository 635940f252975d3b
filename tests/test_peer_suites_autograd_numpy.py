"""What autograd's ``test_numpy.py`` and ``test_systematic.py`` ask of reductions (``axis``,
``keepdims``, ``ddof``, ``weights``, NaN-ignoring forms, norms) and shape functions
(reshape, transpose, stacking, splitting, padding, sorting, gathering, ``where`` and
``select``, products), asked of s2sgrad in every engine, on a first and a later call,
forward mode and Hessian-vector products, against central differences in float64.
"""

from __future__ import annotations

import numpy as np
import pytest
from peer_suite_checks import MODES, check_function, weighted

rng = np.random.default_rng(1010032)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def away(*shape):
    """Normal numbers at least 0.1 from zero (and from each other, in small sets)."""
    x = rng.standard_normal(shape)
    return np.where(np.abs(x) < 0.1, 0.3, x) + 0.01 * np.arange(x.size).reshape(shape)


SPREAD = normal(2, 3, 3)


# (name, function, arguments, second order checked)
CASES = [
    # reductions
    ("cumsum_axis", lambda x: np.cumsum(x, axis=0), [normal(3, 2)], True),
    ("cumsum_flat", lambda x: np.cumsum(x), [normal(3, 2)], True),
    ("min_keepdims", lambda x: np.min(x, axis=1, keepdims=True), [away(3, 4)], False),
    ("amax_axes", lambda x: np.amax(x, axis=(0, 2)), [away(2, 3, 4)], False),
    ("max_method", lambda x: x.max(axis=-1), [away(3, 4)], False),
    ("mean_axes", lambda x: np.mean(x, axis=(0, 1)), [normal(2, 3, 2)], True),
    ("var_all_ddof", lambda x: np.var(x, ddof=1), [normal(3, 4)], True),
    ("std_method", lambda x: x.std(axis=1, keepdims=True), [normal(3, 4)], True),
    ("prod_axis", lambda x: np.prod(x, axis=1), [normal(3, 4)], True),
    (
        "average_weighted",
        lambda x, w: np.average(x, axis=0, weights=w),
        [normal(3, 2), positive(3)],
        True,
    ),
    ("nansum", lambda x: np.nansum(x**2, axis=0), [normal(3, 2)], True),
    ("nanmean", lambda x: np.nanmean(np.sin(x)), [normal(3, 2)], True),
    ("norm_axis", lambda x: np.linalg.norm(x, axis=1), [normal(3, 4)], True),
    ("norm_fro", lambda x: np.linalg.norm(x, "fro"), [normal(3, 4)], True),
    ("norm_ord_1_vector", lambda x: np.linalg.norm(x, 1), [away(4)], False),
    ("norm_inf_vector", lambda x: np.linalg.norm(x, np.inf), [away(4)], False),
    ("norm_nuclear", lambda x: np.linalg.norm(x, "nuc"), [normal(3, 2)], False),
    ("norm_2_matrix", lambda x: np.linalg.norm(x, 2), [normal(3, 2)], False),
    ("norm_keepdims", lambda x: np.linalg.norm(x, axis=0, keepdims=True) * x, [normal(3, 2)], True),
    # shape functions
    ("reshape", lambda x: np.reshape(x, (3, -1)) ** 2, [normal(2, 3)], True),
    (
        "reshape_method_order_f",
        lambda x: x.reshape((6,), order="F") * np.arange(6.0),
        [normal(2, 3)],
        True,
    ),
    ("ravel", lambda x: np.ravel(x) * np.arange(6.0), [normal(3, 2)], True),
    ("transpose_axes", lambda x: np.transpose(x, (2, 0, 1)) ** 2, [normal(2, 3, 4)], True),
    ("swapaxes", lambda x: np.swapaxes(x, 0, 2) * 2.0, [normal(2, 3, 4)], True),
    (
        "expand_squeeze",
        lambda x: np.squeeze(np.expand_dims(x, 1), axis=1) ** 3,
        [normal(2, 3)],
        True,
    ),
    ("tile", lambda x: np.tile(x, (2, 1)) ** 2, [normal(2, 3)], True),
    ("repeat_axis", lambda x: np.repeat(x, 2, axis=1) ** 2, [normal(2, 3)], True),
    ("repeat_counts", lambda x: np.repeat(x, [1, 0, 2]) ** 2, [normal(3)], True),
    (
        "concatenate_axis",
        lambda x, y: np.concatenate([x, y, x], axis=1) ** 2,
        [normal(2, 3), normal(2, 1)],
        True,
    ),
    ("stack_axis", lambda x, y: np.stack([x, y], axis=-1) ** 2, [normal(2, 3), normal(2, 3)], True),
    (
        "hstack_vstack",
        lambda x, y: np.vstack([np.hstack([x, y]), np.hstack([y, x])]) ** 2,
        [normal(2, 2), normal(2, 2)],
        True,
    ),
    (
        "dstack_column_stack",
        lambda x, y: np.dstack([x, y]) + np.column_stack([x, y]).reshape(2, 2, 2),
        [normal(2, 2), normal(2, 2)],
        True,
    ),
    ("split", lambda x: np.split(x, 2, axis=1)[1] ** 2, [normal(3, 4)], True),
    ("flip", lambda x: np.flip(x, axis=0) * np.arange(6.0).reshape(3, 2), [normal(3, 2)], True),
    ("fliplr_flipud", lambda x: np.fliplr(x) * np.flipud(x), [normal(3, 2)], True),
    ("roll", lambda x: np.roll(x, 2, axis=1) * np.arange(4.0), [normal(3, 4)], True),
    ("triu_tril", lambda x: np.triu(x, 1) ** 2 + np.tril(x, -1) * 3.0, [normal(3, 3)], True),
    ("diag_of_vector", lambda x: np.diag(x, 1) ** 2, [normal(3)], True),
    ("diag_of_matrix", lambda x: np.diag(x) ** 2, [normal(3, 3)], True),
    ("diagonal_offset", lambda x: np.diagonal(x, 1, 0, 2) ** 2, [normal(3, 2, 4)], True),
    ("atleast_2d", lambda x: np.atleast_2d(x) ** 2, [normal(3)], True),
    ("broadcast_to", lambda x: np.broadcast_to(x, (2, 3, 3)) * SPREAD, [normal(3, 1)], True),
    ("pad_constant", lambda x: np.pad(x, ((1, 0), (0, 2))) ** 2, [normal(2, 3)], True),
    ("pad_reflect", lambda x: np.pad(x, 2, mode="reflect") * np.arange(7.0), [normal(3)], True),
    ("sort", lambda x: np.sort(x, axis=1) * np.arange(4.0), [away(3, 4)], True),
    ("take", lambda x: np.take(x, [0, 2, 2], axis=1) ** 2, [normal(2, 3)], True),
    (
        "take_along_axis",
        lambda x: np.take_along_axis(x, np.argsort(x, axis=0), axis=0) * np.arange(3.0)[:, None],
        [away(3, 2)],
        True,
    ),
    ("where_of_values", lambda x: np.where(x > 0, x**2, np.sin(x)), [away(3, 2)], True),
    ("select", lambda x: np.select([x < -0.5, x > 0.5], [x**2, x**3], np.cos(x)), [away(5)], True),
    ("outer_inner", lambda x, y: np.outer(x, y) * np.inner(x, x), [normal(3), normal(2)], True),
    ("cross", lambda x, y: np.cross(x, y), [normal(2, 3), normal(3)], True),
    ("vdot", lambda x, y: np.vdot(x, y), [normal(2, 3), normal(2, 3)], True),
    ("dot_three_d", lambda x, y: np.dot(x, y), [normal(2, 3, 4), normal(4, 2)], True),
    ("matmul_vector", lambda x, y: np.matmul(x, y), [normal(2, 3, 4), normal(4)], True),
    (
        "einsum_trace",
        lambda x: np.einsum("ii->", x) * np.einsum("ij,ij->i", x, x),
        [normal(3, 3)],
        True,
    ),
    (
        "meshgrid",
        lambda x, y: np.sum(np.meshgrid(x, y)[0] * np.meshgrid(x, y)[1] ** 2, axis=0),
        [normal(3), normal(2)],
        True,
    ),
    ("linspace_endpoints", lambda a, b: np.linspace(a, b, 5) ** 2, [0.3, 1.7], True),
    ("array_method_astype", lambda x: x.astype(np.float64) * x.sum(axis=0), [normal(2, 3)], True),
    ("fill_diagonal_copy", lambda x: np.sum(np.diag(np.diag(x)) * x), [normal(3, 3)], True),
]
SCALARS = {name: weighted(f, args) for name, f, args, _ in CASES}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, f, args, second", CASES, ids=[c[0] for c in CASES])
def test_reductions_and_shape_functions(name, f, args, second, mode):
    check_function(SCALARS[name], args, mode, second_order=second, key=(__file__, name))
