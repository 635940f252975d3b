"""Programs from round 31's adversarial hunt that were silently wrong, crashed, changed the
caller's data or were refused without the user's line.

* ``y.round(1, out=y)`` on the tape: the method's ``out=`` was not followed (only the
  methods of ``_OUT_FOLLOWED`` were), so NumPy wrote the rounded values into the tape
  value's array while the tape still took ``y`` for what it held before: the gradient
  flowed through the rounding as if it were the identity. ``y`` holds a constant now.
* ``x.sort()`` and ``x.fill(v)`` on the differentiated argument: desugaring writes them as
  item writes only after the arguments written into are copied, so the argument was not
  copied: forward mode (``sg.jvp``, s2s and auto) sorted or filled the caller's array, and
  reverse mode refused the function as changing "a list, tuple or dict" (auto did not even
  fall back to the tape). The argument is copied first now, and both modes differentiate it.
* ``sg.grad(f, mode="tape")`` (and auto's fallback) ran ``f`` on the caller's arrays it does
  not differentiate: ``buf.fill(2.0)``, ``buf *= 2``, ``np.exp(buf, out=buf)`` changed the
  caller's buffer (the tape's ``vjp`` and the generated code left it as it was).
* ``np.add.reduce(x, where=m, initial=1.0)`` on the tape: the refusal came from the rule as
  the backward pass ran, when the user's frame was gone, so it named the line that asked for
  the gradient; the tape refuses it as the line runs now.
* A global dict updated in place (``CALLS['n'] += 1``, a call counter the function reads):
  the backward sweep restores the entry it overwrote, and the notes that give the caller
  the state the forward sweep left covered arrays and lists only, so the count never moved
  and every gradient after the first was that of the first call's program.
* The same, differentiated twice (``sg.hvp``, grad of grad) with a global dict, list or
  array: the notes are dropped from code differentiated again, so the state was reset after
  each call; source transformation refuses it now (auto takes the tape, which is right).
* ``w = as_strided(y, ...); w[1] = v`` writes into ``y``, which source transformation
  refuses, until the tape has once run ``as_strided`` (a function with a rule the tape
  routes by replacing its code): the sharing analysis then read the router's parameters,
  found no argument the result shares, and forward mode took ``w`` for a copy of ``y``
  (a silently wrong tangent, in s2s and auto).
* ``scipy.linalg.solve(a, b, overwrite_a=True)`` (``overwrite_b``, ``solve_triangular``,
  ``solve_banded``, ``cholesky``, ``cho_factor``, ``cho_solve``) and ``np.median(y,
  overwrite_input=True)`` (``quantile``, ``percentile`` and the nan twins): SciPy and NumPy
  may overwrite the argument in place (a Fortran-ordered matrix, a 1-d right-hand side; the
  input reordered), which neither the derivative nor the code after the call saw: silently
  wrong in every mode. Refused now, as ``inv``, ``det`` and ``lu_factor`` refuse theirs.
"""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
import scipy.linalg
from numpy.lib.stride_tricks import as_strided
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg


def _rounded_through_the_method(x):
    y = x * 3.0
    y.round(1, out=y)
    return np.sum(y * x) + np.sum(np.sin(x))


def _rounded_into_an_array_made_from_x(x):
    y = x.copy()
    y.round(out=y)
    return np.sum(y * x**2)


@pytest.mark.parametrize("f", [_rounded_through_the_method, _rounded_into_an_array_made_from_x])
@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_method_rounding_a_tape_value_into_itself_makes_it_a_constant(f, mode):
    rng = np.random.default_rng(3)
    # away from the points where rounding jumps, which central differences would cross
    x = np.round(rng.uniform(-2.0, 2.0, size=(3, 4)), 1) / 3.0 + 0.013
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
        v = rng.standard_normal(x.shape)
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(f, [x], 0, v))


def _sorted_in_place(x):
    x.sort(axis=0)
    return np.sum(np.sin(x) * np.arange(1.0, x.shape[0] + 1)[:, None])


def _filled_in_place(x):
    total = np.sum(x**3)
    x[1:].fill(0.5)
    return total + np.sum(x * np.cos(x))


@pytest.mark.parametrize("f", [_sorted_in_place, _filled_in_place])
@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_an_argument_sorted_or_filled_in_place_is_differentiated_on_a_copy(f, mode):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 3))
    kept = x.copy()
    expected = numeric_grad(lambda z: f(z.copy()), [x], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode=mode), x), expected)
        np.testing.assert_array_equal(x, kept)
        v = rng.standard_normal(x.shape)
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
    np.testing.assert_array_equal(x, kept)
    assert_close(tangent, numeric_jvp(lambda z: f(z.copy()), [x], 0, v))


