"""In-place writes on the tape: the backward pass sees what each recorded operation saw.

NumPy code changes arrays in place (``t[:] = 2``, ``t.fill(2)``, ``np.copyto``, ``t *= 2``).
A recorded operation whose derivative reads a plain array must get the value the array
had when the operation ran, not the value it has when the backward pass runs. Each case is
checked against central differences in every mode, on the first and second call, and to
second order (a gradient of a gradient) on the tape.
"""

import copy

import numpy as np
import pytest
from model_zoo import corr2d
from oracle import assert_close, call_twice, numeric_grad
from test_item_writes import CASES as ITEM_WRITES
from test_item_writes import IDS as ITEM_WRITE_IDS

import s2sgrad as sg

MODES = ["tape", "auto", "s2s"]


def second_order(f, x, v, mode):
    """The directional derivative of ``grad(f)`` along ``v``, by a gradient of a gradient."""

    def along(x):
        return np.sum(sg.grad(f, mode=mode)(x) * v)

    return sg.grad(along, mode=mode)(x)


def numeric_second_order(f, x, v):
    """The same by central differences of central differences (a wide outer step)."""

    def along(x):
        return float(np.sum(numeric_grad(f, (x,), 0) * v))

    return numeric_grad(along, (x,), 0, step=1e-4)


def check_gradient(f, x, mode, second=True):
    """``grad(f)`` against differences, first and second call, and to second order."""
    expected = numeric_grad(f, (x,), 0)
    assert_close(call_twice(sg.grad(f, mode=mode), x), expected, rtol=1e-6, atol=1e-8)
    if second and mode != "auto":  # a gradient of an auto gradient that fell back: not yet
        v = np.linspace(0.5, -0.7, x.size).reshape(x.shape)
        expected = numeric_second_order(f, x, v)
        assert_close(second_order(f, x, v, mode), expected, rtol=1e-4, atol=1e-5)
        if mode == "tape":  # forward over reverse as well
            (product,) = sg.hvp(f, (x,), (v,), mode=mode)
            assert_close(product, expected, rtol=1e-4, atol=1e-5)


def gradient_or_refusal(f, x, mode):
    """The gradient, or (not on the tape) the S2SGradError that refuses it clearly."""
    try:
        check_gradient(f, x, mode)
    except sg.S2SGradError as error:
        assert mode != "tape", f"the tape refused: {error}"
        assert __file__ in str(error), f"the error does not name this file: {error}"


# 1. A plain array changed after a recorded operation used it -------------------------------


def filled_after_use(x):
    t = np.ones(3)
    y = np.sum(np.sin(x) * t)
    t.fill(2.0)
    return y + np.sum(np.sin(x) * t)


def sliced_after_use(x):
    t = np.ones(3)
    y = np.sum(np.sin(x) * t)
    t[:] = 2.0
    return y + np.sum(np.sin(x) * t)


def scaled_after_use(x):
    t = np.ones(3)
    y = np.sum(np.sin(x) * t)
    t *= 2.0
    return y + np.sum(np.sin(x) * t)


def copied_into_after_use(x):
    t = np.ones(3)
    y = np.sum(np.sin(x) * t)
    np.copyto(t, np.array([2.0, 3.0, 4.0]))
    return y + np.sum(np.sin(x) * t)


def view_written_after_use(x):
    t = np.ones(3)
    view = t[1:]
    y = np.sum(np.sin(x) @ t)
    view[:] = 3.0
    return y + np.sum(np.sin(x) @ t)


def index_changed_after_use(x):
    index = np.array([0, 2])
    y = np.sum(np.sin(x[index]) ** 2)
    index[1] = 1
    return y + np.sum(x[index] ** 3)


def mask_changed_after_use(x):
    mask = np.array([True, False, True])
    y = np.sum(np.where(mask, np.sin(x), x**2))
    mask[:] = False
    return y + np.sum(np.where(mask, x, np.cos(x)))


def listed_array_changed_after_use(x):
    t = np.ones(3)
    y = np.sum(np.stack([np.sin(x), t]) ** 2)
    t[0] = 5.0
    return y + np.sum(np.stack([x, t]) ** 2)


SCALE = np.ones(3)


def global_changed_after_use(x):
    y = np.sum(np.sin(x) * SCALE)
    SCALE[:] = 0.5
    result = y + np.sum(np.sin(x) * SCALE)
    SCALE[:] = 1.0  # as it was, for the next call
    return result


