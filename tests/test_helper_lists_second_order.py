"""A helper that returns a list of arrays (``parts = []`` filled by ``append``, or a list
comprehension), read entry by entry (``r = unpack(flat); a = r[0]``): the cotangents of the
entries are added as containers (``add_cotangents``), so that forward mode over the
gradient (``hvp``, ``hessian``) adds them entry by entry too; it took them for arrays and
crashed (found by ``program_mutations.py``'s unpacking by index, seed 1132).
"""

import numpy as np
import pytest
from oracle import numeric_jvp

import s2sgrad as sg

RNG = np.random.default_rng(8)
SHAPES = [(2, 3), (3, 2)]


def unpack_appended(flat):
    parts = []
    start = 0
    for shape in SHAPES:
        stop = start + shape[0] * shape[1]
        parts.append(flat[start:stop].reshape(shape))
        start = stop
    return parts


def unpack_comprehension(flat):
    return [flat[:6].reshape(2, 3), flat[6:].reshape(3, 2)]


def read_by_index(flat):
    r = unpack_appended(flat)
    a = r[0]
    b = r[1]
    return np.sum(np.tanh(a @ b) ** 2)


def read_by_index_from_a_literal(flat):
    r = unpack_comprehension(flat)
    return np.sum(np.sin(r[0] @ r[1])) + np.sum(r[1] ** 3)


@pytest.mark.parametrize("f", [read_by_index, read_by_index_from_a_literal])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_second_order_through_a_helper_returning_a_list(f, mode):
    flat = RNG.normal(size=12) * 0.5
    along = RNG.normal(size=12)
    gradient = sg.grad(f, mode="tape")
    expected = numeric_jvp(gradient, (flat,), 0, along)
    for _ in range(2):
        (product,) = sg.hvp(f, (flat,), (along,), mode=mode)
        np.testing.assert_allclose(product, expected, rtol=1e-4, atol=1e-6)
