"""The signature guard reads the names the code depends on without a default (a module's
global by subscript, a closure variable from its cell: compiler/signature_guards.py); a
name deleted or a cell emptied between calls makes the read raise, which fails the guard
and takes the usual way, in every mode: never the code made for the old value."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.freshness import entry_for
from s2sgrad.compiler.signature_guards import MISSING, guarded_call

MODES = ["s2s", "tape", "auto"]
SCALE = 1.5


def _scaled(x):
    return np.sum(np.sin(x) * SCALE)


def _key(*arrays):
    return tuple((a.shape, a.dtype, type(a)) for a in arrays)


def _ran(guard, *args) -> bool:
    return guard(*args) is not MISSING


def test_a_deleted_global_fails_the_guard():
    space = {"W": 2.0}
    guard = guarded_call(_key(np.ones(2)), lambda x: True, [entry_for(space, "W")])
    assert _ran(guard, np.ones(2))
    del space["W"]
    assert not _ran(guard, np.ones(2))  # not KeyError
    space["W"] = 2.0  # another float: the entry takes it over on the usual way only
    assert not _ran(guard, np.ones(2)) or space["W"] == 2.0


def test_an_emptied_cell_fails_the_guard():
    def make():
        value = 3.0

        def read():
            return value

        def drop():
            nonlocal value
            del value

        return read, drop

    read, drop = make()
    (cell,) = read.__closure__
    guard = guarded_call(_key(np.ones(2)), lambda x: True, [entry_for(cell, "value")])
    assert _ran(guard, np.ones(2))
    drop()
    assert not _ran(guard, np.ones(2))  # not ValueError


@pytest.mark.parametrize("mode", MODES)
def test_a_global_deleted_between_calls_is_not_read_stale(mode, monkeypatch):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 2))
    g = sg.grad(_scaled, mode=mode)
    for _ in range(3):  # the guard is made on the second call, runs on the third
        assert_close(g(x), numeric_grad(_scaled, (x,), 0))
    monkeypatch.delitem(globals(), "SCALE")
    with pytest.raises((NameError, sg.S2SGradError)):
        g(x)
    monkeypatch.setitem(globals(), "SCALE", -0.5)
    assert_close(g(x), numeric_grad(_scaled, (x,), 0))


@pytest.mark.parametrize("mode", MODES)
def test_a_closure_variable_deleted_or_rebound_between_calls(mode):
    def make(scale):
        def f(x):
            return np.sum(np.tanh(x) * scale)

        def rebind(value):
            nonlocal scale
            scale = value

        def drop():
            nonlocal scale
            del scale

        return f, rebind, drop

    f, rebind, drop = make(2.0)
    rng = np.random.default_rng(4)
    x = rng.normal(size=4)
    g = sg.grad(f, mode=mode)
    for value in (2.0, 2.0, -3.0, -3.0, 0.25):
        rebind(value)
        assert_close(g(x), numeric_grad(f, (x,), 0))
    drop()
    with pytest.raises((NameError, sg.S2SGradError)):
        g(x)
    rebind(1.25)
    for _ in range(2):
        assert_close(g(x), numeric_grad(f, (x,), 0))


@pytest.mark.parametrize("mode", MODES)
def test_a_helper_replaced_in_a_module_dict_between_calls(mode, monkeypatch):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3))

    def f(x):
        return np.sum(np.tanh(x) ** 2)

    g = sg.grad(f, mode=mode)
    for _ in range(3):
        assert_close(g(x), numeric_grad(f, (x,), 0))
    monkeypatch.setattr(np, "tanh", np.sin)  # np's own dict: read by subscript
    for _ in range(3):
        assert_close(g(x), numeric_grad(f, (x,), 0))
