"""A module-level ``functools.partial(helper, k=...)`` called by the differentiated function:
source transformation differentiates ``helper`` with the bound arguments (it refused,
"partial has no source"), in reverse and forward mode and a Hessian over the gradient,
reading the partial as it is at each call: rebound, or its keywords changed, between two
calls, the derivative is the new one's. A partial made inside the function from values
being differentiated is refused as before. Oracle: central differences."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")


def helper(x, k=2.0, b=0.0):
    return np.sin(k * x) + b * x**2


SCALED = functools.partial(helper, k=3.0, b=0.5)
ANCHORED = functools.partial(helper, np.array([0.3, -0.2, 0.1]))


def through_keywords(x):
    return np.sum(SCALED(x) * x)


def through_a_bound_argument(x):
    return np.sum(ANCHORED(k=x[0]) * x)


def made_inside(x):
    kept = [functools.partial(helper, k=x[0])]
    return np.sum(kept[0](x))


def assert_grad_jvp_hvp_without_fallback(f, x, v, mode):
    taped = sg.grad(f, mode="tape")
    assert_close(taped(x), numeric_grad(f, [x], 0))
    expected_hvp = numeric_jvp(taped, [x], 0, v, step=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.errors.FallbackWarning)
        assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        assert_close(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-5)
        for _ in range(2):
            (product,) = sg.hvp(f, (x,), (v,), mode=mode)
            assert_close(product, expected_hvp, rtol=1e-4, atol=1e-6)


@pytest.fixture
def point():
    rng = np.random.default_rng(11)
    return rng.normal(size=3), rng.normal(size=3)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [through_keywords, through_a_bound_argument])
def test_a_module_partial_is_differentiated_through_its_function(f, mode, point):
    x, v = point
    assert_grad_jvp_hvp_without_fallback(f, x, v, mode)


@pytest.mark.parametrize("mode", MODES)
def test_the_partial_is_read_as_it_is_at_each_call(mode, point, monkeypatch):
    x, v = point
    gradient = sg.grad(through_keywords, mode=mode)
    tangent = functools.partial(sg.jvp, through_keywords, mode=mode)
    assert_close(call_twice(gradient, x), numeric_grad(through_keywords, [x], 0))
    monkeypatch.setattr(__import__(__name__), "SCALED", functools.partial(helper, k=-1.5))
    assert_close(call_twice(gradient, x), numeric_grad(through_keywords, [x], 0))
    assert_close(tangent((x,), (v,))[1], numeric_jvp(through_keywords, [x], 0, v), rtol=1e-5)
    monkeypatch.setitem(SCALED.keywords, "k", 0.25)  # the module's partial, changed in place
    monkeypatch.setattr(__import__(__name__), "SCALED", SCALED)
    assert_close(call_twice(gradient, x), numeric_grad(through_keywords, [x], 0))
    assert_close(tangent((x,), (v,))[1], numeric_jvp(through_keywords, [x], 0, v), rtol=1e-5)


def test_a_partial_holding_values_being_differentiated_is_still_refused(point):
    x, _ = point
    with pytest.raises(sg.UnsupportedError, match="functools.partial") as refused:
        sg.grad(made_inside, mode="s2s")(x)
    assert "test_module_partials_in_s2s.py:" in str(refused.value)
