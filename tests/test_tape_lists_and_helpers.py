"""The tape records what model code does: arrays made from lists of values being
differentiated (``np.array([a, b])``, ``np.sum([a, b])``, ``np.full(shape, c)``), helpers
that change their caller's arrays in place (``a[:] *= 0.5``), and the runtime helpers that
generated gradients call, so that the tape differentiates any generated gradient again.

Every gradient is checked against central differences, in ``s2s``, ``tape`` and ``auto``
where the source transformer accepts the code, on the first and the second call, and to
second order.
"""

import re
import warnings

import generated_code_corpus
import numpy as np
import pytest
from oracle import assert_close, call_twice, directional_derivative, numeric_grad

import s2sgrad as sg
from s2sgrad.rules.registry import get_rule
from s2sgrad.runtime import states_left
from s2sgrad.tape.runtime_calls import routed_helpers

MODES = ["s2s", "tape", "auto"]
X = np.array([0.3, -0.5, 0.8])


def check_gradient(f, x, modes=MODES, second_order=("s2s", "tape")):
    """``grad(f)`` against differences in each mode, first and second call; and its
    Hessian-vector product in the modes of ``second_order`` that are among ``modes``."""
    expected = numeric_grad(f, (x,), 0)
    for mode in modes:
        with warnings.catch_warnings():
            warnings.simplefilter("error" if mode == "auto" and "s2s" in modes else "ignore")
            actual = call_twice(sg.grad(f, mode=mode), x)
        assert_close(actual, expected, rtol=1e-5, atol=1e-7)
    if second_order:
        v = np.linspace(0.6, -0.4, x.size)
        expected = directional_derivative(sg.grad(f, mode="tape"), x, v)
        for mode in [m for m in modes if m in second_order]:
            (actual,) = sg.hvp(f, (x,), (v,), mode=mode)
            assert_close(actual, expected, rtol=1e-4, atol=1e-6)


# 1. Arrays from lists and tuples -----------------------------------------------------------


def from_a_nested_list(x):
    m = np.array([[x[0] * x[1], 2.0], [np.sin(x[2]), x[0]]])
    return np.sum(m @ m)


def from_a_tuple_of_arrays(x):
    return np.sum(np.asarray((x[:2], x[1:] ** 2)) ** 2)


def with_dtype_and_ndmin(x):
    return np.sum(np.array([x[0], x[2]], dtype=float, ndmin=2) * x[:2])


def reductions_of_lists(x):
    total = np.sum([x[0] * x[1], np.sin(x[2])]) + np.mean([x, x**2])
    clipped = np.clip([x[0] * x[1], x[2], 0.1], -0.1, 0.7)
    return total + np.dot([x[0], x[1]], x[1:]) + np.sum(clipped * np.mean([x, x**3], axis=0))


def clipped_into_itself(x):
    t = x * 2.0
    np.clip([t[0], x[1] * x[2], t[2]], -0.45, 0.5, out=(t,))  # out= is not read as a list
    return np.sum(t * x)


def filled(x):
    return np.sum(np.full((2, 3), x[0] * x[1]) * x) + np.sum(np.full_like(x, np.sum(x)) ** 2)


@pytest.mark.parametrize(
    "f",
    [
        from_a_nested_list,
        from_a_tuple_of_arrays,
        with_dtype_and_ndmin,
        reductions_of_lists,
        filled,
    ],
)
def test_arrays_made_from_values_being_differentiated(f):
    check_gradient(f, X)


def set_first(a, value):
    z = np.asarray(a)  # the same array: writing z changes a, and the caller's array
    z[0] = value


def changed_through_asarray(x):
    y = x * 2.0
    set_first(y, x[1] ** 2)
    return np.sum(y * x)


def test_out_is_not_read_as_a_list():
    # s2s over s2s refuses the generated gradient's own write into t (aliasing)
    check_gradient(clipped_into_itself, X, second_order=("tape",))


def test_np_asarray_of_a_tape_value_is_that_value():
    expected = numeric_grad(changed_through_asarray, (X,), 0)
    assert_close(call_twice(sg.grad(changed_through_asarray, mode="tape"), X), expected)


