"""Programs written the way users write them, checked against central differences in
every mode that takes them, first and second order.

Found here: Hessian-vector products in mode="auto" of a wrapper passing a list of arrays
of different shapes through ``f(*args)`` crashed with NumPy's "inhomogeneous shape"
``ValueError``:

* a function iterating its list parameter (``max(... for v in xs)``) was transformed not
  knowing the parameter is a list, so the cotangents of its items were added with ``+``,
  whose derivative broadcasts to ``np.shape`` of the list; a parameter the function
  iterates now counts as maybe a list (``reverse/facts.maybe_structured``);
* on the tape, ``unbroadcast`` of a tuple of cotangents (which generated code calls) was
  recorded as one call, whose rule took ``np.shape`` of the whole tuple; the tape now
  records its call on each entry (``tape/values.ENTRYWISE_HELPERS``);
* a function reading fields of a named tuple parameter (``p.W``) crashed the same way: a
  parameter whose fields are read counts as maybe a container too.

And a silently wrong Hessian-vector product in mode="auto": a wrapper calling a function
with a checkpointed loop and an ``sg.checkpoint`` helper. Forward mode ran that function's
generated gradient in two calls, the forward one on the tape; the pullback it saved for the
checkpointed helper (a closure over the values being differentiated) lost its tangent, so
the backward call missed how the pullback moves with them. A function a forward-mode call
returns that may hold values being differentiated is now refused when a later call of
forward mode would use it (``runtime/dispatch._UNTRACKED``); mode="auto" then
differentiates the whole wrapper on the tape.
"""

import warnings
from typing import NamedTuple

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_gradient_in_every_mode,
    assert_hvp_matches_differences,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg
from s2sgrad.rules import registry

R = np.random.default_rng(1118)


def largest_and_total(xs):
    return max(np.sum(v**2) for v in xs) + sum(np.sum(np.sin(v)) for v in xs)


def forwarded(*args):
    return largest_and_total(*args)


def network(Ws, bs, x):
    h = x
    for W, b in zip(Ws, bs):
        h = np.tanh(h @ W + b)
    return np.sum(h**2)


def network_of_pairs(params, x):
    Ws, bs = zip(*params)
    return network(list(Ws), list(bs), x)


def forwarded_pairs(*args):
    return network_of_pairs(*args)


def _ragged():
    Ws = [R.normal(size=(3, 4)), R.normal(size=(4, 2))]
    bs = [R.normal(size=4), R.normal(size=2)]
    return Ws, bs


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_hvp_of_a_wrapper_passing_a_ragged_list_to_a_function_iterating_it(mode):
    Ws, _ = _ragged()
    assert_hvp_matches_differences(forwarded, (Ws,), mode)


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_hvp_of_a_wrapper_passing_pairs_unzipped_by_the_callee(mode):
    Ws, bs = _ragged()
    assert_hvp_matches_differences(
        forwarded_pairs, (list(zip(Ws, bs)), R.normal(size=(5, 3))), mode
    )


def test_unbroadcast_derivative_goes_entry_by_entry_over_a_tuple_of_cotangents():
    def program(a, b):
        entries = sg.runtime.unbroadcast((a * 2.0, b**2), (a, b))
        return np.sum(entries[0] ** 2) + np.sum(np.sin(entries[1]))

    a, b = R.normal(size=3), R.normal(size=(2, 2))
    for index, arg in enumerate((a, b)):
        expected = numeric_grad(program, [a, b], index)
        assert_close(sg.grad(program, wrt=index, mode="tape")(a, b), expected)
        tangent = R.normal(size=np.shape(arg))
        _, derivative = sg.jvp(
            lambda v, i=index: program(*((v, b) if i == 0 else (a, v))),
            (arg,),
            (tangent,),
            mode="tape",
        )
        assert_close(derivative, numeric_jvp(program, [a, b], index, tangent))


class Layer(NamedTuple):
    W: np.ndarray
    b: np.ndarray


def layer_loss(p, x):
    return np.sum(np.tanh(x @ p.W + p.b) ** 2)


def forwarded_layer(*args):
    return layer_loss(*args)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_hvp_of_a_wrapper_passing_a_named_tuple_whose_fields_are_read(mode):
    p = Layer(R.normal(size=(3, 2)), R.normal(size=2))
    assert_hvp_matches_differences(forwarded_layer, (p, R.normal(size=(4, 3))), mode)


def _smooth(v):
    return np.sin(v) * v


