"""An array the differentiated function reads (a global, a closure's, an attribute of a
global object, one held in a global tuple) whose shape or dtype changes in place between
calls (``W.shape = (3, 1)``, ``W.resize(...)``; a dtype changed in place by the same
test, ``Entry.reshaped``): the same object, so no rebinding shows it,
but code specialised to its old shape would be wrong. Every mode differentiates the program
as it is at each call (against central differences), first and later calls."""

import importlib.util
import warnings

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")


def _module(directory, name):
    """A fresh module per test, from a file of its own: the functions read its names as
    globals (s2sgrad reads their source from the file)."""
    path = directory / f"{name}.py"
    path.write_text(_SOURCE)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SOURCE = """
import numpy as np

W = np.array([1.0, 2.0, 3.0])
PAIR = (np.array([0.5, -1.0, 2.0]), 2.0)


class Config:
    pass


CFG = Config()
CFG.scale = np.array([1.5, 0.5, -1.0])


def reads_global(x):
    return np.sum(np.sin(x * W))


def reads_tuple(x):
    weights, power = PAIR
    return np.sum(np.tanh(x * weights) ** power)


def reads_attribute(x):
    return np.sum(np.exp(-x * CFG.scale))


def make_closure():
    V = np.array([0.2, 0.4, 0.6])

    def reads_closure(x):
        return np.sum(np.cos(x + V) * V)

    return reads_closure, V
"""


def _gradient_checks(gradient, f, x, calls=2):
    expected = numeric_grad(f, [x], 0)
    for _ in range(calls):
        got = gradient(x)
        assert np.shape(got) == np.shape(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["global", "tuple", "attribute", "closure", "resized"])
def test_the_gradient_follows_an_array_changed_in_place(case, mode, tmp_path):
    module = _module(tmp_path, f"reshaped_{case}_{mode}")
    x = np.array([0.3, -0.2, 0.5])
    if case == "global":
        f, change = module.reads_global, lambda: setattr(module.W, "shape", (3, 1))
    elif case == "tuple":
        f, change = module.reads_tuple, lambda: setattr(module.PAIR[0], "shape", (3, 1))
    elif case == "attribute":
        f, change = module.reads_attribute, lambda: setattr(module.CFG.scale, "shape", (3, 1))
    elif case == "closure":
        f, held = module.make_closure()
        change = lambda: setattr(held, "shape", (3, 1))  # noqa: E731
    else:
        f = module.reads_global
        change = lambda: module.W.resize((4, 1), refcheck=False)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient = sg.grad(f, mode=mode)
        _gradient_checks(gradient, f, x)
        change()
        _gradient_checks(gradient, f, x)
