"""The fast paths of runtime helpers that generated code calls on every call (tie_share of a
max-pool, index_cotangent of integer-label indexing) give what the general path gives:
the same values, the same dtype, and ``g`` itself where no tie divides it."""

import numpy as np
import pytest
from oracle import assert_close, assert_gradient_in_every_mode

from s2sgrad.runtime import index_cotangent, tie_share


def _shared_by_formula(g, hits, axis, dtype):
    return g / np.sum(hits, axis=axis, keepdims=True, dtype=dtype)


def _hits(values, axis):
    return values == np.max(values, axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [1, -1, (0, 2), [0, 2], None, (-3, 1)])
@pytest.mark.parametrize("g_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("dtype", [np.dtype(np.float64), np.dtype(np.float32), np.float64, "d"])
@pytest.mark.parametrize("ties", [False, True])
def test_tie_share_is_the_formula(axis, g_dtype, dtype, ties):
    numpy_axis = tuple(axis) if isinstance(axis, list) else axis  # np.sum takes no list
    if ties and numpy_axis is not axis:
        pytest.skip("with ties tie_share divides by np.sum(hits, axis), which takes no list")
    rng = np.random.default_rng(0)
    values = rng.normal(size=(3, 4, 5))
    if ties:
        values = np.round(values)  # many equal maxima
    hits = _hits(values, numpy_axis)
    g = rng.normal(size=np.max(values, axis=numpy_axis, keepdims=True).shape).astype(g_dtype)
    got = tie_share(g, hits, axis, dtype)
    want = _shared_by_formula(g, hits, numpy_axis, dtype)
    assert got.dtype == want.dtype
    assert_close(got, want)
    if not ties and np.dtype(g_dtype) == np.dtype(dtype):
        assert got is g  # nothing to divide, nothing to cast


def test_tie_share_twice_with_the_same_shapes_gives_the_same_answer():
    hits = np.eye(3, 4, dtype=bool)
    g = np.ones((3, 1))
    for _ in range(3):  # the second and third calls find the kept shape remembered
        assert tie_share(g, hits, 1, np.dtype(np.float64)) is g
    ties = np.ones((3, 4), dtype=bool)
    assert_close(tie_share(g, ties, 1, np.dtype(np.float64)), np.full((3, 1), 0.25))


@pytest.mark.parametrize("axis", [1, (0, -1), [2], None])
def test_tie_share_with_shapes_seen_before_is_the_formula(axis):
    numpy_axis = tuple(axis) if isinstance(axis, list) else axis
    rng = np.random.default_rng(3)
    for shape in [(2, 3, 4), (3, 3, 4), (2, 3, 4), (3, 3, 4)]:  # kept shapes remembered
        values = rng.normal(size=shape)
        hits = _hits(values, numpy_axis)
        g = rng.normal(size=np.max(values, axis=numpy_axis, keepdims=True).shape)
        assert tie_share(g, hits, axis, np.dtype(np.float64)) is g
        assert_close(
            tie_share(g, hits, axis, g.dtype), _shared_by_formula(g, hits, numpy_axis, g.dtype)
        )


@pytest.mark.parametrize(
    "g",
    [
        np.ones(3),
        np.ones(3, dtype=np.float32),
        np.ones(3, dtype=np.complex64),
        np.ones(3, dtype=np.int64),
        np.broadcast_to(0.5, (3,)),
        np.float32(2.0),
        2.0,
        3,
    ],
)
def test_index_cotangent_dtype_is_the_inexact_result_type(g):
    dtype = np.result_type(g)
    want = dtype if np.issubdtype(dtype, np.inexact) else np.dtype(np.float64)
    assert index_cotangent(g, np.zeros((4, 2)), (np.array([0, 1, 1]), 1)).dtype == want


@pytest.mark.parametrize(
    "index",
    [
        (np.arange(4), np.array([0, 2, 2, 1])),
        (np.array([0, 0, 3]), [1, 1, 1]),  # the same element twice: both contributions
        ([0, 1], slice(None, 2)),
        (np.array([-1, 0, -1]),),
        (slice(1, 3), 2),
        [1, 1],
        ((0, 1), [2, 0]),
    ],
)
def test_index_cotangent_adds_in_every_contribution(index):
    if isinstance(index, tuple):  # NumPy's own reading: a list or tuple part is an array
        normal = tuple(np.asarray(p) if isinstance(p, (list, tuple)) else p for p in index)
    else:
        normal = np.asarray(index)
    x = np.zeros((4, 3))
    picked = x[normal]
    g = np.arange(1.0, picked.size + 1).reshape(picked.shape)
    want = np.zeros((4, 3))
    np.add.at(want, normal, g)
    assert_close(index_cotangent(g, x, index), want)


@pytest.mark.parametrize(
    "index",
    [
        (slice(None), np.array([1, 2])),
        np.array([0, 0], dtype=np.uint8),
        (np.array([True, False, True, True]),),
    ],
)
def test_index_cotangent_of_any_array_index_is_add_at(index):
    x = np.zeros((4, 3))
    g = np.ones(x[index].shape)
    want = np.zeros((4, 3))
    np.add.at(want, index, g)
    assert_close(index_cotangent(g, x, index), want)


def _max_pool_loss(x):
    pooled = np.max(np.reshape(x, (2, 2, 3, 2)), axis=(1, 3))
    return np.sum(pooled * np.arange(6.0).reshape(2, 3))


def _label_loss(logits, labels):
    logp = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(logits.shape[0]), labels])


def test_max_pool_gradient_in_every_mode():
    x = np.random.default_rng(1).normal(size=(4, 6))
    assert_gradient_in_every_mode(_max_pool_loss, (x,))


def test_integer_label_gradient_in_every_mode():
    rng = np.random.default_rng(2)
    labels = np.array([0, 2, 2, 1, 0])  # a label twice: the same column picked twice
    assert_gradient_in_every_mode(_label_loss, (rng.normal(size=(5, 3)), labels))
