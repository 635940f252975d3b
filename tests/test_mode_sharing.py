"""Mode "s2s" and mode "auto" share one build where they would write the same code.

The two modes are two requests to the pipeline (``dynamic`` False and True); they differ only
where a call is resolved when it runs, a loop is checkpointed, or a callee's derivative does
(``compiler/mode_sharing.py``). Elsewhere the second mode takes the first's code and its
specialisations: the gradients stay those of central differences, in either order of the
modes, to second order, and a global rebound between the calls is still read.
"""

from __future__ import annotations

import re
import types

import numpy as np
import pytest
from oracle import numeric_grad, numeric_jvp

import s2sgrad as sg
from s2sgrad.compiler.codegen import GeneratedFunction, generated_of
from s2sgrad.compiler.pipeline import clear_cache, derivative

SCALE = 1.5


def _helper(x):
    return np.sin(x) * x


def calls_a_helper(x):
    return np.sum(_helper(x) ** 2) + SCALE * np.sum(x)


def loops_and_branches(x):
    total = 0.0
    for i in range(3):
        if i % 2:
            y = np.cos(x * i)
            total = total + np.sum(y)
        else:
            total = total + np.sum(x**2) / (i + 1)
    return total


def reads_a_global(x):
    return SCALE * np.sum(np.exp(x / 3.0))


def calls_what_it_is_given(x, fn):
    return np.sum(fn(x) ** 2)


class _Layer:
    def __init__(self, w):
        self.w = w

    def apply(self, x):
        return np.tanh(self.w * x)


def calls_a_method(x, layer):
    return np.sum(layer.apply(x))


def _calls_what_it_is_given_inside(x, fn):
    return fn(x) * 2.0


def calls_a_helper_that_dispatches(x):
    return np.sum(_calls_what_it_is_given_inside(x, np.sin) ** 2)


SHARED = [calls_a_helper, loops_and_branches, reads_a_global]
NOT_SHARED = [calls_what_it_is_given, calls_a_method, calls_a_helper_that_dispatches]


def _arguments(f, rng):
    x = rng.uniform(0.2, 1.2, (2, 3))
    if f is calls_what_it_is_given:
        return (x, np.sin)
    if f is calls_a_method:
        return (x, _Layer(0.7))
    return (x,)


@pytest.mark.parametrize("order", [("s2s", "auto"), ("auto", "s2s")])
@pytest.mark.parametrize("f", SHARED, ids=lambda f: f.__name__)
def test_one_build_serves_both_modes_and_the_gradient_is_right(f, order):
    clear_cache()
    rng = np.random.default_rng(7)
    args = _arguments(f, rng)
    expected = numeric_grad(f, args, 0)
    for mode in order:
        for _ in range(2):  # the first call, then the specialised code
            np.testing.assert_allclose(sg.grad(f, mode=mode)(*args), expected, rtol=1e-6, atol=1e-8)
    first = derivative(f, ("x",), "grad", dynamic=order[0] == "auto")
    assert derivative(f, ("x",), "grad", dynamic=order[1] == "auto") is first


@pytest.mark.parametrize("f", SHARED, ids=lambda f: f.__name__)
def test_forward_and_second_order_share_too_and_are_right(f):
    clear_cache()
    rng = np.random.default_rng(11)
    (x,) = _arguments(f, rng)
    v = rng.normal(size=x.shape)
    expected_jvp = numeric_jvp(f, [x], 0, v)
    gradient = sg.grad(f, mode="s2s")
    expected_hvp = numeric_jvp(gradient, [x], 0, v, step=1e-5)
    for mode in ("s2s", "auto"):
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        np.testing.assert_allclose(tangent, expected_jvp, rtol=1e-6, atol=1e-8)
        (product,) = sg.hvp(f, (x,), (v,), mode=mode)
        np.testing.assert_allclose(product, expected_hvp, rtol=1e-5, atol=1e-7)
    assert derivative(f, ("x",), "jvp", dynamic=True) is derivative(f, ("x",), "jvp", dynamic=False)


@pytest.mark.parametrize("f", NOT_SHARED, ids=lambda f: f.__name__)
def test_code_that_dispatches_when_it_runs_is_built_per_mode(f):
    clear_cache()
    rng = np.random.default_rng(3)
    args = _arguments(f, rng)
    expected = numeric_grad(f, args, 0)
    for mode in ("s2s", "auto"):
        np.testing.assert_allclose(sg.grad(f, mode=mode)(*args), expected, rtol=1e-6, atol=1e-8)
    from s2sgrad.compiler.mode_sharing import same_in_either_mode

    s2s = derivative(f, ("x",), "grad", dynamic=False)
    auto = derivative(f, ("x",), "grad", dynamic=True)
    assert s2s is not auto
    assert not same_in_either_mode(s2s) and not same_in_either_mode(auto)


