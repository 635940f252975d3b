"""``enumerate(xs, start=s)``: a count from ``s``, read by index like ``enumerate(xs)``.
It was refused by source transformation (``mode="auto"`` ran the whole function on the
tape), for a keyword users write often (``for epoch, batch in enumerate(batches, 1)``)."""

import warnings

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg


def weighted_layers(x, s=2):
    total = 0.0
    layers = [x, x * x, np.sin(x)]
    for i, v in enumerate(layers, s):
        s = 100  # Python reads start once, before the loop
        total = total + i * v
    for k, (a, b) in enumerate(zip(layers, layers[1:]), start=-1):
        total = total + k * a * b
    return total


def counted_rows(w, rows):
    total = 0.0
    for step, row in enumerate(rows, start=1):
        total = total + np.sum(np.tanh(row @ w)) / step
    return total


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("x", [1.3, -0.6])
def test_enumerate_with_a_start_in_every_order(mode, x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        g = sg.grad(weighted_layers, mode=mode)(x)
        _, t = sg.jvp(weighted_layers, (x,), (1.0,), mode=mode)
        h = sg.hessian(weighted_layers, mode=mode)(x)
    assert g == pytest.approx(numeric_grad(weighted_layers, (x,), 0), rel=1e-6)
    assert t == pytest.approx(g, rel=1e-12)
    first = sg.grad(weighted_layers)
    assert h == pytest.approx(numeric_grad(first, (x,), 0, step=1e-5), rel=1e-5)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("n, d", [(3, 2), (1, 4), (5, 1)])
def test_enumerate_from_one_over_array_rows(mode, n, d):
    rng = np.random.default_rng(n * 10 + d)
    w, rows = rng.normal(size=(d, 2)), rng.normal(size=(n, d))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        g = sg.grad(counted_rows, mode=mode)(w, rows)
    np.testing.assert_allclose(g, numeric_grad(counted_rows, (w, rows), 0), rtol=1e-6, atol=1e-9)


def test_the_generated_code_counts_by_index():
    code = sg.source(sg.grad(weighted_layers, mode="s2s"))
    lines = [line.split("#")[0] for line in code.splitlines()]
    assert not any("enumerate" in line for line in lines)
    assert any("range(" in line for line in lines)
