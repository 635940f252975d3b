"""A comprehension (or ``map``, ``reduce``) lowered out of its statement runs before the
rest of the statement; Python runs what comes before it first. Where either side draws
random numbers, advances an iterator or changes state, the two orders compute different
numbers: source transformation gave the gradient of a function the program does not
compute (wrong in s2s and auto). Such a statement is refused, naming it, and ``auto``
takes the tape, which runs it as Python does; where both sides are plain computations the
statement is differentiated as before.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(17)


def draws_before_the_comprehension(x):
    rng = np.random.default_rng(0)
    y = rng.normal(size=3) * x + np.sum(np.stack([rng.normal(size=3) * x**2 for _ in range(2)]), 0)
    return np.sum(y)


def advances_an_iterator_before(x):
    it = iter([1.0, 2.0, 3.0, 4.0])
    return next(it) * x[0] + np.sum([next(it) * x[i] for i in range(2)])


COUNTER = {"calls": 0}


def counted(v):
    COUNTER["calls"] += 1
    return v * COUNTER["calls"]


def a_helper_changing_state_before(x):
    COUNTER["calls"] = 0
    return np.sum(counted(x)) + np.sum(list(map(counted, [x, x**2])))


def draws_inside_a_reduce(x):
    rng = np.random.default_rng(1)
    from functools import reduce

    return rng.normal() * x[0] + np.sum(reduce(lambda s, u: s + rng.normal() * u, [x, x**2]))


REORDERED = [
    draws_before_the_comprehension,
    advances_an_iterator_before,
    a_helper_changing_state_before,
    draws_inside_a_reduce,
]


@pytest.mark.parametrize("f", REORDERED, ids=lambda f: f.__name__)
def test_effects_before_a_comprehension_are_refused_and_taken_by_the_tape(f):
    x = RNG.normal(size=3)
    with pytest.raises(sg.UnsupportedError, match=r"test_comprehension_order\.py:\d+.*before"):
        sg.grad(f, mode="s2s")(x)
    expected = numeric_grad(f, (x,), 0)
    for mode in ("auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(2):
                assert_close(sg.grad(f, mode=mode)(x), expected, rtol=1e-5, atol=1e-7)


def draws_after_the_comprehension(x):
    rng = np.random.default_rng(1)
    return np.sum([rng.normal() * x[i] for i in range(3)]) + rng.normal() * x[0]


def plain_calls_before(x):
    return np.sum(np.sin(x)) * np.sum([np.cos(v) * x for v in x]) + np.max(x)


def draws_in_statements_of_their_own(x):
    rng = np.random.default_rng(0)
    first = rng.normal(size=3) * x
    rest = np.sum(np.stack([rng.normal(size=3) * x**2 for _ in range(2)]), 0)
    return np.sum(first + rest)


@pytest.mark.parametrize(
    "f",
    [draws_after_the_comprehension, plain_calls_before, draws_in_statements_of_their_own],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_comprehensions_in_python_order_are_differentiated(f, mode):
    x = RNG.normal(size=3)
    expected = numeric_grad(f, (x,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # auto needs no tape
        gradient = sg.grad(f, mode=mode)
        for _ in range(2):
            assert_close(gradient(x), expected, rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------------------
# a nested def of several statements and a generator read whole are inlined as statements
# before the calling one: not where the statement runs a draw first


def draws_before_a_nested_def(x):
    rng = np.random.default_rng(0)

    def cell(v):
        noise = rng.normal(size=3)
        return np.tanh(v + noise)

    return np.sum(rng.normal(size=3) * x + cell(x))


def noisy_terms(v, rng):
    for _ in range(2):
        yield v * rng.normal()


def draws_before_a_generator(x):
    rng = np.random.default_rng(0)
    return np.sum(rng.normal(size=3) * x + sum(noisy_terms(x, rng)))


@pytest.mark.parametrize(
    "f", [draws_before_a_nested_def, draws_before_a_generator], ids=lambda f: f.__name__
)
def test_bodies_inlined_before_a_statement_keep_pythons_order(f):
    x = RNG.normal(size=3)
    expected = numeric_grad(f, (x,), 0)
    try:
        got = sg.grad(f, mode="s2s")(x)
    except sg.UnsupportedError as error:
        assert "test_comprehension_order.py:" in str(error)
    else:
        assert_close(got, expected, rtol=1e-5, atol=1e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            assert_close(sg.grad(f, mode="auto")(x), expected, rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------------------
# a comprehension on one side of a conditional expression or and/or runs only when Python
# runs that side


def noise_only_when_training(x, train=False):
    rng = np.random.default_rng(0)
    noise = np.stack([rng.normal(size=3) for _ in range(2)]).sum(0) if train else 0.0
    return np.sum((x + noise) * rng.normal(size=3) * x)


def items_read_only_when_there(x, ws):
    z = x * (np.sum(np.stack([ws[k + 1] for k in range(2)])) if len(ws) > 2 else 1.0)
    return np.sum(z**2)


def the_second_operand_of_and(x, ws):
    scale = len(ws) > 2 and float(np.sum([ws[k + 1] for k in range(2)]))
    return np.sum(x**2) * (scale or 0.5)


def a_reduce_when_given(x, ws):
    from functools import reduce

    return np.sum(x * (reduce(np.add, ws) if ws else 2.0))


@pytest.mark.parametrize(
    "f, rest",
    [
        (noise_only_when_training, ()),
        (noise_only_when_training, (True,)),
        (items_read_only_when_there, ([1.0, 2.0],)),
        (items_read_only_when_there, ([1.0, 2.0, 3.0],)),
        (the_second_operand_of_and, ([1.0],)),
        (the_second_operand_of_and, ([1.0, 2.0, 3.0],)),
        (a_reduce_when_given, ([],)),
        (a_reduce_when_given, ([np.ones(3), np.arange(3.0)],)),
    ],
    ids=lambda v: getattr(v, "__name__", None) or str(len(v)),
)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_comprehension_runs_only_on_the_side_python_takes(f, rest, mode):
    x = RNG.normal(size=3)
    expected = numeric_grad(lambda v: f(v, *rest), (x,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # auto needs no tape
        gradient = sg.grad(f, mode=mode)
        for _ in range(2):
            assert_close(gradient(x, *rest), expected, rtol=1e-5, atol=1e-7)


def draws_before_a_conditional_comprehension(x, train=True):
    rng = np.random.default_rng(0)
    y = rng.normal() * x + (
        np.stack([rng.normal(size=3) for _ in range(2)]).sum(0) if train else 0.0
    )
    return np.sum(y * x)


def test_a_conditional_after_a_draw_is_refused_and_taken_by_the_tape():
    x = RNG.normal(size=3)
    with pytest.raises(
        sg.UnsupportedError, match=r"test_comprehension_order\.py:\d+.*if statement"
    ):
        sg.grad(draws_before_a_conditional_comprehension, mode="s2s")(x)
    expected = numeric_grad(draws_before_a_conditional_comprehension, (x,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(draws_before_a_conditional_comprehension, mode="auto")(x)
    assert_close(got, expected, rtol=1e-5, atol=1e-7)