def checkpointed_model(x):
    h = x
    for _ in sg.checkpointed(range(6), snapshots=2):
        h = np.tanh(h * 1.1) + 0.1 * x
    return np.sum(sg.checkpoint(_smooth)(h))


def forwarded_model(*args):
    return checkpointed_model(*args)


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_hvp_of_a_wrapper_around_checkpointed_code(mode):
    assert_hvp_matches_differences(forwarded_model, (R.normal(size=3),), mode)


def test_forward_mode_over_a_saved_pullback_is_refused_in_s2s():
    gradient = sg.grad(forwarded_model, mode="s2s")
    with pytest.raises(sg.UnsupportedError, match=r"test_user_programs_round18.py:\d+"):
        sg.jvp(gradient, (R.normal(size=3),), (R.normal(size=3),), mode="s2s")


# Found here too: silently wrong gradients, in all three modes, of code writing in place
# into what a function made in the code returns: a closure's view of an array around it
# (`def view(): return u[1:]`, a lambda, one from a list or a dict of functions, a partial
# of one, one a helper made: `getter = make_view(u)`). The analysis of which names share
# memory took a call of such a function for a new array (it read only the arguments);
# a function value now holds what it reads, and its calls may return it
# (`passes/sharing.py`). Each is refused, naming the line, in every mode.


def _closure_view(x):
    u = x * 1.0

    def view():
        return u[1:]

    v = view()
    v *= 3.0
    return np.sum(u**2)


def _lambda_view(x):
    u = x * 1.0
    view = lambda: u[1:]  # noqa: E731
    v = view()
    v += x[:2]
    return np.sum(u**2)


def _listed_closure_view(x):
    u = x * 1.0

    def view():
        return u[1:]

    functions = [view]
    v = functions[0]()
    v *= 3.0
    return np.sum(u**2)


def _make_view(a):
    return lambda: a[1:]


def _helper_made_view(x):
    u = x * 1.0
    getter = _make_view(u)
    v = getter()
    v *= 3.0
    return np.sum(u**2)


def _dict_of_lambdas_view(x):
    u = x * 1.0
    table = {"head": lambda: u[:2]}
    v = table["head"]()
    v *= 2.0
    return np.sum(u**2)


def _partial_view(x):
    import functools

    u = x * 1.0

    def view(k):
        return u[k:]

    v = functools.partial(view, 1)()
    v *= 3.0
    return np.sum(u**2)


@pytest.mark.parametrize(
    "f",
    [
        _closure_view,
        _lambda_view,
        _listed_closure_view,
        _helper_made_view,
        _dict_of_lambdas_view,
        _partial_view,
    ],
)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_writing_into_a_view_a_made_function_returned_is_refused(f, mode):
    """Refused by source transformation; the tape follows the write through the view
    (tape/view_writes.py)."""
    if mode != "s2s":
        _right_on_the_tape(f, mode)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.S2SGradError, match=r"test_user_programs_round18.py:\d+.*share"):
            sg.grad(f, mode=mode)(np.array([1.0, 2.0, 3.0]))


