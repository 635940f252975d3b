"""The hot path's guard of the signature called last (compiler/signature_guards.py): it
says yes exactly when the arguments' (shape, dtype, class) are the signature's, and a
transformed function called again and again stays right when the shapes, dtypes, classes
or the names the function reads change."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.signature_guards import signature_guard

SCALE = 2.0


class Marked(np.ndarray):
    pass


def _key(*arrays):
    return tuple((a.shape, a.dtype, type(a)) for a in arrays)


def test_the_guard_accepts_exactly_its_signature():
    a, b = np.zeros((2, 3)), np.ones(4, dtype=np.float32)
    guard = signature_guard(_key(a, b))
    assert guard(a, b) and guard(np.ones((2, 3)), np.zeros(4, dtype=np.float32))
    assert not guard(np.zeros((3, 2)), b)
    assert not guard(a, np.ones(4))  # float64
    assert not guard(a, np.ones(4, dtype=">f4"))  # another byte order
    assert not guard(a.view(Marked), b)
    with pytest.raises(TypeError):
        guard(a)  # the caller checks the number of arguments first


def test_keys_of_another_form_have_no_guard():
    assert signature_guard(((1.0, float),)) is None
    assert signature_guard((([2], np.dtype("float64"), np.ndarray),)) is None


def scaled(w, x):
    return np.sum(np.tanh(x @ w) * SCALE)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_repeated_calls_follow_the_arguments_and_the_globals(mode, monkeypatch):
    rng = np.random.default_rng(3)
    gradient = sg.grad(scaled, mode=mode)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    for _ in range(4):  # the third call on takes the guarded path
        assert_close(gradient(w, x), numeric_grad(scaled, (w, x), 0))
    w5, x5 = rng.standard_normal((3, 5)), rng.standard_normal((4, 3))
    for _ in range(3):
        assert_close(gradient(w5, x5), numeric_grad(scaled, (w5, x5), 0))
    assert_close(gradient(w, x), numeric_grad(scaled, (w, x), 0))
    single = gradient(w.astype(np.float32), x.astype(np.float32))
    assert single.dtype == np.float32
    with pytest.raises(TypeError, match="Marked"):  # refused, not run by the ndarray code
        gradient(w.view(Marked), x)
    reshaped = w.copy()
    gradient(reshaped, x)
    gradient(reshaped, x)
    reshaped.shape = (2, 3)  # the same array object, another shape
    x2 = rng.standard_normal((4, 2))
    assert_close(gradient(reshaped, x2), numeric_grad(scaled, (reshaped, x2), 0))
    monkeypatch.setattr(__import__(__name__), "SCALE", 5.0)
    assert_close(gradient(w, x), numeric_grad(scaled, (w, x), 0))
