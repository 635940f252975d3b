"""Generated code lives as long as the function it came from, and no longer."""

import gc
import linecache
import os
import weakref

import numpy as np
from collector import older_objects_frozen

import s2sgrad as sg


def make_function(scale):
    def scaled_sine(x):
        return np.sum(np.sin(x) * scale)

    return scaled_sine


def generated_files():
    return {name for name in linecache.cache if "s2sgrad-" in name or name.startswith("<s2sgrad")}


def test_a_dropped_function_takes_its_generated_code_with_it():
    # each collection walks only what the test made: older objects are frozen (a
    # reference from one still keeps an object alive), not seconds late in a run
    with older_objects_frozen():
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
    files = generated_files()
    made = []  # weak references: the functions, their gradients, what the gradients made
    for scale in range(20):
        function = make_function(float(scale))
        gradient = sg.grad(function)
        gradient(np.ones(2))
        made += [weakref.ref(function), weakref.ref(gradient)]
        pushed = make_function(float(scale))
        sg.jvp(pushed, (np.ones(2),), (np.ones(2),))
        made.append(weakref.ref(pushed))
    written = generated_files() - files
    assert written  # the check below sees code being made
    del function, gradient, pushed
    gc.collect()
    assert not [ref for ref in made if ref() is not None]  # no cache keeps them alive
    # only this test's files: an earlier test's garbage may go in the same collection
    assert not (generated_files() & written)
