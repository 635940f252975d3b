"""A helper called for its effect that puts a value being differentiated where the caller
reads it back: a global list or dict, a global array, through another helper.

``remember(x * 2); return np.sum(CACHE[0] ** 2)``: the call's result is unused, so the
sweeps keep it as it is and the read of ``CACHE[0]`` looks like a constant; the gradient
would silently be zero. Source transformation refuses such a call unless the helper is
known to change nothing outside itself (a logging helper that only prints), so mode "auto"
gives the function to the tape, which follows the value (and refuses, as the transformer
does, a write into a plain global array).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_refused_in_s2s_and_taped_in_auto, call_twice

import s2sgrad as sg
from s2sgrad.compiler.effects import changes_state

HERE = __file__
CACHE: list = []
TABLE: dict = {}
BUFFER = np.zeros(3)


def remember(v):
    CACHE.clear()
    CACHE.append(v)


def file_away(v):
    TABLE["v"] = v


def copy_into_buffer(v):
    BUFFER[:] = v


def set_entry(d, v):
    d.__setitem__("v", v)


def remember_tripled(v):
    remember(v * 3.0)


def report(v):
    print("norm", np.sqrt(np.sum(v**2)))


def through_global_list(x):
    remember(x * 2.0)
    return np.sum(CACHE[0] ** 2)


def through_global_dict(x):
    file_away(np.sin(x))
    return np.sum(TABLE["v"] * x)


def through_global_array(x):
    copy_into_buffer(x * 2.0)
    return np.sum(BUFFER**2)


def through_a_helper_of_a_helper(x):
    remember_tripled(x)
    return np.sum(CACHE[0] ** 2)


def through_setitem_of_an_argument(x):
    d = {"v": x}
    set_entry(d, x * 3.0)
    return np.sum(d["v"] ** 2)


REFUSED = [
    through_global_list,
    through_global_dict,
    through_a_helper_of_a_helper,
    through_setitem_of_an_argument,
]


@pytest.mark.parametrize("f", REFUSED, ids=lambda f: f.__name__)
def test_a_helper_storing_a_differentiated_value_is_refused_and_taped_in_auto(f):
    x = np.array([0.3, -0.7, 1.2])
    expected = assert_refused_in_s2s_and_taped_in_auto(
        f, (x,), "can only matter by what it changes", HERE
    )
    assert np.abs(expected).max() > 0.1  # the path the sweeps would have dropped


def test_a_helper_writing_into_a_global_array_is_refused_in_every_mode():
    x = np.array([0.3, -0.7, 1.2])
    for mode in ("s2s", "auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(sg.S2SGradError) as refused:
                sg.grad(through_global_array, mode=mode)(x)
        assert f"{HERE}:" in str(refused.value)


def only_reports(x):
    report(x)
    return np.sum(x**2)


def test_a_helper_that_only_prints_is_kept(capsys):
    x = np.array([0.3, -0.7, 1.2])
    df = sg.grad(only_reports, mode="s2s")
    assert_close(call_twice(df, x), 2 * x)
    assert "norm" in capsys.readouterr().out


def test_changes_state_reads_the_helpers_own_source_and_those_it_calls():
    assert changes_state(remember) and changes_state(file_away)
    assert changes_state(copy_into_buffer) and changes_state(set_entry)
    assert changes_state(remember_tripled)
    assert not changes_state(report)
