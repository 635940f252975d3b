"""Buffers swapped between steps, helpers that update their arguments, state kept on objects.

Each gradient is checked against central differences at random points, on the first
(generic) and second (specialised) call, in every mode that can follow it, and to second
order where the feature allows. Refusals name this file and line and say what to do.
"""

import inspect
import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

HERE = "test_methods_and_updates.py"


def check_gradient(function, args, wrt=0, modes=("s2s", "auto"), hessian=True):
    """The gradient in each mode, both calls, against central differences; and a
    Hessian-vector product against differences of the s2s gradient."""
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    expected = tuple(numeric_grad(function, args, p) for p in positions)
    expected = expected if isinstance(wrt, tuple) else expected[0]
    for mode in modes:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # auto must not fall back to the tape
            transformed = sg.grad(function, wrt=wrt, mode=mode)
            for _ in ("first", "second"):
                assert_close(transformed(*args), expected, rtol=1e-5, atol=1e-7)
    if hessian and not isinstance(wrt, tuple):
        gradient = sg.grad(function, wrt=wrt, mode="s2s")
        along = np.random.default_rng(1).normal(size=np.shape(args[wrt]))
        vectors = tuple(along if i == wrt else np.zeros_like(a) for i, a in enumerate(args))
        product = sg.hvp(function, tuple(args), vectors, mode="s2s")
        product = product[wrt] if isinstance(product, tuple) else product

        def directional(*point):
            return np.sum(gradient(*point) * along)

        assert_close(product, numeric_grad(directional, args, wrt), rtol=1e-4, atol=1e-6)


def line_of(function, text: str) -> str:
    """``file:line`` of the first line of ``function`` that contains ``text``."""
    lines, first = inspect.getsourcelines(function)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"{HERE}:{first + offset}"


# -- buffers swapped between time steps -----------------------------------------------------


def heat(u0, kappa):
    u = u0.copy()
    new = np.empty_like(u)
    for _ in range(4):
        new[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
        new[0] = u[0]
        new[-1] = u[-1]
        u, new = new, u
    return np.sum(u**2)


def three_buffers(x):
    a = x * 1.0
    b = np.zeros_like(x)
    c = np.zeros_like(x)
    for _ in range(3):
        b[:] = np.sin(a)
        c[1:] = b[:-1] * a[1:]
        c[0] = b[0]
        a, b, c = c, a, b
    return np.sum(a * x)


def test_swapped_buffers_are_differentiated():
    rng = np.random.default_rng(0)
    # not to second order: the gradient's own code reads views the swap shares (refused)
    check_gradient(heat, (rng.normal(size=6), 0.2), wrt=0, hessian=False)
    check_gradient(heat, (rng.normal(size=6), 0.2), wrt=1, hessian=False)
    check_gradient(three_buffers, (rng.normal(size=5),), hessian=False)


def view_read_after_swap(u0, k):
    u = u0.copy()
    new = np.zeros_like(u)
    for _ in range(3):
        old = u[1:]
        u, new = new, u
        u[1:] = old * k
        u[0] = old[0]
    return np.sum(u**2) + np.sum(old)


def buffer_shared_from_the_start(u0, k):
    u = u0.copy()
    new = u
    for _ in range(3):
        new[1:] = u[1:] * k + u[:-1]
        u, new = new, u
    return np.sum(u**2)


@pytest.mark.parametrize(
    "function, text",
    [(view_read_after_swap, "u[1:] = old * k"), (buffer_shared_from_the_start, "new[1:] =")],
)
def test_swapped_buffers_that_share_memory_are_refused(function, text):
    for mode in ("s2s", "auto"):
        with pytest.raises(sg.UnsupportedError, match="share memory") as caught:
            sg.grad(function, mode=mode)(np.arange(1.0, 5.0), 0.3)
        assert line_of(function, text) in str(caught.value)
        assert "copy" in str(caught.value)
