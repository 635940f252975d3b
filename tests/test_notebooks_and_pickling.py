"""Transforms in notebooks (their generated code as HTML, Markdown and pretty text) and
pickled by reference for multiprocessing."""

from __future__ import annotations

import multiprocessing
import pickle
import sys
import types

import numpy as np
import pytest

import s2sgrad as sg


def loss(x, w):
    return np.sum(np.tanh(x @ w) ** 2)


def test_a_transform_shows_the_code_that_ran_last():
    dloss = sg.grad(loss, wrt=1)
    assert repr(dloss) == "<s2sgrad grad of loss wrt w (mode='auto')>"
    generic = dloss._repr_markdown_()
    assert generic.startswith("```python\ndef dloss(x, w):") and "unbroadcast" in generic
    dloss(np.ones((2, 3)), np.ones(3))
    specialised = dloss._repr_markdown_()
    assert specialised == f"```python\n{sg.source(dloss)}```\n"
    assert "dloss" in dloss._repr_html_()


def test_html_without_pygments_is_an_escaped_pre_block(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygments", None)  # import pygments now fails
    html = sg.grad(lambda x: np.sum(x < 1.0) + np.sum(x**2))._repr_html_()
    assert html.startswith('<pre class="s2sgrad-listing">') and "&lt;" in html


def test_pretty_printing_and_the_tape_show_what_there_is():
    class Printer:
        def __init__(self):
            self.parts = []

        def text(self, value):
            self.parts.append(value)

    printer = Printer()
    sg.grad(loss)._repr_pretty_(printer, False)
    assert printer.parts[0].startswith("def dloss(x, w):")
    on_tape = sg.grad(loss, mode="tape")
    assert on_tape._repr_markdown_() == "<s2sgrad grad of loss wrt x (mode='tape')>"
    printer = Printer()
    on_tape._repr_pretty_(printer, False)
    assert printer.parts == [repr(on_tape)]


def test_show_renders_html_in_a_notebook(monkeypatch):
    shown = []

    class ZMQInteractiveShell:
        pass

    ipython = types.ModuleType("IPython")
    ipython.get_ipython = ZMQInteractiveShell
    display = types.ModuleType("IPython.display")
    display.HTML = lambda text: ("HTML", text)
    display.display = shown.append
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    sg.show(loss, wrt=1)
    assert len(shown) == 1 and shown[0][0] == "HTML" and "dloss" in shown[0][1]


def square_sin(x):
    return np.sum(np.sin(x) ** 2)


def test_a_transform_pickles_by_reference_before_and_after_calls():
    dsquare = sg.value_and_grad(square_sin, mode="s2s")
    x = np.linspace(0.0, 1.0, 4)
    for _ in range(2):
        data = pickle.dumps(dsquare)
        assert b"s2sgrad.generated" not in data
        restored = pickle.loads(data)
        value, gradient = restored(x)
        assert np.isclose(value, np.sum(np.sin(x) ** 2))
        assert np.allclose(gradient, 2 * np.sin(x) * np.cos(x))
        assert repr(restored) == repr(dsquare)
        dsquare(x)


def test_multiprocessing_maps_a_gradient_over_batches():
    dsquare = sg.grad(square_sin)
    batches = [np.linspace(0.0, 1.0, 3) * k for k in range(1, 4)]
    dsquare(batches[0])  # a called transform pickles too
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(dsquare, batches)
    for batch, result in zip(batches, results):
        assert np.allclose(result, 2 * np.sin(batch) * np.cos(batch))


@pytest.mark.parametrize("wrt", [0, (0,), ("x",)])
def test_pickled_transforms_keep_their_wrt(wrt):
    transform = sg.grad(square_sin, wrt=wrt)
    restored = pickle.loads(pickle.dumps(transform))
    x = np.ones(2)
    assert type(restored(x)) is type(transform(x))


def product_of_entries(*factors):
    return np.sum(factors[0] * factors[1])


def test_a_transform_of_star_args_pickles():
    """The transform was rebuilt from its parameters' normalised names, which for ``*args``
    are ``factors[0]``: unpickling raised ValueError (no parameter named 'factors[0]')."""
    transform = sg.grad(product_of_entries, wrt=(0, 1))
    restored = pickle.loads(pickle.dumps(transform))
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    for got, want in zip(restored(a, b), (b, a), strict=True):
        assert np.allclose(got, want)
