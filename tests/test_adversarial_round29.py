"""Programs from round 29's adversarial hunt that were silently wrong or crashed.

* ``f.__kwdefaults__["p"] = 5.0`` changes a keyword-only default in place, without
  replacing the dict; the derivative bakes the defaults into its signature, so it must be
  made again (it kept the old default and its gradient was of the old program).
* ``b.flat[0] = x`` on the tape: NumPy's flat iterator turns the tape's refusal to give
  ``float(x)`` into a bare ``ValueError`` ("Error setting single item of array"), which
  reached the user; the refusal itself, naming the line, is raised now.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")


def _scaled(x, *, p=2.0):
    return np.sum(np.sin(x) * x) * p


def _calls_a_helper_with_a_keyword_default(x):
    return _helper_with_a_keyword_default(x) + np.sum(x)


def _helper_with_a_keyword_default(x, *, p=2.0):
    return np.sum(x**2) * p


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f, owner",
    [(_scaled, _scaled), (_calls_a_helper_with_a_keyword_default, _helper_with_a_keyword_default)],
    ids=["own", "helper's"],
)
def test_a_keyword_default_changed_in_place_is_seen(f, owner, mode):
    x = np.random.default_rng(0).standard_normal(4)
    df = sg.grad(f, mode=mode)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(call_twice(df, x), numeric_grad(f, [x], 0))
            owner.__kwdefaults__["p"] = -3.5
            assert_close(call_twice(df, x), numeric_grad(f, [x], 0))
    finally:
        owner.__kwdefaults__["p"] = 2.0


def test_a_keyword_default_changed_in_place_is_seen_by_forward_mode():
    x = np.random.default_rng(1).standard_normal(3)
    v = np.random.default_rng(2).standard_normal(3)
    try:
        sg.jvp(_scaled, (x,), (v,), mode="s2s")
        _scaled.__kwdefaults__["p"] = 0.5
        _, tangent = sg.jvp(_scaled, (x,), (v,), mode="s2s")
        np.testing.assert_allclose(tangent, numeric_jvp(_scaled, [x], 0, v), rtol=1e-6)
    finally:
        _scaled.__kwdefaults__["p"] = 2.0


def _writes_through_flat(x):
    b = np.zeros(5)
    b.flat[0] = x
    return np.sum(b * b)


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_an_item_written_through_flat_on_the_tape_is_refused_with_its_line(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.S2SGradError, match="element of a plain array") as refused:
            sg.grad(_writes_through_flat, mode=mode)(0.7)
    assert f"{__file__}:" in str(refused.value)


def test_an_item_written_through_flat_is_refused_by_forward_mode_on_the_tape():
    with pytest.raises(sg.S2SGradError) as refused:
        sg.jvp(_writes_through_flat, (0.7,), (1.0,), mode="tape")
    assert f"{__file__}:" in str(refused.value)
