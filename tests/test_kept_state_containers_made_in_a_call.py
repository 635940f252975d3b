"""A list or dict that a call makes inside what the function keeps (``CACHE.setdefault(key,
[])``, ``if key not in CACHE: CACHE[key] = []``, an attribute set to a new list) and that
later calls append to: runs repeated for one answer (a forward-mode Jacobian's columns on
the tape, vmap's examples computed alone) each start from what it held when the call
started, so that every column counts one call, on the second call as on the first."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_jacobian

import s2sgrad as sg

CACHE: dict = {}


class Box:
    pass


BOX = Box()


def with_setdefault(x):
    history = CACHE.setdefault("history", [])
    history.append(1.0)
    return float(len(history)) * np.sum(np.sin(x))


def with_membership_test(x):
    if "history" not in CACHE:
        CACHE["history"] = []
    CACHE["history"].append(1.0)
    return float(len(CACHE["history"])) * np.sum(np.sin(x))


def with_attribute(x):
    if not hasattr(BOX, "history"):
        BOX.history = []
    BOX.history.append(1)
    return float(len(BOX.history)) * np.sum(np.sin(x))


def with_nested_dict(x):
    counts = CACHE.setdefault("counts", {})
    counts["n"] = counts.get("n", 0) + 1
    return float(counts["n"]) * np.sum(np.sin(x))


def with_object(x):
    if "box" not in CACHE:
        CACHE["box"] = Box()
        CACHE["box"].n = 0
    CACHE["box"].n += 1
    return float(CACHE["box"].n) * np.sum(np.sin(x))


FUNCTIONS = [with_setdefault, with_membership_test, with_attribute, with_nested_dict, with_object]


def _reset():
    CACHE.clear()
    vars(BOX).clear()


def _plain(k):
    return lambda x: k * np.sum(np.sin(x))


@pytest.mark.parametrize("mode", ["tape", "auto", "s2s"])
@pytest.mark.parametrize("transform", ["jacfwd", "hessian"])
@pytest.mark.parametrize("f", FUNCTIONS)
def test_every_column_counts_one_call_on_each_call(f, transform, mode):
    x = np.random.default_rng(21).normal(size=4)
    _reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2, 3):
            if transform == "jacfwd":
                found = sg.jacfwd(f, mode=mode)(x)
                expected = numeric_jacobian(_plain(call), [x], 0)
            else:
                found = sg.hessian(f, mode=mode)(x)
                expected = np.diag(-call * np.sin(x))
            assert_close(found, expected, rtol=1e-5)
    assert_close(f(x), _plain(4)(x))  # three calls counted three


@pytest.mark.parametrize("f", FUNCTIONS)
def test_vmap_examples_count_one_call_on_each_call(f):
    x = np.random.default_rng(22).normal(size=5)
    _reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):  # a vmap made anew checks its batched run against examples
            assert_close(sg.vmap(f)(x), np.array([_plain(2 * call - 1)(t) for t in x]))
            expected = [numeric_jacobian(_plain(2 * call), [x[i]], 0) for i in range(x.size)]
            assert_close(sg.vmap(sg.grad(f))(x), np.array(expected), rtol=1e-5)
