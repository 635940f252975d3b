"""Programs from round 29's adversarial hunt that were silently wrong or crashed.

* ``f.__kwdefaults__["p"] = 5.0`` changes a keyword-only default in place, without
  replacing the dict; the derivative bakes the defaults into its signature, so it must be
  made again (it kept the old default and its gradient was of the old program).
* ``b.flat[0] = x`` on the tape: NumPy's flat iterator turns the tape's refusal to give
  ``float(x)`` into a bare ``ValueError`` ("Error setting single item of array"), which
  reached the user; the refusal itself, naming the line, is raised now.
"""

from __future__ import annotations

import copy
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


# --- tuple assignments writing items, in Python's order ------------------------------------

_W = np.arange(6.0) + 1.0


def _swaps_halves_through_views(x):
    b = x.copy()
    b[:3], b[3:] = b[3:], b[:3]  # NumPy: b[3:] is then written from the changed b[:3]
    return np.sum(b * _W)


def _swaps_named_views(x):
    b = x.copy()
    p, q = b[3:], b[:3]
    b[:3], b[3:] = p, q
    return np.sum(b * _W)


def _swaps_between_two_arrays(x):
    b = x.copy()
    c = x.copy() * 3.0
    b[:3], c[:3] = c[:3], b[:3]
    return np.sum(b * _W) + np.sum(c * _W * 2)


def _rolls_by_a_tuple(x):
    b = x.copy()
    b[1:], b[0] = b[:-1], b[-1]  # b[-1] of a vector is a number: the old last element
    return np.sum(b * _W)


def _swap_in_place(b):
    b[:3], b[3:] = b[3:], b[:3]


def _swaps_in_a_helper(x):
    b = x.copy()
    _swap_in_place(b)
    return np.sum(b * _W)


def _swap_two_items(b):
    b[0], b[1] = b[1], b[0]


def _swaps_items_in_a_helper(x):
    b = x * 1.0
    _swap_two_items(b)
    return np.sum(b * _W)


@pytest.mark.parametrize(
    "f",
    [
        _swaps_halves_through_views,
        _swaps_named_views,
        _swaps_between_two_arrays,
        _rolls_by_a_tuple,
        _swaps_in_a_helper,
        _swaps_items_in_a_helper,
    ],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("mode", MODES)
def test_a_tuple_assignment_writing_items_is_right_or_refused(f, mode):
    x = np.random.default_rng(3).standard_normal(6)
    expected = numeric_grad(f, [x], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = call_twice(sg.grad(f, mode=mode), x)
        except sg.S2SGradError as error:
            assert mode != "auto" or f is _swaps_named_views, error  # auto: one engine takes it
            assert f"{__file__}:" in str(error)
            return
    assert_close(got, expected)


@pytest.mark.parametrize("f", [_swaps_halves_through_views, _swaps_in_a_helper, _rolls_by_a_tuple])
def test_a_tuple_assignment_writing_items_in_forward_mode(f):
    x = np.random.default_rng(4).standard_normal(6)
    v = np.random.default_rng(5).standard_normal(6)
    _, tangent = sg.jvp(f, (x,), (v,), mode="s2s")
    np.testing.assert_allclose(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-6, atol=1e-8)


def _keeps_the_last_element_then_shifts(x):
    b = x.copy()
    v = b[-1]  # a number of its own (b is a vector), not a view
    b[1:] = b[:-1]
    b[0] = v
    return np.sum(b * _W) + np.sum(b**2)


def _keeps_a_row_then_shifts(x):
    b = x.reshape(2, 3).copy()
    v = b[1]  # a view: it sees the write below
    b[1] = b[0] * 2.0
    b[0] = v
    return np.sum(b * _W.reshape(2, 3)) + np.sum(b**2)


@pytest.mark.parametrize("f", [_keeps_the_last_element_then_shifts, _keeps_a_row_then_shifts])
def test_an_element_read_before_a_write_keeps_its_value(f):
    x = np.random.default_rng(6).standard_normal(6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode in MODES:
            assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
        v = np.random.default_rng(7).standard_normal(6)
        hv = sg.hvp(f, (x,), (v,), mode="s2s")[0]
        expected = numeric_jvp(sg.grad(f, mode="tape"), [x], 0, v)
        np.testing.assert_allclose(hv, expected, rtol=1e-5, atol=1e-7)


# --- copy.copy / copy.deepcopy of a tape value own their memory ---------------------------


def _scales_a_deep_copy(x):
    q = copy.deepcopy(x)
    q *= 3.0
    return np.sum(x**2) + np.sum(q * x)


def _scales_an_entry_of_a_deep_copy(p):
    q = copy.deepcopy(p)
    q["a"] *= 3.0
    return np.sum(p["a"] ** 2) + np.sum(q["a"] * p["b"])


def _scales_a_copy(x):
    q = copy.copy(x)
    q[1:] *= 2.0
    return np.sum(x**2) + np.sum(q * x)


@pytest.mark.parametrize("f", [_scales_a_deep_copy, _scales_a_copy], ids=lambda f: f.__name__)
def test_a_copy_made_by_the_copy_module_is_changed_alone_on_the_tape(f):
    x = np.random.default_rng(9).standard_normal(4)
    assert_close(call_twice(sg.grad(f, mode="tape"), x), numeric_grad(f, [x], 0))
    v = np.random.default_rng(10).standard_normal(4)
    _, tangent = sg.jvp(f, (x,), (v,), mode="tape")
    np.testing.assert_allclose(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-6, atol=1e-8)


def test_an_entry_of_a_deep_copied_dict_is_changed_alone_on_the_tape():
    rng = np.random.default_rng(11)
    p = {"a": rng.standard_normal(3), "b": rng.standard_normal(3)}

    def on_copies(p):
        return _scales_an_entry_of_a_deep_copy({k: v.copy() for k, v in p.items()})

    got = sg.grad(_scales_an_entry_of_a_deep_copy, mode="tape")({k: v.copy() for k, v in p.items()})
    assert_close(got, numeric_grad(on_copies, [p], 0))


# --- a helper changing its argument through a nested def -----------------------------------


def _writes_through_a_nested_def(a):
    def inner(v):
        v[0] = v[1] * 2.0

    inner(a)


def _calls_a_helper_with_a_nested_writer(x):
    b = x.copy()
    _writes_through_a_nested_def(b)
    return np.sum(b**2 * np.arange(1.0, 5.0))


@pytest.mark.parametrize("mode", MODES)
def test_a_helper_writing_through_a_nested_def_is_right_or_refused(mode):
    f = _calls_a_helper_with_a_nested_writer
    x = np.random.default_rng(12).standard_normal(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = call_twice(sg.grad(f, mode=mode), x)
        except sg.UnsupportedError as error:  # s2s: the change named, at the call
            assert mode == "s2s" and f"{__file__}:" in str(error), error
            assert "may change its argument" in str(error)
            return
    assert_close(got, numeric_grad(f, [x], 0))


def test_a_helper_writing_through_a_nested_def_is_refused_in_forward_mode():
    x = np.random.default_rng(13).standard_normal(4)
    with pytest.raises(sg.UnsupportedError, match="may change its argument"):
        sg.jvp(_calls_a_helper_with_a_nested_writer, (x,), (np.ones(4),), mode="s2s")
