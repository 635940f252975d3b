"""The hot path's guard of the signature called last (compiler/signature_guards.py): it
runs the code exactly when the arguments' (shape, dtype, class) are the signature's and
the names the code reads hold what they held, and a transformed function called again and
again stays right when the shapes, dtypes, classes or the names the function reads
change."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.freshness import entry_for
from s2sgrad.compiler.signature_guards import MISSING, guarded_call
from s2sgrad.compiler.specialize import signature

SCALE = 2.0


class Marked(np.ndarray):
    pass


def _key(*arrays):
    return tuple((a.shape, a.dtype, type(a)) for a in arrays)


def signature_guard(key, entries=()):
    """The guard alone: True where the guarded call runs its code."""
    guarded = guarded_call(key, lambda *args: True, list(entries))
    return None if guarded is None else (lambda *args: guarded(*args) is True)


def test_the_guard_accepts_exactly_its_signature():
    a, b = np.zeros((2, 3)), np.ones(4, dtype=np.float32)
    guard = signature_guard(_key(a, b))
    assert guard(a, b) and guard(np.ones((2, 3)), np.zeros(4, dtype=np.float32))
    assert not guard(np.zeros((3, 2)), b)
    assert not guard(a, np.ones(4))  # float64
    assert not guard(a, np.ones(4, dtype=">f4"))  # another byte order
    assert not guard(a.view(Marked), b)
    assert not guard(a) and not guard(a, b, b)  # another number of arguments


def test_the_guard_checks_the_names_the_code_reads(monkeypatch):
    entry = entry_for(globals(), "SCALE")
    guard = signature_guard(_key(np.zeros(2)), [entry])
    assert guard(np.ones(2))
    monkeypatch.setattr(__import__(__name__), "SCALE", 3.0)
    assert not guard(np.ones(2))
    assert guarded_call((), lambda: 1, [entry])() is MISSING


def test_keys_of_another_form_have_no_guard():
    assert signature_guard(((1.0, float),)) is None
    assert signature_guard((([2], np.dtype("float64"), np.ndarray),)) is None
    assert signature_guard((((), np.dtype("float64"), "scalar"),)) is None  # np.float64
    assert signature_guard(((np.int64, 3),)) is None
    assert signature_guard((("list", (float,)),)) is None


def test_the_guard_of_numbers_checks_their_class_and_an_integers_value():
    guard = signature_guard(signature((1.5, 3, True, None, "x", 2j), {}))
    assert guard(2.5, 3, True, None, "x", 1j)
    assert not guard(np.float64(2.5), 3, True, None, "x", 1j)  # a NumPy scalar: other code
    assert not guard(2.5, 4, True, None, "x", 1j)  # an integer may set a shape
    assert not guard(2.5, 3.0, True, None, "x", 1j)
    assert not guard(2.5, True, True, None, "x", 1j)  # True == 1, but a bool is not an int
    assert not guard(2.5, 3, 1, None, "x", 1j)
    assert not guard(2.5, 3, True, 0, "x", 1j)
    assert not guard(2.5, 3, True, None, "y", 1j)
    assert not guard(2.5, 3, True, None, "x", 1.0)
    mixed = (np.zeros(2), 1.5)
    assert signature_guard(signature(mixed, {}))(np.ones(2), -1.0)


def loop(a, n, x):
    for _ in range(n):
        x = np.sin(x) * a + SCALE * 0.1 * x
    return x


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_repeated_calls_on_numbers_follow_the_arguments_and_the_globals(mode, monkeypatch):
    gradient = sg.grad(loop, wrt=(0, 2), mode=mode)
    for a, n, x in [(0.3, 4, 0.5)] * 3 + [(0.3, 5, 0.5)] * 3 + [(0.3, 4, 0.5)] * 2:
        expected = [numeric_grad(loop, (a, n, x), i) for i in (0, 2)]
        assert_close(list(gradient(a, n, x)), expected)
    monkeypatch.setattr(__import__(__name__), "SCALE", 5.0)
    expected = [numeric_grad(loop, (0.3, 4, 0.5), i) for i in (0, 2)]
    assert_close(list(gradient(0.3, 4, 0.5)), expected)
    for _ in range(2):
        with pytest.raises(TypeError, match="integer"):  # not differentiable
            gradient(0.3, 4, 3)


def scaled(w, x):
    return np.sum(np.tanh(x @ w) * SCALE)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_repeated_calls_follow_the_arguments_and_the_globals(mode, monkeypatch):
    rng = np.random.default_rng(3)
    gradient = sg.grad(scaled, mode=mode)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    for _ in range(4):  # the third call on takes the guarded path
        assert_close(gradient(w, x), numeric_grad(scaled, (w, x), 0))
    w5, x5 = rng.standard_normal((3, 5)), rng.standard_normal((4, 3))
    for _ in range(3):
        assert_close(gradient(w5, x5), numeric_grad(scaled, (w5, x5), 0))
    assert_close(gradient(w, x), numeric_grad(scaled, (w, x), 0))
    single = gradient(w.astype(np.float32), x.astype(np.float32))
    assert single.dtype == np.float32
    with pytest.raises(TypeError, match="Marked"):  # refused, not run by the ndarray code
        gradient(w.view(Marked), x)
    reshaped = w.copy()
    gradient(reshaped, x)
    gradient(reshaped, x)
    reshaped.shape = (2, 3)  # the same array object, another shape
    x2 = rng.standard_normal((4, 2))
    assert_close(gradient(reshaped, x2), numeric_grad(scaled, (reshaped, x2), 0))
    monkeypatch.setattr(__import__(__name__), "SCALE", 5.0)
    assert_close(gradient(w, x), numeric_grad(scaled, (w, x), 0))


def tanh_loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2), w[0]


def tanh_value(w, x):
    return tanh_loss(w, x)[0]


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_the_hot_path_shapes_results_as_the_first_call_does(mode):
    # the guarded path returns the generated code's result; wrt=(0,) makes it a 1-tuple
    # there too, for grad, value_and_grad and has_aux alike, and wrt=0 leaves it bare
    rng = np.random.default_rng(5)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    expected = numeric_grad(tanh_value, (w, x), 0)
    one, bare = sg.grad(tanh_value, wrt=(0,), mode=mode), sg.grad(tanh_value, mode=mode)
    both = sg.value_and_grad(tanh_value, wrt=(0,), mode=mode)
    with_aux = sg.grad(tanh_loss, wrt=(0,), has_aux=True, mode=mode)
    for _ in range(4):  # the third call on takes the guarded path
        (g,) = one(w, x)
        assert_close(g, expected)
        assert_close(bare(w, x), expected)
        value, (g,) = both(w, x)
        assert_close(g, expected)
        assert np.isclose(value, tanh_value(w, x))
        (g,), aux = with_aux(w, x)
        assert_close(g, expected)
        np.testing.assert_array_equal(aux, w[0])


def test_the_guard_passes_a_call_it_refuses_on_with_its_own_arguments():
    seen = []

    def miss(*args, **kwargs):
        seen.append((args, kwargs))
        return "missed"

    a = np.zeros(2)
    guarded = guarded_call(_key(a, a), lambda *args: "ran", [], miss=miss)
    assert guarded(a, a) == "ran"
    assert guarded(a) == "missed" and seen[-1] == ((a,), {})
    assert guarded(a, a, 3) == "missed" and seen[-1] == ((a, a, 3), {})
    # arguments by name go to the usual path, whatever their names (the guard's
    # parameters are positional only)
    assert guarded(a, a0=a) == "missed" and seen[-1] == ((a,), {"a0": a})
    assert guarded(a, a, rest=1, kw=2) == "missed" and seen[-1] == ((a, a), {"rest": 1, "kw": 2})
    assert guarded() == "missed" and seen[-1] == ((), {})
    assert guarded_call((), lambda: "ran", [], miss=miss)(x=1) == "missed"


def test_the_guard_shapes_the_result_reports_errors_and_follows_a_token():
    class Holder:
        token = "first"

    failures = []

    def fails(x):
        raise ValueError("inside")

    key = _key(np.zeros(2))
    one = guarded_call(key, np.sum, [], result="one_tuple")
    assert one(np.ones(2)) == (2.0,)
    doubled = guarded_call(key, np.sum, [], result=lambda r: 2 * r)
    assert doubled(np.ones(2)) == 4.0
    raising = guarded_call(key, fails, [], failed=failures.append)
    with pytest.raises(ValueError, match="inside"):
        raising(np.ones(2))
    assert [str(e) for e in failures] == ["inside"]
    holder = Holder()
    current = guarded_call(key, np.sum, [], current=(holder, "token", "first"))
    assert current(np.ones(2)) == 2.0
    holder.token = "second"
    assert current(np.ones(2)) is MISSING


def test_the_guard_of_arrays_of_no_dimension_or_one_is_exact():
    # ndim and len stand for the shape of an ndarray of one dimension or none; a
    # subclass (which may redefine them) is tested by its shape
    for shape in [(), (0,), (1,), (5,)]:
        guard = signature_guard(_key(np.zeros(shape)))
        assert guard(np.ones(shape))
        others = [(), (0,), (1,), (5,), (1, 5), (5, 1), (1, 1), (0, 0), (5, 0), (1, 1, 1)]
        for other in others:
            if other != shape:
                assert not guard(np.ones(other)), (shape, other)
        assert not guard(np.ones(shape).view(Marked))
    marked = np.zeros(4).view(Marked)
    guard = signature_guard(_key(marked))
    assert guard(np.ones(4).view(Marked)) and not guard(np.ones((4, 1)).view(Marked))
    assert not guard(np.ones(4))


def flat_sum(v, m):
    return np.sum(np.sum(v) * m) + np.sum(v * SCALE)  # dv: a broadcast to v's shape


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_arrays_reshaped_in_place_after_the_guard_is_made(mode):
    # the same array objects, another shape: the guard sees it at the next call
    gradient = sg.grad(flat_sum, wrt=(0, 1), mode=mode)
    v, m = np.linspace(0.1, 0.6, 6), np.array(0.5)
    for _ in range(3):
        assert_close(gradient(v, m)[0], numeric_grad(flat_sum, (v, m), 0))
    v.shape = (6, 1)
    m.shape = (1,)
    for _ in range(3):
        dv, dm = gradient(v, m)
        assert dv.shape == (6, 1) and dm.shape == (1,)
        assert_close(dv, numeric_grad(flat_sum, (v, m), 0))
        assert_close(dm, numeric_grad(flat_sum, (v, m), 1))


def by_name(a0, rest=1.0, kw=2.0):
    return np.sum(a0 * rest * kw)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_calls_by_name_after_the_guard_is_made(mode):
    gradient = sg.grad(by_name, wrt=(0, 1), mode=mode)
    x = np.array([1.0, 2.0])
    for _ in range(3):
        assert_close(list(gradient(x, 3.0, 4.0)), [np.full(2, 12.0), 12.0])
    assert_close(list(gradient(x, 3.0)), [np.full(2, 6.0), 6.0])  # kw's default
    assert_close(list(gradient(x, rest=3.0, kw=5.0)), [np.full(2, 15.0), 15.0])
    assert_close(list(gradient(a0=x, rest=2.0)), [np.full(2, 4.0), 6.0])
    with pytest.raises(TypeError):
        gradient(x, 3.0, 4.0, 5.0)  # too many arguments: the call's own TypeError
    assert_close(list(gradient(x, 3.0, 4.0)), [np.full(2, 12.0), 12.0])


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_transforms_sharing_code_keep_guards_of_their_own(mode):
    # wrt=0 and wrt=(0,) share the cache entry; each transform keeps the guard of the
    # signature it ran last, and shapes its own results
    bare, one = sg.grad(scaled, mode=mode), sg.grad(scaled, wrt=(0,), mode=mode)
    rng = np.random.default_rng(7)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    w5 = rng.standard_normal((3, 5))
    for _ in range(3):
        assert_close(bare(w, x), numeric_grad(scaled, (w, x), 0))
        (g,) = one(w5, x)
        assert_close(g, numeric_grad(scaled, (w5, x), 0))
    assert bare.code is one.code


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_the_guard_runs_no_code_the_cache_has_forgotten(mode):
    from s2sgrad.compiler.pipeline import clear_cache

    gradient = sg.grad(scaled, mode=mode)
    rng = np.random.default_rng(8)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    for _ in range(3):
        gradient(w, x)
    clear_cache()
    assert gradient.latest is None
    assert_close(gradient(w, x), numeric_grad(scaled, (w, x), 0))
    assert gradient.latest is not None  # made anew


def _helper(x):
    return np.sin(x)


def _calls_helper(x):
    return np.sum(_helper(x) * 2.0)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_code_replaced_in_place_after_the_guard_is_made(mode):
    def cosine(x):
        return np.cos(x)

    def summed_cosine(x):
        return np.sum(np.cos(x))

    x = np.array([0.3, -0.7, 1.1])
    helper_code, top_code = _helper.__code__, _calls_helper.__code__
    try:
        gradient = sg.grad(_calls_helper, mode=mode)
        for _ in range(3):
            assert_close(gradient(x), 2 * np.cos(x))
        _helper.__code__ = cosine.__code__
        for _ in range(3):
            assert_close(gradient(x), -2 * np.sin(x))
        _calls_helper.__code__ = summed_cosine.__code__
        for _ in range(3):
            assert_close(gradient(x), -np.sin(x))
    finally:
        _helper.__code__, _calls_helper.__code__ = helper_code, top_code


def _refuses_big(x):
    if np.sum(x) > 100.0:
        raise ValueError("too big")
    return np.sum(x**2)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_an_error_of_the_guarded_code_reaches_the_caller_as_it_is(mode):
    gradient = sg.grad(_refuses_big, mode=mode)
    x = np.ones(3)
    for _ in range(3):
        assert_close(gradient(x), 2 * x)
    with pytest.raises(ValueError, match="too big"):
        gradient(x * 100.0)
    assert_close(gradient(x), 2 * x)
