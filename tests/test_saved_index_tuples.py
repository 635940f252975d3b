"""Index tuples saved for a helper's backward sweep stay tuples.

A helper called from a differentiated function runs its forward sweep, saves what its
backward sweep needs (a stack of the values each loop iteration overwrote), and its
backward sweep works on a private copy of that stack. An index kept in a variable
(``idx = (i, j)``, ``np.ix_(rows, rows)``, a pair of integer arrays or lists) must come
back from the copy as a tuple: as a list NumPy reads it as one index along the first axis,
and the gradient of ``K[idx] += v`` went to the wrong elements (or the sweep raised).
"""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np
import pytest
from oracle import assert_close, assert_hvp_matches_differences, numeric_grad

import s2sgrad as sg
from s2sgrad.runtime import owned

MODES = ("s2s", "auto", "tape")
WEIGHTS = np.arange(16.0).reshape(4, 4) / 10


def by_integers(w):
    K = np.zeros((4, 4))
    for k in range(len(w)):
        idx = (k, 3 - k)
        K[idx] += w[k] * w[0]
        K[k] += w[:4] if len(w) >= 4 else w[0]
    return K


def by_integer_arrays(w):
    K = np.ones((4, 4))
    for k in range(len(w)):
        idx = (np.array([k, 3, (k + 1) % 4]), np.array([0, k, 2]))
        K[idx] += w[k] * np.array([1.0, 2.0, -1.0])
    return K


def by_lists(w):
    K = np.ones((4, 4))
    for k in range(len(w)):
        idx = ([k, 3, (k + 1) % 4], [0, k, 2])
        K[idx] = K[idx] * w[k]
    return K


def by_ix(w):
    K = np.zeros((4, 4))
    for k in range(len(w)):
        element = np.array([k, k + 1]) % 4
        K[np.ix_(element, element)] += w[k] * np.array([[1.0, -1.0], [-1.0, 1.0]])
    return K


ASSEMBLERS = [by_integers, by_integer_arrays, by_lists, by_ix]


def _loss_of(assemble):
    def loss(w):
        return np.sum(np.sin(assemble(w)) * WEIGHTS) + np.sum(w**2)

    return loss


@pytest.mark.parametrize("assemble", ASSEMBLERS)
@pytest.mark.parametrize("size", [3, 4])
def test_gradient_through_an_assembling_helper(assemble, size):
    loss = _loss_of(assemble)
    w = np.random.default_rng(size).normal(size=size)
    expected = numeric_grad(loss, [w], 0)
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = sg.grad(loss, mode=mode)
            for _ in range(2):
                assert_close(g(w), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("assemble", [by_integers, by_ix])
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_hessian_vector_product(assemble, mode):
    w = np.random.default_rng(7).normal(size=3)
    assert_hvp_matches_differences(_loss_of(assemble), [w], mode)


def test_owned_keeps_index_tuples_and_lists_cotangent_tuples():
    rows, columns = np.ix_([0, 2], [1, 3])
    kept = owned((rows, columns))
    assert type(kept) is tuple and kept[0] is not rows
    np.testing.assert_array_equal(kept[0], rows)
    assert type(owned((1, 2))) is tuple
    assert type(owned(([0, 1], [1, 2]))) is tuple
    assert type(owned((slice(1, None), 0))) is tuple
    assert type(owned((np.ones(2), None))) is not tuple  # a cotangent, written entry by entry
    assert type(owned([(0, 1), (np.array([1, 2]), 0)])[1]) is tuple
    Cell = namedtuple("Cell", ["row", "column"])
    assert owned(Cell(1, 2)) == Cell(1, 2) and type(owned(Cell(1, 2))) is Cell
