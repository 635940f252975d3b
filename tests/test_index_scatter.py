"""Index cotangents of integer-array indices in specialised code (``specialize/index_scatter``):
zeros of the known shape and dtype, then a plain assignment where the index provably picks
each element once (an ``np.arange(n)`` among its arrays that broadcasting does not repeat),
else ``np.add.at``. Every case is checked against finite differences."""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
RNG = np.random.default_rng(15)


def labels_loss(W, X, y):
    logits = X @ W
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(X.shape[0]), y])


def column_labels(x, y):  # y of shape (n, 1): broadcasting repeats the rows
    return np.sum(np.sin(x[np.arange(x.shape[0]), y]))


def repeated_rows(x, rows):
    return np.sum(x[rows] ** 2)


def with_slices(x, y):
    return np.sum(np.cos(x[:, np.arange(x.shape[1]), y]))


def range_changed(x, y):
    rows = np.arange(x.shape[0])
    rows[0] = 1  # rows 0 and 1 both pick row 1 now
    return np.sum(x[rows, y] ** 3)


def range_reused(x, y):
    rows = np.arange(x.shape[0])
    first = x[rows, y]
    return np.sum(first**2) * np.sum(x[rows, 0])


def masked(x):
    return np.sum(x[x > 0.0] ** 2)


def _source(g):
    return "\n".join(line for line in sg.source(g).splitlines() if "#" not in line)


def _check(f, args, wrt=0, mode="s2s"):
    g = sg.grad(f, wrt=wrt, mode=mode)
    for _ in range(2):  # the first call specialises, the second runs the specialised code
        assert_close(g(*args), numeric_grad(f, args, wrt))
    return g


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("labels", [[0, 2, 1, 2, 0], [-1, 0, -3, 2, -1]])
def test_labels_are_assigned(mode, labels):
    W, X = RNG.normal(size=(4, 3)), RNG.normal(size=(5, 4))
    g = _check(labels_loss, (W, X, np.array(labels)), mode=mode)
    if mode == "s2s":
        code = _source(g)
        assert "dlogp = np.zeros((5, 3))" in code, code
        assert "dlogp[np.arange(X.shape[0]), y] = -0.2" in code, code
        assert "index_cotangent" not in code and "add.at" not in code, code


@pytest.mark.parametrize("mode", ("s2s", "auto"))
def test_float32_keeps_its_dtype(mode):
    W = RNG.normal(size=(4, 3)).astype(np.float32)
    X = RNG.normal(size=(5, 4)).astype(np.float32)
    y = np.array([1, 1, 0, 2, 2])
    g = sg.grad(labels_loss, mode=mode)
    expected = sg.grad(labels_loss, mode="tape")(W, X, y)
    for _ in range(2):
        dW = g(W, X, y)
        assert dW.dtype == expected.dtype == np.float32
        assert_close(dW, expected, rtol=1e-5, atol=1e-6)
    if mode == "s2s" and np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        # NumPy 1.26's value-based casting makes the seed's float32 / -5 a float64, so
        # the generic code's cotangent is float64 there, and the zeros are as well
        assert "np.zeros((5, 3), np.float32)" in _source(g), _source(g)


@pytest.mark.parametrize("mode", MODES)
def test_labels_of_a_column_repeat_and_add(mode):
    x = RNG.normal(size=(4, 3))
    y = np.array([[0], [2], [0], [1]])  # x[arange(4), y] is 4 x 4: each row picked 4 times
    g = _check(column_labels, (x, y), mode=mode)
    if mode == "s2s":
        assert "np.add.at(dx, (" in _source(g), _source(g)


@pytest.mark.parametrize("mode", MODES)
def test_repeated_rows_add(mode):
    g = _check(repeated_rows, (RNG.normal(size=(4, 2)), np.array([0, 3, 0, 0])), mode=mode)
    if mode == "s2s":
        assert "np.add.at(dx, rows" in _source(g), _source(g)


@pytest.mark.parametrize("mode", MODES)
def test_slices_mixed_in(mode):
    x = RNG.normal(size=(2, 3, 4))
    g = _check(with_slices, (x, np.array([3, -1, 1])), mode=mode)
    if mode == "s2s":
        code = _source(g)
        assert "dx = np.zeros((2, 3, 4))" in code and "dx[:, t" in code, code


@pytest.mark.parametrize("mode", MODES)
def test_a_range_changed_in_place_adds(mode):
    x = RNG.normal(size=(3, 4))
    g = _check(range_changed, (x, np.array([2, 2, 0])), mode=mode)
    if mode == "s2s":
        assert "index_cotangent" in _source(g) or "add.at" in _source(g), _source(g)


@pytest.mark.parametrize("mode", MODES)
def test_a_range_read_twice(mode):
    _check(range_reused, (RNG.normal(size=(3, 4)), np.array([1, 3, 3])), mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_a_mask_stays_with_the_helper(mode):
    x = RNG.normal(size=(6,))
    g = _check(masked, (x,), mode=mode)
    if mode == "s2s":
        assert "add.at" not in _source(g), _source(g)


def complex_picks(x, y):
    return np.sum(np.abs(x[np.arange(x.shape[0]), y]) ** 2)


@pytest.mark.parametrize("mode", ("s2s", "auto"))
@pytest.mark.parametrize("dtype", (np.complex128, np.complex64))
def test_complex_keeps_its_dtype(mode, dtype):
    x = (RNG.normal(size=(4, 3)) + 1j * RNG.normal(size=(4, 3))).astype(dtype)
    y = np.array([2, 0, -1, 2])
    g = sg.grad(complex_picks, mode=mode)
    expected = sg.grad(complex_picks, mode="tape")(x, y)
    for _ in range(2):
        dx = g(x, y)
        assert dx.dtype == expected.dtype == dtype
        assert_close(dx, expected)
    if mode == "s2s":
        assert f"np.zeros((4, 3), np.{np.dtype(dtype).name})" in _source(g), _source(g)
