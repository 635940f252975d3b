"""Generated code differentiates the program as it is at each call.

Globals and closure variables are read as they are now (a minibatch rebound between steps,
a redefined helper, a reseeded generator), and source edited on disk after the module was
imported is refused (or left to the tape), never differentiated in place of the code that
runs.
"""

import importlib.util
import itertools
import os
import sys
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.frontend import parse_function

MODES = ("s2s", "tape", "auto")
_modules = itertools.count()

MODEL = """\
import numpy as np

X = np.ones((4, 3))
y = np.zeros(4)
scale = 2.0
rng = np.random.default_rng(0)
vec = np.arange(3.0)
params = {"b": np.arange(3.0)}


def loss(w):
    return np.mean((X @ w - y) ** 2) * scale


def twice_loss(w):
    return 2.0 * loss(w)


def scaled(w):
    return np.sum(w**2) * scale


def scaled_cube(x):
    return scale * x**3


def with_params(w):
    return np.sum((w + params["b"]) ** 2)


def helper(v):
    return np.sin(v)


def uses_helper(w):
    return np.sum(helper(w) * w)


def calls_uses_helper(w):
    return uses_helper(w) * 3.0


def noisy(w):
    return np.sum(w * rng.normal(size=w.shape))


def make_closure():
    c = 1.5

    def f(w):
        return np.sum(c * np.sin(w) ** 2)

    def set_c(value):
        nonlocal c
        c = value

    return f, set_c
"""


def load(tmp_path, source):
    """Import ``source`` as a new module from a file in ``tmp_path``."""
    name = f"fresh_model_{next(_modules)}"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def model(tmp_path):
    return load(tmp_path, MODEL)


def cosine_helper(v):
    return np.cos(v)


