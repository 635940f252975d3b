"""Generated code with its signature guard at its top (compiler/guard_hosts.py): a call of
a transform runs the guard's tests and the code in one frame, and does exactly what the
guard calling the code did: the same misses, the code's own lines in tracebacks, the
defaults a call binds, results shaped, names the code reads kept fresh."""

from __future__ import annotations

import contextlib
import io
import sys
import traceback
import types

import gast
import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.codegen import compile_function
from s2sgrad.compiler.freshness import MISSING, entry_for
from s2sgrad.compiler.signature_guards import guarded_call
from s2sgrad.compiler.specialize import signature

SCALE = 2.0
OFFSET = np.array([0.5, -0.5, 1.0])


def generated(source: str, namespace: dict | None = None) -> types.FunctionType:
    """The compiled code of a generated function with this source."""
    node = gast.parse(source).body[0]
    return compile_function(node, {"np": np, **(namespace or {})}, "test").function


def _key(*arguments):
    return signature(arguments, {})


def in_one_frame(transform) -> bool:
    """Whether the transform's call runs its latest code in one frame (the code with its
    guard at its top: the same file and name as the code)."""
    code = transform.latest.function.__code__
    call = getattr(transform.__call__, "__code__", None)
    return call is not None and (call.co_filename, call.co_name) == (
        code.co_filename,
        code.co_name,
    )


def tanh_loss(w, x):
    return np.sum(np.tanh(x @ w) * SCALE)


def test_a_transform_runs_its_code_and_the_guard_in_one_frame():
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    gradient = sg.grad(tanh_loss)
    for _ in range(3):
        assert_close(gradient(w, x), numeric_grad(tanh_loss, (w, x), 0))
    assert in_one_frame(gradient)
    assert "guard" not in sg.source(gradient)  # what users print is the code alone
    again = sg.grad(tanh_loss)  # made anew: its guard's module is the one compiled before
    for _ in range(2):
        again(w, x)
    assert again.__call__.__code__ is gradient.__call__.__code__


def mixed(w, b, s, n, flag, tag, nothing):
    h = np.tanh(w * s) + b
    for _ in range(n):
        h = h * 0.5 + w
    if flag:
        h = h * 2.0
    return np.sum(h * h)


def _mixed_arguments():
    rng = np.random.default_rng(1)
    return [rng.standard_normal((2, 3)), rng.standard_normal(3), 0.7, 2, True, "a", None]


@pytest.mark.parametrize(
    "position, other",
    [
        (0, np.ones((4, 3))),  # shape
        (0, np.ones((2, 3), dtype=np.float32)),  # dtype
        (1, np.ones(1)),  # the length of a vector
        (1, np.ones((1, 3))),  # its number of dimensions
        (2, 1),  # a float's class (an integer may set a shape: its value counts)
        (3, 3),  # an integer's value
        (4, False),  # a boolean's value
        (5, "b"),  # a string's value
        (6, 0),  # None
    ],
)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_miss_on_each_kind_of_part_takes_the_usual_way(position, other, mode):
    arguments = _mixed_arguments()
    gradient = sg.grad(mixed, wrt=(0, 1), mode=mode)
    for _ in range(3):
        gradient(*arguments)
    assert in_one_frame(gradient)
    changed = list(arguments)
    changed[position] = other
    for _ in range(3):  # the miss, then the guard of the new signature
        dw, db = gradient(*changed)
        assert_close(dw, numeric_grad(mixed, changed, 0), rtol=1e-4)
        assert_close(db, numeric_grad(mixed, changed, 1), rtol=1e-4)
    dw, _ = gradient(*arguments)  # and back
    assert_close(dw, numeric_grad(mixed, arguments, 0), rtol=1e-4)


