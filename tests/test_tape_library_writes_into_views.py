"""NumPy functions that write into their first argument in place (``np.copyto``,
``np.putmask``, ``np.fill_diagonal``, ``np.add.at``), given a view of another array
(``np.copyto(W[0], v)``), on the tape.

NumPy writes through to the viewed array; the tape wrote a new version of the view alone,
so the array it views kept its old values: wrong gradients in mode "tape", and in mode
"auto", which falls back to the tape when source transformation refuses these calls. The
tape now refuses such a write, naming the line, as it refuses ``out=`` into a view. A
write into an array itself is still followed, and ``np.clip(p, lo, hi, out=p)`` over a
list of arrays (Karpathy's gradient clipping), which source transformation refuses as an
aliased update, falls back to the tape in mode "auto".
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg


def copy_into_a_row(x):
    W = np.outer(x, x)
    np.copyto(W[0], np.sin(W[1]))
    return np.sum(W**2)


def copy_into_a_named_row(x):
    W = np.outer(x, x)
    row = W[0]
    np.copyto(row, np.sin(row))
    return np.sum(W**2)


def mask_a_row(x):
    W = np.outer(x, x)
    np.putmask(W[0], W[0] > 0.2, 0.2)
    return np.sum(W**2)


def fill_a_block_diagonal(x):
    W = np.outer(x, x)
    np.fill_diagonal(W[:2, :2], 0.5)
    return np.sum(W**2)


def add_at_into_a_row(x):
    W = np.outer(x, x)
    np.add.at(W[0], np.array([0, 0, 2]), x)
    return np.sum(W**2)


def add_at_into_named_rows(x):
    W = np.outer(x, x)
    V = W[1:]
    np.add.at(V, np.array([0, 0]), x)
    return np.sum(W**2)


VIEWS = [
    copy_into_a_row,
    copy_into_a_named_row,
    mask_a_row,
    fill_a_block_diagonal,
    add_at_into_a_row,
    add_at_into_named_rows,
]


@pytest.mark.parametrize("f", VIEWS)
@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_library_write_into_a_view_is_refused_not_wrong(f, mode):
    x = np.array([0.3, 0.9, -0.7])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = sg.grad(f, mode=mode)(x)
        except sg.S2SGradError as refused:
            assert "test_tape_library_writes_into_views.py:" in str(refused)
            return
    assert_close(got, numeric_grad(f, [x], 0), rtol=1e-6)  # right, where it is not refused


@pytest.mark.parametrize("f", [copy_into_a_row, mask_a_row, fill_a_block_diagonal])
def test_the_tape_writes_through_the_view(f):
    # refused here before the tape followed writes through views (tape/view_writes.py)
    x = np.array([0.3, 0.9, -0.7])
    assert_close(sg.grad(f, mode="tape")(x), numeric_grad(f, [x], 0))


def writes_into_whole_arrays(x):
    W = np.outer(x, x)
    np.copyto(W, np.sin(W))
    np.putmask(W, W > 0.3, 0.3)
    np.fill_diagonal(W, 0.1)
    np.add.at(W, (np.array([0, 0]), np.array([1, 1])), x[0])
    return np.sum(W**2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_writes_into_whole_arrays_are_followed(seed):
    x = np.random.default_rng(seed).normal(size=4)
    for mode in ("tape", "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = sg.grad(writes_into_whole_arrays, mode=mode)(x)
        assert_close(got, numeric_grad(writes_into_whole_arrays, [x], 0), rtol=1e-6)


def clip_gradients(Wxh, Why, x):
    h = np.tanh(Wxh @ x)
    dWhy = np.outer(np.ones(Why.shape[0]), h)
    dWxh = np.outer((1 - h * h) * (Why.T @ np.ones(Why.shape[0])), x)
    for dparam in [dWxh, dWhy]:
        np.clip(dparam, -0.5, 0.5, out=dparam)
    return np.sum(dWxh**2) + np.sum(dWhy**2) + np.sum(h)


@pytest.mark.parametrize("seed", [0, 1])
def test_clipping_a_list_of_arrays_in_place_falls_back_to_the_tape(seed):
    rng = np.random.default_rng(seed)
    args = [rng.normal(size=(3, 4)), rng.normal(size=(2, 3)), rng.normal(size=4)]
    with pytest.raises(sg.UnsupportedError):
        sg.grad(clip_gradients, wrt=(0, 1), mode="s2s")(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(clip_gradients, wrt=(0, 1), mode="auto")(*args)
    for g, i in zip(got, (0, 1)):
        assert_close(g, numeric_grad(clip_gradients, args, i), rtol=1e-5, atol=1e-8)
