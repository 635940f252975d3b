"""The call path of a transform made anew for each call, ``sg.grad(f)(x)``.

A transform reads its function's signature once (not once per name of ``wrt``), and its
first call with a signature another transform of the same function and options already
ran takes that code from the cache directly, as a second call does, without the checks of
a new signature. What it runs is as fresh as a second call's: the freshness entries are
checked, a rebound name takes the usual way, and options that differ (``wrt``, ``kind``,
``has_aux``, ``mode``) never share code.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad import api, numpy_signatures

RNG = np.random.default_rng(3211)
_modules = itertools.count()

MODEL = """\
import numpy as np

W = np.ones((3, 2))
b = np.zeros(2)


def loss(x, scale):
    return np.sum(np.tanh(x @ W + b) ** 2) * np.mean(scale ** 2)
"""


def load(tmp_path, source=MODEL):
    name = f"call_path_model_{next(_modules)}"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def arguments(rows: int = 4):
    return RNG.standard_normal((rows, 3)), RNG.standard_normal((1, rows))


def expected(model, x, scale):
    return numeric_grad(model.loss, (x, scale), 0), numeric_grad(model.loss, (x, scale), 1)


def six(a, b, c, d, e, f):
    return np.sum(a * b) + np.sum(c * d * e) + np.sum(f)


def test_a_transform_reads_its_functions_signature_once(monkeypatch):
    read = []
    original = inspect.signature

    def counted(*args, **kwargs):
        read.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(inspect, "signature", counted)
    transform = sg.grad(six, wrt=(0, 1, 2, 3, 4, 5))
    assert read.count(six) == 1  # one for the six names, not one (or two) per name
    assert transform.wrt == ("a", "b", "c", "d", "e", "f")
    assert transform.indices == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("function", "wrt", "names", "indices"),
    [
        (lambda x, *rest: x, (0, 2, "args"), None, None),
        (lambda x, *rest: x + rest[1], (0, 2), ("x", "rest[1]"), [0, 2]),
        (lambda x, y, /, z: x, (-1, "y"), ("z", "y"), [2, 1]),
        (lambda x, *, k: x, ("k", 0), ("k", "x"), [None, 0]),
    ],
)
def test_wrt_resolves_as_each_parameter_says(function, wrt, names, indices):
    if names is None:
        with pytest.raises(ValueError, match="no parameter named 'args'"):
            sg.grad(function, wrt=wrt)
        return
    transform = sg.grad(function, wrt=wrt)
    assert transform.wrt == names and transform.indices == indices
    assert transform.parameters == numpy_signatures.positional_parameters(function)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_new_transform_runs_the_cached_code_without_the_checks_of_a_new_signature(
    tmp_path, monkeypatch, mode
):
    model = load(tmp_path)
    x, scale = arguments()
    first = sg.grad(model.loss, wrt=(0, 1), mode=mode)
    assert_close(first(x, scale), expected(model, x, scale))
    checked = []
    original = api.check_differentiable

    def counted(name, value, f):
        checked.append(name)
        return original(name, value, f)

    monkeypatch.setattr(api, "check_differentiable", counted)
    for _ in range(3):  # sg.grad(f)(x) in a loop: a new transform at every step
        x, scale = x + 0.1, scale - 0.1  # new arrays of the same signature
        assert_close(
            sg.grad(model.loss, wrt=(0, 1), mode=mode)(x, scale), expected(model, x, scale)
        )
    assert checked == []
    new_rows = arguments(rows=5)  # a new signature: checked, then transformed
    assert_close(sg.grad(model.loss, wrt=(0, 1), mode=mode)(*new_rows), expected(model, *new_rows))
    assert checked == ["x", "scale"]


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_new_transform_after_a_rebinding_runs_fresh_code(tmp_path, mode):
    model = load(tmp_path)
    x, scale = arguments()
    sg.grad(model.loss, wrt=(0, 1), mode=mode)(x, scale)
    model.W = RNG.standard_normal((3, 2))  # the same kind: taken over
    got = sg.grad(model.loss, wrt=(0, 1), mode=mode)(x, scale)
    assert_close(got, expected(model, x, scale))
    model.W = RNG.standard_normal((3, 5))  # another shape: transformed again
    model.b = RNG.standard_normal(5)
    got = sg.grad(model.loss, wrt=(0, 1), mode=mode)(x, scale)
    assert_close(got, expected(model, x, scale))


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_new_transform_of_a_global_array_reshaped_in_place(tmp_path, mode):
    model = load(tmp_path)
    model.b = RNG.standard_normal(2)
    x, scale = arguments(rows=2)
    sg.grad(model.loss, wrt=(0, 1), mode=mode)(x, scale)
    model.b.shape = (2, 1)  # the same object: x @ W + b broadcasts it along the rows now
    got = sg.grad(model.loss, wrt=(0, 1), mode=mode)(x, scale)
    assert_close(got, expected(model, x, scale))


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_new_transform_after_the_code_was_replaced(tmp_path, mode):
    model = load(tmp_path)
    x, scale = arguments()
    sg.grad(model.loss, wrt=(0, 1), mode=mode)(x, scale)

    def other(x, scale):
        return np.sum(np.sin(x @ W)) * np.sum(scale**3)  # noqa: F821 (the model's W)

    model.loss.__code__ = other.__code__  # what a reload does to the function
    got = sg.grad(model.loss, wrt=(0, 1), mode=mode)(x, scale)
    assert_close(got, expected(model, x, scale))


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_new_transforms_with_other_options_never_take_each_others_code(tmp_path, mode):
    model = load(tmp_path)
    x, scale = arguments()
    dx, dscale = expected(model, x, scale)

    def with_aux(x, scale):
        return model.loss(x, scale), "note"

    for _ in range(2):  # the second round finds every one's code in the cache
        assert_close(sg.grad(model.loss, mode=mode)(x, scale), dx)
        assert_close(sg.grad(model.loss, wrt=1, mode=mode)(x, scale), dscale)
        (only,) = sg.grad(model.loss, wrt=(1,), mode=mode)(x, scale)
        assert_close(only, dscale)
        value, (gx, gs) = sg.value_and_grad(model.loss, wrt=(0, 1), mode=mode)(x, scale)
        assert_close(value, model.loss(x, scale))
        assert_close((gx, gs), (dx, dscale))
        gradient, aux = sg.grad(with_aux, wrt=0, has_aux=True, mode=mode)(x, scale)
        assert_close(gradient, dx)
        assert aux == "note"


def test_a_new_transform_of_a_function_that_raises_says_where(tmp_path):
    source = MODEL + (
        "\n\ndef checked(x, scale):\n"
        "    if np.any(scale > 10.0):\n"
        "        raise ValueError('scale out of range')\n"
        "    return loss(x, scale)\n"
    )
    model = load(tmp_path, source)
    x, scale = arguments()
    sg.grad(model.checked, wrt=(0, 1), mode="s2s")(x, scale)
    with pytest.raises(ValueError, match="scale out of range"):
        sg.grad(model.checked, wrt=(0, 1), mode="s2s")(x, scale + 20.0)
    got = sg.grad(model.checked, wrt=(0, 1), mode="s2s")(x, scale)  # and runs on
    assert_close(got, expected(model, x, scale))