def _fills_a_buffer(x, buf):
    buf.fill(2.0)
    return np.sum(x * buf + x**2)


def _scales_a_buffer(x, buf):
    buf *= 2.0
    return np.sum(np.sin(x) * buf)


def _exponentiates_a_buffer(x, buf):
    np.exp(buf, out=buf)
    return np.sum(x * buf)


def _writes_an_item_of_a_buffer(x, buf):
    buf[0] = 5.0
    return np.sum(x**2 * buf)


@pytest.mark.parametrize(
    "f", [_fills_a_buffer, _scales_a_buffer, _exponentiates_a_buffer, _writes_an_item_of_a_buffer]
)
@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_a_buffer_not_differentiated_is_left_to_the_caller(f, mode):
    rng = np.random.default_rng(11)
    x = rng.standard_normal(3)
    buf = rng.standard_normal(3)
    kept = buf.copy()
    expected = numeric_grad(lambda z: f(z, kept.copy()), [x], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode=mode), x, buf), expected)
        np.testing.assert_array_equal(buf, kept)
        value, gradient = sg.value_and_grad(f, mode=mode)(x, buf)
    np.testing.assert_array_equal(buf, kept)
    assert_close(gradient, expected)
    assert value == pytest.approx(f(x, kept.copy()))


def _reduced_with_a_mask(x):
    return np.add.reduce(x**2, axis=None, where=x > 0.0, initial=1.0) * x[0, 0]


def _reduced_with_an_initial_value(x):
    return np.maximum.reduce(np.sin(x), axis=0, initial=0.5).sum()