def _right_on_the_tape(f, mode):
    x = np.array([1.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(f, mode=mode)(x.copy())
    np.testing.assert_allclose(gradient, numeric_grad(f, [x.copy()], 0), rtol=1e-5, atol=1e-7)


MASSES = np.array([1.0, 2.0, 1.5, 0.5])


def leapfrog_energy(pos0, vel0):
    """An n-body leapfrog with its force helper nested: the helper's np.fill_diagonal was
    refused by source (nested functions' library writes were not rewritten), and its
    result was taken to share the positions, so pos += ... was refused in every mode."""
    pos, vel = pos0.copy(), vel0.copy()
    dt = 0.01

    def acceleration(p):
        d = p[None, :, :] - p[:, None, :]
        inverse = (np.sum(d**2, axis=-1) + 0.1) ** -1.5
        np.fill_diagonal(inverse, 0.0)
        return np.sum(d * (inverse * MASSES[None, :])[:, :, None], axis=1)

    a = acceleration(pos)
    for _ in range(10):
        vel += 0.5 * dt * a
        pos += dt * vel
        a = acceleration(pos)
        vel += 0.5 * dt * a
    return 0.5 * np.sum(MASSES[:, None] * vel**2) + np.sum(pos**2)


def test_nbody_leapfrog_with_a_nested_force_helper():
    # wrt both: with one, the tape refuses 'vel += ...' into the other's plain copy
    pos, vel = R.normal(size=(4, 2)), 0.1 * R.normal(size=(4, 2))
    expected = tuple(numeric_grad(leapfrog_energy, [pos, vel], i) for i in (0, 1))
    for mode in ("s2s", "auto", "tape"):
        gradient = sg.grad(leapfrog_energy, wrt=(0, 1), mode=mode)
        assert_close(gradient(pos, vel), expected)
        assert_close(gradient(pos, vel), expected)
    for index, arg in enumerate((pos, vel)):
        tangent = R.normal(size=arg.shape)
        _, derivative = sg.jvp(
            lambda v, i=index: leapfrog_energy(*((v, vel) if i == 0 else (pos, v))),
            (arg,),
            (tangent,),
            mode="auto",
        )
        assert_close(derivative, numeric_jvp(leapfrog_energy, [pos, vel], index, tangent))


# And two silently wrong gradients on the tape (and in auto, which tapes what source
# transformation refuses): an in-place operator method called directly changed nothing
# on the tape, and out= into a slice wrote into a new value, not the array it views.


def _explicit_in_place_method(x):
    u = x.copy()
    u.__iadd__(x)
    return np.sum(u * x)


def _out_into_a_slice(x):
    u = x * 1.0
    np.negative(u[1:], out=u[1:])
    return np.sum(u * x)


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_out_into_a_slice_is_followed_on_the_tape(mode):
    _right_on_the_tape(_out_into_a_slice, mode)


@pytest.mark.parametrize("f", [_explicit_in_place_method])
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_in_place_writes_the_tape_cannot_follow_are_refused(f, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.S2SGradError, match=r"test_user_programs_round18.py:\d+"):
            sg.grad(f, mode=mode)(np.array([1.0, 2.0, 3.0]))


def _accumulating(x, total=np.zeros(3)):  # noqa: B008 (the gotcha under test)
    total += 1.0
    return np.sum(total * x)


def test_a_default_array_changed_in_place_is_refused_by_source_and_taped_in_auto():
    """Each call of ``_accumulating`` sees what the calls before it left in its default:
    source transformation differentiated a fresh copy each time (the same gradient every
    call, a silent difference from the function); it refuses now, and auto's tape follows
    the default as NumPy does."""
    with pytest.raises(sg.UnsupportedError, match=r"test_user_programs_round18.py:\d+.*'total'"):
        sg.grad(_accumulating, mode="s2s")(np.ones(3))
    before = _accumulating.__defaults__[0].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(_accumulating, mode="auto")
        for step in (1.0, 2.0):
            assert_close(gradient(np.ones(3)), before + step)


def _chained_then_updated(x):
    a = b = x * 2.0
    a += 1.0
    return np.sum(b * x)


def _shape_assigned(x):
    y = x * 1.0
    y.shape = (3, 1)
    return np.sum(y @ y.T)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_chained_assignment_names_share_their_value(mode):
    """``a = b = v`` binds one array to both names: ``a += 1`` changes ``b`` too. The
    sharing analysis gave each target an array of its own: a wrong gradient in every mode.
    Source transformation refuses it; the tape changes the one tape value both hold."""
    if mode != "s2s":
        _right_on_the_tape(_chained_then_updated, mode)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.S2SGradError, match=r"test_user_programs_round18.py:\d+.*'b'"):
            sg.grad(_chained_then_updated, mode=mode)(np.array([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_assigning_shape_is_refused_with_reshape_advice(mode):
    # the tape raised a bare AttributeError (a property without a setter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.S2SGradError, match=r"test_user_programs_round18.py:\d+.*reshape"):
            sg.grad(_shape_assigned, mode=mode)(np.array([1.0, 2.0, 3.0]))


def _repeated_list(x):
    entries = [x * 2.0] * 2
    entries[0] += 1.0
    return np.sum(entries[1] * x)


def _keys_sharing_one_array(x):
    table = dict.fromkeys(["a", "b"], x * 2.0)
    table["a"] += 1.0
    return np.sum(table["b"] * x)


def _appended_twice(x):
    y = x * 2.0
    entries = []
    entries.append(y)
    entries.append(y)
    entries[0] += 1.0
    return np.sum(entries[1] * x)


@pytest.mark.parametrize("f", [_repeated_list, _keys_sharing_one_array, _appended_twice])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_an_entry_updated_in_place_that_another_entry_may_hold_is_refused(f, mode):
    """One array in two entries: ``entries[0] += 1`` changes ``entries[1]`` too. Appended
    twice, the gradient was wrong in every mode; repeated with ``*`` or ``dict.fromkeys``,
    on the tape. Source transformation refuses it; the tape changes the one tape value
    both entries hold."""
    if mode != "s2s":
        _right_on_the_tape(f, mode)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.S2SGradError, match=r"test_user_programs_round18.py:\d+.*entr"):
            sg.grad(f, mode=mode)(np.array([1.0, 2.0, 3.0]))


def accumulated_gradients(ws, x):
    grads = [np.zeros_like(w) for w in ws]
    for k in range(2):
        for i in range(len(ws)):
            grads[i] += ws[i] * x[k]
    totals = [0.0] * 2
    for k in range(2):
        totals[k] += x[k] ** 2
    return sum(np.sum(g**2) for g in grads) + sum(totals)


def test_entries_made_anew_by_a_comprehension_are_updated_in_place():
    """``[np.zeros_like(w) for w in ws]`` holds new arrays: ``grads[i] += ...`` was refused
    in every mode, taken to change ``ws``; and ``[0.0] * n`` holds numbers."""
    ws = [R.normal(size=2), R.normal(size=3)]
    assert_gradient_in_every_mode(accumulated_gradients, [ws, R.normal(size=3)])


def _two_results_used_twice(x):
    return np.sum(np.modf(x)[0] * 2.0 + np.modf(x)[1] ** 2 + np.sin(np.modf(x)[0]))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_second_order_through_a_two_result_function_read_twice(mode):
    """``np.modf(x)`` is computed once and read twice: the second-order code added the two
    tuple cotangents of its result with ``+``, which joins tuples (a TypeError in s2s; in
    other shapes it could have dropped a part). A name bound to a function returning
    several arrays adds its cotangents entry by entry (``reverse/facts._returns_several``)."""
    x = np.array([[0.3, 1.7, 0.2], [-0.4, 2.2, 0.1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sg.check_grads(_two_results_used_twice, x, order=2, mode=mode)


def _scaled(x, s):
    return x * s


@registry.vjp_rule(_scaled, inline=False)
def _scaled_vjp(g, ans, x, s):
    return g * s, None  # no derivative in s: refused when s is differentiated


def _uses_scaled(x, s):
    return np.sum(_scaled(x, s))


def test_a_called_rules_missing_entry_is_refused_not_a_silent_zero():
    """A rule called rather than inlined (``inline=False``) whose VJP gives ``None`` for a
    value being differentiated gave a zero in s2s; it is refused, as an inlined rule's is."""
    with pytest.raises(sg.UnsupportedError, match=r"test_user_programs_round18.py:\d+.*'s'"):
        sg.grad(_uses_scaled, wrt=1, mode="s2s")(np.ones(3), 2.0)
    assert_close(sg.grad(_uses_scaled, wrt=0, mode="s2s")(np.ones(3), 2.0), np.full(3, 2.0))


def _helper_to_reload(x):
    return np.sin(x)


def _calls_the_helper(x):
    return np.sum(_helper_to_reload(x) ** 2)


def _top_to_reload(x):
    return np.sum(np.sin(x))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_code_replaced_in_place_is_differentiated_anew(mode):
    """A reload (IPython's autoreload) replaces a function's ``__code__`` in place, no name
    rebound: the cached derivative of the function, or of its caller, went on being the old
    code's, a stale gradient. Each function's code is now an assumption checked at each call."""

    def cosine(x):
        return np.cos(x)

    def summed_cosine(x):
        return np.sum(np.cos(x))

    x = R.normal(size=3)
    helper_code, top_code = _helper_to_reload.__code__, _top_to_reload.__code__
    try:
        gradient = sg.grad(_calls_the_helper, mode=mode)
        assert_close(gradient(x), 2 * np.sin(x) * np.cos(x))
        _helper_to_reload.__code__ = cosine.__code__
        assert_close(gradient(x), -2 * np.cos(x) * np.sin(x))
        top = sg.grad(_top_to_reload, mode=mode)
        assert_close(top(x), np.cos(x))
        _top_to_reload.__code__ = summed_cosine.__code__
        assert_close(top(x), -np.sin(x))
    finally:
        _helper_to_reload.__code__, _top_to_reload.__code__ = helper_code, top_code


def _extremes_by_key(x):
    values = [x[0], x[1] * 2.0, x[2] ** 2]
    return max(values, key=lambda v: abs(v)) + min(values, key=lambda v: -v)


def test_builtin_max_and_min_with_a_key_send_the_cotangent_to_the_value_returned():
    """``max(values, key=...)`` returns one of the values, whatever the key: its cotangent
    goes to that value. It was refused in s2s and auto (the tape took it)."""
    assert_gradient_in_every_mode(_extremes_by_key, [np.array([0.3, -1.2, 0.8])])
