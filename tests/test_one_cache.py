"""One cache per request, one ordered list of finishing passes, and helper facts on rules.

Generated code is kept once, in the compiler's cache (s2sgrad/compiler/cache.py): per user
function, options and argument signature. Transforms of the same function share it, and
each call checks the freshness of the very code it runs, so a transform made after a name
was rebound never runs code made before.
"""

from __future__ import annotations

import importlib.util
import itertools

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad import runtime
from s2sgrad.batching.helpers import batching_rule_of
from s2sgrad.compiler.finishing import PASSES
from s2sgrad.rules.registry import AS_IS, get_rule, registered_primitives

MODES = ("s2s", "tape", "auto")
RNG = np.random.default_rng(14)
_modules = itertools.count()

MODEL = """\
import numpy as np

W = np.ones((3, 2))
b = np.zeros(2)


def loss(x):
    return np.sum(np.tanh(x @ W + b) ** 2)
"""


def load(tmp_path, source):
    name = f"one_cache_model_{next(_modules)}"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mode", MODES)
def test_a_new_transform_after_a_rebinding_runs_fresh_code(tmp_path, mode):
    model = load(tmp_path, MODEL)
    x = RNG.standard_normal((4, 3))
    call_twice(sg.grad(model.loss, mode=mode), x)
    model.W = RNG.standard_normal((3, 2))  # same kind: taken over
    assert_close(call_twice(sg.grad(model.loss, mode=mode), x), numeric_grad(model.loss, (x,), 0))
    model.W = RNG.standard_normal((3, 5))  # another shape: code made anew
    model.b = RNG.standard_normal(5)
    fresh = sg.grad(model.loss, mode=mode)
    assert_close(call_twice(fresh, x), numeric_grad(model.loss, (x,), 0))


@pytest.mark.parametrize("mode", MODES)
def test_transforms_of_one_function_agree_on_every_call(tmp_path, mode):
    model = load(tmp_path, MODEL)
    first, second = sg.grad(model.loss, mode=mode), sg.grad(model.loss, mode=mode)
    for shape in ((4, 3), (2, 3), (4, 3)):
        x = RNG.standard_normal(shape)
        expected = numeric_grad(model.loss, (x,), 0)
        assert_close(call_twice(first, x), expected)
        assert_close(call_twice(second, x), expected)


def test_transforms_of_one_function_share_the_code_for_a_signature(tmp_path):
    model = load(tmp_path, MODEL)
    first, second = sg.grad(model.loss, mode="s2s"), sg.grad(model.loss, mode="s2s")
    x = RNG.standard_normal((4, 3))
    call_twice(first, x)
    call_twice(second, x)
    assert first.code is second.code
    assert len(first.code.calls) == 1
    assert first.latest is second.latest and first.latest.specialised_for is not None


@pytest.mark.parametrize("mode", MODES)
def test_second_order_through_the_shared_cache(tmp_path, mode):
    model = load(tmp_path, MODEL)
    x, v = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))

    def directional(x):  # the gradient along v, by central differences of the loss
        step = 1e-5
        return (model.loss(x + step * v) - model.loss(x - step * v)) / (2 * step)

    expected = numeric_grad(directional, (x,), 0, step=1e-4)
    for _ in range(2):  # the first call specialises; the second runs what it kept
        hv = sg.hvp(model.loss, (x,), (v,), mode=mode)
        assert_close(np.asarray(hv).reshape(x.shape), expected, rtol=1e-3, atol=1e-4)


def test_the_passes_run_in_one_declared_order():
    names = [step.name for step in PASSES]
    assert names.index("run the probe") < names.index("optimise")
    assert names.index("optimise") < names.index("drop saves only shape queries read")
    assert names.index("fold constants the stripping exposed") > names.index("optimise")
    assert names[-1] == "math errors run the generic code"  # wraps the finished code
    assert all(step.specialising for step in PASSES if step.probing)
    assert names.index("compute each pure call once") == names.index("optimise") - 1
    generic = ["compute each pure call once", "optimise"]
    assert [step.name for step in PASSES if not step.specialising] == generic


def test_every_declared_helper_fact_is_on_a_real_rule():
    """Declaring a specialiser or how a helper batches must not make up a rule: each fact
    sits on a rule that differentiates its function or declares it non-differentiable."""
    declared = [
        p
        for p in registered_primitives()
        if get_rule(p).specialiser is not None or get_rule(p).batching is not None
    ]
    assert runtime.unbroadcast in declared and np.broadcast_to in declared
    for primitive in declared:
        rule = get_rule(primitive)
        assert rule.vjp is not None or rule.custom is not None or not rule.differentiable


def test_a_helper_batches_as_its_rule_says():
    rule = get_rule(runtime.matmul_cotangent_a)
    assert rule.batching == AS_IS and rule.specialiser is not None
    assert callable(batching_rule_of(runtime.as_gradient))
    assert batching_rule_of(runtime.matmul_cotangent_a) is None


@pytest.mark.parametrize("mode", MODES)
def test_a_derivative_registered_later_reaches_a_transform_made_before(mode):
    """Registering a derivative forgets the code generated before (``clear_cache``), and a
    transform keeps none of its own, so its next call uses the new derivative."""

    def inner(x):
        return np.sin(x)

    def outer(x):
        return np.sum(inner(x) * x)

    gradient = sg.grad(outer, mode=mode)
    x = RNG.standard_normal(4)
    expected = np.sin(x) + x * np.cos(x)
    assert_close(call_twice(gradient, x), expected)
    pullbacks = []

    @sg.derivative(of=inner)
    def inner_derivative(x):
        y = np.sin(x)

        def pullback(g):
            pullbacks.append(g)
            return g * np.cos(x)

        return y, pullback

    assert_close(call_twice(gradient, x), expected)
    assert len(pullbacks) == 2  # both calls ran the registered derivative