MUTATED_AFTER_USE = [
    filled_after_use,
    sliced_after_use,
    scaled_after_use,
    copied_into_after_use,
    view_written_after_use,
    index_changed_after_use,
    mask_changed_after_use,
    listed_array_changed_after_use,
    global_changed_after_use,
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", MUTATED_AFTER_USE, ids=lambda f: f.__name__)
def test_an_array_changed_after_use_keeps_its_old_value_for_the_derivative(f, mode):
    x = np.random.default_rng(len(f.__name__)).uniform(0.2, 0.9, size=3)
    gradient_or_refusal(f, x, mode)


def scaled_argument(x, scale):
    y = np.sum(np.sin(x) * scale)
    scale[:] = 0.5
    return y + np.sum(np.sin(x) * scale)


@pytest.mark.parametrize("mode", MODES)
def test_an_argument_changed_after_use_keeps_its_old_value(mode):
    x = np.array([0.3, 0.5, 0.7])
    expected = 1.5 * np.cos(x)  # sin(x) . 1 + sin(x) . 0.5
    try:
        gradient = sg.grad(scaled_argument, mode=mode)(x, np.ones(3))
    except sg.UnsupportedError as error:  # the transformer never changes an input
        assert mode != "tape" and __file__ in str(error), error
        return
    assert_close(gradient, expected, rtol=1e-12, atol=1e-12)


# 2. Item writes recorded as new versions of an array -------------------------------------


def second_order_of(f, args, wrt, v, mode):
    def along(*args):
        return np.sum(sg.grad(f, wrt=wrt, mode=mode)(*args) * v)

    return sg.grad(along, wrt=wrt, mode=mode)(*args)


def numeric_second_order_of(f, args, wrt, v):
    def along(*args):
        return float(np.sum(numeric_grad(f, args, wrt) * v))

    return numeric_grad(along, args, wrt, step=1e-4)


@pytest.mark.parametrize("function, args, wrt", ITEM_WRITES, ids=ITEM_WRITE_IDS)
def test_item_writes_follow_numpy_on_the_tape(function, args, wrt):
    try:
        gradient = call_twice(sg.grad(function, wrt=wrt, mode="tape"), *args)
    except sg.NonDifferentiableError as error:  # a write into a plain array (np.zeros(n))
        assert "test_item_writes.py:" in str(error) and "np.zeros_like" in str(error)
        return
    assert_close(gradient, numeric_grad(function, args, wrt), rtol=1e-6, atol=1e-8)
    v = np.cos(np.arange(np.size(args[wrt]), dtype=float)).reshape(np.shape(args[wrt]))
    v = float(v) if isinstance(args[wrt], float) else v
    expected = numeric_second_order_of(function, args, wrt, v)
    assert_close(second_order_of(function, args, wrt, v, "tape"), expected, rtol=1e-4, atol=1e-5)


def copied_then_masked(x):
    y = x.copy()
    y[x > 0.5] = -3.0
    return np.sum(np.tanh(y) * x)


def buffer_of_two(x):
    buf = np.zeros_like(x, shape=2)
    buf[0] = np.sum(x)
    buf[1] = 2.0 * np.sum(x * x)
    return np.sum(buf**2)


def rows_written_in_a_loop(x):
    out = np.empty_like(x, shape=(3, x.size))
    for i in range(3):
        out[i] = np.sin(x * (i + 1))
    return np.sum(out @ x)


def written_twice_and_read_between(x):
    y = x * 2.0
    first = np.sum(y**2)  # reads y before the writes
    y[1] = np.cos(x[0])
    middle = np.sum(y**3)
    y[1:] = y[:-1] * x[1:]  # reads the version before this write
    return first + middle + np.sum(np.exp(y))


def written_with_itself(x):
    y = np.sin(x)
    y[...] = y
    y[::-1] = y
    return np.sum(y * np.arange(1.0, 4.0))


def repeated_index_last_write_wins(x):
    y = np.zeros_like(x)
    y[[0, 2, 0]] = x * np.array([1.0, 2.0, 3.0])
    return np.sum(np.sin(y))


def repeated_index_updated_once(x):
    y = x**2
    y[[1, 1, 2]] += x
    return np.sum(y**2)


def argument_written(x):
    x[0] = 2.0 * x[1]  # the function's own input: the tape's copy, as in s2s (refused there)
    return np.sum(x**2)


TAPE_WRITES = [
    copied_then_masked,
    buffer_of_two,
    rows_written_in_a_loop,
    written_twice_and_read_between,
    written_with_itself,
    repeated_index_last_write_wins,
    repeated_index_updated_once,
    argument_written,
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", TAPE_WRITES, ids=lambda f: f.__name__)
def test_item_writes_into_arrays_the_function_made(f, mode):
    x = np.random.default_rng(len(f.__name__)).uniform(0.2, 0.9, size=3)
    gradient_or_refusal(f, x, mode)


def convolved(x):
    return np.sum(np.tanh(corr2d(np.outer(x, x[::-1]), np.array([[1.0, -0.5], [0.25, 2.0]]))))


def buffer_from_np_zeros(x):
    buf = np.zeros(2)
    buf[0] = np.sum(x)
    buf[1] = 2.0 * np.sum(x * x)
    buf[1:] += buf[:1] * x[0]
    return np.sum(buf**2)


def rows_into_np_empty(x):
    out = np.empty((3, x.size))
    for i in range(3):
        out[i, :] = np.sin(x * (i + 1))
    return np.sum(out @ x)


def lower_triangle_from_a_vector(x):
    L = np.zeros((2, 2))
    L[np.tril_indices(2)] = x
    return np.sum((L @ L.T) ** 2)


def at_a_computed_index(x):
    y = np.zeros(3)
    y[int(np.argmax(x))] = np.sum(x)
    return np.sum(y * x)


def scatter_added_into_np_zeros(x):
    sums = np.zeros(2)
    np.add.at(sums, np.array([0, 1, 1]), np.sin(x))
    return np.sum(sums**2 * np.arange(1.0, 3.0))


def scatter_subtracted_into_a_product(x):
    sums = np.ones((2, 3)) * 2.0
    np.subtract.at(sums, (np.array([0, 1, 0]), np.array([2, 2, 0])), x**2)
    return np.sum(sums**3)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f",
    [
        convolved,
        buffer_from_np_zeros,
        rows_into_np_empty,
        lower_triangle_from_a_vector,  # an index NumPy computes may be computed again
        at_a_computed_index,
        scatter_added_into_np_zeros,  # np.add.at(sums, index, v): sums bound anew
        scatter_subtracted_into_a_product,
    ],
    ids=lambda f: f.__name__,
)
def test_item_writes_into_plain_arrays_the_function_made(f, mode):
    x = np.random.default_rng(len(f.__name__)).uniform(0.2, 0.9, size=3)
    gradient_or_refusal(f, x, mode)


def into_a_given_buffer(x, buf):
    buf[1] = np.sum(x)
    return np.sum(buf)


def _largest(x):
    return int(np.argmax(x))


def at_an_index_a_function_computes(x):
    y = np.zeros(3)
    y[_largest(x)] = np.sum(x)
    return np.sum(y)


_SHARED = np.ones(3)


def into_a_rebound_array(x):
    y = np.zeros(3)
    y = _SHARED  # bound again to an array the function did not make
    y[2] = np.sum(x)
    return np.sum(y)


def scatter_added_into_a_given_buffer(x, buf):
    np.add.at(buf, [0, 0], x[:2])
    return np.sum(buf)


@pytest.mark.parametrize(
    "f, text",
    [
        (into_a_given_buffer, "buf[1] = np.sum(x)"),
        (at_an_index_a_function_computes, "y[_largest(x)] = np.sum(x)"),
        (into_a_rebound_array, "y[2] = np.sum(x)"),
        (scatter_added_into_a_given_buffer, "np.add.at(buf, [0, 0], x[:2])"),
    ],
    ids=lambda f: getattr(f, "__name__", ""),
)
def test_a_write_into_a_plain_array_the_tape_cannot_follow_is_refused(f, text):
    given = f in (into_a_given_buffer, scatter_added_into_a_given_buffer)
    args = (np.ones(3), np.zeros(2)) if given else (np.ones(3),)
    with pytest.raises(sg.NonDifferentiableError) as error:
        sg.grad(f, mode="tape")(*args)
    assert f"{__file__}:{_line_of(text)}" in str(error.value)
    assert "np.zeros_like(x" in str(error.value)


def scale_in_place(g):
    g[:] = g * 0.5
    return g


def calls_a_helper_that_scales_its_argument(x):
    y = np.sin(x)
    scale_in_place(y)
    return np.sum(y)


@pytest.mark.parametrize("mode", MODES)
def test_a_helper_that_scales_its_argument_in_place(mode):
    check_gradient(calls_a_helper_that_scales_its_argument, np.array([0.3, 0.5, 0.7]), mode)


def writes_an_array_a_view_shares(x):
    y = np.sin(x)
    view = y[1:]
    y[1] = 0.0
    return np.sum(view)


def writes_a_plain_array_a_view_shares(x):
    y = np.zeros(3)
    tail = y[1:]
    y[2] = np.sum(x**2)
    return np.sum(tail)


def test_a_write_a_view_of_a_tape_value_sees_is_followed():
    """The tape records the write into y, and the view reads the new y (view_writes.py)."""
    x = np.array([0.3, 0.5, 0.7])
    check_gradient(writes_an_array_a_view_shares, x, "tape")


@pytest.mark.parametrize("f, text", [(writes_a_plain_array_a_view_shares, "y[2] = np.sum(x**2)")])
def test_a_write_another_name_would_see_is_refused(f, text):
    with pytest.raises(sg.UnsupportedError) as error:
        sg.grad(f, mode="tape")(np.array([0.3, 0.5, 0.7]))
    message = str(error.value)
    assert f"{__file__}:{_line_of(text)}" in message, message
    assert "instead" in message or "copy" in message, message


def _line_of(text):
    with open(__file__) as source:
        return next(n for n, line in enumerate(source, 1) if line.strip() == text)


def test_a_gradient_tape_keeps_its_values_immutable():
    x = sg.constant(np.ones(3))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
        with pytest.raises(TypeError, match="immutable"):
            y[0] = 1.0


def test_the_tape_leaves_the_input_as_it_was():
    x = np.array([0.3, 0.5, 0.7])
    sg.grad(argument_written, mode="tape")(x)
    np.testing.assert_array_equal(x, [0.3, 0.5, 0.7])


# 3. Type tests see the value a tape value stands for -------------------------------------


def as_matrix(v):
    return v if isinstance(v, np.ndarray) and v.ndim == 2 else v.reshape(1, -1)


def branches_on_isinstance(x):
    total = np.sum(x)
    if isinstance(x, np.ndarray) and isinstance(total, float):
        return np.sum(as_matrix(x) ** 3) * total
    return total


def test_isinstance_takes_numpys_branch_on_the_tape():
    x = np.array([0.3, 0.5, 0.7])
    for mode in ("tape", "s2s", "auto"):
        check_gradient(branches_on_isinstance, x, mode)


def compares_type(x):
    if type(x) is np.ndarray:
        return np.sum(x**2)
    return np.sum(x)


def test_a_type_comparison_is_refused_on_the_tape():
    x = np.array([0.3, 0.5, 0.7])
    with pytest.raises(sg.UnsupportedError) as error:
        sg.grad(compares_type, mode="tape")(x)
    line = compares_type.__code__.co_firstlineno + 1
    assert f"{__file__}:{line}" in str(error.value) and "isinstance" in str(error.value)
    assert_close(sg.grad(compares_type, mode="auto")(x), 2 * x)  # s2s tests the value


def test_a_gradient_tape_shows_its_own_class():
    x = sg.constant(np.ones(3))
    with sg.GradientTape() as tape:
        tape.watch(x)
        assert not isinstance(x * 2.0, np.ndarray)


# 4. np.full with a fill value being differentiated (tape/conversions.py) ------------------


def filled_with_a_sum(x):
    return np.sum(np.full(3, np.sum(x)) * x)


def filled_as_float(x):
    return np.sum(np.full((2, 3), x[0] * x[1], dtype=float) * x)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [filled_with_a_sum, filled_as_float], ids=lambda f: f.__name__)
