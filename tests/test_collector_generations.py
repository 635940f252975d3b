"""What a first call leaves alive (the raw tree kept for other signatures, the compiled
code) is filed with the collector's oldest objects, so that no young collection walks it
right after the call (``finishing.without_garbage_collection``); a program that froze
objects keeps them frozen."""

import gc

import gast
import numpy as np
from oracle import assert_close, numeric_grad

import s2sgrad as sg


def straight(x):
    a = np.sin(x) * 0.5 + x
    b = a * x * 0.25
    c = np.tanh(b - 0.1 * a)
    return np.sum(c + np.exp(-a * a))


def _young_trees() -> list:
    return [o for g in (0, 1) for o in gc.get_objects(generation=g) if isinstance(o, gast.AST)]


def test_first_call_files_what_it_keeps_with_the_oldest():
    x = np.linspace(-0.8, 0.9, 5)
    gradient = sg.grad(straight, mode="s2s")
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    result = gradient(x)
    if frozen == 0:  # Python 3.12 starts with objects frozen, which are left so: no filing
        assert _young_trees() == []
    assert gc.get_freeze_count() == frozen
    assert_close(result, numeric_grad(straight, (x,), 0))
    assert_close(gradient(x + 0.1), numeric_grad(straight, (x + 0.1,), 0))
    assert_close(gradient(x[:3]), numeric_grad(straight, (x[:3],), 0))  # a new signature


def test_frozen_objects_stay_frozen():
    x = np.linspace(-0.5, 0.5, 4)
    gradient = sg.grad(straight, mode="s2s")
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        result = gradient(x)
        assert gc.get_freeze_count() >= frozen  # nothing unfrozen
    finally:
        gc.unfreeze()
    assert_close(result, numeric_grad(straight, (x,), 0))
