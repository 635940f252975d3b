"""A write into a read-only array (an argument the caller made read-only, the result of
``np.broadcast_to``) raises NumPy's ``ValueError`` when the function runs. On the tape the
write made a new version of the value instead, and a gradient came back for a function that
cannot run; the tape now raises NumPy's error, as the function does."""

import numpy as np
import pytest

import s2sgrad as sg


def item_written(x):
    x[0] = x[1] * 2
    return np.sum(x**2)


def multiplied_in_place(x):
    y = x
    y *= 2
    return np.sum(y)


def other_argument_written(x, buffer):
    buffer[0] = np.sum(x)
    return np.sum(buffer * x)


def broadcast_written(x):
    y = np.broadcast_to(x[:1], (3,))
    y[1] = x[2]
    return np.sum(y**2)


def read_only(shape, seed):
    x = np.random.default_rng(seed).normal(size=shape)
    x.flags.writeable = False
    return x


@pytest.mark.parametrize("shape", [(3,), (4,), (5,)])
@pytest.mark.parametrize(
    "f, message",
    [(item_written, "read-only"), (multiplied_in_place, "read-only")],
    ids=["item", "in place"],
)
def test_a_write_into_a_read_only_argument_raises_as_numpy_does(f, message, shape):
    x = read_only(shape, sum(shape))
    with pytest.raises(ValueError, match=message):
        f(x)
    with pytest.raises(ValueError, match=message):
        sg.grad(f, mode="tape")(x)


def test_a_read_only_argument_not_differentiated():
    x = np.random.default_rng(1).normal(size=3)
    buffer = read_only((3,), 2)
    with pytest.raises(ValueError, match="read-only"):
        sg.grad(other_argument_written, mode="tape")(x, buffer)


def test_a_broadcast_view_written():
    x = np.random.default_rng(3).normal(size=3)
    with pytest.raises(ValueError, match="read-only"):
        broadcast_written(x)
    with pytest.raises(ValueError, match="read-only"):
        sg.grad(broadcast_written, mode="tape")(x)


@pytest.mark.parametrize("f", [item_written, multiplied_in_place], ids=["item", "in place"])
def test_a_writable_argument_is_still_differentiated(f):
    x = np.random.default_rng(4).normal(size=3)
    got = sg.grad(f, mode="tape")(x.copy())
    want = sg.grad(f, mode="s2s")(x.copy())
    np.testing.assert_allclose(got, want)
