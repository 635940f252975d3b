"""A loop's ``v = xs[t]`` is computed again in the backward loop instead of being saved each
iteration (compiler/reverse/recompute.py, ``recompute_in_loops``), only where that is surely
the same value; gradients against central differences in every mode, first and second
call, second order, and as a helper's derivative (forward and backward split)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, calls_counted, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(57)


def rnn(Wx, xs):
    h = np.zeros((xs.shape[1], Wx.shape[1]))
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + 0.5 * h)
    return np.sum(h**2)


def calls_rnn(Wx, xs):
    return rnn(Wx, xs) * 2.0


def rows_rebound(Wx, xs):
    h = np.zeros((xs.shape[1], Wx.shape[1]))
    for t in range(xs.shape[0]):
        row = xs[t]
        h = np.tanh(row @ Wx + 0.5 * h)
        xs = xs * 0.9  # xs changes: row must be the saved one
    return np.sum(h**2)


def read_before_set(Wx, xs):
    h = np.zeros((xs.shape[1], Wx.shape[1]))
    row = xs[0]
    for t in range(xs.shape[0]):
        h = np.tanh(row @ Wx + 0.5 * h)  # the previous iteration's row
        row = xs[t] * 1.5
        row = np.sin(row)
    return np.sum(h**2)


def scaled_rows(Wx, xs):
    scaled = xs * 0.5  # written once, before the loop: the same in every iteration
    h = np.zeros((xs.shape[1], Wx.shape[1]))
    for t in range(xs.shape[0]):
        h = np.tanh(scaled[t] @ Wx + 0.5 * h)
    return np.sum(h**2)


def calls_scaled_rows(Wx, xs):
    return scaled_rows(Wx, xs) + np.sum(Wx)


def rebound_in_outer_loop(Wx, xs):
    h = np.zeros((xs.shape[1], Wx.shape[1]))
    for k in range(2):
        scaled = xs * (k + 1.0)  # one statement, a new value each outer iteration
        for t in range(xs.shape[0]):
            h = np.tanh(scaled[t] @ Wx + 0.5 * h)
    return np.sum(h**2)


def list_rewritten_after(Wx, xs):
    rows = [xs[0] @ Wx, xs[1] @ Wx]
    total = 0.0
    for row in rows:  # row = seq[i] where seq is rows itself
        total = total + np.sum(np.sin(row) * Wx[0])
    for t in range(2):
        rows[t] = rows[t] * 3.0  # the entries change after the loop
    return total + np.sum(rows[0])


ARGS = (RNG.standard_normal((3, 4)), RNG.standard_normal((5, 2, 3)))
FUNCTIONS = [
    list_rewritten_after,
    rnn,
    calls_rnn,
    rows_rebound,
    read_before_set,
    scaled_rows,
    calls_scaled_rows,
    rebound_in_outer_loop,
]


@pytest.mark.parametrize("f", FUNCTIONS)
@pytest.mark.parametrize("wrt", [0, 1])
def test_gradient_against_differences(f, wrt):
    expected = numeric_grad(f, ARGS, wrt)
    for mode in ("s2s", "auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = call_twice(sg.grad(f, wrt=wrt, mode=mode), *ARGS)
        assert_close(actual, expected, rtol=1e-5, atol=1e-7)


def test_second_order():
    Wx, xs = ARGS
    v = RNG.standard_normal(Wx.shape)
    gradient = sg.grad(rnn, mode="s2s")
    expected = numeric_grad(lambda w: np.sum(gradient(w, xs) * v), (Wx,), 0)
    for mode in ("s2s", "tape"):
        actual = sg.hvp(rnn, (Wx, xs), (v, np.zeros_like(xs)), mode=mode)[0]
        assert_close(actual, expected, rtol=1e-4, atol=1e-6)


def test_the_row_is_not_pushed_each_iteration():
    gradient = sg.grad(rnn, mode="s2s")
    gradient(*ARGS)
    code = sg.source(gradient)
    pushes = [line.strip() for line in code.splitlines() if ".append(" in line]
    assert pushes == ["stack.append(h)"]  # h each step (not h before zeros: never read)


def _long_loop(tmp_path, rows):
    """A loop whose body reads ``rows`` rows ``r = xs[t]``, each read back by the backward
    loop: every one a value the backward loop computes again instead of saving it. The
    module is written to a file (the transformer reads its source)."""
    import importlib.util

    lines = ["import numpy as np", "", "", "def long_loop(w, xs):", "    h = w * 1.0"]
    lines.append("    for t in range(xs.shape[0]):")
    for i in range(rows):
        lines += [f"        r{i} = xs[t]", f"        h = np.tanh(h * r{i})"]
    lines.append("    return np.sum(h)")
    path = tmp_path / "long_loop.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("long_loop", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.long_loop


def test_a_long_loop_body_is_read_once_per_statement(tmp_path, monkeypatch):
    # each row asks what the statements before it read: gathered as the body is read,
    # not read again from the top per row (which made a long body quadratic)
    from s2sgrad.compiler.reverse import recompute

    asked = calls_counted(monkeypatch, recompute, "names_read")
    f = _long_loop(tmp_path, 100)
    w, xs = np.array([0.3, -0.2]), RNG.normal(size=(3, 2))
    assert_close(sg.grad(f, mode="s2s")(w, xs), numeric_grad(f, (w, xs), 0), rtol=1e-4)
    assert 0 < len(asked) < 4 * 400  # about 400 statements in normal form
