"""A first call leaves its trees to reference counting: the probe's copy, its records and
the specialised code are freed when dropped, not held in cycles until the cyclic collector
walks every object the transformation made (``probe_copy.py``, ``probe.run``)."""

import gc

import gast
import numpy as np
import pytest
from collector import older_objects_frozen
from oracle import assert_close, numeric_grad

import s2sgrad as sg


def straight(x):
    a = np.sin(x) * 0.5 + x
    b = a * x * 0.25
    c = np.tanh(b - 0.1 * a)
    return np.sum(c + np.exp(-a * a))


def with_a_loop(x):
    h = x * 0.5
    for _ in range(3):
        h = np.tanh(h * x + 0.1)
    return np.sum(h)


@pytest.mark.parametrize("function", [straight, with_a_loop])
def test_first_call_leaves_no_tree_in_a_cycle(function):
    x = np.linspace(-0.8, 0.9, 5)
    gradient = sg.grad(function, mode="s2s")
    # trees alive before (earlier tests' code, which the call may drop from a cache) are not
    # this call's to free: frozen, the collection below leaves them aside, and walks only
    # what the call made (not the worker's every object, seconds late in a run)
    with older_objects_frozen():
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            result = gradient(x)
            gc.collect()
            trees = [o for o in gc.garbage if isinstance(o, gast.AST)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert trees == []
    assert_close(result, numeric_grad(function, (x,), 0))
