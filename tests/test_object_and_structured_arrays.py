"""Values being differentiated in arrays of Python objects (``dtype=object``) and in
structured (record) arrays: refused with an error naming the user's line in every mode,
never a zero derivative (``np.array([...], dtype=object)`` gave one in every mode), a
wrong one (the tape read an object array's entries as constants) or NumPy's own
``IndexError``/``ValueError`` from generated code; the tape still differentiates Python
arithmetic on the entries, and integer casts still give zero."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
RNG = np.random.default_rng(880011)


def object_array_of_values(x):
    o = np.array([x[0], x[1] * 2.0], dtype=object)
    return np.sum(o**2)


def cast_to_object(x):
    return np.sum(x.astype(object) * x)


def cast_to_text(x):
    return np.sum(x.astype(str).astype(float) * x)


def object_array_meets_value(x):
    o = np.empty(2, dtype=object)
    o[0] = x[0]
    o[1] = x[1] ** 2
    return np.sum(o * x[:2])


def record_array(x):
    r = np.zeros(x.shape[0], dtype=[("a", float), ("b", float)])
    r["a"] = x
    r["b"] = x**2
    return np.sum(r["a"] * r["b"])


def object_array_of_arrays(x):
    o = np.empty(2, dtype=object)
    o[0] = x
    o[1] = x**2
    return np.sum(o[0] * o[1])


def integer_cast(x):
    return np.sum(x.astype(int) * x)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [object_array_of_values, cast_to_object, cast_to_text])
def test_conversion_to_objects_or_text_is_refused(f, mode):
    x = RNG.normal(size=3)
    with pytest.raises(
        sg.NonDifferentiableError, match=r"test_object_and_structured_arrays\.py:\d+.*dtype"
    ):
        sg.grad(f, mode=mode)(x)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_forward_mode_refuses_conversion_to_objects(mode):
    x = RNG.normal(size=3)
    with pytest.raises(sg.NonDifferentiableError, match="dtype object"):
        sg.jvp(object_array_of_values, (x,), (np.ones(3),), mode=mode)


def test_tape_refuses_object_array_meeting_a_value():
    x = RNG.normal(size=3)
    with pytest.raises(sg.NonDifferentiableError, match=r"\.py:\d+: an array of dtype object"):
        sg.grad(object_array_meets_value, mode="tape")(x)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("f", [record_array, object_array_of_arrays])
def test_source_transformation_refuses_odd_arrays(f, mode):
    x = RNG.normal(size=4)
    with pytest.raises(sg.S2SGradError, match=r"\.py:\d+: .*dtype"):
        sg.grad(f, mode=mode)(x)
    if mode == "s2s":
        with pytest.raises(sg.S2SGradError, match="dtype"):
            sg.jvp(f, (x,), (np.ones(4),), mode=mode)


@pytest.mark.parametrize("n", [2, 5])
def test_tape_differentiates_arithmetic_on_object_entries(n):
    x = RNG.normal(size=n)
    g = call_twice(sg.grad(object_array_of_arrays, mode="tape"), x)
    assert_close(g, numeric_grad(object_array_of_arrays, [x], 0))
    assert_close(g, 3.0 * x**2)


@pytest.mark.parametrize("mode", MODES)
def test_integer_cast_still_gives_zero(mode):
    x = RNG.normal(size=3) * 3
    assert_close(call_twice(sg.grad(integer_cast, mode=mode), x), x.astype(int).astype(float))