def test_a_guard_at_the_top_of_generated_code_accepts_exactly_its_signature():
    code = generated("def d(*args):\n    return True\n")
    a, b = np.zeros((2, 3)), np.ones(4, dtype=np.float32)
    guard = guarded_call(_key(a, b, 1.5, 3, None), code, [])
    assert guard.__code__.co_filename == code.__code__.co_filename  # the code's own
    assert guard(np.ones((2, 3)), np.zeros(4, dtype=np.float32), 2.5, 3, None) is True
    for others in [
        (np.zeros((3, 2)), b, 1.5, 3, None),
        (a, np.ones(4), 1.5, 3, None),
        (a, b, 1, 3, None),
        (a, b, 1.5, 4, None),
        (a, b, 1.5, 3, 0),
        (a, b, 1.5, 3),
        (a, b, 1.5, 3, None, None),
    ]:
        assert guard(*others) is MISSING
    assert guard(a, b, 1.5, 3, nothing=None) is MISSING  # by name


def test_defaults_varargs_and_keyword_only_parameters_are_bound_as_a_call_binds_them():
    code = generated(
        "def d(x, y=2.0, *more, k=3, **options):\n    return (x, y, more, k, options)\n"
    )
    one = guarded_call(_key(1.0), code, [])
    first, second = one(5.0), one(6.0)
    assert first == (5.0, 2.0, (), 3, {}) and second[0] == 6.0
    assert first[4] is not second[4]  # a new dict for each call, as a call makes
    three = guarded_call(_key(1.0, 1.0, 1.0), code, [])
    assert three(1.0, 4.0, 7.0) == (1.0, 4.0, (7.0,), 3, {})
    with pytest.raises(TypeError, match="missing"):  # the code raises, as the call would
        guarded_call(_key(), code, [])()


def scaled_loss(w, x, scale=2.0):
    return np.sum(np.sin(x @ w) * scale)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_calls_relying_on_defaults_and_calls_by_name(mode):
    rng = np.random.default_rng(2)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    gradient = sg.grad(scaled_loss, mode=mode)
    for _ in range(3):
        assert_close(gradient(w, x), numeric_grad(scaled_loss, (w, x), 0))
    assert in_one_frame(gradient)
    assert_close(gradient(w, x, 3.0), numeric_grad(scaled_loss, (w, x, 3.0), 0))
    assert_close(gradient(w, x, scale=4.0), numeric_grad(scaled_loss, (w, x, 4.0), 0))
    assert_close(gradient(w=w, x=x), numeric_grad(scaled_loss, (w, x), 0))
    with pytest.raises(TypeError):
        gradient(w, x, 1.0, 2.0)  # the call's own TypeError
    assert_close(gradient(w, x), numeric_grad(scaled_loss, (w, x), 0))


def _log_of_root(x):
    y = np.sqrt(x)
    return np.sum(np.log(y))


def test_an_exception_of_the_code_shows_its_line_in_the_one_frame():
    gradient = sg.grad(_log_of_root, mode="s2s")
    for _ in range(3):
        gradient(np.ones(2))
    assert in_one_frame(gradient)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError) as raised:
        gradient(np.zeros(2))
    filename = gradient.latest.function.__code__.co_filename
    frames = traceback.extract_tb(raised.value.__traceback__)
    ours = [frame for frame in frames if frame.filename == filename]
    assert len(ours) == 1  # the guard has no frame of its own
    assert "/" in ours[0].line and ours[0].line in sg.source(gradient)
    assert not any("signature guard" in frame.filename for frame in frames)


def test_an_exception_is_reported_and_results_are_shaped_in_the_code():
    failures = []
    code = generated(
        "def d(x):\n"
        "    def inner(y):\n"
        "        return y * 2\n"
        "    if x < 0:\n"
        "        raise ValueError('negative')\n"
        "    if x == 0:\n"
        "        return\n"
        "    return inner(x)\n"
    )
    key = _key(1.0)
    one = guarded_call(key, code, [], result="one_tuple", failed=failures.append)
    assert one(2.0) == (4.0,)  # the return of the function inside is its own
    assert one(0.0) == (None,)
    with pytest.raises(ValueError, match="negative"):
        one(-1.0)
    assert [str(e) for e in failures] == ["negative"]
    doubled = guarded_call(key, code, [], result=lambda r: [r])
    assert doubled(3.0) == [6.0]
    silent = generated("def s(x):\n    x = x + 1\n")
    assert guarded_call(key, silent, [], result="one_tuple")(1.0) == (None,)