def quiet(function, *args):
    """Call ``function`` with the fallback warning of mode="auto" allowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args)


@pytest.mark.parametrize("mode", MODES)
def test_minibatch_sgd_differentiates_each_new_batch(model, mode):
    rng = np.random.default_rng(1)
    gradient = sg.grad(model.loss, mode=mode)
    w = rng.normal(size=3)
    for _ in range(3):
        model.X, model.y = rng.normal(size=(4, 3)), rng.normal(size=4)
        expected = numeric_grad(model.loss, (w,), 0)
        assert_close(call_twice(gradient, w), expected)
        assert_close(sg.grad(model.loss, mode=mode)(w), expected)  # a brand-new transform
        assert_close(sg.grad(model.twice_loss, mode=mode)(w), 2.0 * expected)  # via a callee
        w = w - 0.1 * expected
    model.X, model.y = rng.normal(size=(6, 3)), rng.normal(size=6)  # a last, larger batch
    assert_close(call_twice(gradient, w), numeric_grad(model.loss, (w,), 0))


@pytest.mark.parametrize("mode", MODES)
def test_a_rebound_global_float_is_read_at_each_call(model, mode):
    gradient = sg.grad(model.loss, mode=mode)
    w = np.array([0.5, -1.0, 2.0])
    call_twice(gradient, w)
    model.scale = 5.0
    assert_close(call_twice(gradient, w), numeric_grad(model.loss, (w,), 0))
    model.scale = 7  # an integer now: another kind of value
    assert_close(call_twice(gradient, w), numeric_grad(model.loss, (w,), 0))


@pytest.mark.parametrize("mode", MODES)
def test_a_redefined_helper_is_differentiated(model, mode):
    direct = sg.grad(model.uses_helper, mode=mode)
    through = sg.grad(model.calls_uses_helper, mode=mode)
    w = np.array([0.3, 1.1, -0.7])
    call_twice(direct, w)
    call_twice(through, w)
    model.helper = cosine_helper
    expected = numeric_grad(model.uses_helper, (w,), 0)
    assert_close(call_twice(direct, w), expected)
    assert_close(call_twice(through, w), 3.0 * expected)
    assert_close(sg.grad(model.uses_helper, mode=mode)(w), expected)


@pytest.mark.parametrize("mode", MODES)
def test_a_changed_closure_variable_is_read_at_each_call(model, mode):
    f, set_c = model.make_closure()
    gradient = sg.grad(f, mode=mode)
    w = np.array([0.2, -0.4, 1.3])
    assert_close(call_twice(gradient, w), numeric_grad(f, (w,), 0))
    set_c(4.0)
    assert_close(call_twice(gradient, w), numeric_grad(f, (w,), 0))
    set_c(np.array([1.0, 2.0, 3.0]))  # an array now
    assert_close(call_twice(gradient, w), numeric_grad(f, (w,), 0))


@pytest.mark.parametrize("mode", MODES)
def test_a_reseeded_generator_is_the_one_used(model, mode):
    gradient = sg.grad(model.noisy, mode=mode)
    w = np.ones(3)
    for seed in (1, 2, 3):  # the derivative of sum(w * noise) is the noise drawn
        model.rng = np.random.default_rng(seed)
        expected = np.random.default_rng(seed).normal(size=3)
        assert_close(quiet(gradient, w), expected)


@pytest.mark.parametrize("mode", MODES)
def test_second_order_follows_rebound_globals(model, mode):
    w, v = np.array([0.1, 0.2, -0.3]), np.array([1.0, -2.0, 0.5])
    hessian = sg.hessian(model.loss, mode=mode)
    quiet(hessian, w)
    quiet(sg.hvp, model.loss, (w,), (v,))
    for size in (4, 4, 7):
        model.X = np.random.default_rng(size).normal(size=(size, 3))
        model.y = np.zeros(size)
        expected = 2.0 * model.scale * model.X.T @ model.X / size  # the analytic Hessian
        assert_close(quiet(hessian, w), expected)
        (product,) = sg.hvp(model.loss, (w,), (v,), mode=mode)
        assert_close(product, expected @ v)


@pytest.mark.parametrize("mode", MODES)
def test_grad_of_grad_follows_a_rebound_global(model, mode):
    second = sg.grad(sg.grad(model.scaled_cube, mode=mode), mode=mode)
    call_twice(second, 1.5)
    for scale in (5.0, -3.0):
        model.scale = scale
        assert_close(call_twice(second, 1.5), 6.0 * scale * 1.5)  # d²/dx² scale·x³


def test_vjp_and_jvp_follow_rebound_globals(model):
    w, v = np.array([0.1, 0.2, -0.3]), np.array([1.0, -2.0, 0.5])
    sg.vjp(model.loss, w, mode="s2s")
    sg.jvp(model.loss, (w,), (v,), mode="s2s")
    model.X = np.random.default_rng(5).normal(size=(4, 3))
    expected = numeric_grad(model.loss, (w,), 0)
    _, pullback = sg.vjp(model.loss, w, mode="s2s")
    assert_close(pullback(1.0)[0], expected)
    _, tangent = sg.jvp(model.loss, (w,), (v,), mode="s2s")
    assert_close(float(tangent), float(expected @ v))


def test_unchanged_names_keep_the_generated_code(model):
    gradient = sg.grad(model.loss, mode="s2s")
    w = np.ones(3)
    call_twice(gradient, w)
    ran = gradient.latest
    model.X = np.full((4, 3), 2.0)  # data of the same kind: the code reads it as it is
    call_twice(gradient, w)
    assert gradient.latest is ran
    model.X = np.ones((5, 3))  # another shape: specialised code is made again
    model.y = np.zeros(5)
    call_twice(gradient, w)
    assert gradient.latest is not ran


@pytest.mark.parametrize("mode", MODES)
def test_items_replaced_in_place_with_another_shape(model, mode):
    def through_module(w):
        return np.sum((w * model.vec) ** 2)

    w = np.array([0.5, -1.0, 2.0])
    for function in (model.with_params, through_module):
        gradient = sg.grad(function, mode=mode)
        call_twice(gradient, w)
        model.params["b"] = np.arange(6.0).reshape(2, 3)  # the same dict, a new shape
        model.vec = np.arange(6.0).reshape(2, 3)  # the same module, a new shape
        assert_close(call_twice(gradient, w), numeric_grad(function, (w,), 0))
        model.params["b"], model.vec = np.arange(3.0), np.arange(3.0)


def test_export_writes_the_values_globals_hold_now(model, tmp_path):
    w = np.array([1.0, -2.0])
    sg.grad(model.scaled, mode="s2s")(w)
    model.scale = 5.0
    path = sg.export(model.scaled, tmp_path / "dscaled.py")
    spec = importlib.util.spec_from_file_location("dscaled", path)
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)
    assert_close(exported.dscaled(w), 10.0 * w)


# source edited on disk after import -----------------------------------------------------
ORIGINAL = "import numpy as np\n\n\ndef f(x):\n    return np.sum(x ** 2) * {tag}\n"
EDITS = {
    "def inserted above": "import numpy as np\n\n\ndef g(x):\n    return np.sum(x ** 3)\n\n\n"
    "def f(x):\n    return np.sum(x ** 2) * {tag}\n",
    "body changed": "import numpy as np\n\n\ndef f(x):\n    return np.sum(x ** 3) * {tag}\n",
    "lines shifted": "import numpy as np\n"
    + "\n" * 7
    + "def f(x):\n    return np.sum(x ** 2) * {tag}\n",
    "one line shifted": "import numpy as np\n\n\n\ndef f(x):\n    return np.sum(x ** 2) * {tag}\n",
    "broken syntax": "import numpy as np\n\n\ndef f(x):\n    return np.sum((x ** 2) * {tag}\n",
}
_tags = itertools.count(2)


def edited_module(tmp_path, edit):
    """A module imported, then its file rewritten with ``edit`` (and a later mtime)."""
    tag = next(_tags)  # a function of its own, so that auto's warning is its own as well
    module = load(tmp_path, ORIGINAL.format(tag=tag))
    path = module.__file__
    with open(path, "w") as file:
        file.write(EDITS[edit].format(tag=tag))
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    return module, path, tag


# f itself is unchanged, only moved: reading it where it now is would be right as well
MOVED = ("def inserted above", "lines shifted", "one line shifted")


def assert_refusal(error, path):
    message = str(error)
    assert f"{path}:4" in message  # the def the running code came from
    assert "no longer matches" in message and "reload the module" in message


@pytest.mark.parametrize("edit", EDITS)
def test_source_edited_after_import_is_refused_in_s2s(tmp_path, edit):
    module, path, tag = edited_module(tmp_path, edit)
    x = np.array([0.5, -1.5])
    try:
        gradient = call_twice(sg.grad(module.f, mode="s2s"), x)
    except sg.UnsupportedError as error:
        assert_refusal(error, path)
    else:  # Python 3.13's inspect finds a def moved down by blank lines
        assert edit in MOVED
        assert_close(gradient, 2.0 * tag * x)


@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("mode", ("auto", "tape"))
def test_source_edited_after_import_leaves_the_tape_to_differentiate(tmp_path, edit, mode):
    module, path, tag = edited_module(tmp_path, edit)
    x = np.array([0.5, -1.5])
    gradient = sg.grad(module.f, mode=mode)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = gradient(x)
    if mode == "auto" and edit not in MOVED:
        assert len(caught) == 1
    for warning in caught:
        assert_refusal(warning.message, path)
    assert_close(first, 2.0 * tag * x)  # the code that runs, not the file
    assert_close(gradient(x), 2.0 * tag * x)


def test_an_edit_that_leaves_the_function_as_it_runs_is_not_refused(tmp_path):
    module = load(tmp_path, ORIGINAL.format(tag=3))
    with open(module.__file__, "a") as file:
        file.write("\n\ndef added_below(x):\n    return x\n")
    stat = os.stat(module.__file__)
    os.utime(module.__file__, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    x = np.array([1.0, 2.0])
    assert_close(call_twice(sg.grad(module.f, mode="s2s"), x), 6.0 * x)


def test_lines_read_before_the_edit_are_still_used(tmp_path):
    source = ORIGINAL.format(tag=5) + "\n\ndef h(x):\n    return np.sum(np.sin(x))\n"
    module = load(tmp_path, source)
    sg.grad(module.f, mode="s2s")(np.ones(2))  # linecache now holds the lines that were run
    with open(module.__file__, "w") as file:
        file.write("import numpy as np\n\n\ndef g(x):\n    return x\n\n\n" + source)
    x = np.array([0.3, 0.4])
    assert_close(call_twice(sg.grad(module.h, mode="s2s"), x), np.cos(x))


SCOPES = """\
from __future__ import annotations

