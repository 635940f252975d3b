"""In-place updates of an array that another name shares: refused, never differentiated wrongly.

``v += e`` and ``v[i] = e`` change an array in place; the transformer's ``v = v + e`` and
recorded item updates do not reach other names that see the same memory. Where such a
name is read after the update the code is refused (in every mode: the tape would be as
wrong); where it is not, or where only numbers are involved, the gradient is checked.
"""

import warnings

import numpy as np
import pytest
from oracle import directional_derivative, numeric_grad

import s2sgrad as sg


def plain_alias(x):
    v = x * 2.0
    w = v
    v += 1.0
    return np.sum(w * x)


def view_of_it(x):
    v = x + x
    flipped = np.flip(v)
    v *= np.tanh(x)
    return np.sum(np.sin(flipped))


def list_holding_it(x):
    out = []
    v = x * 2.0
    out.append(v)
    v -= 1.0
    return np.sum(out[0] * x)


def item_update_seen_by_alias(x):
    buffer = np.zeros(3)
    seen = buffer
    buffer[0] = np.sum(x**2)
    return np.sum(seen * x)


def item_update_seen_by_row_view(x):
    buffer = np.zeros((2, 3))
    row = buffer[0]
    buffer[0] = x
    return np.sum(row * x)


def entry_replaced_in_a_list_seen_by_another_name(x):
    entries = [x * 1.0, x * 2.0]
    seen = entries
    entries[0] = np.sin(x)
    return np.sum(seen[0] * x)


def alias_read_in_the_next_iteration(x):
    v = x * 1.0
    total = 0.0
    for _ in range(3):
        previous = v
        total = total + np.sum(previous * x)
        v += x
    return total


@pytest.mark.parametrize(
    "function, alias, line",
    [
        (plain_alias, "w", "plain_alias"),
        (view_of_it, "flipped", "view_of_it"),
        (list_holding_it, "out", "list_holding_it"),
        (item_update_seen_by_alias, "seen", "item_update_seen_by_alias"),
        (alias_read_in_the_next_iteration, "previous", "alias_read"),
        (entry_replaced_in_a_list_seen_by_another_name, "seen", "entry_replaced"),
    ],
)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_updates_of_shared_arrays_are_refused(function, alias, line, mode):
    x = np.array([0.3, -0.2, 0.5])
    if mode == "auto":  # the tape follows a list, and a write through shared memory
        _right_or_refused(function, (x,), mode)
        return
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.grad(function, mode=mode)(x)
    message = str(refused.value)
    assert "test_aliases.py:" in message
    shares = (
        "the same list or dict"
        if function is entry_replaced_in_a_list_seen_by_another_name
        else "share memory"
    )
    assert f"'{alias}'" in message and shares in message
    assert "in place" in message


@pytest.mark.parametrize(
    "function, alias",
    [
        (plain_alias, "w"),
        (view_of_it, "flipped"),
        (list_holding_it, "out"),
        (alias_read_in_the_next_iteration, "previous"),
    ],
)
def test_the_tape_follows_the_same_updates(function, alias):
    # under a function transform the tape changes the tape value itself (and the values
    # sharing its memory, tape/view_writes.py), which every name holding it sees
    _right_or_refused(function, VECTOR, "tape", refused_too=False)


def _right_or_refused(function, args, mode, refused_too=True):
    """The gradient against differences, or (``refused_too``) a refusal naming this file."""
    import warnings

    from oracle import assert_close, numeric_grad

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(function, mode=mode)(*(np.copy(a) for a in args))
    except sg.S2SGradError as error:
        assert refused_too, str(error)
        assert "test_aliases.py:" in str(error), str(error)
        return
    assert_close(gradient, numeric_grad(function, [np.copy(a) for a in args], 0))