def test_the_code_calling_itself_calls_itself_not_its_guard():
    misses = []
    code = generated("def d(x, n):\n    return x if n == 0 else d(x, n - 1) + 1.0\n")
    guard = guarded_call(_key(1.0, 2), code, [], miss=lambda *a, **k: misses.append(a))
    assert guard(1.0, 2) == 3.0 and misses == []
    assert guard(1.0, 1) is None and misses == [(1.0, 1)]


def test_code_declaring_globals_keeps_a_guard_of_its_own():
    code = generated("def d(x):\n    global SEEN\n    SEEN = x\n    return x\n")
    guard = guarded_call(_key(1.0), code, [])
    assert guard.__name__ == "guarded" and guard(2.0) == 2.0
    assert code.__globals__["SEEN"] == 2.0


def shifted(w):
    return np.sum((w - OFFSET) ** 2 * SCALE)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_names_the_code_reads_rebound_between_calls(mode, monkeypatch):
    w = np.array([1.0, 2.0, 3.0])
    gradient = sg.grad(shifted, mode=mode)
    for _ in range(3):
        assert_close(gradient(w), numeric_grad(shifted, (w,), 0))
    assert in_one_frame(gradient)
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "OFFSET", np.array([2.0, 0.0, -1.0]))  # data of one kind
    for _ in range(3):  # the miss takes the new value over, the guard's code reads it
        assert_close(gradient(w), numeric_grad(shifted, (w,), 0))
    monkeypatch.setattr(module, "SCALE", 3.0)
    for _ in range(3):
        assert_close(gradient(w), numeric_grad(shifted, (w,), 0))
    monkeypatch.setattr(module, "OFFSET", np.zeros((2, 3)))  # another shape: built anew
    for _ in range(3):
        assert_close(gradient(w), 2 * SCALE * (w - OFFSET).sum(axis=0))


def test_entries_are_checked_at_the_top_of_the_code(monkeypatch):
    code = generated("def d(x):\n    return x * SCALE\n", {"SCALE": SCALE})
    guard = guarded_call(_key(1.0), code, [entry_for(globals(), "SCALE")])
    assert guard(2.0) == 4.0
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 5.0)
    assert guard(2.0) is MISSING


class Model:
    def __init__(self, scale):
        self.scale = scale

    def loss(self, w):
        return np.sum(np.tanh(w) * self.scale)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_bound_method_is_called_the_usual_way(mode):
    model = Model(2.0)
    gradient = sg.grad(model.loss, mode=mode)
    w = np.array([0.1, -0.4])
    for _ in range(3):
        assert_close(gradient(w), numeric_grad(model.loss, (w,), 0))
    model.scale = 3.0
    for _ in range(2):
        assert_close(gradient(w), numeric_grad(model.loss, (w,), 0))
    assert isinstance(gradient.__call__, types.MethodType)  # no guard for a bound self


def _squares(x):
    y = np.sin(x)
    return np.sum(y * y)


def test_a_trace_of_a_guarded_call_shows_the_code_from_its_first_line():
    gradient = sg.grad(_squares, mode="s2s")
    x = np.ones(2)
    for _ in range(3):
        gradient(x)
    assert in_one_frame(gradient)
    for argument in (x, np.ones(3)):  # the guard's code, then a miss (the usual way)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            sg.trace(gradient)(argument)
        lines = printed.getvalue().splitlines()
        assert lines[0].strip().startswith("d_squares(") and lines[-1].startswith("returns")
        assert not any("| def " in line for line in lines)
        assert sum("_squares(" in line for line in lines) == 1