def test_numpy_has_its_own_functions_when_no_tape_records():
    array, asarray, full, total = np.array, np.asarray, np.full, np.sum
    sg.grad(from_a_nested_list, mode="tape")(X)
    assert (np.array, np.asarray, np.full, np.sum) == (array, asarray, full, total)
    assert type(np.array) is type(np.zeros)  # NumPy's builtin, not a wrapper


def test_a_list_inside_a_gradient_tape():
    a, b = sg.constant(1.5), sg.constant(np.array([2.0, -1.0]))
    with sg.GradientTape() as tape:
        tape.watch([a, b])
        y = np.sum(np.array([[a, a * a], b]) ** 2) + np.sum([a, np.sum(b)])
    da, db = tape.gradient(y, [a, b])
    assert_close(da, 2 * a.numpy() + 4 * a.numpy() ** 3 + 1.0)
    assert_close(db, 2 * b.numpy() + 1.0)


# 2. Helpers that change their caller's arrays in place -------------------------------------


def halve(a):
    a[:] *= 0.5


def scale(a, s):
    a *= s


def halved_copy(x):
    y = x.copy()
    halve(y)
    return np.sum(y * x)


def scaled_list(x):
    grads = [np.sin(x), np.cos(x) * x]
    for g in grads:
        scale(g, x[0])
    return np.sum(grads[0] * grads[1])


