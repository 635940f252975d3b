"""State a differentiated function keeps around itself (a call counter in a module dict, a
global, an object's attribute): the first write of a dict entry, and second derivatives
or a fallback to the tape that run the function more than once for one answer."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

CACHE: dict = {}
COUNT = 0


class Counter:
    def __init__(self) -> None:
        self.n = 0


COUNTER = Counter()


def counted_get(x):
    CACHE["k"] = CACHE.get("k", 0) + 1
    return np.sum(np.sin(x * CACHE["k"]))


def counted_setdefault(x):
    CACHE.setdefault("k", 0)
    CACHE["k"] = CACHE["k"] + 1
    return np.sum(np.sin(x * CACHE["k"]))


def counted_if_missing(x):
    if "k" not in CACHE:
        CACHE["k"] = 0
    CACHE["k"] = CACHE["k"] + 1
    return np.sum(np.sin(x * CACHE["k"]))


def counted_global(x):
    global COUNT
    COUNT += 1
    return np.sum(np.sin(x * COUNT))


def counted_attribute(x):
    COUNTER.n += 1
    return np.sum(np.sin(x * COUNTER.n))


def _count() -> int:
    return CACHE.get("k", 0) + COUNT + COUNTER.n


def _reset() -> None:
    global COUNT
    CACHE.clear()
    COUNT = 0
    COUNTER.n = 0


def _scaled(k):
    return lambda x: np.sum(np.sin(x * k))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("f", [counted_get, counted_setdefault, counted_if_missing])
def test_an_entry_written_first_inside_the_function_is_saved_as_absent(f, mode):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3))
    kept = x.copy()
    _reset()
    gradient = sg.grad(f, mode=mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):
            found = gradient(x)
            assert {"k": call} == CACHE  # counted once a call, the entry left by the call
            assert_close(found, numeric_grad(_scaled(call), [x], 0))
    np.testing.assert_array_equal(x, kept)


@pytest.mark.parametrize("mode", ["auto", "tape"])
@pytest.mark.parametrize("f", [counted_get, counted_global, counted_attribute])
def test_a_hessian_runs_the_function_as_one_call(f, mode):
    """The tape builds the Hessian column by column, one run each: every run starts from
    the counter the first started from (it was 1, 2, 3... and so the columns' scales)."""
    x = np.random.default_rng(4).normal(size=4)
    _reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):
            hessian = sg.hessian(f, mode=mode)(x)
            assert _count() == call
            assert_close(hessian, np.diag(-(call**2) * np.sin(call * x)))


def fallen_back(x):
    CACHE["k"] = CACHE.get("k", 0) + 1
    entries = {"a": x}
    return np.sum(np.sin(_doubled(entries)))


def _doubled(entries):
    return entries.get("a") * 2.0


def test_generated_code_refused_as_it_ran_leaves_no_count_behind():
    """mode="auto": the generated JVP runs, is refused (``.get`` of a dict being
    differentiated), and the tape runs the function again; the count is one."""
    rng = np.random.default_rng(5)
    x, v = rng.normal(size=3), rng.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for transform in (
            lambda: sg.jvp(fallen_back, (x,), (v,)),
            lambda: sg.hvp(fallen_back, (x,), (v,)),
            lambda: sg.hessian(fallen_back)(x),
        ):
            _reset()
            transform()
            assert CACHE == {"k": 1}
        _reset()
        _, tangent = sg.jvp(fallen_back, (x,), (v,))
    assert_close(tangent, np.sum(2.0 * np.cos(2.0 * x) * v))


class CountingModel:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return np.sum(np.sin(x * self.calls))


MODEL = CountingModel()


def through_a_counting_model(x):
    return MODEL(x)


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_a_callable_object_counting_its_calls(mode):
    x = np.random.default_rng(6).normal(size=3)
    MODEL.calls = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):
            MODEL.calls = call - 1  # (generated code keeps the count in a variable)
            hessian = sg.hessian(through_a_counting_model, mode=mode)(x)
            if mode == "tape":
                assert call == MODEL.calls
            assert_close(hessian, np.diag(-(call**2) * np.sin(call * x)))
