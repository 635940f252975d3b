"""``old = dict(params); params[k] = ...`` (and ``old = list(ps); ps[i] = ...``): the copy
is a new container that replacing an entry of the original does not change, so source
transformation differentiates it (it refused, telling the user to write the very copy
they had written); a name that holds the original itself is still refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")


def dict_copy_then_entry_written(x):
    params = {"a": np.sin(x), "b": x * 2.0}
    old = dict(params)
    params["a"] = params["a"] * x
    return np.sum(params["a"] * old["a"] + np.cos(old["b"]))


def list_copy_then_entry_written(x):
    ps = [np.sin(x), x * 2.0]
    old = list(ps)
    ps[0] = ps[0] * x
    return np.sum(ps[0] * old[0] + np.cos(old[1]))


def aliased_then_entry_written(x):
    ps = [np.sin(x), x * 2.0]
    same = ps
    ps[0] = ps[0] * x
    return np.sum(ps[0] * same[0])


def assert_no_fallback_grad_jvp_hvp(f, x, v, mode, second_order=True):
    """grad (twice), jvp and hvp of ``f`` in ``mode`` against central differences, a
    fallback to the tape an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.errors.FallbackWarning)
        assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        assert_close(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-5)
        if second_order:
            (product,) = sg.hvp(f, (x,), (v,), mode=mode)
            expected = numeric_jvp(sg.grad(f, mode="tape"), [x], 0, v, step=1e-5)
            assert_close(product, expected, rtol=1e-4, atol=1e-6)


@pytest.fixture
def point():
    rng = np.random.default_rng(7)
    return rng.normal(size=(2, 3)), rng.normal(size=(2, 3))


@pytest.mark.parametrize("mode", MODES)
def test_a_dict_copied_before_an_entry_is_written(mode, point):
    x, v = point
    assert_no_fallback_grad_jvp_hvp(dict_copy_then_entry_written, x, v, mode)


@pytest.mark.parametrize("mode", MODES)
def test_a_list_copied_before_an_entry_is_written(mode, point):
    x, v = point  # (its Hessian in s2s is refused still: the derivative reads the copy)
    assert_no_fallback_grad_jvp_hvp(list_copy_then_entry_written, x, v, mode, mode == "tape")


def test_a_name_holding_the_list_itself_is_still_refused(point):
    x, _ = point
    with pytest.raises(sg.UnsupportedError, match="'same', read afterwards") as refused:
        sg.grad(aliased_then_entry_written, mode="s2s")(x)
    assert "test_copies_kept_before_entry_writes.py:" in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.errors.FallbackWarning)
        got = call_twice(sg.grad(aliased_then_entry_written, mode="auto"), x)
    assert_close(got, numeric_grad(aliased_then_entry_written, [x], 0))
