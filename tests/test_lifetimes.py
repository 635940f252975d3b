"""Generated code lives as long as the function it came from, and no longer."""

import gc
import linecache
import os
import weakref

import numpy as np

import s2sgrad as sg
from s2sgrad.compiler import pipeline as transform


def make_function(scale):
    def scaled_sine(x):
        return np.sum(np.sin(x) * scale)

    return scaled_sine


def generated_files():
    return {name for name in linecache.cache if "s2sgrad-" in name or name.startswith("<s2sgrad")}


def test_a_dropped_function_takes_its_generated_code_with_it():
    before = generated_files()
    function = make_function(2.0)
    gradient = sg.grad(function)
    np.testing.assert_allclose(gradient(np.zeros(3)), 2.0 * np.ones(3))
    sg.source(gradient)  # compiles the generic code too
    made = generated_files() - before
    assert made, "the generated code should be in linecache while it is alive"
    alive = weakref.ref(function)
    del function, gradient
    gc.collect()
    assert alive() is None
    assert not (generated_files() & made)
    assert not any(os.path.exists(name) for name in made)


def test_many_throw_away_functions_leave_nothing_behind():
    gc.collect()
    cached = len(transform._cache)
    files = len(generated_files())
    for scale in range(20):
        gradient = sg.grad(make_function(float(scale)))
        gradient(np.ones(2))
        sg.jvp(make_function(float(scale)), (np.ones(2),), (np.ones(2),))
    del gradient
    gc.collect()
    assert len(transform._cache) == cached
    assert len(generated_files()) == files