import numpy as np
from numpy import sin


class Base:
    def value(self, x: np.ndarray) -> float:
        return np.sum(x)


class Model(Base):
    def __init__(self):
        self.__k = 2.0

    def value(self, x: np.ndarray) -> float:
        return super().value(sin(x)) * self.__k


def outer():
    a = 3.0

    def inner(x):
        for i in range(2):
            if i > 0:
                x = x * a
        return np.sum(np.sin(x) * a)

    return inner


def decorate(function):
    return function


@decorate
def decorated(x):
    square = lambda y: y * 2.0  # noqa: E731
    return np.sum(square(x) ** 2)


as_lambda = lambda x: np.sum(np.cos(x) - 0.0)  # noqa: E731
"""


def checks_its_argument(x):
    assert x.shape == (2,), "pytest rewrites this assert before compiling the module"
    return np.sum(np.sin(x))


def test_unedited_source_is_accepted_in_every_kind_of_scope(tmp_path):
    module = load(tmp_path, SCOPES)
    for function in (
        module.Model.value,
        module.outer(),
        module.decorated,
        module.as_lambda,
        test_unedited_source_is_accepted_in_every_kind_of_scope,  # rewritten by pytest
    ):
        parse_function(function)
    x = np.array([0.1, 0.7])
    assert_close(
        call_twice(sg.grad(module.outer(), mode="s2s"), x), numeric_grad(module.outer(), (x,), 0)
    )
    assert_close(call_twice(sg.grad(module.decorated, mode="s2s"), x), 8.0 * x)
    assert_close(call_twice(sg.grad(checks_its_argument, mode="s2s"), x), np.cos(x))


@pytest.mark.parametrize("mode", MODES)
def test_a_helper_replaced_in_its_module_is_differentiated(model, mode):
    def f(w):
        return np.sum(model.helper(w) * w)

    gradient = sg.grad(f, mode=mode)
    w = np.array([0.3, 1.1, -0.7])
    call_twice(gradient, w)
    model.helper = cosine_helper  # what a reload or a patch does: no name f reads changes
    assert_close(call_twice(gradient, w), numeric_grad(f, (w,), 0))


class _Layer:
    scale = 1.5

    @staticmethod
    def activation(v):
        return v**2


class _DeepLayer(_Layer):
    pass


def _through_the_class(w):
    return np.sum(_DeepLayer.activation(w) * _DeepLayer.scale)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_method_replaced_on_a_class_or_its_base_is_differentiated(mode):
    # _DeepLayer.activation was inlined from the first call's function and kept after the
    # class attribute was replaced: a stale gradient of the old activation
    w = np.array([0.3, 1.1, -0.7])
    try:
        gradient = sg.grad(_through_the_class, mode=mode)
        assert_close(call_twice(gradient, w), numeric_grad(_through_the_class, (w,), 0))
        _Layer.activation = staticmethod(np.sin)  # replaced where it is defined
        assert_close(call_twice(gradient, w), numeric_grad(_through_the_class, (w,), 0))
        _DeepLayer.activation = staticmethod(np.tanh)  # set on the subclass, between
        _DeepLayer.scale = 4.0
        assert_close(call_twice(gradient, w), numeric_grad(_through_the_class, (w,), 0))
    finally:
        _Layer.activation = staticmethod(lambda v: v**2)
        for name in ("activation", "scale"):
            if name in _DeepLayer.__dict__:
                delattr(_DeepLayer, name)


def _with_defaults(w, power=2.0, *, scale=1.0):
    return np.sum(w**power) * scale


def _calls_with_defaults(w):
    return _with_defaults(w) * 2.0


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("function", [_with_defaults, _calls_with_defaults])
def test_defaults_replaced_after_a_call_are_differentiated(mode, function):
    # the derivative took the defaults into its own signature and kept them
    w = np.array([0.3, 1.1, 0.7])
    try:
        gradient = sg.grad(function, mode=mode)
        assert_close(call_twice(gradient, w), numeric_grad(function, (w,), 0))
        _with_defaults.__defaults__ = (3.0,)
        assert_close(call_twice(gradient, w), numeric_grad(function, (w,), 0))
        _with_defaults.__kwdefaults__ = {"scale": 5.0}
        assert_close(call_twice(gradient, w), numeric_grad(function, (w,), 0))
    finally:
        _with_defaults.__defaults__, _with_defaults.__kwdefaults__ = (2.0,), {"scale": 1.0}


calls = 0


def counts_its_calls(w):
    global calls
    calls = calls + 1
    return np.sum(w**2)


def make_counting():
    count = 0

    def counting(w):
        nonlocal count
        count = count + 1
        return np.sum(w**3)

    return counting, lambda: count


def test_writes_to_globals_and_closures_are_refused_by_s2s():
    counting, _ = make_counting()
    for function, word, line in (
        (counts_its_calls, "global", counts_its_calls.__code__.co_firstlineno + 1),
        (counting, "nonlocal", counting.__code__.co_firstlineno + 1),
    ):
        with pytest.raises(sg.UnsupportedError) as error:
            sg.grad(function, mode="s2s")(np.ones(2))
        message = str(error.value)
        assert f"{__file__}:{line}" in message
        assert f"the {word} name" in message and "mode='tape'" in message


def test_writes_to_globals_and_closures_are_left_to_the_tape_in_auto():
    global calls
    counting, count = make_counting()
    x = np.array([1.0, -2.0])
    before = calls
    with pytest.warns(UserWarning, match="global name calls"):
        assert_close(sg.grad(counts_its_calls)(x), 2.0 * x)
    with pytest.warns(UserWarning, match="nonlocal name count"):
        assert_close(sg.grad(counting)(x), 3.0 * x**2)
    assert calls == before + 1 and count() == 1  # each ran once, as the user wrote it


class _Settings:
    pass


_settings = _Settings()
_settings.activation = np.sin
_settings.scale = 2.0


def _through_an_object(w):
    return np.sum(_settings.activation(w) * _settings.scale)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_function_replaced_on_an_object_is_differentiated(mode):
    # settings.activation = np.tanh after a first call kept the derivative of np.sin:
    # the object is the same, so no name the code reads changed
    w = np.array([0.3, 1.1, -0.7])
    try:
        gradient = sg.grad(_through_an_object, mode=mode)
        assert_close(call_twice(gradient, w), numeric_grad(_through_an_object, (w,), 0))
        _settings.activation = np.tanh
        assert_close(call_twice(gradient, w), numeric_grad(_through_an_object, (w,), 0))
        _settings.scale = 3.0  # data, read as the code runs
        assert_close(call_twice(gradient, w), numeric_grad(_through_an_object, (w,), 0))
    finally:
        _settings.activation, _settings.scale = np.sin, 2.0