@pytest.mark.parametrize("f", [_reduced_with_a_mask, _reduced_with_an_initial_value])
@pytest.mark.parametrize("mode", ["tape", "auto"])
@pytest.mark.parametrize("transform", ["grad", "jvp", "hvp"])
def test_a_ufunc_reduction_with_options_is_refused_at_its_line_on_the_tape(f, mode, transform):
    x = np.random.default_rng(5).standard_normal((3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.S2SGradError, match="without initial= and where=") as refused:
            if transform == "grad":
                sg.grad(f, mode=mode)(x)
            elif transform == "jvp":
                sg.jvp(f, (x,), (np.ones_like(x),), mode=mode)
            else:
                sg.hvp(f, (x,), (np.ones_like(x),), mode=mode)
    line = f.__code__.co_firstlineno + 1
    assert f"{__file__}:{line}:" in str(refused.value)


CALLS: dict = {"n": 0}
COUNTS: collections.defaultdict = collections.defaultdict(int)
TOTALS = [0]
STEPS = np.zeros(1)


def _counted_in_a_dict(x):
    CALLS["n"] += 1
    return np.sum(np.sin(x) * x) * CALLS["n"]


def _counted_in_a_defaultdict(x):
    COUNTS["calls"] = COUNTS["calls"] + 1
    return np.sum(np.sin(x) * x) * COUNTS["calls"]


def _counted_in_a_list(x):
    TOTALS[0] += 1
    return np.sum(np.sin(x) * x) * TOTALS[0]


def _counted_in_an_array(x):
    STEPS[0] += 1.0
    return np.sum(np.sin(x) * x) * STEPS[0]


def _reset_counters():
    CALLS["n"] = 0
    COUNTS.clear()
    TOTALS[0] = 0
    STEPS[0] = 0.0


def _unit(x):
    return np.sin(x) + x * np.cos(x)  # the gradient of sum(sin(x) * x)


@pytest.mark.parametrize("f", [_counted_in_a_dict, _counted_in_a_defaultdict])
@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_a_global_dict_updated_in_place_keeps_what_each_call_left(f, mode):
    x = np.random.default_rng(13).standard_normal((2, 3))
    _reset_counters()
    try:
        df = sg.grad(f, mode=mode)
        for count in (1, 2, 3):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert_close(df(x), count * _unit(x))
        assert (CALLS["n"], COUNTS["calls"]) in ((3, 0), (0, 3))
    finally:
        _reset_counters()


@pytest.mark.parametrize(
    "f",
    [_counted_in_a_dict, _counted_in_a_list, _counted_in_an_array],
    ids=["dict", "list", "array"],
)
def test_second_order_of_a_function_updating_outside_state_is_refused_by_source(f):
    x = np.random.default_rng(17).standard_normal(3)
    v = np.random.default_rng(19).standard_normal(3)
    _reset_counters()
    try:
        with pytest.raises(sg.UnsupportedError, match="belongs to the code around") as refused:
            sg.hvp(f, (x,), (v,), mode="s2s")
        line = f.__code__.co_firstlineno + 1
        assert f"{__file__}:{line}:" in str(refused.value)
        _reset_counters()
        for count in (1, 2):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                (product,) = sg.hvp(f, (x,), (v,), mode="auto")
            second = 2 * np.cos(x) - x * np.sin(x)  # the Hessian of sum(sin(x) * x) is diagonal
            assert_close(product, count * second * v)
    finally:
        _reset_counters()


def _writes_through_a_strided_view(x):
    y = x * 1.0
    w = as_strided(y, shape=(3,), strides=(2 * y.itemsize,))
    w[1] = x[0] ** 2
    return np.sum(np.sin(y) * y)


def test_a_strided_view_written_into_is_seen_after_the_tape_routed_as_strided():
    rng = np.random.default_rng(23)
    x = rng.standard_normal(6)
    v = rng.standard_normal(6)
    expected = numeric_jvp(_writes_through_a_strided_view, [x], 0, v)
    _, taped = sg.jvp(_writes_through_a_strided_view, (x,), (v,), mode="tape")
    assert_close(taped, expected)
    with pytest.raises(sg.UnsupportedError, match="may share memory"):
        sg.jvp(_writes_through_a_strided_view, (x,), (v,), mode="s2s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, tangent = sg.jvp(_writes_through_a_strided_view, (x,), (v,), mode="auto")
        assert_close(tangent, expected)
        assert_close(
            call_twice(sg.grad(_writes_through_a_strided_view, mode="auto"), x),
            numeric_grad(_writes_through_a_strided_view, [x], 0),
        )


def _matrix(x):
    return (np.outer(x[:3], x[:3]) + 3.0 * np.eye(3)).T  # Fortran-ordered: SciPy may overwrite it


def _solved_over_the_matrix(x):
    a = _matrix(x)
    solution = scipy.linalg.solve(a, x[3:] * 1.0, overwrite_a=True)
    return np.sum(solution) + np.sum(a)


def _solved_over_the_right_hand_side(x):
    b = x[3:] * 1.0
    solution = scipy.linalg.solve(_matrix(x), b, overwrite_b=True)
    return np.sum(solution) + np.sum(b**2)


def _solved_by_cholesky_over_the_right_hand_side(x):
    b = x[3:] * 1.0
    solution = scipy.linalg.cho_solve(scipy.linalg.cho_factor(_matrix(x)), b, overwrite_b=True)
    return np.sum(solution) + np.sum(b**2)


def _triangle_solved_over_the_right_hand_side(x):
    b = x[3:] * 1.0
    solution = scipy.linalg.solve_triangular(np.triu(_matrix(x)), b, overwrite_b=True)
    return np.sum(solution) + np.sum(b**2)


def _median_over_the_input(x):
    y = x * 1.0
    return np.median(y, overwrite_input=True) + np.sum(y * np.arange(6.0))


def _quantile_over_the_input(x):
    y = x * 1.0
    return np.nanquantile(y, 0.3, overwrite_input=True) + np.sum(y * np.arange(6.0))


@pytest.mark.parametrize(
    "f, match",
    [
        (_solved_over_the_matrix, "overwrite_a=True"),
        (_solved_over_the_right_hand_side, "overwrite_b=True"),
        (_solved_by_cholesky_over_the_right_hand_side, "overwrite_b=True"),
        (_triangle_solved_over_the_right_hand_side, "overwrite_b=True"),
        (_median_over_the_input, "overwrite_input=True"),
        (_quantile_over_the_input, "overwrite_input=True"),
    ],
)
@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("transform", ["grad", "jvp"])
def test_an_argument_overwritten_in_place_by_the_library_is_refused(f, match, mode, transform):
    x = np.array([0.3, -0.7, 1.2, -0.1, 0.8, 0.45])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.NonDifferentiableError, match=match) as refused:
            if transform == "grad":
                sg.grad(f, mode=mode)(x)
            else:
                sg.jvp(f, (x,), (np.ones(6),), mode=mode)
    assert f"{__file__}:" in str(refused.value)


def _solved_without_overwriting(x):
    a = _matrix(x)
    solution = scipy.linalg.solve(a, x[3:] * 1.0, overwrite_a=False, overwrite_b=False)
    return np.sum(solution) + np.sum(a) + np.median(x, overwrite_input=False)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_the_overwrite_keywords_left_false_are_differentiated(mode):
    x = np.random.default_rng(29).standard_normal(6)
    assert_close(
        call_twice(sg.grad(_solved_without_overwriting, mode=mode), x),
        numeric_grad(_solved_without_overwriting, [x], 0),
    )
