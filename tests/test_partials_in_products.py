"""``sg.vjp``, ``sg.jvp`` and ``sg.hvp`` of a ``functools.partial`` by source
transformation: the partial's function is differentiated with every argument in position,
the partial's own held constant. It used to be refused in mode "s2s" (the generated code
of a partial takes the arguments it binds). A partial binding a keyword-only parameter
keeps the old path: refused in "s2s" naming the line, the tape in "auto".

Checked against central differences at random points, for several shapes, each product
called twice."""

import functools
import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = "test_partials_in_products.py"
R = np.random.default_rng(812)
MODES = ["s2s", "auto", "tape"]


def loss(w, data, scale=2.0):
    return np.sum(np.sin(w * data) + scale * w**3)


def two_inputs(w, b, data, scale):
    return np.sum(np.tanh(w * data + b) ** 2) * scale


def keyword_only(w, *, data):
    return np.sum(np.cos(w) * data)


def _partials(shape):
    data = R.normal(size=shape)
    return [
        functools.partial(loss, data=data),
        functools.partial(loss, data=data, scale=0.5),
        functools.partial(lambda data, w: loss(w, data), data),
    ]


@pytest.mark.parametrize("shape", [(3,), (2, 3), (1,)])
@pytest.mark.parametrize("mode", MODES)
def test_vjp_jvp_and_hvp_of_a_partial(shape, mode):
    w = R.normal(size=shape)
    direction = R.normal(size=shape)
    for p in _partials(shape):
        expected = numeric_grad(p, [w], 0)
        for _ in range(2):
            out, pullback = sg.vjp(p, w, mode=mode)
            assert_close(out, p(w), rtol=1e-12)
            (cotangent,) = pullback(1.0)
            assert_close(cotangent, expected, rtol=1e-5, atol=1e-7)
            value, tangent = sg.jvp(p, (w,), (direction,), mode=mode)
            assert_close(float(tangent), float(np.sum(expected * direction)), rtol=1e-5)
            (product,) = sg.hvp(p, (w,), (direction,), mode=mode)
            gradient = sg.grad(p, mode="tape")
            wanted = numeric_jvp(gradient, [w], 0, direction)
            assert_close(product, wanted, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_a_partial_of_two_differentiated_arguments(mode):
    w, b, data = R.normal(size=4), R.normal(size=4), R.normal(size=4)
    p = functools.partial(two_inputs, data=data, scale=1.5)
    vw, vb = R.normal(size=4), R.normal(size=4)
    _, pullback = sg.vjp(p, w, b, mode=mode)
    got = pullback(1.0)
    assert len(got) == 2
    assert_close(got[0], numeric_grad(p, [w, b], 0), rtol=1e-5, atol=1e-7)
    assert_close(got[1], numeric_grad(p, [w, b], 1), rtol=1e-5, atol=1e-7)
    _, tangent = sg.jvp(p, (w, b), (vw, vb), mode=mode)
    expected = np.sum(numeric_grad(p, [w, b], 0) * vw) + np.sum(numeric_grad(p, [w, b], 1) * vb)
    assert_close(float(tangent), float(expected), rtol=1e-5)
    products = sg.hvp(p, (w, b), (vw, vb), mode=mode)
    for index, product in enumerate(products):

        def gradient(w, b, index=index):
            return sg.grad(p, wrt=(0, 1), mode="tape")(w, b)[index]

        wanted = numeric_jvp(gradient, [w, b], 0, vw) + numeric_jvp(gradient, [w, b], 1, vb)
        assert_close(product, wanted, rtol=1e-4, atol=1e-6)


def test_a_keyword_only_binding_keeps_the_refusal_and_the_tape():
    w, data = R.normal(size=3), R.normal(size=3)
    p = functools.partial(keyword_only, data=data)
    with pytest.raises(sg.UnsupportedError, match="partial") as refused:
        sg.vjp(p, w, mode="s2s")
    assert f"{HERE}:" in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, pullback = sg.vjp(p, w, mode="auto")
    assert_close(pullback(1.0)[0], numeric_grad(p, [w], 0), rtol=1e-5, atol=1e-7)
