"""``try`` statements by source transformation (``passes/try_statements.py``).

Before, every ``try`` computing a differentiated value was refused by both sweeps ("'try'
statements that compute differentiated values cannot be transformed"), and mode "auto"
took the tape. Now the path on which the body raises nothing (no handler, then ``else``
and ``finally``) is differentiated by source in reverse and forward mode and again (hvp);
a body that raises what a handler catches is refused as it runs, at the ``try``'s line,
and mode "auto" takes the tape, which runs the handler. ``with contextlib.suppress(E):``
is the ``try``/``except E: pass`` it means (it was refused as a ``with`` statement).
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = "test_try_statements_in_s2s.py"
R = np.random.default_rng(2032)


def every_clause(x, y):
    try:
        t = np.log(1.0 + x**2) * y
    except (ValueError, FloatingPointError):
        t = x
    else:
        t = t * np.sin(y)
    finally:
        t = t + x * y
    return np.sum(np.tanh(t))


def only_finally(x, y):
    try:
        t = np.exp(x * 0.5) * y
    finally:
        u = t * x
    return np.sum(u**2)


def in_a_loop(x, y):
    h = x * 1.0
    for _ in range(3):
        try:
            h = np.sin(h) * y + x
        except ZeroDivisionError:
            h = h * 0.0
    return np.sum(h**2)


def bare_except(x, y):
    try:
        m = np.outer(x, y) + np.eye(x.shape[0]) * 4.0
        t = np.linalg.solve(m, x)
    except:  # noqa: E722 (the construct tested)
        t = x
    return np.sum(t * y)


def suppressing(x, y):
    t = x * 1.0
    with contextlib.suppress(ValueError, np.linalg.LinAlgError):
        t = np.linalg.solve(np.outer(x, x) + np.eye(3) * 3.0, x) * y
    return np.sum(t**2)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("f", [every_clause, only_finally, in_a_loop, bare_except, suppressing])
def test_the_path_without_a_handler_in_every_mode(f, mode):
    x = R.normal(size=3)
    y = R.normal(size=3) if f is bare_except else R.normal(size=(2, 3))  # broadcast
    v = R.normal(size=x.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # mode "auto": no fallback
        gradient = call_twice(sg.grad(f, wrt=(0, 1), mode=mode), x, y)
        _, tangent = sg.jvp(f, (x, y), (v, np.zeros_like(y)), mode=mode)
        products = [sg.hvp(f, (x, y), (v, np.zeros_like(y)), mode=mode) for _ in range(2)]
    assert_close(gradient[0], numeric_grad(f, [x, y], 0))
    assert_close(gradient[1], numeric_grad(f, [x, y], 1))
    assert_close(tangent, numeric_jvp(f, [x, y], 0, v), rtol=1e-5)
    expected = numeric_jvp(lambda u: sg.grad(f, mode="tape")(u, y), [x], 0, v, step=1e-5)
    for product in products:
        assert_close(product[0], expected, rtol=1e-4, atol=1e-6)


def raises_when_positive(x):
    try:
        if x[0] > 0.0:
            raise ValueError("positive")
        y = np.sin(x) * x
    except ValueError:
        y = x**3
    return np.sum(y)


def suppressed_when_positive(x):
    y = x * 2.0
    with contextlib.suppress(ValueError):
        if x[0] > 0.0:
            raise ValueError("positive")
        y = np.sin(x) * x
    return np.sum(y)


def checks_positive_definite(a):
    m = np.outer(a, a) + np.diag(a)
    try:
        check = np.linalg.cholesky(m)  # noqa: F841 (never read: only whether it raises)
        y = np.sum(np.sin(m))
    except np.linalg.LinAlgError:
        y = np.sum(m**2)
    return y


@pytest.mark.parametrize(
    "f, raising, quiet",
    [
        (raises_when_positive, np.array([0.5, -0.2, 0.3]), np.array([-0.5, -0.2, 0.3])),
        (checks_positive_definite, np.array([0.5, -0.9, 0.3]), np.array([0.5, 0.9, 0.3])),
        (suppressed_when_positive, np.array([0.5, -0.2, 0.3]), np.array([-0.5, -0.2, 0.3])),
    ],
    ids=["raise", "unread-cholesky", "suppress"],
)
def test_a_handler_that_runs_is_refused_in_s2s_and_taped_in_auto(f, raising, quiet):
    s2s = sg.grad(f, mode="s2s")
    assert_close(call_twice(s2s, quiet), numeric_grad(f, [quiet], 0))  # specialised too
    with pytest.raises(sg.UnsupportedError, match="a handler catches") as refused:
        s2s(raising)  # the specialised code (body_reached keeps the unread cholesky)
    assert f"{HERE}:" in str(refused.value)
    with pytest.raises(sg.UnsupportedError, match="a handler catches"):
        sg.grad(f, mode="s2s")(raising)  # the first call, generic code
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient = call_twice(sg.grad(f, mode="auto"), raising)
        _, tangent = sg.jvp(f, (raising,), (quiet,), mode="auto")
    assert_close(gradient, numeric_grad(f, [raising], 0))
    assert_close(tangent, numeric_jvp(f, [raising], 0, quiet), rtol=1e-5)


def uncaught(x):
    try:
        y = np.sin(x) * x
        if x[0] > 0.0:
            raise KeyError("no handler catches this")
    except ValueError:
        y = x
    return np.sum(y)


def test_an_exception_no_handler_catches_goes_on():
    x = np.array([0.5, 0.1])
    with pytest.raises(KeyError, match="no handler"):
        sg.grad(uncaught, mode="s2s")(x)
    assert_close(sg.grad(uncaught, mode="s2s")(-x), numeric_grad(uncaught, [-x], 0))
