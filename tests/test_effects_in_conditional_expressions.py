"""Effects inside expressions evaluated in part, and calls whose effect is their point.

``items.append(v) if c else None`` (its value unused) runs as the ``if`` statement it
means, so the append is differentiated (it was skipped: a wrong gradient). ``a or b``
evaluates ``a`` once (the normal form evaluated it again for the value: an effect twice,
a second random draw). ``items.append(v)`` whose value is used (``t = items.append(v)``,
in a comprehension) and ``x.__imul__(s)`` (an operator called by name) are refused by
source transformation rather than differentiated as if nothing changed; forward mode
refuses a write into what ``np.einsum`` returns, which may be a view, as reverse mode does.
"""

import os
import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp, call_twice, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")
HERE = os.path.basename(__file__)
SHAPES = [(3,), (2, 3), (4,)]


def appended_in_a_branch(x):
    items = []
    items.append(np.sin(x) * x) if x.size else None
    items.append(x**3) if x.size > 100 else items.append(np.exp(x))
    return np.sum(items[0] * items[1])


def appended_after_or(x):
    items = [x]
    len(items) > 5 or items.append(np.cos(x) * x)
    len(items) > 1 and items.append(x**2)
    return np.sum(items[-1] * items[1])


@pytest.mark.parametrize("f", [appended_in_a_branch, appended_after_or], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
def test_an_effect_in_a_branch_of_an_unused_expression_is_differentiated(f, shape, mode):
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(size=shape)
    v = rng.normal(size=shape)
    assert_grad_jvp_and_hvp(f, x, v, mode)


counted: list = []


def noted(value):
    counted.append(1)
    return value


def noted_or_one(x):
    return noted(np.sum(x**2)) or 1.0


def drawn_or_one(x):
    rng = np.random.default_rng(3)
    s = np.sum(x * rng.normal(size=x.shape)) or 1.0
    return s * 2.0


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
def test_the_first_operand_of_or_is_evaluated_once(shape, mode):
    x = np.random.default_rng(len(shape)).normal(size=shape)
    counted.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(sg.grad(noted_or_one, mode=mode)(x), 2 * x)
        assert len(counted) == 1
        draw = np.random.default_rng(3).normal(size=shape)
        assert_close(call_twice(sg.grad(drawn_or_one, mode=mode), x), 2.0 * draw)


def append_used_as_a_value(x):
    items = []
    done = items.append(np.sin(x))
    return np.sum(items[0] * x) if done is None else 0.0


def appends_in_a_comprehension(x):
    items = []
    [items.append(v**2) for v in x.ravel()]
    return sum(items)


def operator_called_by_name(x):
    y = x * 1.0
    y.__imul__(2.0)
    return np.sum(y * x)


@pytest.mark.parametrize(
    "f",
    [append_used_as_a_value, appends_in_a_comprehension, operator_called_by_name],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_change_the_sweeps_do_not_see_is_refused_by_source_transformation(f, shape):
    x = np.random.default_rng(5).normal(size=shape)
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.grad(f, mode="s2s")(x)
    assert f"{HERE}:" in str(refused.value)
    with pytest.raises(sg.UnsupportedError):
        sg.jvp(f, (x,), (np.ones_like(x),), mode="s2s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = sg.grad(f, mode="auto")(x)
        except sg.S2SGradError:
            return  # the tape refuses it too
    assert_close(got, numeric_grad(f, [x], 0), rtol=1e-5)


def written_through_einsum(x):
    y = np.zeros((x.size, x.size))
    np.einsum("ii->i", y)[:] = x**2
    return np.sum(y * np.outer(x, x))


@pytest.mark.parametrize("mode", MODES)
def test_forward_mode_refuses_a_write_into_what_einsum_returns(mode):
    x = np.random.default_rng(2).normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.S2SGradError) as refused:
            sg.jvp(written_through_einsum, (x,), (np.ones(3),), mode=mode)
    assert f"{HERE}:" in str(refused.value)
