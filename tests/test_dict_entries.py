"""Entries written into a dict the function made (``p = dict(params); p["W"] = ...``):
source transformation rebinds the name to a new dict with the entry
(``compiler/passes/dict_entries.py``, ``runtime/dict_entries.py``). It refused them
before, as an update of an array that may share memory, which mode="auto" did not hand to
the tape either. Each program is checked against central differences in all three modes,
on a first and a later call, with forward mode and a Hessian-vector product."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, directional_derivative, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
R = np.random.default_rng(31)


def _model(p, x):
    return np.sum(np.tanh(x @ p["W"] + p["b"]) ** 2)


def overridden_copy(params, x):
    p = dict(params)
    p["W"] = p["W"] * 2.0
    p["b"] = p["b"] + 1.0
    return _model(p, x)


def filled_in_a_loop(params, x):
    scaled = {}
    for name in ["W", "b"]:
        scaled[name] = params[name] * 0.5
    scaled["b"] = scaled["b"] + np.sum(x)
    return _model(scaled, x)


def _written_in_a_branch(params, x, flag):
    p = {"W": params["W"], "b": params["b"]}
    if flag > 0:
        p["W"] = np.sin(p["W"])
    else:
        p["b"] = p["b"] ** 2
    total = 0.0
    for key in p:  # iterated only after the last write
        total = total + np.sum(p[key] ** 2)
    return total + _model(p, x)


def written_in_a_branch_taken(params, x):
    return _written_in_a_branch(params, x, 1)


def written_in_a_branch_not_taken(params, x):
    return _written_in_a_branch(params, x, -1)


def updated_with_literal_entries(params, x):
    p = dict(params)
    p.update({"W": p["W"] * 2.0}, b=p["W"][0] + p["b"])  # both read the old p
    return _model(p, x)


def spread_with_an_entry(params, x):
    return _model({**params, "W": params["W"] * 2.0}, x)


def copy_with_a_keyword(params, x):
    return _model(dict(params, b=params["b"] - 1.0), x)


def from_pairs_with_a_repeated_key(params, x):
    pairs = [("W", params["W"] * 2.0), ("b", params["b"]), ("W", np.sin(params["W"]))]
    return _model(dict(pairs), x)  # dict keeps the last "W": the first gets no derivative


def keys_listed_in_reverse(params, x):
    p = {"W": params["W"] * 1.5, "b": np.sin(params["b"])}
    total = 0.0
    for key in list(p.keys())[::-1]:  # the keys in a list: no derivative, no refusal
        total = total + np.sum(p[key] ** 2)
    return total + _model(p, x)


def new_key_added(params, x):
    p = dict(params)
    p["scale"] = np.sum(params["W"] ** 2)
    return _model(p, x) * p["scale"]


PROGRAMS = [
    overridden_copy,
    filled_in_a_loop,
    written_in_a_branch_taken,
    written_in_a_branch_not_taken,
    updated_with_literal_entries,
    spread_with_an_entry,
    copy_with_a_keyword,
    from_pairs_with_a_repeated_key,
    keys_listed_in_reverse,
    new_key_added,
]


def _params():
    return {"W": R.normal(size=(3, 2)) * 0.5, "b": R.normal(size=2)}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("function", PROGRAMS)
def test_written_entries_differentiate(function, mode):
    args = (_params(), R.normal(size=(4, 3)))
    expected = [numeric_grad(function, args, i) for i in (0, 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(function, wrt=(0, 1), mode=mode)
        for _ in ("first call", "later call"):
            got = gradient(*args)
            for position in (0, 1):
                assert_close(got[position], expected[position], 1e-5, 1e-6)
        along = R.normal(size=args[1].shape)
        still = {key: np.zeros_like(value) for key, value in args[0].items()}
        _, tangent = sg.jvp(function, args, (still, along), mode=mode)
        assert_close(tangent, numeric_jvp(function, args, 1, along), 1e-5, 1e-6)
        product = sg.hvp(function, args, (still, along), mode=mode)[1]
        tape_gradient = sg.grad(function, wrt=1, mode="tape")

        def of_x(x):
            return tape_gradient(args[0], x)

        assert_close(product, directional_derivative(of_x, args[1], along), 1e-4, 1e-6)


def aliased_before_written(params, x):
    p = dict(params)
    q = p  # q sees the write below: a new dict for p would not be what q holds
    p["W"] = p["W"] * 2.0
    return _model(q, x)


def updated_by_a_method(params, x):
    p = dict(params)
    p.update(params)  # another dict's entries: which keys is not known here
    return _model(p, x)


@pytest.mark.parametrize("function", [aliased_before_written, updated_by_a_method])
def test_dicts_other_names_may_see_stay_refused_by_source_and_taped_in_auto(function):
    args = (_params(), R.normal(size=(4, 3)))
    with pytest.raises(sg.UnsupportedError, match=r"test_dict_entries\.py:\d+") as refused:
        sg.grad(function, mode="s2s")(*args)
    assert "array" not in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(function, wrt=1, mode="auto")(*args)
    assert_close(got, numeric_grad(function, args, 1), 1e-5, 1e-6)


def test_the_generated_code_rebinds_the_dict():
    source = sg.source(sg.grad(overridden_copy))
    assert "with_entry(p, 'W'" in source
