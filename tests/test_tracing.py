"""``sg.trace``: the generated code run line by line, each value printed as it is computed."""

import io
import re
import sys

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg


def helper(a):
    return np.tanh(a) * 2.0


def loss(w, x):
    h = x * w
    for _ in range(2):
        h = helper(h)
    return np.sum(h**2)


def _traced(transformed, *args):
    out = io.StringIO()
    result = sg.trace(transformed, file=out)(*args)
    return result, out.getvalue()


@pytest.mark.parametrize("call", ["first", "second"])
def test_trace_prints_each_adjoint_beside_the_statement_it_differentiates(call):
    rng = np.random.default_rng(1)
    w, x = rng.normal(size=3), rng.normal(size=3)
    dloss = sg.grad(loss, mode="s2s")
    if call == "second":
        dloss(w, x)
    result, text = _traced(dloss, w, x)
    assert_close(result, numeric_grad(loss, (w, x), 0))
    lines = text.splitlines()
    assert lines[0] == "dloss(w, x)"
    assert "  # grad of: return np.sum(h**2)" in lines
    assert "  # grad of: h = x * w" in lines
    backward_calls = r"\s+helper_vjp\w*_backward\(saved, \w+\)"  # names get suffixes
    assert sum(bool(re.fullmatch(backward_calls, line)) for line in lines) == 2
    printed_dw = next(line for line in lines if line.strip().startswith("dw = "))
    assert np.allclose(
        np.fromstring(printed_dw.split("[")[1].split("]")[0], sep=" "), result, atol=1e-4
    )
    assert lines[-1].strip().startswith("returns [")


def test_a_traced_first_call_leaves_specialisation_to_the_next_call():
    dloss = sg.grad(loss, mode="s2s")
    w, x = np.ones(2), np.full(2, 0.5)
    _traced(dloss, w, x)
    assert "stack.append" in sg.source(dloss)  # generic code: nothing specialised yet
    expected = dloss(w, x)
    assert_close(dloss(w, x), expected)
    assert_close(_traced(dloss, w, x)[0], expected)


def test_trace_restores_the_tracer_it_found_and_says_when_no_generated_code_ran():
    before = sys.gettrace()
    result, text = _traced(sg.grad(loss, mode="tape"), np.ones(2), np.ones(2))
    assert sys.gettrace() is before
    assert "no generated code ran" in text
    assert_close(result, sg.grad(loss, mode="s2s")(np.ones(2), np.ones(2)))
