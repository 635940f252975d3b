"""A dict the function makes and uses only through literal keys is a set of named slots
(``cache["z1"] = ...``): source transformation differentiates it as variables, with no
tape fallback; dicts used any other way keep their meaning (and their refusals)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, directional_derivative, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(2026)


def two_layer_cache(w, x):
    cache = {}
    cache["z1"] = x @ w
    cache["a1"] = np.tanh(cache["z1"])
    cache["z2"] = cache["a1"] @ w.T
    return np.sum(cache["z2"] ** 2) + np.sum(cache["a1"])


def cache_filled_in_a_loop(w, x):
    cache = {"h": x}
    for _ in range(3):
        cache["h"] = np.tanh(cache["h"] @ w)
        cache["last"] = cache["h"] * 2.0
    return np.sum(cache["last"])


def cache_with_branches_and_updates(w, x):
    state = {"total": 0.0, "scale": 1.0}
    h = x @ w
    if np.sum(h) > 0:
        state["total"] += np.sum(h**2)
    else:
        state["total"] -= np.sum(np.sin(h))
    state["scale"] *= np.sum(w)
    return state["total"] * state["scale"]


def cache_unpacked_into(w, x):
    parts = {}
    parts["a"], parts["b"] = np.tanh(x @ w), np.cos(x @ w)
    return np.sum(parts["a"] * parts["b"])


def _affine(a, w=1.0, *, shift=0.25):
    return a @ w + shift


def options_passed_as_keywords(w, x):
    options = {"w": w, "shift": np.sum(w) * 0.1}
    first = np.tanh(_affine(x, **options))
    some = {"w": w.T}
    return (
        np.sum(first**2) + np.sum(_affine(first, **options)) + np.sum(_affine(x, shift=0.5, **some))
    )


CACHED = [
    two_layer_cache,
    cache_filled_in_a_loop,
    cache_with_branches_and_updates,
    cache_unpacked_into,
    options_passed_as_keywords,
]


def _arguments():
    return RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(2, 3))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("f", CACHED, ids=lambda f: f.__name__)
def test_dict_slots_differentiate_by_source(f, mode):
    w, x = _arguments()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto must not fall back to the tape
        for position in (0, 1):
            got = call_twice(sg.grad(f, wrt=position, mode=mode), w, x)
            assert_close(got, numeric_grad(f, (w, x), position))


@pytest.mark.parametrize("f", CACHED, ids=lambda f: f.__name__)
def test_dict_slots_to_second_order_and_in_forward_mode(f):
    w, x = _arguments()
    v = RNG.normal(size=w.shape)
    second = call_twice(
        lambda w_: sg.jvp(sg.grad(f, mode="s2s"), (w_, x), (v, np.zeros_like(x)))[1], w
    )
    assert_close(second, directional_derivative(lambda w_: sg.grad(f, mode="tape")(w_, x), w, v))
    _, tangent = sg.jvp(f, (w, x), (v, np.zeros_like(x)), mode="s2s")
    assert_close(tangent, directional_derivative(lambda w_: f(w_, x), w, v))


def test_the_generated_code_names_the_slots():
    source = sg.source(sg.grad(two_layer_cache, mode="s2s"))
    assert "cache_a1 = np.tanh(" in source and "dcache_z2 = " in source, source
    assert "{" not in source and "dict_entry" not in source, source


def cache_returned_as_aux(w, x):
    cache = {}
    cache["z"] = x @ w
    return np.sum(np.tanh(cache["z"])), cache


def cache_read_with_a_computed_key(w, x):
    cache = {}
    cache["z"] = x @ w
    key = "z"
    return np.sum(np.tanh(cache[key]))


def test_dicts_used_otherwise_keep_their_meaning():
    """Returned, or read with a computed key, the dict stays a dict: its entry writes
    rebind it to a new dict with the entry (``compiler/passes/dict_entries.py``)."""
    w, x = _arguments()
    for mode in ("s2s", "tape"):
        gradient, aux = sg.grad(cache_returned_as_aux, has_aux=True, mode=mode)(w, x)
        assert_close(gradient, numeric_grad(lambda *a: cache_returned_as_aux(*a)[0], (w, x), 0))
        assert set(aux) == {"z"}
    for mode in ("s2s", "auto"):
        gradient = sg.grad(cache_read_with_a_computed_key, mode=mode)
        got = call_twice(lambda w_, g=gradient: g(w_, x), w)
        assert_close(got, numeric_grad(cache_read_with_a_computed_key, (w, x), 0))


def options_changed_after_they_are_made(w, x):
    options = {"w": w, "shift": 0.1}
    options["shift"] = np.sum(x)
    return np.sum(_affine(x, **options))


def test_keyword_dicts_kept_as_dicts_where_their_keys_are_not_known():
    """A dict written after it is made stays a dict: s2s refuses it at the line, and auto
    has the tape follow it."""
    f = options_changed_after_they_are_made
    w, x = _arguments()
    with pytest.raises(sg.UnsupportedError, match="test_local_dicts.py:"):
        sg.grad(f, mode="s2s")(w, x)
    with pytest.warns(sg.S2SGradWarning):
        got = sg.grad(f, mode="auto")(w, x)
    assert_close(got, numeric_grad(f, (w, x), 0))
