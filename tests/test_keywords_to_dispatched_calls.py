"""A value being differentiated passed by name to a call resolved when it runs (``affine(
*args, w=y)``, ``fn(r, c=y)`` for ``fn`` from a list): generated code passes it last, by
position, to ``keywords_at_the_end(affine, ("w",))``, and the dispatch binds it back to the
parameter it names, so it gets its cotangent and tangent. (Source transformation refused
it: "pass differentiated values to affine positionally, not as 'w='".) A parameter taken
by keyword only stays refused in mode "s2s", and is differentiated on the tape in "auto".
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_grad_jvp_and_hvp_of_two,
    call_twice,
    numeric_grad,
)

import s2sgrad as sg
from s2sgrad.runtime.keyword_arguments import by_position, keywords_at_the_end

RNG = np.random.default_rng(1403)


def affine(a, w=1.0, *, shift=0.25):
    return a * w + shift


def waves(a, b=2.0, c=0.5):
    return np.sin(a * b) + c * a


def keyword_only(a, *, w):
    return np.sin(a) * w


def starred_with_a_keyword(x, y):
    args = [np.tanh(x)]
    return np.sum(np.tanh(affine(*args, w=y)) * x[0])


def defaults_before_the_keyword(x, y):
    args = [x * y]
    r = waves(*args, c=np.sin(y)) + waves(*args, b=y, c=x)
    return np.sum(r**2)


def functions_from_a_list_by_keyword(x, y):
    r = x
    for fn in [waves, waves]:
        r = fn(r, c=y)
    return np.sum(np.sin(r))


def numpy_functions_by_keyword(x, y):
    args = [x]
    return np.sum(np.clip(*args, a_min=-0.3, a_max=y + 1.0) ** 2) + np.sum(
        np.tensordot(*args, b=y * x, axes=1) * x
    )


PROGRAMS = [
    starred_with_a_keyword,
    defaults_before_the_keyword,
    functions_from_a_list_by_keyword,
    numpy_functions_by_keyword,
]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("size", [1, 4])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_gradient_jvp_and_hvp(f, size, mode):
    x, y = RNG.uniform(-1, 1, size), RNG.uniform(-1, 1, size)
    v = RNG.normal(size=size)
    assert_grad_jvp_and_hvp_of_two(f, x, y, v, mode, seed=size)


def test_the_call_made_by_position():
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    call = keywords_at_the_end(waves, ("c",))
    assert_close(call(x, y), waves(x, c=y))
    function, args, keywords, picks = by_position(call, (x, y), {})
    assert function is waves and keywords == {} and picks == (0, 2)
    assert args[1] == 2.0 and args[2] is y
    source = sg.source(sg.grad(starred_with_a_keyword, wrt=1, mode="s2s"))
    assert "keywords_at_the_end(affine, ('w',))" in source


def keyword_only_from_a_list(x, y):
    r = x
    for fn in [keyword_only]:
        r = fn(r, w=y)
    return np.sum(r**2)


def keyword_only_starred(x, y):
    args = [x]
    return np.sum(keyword_only(*args, w=y) ** 2)


@pytest.mark.parametrize("f", [keyword_only_from_a_list, keyword_only_starred])
def test_a_keyword_only_parameter(f):
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    with pytest.raises(sg.UnsupportedError, match="'w='") as refused:
        sg.grad(f, wrt=1, mode="s2s")(x, y)
    assert f"{__file__}:" in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mode "auto" says it falls back to the tape
        gradient = call_twice(sg.grad(f, wrt=(0, 1), mode="auto"), x, y)
    assert_close(gradient[1], numeric_grad(f, [x, y], 1))
    assert_close(gradient[0], numeric_grad(f, [x, y], 0))
