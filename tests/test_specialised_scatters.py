"""Gradients of slice reads, whose cotangents specialisation writes into one buffer.

Indices that select an element twice stay ``index_cotangent`` (every read adds) and
``assigned_cotangent`` (only the last write counts) in specialised code.

When the first slice written is one contiguous run of the first axis, the buffer starts
as ``np.empty_like`` and only the rest of that axis is zeroed; every other element must
still come out right, whatever the memory held before.
"""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg


def head_and_tail(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def middle_then_all(x):
    return np.sum(np.sin(x[2:-3]) * 3.0) + np.sum(x[1:] * x[:-1])


def head_only(x):
    return np.sum(x[:4] ** 2) + np.sum(np.cos(x[3:]))


def rows(x):
    return np.sum(x[1:, :] * x[:-1, :]) + np.sum(x[2:] ** 3)


def stepped(x):
    return np.sum(x[::2] ** 2) + np.sum(x[1:] * 2.0)


def stepped_first(x):
    return np.sum(x[1:] * 2.0) + np.sum(x[::2] ** 2)


def full_cover(x):
    return np.sum(x[:] ** 2) + np.sum(x[1:] * 0.5)


def repeated_reads(x):
    return np.sum(x[1:] ** 2) + np.sum(np.sin(x[[0, 0, 3]]))


def repeated_writes(x):
    # the buffer of dx mixes slices with an index that repeats elements, read and written
    t = x[:-1] * 2.0
    t[[0, 0, 2]] = x[1:4] ** 2
    t[[1, -1]] += x[[0, 0]]
    return np.sum(np.sin(t)) + np.sum(x[2:] * x[:-2])


CASES = [
    (head_and_tail, (12,)),
    (middle_then_all, (11,)),
    (head_only, (9,)),
    (rows, (6, 4)),
    (stepped, (10,)),
    (stepped_first, (10,)),
    (full_cover, (7,)),
    (repeated_reads, (8,)),
    (repeated_writes, (9,)),
]


def dirty_memory(size: int) -> None:
    """Leave non-zero values in freed blocks of this size, for an empty buffer to reuse."""
    for _ in range(4):
        block = np.full(size, 7.5)
        del block


@pytest.mark.parametrize("function, shape", CASES, ids=[c[0].__name__ for c in CASES])
def test_slice_cotangents_match_finite_differences(function, shape):
    rng = np.random.default_rng(3)
    gradient = sg.grad(function, mode="s2s")
    for _ in range(3):
        x = rng.uniform(-1.5, 1.5, size=shape)
        gradient(x)  # the first call with these shapes specialises
        dirty_memory(x.size)
        assert_close(gradient(x), numeric_grad(function, (x,), 0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "function, shape, fresh",
    [
        (head_and_tail, (12,), "np.empty_like(x)"),
        (rows, (6, 4), "np.empty_like(x)"),
        (stepped_first, (10,), "np.zeros_like(x)"),  # a strided slice leaves holes
    ],
)
def test_buffer_is_empty_only_when_the_rest_is_zeroed(function, shape, fresh):
    gradient = sg.grad(function, mode="s2s")
    gradient(np.ones(shape))
    assert fresh in sg.source(gradient)