def test_a_gradient_tape_used_directly_keeps_rebinding_updates():
    # documented: tape values are immutable and v += e rebinds v, as in TensorFlow
    x = sg.constant(VECTOR[0])
    with sg.GradientTape() as tape:
        tape.watch(x)
        total = plain_alias(x)
    np.testing.assert_allclose(tape.gradient(total, x), 4 * VECTOR[0])


@pytest.mark.parametrize("function", [item_update_seen_by_alias, item_update_seen_by_row_view])
def test_the_tape_refuses_item_updates_of_plain_arrays(function):
    # refused: the alias (or view) would see the write, which the tape cannot show it
    with pytest.raises(sg.S2SGradError, match="test_aliases.py:"):
        sg.grad(function, mode="tape")(*VECTOR)


def either_of(a, b):
    return a if np.sum(a) > np.sum(b) else b


def given_together_then_updated(x):
    v = x * 2.0
    w = either_of(x, v)
    v[0] = 1.0
    return np.sum(x * v) + np.sum(w[1:])


def given_together_read_apart(x):
    v = x * 2.0
    _ = either_of(x, v)
    v[0] = 1.0
    return np.sum(x * v)


def made_new_by_a_function(x):
    v = x * 2.0
    w = scaled(x, v)  # its source shows a new array: w shares neither
    v[0] = 1.0
    return np.sum(x * v) + np.sum(w)


def test_what_a_function_returns_is_read_from_its_source():
    # either_of may return x or v, so reading w after v[0] = ... is refused; it does not
    # make x and v share, so reading x is not; scaled returns a new array
    (x,) = VECTOR
    with pytest.raises(sg.UnsupportedError, match="'w', read afterwards"):
        sg.grad(given_together_then_updated, mode="s2s")(x)
    for function in (given_together_read_apart, made_new_by_a_function):
        gradient = sg.grad(function, mode="s2s")(x)
        np.testing.assert_allclose(gradient, numeric_grad(function, (x,), 0), rtol=1e-6)


def alias_read_only_before(x):
    v = x * 2.0
    before = v
    total = np.sum(before * x)
    v += np.sin(x)
    return total + np.sum(v * v)


def copied_first(x):
    v = x * 2.0
    kept = v.copy()
    v += 1.0
    return np.sum(kept * v * x)


def numbers_only(x, y):
    total = x * 1.0
    previous = total
    total += y
    return previous * total


def rows_copied_into_a_buffer(x):
    buffer = np.zeros((2, 3))
    for i in range(2):
        buffer[i] = x[i] * (i + 1.0)
    return np.sum(np.tanh(buffer) * x)


def arithmetic_of_it(x):
    v = x * 2.0
    doubled = v * 2.0
    summed = v.sum()
    v += 1.0
    return np.sum(doubled * v) + summed


DEFAULTS = (np.array([1.0, 2.0, 3.0]), 0.5, np.array([0.2, 0.1, -0.3]))


def entries_replaced_in_a_new_list(x, scale):  # a wrapper filling in some arguments
    arguments = list(DEFAULTS)
    arguments[0] = x
    for i, value in zip((1,), (scale,)):
        arguments[i] = value * 2.0
    return np.sum(np.tanh(arguments[0] * arguments[1]) * arguments[2]) + len(arguments)


def entries_replaced_then_unpacked(x, scale):
    arguments = [x, x * 2.0, DEFAULTS[2]]
    arguments[1] = np.sin(x) * scale
    return _three(*arguments)


def _three(a, b, c):
    return np.sum(a * b + c)


VECTOR = (np.array([0.3, -0.2, 0.5]),)


@pytest.mark.parametrize(
    "function, args, modes",
    [
        (alias_read_only_before, VECTOR, ("s2s", "tape")),
        (copied_first, VECTOR, ("s2s", "tape")),
        (numbers_only, (0.7, -1.3), ("s2s", "tape")),
        (arithmetic_of_it, VECTOR, ("s2s", "tape")),
        # tape values cannot be written into a NumPy buffer
        (rows_copied_into_a_buffer, (np.array([[0.3, -0.2, 0.5], [0.1, 0.9, -0.4]]),), ("s2s",)),
    ],
)
def test_updates_nobody_else_sees_are_differentiated(function, args, modes):
    for mode in modes:
        gradient = sg.grad(function, mode=mode)(*args)
        expected = numeric_grad(function, args, 0)
        np.testing.assert_allclose(gradient, expected, rtol=1e-6, atol=1e-8, err_msg=mode)


