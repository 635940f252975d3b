"""The hot path's guard of the signature called last (compiler/signature_guards.py): it
runs the code exactly when the arguments' (shape, dtype, class) are the signature's and
the names the code reads hold what they held, and a transformed function called again and
again stays right when the shapes, dtypes, classes or the names the function reads
change."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.freshness import entry_for
from s2sgrad.compiler.signature_guards import MISSING, guarded_call
from s2sgrad.compiler.specialize import signature

SCALE = 2.0


class Marked(np.ndarray):
    pass


def _key(*arrays):
    return tuple((a.shape, a.dtype, type(a)) for a in arrays)


def signature_guard(key, entries=()):
    """The guard alone: True where the guarded call runs its code."""
    guarded = guarded_call(key, lambda *args: True, list(entries))
    return None if guarded is None else (lambda *args: guarded(*args) is True)


def test_the_guard_accepts_exactly_its_signature():
    a, b = np.zeros((2, 3)), np.ones(4, dtype=np.float32)
    guard = signature_guard(_key(a, b))
    assert guard(a, b) and guard(np.ones((2, 3)), np.zeros(4, dtype=np.float32))
    assert not guard(np.zeros((3, 2)), b)
    assert not guard(a, np.ones(4))  # float64
    assert not guard(a, np.ones(4, dtype=">f4"))  # another byte order
    assert not guard(a.view(Marked), b)
    assert not guard(a) and not guard(a, b, b)  # another number of arguments


def test_the_guard_checks_the_names_the_code_reads(monkeypatch):
    entry = entry_for(globals(), "SCALE")
    guard = signature_guard(_key(np.zeros(2)), [entry])
    assert guard(np.ones(2))
    monkeypatch.setattr(__import__(__name__), "SCALE", 3.0)
    assert not guard(np.ones(2))
    assert guarded_call((), lambda: 1, [entry])() is MISSING


def test_keys_of_another_form_have_no_guard():
    assert signature_guard(((1.0, float),)) is None
    assert signature_guard((([2], np.dtype("float64"), np.ndarray),)) is None
    assert signature_guard((((), np.dtype("float64"), "scalar"),)) is None  # np.float64
    assert signature_guard(((np.int64, 3),)) is None
    assert signature_guard((("list", (float,)),)) is None


def test_the_guard_of_numbers_checks_their_class_and_an_integers_value():
    guard = signature_guard(signature((1.5, 3, True, None, "x", 2j), {}))
    assert guard(2.5, 3, True, None, "x", 1j)
    assert not guard(np.float64(2.5), 3, True, None, "x", 1j)  # a NumPy scalar: other code
    assert not guard(2.5, 4, True, None, "x", 1j)  # an integer may set a shape
    assert not guard(2.5, 3.0, True, None, "x", 1j)
    assert not guard(2.5, True, True, None, "x", 1j)  # True == 1, but a bool is not an int
    assert not guard(2.5, 3, 1, None, "x", 1j)
    assert not guard(2.5, 3, True, 0, "x", 1j)
    assert not guard(2.5, 3, True, None, "y", 1j)
    assert not guard(2.5, 3, True, None, "x", 1.0)
    mixed = (np.zeros(2), 1.5)
    assert signature_guard(signature(mixed, {}))(np.ones(2), -1.0)


def loop(a, n, x):
    for _ in range(n):
        x = np.sin(x) * a + SCALE * 0.1 * x
    return x


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_repeated_calls_on_numbers_follow_the_arguments_and_the_globals(mode, monkeypatch):
    gradient = sg.grad(loop, wrt=(0, 2), mode=mode)
    for a, n, x in [(0.3, 4, 0.5)] * 3 + [(0.3, 5, 0.5)] * 3 + [(0.3, 4, 0.5)] * 2:
        expected = [numeric_grad(loop, (a, n, x), i) for i in (0, 2)]
        assert_close(list(gradient(a, n, x)), expected)
    monkeypatch.setattr(__import__(__name__), "SCALE", 5.0)
    expected = [numeric_grad(loop, (0.3, 4, 0.5), i) for i in (0, 2)]
    assert_close(list(gradient(0.3, 4, 0.5)), expected)
    for _ in range(2):
        with pytest.raises(TypeError, match="integer"):  # not differentiable
            gradient(0.3, 4, 3)


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


def tanh_loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2), w[0]


def tanh_value(w, x):
    return tanh_loss(w, x)[0]


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_the_hot_path_shapes_results_as_the_first_call_does(mode):
    # the guarded path returns the generated code's result; wrt=(0,) makes it a 1-tuple
    # there too, for grad, value_and_grad and has_aux alike, and wrt=0 leaves it bare
    rng = np.random.default_rng(5)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    expected = numeric_grad(tanh_value, (w, x), 0)
    one, bare = sg.grad(tanh_value, wrt=(0,), mode=mode), sg.grad(tanh_value, mode=mode)
    both = sg.value_and_grad(tanh_value, wrt=(0,), mode=mode)
    with_aux = sg.grad(tanh_loss, wrt=(0,), has_aux=True, mode=mode)
    for _ in range(4):  # the third call on takes the guarded path
        (g,) = one(w, x)
        assert_close(g, expected)
        assert_close(bare(w, x), expected)
        value, (g,) = both(w, x)
        assert_close(g, expected)
        assert np.isclose(value, tanh_value(w, x))
        (g,), aux = with_aux(w, x)
        assert_close(g, expected)
        np.testing.assert_array_equal(aux, w[0])
