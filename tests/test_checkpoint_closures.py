"""A checkpointed function that reads a value being differentiated from its closure (or a
default, or its object's attributes) besides its arguments.

Its recomputing derivative pulls back over the arguments alone, so on the tape the path
through the closure was lost: a silently wrong gradient in modes "auto" and "tape". Such a
call now runs as written for the tape to record (correct, without the memory saving);
source transformation refuses the function defined in the differentiated one.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg


def closure_read_by_checkpointed_block(x):
    @sg.checkpoint
    def block(v):
        return np.sin(v) * x

    return np.sum(block(x) ** 2)


def default_read_by_checkpointed_block(x):
    block = sg.checkpoint(lambda v, w=x * 2.0: np.tanh(v * w))
    return np.sum(block(x))


class Scale:
    def __call__(self, v):
        return v * self.w


def attribute_read_by_checkpointed_layer(x):
    layer = Scale()
    layer.w = np.cos(x)
    return np.sum(sg.checkpoint(layer)(x) ** 2)


@pytest.mark.parametrize("mode", ["auto", "tape"])
@pytest.mark.parametrize(
    "f",
    [
        closure_read_by_checkpointed_block,
        default_read_by_checkpointed_block,
        attribute_read_by_checkpointed_layer,
    ],
    ids=lambda f: f.__name__,
)
def test_what_a_checkpointed_function_captures_carries_its_derivative(f, mode):
    x = np.array([0.3, -0.7, 1.2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call_twice(sg.grad(f, mode=mode), x)
    assert_close(got, numeric_grad(f, (x,), 0), rtol=1e-5)