@pytest.mark.parametrize(
    "function", [entries_replaced_in_a_new_list, entries_replaced_then_unpacked]
)
@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_entries_replaced_in_a_list_only_one_name_holds_are_differentiated(function, mode):
    """``a = list(...)`` or ``[...]``, read only for its entries: ``a[i] = v`` replaces an
    entry nothing else sees, so it is no shared update (it was refused, tape or not)."""
    args = (*VECTOR, 0.7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto uses no tape
        gradient = sg.grad(function, wrt=(0, 1), mode=mode)(*args)
    for position in (0, 1):
        expected = numeric_grad(function, args, position)
        np.testing.assert_allclose(gradient[position], expected, rtol=1e-6, atol=1e-8)
    along = (np.array([0.5, -1.0, 0.25]), 0.3)
    product = sg.hvp(function, args, along, mode=mode)
    gradient_function = sg.grad(function, wrt=(0, 1), mode="tape")
    expected = directional_derivative(lambda xs: gradient_function(*xs), args, along, step=1e-5)
    for got, want in zip(product, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_a_number_updated_while_shared_is_differentiated_to_any_order():
    # total is a number here, so total += y means total = total + y, as the code says
    x, y = 0.7, -1.3
    assert sg.grad(numbers_only)(x, y) == pytest.approx(2 * x + y)
    assert sg.hessian(numbers_only)(x, y) == pytest.approx(2.0)
    assert sg.jvp(numbers_only, (x, y), (1.0, 0.0))[1] == pytest.approx(2 * x + y)


def first_element_written(x):
    v = np.zeros_like(x * 1.0)
    v[0] = np.sum(x**2)
    v = v + x
    return np.sum(np.sin(v))


def scaled(a, b):
    return a * np.sin(b)


def pair(a):
    return a * 2.0, np.sin(a)


def written_in_a_branch_then_passed_on(x):
    v = x * 2.0 + x
    if np.ndim(v) > 0:
        v[..., :1] = np.tanh(v[..., -1:]) * 2.0
    w = scaled(b=x, a=x + x) + pair(a=v)[0]
    return np.sum(np.sin(w))


def passed_on_after_the_branch(x):
    v = np.ones_like(x) * x + x
    if np.ndim(v) > 0:
        v[..., :1] = np.tanh(v[..., -1:]) * 2.0
    _ = scaled(x, v)  # a new array, as its source shows; x and v stay apart either way
    return np.sum(np.sin(v)) + 0.01 * np.sum(x)


@pytest.mark.parametrize(
    "function",
    [first_element_written, written_in_a_branch_then_passed_on, passed_on_after_the_branch],
)
def test_generated_code_updating_its_own_arrays_is_differentiated_again(function):
    # The gradient restores v[0] after reading dv, which unbroadcast(dv_1, v) made: the
    # helpers' results share only their cotangent argument. In the others v is made anew
    # outside the branch that writes into it, and the user functions' VJPs, read from
    # their source, return new arrays: neither x nor a cotangent shares v's memory.
    (x,) = VECTOR
    along = np.array([1.0, -2.0, 0.5])
    (product,) = sg.hvp(function, (x,), (along,))
    gradient = sg.grad(function)
    expected = directional_derivative(gradient, x, along, step=1e-5)
    np.testing.assert_allclose(product, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.hessian(function)(x) @ along, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    "transform, expected",
    [
        (lambda: sg.jvp(plain_alias, VECTOR, (np.ones(3),))[1], lambda g: np.sum(g)),
        (lambda: sg.jacobian(plain_alias)(*VECTOR), lambda g: g),
        (lambda: sg.hvp(plain_alias, VECTOR, (np.ones(3),))[0], lambda g: np.full(3, 4.0)),
        (lambda: sg.vjp(plain_alias, *VECTOR)[1](1.0)[0], lambda g: g),
    ],
)
def test_every_transform_falls_back_to_the_tape_for_a_shared_update(transform, expected):
    """The source transformer refuses v += 1.0 with w = v read later; the tape changes
    the one tape value both names hold, as NumPy does (tape/view_writes.py)."""
    gradient = numeric_grad(plain_alias, list(VECTOR), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        np.testing.assert_allclose(transform(), expected(gradient), rtol=1e-6, atol=1e-8)


# Views the analysis must not take for new arrays: only calls positively known to return
# a new array are (a whitelist); every other call may return a view of its arguments.


def split_part_updated(x):
    y = x * 1.0
    a, b = np.split(y, [1])
    a += 1.0
    return np.sum(y**2)


def array_split_part_updated(x):
    y = x * 1.0
    a, b = np.array_split(y, 2)
    b *= 2.0
    return np.sum(y**2)


def hsplit_part_updated(x):
    y = x * 1.0
    a, b = np.hsplit(y, 2)
    a -= 0.5
    return np.sum(y**2)


def vsplit_part_updated(x):
    y = x * 1.0
    a, b, c = np.vsplit(y, 3)
    c += 1.0
    return np.sum(y**2)


def dsplit_part_updated(x):
    y = np.reshape(x, (3, 2, 2)) * 1.0
    a, b = np.dsplit(y, 2)
    a += 1.0
    return np.sum(y**2)


def unstacked_row_updated(x):
    y = x * 1.0
    rows = np.unstack(y)
    first = rows[0]
    first *= 3.0
    return np.sum(y**2)


def list_of_parts_updated(x):
    y = x * 1.0
    parts = np.split(y, [1])
    parts[0] += 1.0
    return np.sum(y**2)


def einsum_transpose_updated(x):
    y = x * 1.0
    t = np.einsum("ij->ji", y)
    t += 1.0
    return np.sum(y**2)


def matrix_transpose_updated(x):
    y = x * 1.0
    t = np.matrix_transpose(y)
    t *= 2.0
    return np.sum(y**2)


def contiguous_updated(x):
    y = x * 1.0
    c = np.ascontiguousarray(y)
    c += 1.0
    return np.sum(y**2)


def required_updated(x):
    y = x * 1.0
    c = np.require(y, requirements="C")
    c += 1.0
    return np.sum(y**2)


def asarray_updated(x):
    y = x * 1.0
    c = np.asarray(y)
    c += 1.0
    return np.sum(y**2)


def view_method_updated(x):
    y = x * 1.0
    c = y.view()
    c += 1.0
    return np.sum(y**2)


def at_least_2d_updated(x):
    y = x[0] * 1.0
    c = np.atleast_2d(y)
    c += 1.0
    return np.sum(y**2)


def squeezed_updated(x):
    y = x[:1] * 1.0
    c = np.squeeze(y)
    c += 1.0
    return np.sum(y**2)


def transposed_updated(x):
    y = x * 1.0
    t = y.T
    t += 1.0
    return np.sum(y**2)


def real_part_updated(x):
    y = x * 1.0
    r = np.real(y)
    r += 1.0
    return np.sum(y**2)


def reshaped_method_updated(x):
    y = x * 1.0
    r = y.reshape(-1)
    r[0] = 5.0
    return np.sum(y**2)


def broadcast_updated(x):
    y = x[0] * 1.0
    c = np.broadcast_to(y, (2, 4))  # read-only: NumPy itself would raise
    c += 1.0
    return np.sum(y**2)


def diagonal_updated(x):
    y = x * 1.0
    c = np.diagonal(y)  # read-only: NumPy itself would raise
    c += 1.0
    return np.sum(y**2)


def rows_of_a_comprehension_updated(x):
    y = x * 1.0
    rows = [y[i] for i in range(2)]
    first = rows[0]
    first *= 3.0
    return np.sum(y**2)


def rows_of_joined_lists_updated(x):
    y = x * 1.0
    rows = [y[0]] + [y[1]]
    first = rows[0]
    first *= 3.0
    return np.sum(y**2)


def copied_list_updated(x):
    y = x * 1.0
    rows = [y]
    again = rows.copy()
    first = again[0]
    first *= 3.0
    return np.sum(y**2)


def base_updated_view_read(x):
    y = x * 1.0
    a, b = np.split(y, [1])
    y *= 2.0
    return np.sum(a**2)


def item_of_base_updated_view_read(x):
    y = x * 1.0
    below = y[1:]
    y[1] *= 3.0
    return np.sum(below**2)


VIEW_CASES = [
    (array_split_part_updated, "y"),
    (hsplit_part_updated, "y"),
    (vsplit_part_updated, "y"),
    (dsplit_part_updated, "y"),
    (unstacked_row_updated, "y"),
    (list_of_parts_updated, "y"),
    (einsum_transpose_updated, "y"),
    (matrix_transpose_updated, "y"),
    (contiguous_updated, "y"),
    (required_updated, "y"),
    (asarray_updated, "y"),
    (view_method_updated, "y"),
    (at_least_2d_updated, "y"),
    (squeezed_updated, "y"),
    (real_part_updated, "y"),
    (broadcast_updated, "y"),
    (diagonal_updated, "y"),
    (rows_of_a_comprehension_updated, "y"),
    (rows_of_joined_lists_updated, "y"),
    (copied_list_updated, "y"),
]
MATRIX = (np.array([[0.3, -0.2, 0.5, 0.1], [0.9, -0.4, 0.7, 0.2], [-0.6, 0.8, 0.25, -0.1]]),)
# the NumPy function a case calls that NumPy 1.26 does not have (both are new in 2.x)
_NEWER_NUMPY = {unstacked_row_updated: "unstack", matrix_transpose_updated: "matrix_transpose"}
VIEW_PARAMS = [
    pytest.param(
        function,
        alias,
        id=function.__name__,
        marks=pytest.mark.skipif(
            not hasattr(np, _NEWER_NUMPY.get(function, "sum")),
            reason=f"np.{_NEWER_NUMPY.get(function)} is not in this NumPy (new in 2.x)",
        ),
    )
    for function, alias in VIEW_CASES
]


# Views for certain, written into and read through the array they view, or the other way
# round: followed by source transformation (passes/view_writes.py); the tape refuses them
FOLLOWED_VIEWS = [
    item_update_seen_by_row_view,
    split_part_updated,
    item_of_base_updated_view_read,
    transposed_updated,
    base_updated_view_read,
    reshaped_method_updated,
]


@pytest.mark.parametrize("function", FOLLOWED_VIEWS, ids=lambda f: f.__name__)
def test_updates_through_views_for_certain_are_followed(function):
    argument = MATRIX[0] if function is not item_update_seen_by_row_view else MATRIX[0][0, :3]
    for mode in ("s2s", "auto"):
        sg.check_grads(function, argument.copy(), order=1, mode=mode)
    _right_or_refused(function, (argument,), "tape")


@pytest.mark.parametrize("function, alias", VIEW_PARAMS)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_updates_through_views_are_refused(function, alias, mode):
    # NumPy changes the viewed array too; the transformer would not: refused. Mode "auto"
    # falls back to the tape, which follows the write (tape/view_writes.py) or refuses it
    if mode == "auto":
        _right_or_refused(function, MATRIX, mode)
        return
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.grad(function, mode=mode)(*MATRIX)
    message = str(refused.value)
    assert "test_aliases.py:" in message
    assert f"'{alias}', read afterwards" in message and "share memory" in message
    assert ".copy()" in message


@pytest.mark.parametrize("function, alias", VIEW_PARAMS)
def test_the_tape_follows_updates_through_views_or_refuses_them(function, alias):
    # the tape records the write into the array the held views lie in (view_writes.py);
    # a read-only view, or a call that needs a plain array (np.ascontiguousarray), is refused
    _right_or_refused(function, MATRIX, "tape")


def made_by_fresh_functions(x):
    v = x * 2.0
    joined = np.concatenate([v, v])
    rows = np.outer(v[0], v[1])
    total = np.sum(v)
    sorted_ = np.sort(v, axis=0)
    product = np.einsum("ij,kj->ik", v, x)  # of one operand it may be a view; of two, new
    size = v.shape
    v += np.tanh(x)
    rows[0, 1] = np.sum(x**2)
    return (
        np.sum(joined[:3] * v)
        + total * np.sum(rows)
        + np.sum(sorted_**2) * size[0]
        + np.sum(product * np.sum(v))
    )


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_results_of_fresh_functions_are_not_views(mode):
    gradient = sg.grad(made_by_fresh_functions, mode=mode)
    for _ in range(2):  # the generic code, then the specialised
        np.testing.assert_allclose(
            gradient(*MATRIX), numeric_grad(made_by_fresh_functions, MATRIX, 0), rtol=1e-6
        )


def _calls_to_try(function):
    square = MATRIX[0][:, :3] @ MATRIX[0][:, :3].T + 3.0 * np.eye(3)
    yield (square,)
    yield (square, square)
    yield (square, 1)
    yield (square[0], square[1])


def test_what_the_whitelist_calls_fresh_shares_no_memory():
    # the claim behind each entry, on the arguments it accepts of a few tried
    import importlib

    from s2sgrad.compiler.passes.fresh_results import FRESH_NUMPY

    checked = 0
    for module_name, names in FRESH_NUMPY.items():
        module = importlib.import_module(module_name)
        for name in sorted(names):
            function = getattr(module, name, None)
            if function is None:  # newer than this NumPy (np.concat, np.unstack ...)
                continue
            assert function.__module__ == module_name, name
            for args in _calls_to_try(function):
                try:
                    with np.errstate(all="ignore"), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        result = function(*args)
                except Exception:
                    continue
                parts = result if isinstance(result, (tuple, list)) else (result,)
                for part in parts:
                    for arg in args:
                        if isinstance(part, np.ndarray) and isinstance(arg, np.ndarray):
                            assert not np.shares_memory(part, arg), name
                checked += 1
    assert checked > 150


def test_a_view_of_a_tape_value_is_itself_or_refused():
    x = sg.constant(MATRIX[0])
    assert x.view() is x
    assert x.view(np.float64) is x
    refusal = r"test_aliases\.py:\d+: \.view"
    with pytest.raises(sg.NonDifferentiableError, match=refusal), sg.GradientTape() as tape:
        tape.watch(x)
        x.view(np.int64)


def viewed_then_read(x):
    y = x * 2.0
    return np.sum(y.view() ** 2)


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_a_view_only_read_is_differentiated(mode):
    # the transformer has no rule for .view() and refuses it; auto takes the tape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(viewed_then_read, mode=mode)(*MATRIX)
    np.testing.assert_allclose(gradient, numeric_grad(viewed_then_read, MATRIX, 0), rtol=1e-6)


@pytest.mark.parametrize("subscripts", ["ij,jk->ik", "ij,ij->ij", "ij,->ij", "ij,kj->ik"])
def test_einsum_of_two_operands_shares_no_memory(subscripts):
    # the claim behind calling np.einsum with two operands fresh ('ij->ji' is a view)
    a = MATRIX[0][:, :3]
    b = np.array(2.0) if ",->" in subscripts else a.T.copy() if "jk" in subscripts else a
    for optimize in (False, True):
        result = np.einsum(subscripts, a, b, optimize=optimize)
        assert not np.shares_memory(result, a) and not np.shares_memory(result, b)


# -- results of the user's helpers, and advice that works -------------------------------


def _kernel(x):
    K = np.exp(-(np.subtract.outer(x, x) ** 2))
    return K


def _window(x):
    return x[1:]


def jittered_kernel(x):
    K = _kernel(x)
    K[1, 1] += 0.5
    K[0] = K[0] * x[2]
    return np.sum(K * K)


def written_window(x):
    y = np.sin(x)
    K = _window(y)
    K[0] = 0.0
    return np.sum(K * x[1:]) + np.sum(y)


def written_window_copied(x):  # what the refusal of written_window advises
    y = np.sin(x)
    K = _window(y).copy()
    K[0] = 0.0
    return np.sum(K * x[1:]) + np.sum(y)


def _energy(x, k, w):
    return np.sum(k * (x - w) ** 2)


_d_energy = sg.grad(_energy)


def zeroed_gradient(x, w):
    g = _d_energy(x, 2.0, w)
    g[0] = 0.0
    return np.sum(g * w) + np.sum(x)


def zeroed_gradient_copied(x, w):  # what the refusal of zeroed_gradient advises
    g = _d_energy(x, 2.0, w).copy()
    g[0] = 0.0
    return np.sum(g * w) + np.sum(x)


def row_written(x, k=1):
    y = np.outer(x, x)
    row = y[k]  # a row for an integer k, a copy for an array of indices
    row *= 5.0
    return np.sum(y * row[1])


def row_written_copied(x, k=1):  # what the refusal of row_written advises
    y = np.outer(x, x)
    row = y[k].copy()
    row *= 5.0
    return np.sum(y * row[1])


def _check_all_modes(f, args):
    expected = numeric_grad(f, args, 0)
    for mode in ("s2s", "tape", "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", sg.S2SGradWarning)
            gradient = sg.grad(f, mode=mode)
            for _ in range(2):  # the generic code, then the specialised one
                np.testing.assert_allclose(gradient(*args), expected, rtol=1e-5, atol=1e-7)


def test_a_helper_returning_an_array_it_made_can_be_updated():
    """Its result is as new as np.exp's: read from the helper's source."""
    _check_all_modes(jittered_kernel, (np.array([0.3, -0.5, 0.8]),))


@pytest.mark.parametrize(
    "refused, fixed, advice",
    [
        (written_window, written_window_copied, "K = _window(...).copy()"),
        (zeroed_gradient, zeroed_gradient_copied, "g = _d_energy(...).copy()"),
        (row_written, row_written_copied, "row = y[k].copy()"),
    ],
    ids=lambda v: getattr(v, "__name__", "advice"),
)
def test_the_advice_of_a_refusal_makes_the_code_differentiate(refused, fixed, advice):
    args = (np.array([0.3, -0.5, 0.8]),)
    if refused is zeroed_gradient:
        args += (np.array([1.0, 2.0, 0.5]),)
    with pytest.raises(sg.UnsupportedError) as caught:
        sg.grad(refused, mode="s2s")(*args)
    assert advice in str(caught.value) and "test_aliases.py:" in str(caught.value)
    _right_or_refused(refused, args, "auto")  # the tape follows it, or refuses it
    _check_all_modes(fixed, args)


def test_sharing_without_a_resolver_reads_appends_and_function_values():
    """The analysis wraps its resolver with the functions the code defines; without one
    (``resolve=None``) a call's owner is simply not known to be a module."""
    import gast

    from s2sgrad.compiler.passes.sharing import Sharing
    from s2sgrad.compiler.syntax import nested_statements

    source = (
        "def f(x):\n    items = []\n    items.append(x)\n    v = items[0]\n"
        "    view = lambda: x[1:]\n    w = view()\n    return v"
    )
    statements = list(nested_statements(gast.parse(source).body[0].body))
    sharing = Sharing(statements, None, {"items"}, {"x"})
    assert sharing.with_("v") >= {"x", "items"}
    assert "x" in sharing.with_("w")
