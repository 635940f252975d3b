"""``match`` statements: the source transformer desugars them into ``if``/``elif`` chains
(it used to return the function's value as its "gradient"), and the tape refuses the
class patterns its tape values would fail."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, directional_derivative, numeric_grad

import s2sgrad as sg

HERE = "test_match.py"
MODES = ("s2s", "tape", "auto")


def by_value(x, k):
    match k:
        case 1:
            y = x * x
        case 2 | 3:
            y = np.sin(x) * 3.0
        case "scaled" if np.all(x > 0):
            y = np.sqrt(x) * 2.0
        case None:
            y = x**3
        case _:
            y = np.exp(x)
    return np.sum(y)


def by_capture(x, k):
    match k * 2:  # the subject is an expression, evaluated once
        case 0:
            return np.sum(x)
        case doubled if doubled > 4:
            return np.sum(x**2) * doubled
        case other:
            return np.sum(np.cos(x)) * other


def in_a_loop(x, modes):
    total = 0.0
    for mode in modes:
        match mode:
            case "square":
                total = total + np.sum(x * x)
            case "sine":
                total = total + np.sum(np.sin(x))
    return total


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [1, 2, 3, "scaled", None, 7])
def test_value_or_singleton_and_wildcard_patterns(mode, k):
    x = np.random.default_rng(1).uniform(0.2, 1.5, size=3)
    got = call_twice(sg.grad(by_value, mode=mode), x, k)
    assert_close(got, numeric_grad(by_value, (x, k), 0))
    direction = np.array([0.3, -0.2, 0.5])
    (product,) = sg.hvp(lambda v: by_value(v, k), (x,), (direction,), mode=mode)
    gradient = sg.grad(by_value, mode=mode)
    expected = directional_derivative(lambda x: gradient(x, k), x, direction, step=1e-5)
    assert_close(product, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [0, 1, 3])
def test_capture_patterns_and_guards_on_captures(mode, k):
    x = np.random.default_rng(2).normal(size=4)
    got = call_twice(sg.grad(by_capture, mode=mode), x, k)
    assert_close(got, numeric_grad(by_capture, (x, k), 0))


@pytest.mark.parametrize("mode", MODES)
def test_match_in_a_loop(mode):
    x = np.random.default_rng(3).normal(size=3)
    modes = ["square", "sine", "other", "square"]
    got = call_twice(sg.grad(in_a_loop, mode=mode), x, modes)
    assert_close(got, numeric_grad(in_a_loop, (x, modes), 0))


def by_structure(p):
    match p:
        case [v] | (v,):  # alternatives binding v to the same part
            return v**3
        case [a, b]:
            return a * np.sin(b)
        case (a, b, c) if c > 0:
            return a * b * c
        case {"w": w, "b": b}:
            return np.sum(w**2) + b
        case {"w": w}:
            return np.sum(np.tanh(w))
    return 0.0


STRUCTURES = {
    "one element": [0.7],
    "list": [0.7, -0.4],
    "tuple with guard": (0.5, 2.0, 1.5),
    "dict": {"w": np.array([0.3, -0.6]), "b": 0.25},
    "dict, one key": {"w": np.array([0.3, -0.6])},
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", STRUCTURES)
def test_sequence_and_mapping_patterns(mode, case):
    p = STRUCTURES[case]
    got = call_twice(sg.grad(by_structure, mode=mode), p)
    assert_close(got, numeric_grad(by_structure, (p,), 0))


def by_class(x):
    match x:
        case float(v) if v > 0:
            return v * v
        case float() | np.floating():
            return -x
        case np.ndarray(ndim=1):
            return np.sum(x**3)
        case np.ndarray(shape=(rows, _)):
            return np.sum(np.sin(x)) * rows
    return 0.0


@pytest.mark.parametrize("x", [0.8, -0.3, np.array([0.2, -1.1]), np.ones((2, 3)) * 0.4])
def test_class_patterns_by_source_transformation(x):
    for mode in ("s2s", "auto"):
        got = call_twice(sg.grad(by_class, mode=mode), x)
        assert_close(got, numeric_grad(by_class, (x,), 0))


def test_class_patterns_are_refused_on_the_tape():
    """A tape value is neither a float nor an ndarray: the match would take another case."""
    with pytest.raises(sg.UnsupportedError) as error:
        sg.grad(by_class, mode="tape")(0.8)
    message = str(error.value)
    line = inspect.getsourcelines(by_class)[1] + 2
    assert f"{HERE}:{line}" in message and "mode='s2s'" in message


def test_forward_mode_through_a_match():
    x = np.array([0.4, 0.9])
    direction = np.array([1.0, -2.0])
    for mode in ("s2s", "tape"):
        value, tangent = sg.jvp(lambda v: by_value(v, 2), (x,), (direction,), mode=mode)
        assert value == pytest.approx(by_value(x, 2))
        assert tangent == pytest.approx(np.sum(3.0 * np.cos(x) * direction))


def mapping_rest(p):
    match p:
        case {"w": w, **others}:
            return w * len(others)
    return 0.0


def or_with_names(p):
    match p:
        case [a, _] | (_, _, a):
            return a * 2.0
    return 0.0


@pytest.mark.parametrize(
    "function, argument, construct",
    [
        (mapping_rest, {"w": 1.5, "v": 2.0}, "**rest"),
        (or_with_names, [1.5, 2.0], "or-pattern whose alternatives bind names"),
    ],
)
def test_patterns_not_desugared_are_refused_and_the_tape_takes_over(function, argument, construct):
    with pytest.raises(sg.UnsupportedError) as error:
        sg.grad(function, mode="s2s")(argument)
    message = str(error.value)
    line = inspect.getsourcelines(function)[1] + 2
    assert f"{HERE}:{line}" in message, message
    assert construct in message and "use " in message and "mode='tape'" in message
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = sg.grad(function, mode="auto")(argument)
    assert any(construct in str(w.message) for w in caught)
    assert_close(got, numeric_grad(function, (argument,), 0))
    assert_close(sg.grad(function, mode="tape")(argument), got)


def hides_len(x, k):
    len = 3  # noqa: F841 - the desugared tests would call this
    match k:
        case [a]:
            return x * a
    return x


def test_a_function_hiding_a_builtin_the_tests_call_is_refused():
    with pytest.raises(sg.UnsupportedError, match="'len' is not the builtin"):
        sg.grad(hides_len, mode="s2s")(1.0, [2.0])


def shared_update_in_a_case(x, k):
    v = x * 2.0
    w = v
    match k:
        case 1:
            v += 1.0  # changes w too
    return np.sum(w * x)


@pytest.mark.parametrize("mode", MODES)
def test_an_in_place_update_of_a_shared_array_inside_a_case_is_refused(mode):
    """The tape's check of ``x op= v`` reads the function: it must see inside cases (and
    then follows the update into the tape value both names hold)."""
    if mode != "s2s":
        _right_on_the_tape(shared_update_in_a_case, mode)
        return
    with pytest.raises(sg.UnsupportedError) as error:
        sg.grad(shared_update_in_a_case, mode=mode)(np.ones(2), 1)
    line = inspect.getsourcelines(shared_update_in_a_case)[1] + 5
    assert f"{HERE}:{line}" in str(error.value) and "'w'" in str(error.value)


def _right_on_the_tape(function, mode):
    from oracle import numeric_grad

    x = np.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient = sg.grad(function, mode=mode)(x.copy(), 1)
    np.testing.assert_allclose(gradient, numeric_grad(function, [x, 1], 0), rtol=1e-6)


def pick_by_match(a, k):
    match k:
        case 1:
            return a  # the caller's array itself
    return a * 1.0


def update_after_a_call_that_may_return_its_argument(x, k):
    v = x * 2.0
    w = pick_by_match(v, k)
    v += 1.0  # changes w too when k == 1
    return np.sum(w * x)


@pytest.mark.parametrize("mode", MODES)
def test_a_callee_returning_its_argument_from_a_case_is_seen_to_share_it(mode):
    """The alias analysis reads a callee's returns: it must see those inside cases (the
    tape then follows the update into the tape value both names hold)."""
    function = update_after_a_call_that_may_return_its_argument
    if mode != "s2s":
        _right_on_the_tape(function, mode)
        return
    with pytest.raises(sg.UnsupportedError) as error:
        sg.grad(function, mode=mode)(np.ones(2), 1)
    line = inspect.getsourcelines(function)[1] + 3
    assert f"{HERE}:{line}" in str(error.value) and "'w'" in str(error.value)


def rebinds_its_subject(p):
    match p:
        case [p, q]:  # p is the subject, then its first element
            return p * np.cos(q)
    return 0.0


@pytest.mark.parametrize("mode", MODES)
def test_a_capture_with_the_subject_s_name(mode):
    p = [0.6, -0.9]
    got = call_twice(sg.grad(rebinds_its_subject, mode=mode), p)
    assert_close(got, numeric_grad(rebinds_its_subject, (p,), 0))


def starred(p):
    match p:
        case [only]:
            return only**2
        case [first, *middle, last] if len(middle) > 1:
            total = 0.0
            for value in middle:
                total = total + value * value
            return first * total + np.sin(last)
        case [first, *_]:
            return first * 3.0
    return 0.0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "p", [[0.5], [1.5, 2.0], [1.5, 2.0, 3.0], [1.5, -2.0, 3.0, 0.25], (0.3, 0.2, 0.1, 0.9, 0.4)]
)
def test_starred_sub_patterns(mode, p):
    got = call_twice(sg.grad(starred, mode=mode), p)
    assert_close(got, numeric_grad(starred, (p,), 0))
