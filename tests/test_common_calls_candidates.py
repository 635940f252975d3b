"""Common calls (``optimize/common.py``) judge as candidates only the calls whose rough key
another assignment shares: a call no other one can equal is neither merged nor merged
into, and judging it (its purity, a dump of its whole tree) was most of the pass once
one repeat was found. What is merged, and the gradients, are as before."""

from __future__ import annotations

import gast
import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.optimize import common
from s2sgrad.compiler.purity import purity_of

IS_PURE = purity_of({"np": np})
RNG = np.random.default_rng(1919)


def _judged(monkeypatch) -> list:
    """The calls judged as candidates: each dumped whole (its parts are dumped by the
    same function, called again for them)."""
    judged: list = []
    original = common.dumped_structure

    def counted(node):
        if type(node) is gast.Call:
            judged.append(gast.unparse(node))
        return original(node)

    monkeypatch.setattr(common, "dumped_structure", counted)
    return judged


def test_only_calls_sharing_a_rough_key_are_judged(monkeypatch):
    judged = _judged(monkeypatch)
    body = gast.parse(
        "a = np.exp(z)\nb = np.sin(z)\nc = np.exp(w)\nd = np.cos(z)\n"
        "e = np.exp(z)\nf = np.tanh(a)\ng = a.sum(axis=1)\n"
    ).body
    out = gast.unparse(gast.Module(common.eliminate_common_calls(body, IS_PURE), []))
    assert "e = a\n" in out and "c = np.exp(w)" in out, out
    assert sorted(judged) == ["np.exp(z)", "np.exp(z)"]


@pytest.mark.parametrize(
    "source, merged",
    [
        ("a = np.exp(z)\nb = np.exp(z)", "b = a"),
        ("a = np.sum(z, axis=1)\nb = np.sum(z, axis=0)\nc = np.sum(z, axis=1)", "c = a"),
        ("a = np.exp(z)\nz = z + 1.0\nb = np.exp(z)", None),  # rebound between
        ("a = np.exp(-z)\nb = np.exp(-z)", None),  # not a simple operand: never merged
        ("if c:\n    a = np.exp(z)\n    b = np.exp(z)\nd = np.exp(z)", "b = a"),
    ],
)
def test_what_is_merged_is_unchanged(monkeypatch, source, merged):
    judged = _judged(monkeypatch)
    body = gast.parse(source).body
    out = gast.unparse(gast.Module(common.eliminate_common_calls(body, IS_PURE), []))
    if merged is None:
        assert out.strip() == gast.unparse(gast.parse(source)).strip(), out
    else:
        assert merged in out, out
    assert all("exp(z)" in j or "sum(z, axis=1)" in j for j in judged), judged


def softmax_loss(W, X):
    z = X @ W
    e = np.exp(z - 1.0)
    p = np.exp(z - 1.0) / np.sum(np.exp(z - 1.0), axis=1, keepdims=True)
    return np.sum(np.tanh(p) * e) + np.sum(np.sin(z) * np.cos(z))


@pytest.mark.parametrize("mode", ("s2s", "auto"))
@pytest.mark.parametrize("shape", [(3, 2), (4, 5)])
def test_gradients_against_differences(mode, shape):
    W = RNG.normal(size=(shape[1], 3))
    X = RNG.normal(size=shape)
    g = sg.grad(softmax_loss, wrt=(0, 1), mode=mode)
    for _ in range(2):
        for index, got in enumerate(g(W, X)):
            assert_close(got, numeric_grad(softmax_loss, (W, X), index))
