"""A function that writes into its argument is differentiated on a private copy of it
(``x = owned_argument(x)``). When the caller's array is read-only (``x.flags.writeable =
False``, the result of ``np.broadcast_to``), the function raises NumPy's ``ValueError`` at the
write; the copy stays read-only, so the source transformation raises it too, where it used to
return a gradient of a function that cannot run. A write that does not run still leaves a
gradient, and a writable argument is differentiated as before."""

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg


def item_written(x):
    x[0] = x[1] * 2
    return np.sum(x**2)


def view_written(x):
    tail = x[1:]
    tail[0] = np.sin(tail[-1])
    return np.sum(x**2)


def written_in_a_loop(x):
    for i in range(1, x.shape[0]):
        x[i] = x[i - 1] * x[i]
    return np.sum(x)


def written_when_asked(x, write=False):
    if write:
        x[0] = 0.0
    return np.sum(np.tanh(x) * x)


def other_argument_written(x, buffer):
    buffer[0] = np.sum(x)
    return np.sum(buffer * x)


WRITERS = [item_written, view_written, written_in_a_loop]
MODES = ["s2s", "auto"]


def read_only(shape, seed):
    x = np.random.default_rng(seed).normal(size=shape)
    x.flags.writeable = False
    return x


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(3,), (5,)])
@pytest.mark.parametrize("f", WRITERS)
def test_a_write_into_a_read_only_argument_raises_as_numpy_does(f, shape, mode):
    x = read_only(shape, sum(shape))
    with pytest.raises(ValueError, match="read-only"):
        f(x)
    with pytest.raises(ValueError, match="read-only"):
        sg.grad(f, mode=mode)(x)
    with pytest.raises(ValueError, match="read-only"):
        sg.jvp(f, (x,), (np.ones(shape),), mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_a_broadcast_argument_written_raises(mode):
    x = np.broadcast_to(np.random.default_rng(2).normal(size=1), (3,))
    with pytest.raises(ValueError, match="read-only"):
        item_written(x)
    with pytest.raises(ValueError, match="read-only"):
        sg.grad(item_written, mode=mode)(x)


@pytest.mark.parametrize("mode", MODES)
def test_a_read_only_argument_not_differentiated_and_written_raises(mode):
    x = np.random.default_rng(1).normal(size=3)
    with pytest.raises(ValueError, match="read-only"):
        sg.grad(other_argument_written, mode=mode)(x, read_only((3,), 2))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(2,), (4,)])
def test_a_read_only_argument_whose_write_does_not_run_is_differentiated(shape, mode):
    x = read_only(shape, 7 + sum(shape))
    want = numeric_grad(written_when_asked, [x.copy()], 0)
    for _ in range(2):
        np.testing.assert_allclose(sg.grad(written_when_asked, mode=mode)(x), want, rtol=1e-6)
    hessian = sg.hessian(written_when_asked, mode=mode)(x)
    want = np.diag(2 / np.cosh(x) ** 2 - 2 * x * np.tanh(x) / np.cosh(x) ** 2)
    np.testing.assert_allclose(hessian, want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("shape", [(3,), (5,)])
@pytest.mark.parametrize("f", WRITERS)
def test_a_writable_argument_is_still_differentiated_and_left_unchanged(f, shape, mode):
    x = np.random.default_rng(11 + sum(shape)).uniform(0.5, 1.5, size=shape)
    kept = x.copy()
    want = numeric_grad(f, [x.copy()], 0)
    for _ in range(2):
        np.testing.assert_allclose(sg.grad(f, mode=mode)(x), want, rtol=1e-5, atol=1e-8)
    np.testing.assert_array_equal(x, kept)
    direction = np.linspace(-1.0, 1.0, x.size)
    _, tangent = sg.jvp(f, (x.copy(),), (direction,), mode=mode)
    np.testing.assert_allclose(tangent, np.dot(want, direction), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("shape", [(3,), (4,)])
def test_second_order_of_a_writer_matches_finite_differences(shape):
    x = np.random.default_rng(5 + sum(shape)).uniform(0.5, 1.5, size=shape)
    hessian = sg.hessian(item_written, mode="auto")(x.copy())
    rows = [lambda z, i=i: sg.grad(item_written)(z.copy())[i] for i in range(x.size)]
    want = np.stack([numeric_grad(row, [x], 0) for row in rows])
    np.testing.assert_allclose(hessian, want, rtol=1e-5, atol=1e-6)


def test_the_copy_is_read_only_only_where_the_argument_is():
    from s2sgrad.runtime import owned_argument

    writable = np.ones(3)
    assert owned_argument(writable).flags.writeable
    assert not owned_argument(read_only((3,), 0)).flags.writeable
    assert owned_argument(writable) is not writable
    assert owned_argument(2.0) == 2.0
