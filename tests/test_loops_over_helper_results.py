"""Loops over what a helper returns, and over generators.

``for W, b in unpack(ws):`` (autograd's Bayesian neural net unpacks its layers so) is read
by index like a loop over a name holding the same list; it was refused by source
transformation only because the list came straight from a call.

A generator runs step by step with the loop that reads it; source transformation reads it
whole first. That is only the same when the generator reads nothing the loop body changes:
a global (``STATE.append(...)`` in the body) counts too, and a generator object the
transformer cannot see into is refused by source transformation (``mode="auto"`` runs the
loop on the tape). Reading it whole anyway gave wrong gradients.
"""

import warnings

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg

SHAPES = [(1, 4), (4, 1)]


def unpack(ws, shapes):
    layers = []
    start = 0
    for m, n in shapes:
        W = ws[:, start : start + m * n].reshape((-1, m, n))
        start += m * n
        b = ws[:, start : start + n].reshape((-1, 1, n))
        start += n
        layers.append((W, b))
    return layers


def predictions(ws, x):
    x = np.expand_dims(x, 0)
    for W, b in unpack(ws, SHAPES):
        out = np.einsum("mnd,mdo->mno", x, W) + b
        x = np.tanh(out)
    return np.sum(out**2)


def predictions_named(ws, x):
    x = np.expand_dims(x, 0)
    layers = unpack(ws, SHAPES)
    for W, b in layers:
        out = np.einsum("mnd,mdo->mno", x, W) + b
        x = np.tanh(out)
    return np.sum(out**2)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("samples, points", [(3, 5), (1, 2), (4, 1)])
def test_loop_over_the_layers_a_helper_returns(mode, samples, points):
    rng = np.random.default_rng(samples * 10 + points)
    ws, x = rng.normal(size=(samples, 13)), rng.normal(size=(points, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # no fallback in mode="auto"
        got = sg.grad(predictions, mode=mode)(ws, x)
    np.testing.assert_allclose(got, numeric_grad(predictions, (ws, x), 0), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(got, sg.grad(predictions_named, mode=mode)(ws, x), rtol=1e-12)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_second_order_through_the_loop_over_a_helper_result(mode):
    rng = np.random.default_rng(7)
    ws, x, v = rng.normal(size=(2, 13)), rng.normal(size=(3, 1)), rng.normal(size=(2, 13))
    hvp = sg.hvp(lambda w: predictions(w, x), (ws,), (v,), mode=mode)[0]
    gradient = sg.grad(predictions)
    numeric = numeric_grad(lambda w: np.sum(gradient(w, x) * v), (ws,), 0, step=1e-5)
    np.testing.assert_allclose(hvp, numeric, rtol=1e-4, atol=1e-6)


def lengths(items):
    for _ in range(3):
        yield len(items)


def grows_what_its_generator_reads(x):
    seen = [0.0]
    total = 0.0
    for n in lengths(seen):
        seen.append(1.0)
        total = total + x * n
    return total


def grows_it_through_a_name(x):
    seen = [0.0]
    total = 0.0
    counts = lengths(seen)
    for n in counts:
        seen.append(1.0)
        total = total + x * n
    return total


LOG = []


def logged():
    for _ in range(3):
        yield len(LOG)


def grows_a_global_its_generator_reads(x):
    total = 0.0
    for n in logged():
        LOG.append(1)
        total = total + x * n
    return total


class Source:
    def lengths(self, items):
        for _ in range(3):
            yield len(items)


SOURCE = Source()


def grows_what_a_method_generator_reads(x):
    seen = [0.0]
    total = 0.0
    for n in SOURCE.lengths(seen):
        seen.append(1.0)
        total = total + x * n
    return total


GROWING = [
    (grows_what_its_generator_reads, 6.0),  # n = 1, 2, 3
    (grows_it_through_a_name, 6.0),
    (grows_a_global_its_generator_reads, 3.0),  # n = 0, 1, 2
    (grows_what_a_method_generator_reads, 6.0),
]


@pytest.mark.parametrize("f, slope", GROWING, ids=[f.__name__ for f, _ in GROWING])
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_a_generator_reading_what_the_loop_changes_runs_with_the_loop(f, slope, mode):
    for x in (1.3, -0.4):
        LOG.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            got = sg.grad(f, mode=mode)(x)
        assert got == pytest.approx(slope)


@pytest.mark.parametrize("f, slope", GROWING, ids=[f.__name__ for f, _ in GROWING])
def test_a_generator_reading_what_the_loop_changes_is_refused_by_source(f, slope):
    LOG.clear()
    with pytest.raises(sg.UnsupportedError, match=r"test_loops_over_helper_results\.py:\d+"):
        sg.grad(f, mode="s2s")(1.3)


def squares(x, n):
    for k in range(n):
        yield x * (k + 1.0)


def sum_of_generated_squares(x):
    total = 0.0
    for v in squares(x, 3):
        total = total + v * v
    return total


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_generator_that_reads_nothing_the_loop_changes_is_still_read_whole(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        got = sg.grad(sum_of_generated_squares, mode=mode)(0.7)
    assert got == pytest.approx(2 * 0.7 * (1 + 4 + 9))
