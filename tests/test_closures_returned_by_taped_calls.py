"""A function that a call differentiated on the tape returns, holding values being
differentiated (``reduce(combiner(y), items)``, ``combiner`` returning a lambda over ``y``,
which source transformation cannot make a derivative of): the derivative of what it holds
cannot come back through the call, and mode "auto" took ``y`` for a constant (a gradient,
jvp and hvp of zero in ``y``). The dispatch now refuses such a result, and mode "auto" takes
the whole function to the tape.
"""

from __future__ import annotations

import warnings
from functools import reduce

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_hvp_matches_differences,
    call_twice,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg

RNG = np.random.default_rng(1409)


def combiner(w):
    return lambda a, b: a * b * w


def folded_with_a_made_closure(x, y):
    return np.sum(reduce(combiner(y), [x, x, x]))


def test_refused_by_source_transformation_and_right_in_auto():
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    f = folded_with_a_made_closure
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.grad(f, wrt=1, mode="s2s")(x, y)
    assert f"{__file__}:" in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = call_twice(sg.grad(f, wrt=(0, 1), mode="auto"), x, y)
        _, tangent = sg.jvp(f, (x, y), (y, x), mode="auto")
    assert_close(gradient[0], numeric_grad(f, [x, y], 0))
    assert_close(gradient[1], numeric_grad(f, [x, y], 1))
    assert_close(tangent, numeric_jvp(lambda t: f(x + t * y, y + t * x), [0.0], 0, 1.0))
    assert_hvp_matches_differences(f, (x, y), mode="auto")
