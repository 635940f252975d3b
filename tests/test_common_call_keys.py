"""Repeated pure calls are keyed by ``common.dumped_structure``, the structure
``gast.dump`` shows, as tuples: two calls get the same key exactly where their dumps are
the same text, so the calls merged are those merged when the dumps were the keys."""

import itertools

import gast
import numpy as np

import s2sgrad as sg
from s2sgrad.compiler.optimize.common import dumped_structure

CALLS = [
    "np.exp(z)",
    "np.exp(y)",
    "np.exp(z, out=None)",
    "np.sum(z, axis=0)",
    "np.sum(z, axis=0.0)",
    "np.sum(z, axis=False)",
    "np.sum(z, axis=-0.0)",
    "np.sum(z, axis=(0, 1))",
    "np.sum(z, axis=[0, 1])",
    "np.sum(z, axis=())",
    "np.sum(z, axis=[])",
    "np.sum(z, axis=None)",
    "np.sum(z, 'a')",
    "np.sum(z, b'a')",
    "t.sum()",
    "t.sum(keepdims=True)",
    "(a + b).sum()",
    "(a - b).sum()",
    "np.linalg.norm(z)",
    "np.exp(-1.0)",
    "np.exp(float('nan'))",
]


def _expression(text):
    return gast.parse(text, mode="eval").body


def test_keys_are_equal_where_dumps_are():
    nodes = [_expression(text) for text in CALLS]
    nodes.append(_expression("np.exp(z)"))  # the same call, parsed again
    nan = _expression("np.exp(1.0)")
    nan.args[0].value = float("nan")
    nodes += [nan, _expression("np.exp(1.0)")]
    nodes[-1].args[0].value = float("nan")
    absent = _expression("np.exp(z)")
    del absent.args[0].type_comment
    nodes.append(absent)
    for a, b in itertools.combinations_with_replacement(nodes, 2):
        assert (dumped_structure(a) == dumped_structure(b)) == (gast.dump(a) == gast.dump(b)), (
            gast.dump(a)
        )
    assert len({dumped_structure(n) for n in nodes}) == len({gast.dump(n) for n in nodes})


def repeated(x):
    a = np.exp(x) * np.sum(x, axis=0)
    b = np.exp(x) + np.sum(x, axis=0)
    return np.sum(a * b)


def test_repeated_calls_are_computed_once_and_gradients_match_differences():
    x = np.random.default_rng(5).standard_normal(4)
    gradient = sg.grad(repeated, mode="s2s")
    actual = gradient(x)
    step = 1e-6
    expected = [(repeated(x + step * e) - repeated(x - step * e)) / (2 * step) for e in np.eye(4)]
    assert np.allclose(actual, expected, rtol=1e-6, atol=1e-8)
    code = [line for line in sg.source(gradient).splitlines() if not line.strip().startswith("#")]
    assert sum(line.count("np.exp(x)") for line in code) == 1, code