def test_np_full_of_a_differentiated_value(f, mode):
    check_gradient(f, np.array([0.3, 0.5, 0.7]), mode)


def ones_times_a_sum(x):
    return np.sum(np.sum(x) * np.ones(3) * x) + np.sum(np.broadcast_to(x[0], (2, 3)) ** 2)


def copied_into_a_buffer(x):
    y = np.zeros_like(x)
    np.copyto(y, np.sin(x))
    return np.sum(y**2 * x)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [ones_times_a_sum, copied_into_a_buffer], ids=lambda f: f.__name__)
def test_what_the_refusal_advises_works(f, mode):
    x = np.random.default_rng(7).uniform(0.2, 0.9, size=3)
    gradient_or_refusal(f, x, mode)


# copy.copy and copy.deepcopy of a tape value are recorded copies ----------------------------


def copies_with_the_copy_module(x):
    y = copy.copy(x * 2.0)
    z = copy.deepcopy(np.sin(y))
    z[0] = y[1]  # a write into the copy leaves y as it was
    return np.sum(z * y)


@pytest.mark.parametrize("mode", MODES)
def test_copy_module_copies_carry_the_derivative(mode):
    x = np.random.default_rng(5).uniform(0.2, 0.9, size=3)
    gradient_or_refusal(copies_with_the_copy_module, x, mode)
