"""A quotient the forward computed is reused in the backward (``optimize/quotients.py``):
the softmax ``w = e / e.sum(...)`` differentiates to the hand-written
``(dw - (dw * w).sum(...)) * w``; right against central differences in every mode, to
second order, and left alone where a name changed in between."""

from __future__ import annotations

import gast
import numpy as np
import pytest
from oracle import assert_close, assert_gradient_in_every_mode, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.optimize.quotients import reuse_quotients

RNG = np.random.default_rng(57)


def softmax_loss(z, v):
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    w = e / np.sum(e, axis=1, keepdims=True)
    return np.sum((w @ v) ** 2)


def quotient_used_twice(x, t):
    e = np.exp(x)
    s = np.sum(e) + t
    w = e / s
    return np.sum(w * np.cos(w)) + np.sum(e * s)


def normalised_rows(x):
    w = x / np.linalg.norm(x, axis=1, keepdims=True)
    return np.sum(np.sin(w) * x)


CASES = [
    (softmax_loss, (RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3)))),
    (quotient_used_twice, (RNG.standard_normal(6), 1.5)),
    (normalised_rows, (RNG.standard_normal((3, 4)),)),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_against_differences(f, args):
    assert_gradient_in_every_mode(f, args)


def test_second_order():
    z, v = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))
    direction = RNG.standard_normal((3, 4))
    gradient = sg.grad(softmax_loss, mode="s2s")
    expected = numeric_grad(lambda x: np.sum(gradient(x, v) * direction), (z,), 0)
    for mode in ("s2s", "tape"):
        (actual,) = sg.hvp(lambda x: softmax_loss(x, v), (z,), (direction,), mode=mode)
        assert_close(actual, expected, rtol=1e-4, atol=1e-6)


def test_the_specialised_softmax_backward_is_the_hand_written_one():
    z, v = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3))
    gradient = sg.grad(softmax_loss, mode="s2s")
    call_twice(gradient, z, v)
    code = sg.source(gradient)
    assert "(dw * w).sum(axis=1, keepdims=True)) * w" in code
    assert "* e" not in code  # the backward reads the quotient, not the numerator


def rewritten(source: str) -> str:
    body = gast.parse(source).body
    reuse_quotients(body, lambda call: True)
    return gast.unparse(gast.Module(body=body, type_ignores=[])).strip()


def test_the_rewrite_and_the_division_it_saves():
    assert rewritten("w = e / t\nb = -s / t\ng = (a / t + b) * e") == (
        "w = e / t\nb = -s\ng = (a + b) * w"
    )
    assert rewritten("w = e / t\ng = e * (b - a / t)") == "w = e / t\ng = w * (b * t - a)"


@pytest.mark.parametrize(
    "source",
    [
        "w = e / t\ne = e + 1\ng = (a / t + b) * e",  # e rebound
        "w = e / t\nt = 2 * t\ng = (a / t + b) * e",  # t rebound
        "w = e / t\ne[0] = 1.0\ng = (a / t + b) * e",  # e changed in place
        "w = e / t\nf(e)\ng = (a / t + b) * e",  # a call that may change e
        "w = e / t\ng = (a / u + b) * e",  # another denominator
    ],
)
def test_left_alone_when_the_quotient_may_differ(source):
    assert rewritten(source) == source


def test_the_division_stays_when_its_result_is_read_elsewhere():
    assert rewritten("w = e / t\nb = s / t\ng = (a / t + b) * e\nh = b") == (
        "w = e / t\nb = s / t\ng = (a + b * t) * w\nh = b"
    )


def test_only_blocks_that_assign_a_quotient_are_rewritten():
    # the outer block divides nothing; the rewrite still happens in the branch, reading
    # the counts of the whole function (b is read once, so its division goes)
    source = "u = a * t\nif c:\n    w = e / t\n    b = s / t\n    g = (a / t + b) * e"
    assert rewritten(source) == ("u = a * t\nif c:\n    w = e / t\n    b = s\n    g = (a + b) * w")
    body = gast.parse("u = a / 2\ng = (a / t + b) * e").body  # no quotient of two names
    assert reuse_quotients(body, lambda call: True) is False
