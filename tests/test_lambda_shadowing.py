"""A lambda whose parameter has the name of one of the function's variables.

``(u, (v, c)) = pair, rest`` binds ``u`` to a copy the optimiser reads through: it made
every read of ``u`` a read of the value it copies, the reads of the lambda's own parameter
in ``sorted(y, key=lambda u: -u)`` too, and the generated code computed ``-t1`` (an array)
as each key: NumPy's "truth value of an array is ambiguous" from s2sgrad's code, in
mode="s2s" and mode="auto" (found by ``tests/program_constructs.py``, seed 1752). A lambda,
a function or a comprehension that binds the name keeps its own reads
(``optimize/facts.outer_reads_in``); its defaults still read the outer name.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

R = np.random.default_rng(29)


def sorted_by_a_shadowing_key(x, y):
    nest = {"a": [np.tanh(x), (x, 2.0)]}
    (u, (v, c)) = nest["a"][0], nest["a"][1]
    ranked = sorted(y, key=lambda u: -u)
    return np.sum((v * c + u) ** 2) * len(ranked)


def sorted_values_by_a_shadowing_key(x, y):
    nest = {"a": [np.tanh(x), (x, 2.0)]}
    (u, (v, c)) = nest["a"][0], nest["a"][1]
    order = np.array(sorted(y, key=lambda u: -u))
    return np.sum((order * v * c + u) ** 2)


def default_reading_the_outer_name(x, y):
    u, k = np.tanh(x), 2.0
    scale = lambda t, u=u: t * k  # noqa: E731 - the way people write it
    return np.sum(scale(y) * u + np.array(sorted(y, key=lambda u: abs(u))) * x)


@pytest.mark.parametrize(
    "f",
    [sorted_by_a_shadowing_key, sorted_values_by_a_shadowing_key, default_reading_the_outer_name],
)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_lambda_keeps_its_own_parameter(f, mode):
    x, y = R.normal(size=3), R.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(f, mode=mode)
        try:
            got = call_twice(gradient, x, y)
        except sg.UnsupportedError as refusal:
            # source transformation takes the lambda for a reader of the outer u (a value
            # being differentiated) and refuses it, naming the line: mode="auto" tapes it
            assert mode == "s2s" and "test_lambda_shadowing.py:" in str(refusal)
            return
    assert_close(got, numeric_grad(f, [x, y], 0))
