"""``itertools.accumulate`` (plain, with a function given by position or ``func=``, with
``initial=``), ``itertools.chain`` and ``itertools.zip_longest`` over lists of parameters,
differentiated by source transformation.

They were refused in s2s ("keeps differentiated values inside an object"), so mode "auto"
fell back to the tape. Where the iterator is read whole (a loop, a comprehension, ``list``),
the transformer now writes the list of what it gives, made by a loop beforehand
(``passes/comprehensions.py``), as it does for ``functools.reduce``. An iterator bound to a
name, or passed to ``next``, is left as it was and refused. Each program is checked in every
mode against central differences, a first and a later call, forward mode and the
Hessian-vector product; mode "s2s" raises rather than fall back, and mode "auto" is
checked to warn of no fallback.
"""

import functools
import itertools
import operator
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def running_products(ws):
    parts = list(itertools.accumulate(ws, lambda a, b: np.tanh(a) * b))
    return np.sum(parts[-1]) + np.sum(parts[1] ** 2)


def running_maximum(ws):
    return np.sum(list(itertools.accumulate(ws, func=np.maximum))[-1] ** 2)


def running_with_a_start(ws):
    total = 0.0
    for p in itertools.accumulate(ws, operator.mul, initial=1.5):
        total = total + np.sum(np.sin(p))
    return total


def running_sums_in_a_loop(ws):
    total = 0.0
    for p in itertools.accumulate(ws):
        total = total + np.sum(p**3)
    return total


def chained(ws):
    total = 0.0
    for w in itertools.chain(ws[:2], [ws[2] * 2.0], ws[1:]):
        total = total + np.sum(np.sin(w) * w)
    return total


def chained_listed(ws):
    return np.sum(np.stack(list(itertools.chain(ws[1:], ws[:1]))) ** 2 * np.arange(1.0, 4.0))


def zipped_longest(ws):
    total = 0.0
    for a, b in itertools.zip_longest(ws, ws[:2], fillvalue=0.5):
        total = total + np.sum(np.tanh(a * b))
    return total


def zipped_longest_of_three(ws):
    return functools.reduce(
        lambda acc, t: acc + np.sum(t[0] * t[1] - t[2]),
        itertools.zip_longest(ws[:1], ws, ws[1:], fillvalue=np.ones(3)),
        0.0,
    )


PROGRAMS = [
    running_products,
    running_maximum,
    running_with_a_start,
    running_sums_in_a_loop,
    chained,
    chained_listed,
    zipped_longest,
    zipped_longest_of_three,
]
# forward mode over the s2s gradient of running sums is refused (the backward sweep
# writes a list entry's cotangent in place, as for the same loop written by hand)
SECOND_ORDER_REFUSED_IN_S2S = {running_sums_in_a_loop}


def _parameters(seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.3, 1.2, size=3) * rng.choice([-1.0, 1.0], size=3) for _ in range(3)]


def _direction(ws, seed):
    rng = np.random.default_rng(seed + 100)
    return [rng.normal(size=np.shape(w)) for w in ws]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_and_forward_mode(f, mode):
    ws = _parameters(7)
    direction = _direction(ws, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # mode "auto" falls back nowhere
        got = call_twice(sg.grad(f, mode=mode), ws)
        _, tangent = sg.jvp(f, (ws,), (direction,), mode=mode)
    assert_close(got, numeric_grad(f, [ws], 0), rtol=1e-5, atol=1e-7)
    assert_close(tangent, numeric_jvp(f, [ws], 0, direction), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_hessian_vector_product(f, mode):
    ws = _parameters(11)
    direction = _direction(ws, 11)
    if mode == "s2s" and f in SECOND_ORDER_REFUSED_IN_S2S:
        with pytest.raises(sg.UnsupportedError, match=r"test_itertools_lists_in_s2s\.py:"):
            sg.hvp(f, (ws,), (direction,), mode=mode)
        return
    gradient = sg.grad(f, mode="tape")
    assert_close(gradient(ws), numeric_grad(f, [ws], 0), rtol=1e-5, atol=1e-7)
    expected = numeric_jvp(gradient, [ws], 0, direction)
    with warnings.catch_warnings():
        refused_in_s2s = f in SECOND_ORDER_REFUSED_IN_S2S
        warnings.simplefilter("ignore" if refused_in_s2s else "error", sg.S2SGradWarning)
        for _ in range(2):
            (product,) = sg.hvp(f, (ws,), (direction,), mode=mode)
            assert_close(product, expected, rtol=1e-4, atol=1e-6)


def leaves_the_iterator_to_next(ws):
    running = itertools.accumulate(ws)
    first = next(running)
    return np.sum(first * next(running))


def test_an_iterator_kept_by_name_is_still_refused_clearly():
    ws = _parameters(3)
    with pytest.raises(sg.UnsupportedError, match=r"test_itertools_lists_in_s2s\.py:\d+"):
        sg.grad(leaves_the_iterator_to_next, mode="s2s")(ws)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = sg.grad(leaves_the_iterator_to_next, mode="auto")(ws)
    assert_close(got, numeric_grad(leaves_the_iterator_to_next, [ws], 0), rtol=1e-5)


def an_empty_accumulate(ws):
    total = np.sum(ws[0] ** 2)
    for p in itertools.accumulate(ws[3:]):
        total = total + np.sum(p)
    return total + len(list(itertools.chain(ws[3:], ws[:0])))


@pytest.mark.parametrize("mode", MODES)
def test_empty_iterables_give_empty_lists(mode):
    ws = _parameters(5)
    got = call_twice(sg.grad(an_empty_accumulate, mode=mode), ws)
    assert_close(got, numeric_grad(an_empty_accumulate, [ws], 0), rtol=1e-5, atol=1e-8)
