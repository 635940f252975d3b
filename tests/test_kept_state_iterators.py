"""Functions that advance an iterator or a random generator they reach (a module's
``next(ITEMS)``, ``RNG.random()`` of Python's ``random.Random``, a helper's draw), run
more than once for one answer: a forward-mode Jacobian's columns, a Hessian on the tape,
vmap's examples computed alone. Every run must see what the first run saw (a list's
iterator is set back, a generator's state too), or the function is refused where the
iterator cannot be set back (a generator, ``itertools.count``); one call advances it once."""

from __future__ import annotations

import itertools
import random
import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_jacobian

import s2sgrad as sg

SCALES = [1.5, 2.0, 0.5, 3.0, 1.25, 0.75, 2.5, 1.75] * 50
ITEMS = iter(SCALES)
PYTHON_RNG = random.Random(7)
NUMPY_RNG = np.random.default_rng(7)


def scaled_by_item(x):
    s = next(ITEMS)
    return s * np.sin(x) * x


def scaled_by_python_draw(x):
    s = PYTHON_RNG.random() + 0.5
    return s * np.sin(x) * x


def _noise():
    return NUMPY_RNG.normal()


def scaled_by_helper_draw(x):
    s = _noise()
    return s * np.sin(x) * x


def _plain(s):
    return lambda x: s * np.sin(x) * x


def _restart(f):
    """Set the source ``f`` reads to its start; returns the scales one call after another
    takes from there (each a plain call of ``f``'s own code)."""
    global ITEMS
    if f is scaled_by_item:
        ITEMS = iter(SCALES)
        return iter(SCALES)
    if f is scaled_by_python_draw:
        PYTHON_RNG.seed(7)
        twin = random.Random(7)
        return iter(lambda: twin.random() + 0.5, None)
    NUMPY_RNG.bit_generator.state = np.random.default_rng(7).bit_generator.state
    other = np.random.default_rng(7)
    return iter(other.normal, None)


TRANSFORMS = {
    "jacfwd": lambda f, mode: sg.jacfwd(f, mode=mode),
    "hessian": lambda f, mode: sg.hessian(lambda x: np.sum(f(x)), mode=mode),
    "jacobian": lambda f, mode: sg.jacobian(f, mode=mode),
}


def _expected(kind, s, x):
    if kind == "hessian":
        return numeric_jacobian(sg.grad(lambda t: np.sum(_plain(s)(t)), mode="tape"), [x], 0)
    return numeric_jacobian(_plain(s), [x], 0)


@pytest.mark.parametrize("mode", ["tape", "auto", "s2s"])
@pytest.mark.parametrize("kind", sorted(TRANSFORMS))
@pytest.mark.parametrize("f", [scaled_by_item, scaled_by_python_draw, scaled_by_helper_draw])
def test_every_column_sees_the_item_one_call_takes(f, kind, mode):
    x = np.random.default_rng(11).normal(size=4)
    scales = _restart(f)
    transform = TRANSFORMS[kind](f, mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in (1, 2):  # the second call takes the next item, as a plain call would
            found = transform(x)
            assert_close(found, _expected(kind, next(scales), x), rtol=1e-5)
    assert f(x) == pytest.approx(_plain(next(scales))(x))  # advanced once per call


@pytest.mark.parametrize("transformed", [False, True])
@pytest.mark.parametrize("f", [scaled_by_item, scaled_by_python_draw, scaled_by_helper_draw])
def test_vmap_examples_see_the_item_the_batched_call_takes(f, transformed):
    x = np.random.default_rng(12).normal(size=5)
    scales = _restart(f)
    mapped = sg.vmap(sg.grad(lambda t: np.sum(f(t)))) if transformed else sg.vmap(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in (1, 2):
            s = next(scales)
            found = mapped(x)
            if transformed:
                expected = [numeric_jacobian(_plain(s), [x[i]], 0) for i in range(x.size)]
            else:
                expected = [_plain(s)(x[i]) for i in range(x.size)]
            assert_close(found, np.array(expected), rtol=1e-5)


COUNT = itertools.count(1)


def _steps():
    k = 1.0
    while True:
        yield k
        k += 0.5


STEPS = _steps()


def scaled_by_count(x):
    return float(next(COUNT)) * np.sin(x)


def scaled_by_generator(x):
    return next(STEPS) * np.sin(x)


def scaled_by_given(x, items):
    return next(items) * np.sin(x)


@pytest.mark.parametrize(
    ("f", "name"), [(scaled_by_count, "COUNT"), (scaled_by_generator, "STEPS")]
)
def test_an_iterator_that_cannot_be_set_back_is_refused_where_runs_repeat(f, name):
    x = np.random.default_rng(13).normal(size=3)
    line = f.__code__.co_firstlineno + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for run in (
            lambda: sg.jacfwd(f, mode="tape")(x),
            lambda: sg.hessian(lambda t: np.sum(f(t)), mode="tape")(x),
            lambda: sg.vmap(f)(x),
        ):
            with pytest.raises(sg.UnsupportedError, match=rf"{__file__}:{line}: {name} .*as an"):
                run()
        # one run answers (reverse mode): the item one call takes
        taken = next(STEPS) if f is scaled_by_generator else float(next(COUNT))
        found = sg.jacobian(f, mode="tape")(x)
    step = 0.5 if f is scaled_by_generator else 1.0
    assert_close(found, np.diag((taken + step) * np.cos(x)))


def test_a_generator_given_as_an_argument_is_refused_where_runs_repeat():
    x = np.random.default_rng(14).normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.UnsupportedError, match="argument 1 .*generator.*as an argument"):
            sg.jacfwd(scaled_by_given, mode="tape")(x, _steps())
        items = iter([2.0, 3.0, 4.0])  # a list's iterator: set back for each column
        found = sg.jacfwd(scaled_by_given, mode="tape")(x, items)
    assert_close(found, np.diag(2.0 * np.cos(x)))
    assert next(items) == 3.0


def scaled_by_default(x, items=iter([0.5, 4.0, 8.0])):  # noqa: B008 - the state tested
    return next(items) * np.sin(x)


def test_an_iterator_in_a_default_is_set_back_for_each_column():
    x = np.random.default_rng(15).normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = sg.hessian(lambda t: np.sum(scaled_by_default(t)), mode="tape")(x)
    assert_close(found, np.diag(-0.5 * np.sin(x)))
    assert scaled_by_default(0.5) == pytest.approx(4.0 * np.sin(0.5))
