"""Round 34's adversarial findings (adv20): each a silently wrong answer, a crash or a
refusal without the user's line, now right or refused at the user's line.

An object given as a PARAMETER whose class answers a comparison or ``round`` with code of
its own (``__lt__`` returning ``other * self.s``): the sweeps took the comparison for a
flag and the gradient and the tangent were zero, in modes "s2s" and "auto". The class is
known only as the code runs: generated code checks the operands there
(``runtime.answering_objects``); "auto" tapes the function.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = "test_adversarial_round34.py"
R = np.random.default_rng(3420)


class Scaled:
    def __init__(self, s):
        self.s = s

    def __lt__(self, other):
        return other * self.s

    def __gt__(self, other):
        return other**2 * self.s


class Holder:
    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return self.v * 3.0 + other

    def __round__(self, digits=None):
        return self.v * 2.0

    def __floor__(self):
        return self.v * 4.0


def less_than_parameter(x, c):
    return np.sum(c < x)


def greater_than_parameter(x, c):
    return np.sum(np.sin(x) * (c > x))


def reflected_on_a_float(x, c):
    return (x[0] > c) * x[1]  # float.__gt__ gives way to c.__lt__(x[0])


def made_by_a_class_parameter(x, c):
    h = c(x)
    return np.sum(h < 1.0)


def rounded_by_a_class_parameter(x, c):
    return np.sum(round(c(x)) ** 2)


def floored_by_a_class_parameter(x, c):
    return math.floor(c(x[0])) * x[1]


CASES = [
    (less_than_parameter, Scaled(2.0)),
    (greater_than_parameter, Scaled(1.5)),
    (reflected_on_a_float, Scaled(3.0)),
    (made_by_a_class_parameter, Holder),
    (rounded_by_a_class_parameter, Holder),
]
# made in the function by a class given as a parameter: refused as the class does more than
# store its values, or as the comparison runs; math.floor has no derivative rule
REFUSED = "answers that with code of its own|makes an object holding|math.floor"


@pytest.mark.parametrize(("f", "c"), [*CASES, (floored_by_a_class_parameter, Holder)])
def test_a_parameter_answering_a_comparison_is_refused_in_s2s(f, c):
    x = R.uniform(0.3, 1.2, size=3)
    with pytest.raises(sg.S2SGradError, match=REFUSED) as e:
        sg.grad(f, mode="s2s")(x, c)
    assert f"{HERE}:" in str(e.value)
    with pytest.raises(sg.S2SGradError, match=REFUSED) as e:
        sg.jvp(f, (x, c), (np.ones(3), None), mode="s2s")
    assert f"{HERE}:" in str(e.value)


@pytest.mark.parametrize(("f", "c"), CASES)
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_a_parameter_answering_a_comparison_is_right_in_auto(f, c, mode):
    x, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    if f is reflected_on_a_float and np.lib.NumpyVersion(np.__version__) < "2.0.0":
        # NumPy 1's float64 answers x[0] > c itself, with a flag: the tape refuses it
        with pytest.raises(sg.UnsupportedError, match="code of its own"):
            sg.grad(f, mode=mode)(x, c)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = call_twice(sg.grad(f, mode=mode), x, c)
        assert_close(gradient, numeric_grad(f, [x, c], 0))
        _, tangent = sg.jvp(f, (x, c), (v, None), mode=mode)
        assert_close(tangent, numeric_jvp(f, [x, c], 0, v), rtol=1e-5)
        hvp = sg.hvp(lambda y: f(y, c), (x,), (v,), mode=mode)
    expected = numeric_jvp(lambda y: sg.grad(f, mode="tape")(y, c), [x], 0, v, step=1e-5)
    assert_close(np.asarray(hvp).reshape(x.shape), expected, rtol=1e-4, atol=1e-6)


def array_compared_with_an_answering_object(x, c):
    return np.sum(x > c)  # NumPy asks c.__lt__ of each entry, a plain number


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_an_array_compared_with_an_answering_object_is_refused(mode):
    x = R.uniform(0.3, 1.2, size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.UnsupportedError, match="code of its own") as e:
            sg.grad(array_compared_with_an_answering_object, mode=mode)(x, Scaled(2.0))
    assert f"{HERE}:" in str(e.value)


class Plain:
    def __init__(self, v):
        self.v = v


def plain_parameter_compared(x, p):
    return np.sum(np.where(x > p.v, x**2, 3.0 * x))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_numbers_and_plain_objects_still_differentiate(mode):
    x = R.uniform(-1.0, 1.0, size=4)
    p = Plain(0.1)
    gradient = call_twice(sg.grad(plain_parameter_compared, mode=mode), x, p)
    assert_close(gradient, numeric_grad(plain_parameter_compared, [x, p], 0))


@dataclass
class Answering:
    v: np.ndarray

    def __lt__(self, other):
        return self.v * 3.0 + other


def differentiated_record_compared(p):
    return np.sum(np.cos(p < 1.0))


def test_a_differentiated_record_answering_a_comparison_is_refused_or_taped():
    x = R.uniform(0.3, 1.2, size=3)
    with pytest.raises(sg.UnsupportedError, match="answers a comparison") as e:
        sg.grad(differentiated_record_compared, mode="s2s")(Answering(x))
    assert f"{HERE}:" in str(e.value)
    expected = numeric_grad(lambda y: differentiated_record_compared(Answering(y)), [x], 0)
    for mode in ("auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            transformed = sg.grad(differentiated_record_compared, mode=mode)
            for _ in range(2):  # a first and a later call
                assert_close(transformed(Answering(x)).v, expected)


# an object doing arithmetic with methods of its own: NumPy gives way to one with an
# __array_priority__ (x + c is c.__radd__(x)), Python to any for a number (x[0] + c); the
# tape recorded NumPy's add with its derivative 1, and the generated code did the same


class Prioritised:
    __array_priority__ = 100

    def __init__(self, s):
        self.s = s

    def __radd__(self, other):
        return other * self.s


class Reflecting:
    def __init__(self, s):
        self.s = s

    def __radd__(self, other):
        return other * self.s

    def __rmul__(self, other):
        return other**3 * self.s


ARITH = "arithmetic with methods of its own|own, which source transformation"
PRIORITISED, REFLECTING = Prioritised(2.5), Reflecting(1.5)


def array_plus_prioritised(x):
    return np.sum(np.sin(x + PRIORITISED))


def number_plus_reflecting(x):
    return (x[0] + REFLECTING) * x[1] + x[2] * REFLECTING


def parameter_plus(x, c):
    return np.sum(np.cos(x + c))


ARITHMETIC = [
    (array_plus_prioritised, ()),
    (number_plus_reflecting, ()),
    (parameter_plus, (Prioritised(0.7),)),
]


@pytest.mark.parametrize(("f", "more"), ARITHMETIC)
def test_an_object_doing_its_own_arithmetic_is_refused_in_s2s(f, more):
    x = R.uniform(0.3, 1.2, size=3)
    with pytest.raises(
        sg.UnsupportedError,
        match="arithmetic with methods of its own|own, which source transformation",
    ) as e:
        sg.grad(f, mode="s2s")(x, *more)
    assert f"{HERE}:" in str(e.value)


@pytest.mark.parametrize(("f", "more"), ARITHMETIC)
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_an_object_doing_its_own_arithmetic_answers_on_the_tape(f, more, mode):
    x, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = call_twice(sg.grad(f, mode=mode), x, *more)
        assert_close(gradient, numeric_grad(f, [x, *more], 0))
        tangents = (v, *[None] * len(more))
        _, tangent = sg.jvp(f, (x, *more), tangents, mode=mode)
        assert_close(tangent, numeric_jvp(f, [x, *more], 0, v), rtol=1e-5)
        hvp = sg.hvp(lambda y: f(y, *more), (x,), (v,), mode=mode)
    expected = numeric_jvp(lambda y: sg.grad(f, mode="tape")(y, *more), [x], 0, v, step=1e-5)
    assert_close(np.asarray(hvp).reshape(x.shape), expected, rtol=1e-4, atol=1e-6)


def array_plus_reflecting(x):
    return np.sum(x + REFLECTING)  # NumPy adds entry by entry: each a plain number


def test_an_array_meeting_an_object_without_priority_is_refused_on_the_tape():
    x = R.uniform(0.3, 1.2, size=3)
    with pytest.raises(sg.UnsupportedError, match="entry by entry") as e:
        sg.grad(array_plus_reflecting, mode="tape")(x)
    assert f"{HERE}:" in str(e.value)


# s2sgrad's own pytree functions called in a function differentiated in forward mode by
# source transformation: their code was dispatched as the call ran, refused at s2sgrad's
# own line (pytrees.py) or, for sg.tree_leaves, given a zero tangent, silently


def flattened_inside(p):
    leaves, _ = sg.tree_flatten(p)
    return sum(np.sum(leaf**2) for leaf in leaves)


def leaves_inside(x):
    return np.sum(sg.tree_leaves({"a": x, "b": [x * 2.0]})[1] ** 2)


@pytest.mark.parametrize("f", [flattened_inside, leaves_inside])
def test_own_pytree_functions_in_forward_mode_are_refused_at_the_users_line(f):
    x, v = R.normal(size=3), R.normal(size=3)
    arg, tangent = (
        ({"a": x, "b": [x[:2]]}, {"a": v, "b": [v[:2]]}) if f is flattened_inside else (x, v)
    )
    with pytest.raises(sg.UnsupportedError, match="s2sgrad's own") as e:
        sg.jvp(f, (arg,), (tangent,), mode="s2s")
    assert f"{HERE}:" in str(e.value) and "pytrees.py" not in str(e.value).split(" (")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, got = sg.jvp(f, (arg,), (tangent,), mode="auto")
    h = 1e-6
    up = sg.tree_map(lambda a, b: a + h * b, arg, tangent)
    down = sg.tree_map(lambda a, b: a - h * b, arg, tangent)
    assert_close(got, (f(up) - f(down)) / (2 * h), rtol=1e-5)


# a differentiated dict the function stores an entry into: Python's call leaves the entry in
# the caller's dict, and so did the generated code of forward mode; the tape stored it in its
# own copy of the dict, and the caller's stayed as it was: the modes now agree with Python


def stores_into_its_dict(p):
    p["cache"] = np.tanh(p["w"]) * 2.0
    return np.sum(p["cache"] ** 2) + np.sum(p["w"] * p["b"])


def stores_and_deletes(p):
    del p["old"]
    return stores_into_its_dict(p)


def _params():
    return {"w": R.normal(size=3), "b": R.normal(size=3), "old": 1.0}


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_dict_entry_stored_by_the_function_reaches_the_caller_in_every_mode(mode):
    p = _params()
    w = p["w"]
    expected = _params()
    expected.update(w=w.copy(), b=p["b"].copy())
    plain = dict(expected)
    stores_into_its_dict(plain)
    tangent = {"w": R.normal(size=3), "b": R.normal(size=3), "old": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, got = sg.jvp(stores_into_its_dict, (p,), (tangent,), mode=mode)
    assert sorted(p) == sorted(plain) and p["w"] is w
    assert type(p["cache"]) is np.ndarray
    np.testing.assert_allclose(p["cache"], plain["cache"])
    h = 1e-6
    up = {k: expected[k] + h * tangent[k] for k in expected}
    down = {k: expected[k] - h * tangent[k] for k in expected}
    assert_close(got, (stores_into_its_dict(up) - stores_into_its_dict(down)) / (2 * h))


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_a_dict_entry_stored_by_the_function_reaches_the_caller_in_reverse_mode(mode):
    p = _params()
    w, b = p["w"].copy(), p["b"].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(stores_and_deletes, mode=mode)(p)
    assert sorted(p) == ["b", "cache", "w"] and type(p["cache"]) is np.ndarray
    np.testing.assert_allclose(p["cache"], np.tanh(w) * 2.0)
    expected = numeric_grad(lambda y: stores_into_its_dict({"w": y, "b": b, "old": 1.0}), [w], 0)
    assert_close(gradient["w"], expected)


@dataclass
class Multiplying:
    w: np.ndarray

    def __mul__(self, other):
        return Multiplying(self.w * other)


class Model:
    def __init__(self):
        self.scale = Prioritised(2.0)


def differentiated_record_multiplied(p):
    return np.sum((p * 3.0).w ** 2)


def attribute_of_a_parameter(x, model):
    return np.sum(np.sin(x + model.scale))


def test_a_differentiated_record_doing_its_own_arithmetic_is_refused_not_crashed():
    x = R.normal(size=3)
    with pytest.raises(sg.UnsupportedError, match=ARITH) as e:
        sg.grad(differentiated_record_multiplied, mode="s2s")(Multiplying(x))
    assert f"{HERE}:" in str(e.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(differentiated_record_multiplied, mode="auto")(Multiplying(x))
    assert_close(got.w, 18.0 * x)


@pytest.mark.parametrize("transform", ["grad", "hvp"])
def test_an_attribute_doing_its_own_arithmetic_is_refused_in_s2s(transform):
    x, model = R.uniform(0.3, 1.2, size=3), Model()
    with pytest.raises(sg.UnsupportedError, match=ARITH) as e:
        if transform == "grad":
            sg.grad(attribute_of_a_parameter, mode="s2s")(x, model)
        else:
            sg.hvp(lambda y: attribute_of_a_parameter(y, model), (x,), (x,), mode="s2s")
    assert f"{HERE}:" in str(e.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(attribute_of_a_parameter, mode="auto")(x, model)
    assert_close(got, numeric_grad(attribute_of_a_parameter, [x, model], 0))


def test_the_hessian_product_with_an_answering_argument_is_refused_or_taped():
    """sg.hvp(f, (x, c), (v, None)) differentiates the gradient of every argument, c
    among them: its code took c > x for a flag, and the product was zero in mode "s2s"."""
    x, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    c = Scaled(2.0)
    with pytest.raises(sg.UnsupportedError, match="answers a comparison") as e:
        sg.hvp(greater_than_parameter, (x, c), (v, None), mode="s2s")
    assert f"{HERE}:" in str(e.value)
    with warnings.catch_warnings():  # the tape refuses to differentiate c, at the same line
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match="cannot differentiate with respect to 'c'") as e:
            sg.hvp(greater_than_parameter, (x, c), (v, None), mode="auto")
        got = sg.hvp(lambda y: greater_than_parameter(y, c), (x,), (v,), mode="auto")[0]
    assert f"{HERE}:" in str(e.value)
    expected = numeric_jvp(
        lambda y: sg.grad(greater_than_parameter, mode="tape")(y, c), [x], 0, v, step=1e-5
    )
    assert_close(got, expected, rtol=1e-4, atol=1e-6)


def test_a_helper_given_an_answering_object_by_a_starred_call_is_refused_in_s2s():
    """f(*args) is dispatched as it runs, and the helper's derivative taken in all of its
    arguments, the object among them: its comparison went unchecked, a zero product."""
    x, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    c = Scaled(1.5)

    def starred(y):
        arguments = [y, c]
        return greater_than_parameter(*arguments)

    with pytest.raises(sg.UnsupportedError, match="answers that with code of its own") as e:
        sg.hvp(starred, (x,), (v,), mode="s2s")
    assert f"{HERE}:" in str(e.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.hvp(starred, (x,), (v,), mode="auto")[0]
    expected = numeric_jvp(lambda y: sg.grad(starred, mode="tape")(y), [x], 0, v, step=1e-5)
    assert_close(got, expected, rtol=1e-4, atol=1e-6)
