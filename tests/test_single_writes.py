"""An accumulation into zeros that reaches each item once is an assignment
(``specialize/single_writes.py``): right against central differences in every mode (a
convolution helper, whose kernel gradient is written item by item), and left alone where
an item may be written twice."""

from __future__ import annotations

import warnings

import gast
import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.specialize.single_writes import assign_single_writes

RNG = np.random.default_rng(31)


def conv(x, kernel):
    kh, kw, _, _ = kernel.shape
    oh = x.shape[1] - kh + 1
    ow = x.shape[2] - kw + 1
    out = 0.0
    for i in range(kh):
        for j in range(kw):
            out = out + x[:, i : i + oh, j : j + ow, :] @ kernel[i, j]
    return out


def loss(kernel, x):
    return np.sum(np.tanh(conv(x, kernel)) ** 2)


def test_gradient_against_differences():
    kernel, x = RNG.standard_normal((2, 3, 2, 2)), RNG.standard_normal((2, 4, 5, 2))
    expected = numeric_grad(loss, (kernel, x), 0)
    for mode in ("s2s", "auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(call_twice(sg.grad(loss, mode=mode), kernel, x), expected, rtol=1e-6)


def test_the_kernel_gradient_is_assigned_item_by_item():
    kernel, x = RNG.standard_normal((2, 3, 2, 2)), RNG.standard_normal((2, 4, 5, 2))
    gradient = sg.grad(loss, mode="s2s")
    call_twice(gradient, kernel, x)
    code = sg.source(gradient)
    assert "dkernel[i, j] = " in code and "dkernel[i, j] +=" not in code, code


def rewritten(source: str) -> str:
    module = gast.parse(source)
    assign_single_writes(module.body[0])
    return gast.unparse(module).strip()


NEST = (
    "def f(e):\n    d = np.zeros((3, 4, 2))\n    for i in reversed(range(3)):\n"
    "        for j in range(4):\n            d[i, j] += e\n    return d"
)


def test_the_rewrite():
    assert "d[i, j] = e" in rewritten(NEST)


@pytest.mark.parametrize(
    "source",
    [
        NEST.replace("range(4)", "range(5)"),  # longer than the axis
        NEST.replace("d[i, j] += e", "d[i, 0] += e"),  # the same item for every j
        NEST.replace("d[i, j] += e", "d[j, i] += e").replace("range(3)", "range(4)"),
        NEST.replace("d[i, j] += e", "d[i, j] += e\n            d[i, j] += e"),
        NEST.replace("    return d", "    d[0, 0] += e\n    return d"),
        NEST.replace("    return d", "    g(d)\n    return d"),  # read elsewhere
        NEST.replace("np.zeros((3, 4, 2))", "np.ones((3, 4, 2))"),
        NEST.replace(
            "        for j in range(4):\n", "        for j in range(4):\n            j = 0\n"
        ),
        NEST.replace(
            "    d = np.zeros((3, 4, 2))\n    for i",
            "    d = np.zeros((3, 4, 2))\n    for k in range(2):\n      for i",
        )
        .replace("        for j", "          for j")
        .replace("            d[i, j]", "              d[i, j]"),
    ],
)
def test_left_alone_where_an_item_may_be_written_twice(source):
    assert "+=" in rewritten(source)


def test_a_nest_in_a_function_defined_inside_is_rewritten_and_straight_line_code_left():
    inner = "def outer(e):\n" + "\n".join("    " + line for line in NEST.splitlines())
    inner += "\n    return f(e)"
    assert "d[i, j] = e" in rewritten(inner)  # the body has a def: its loops are looked at
    straight = "def f(e):\n    d = np.zeros((3, 4))\n    d[0, 1] += e\n    return d"
    module = gast.parse(straight)
    assert not assign_single_writes(module.body[0])  # no loop at all: nothing to look at
