"""Unrolled gradient steps on a copy of a dict of parameters (``p = {k: v.copy() for k, v
in params.items()}``, then ``p['w'] -= lr * g``): source transformation refuses the entry
updates naming the line, and mode "auto" used to refuse them too, taking the dict for an
array that may share memory (which the tape could not follow either). The tape follows a
dict's entries, so "auto" now differentiates it there; the caller's parameters stay as
they were. Checked against central differences, first and second order."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = "test_updates_of_copied_parameter_dicts.py"
R = np.random.default_rng(4242)


def steps_on_a_copy(params, X, lr=0.1):
    p = {k: v.copy() for k, v in params.items()}
    for _ in range(3):
        r = X @ p["w"] + p["b"] - 1.0
        p["w"] -= lr * X.T @ r / len(X)
        p["b"] -= lr * np.mean(r)
    return np.sum(np.tanh(X @ p["w"] + p["b"]) ** 2)


def steps_on_a_dict_copy(params, X, lr=0.2):
    p = dict((k, np.array(v, dtype=float)) for k, v in params.items())
    for _ in range(2):
        p["w"] *= 1.0 - lr * np.mean(X)
        p["w"] += lr * np.sin(X.T @ np.ones(len(X)))
    return np.sum(p["w"] ** 3)


def _parameters(features):
    return {"w": R.normal(size=features) * 0.3, "b": np.array(R.normal() * 0.1)}


@pytest.mark.parametrize("f", [steps_on_a_copy, steps_on_a_dict_copy])
@pytest.mark.parametrize("rows", [1, 6])
def test_refused_by_source_differentiated_in_auto(f, rows):
    params, X = _parameters(3), R.normal(size=(rows, 3))
    kept = {k: v.copy() for k, v in params.items()}
    with pytest.raises(sg.UnsupportedError, match="'p'") as refused:
        sg.grad(f, mode="s2s")(params, X)
    assert f"{HERE}:" in str(refused.value)
    expected = numeric_grad(f, [params, X], 0)
    for mode in ("auto", "tape"):
        for _ in range(2):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = sg.grad(f, mode=mode)(params, X)
            for key in params:
                assert_close(got[key], expected[key], rtol=1e-5, atol=1e-7)
                assert_close(params[key], kept[key], rtol=0, atol=0)


@pytest.mark.parametrize("f", [steps_on_a_copy, steps_on_a_dict_copy])
def test_second_order_in_auto(f):
    params, X = _parameters(3), R.normal(size=(5, 3))

    def of_w(w):
        return f({"w": w, "b": params["b"]}, X)

    direction = R.normal(size=3)
    gradient = sg.grad(of_w, mode="tape")
    expected = numeric_jvp(gradient, [params["w"]], 0, direction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        product = sg.hvp(of_w, (params["w"],), (direction,), mode="auto")[0]
    assert_close(product, expected, rtol=1e-4, atol=1e-6)
