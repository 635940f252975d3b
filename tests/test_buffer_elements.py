"""Numbers read out of a preallocated buffer that the loop then writes into: ``x =
traj[t, 0]`` and ``x, v = traj[t]`` of ``traj = np.zeros((steps, 2))`` are numbers, which
share no memory with ``traj``; the alias analysis took them for views and refused the
simulation in every mode. Where the indices might not all be integers, or the buffer's
dimensions are not written out, the refusal stays."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg


def oscillator_by_elements(x0, k):
    traj = np.zeros((6, 2))
    traj[0] = x0
    for t in range(5):
        x = traj[t, 0]
        v = traj[t, 1]
        traj[t + 1, 0] = x + 0.1 * v
        traj[t + 1, 1] = v - 0.1 * k * x
    return np.sum(traj[:, 0] ** 2)


def oscillator_by_rows(x0, k):
    traj = np.zeros((6, 2))
    traj[0] = x0
    for t in range(5):
        x, v = traj[t]
        traj[t + 1, 0] = x + 0.1 * v
        traj[t + 1, 1] = v - 0.1 * k * x
    return np.sum(traj[:, 0] ** 2) + traj[-1, 1]


@pytest.mark.parametrize("f", [oscillator_by_elements, oscillator_by_rows])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("wrt", [0, 1])
def test_numbers_read_from_a_buffer_written_later(f, mode, wrt):
    args = (np.array([1.0, 0.3]), 0.7)
    expected = numeric_grad(f, args, wrt)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # auto: no fallback
        got = call_twice(sg.grad(f, wrt=wrt, mode=mode), *args)
    assert_close(got, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [oscillator_by_elements, oscillator_by_rows])
def test_second_order_through_the_buffer(f):
    x0 = np.array([1.0, 0.3])
    direction = np.array([0.4, -1.1])
    gradient = sg.grad(f, mode="tape")
    expected = numeric_grad(lambda x: np.sum(gradient(x, 0.7) * direction), (x0,), 0)
    (product,) = sg.hvp(lambda x: f(x, 0.7), (x0,), (direction,), mode="auto")
    assert_close(product, expected, rtol=1e-5, atol=1e-7)


def rows_of_a_3d_buffer(x0):
    traj = np.zeros((3, 2, 2))
    traj[0] = x0
    first, second = traj[0]  # two rows: views of traj
    traj[0, 0, 0] = 5.0
    return np.sum(first * x0[0])


def a_row_kept(x0):
    traj = np.zeros((3, 2))
    traj[0] = x0
    row = traj[0]  # a view
    traj[0, 0] = 5.0
    return np.sum(row * x0)


def a_slice_under_a_loop_name(x0):
    traj = np.zeros((3, 2))
    traj[0] = x0
    for t in range(2):
        traj[t + 1] = traj[t] * 2.0
    columns = [traj[t, 0] for t in (slice(0, 2),)]  # t a slice here: a view
    traj[0, 0] = 5.0
    return np.sum(columns[0] * x0[0])


@pytest.mark.parametrize("f", [rows_of_a_3d_buffer, a_slice_under_a_loop_name])
def test_views_of_the_buffer_stay_refused(f):
    x0 = np.ones((2, 2)) if f is rows_of_a_3d_buffer else np.array([1.0, 0.3])
    with pytest.raises(sg.UnsupportedError, match="may share memory"):
        sg.grad(f, mode="s2s")(x0)
    try:  # the tape follows the write through the held views, or refuses it
        gradient = sg.grad(f, mode="tape")(x0.copy())
    except sg.S2SGradError:
        return
    np.testing.assert_allclose(gradient, numeric_grad(f, [x0.copy()], 0), rtol=1e-6, atol=1e-8)


def test_a_row_view_read_after_a_write_is_differentiated_as_numpy_computes_it():
    x0 = np.array([1.0, 0.3])
    for mode in ("s2s", "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            got = call_twice(sg.grad(a_row_kept, mode=mode), x0)
        assert_close(got, numeric_grad(a_row_kept, (x0,), 0))


def copy_where_positive(x):
    y = x.copy()
    np.copyto(y, x**2, where=x > 0)
    return np.sum(y**2)


def copy_where_into_zeros(x):
    y = np.zeros((3, 4))
    np.copyto(y, np.sin(x[0]), where=np.arange(4) % 2 == 0)  # broadcast along the rows
    return np.sum(y * x)


@pytest.mark.parametrize("f", [copy_where_positive, copy_where_into_zeros])
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_copyto_with_a_mask_is_an_item_write_of_np_where(f, mode):
    """``np.copyto(t, v, where=m)`` is ``t[...] = np.where(m, v, t)``: refused in every mode
    before (the tape cannot write into a plain array either)."""
    x = np.random.default_rng(8).normal(size=(3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        got = call_twice(sg.grad(f, mode=mode), x)
    assert_close(got, numeric_grad(f, (x,), 0), rtol=1e-6, atol=1e-8)
    direction = np.random.default_rng(9).normal(size=x.shape)
    gradient = sg.grad(f, mode="s2s")
    expected = numeric_grad(lambda z: np.sum(gradient(z) * direction), (x,), 0)
    (product,) = sg.hvp(f, (x,), (direction,), mode=mode)
    assert_close(product, expected, rtol=1e-5, atol=1e-7)