def test_a_checkpointed_loop_is_built_per_mode():
    def rolled(x):
        h = x
        for _ in sg.checkpointed(range(4)):
            h = np.tanh(h) * 0.9
        return np.sum(h)

    x = np.linspace(0.1, 0.8, 5)
    expected = numeric_grad(rolled, [x], 0)
    for mode in ("s2s", "auto"):
        np.testing.assert_allclose(sg.grad(rolled, mode=mode)(x), expected, rtol=1e-6, atol=1e-8)
    assert derivative(rolled, ("x",), dynamic=False) is not derivative(rolled, ("x",), dynamic=True)


def test_a_global_rebound_after_the_shared_build_is_read(monkeypatch):
    clear_cache()
    x = np.linspace(0.2, 1.0, 4)
    np.testing.assert_allclose(
        sg.grad(reads_a_global, mode="s2s")(x), numeric_grad(reads_a_global, [x], 0), rtol=1e-6
    )
    monkeypatch.setattr(__import__(__name__), "SCALE", -2.25)
    expected = numeric_grad(reads_a_global, [x], 0)
    for mode in ("auto", "s2s"):
        np.testing.assert_allclose(sg.grad(reads_a_global, mode=mode)(x), expected, rtol=1e-6)


def _canonical(generated: GeneratedFunction, seen: set) -> str:
    """The code and its callees' code, with the numbers of unique names taken out."""
    if id(generated) in seen:
        return "<seen>"
    seen.add(id(generated))

    def plain(text: str) -> str:
        return re.sub(r"\d+", "N", re.sub(r"_\d+(?=_|\b)", "", text))

    parts = [plain(generated.source)]
    if generated.companion is not None:
        parts.append(plain(generated.companion.source))
    for name, value in sorted(generated.given_namespace.items()):
        inner = generated_of(value) if isinstance(value, types.FunctionType) else None
        if inner is not None:
            parts.append(_canonical(inner, seen))
        else:
            parts.append(f"{plain(name)}={getattr(value, '__qualname__', type(value).__name__)}")
    return "\n".join(parts)


@pytest.mark.parametrize("kind", ["grad", "vjp", "jvp"])
def test_code_said_to_be_the_same_is_what_the_other_mode_builds(kind):
    """Built in each mode from an empty cache: where ``same_in_either_mode`` says so, the
    two codes (callees included) differ in nothing but the numbers of their names."""
    from s2sgrad.compiler.mode_sharing import same_in_either_mode

    checked = 0
    for f in [*SHARED, *NOT_SHARED]:
        clear_cache()
        s2s = derivative(f, ("x",), kind, dynamic=False)
        said = same_in_either_mode(s2s)
        text = _canonical(s2s, set())
        clear_cache()
        auto = derivative(f, ("x",), kind, dynamic=True)
        assert same_in_either_mode(auto) == said, f.__name__
        if said:
            checked += 1
            assert _canonical(auto, set()) == text, f.__name__
    assert checked == len(SHARED)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@pytest.mark.parametrize("modes", [("s2s", "s2s"), ("s2s", "auto")])
def test_the_source_shown_is_the_code_of_the_transforms_own_first_call(modes):
    """``sg.source(g)`` after ``g``'s first call shows the code that call ran, also where
    another transform (of either mode) made that code and a third ran other shapes since."""
    clear_cache()
    big = np.random.default_rng(0).uniform(-2, 2, size=6000)  # written in place
    small = np.random.default_rng(1).uniform(-2, 2, size=7)  # expressions
    made = sg.grad(rosenbrock, mode=modes[0])
    made(big)
    big_code = sg.source(made)
    other = sg.grad(rosenbrock, mode=modes[0])
    other(small)
    if np.lib.NumpyVersion(np.__version__) < "2.0.0" and sg.source(other) == big_code:
        pytest.skip("NumPy 1.26: both sizes are given the same specialised code")
    assert sg.source(other) != big_code
    g = sg.grad(rosenbrock, mode=modes[1])
    g(big)
    assert sg.source(g) == big_code
    expected = numeric_grad(rosenbrock, [small], 0)
    np.testing.assert_allclose(g(small), expected, rtol=1e-6, atol=1e-6)