def test_a_helper_changing_an_array_its_caller_made():
    # s2s over s2s refuses the generated gradient's own writes (aliasing): the tape's hvp
    check_gradient(halved_copy, X, second_order=("tape",))
    # s2s inlines scale() and refuses its update of a list's array; auto then takes the
    # tape, which follows it (tape/view_writes.py)
    check_gradient(scaled_list, X, modes=["tape"])
    with pytest.raises(sg.UnsupportedError, match="may share memory"):
        sg.grad(scaled_list, mode="s2s")(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        assert_close(sg.grad(scaled_list, mode="auto")(X), numeric_grad(scaled_list, [X], 0))


def test_the_helper_example_of_the_issue():
    x = np.array([1.0, 2.0, 3.0])
    for mode in MODES:
        assert_close(sg.grad(halved_copy, mode=mode)(x), x)


def scales_the_argument(x):
    scale(x, x[0])
    return np.sum(x**2)


def test_a_helper_changing_the_differentiated_functions_argument():
    """NumPy would change the caller's array: s2s differentiates the function of the
    argument's values on a copy (the caller's array is left as it is); the tape refuses."""
    x = X.copy()
    for mode in ("s2s", "auto"):
        check_gradient(scales_the_argument, x, modes=[mode], second_order=())
        np.testing.assert_array_equal(x, X)
    with pytest.raises(sg.UnsupportedError) as error:
        sg.grad(scales_the_argument, mode="tape")(X.copy())
    assert f"{__file__}:" in str(error.value)
    assert "return new arrays" in str(error.value) or "return a new array" in str(error.value)


def halves_a_view(x):
    y = x * 1.0
    halve(y[:2])
    return np.sum(y * x)


def halves_an_array_a_view_shares(x):
    y = x * 1.0
    v = y[:2]
    halve(y)
    return np.sum(v * x[:2])


def halves_an_array_a_listed_view_shares(x):
    y = x * 1.0
    pairs = [(y[1:], 1.0)]
    halve(y)
    return np.sum(pairs[0][0] * x[1:])


class _Box:
    pass


BOX = _Box()


def halves_an_array_a_view_on_an_object_shares(x):
    y = x * 1.0
    BOX.view = y[:2]  # a global object's attribute
    halve(y)
    return np.sum(BOX.view * x[:2])


@pytest.mark.parametrize(
    "f",
    [
        halves_a_view,
        halves_an_array_a_view_shares,
        halves_an_array_a_listed_view_shares,
        halves_an_array_a_view_on_an_object_shares,
    ],
)
def test_a_helper_changing_memory_another_value_shares_is_followed_on_the_tape(f):
    """The held values sharing the memory are found and follow the write (view_writes.py)."""
    assert_close(sg.grad(f, mode="tape")(X.copy()), numeric_grad(f, [X.copy()], 0))


def halves_a_copy_of_a_view(x):
    y = x * 1.0
    v = y[:2].copy()  # what the refusal advises
    halve(v)
    return np.sum(v * x[:2]) + np.sum(y)


def test_what_the_refusal_advises_works():
    check_gradient(halves_a_copy_of_a_view, X, second_order=("tape",))


def writes_items_of_arrays_it_made(x):
    out = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            out[i, j] = np.sum(x[i : i + 2] * x[j])
    masked = np.outer(x, x)
    mask = np.arange(3)[None, :] < np.array([1, 2, 3])[:, None]
    masked = masked.copy()
    masked[~mask] = -1.0
    return np.sum(out**2) + np.sum(np.exp(masked))


def test_item_writes_into_arrays_the_function_made_on_the_tape():
    check_gradient(writes_items_of_arrays_it_made, X, modes=["tape"])


# 3. Every runtime helper generated code calls, differentiated by the tape ----------------

# Differentiable helpers none of the corpus's reverse-mode gradients calls, and why.
NOT_IN_REVERSE_CODE = {
    "pack_like": "forward mode: the tangent of np.array of a list",
    "block_of": "forward mode: the tangent of np.block (and unblock's own rule)",
    "sequence_part": "forward mode: the tangent of list(x)",
    "items_cotangent": "the cotangent of dict.items() of a dict passed in, in containers",
    "only_last_writes": "repeated item writes into an array read again after its write, "
    "which the tape refuses in generated code as it does in the user's (aliasing)",
    "convolution_mode": "called by np.convolve's rule body, not by generated code",
    "cov_rows_embed": "np.cov of a y given as rows, in the rule body of np.cov",
    "plain_reduction": "ufunc.reduce with initial= or where=, which s2s refuses",
    "concatenated": "+ of lists in a loop header, inlined away by the corpus's loop",
    "for_items": "a loop over a list, rewritten to an index loop in the corpus's code",
    "only_entry": "the derivative of entry_of (second order): test_dict_entries.py's hvp",
    "dict_of_pairs": "forward mode: the tangent of dict(pairs), test_dict_entries.py",
    "attribute_cotangent": "a gradient with respect to an object: test_model_objects.py",
    "attribute_entry": "a gradient with respect to an object: test_model_objects.py",
    "attribute_tangent": "forward mode, with respect to an object: test_model_objects.py",
    "attribute_only": "forward mode: an attribute stored on a record, with_attribute's tangent",
    "run_checkpointed": "a checkpointed loop: tests/test_checkpointed_loops.py (hvp on the tape)",
    "owned_tangent": "forward mode: an item written into an array made complex, "
    "tests/test_forward_mode_complex_item_writes.py",
    # the tape over an s2s gradient joins two list cotangents with + where generated code
    # adds them (a routed helper's CotangentList comes back a plain list): repeated_sum
    # then refuses the wrong length, tests/test_repeated_lists.py
    "repeated": "a list repeated by *: tests/test_repeated_lists.py, to second order",
    "repeated_sum": "a list repeated by *: tests/test_repeated_lists.py, to second order",
}

V = np.array([0.4, -0.3, 0.2, 0.9, -0.6, 0.5])
POINT = np.array([0.3, -0.5, 0.8, 1.1, -0.2, 0.6])
_HELPER_NAMES = {helper.__name__ for helper in routed_helpers()}
_CALLED: set[str] = set()


@pytest.mark.parametrize("f", generated_code_corpus.CORPUS, ids=lambda f: f.__name__)
def test_the_tape_differentiates_a_generated_gradient(f):
    gradient = sg.grad(f, mode="s2s")
    call_twice(gradient, POINT)
    text = sg.source(gradient) + sg.source(gradient, optimize=False)
    _CALLED.update(set(re.findall(r"\b(\w+)\(", text)) & _HELPER_NAMES)

    def projected(x):
        return np.sum(gradient(x) * V)

    expected = numeric_grad(projected, (POINT,), 0)
    assert_close(call_twice(sg.grad(projected, mode="tape"), POINT), expected, rtol=1e-4, atol=1e-6)


def test_the_corpus_calls_every_differentiable_runtime_helper():
    if not _CALLED:
        pytest.skip("runs after the corpus")
    differentiable = {h.__name__ for h in routed_helpers() if get_rule(h).differentiable}
    missing = differentiable - _CALLED - set(NOT_IN_REVERSE_CODE)
    assert not missing, f"add a function calling these to generated_code_corpus.py: {missing}"


def test_every_helper_generated_code_calls_has_a_rule_or_is_not_given_values():
    """A helper without a rule would run its body on tape values: those are the ones that
    call rules or transforms themselves, listed here."""
    import s2sgrad.runtime as runtime

    callers_of_rules = {
        "vjp_call",
        "jvp_call",
        "star_tangents",
        "custom_vjp",
        "custom_jvp_call",
        "jvp_entry",
        "dynamic_vjp",
        "transformed_vjp",
        "dynamic_jvp",
        "transformed_jvp",
        "method_vjp",
        "transformed_method_vjp",
        "method_jvp",
        "transformed_method_jvp",
    }
    bookkeeping = {"forget_all_stored", "nothing_raised"}  # no values: notes, a try's guard
    bookkeeping.add("owned_together")  # copies with owned (which has a rule), or none
    # notes of the final states of plain arrays and lists: tape values pass them by
    bookkeeping |= set(states_left.__all__)
    tangents = {"pinv_tangent", "vander_tangent", "cov_tangent", "corrcoef_tangent"}
    without = {
        name
        for name in runtime.__all__
        if callable(getattr(runtime, name)) and get_rule(getattr(runtime, name)) is None
    }
    known = callers_of_rules | tangents | bookkeeping
    assert without <= known, without - known


# 4. float() of a value being differentiated ------------------------------------------------


def of_a_number(x):
    return np.sin(x) * x**2


def test_a_gradient_of_a_python_float_is_differentiated_again_on_the_tape():
    x = 0.7
    expected = numeric_grad(lambda y: sg.grad(of_a_number)(y), (x,), 0)
    for inner in ("s2s", "tape"):
        gradient = sg.grad(of_a_number, mode=inner)
        again = sg.grad(lambda y, gradient=gradient: gradient(y) * 1.0, mode="tape")
        assert_close(call_twice(again, x), expected, rtol=1e-5, atol=1e-7)


def test_float_of_a_value_being_differentiated_is_still_refused():
    def f(x):
        return np.sin(float(x[0]))

    with pytest.raises(sg.NonDifferentiableError, match="float"):
        sg.grad(f, mode="tape")(X)


def _entry_of_a_cotangent_dict(x):
    from s2sgrad.runtime import entry_of
    from s2sgrad.runtime.core import CotangentDict

    return np.sum(entry_of(CotangentDict({"a": x, "b": x * 2.0}), "b", x) ** 2)


def _entry_of_a_cotangent_list(x):
    from s2sgrad.runtime import without_entry
    from s2sgrad.runtime.core import CotangentList

    return np.sum(without_entry(CotangentList([x, np.sin(x)]), 0)[0] ** 2)


@pytest.mark.parametrize("f", [_entry_of_a_cotangent_dict, _entry_of_a_cotangent_list])
def test_the_tape_follows_values_in_generated_codes_own_containers(f):
    """Generated code keeps cotangents in CotangentDict and CotangentList; differentiated
    again on the tape, the tape values inside them were not scanned as arguments (the
    helper's result got a zero derivative, silently)."""
    x = np.linspace(0.1, 0.6, 3)
    assert_close(sg.grad(f, mode="tape")(x), numeric_grad(f, (x,), 0), rtol=1e-6, atol=1e-8)


def _step(state, k):
    pos, vel = state
    return pos + 0.1 * vel, vel - 0.1 * k * pos


def _energy_after_steps(pos0):
    state = (pos0, np.array([0.0, 1.0]))
    total = 0.0
    for _ in range(3):
        state = _step(state, 1.5)
        total = total + np.sum(state[0] ** 2)
    return total


def test_the_tape_keeps_what_a_rule_returned_when_the_code_replaces_its_entries():
    """The gradient of a helper called in a loop writes ``dstate[0] = ...`` into the list
    the helper's backward returned; differentiated again on the tape (forward over
    reverse, hvp in mode="auto"), the recording held that same list, so the entry's
    cotangent was looked up under the new value: silently wrong."""
    pos0, along = np.array([1.0, 0.2]), np.array([0.3, -0.4])
    gradient = sg.grad(_energy_after_steps, mode="s2s")
    _, tangent = sg.jvp(gradient, (pos0,), (along,), mode="tape")
    assert_close(tangent, directional_derivative(gradient, pos0, along), rtol=1e-5, atol=1e-7)


def _loss_of_two(params, seed):
    return np.sum(np.sin(params) * params) + 0.0 * seed


_FIXED = [np.array([0.1, -0.2, 0.3, 0.05]), 3]


def _wrapper_filling_in_arguments(*ws):
    a2 = list(_FIXED)
    for i, w in zip((0,), ws):
        a2[i] = w
    return _loss_of_two(*a2)


def test_forward_mode_on_the_tape_keeps_a_tuples_tangent_whole():
    """A rule of one argument returns its result in a 1-tuple when that result may be a
    tuple: ``for_items(ws)`` of the ``*ws`` tuple got, on the tape in forward mode, the
    tangent of the tuple's first entry for the whole tuple (hvp in mode="auto" of a
    wrapper filling in arguments was silently wrong)."""
    x, along = _FIXED[0], np.array([0.3, -0.1, 0.2, 0.4])
    expected = (-np.sin(x) * x + 2 * np.cos(x)) * along
    gradient = sg.grad(_wrapper_filling_in_arguments, mode="s2s")
    (_, tangent) = sg.jvp(gradient, (x,), (along,), mode="tape")
    assert_close(tangent[0] if isinstance(tangent, tuple) else tangent, expected, 1e-7, 1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (product,) = sg.hvp(_wrapper_filling_in_arguments, (x,), (along,), mode="auto")
    assert_close(product, expected, 1e-7, 1e-9)


@pytest.mark.parametrize("helper", ["owned", "snapshot", "reads_stored", "for_items"])
def test_rules_of_one_value_keep_a_tuple_whole(helper):
    import s2sgrad.runtime as runtime
    from s2sgrad.rules.registry import per_argument

    rule = get_rule(getattr(runtime, helper))
    value = (np.ones(2), np.zeros(3))
    for derivative in (rule.vjp, rule.jvp):
        entry = per_argument(derivative(value, value, value), 1)[0]
        assert isinstance(entry, (tuple, list)) and len(entry) == 2, helper


def _written_into_zeros_of_a_list(x):
    from s2sgrad.runtime import zeros_like_value

    d = zeros_like_value([x, x * 2.0])  # a CotangentList of zeros, as generated code makes
    d[0][1:] += np.sin(x[:-1])
    return np.sum(d[0] ** 2)


def test_the_tape_follows_writes_into_the_zeros_of_a_container():
    """Zeros generated code makes for a list are blank tape values, as an array's are: the
    tape refused the item write into them as an update of a plain array."""
    x = np.array([0.3, -0.2, 0.5])
    expected = numeric_grad(_written_into_zeros_of_a_list, (x,), 0)
    assert_close(sg.grad(_written_into_zeros_of_a_list, mode="tape")(x), expected, 1e-6, 1e-8)


# a list holding a tape value joined to a plain array: NumPy hands the tape neither the
# list nor the value (np.concatenate([y, [t]]) of a neural ODE's vector field, say)
_PLAIN = np.array([1.0, -2.0])


def joined_with_a_list_of_time(t):
    return np.sum(np.concatenate([_PLAIN, [t, t * 2]]) ** 2)


def stacked_with_a_list(t):
    return np.sum(np.stack([_PLAIN, [t, t * 3]]) ** 3)


def hstacked_with_a_list(t):
    return np.sum(np.hstack([_PLAIN, [t]]) ** 2)


def vstacked_with_a_list(t):
    return np.sum(np.vstack([_PLAIN, [t, 1.0]]) ** 3)


def column_stacked_with_a_list(t):
    return np.sum(np.column_stack([_PLAIN, [t, 2 * t]]) ** 3)


def dstacked_with_a_list(t):
    return np.sum(np.dstack([_PLAIN, (t, t)]) ** 3)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f",
    [
        joined_with_a_list_of_time,
        stacked_with_a_list,
        hstacked_with_a_list,
        vstacked_with_a_list,
        column_stacked_with_a_list,
        dstacked_with_a_list,
    ],
    ids=lambda f: f.__name__,
)
def test_a_list_holding_a_tape_value_joined_to_a_plain_array(f, mode):
    gradient = call_twice(sg.grad(f, mode=mode), 0.7)
    assert_close(gradient, numeric_grad(f, [0.7], 0))
