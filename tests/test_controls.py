"""Derivative controls in both engines: stop_gradient, derivative, custom_gradient,
with_derivative, checkpoint, and export keeping custom derivatives.

The numbers are the documented ones from the Swift and TensorFlow examples these
controls come from. Every gradient function is called twice: the first call of new
shapes runs the generic code while specialising it, the second the specialised code.
"""

import contextlib
import inspect
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from oracle import call_twice, directional_derivative, numeric_grad, numeric_jacobian

import s2sgrad as sg

MODES = ["s2s", "tape"]


# stop_gradient / without_derivative -----------------------------------------------------------


def sines_and_stopped_cosines(x, y):
    return np.sin(np.sin(np.sin(x))) + sg.without_derivative(np.cos(np.cos(np.cos(y))))


@pytest.mark.parametrize("mode", MODES)
def test_without_derivative_swift_example(mode):
    dx, dy = call_twice(sg.grad(sines_and_stopped_cosines, wrt=(0, 1), mode=mode), 2.0, 3.0)
    assert dx == pytest.approx(-0.18009877, abs=1e-8)
    assert dy == 0.0
    assert isinstance(dy, float)


def sines_and_cosines(x, y):
    return np.sin(np.sin(np.sin(x))) + np.cos(np.cos(np.cos(y)))


def derivative_of_cos(function) -> list[str]:
    """The lines of ``function``'s generated backward code that compute d cos = -sin."""
    gradient = sg.grad(function, wrt=(0, 1), mode="s2s")
    call_twice(gradient, 2.0, 3.0)
    backward = sg.source(gradient).split("# grad of:")[1].split("\n", 1)[1]
    return [ln for ln in backward.splitlines() if "sin(" in ln and "-" in ln]  # np or math


def test_without_derivative_generates_no_derivative_code_downstream():
    assert derivative_of_cos(sines_and_cosines)  # what the check looks for, where it is
    assert not derivative_of_cos(sines_and_stopped_cosines)
    gradient = sg.grad(sines_and_stopped_cosines, wrt=(0, 1), mode="s2s")
    assert call_twice(gradient, 2.0, 3.0)[1] == 0.0
    assert "as_gradient(None, y)" in sg.source(gradient)  # no cotangent of y is computed


def times_stopped_self(x):
    return np.sum(x * sg.stop_gradient(x))


@pytest.mark.parametrize("mode", MODES)
def test_stop_gradient_treats_its_value_as_a_constant(mode):
    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(call_twice(sg.grad(times_stopped_self, mode=mode), x), x)
    assert sg.stop_gradient is sg.without_derivative


def test_stop_gradient_on_the_tape_returns_plain_values():
    x = sg.Variable(np.array([1.0, 2.0]))
    with sg.GradientTape() as tape:
        stopped = sg.stop_gradient({"a": x, "b": [x * 2.0]})
        y = np.sum(x * stopped["b"][0])
    assert type(stopped["a"]) is np.ndarray and type(stopped["b"][0]) is np.ndarray
    np.testing.assert_allclose(tape.gradient(y, x), [2.0, 4.0])


# derivative(of=...) ----------------------------------------------------------------------------


def my_exp(x):
    print("running my_exp")
    return np.exp(x)


@sg.derivative(of=my_exp)
def my_exp_derivative(x):
    y = my_exp(x)
    return y, lambda g: g * y


def twice_my_exp(x):
    return my_exp(x) * 2.0


@pytest.mark.parametrize("mode", MODES)
def test_custom_exp_runs_once_per_gradient_call(mode, capsys):
    assert my_exp(3.0) == pytest.approx(20.0855369, rel=1e-8)
    assert capsys.readouterr().out.count("running my_exp") == 1
    gradient = sg.grad(twice_my_exp, mode=mode)
    for _ in range(2):
        assert gradient(3.0) == pytest.approx(2.0 * 20.0855369, rel=1e-8)
        assert capsys.readouterr().out.count("running my_exp") == 1


@pytest.mark.parametrize("mode", MODES)
def test_custom_exp_in_a_larger_function(mode, capsys):
    def f(x):
        return np.sum(my_exp(x) * x)

    x = np.array([0.5, 1.0, -1.0])
    result = call_twice(sg.grad(f, mode=mode), x)
    np.testing.assert_allclose(result, np.exp(x) * (1.0 + x))
    assert capsys.readouterr().out.count("running my_exp") == 2


def test_generated_code_calls_the_custom_derivative():
    gradient = sg.grad(twice_my_exp, mode="s2s")
    call_twice(gradient, 3.0)
    source = sg.source(gradient)
    assert "my_exp_vjp(x)" in source and ".backward(" in source
    assert "np.exp" not in source  # my_exp's body is not differentiated...
    assert "np.exp" in sg.source(sg.grad(lambda x: np.exp(x) * 2.0, mode="s2s"))  # ...else seen


def scaled_distance(x, y):
    return np.sqrt(x * x + y * y)


@sg.derivative(of=scaled_distance)
def scaled_distance_derivative(x, y):
    r = np.sqrt(x * x + y * y)
    return r, lambda g: (g * x / r, None)  # y's cotangent deliberately dropped


@pytest.mark.parametrize("mode", MODES)
def test_a_pullback_may_return_none_for_an_argument(mode):
    def f(x, y):
        return scaled_distance(x, y) * 3.0

    dx, dy = call_twice(sg.grad(f, wrt=(0, 1), mode=mode), 3.0, 4.0)
    assert dx == pytest.approx(3.0 * 3.0 / 5.0)
    assert dy == 0.0


@pytest.mark.parametrize("mode", MODES)
def test_custom_derivative_through_vjp(mode):
    x = np.array([0.1, 0.2])
    out, pullback = sg.vjp(lambda x: my_exp(x) * 2.0, x, mode=mode)
    np.testing.assert_allclose(out, 2.0 * np.exp(x))
    np.testing.assert_allclose(pullback(np.array([1.0, 3.0]))[0], [2.0, 6.0] * np.exp(x))


def test_the_dispatcher_keeps_the_function_as_it_was():
    offset = 10.0

    def shifted(x, scale=2.0, *, extra=0.0):
        """Docs stay."""
        return scale * x + offset + extra

    @sg.derivative(of=shifted)
    def shifted_derivative(x, scale=2.0, *, extra=0.0):
        return shifted(x, scale, extra=extra), lambda g: g * scale

    assert shifted(1.0) == 12.0 and shifted(1.0, 3.0, extra=1.0) == 14.0
    assert str(inspect.signature(shifted)) == "(x, scale=2.0, *, extra=0.0)"
    assert "return scale * x + offset + extra" in inspect.getsource(shifted)
    assert shifted.__doc__ == "Docs stay." and shifted.__name__ == "shifted"
    for mode in MODES:
        assert call_twice(sg.grad(lambda x: shifted(x, 4.0), mode=mode), 1.0) == 4.0


def test_custom_derivative_on_a_gradient_tape_with_variables():
    v = sg.Variable(np.array([1.0, 2.0]))
    with sg.GradientTape() as tape:
        y = np.sum(my_exp_silently(v))
    np.testing.assert_allclose(tape.gradient(y, v), 3.0 * np.exp([1.0, 2.0]))


def my_exp_silently(x):
    return np.exp(x)


@sg.derivative(of=my_exp_silently)
def my_exp_silently_derivative(x):
    y = my_exp_silently(x)
    return y, lambda g: 3.0 * g * y  # not the true derivative: shows which one ran


def test_custom_derivative_has_second_derivatives_on_nested_tapes():
    x = sg.constant(0.7)
    with sg.GradientTape() as outer:
        outer.watch(x)
        with sg.GradientTape() as inner:
            inner.watch(x)
            y = my_exp_silently(np.sin(x))
        dy = inner.gradient(y, x)
    s, c = np.sin(0.7), np.cos(0.7)
    assert float(dy.numpy()) == pytest.approx(3.0 * np.exp(s) * c)
    assert outer.gradient(dy, x) == pytest.approx(3.0 * (3.0 * np.exp(s) * c * c - np.exp(s) * s))


@contextlib.contextmanager
def derivative_of_library_function(primitive, df):
    """Register ``df`` for a NumPy function for the duration of a test, then undo it."""
    sg.derivative(of=primitive)(df)
    try:
        yield
    finally:
        assert sg.forget_derivative(of=primitive)


def bessel_i1(x):
    """I1, the derivative of NumPy's i0, by its power series (NumPy has no i1)."""
    return sum(
        (x / 2.0) ** (2 * k + 1) / (math.factorial(k) * math.factorial(k + 1)) for k in range(30)
    )


def i0_derivative(x):
    return np.i0(x), lambda g: g * bessel_i1(x)


@pytest.mark.parametrize("mode", MODES)
def test_derivative_of_a_library_function_without_a_rule(mode):
    def f(x):
        return np.sum(np.i0(x) * x)

    x = np.array([0.3, -1.2, 2.0])
    with derivative_of_library_function(np.i0, i0_derivative):
        result = call_twice(sg.grad(f, mode=mode), x)
    np.testing.assert_allclose(result, numeric_grad(f, [x], 0), rtol=1e-7)


def exp_with_doubled_derivative(x):
    y = np.exp(x)
    return y, lambda g: 2.0 * g * y


@pytest.mark.parametrize("mode", MODES)
def test_derivative_replaces_the_rule_of_a_library_function(mode):
    def f(x):
        return np.sum(np.exp(x))

    x = np.array([0.0, 1.0])
    with derivative_of_library_function(np.exp, exp_with_doubled_derivative):
        np.testing.assert_allclose(call_twice(sg.grad(f, mode=mode), x), 2.0 * np.exp(x))
    np.testing.assert_allclose(call_twice(sg.grad(f, mode=mode), x), np.exp(x))  # undone


def test_derivative_needs_a_callable():
    with pytest.raises(TypeError, match="needs a function"):
        sg.derivative(of=3.0)


# with_derivative ------------------------------------------------------------------------------


def hooked(x, seen):
    a = sg.with_derivative(np.sin(x), lambda g: seen.append(g))
    b = np.log(sg.with_derivative(x, lambda g: 0.5))
    return a + b


@pytest.mark.parametrize("mode", MODES)
def test_with_derivative_swift_example(mode):
    seen = []
    result = call_twice(sg.grad(hooked, mode=mode), 30.0, seen)
    assert result == pytest.approx(np.cos(30.0) + 0.5)
    assert result == pytest.approx(0.65425146, abs=1e-7)  # Swift's Float
    assert len(seen) == 2 and all(float(g) == 1.0 for g in seen)  # once per gradient call


@pytest.mark.parametrize("mode", MODES)
def test_with_derivative_hook_sees_array_cotangents_and_none_keeps_them(mode):
    seen = []

    def f(x):
        return np.sum(3.0 * sg.with_derivative(x * x, seen.append))

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(call_twice(sg.grad(f, mode=mode), x), 6.0 * x)
    np.testing.assert_allclose(seen[0], [3.0, 3.0])


def test_with_derivative_is_the_identity_outside_differentiation():
    x = np.ones(2)
    assert sg.with_derivative(x, lambda g: 0.0) is x


def test_with_derivative_shows_in_generated_code():
    gradient = sg.grad(hooked, mode="s2s")
    call_twice(gradient, 30.0, [])
    assert "vjp_call(with_derivative" in sg.source(gradient)


# custom_gradient ------------------------------------------------------------------------------


def clip_by_norm(g, limit):
    return g * limit / max(float(np.linalg.norm(g)), limit)


@sg.custom_gradient
def clip_gradient(y):
    return y, lambda g: clip_by_norm(g, 0.5)


def clipped_square(v):
    return clip_gradient(v * v)


@pytest.mark.parametrize("mode", MODES)
def test_custom_gradient_clips_by_norm(mode):
    assert call_twice(sg.grad(clipped_square, mode=mode), 2.0) == pytest.approx(2.0)
    assert clipped_square(2.0) == 4.0  # a plain call returns just the value


@pytest.mark.parametrize("mode", MODES)
def test_custom_gradient_on_arrays(mode):
    def f(v):
        return np.sum(clip_gradient(v) * np.array([3.0, 4.0]))

    v = np.array([1.0, 1.0])
    np.testing.assert_allclose(call_twice(sg.grad(f, mode=mode), v), [0.3, 0.4])


@sg.custom_gradient
def product_with_swapped_gradient(x, y):
    return x * y, lambda g: (g * x, g * y)  # deliberately swapped


@pytest.mark.parametrize("mode", MODES)
def test_custom_gradient_of_two_arguments(mode):
    def f(x, y):
        return product_with_swapped_gradient(x, y) + x

    dx, dy = call_twice(sg.grad(f, wrt=(0, 1), mode=mode), 2.0, 5.0)
    assert (dx, dy) == (3.0, 5.0)


def test_custom_gradient_keeps_the_functions_name_and_signature():
    assert product_with_swapped_gradient.__name__ == "product_with_swapped_gradient"
    assert str(inspect.signature(product_with_swapped_gradient)) == "(x, y)"


# checkpoint -----------------------------------------------------------------------------------


@sg.checkpoint
def square(x):
    print("running square")
    return x * x


def square_of_cosine(x):
    return square(np.cos(x))


@pytest.mark.parametrize("mode", MODES)
def test_checkpoint_recomputes_in_the_backward_pass(mode, capsys):
    gradient = sg.grad(square_of_cosine, mode=mode)
    for _ in range(2):
        assert gradient(10.0) == pytest.approx(-0.9129453, abs=1e-7)
        # once in the forward pass, once more in the backward pass
        assert capsys.readouterr().out.count("running square") == 2
    assert square(3.0) == 9.0
    assert capsys.readouterr().out.count("running square") == 1


def test_checkpoint_shows_in_generated_code(capsys):
    gradient = sg.grad(square_of_cosine, mode="s2s")
    call_twice(gradient, 10.0)
    assert "square_vjp(np.cos(x))" in sg.source(gradient)


DENSE_CALLS = []


class Dense:
    """A layer object: ``layer(w, x)``."""

    def __init__(self, scale):
        self.scale = scale

    def __call__(self, w, x):
        DENSE_CALLS.append(self)
        return np.tanh(x @ w) * self.scale


@pytest.mark.parametrize("mode", MODES)
def test_checkpoint_of_a_layer_object(mode):
    layer = Dense(2.0)
    discarding = sg.checkpoint(layer)
    assert isinstance(discarding, sg.controls.Checkpointed) and discarding.scale == 2.0

    def f(w, x):
        return np.sum(discarding(w, discarding(w, x)) ** 2)

    def plain(w, x):
        return np.sum(layer(w, layer(w, x)) ** 2)

    rng = np.random.default_rng(0)
    w, x = rng.normal(size=(3, 3)), rng.normal(size=(4, 3))
    expected = sg.grad(plain, wrt=(0, 1), mode=mode)(w, x)
    DENSE_CALLS.clear()
    result = call_twice(sg.grad(f, wrt=(0, 1), mode=mode), w, x)
    assert len(DENSE_CALLS) == 8  # per gradient call: two layers, forward and recomputed
    for got, want in zip(result, expected):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def block_with_keywords(w, x, power=2, *, shift=0.0):
    return np.sum(np.tanh(x * w + shift) ** power)


@pytest.mark.parametrize("mode", MODES)
def test_checkpoint_with_keyword_arguments(mode):
    checkpointed = sg.checkpoint(block_with_keywords)

    def f(w, x):
        return checkpointed(w, x=x, power=3, shift=0.25)

    def plain(w, x):
        return block_with_keywords(w, x=x, power=3, shift=0.25)

    w, x = np.array([0.5, -0.3]), np.array([1.0, 2.0])
    expected = sg.grad(plain, wrt=(0, 1), mode="tape")(w, x)
    for got, want in zip(call_twice(sg.grad(f, wrt=(0, 1), mode=mode), w, x), expected):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def dict_layer(p, x):
    return np.tanh(x @ p["w"] + p["b"])


@pytest.mark.parametrize("mode", [*MODES, "auto"])
@pytest.mark.parametrize("wrt", [0, (0, 1)])
def test_checkpoint_passes_on_the_gradient_of_a_dict_argument(mode, wrt):
    """On the tape, a dict argument's cotangent was dropped when another argument was
    differentiated too (the dict's gradient came back as zeros)."""
    checkpointed = sg.checkpoint(dict_layer)

    def f(p, x):
        return np.sum(checkpointed(p, x) ** 2)

    rng = np.random.default_rng(4)
    p = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    x = rng.normal(size=(4, 3))
    got = call_twice(sg.grad(f, wrt=wrt, mode=mode), p, x)
    got = got if isinstance(wrt, tuple) else (got,)
    for index, gradient in zip(wrt if isinstance(wrt, tuple) else (wrt,), got):
        expected = numeric_grad(f, (p, x), index)
        if index == 0:
            assert set(gradient) == {"w", "b"}
            for key in expected:
                np.testing.assert_allclose(gradient[key], expected[key], rtol=1e-6, atol=1e-8)
        else:
            np.testing.assert_allclose(gradient, expected, rtol=1e-6, atol=1e-8)


def test_checkpoint_of_a_dict_argument_has_second_derivatives_on_the_tape():
    checkpointed = sg.checkpoint(dict_layer)

    def f(p, x):
        return np.sum(checkpointed(p, x) ** 2)

    rng = np.random.default_rng(5)
    p = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    x = rng.normal(size=(4, 3))
    v = rng.normal(size=(4, 3))
    (product,) = sg.hvp(lambda x: f(p, x), (x,), (v,), mode="tape")
    gradient_x = sg.grad(lambda p, x: f(p, x), wrt=1, mode="tape")
    step = 1e-5
    expected = directional_derivative(lambda x: gradient_x(p, x), x, v, step=step)
    np.testing.assert_allclose(product, expected, rtol=1e-6, atol=1e-8)
    hessian_mixed = sg.jacobian(
        lambda b: sg.grad(f, wrt=1, mode="tape")({**p, "b": b}, x), mode="tape"
    )(p["b"])
    numeric = numeric_jacobian(lambda b: gradient_x({**p, "b": b}, x), [p["b"]], 0, step=step)
    np.testing.assert_allclose(hessian_mixed, numeric, rtol=1e-6, atol=1e-8)


def test_a_differentiated_keyword_only_argument_is_refused_on_the_tape():
    checkpointed = sg.checkpoint(block_with_keywords)
    with pytest.raises(sg.NonDifferentiableError, match="keyword-only"):
        sg.grad(lambda s: checkpointed(0.5, 1.0, shift=s), mode="tape")(0.25)


def test_checkpoint_has_second_derivatives_on_nested_tapes():
    cube = sg.checkpoint(lambda x: x * x * x)
    x = sg.constant(0.7)
    with sg.GradientTape() as outer:
        outer.watch(x)
        with sg.GradientTape() as inner:
            inner.watch(x)
            y = cube(np.sin(x))
        dy = inner.gradient(y, x)
    s, c = np.sin(0.7), np.cos(0.7)
    assert float(dy.numpy()) == pytest.approx(3.0 * s * s * c)
    assert outer.gradient(dy, x) == pytest.approx(6.0 * s * c * c - 3.0 * s**3)


def test_checkpoint_needs_a_callable():
    with pytest.raises(TypeError, match="callable"):
        sg.checkpoint(3.0)


# export ---------------------------------------------------------------------------------------

USER_MODULE = """
import numpy as np

import s2sgrad as sg


def my_exp(x):
    return np.exp(x)


@sg.derivative(of=my_exp)
def my_exp_derivative(x):
    y = my_exp(x)
    return y, lambda g: 3.0 * g * y  # not the true derivative: shows which one ran


@sg.custom_gradient
def clip_gradient(y):
    return y, lambda g: g * 0.5 / max(np.linalg.norm(g), 0.5)


@sg.checkpoint
def square(x):
    return x * x


def halve(g):
    return 0.5 * g


def loss(x):
    a = my_exp(x) + clip_gradient(x * x) + square(np.sin(x))
    b = sg.with_derivative(x, halve) ** 3 + sg.stop_gradient(x) * x
    return a + b
"""


def test_export_keeps_custom_derivatives_in_a_fresh_interpreter(tmp_path, monkeypatch):
    (tmp_path / "controls_user.py").write_text(textwrap.dedent(USER_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    import controls_user

    x = 0.3
    expected = (
        3.0 * np.exp(x)  # my_exp's custom derivative
        + 0.5 * 2.0 * x  # the cotangent 1.0 clipped to 0.5
        + 2.0 * np.sin(x) * np.cos(x)  # square, recomputed
        + 0.5 * 3.0 * x * x  # the cotangent of x halved by the hook
        + x  # stop_gradient(x) * x
    )
    for mode in MODES:
        assert call_twice(sg.grad(controls_user.loss, mode=mode), x) == pytest.approx(expected)
    sg.export(controls_user.loss, tmp_path / "dloss.py")
    program = (
        "import sys\nsys.path.insert(0, sys.argv[1])\n"
        "from dloss import dloss\nprint(repr(dloss(0.3)))"
    )
    run = subprocess.run(
        [sys.executable, "-c", program, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(sg.__file__).parents[1],
    )
    assert float(run.stdout) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_checkpointed_layers_called_from_a_list(mode):
    layers = [sg.checkpoint(Dense(1.0)), sg.checkpoint(Dense(0.5))]
    plain_layers = [layer.layer for layer in layers]

    def f(w, x):
        for layer in layers:
            x = layer(w, x)
        return np.sum(x)

    def plain(w, x):
        for layer in plain_layers:
            x = layer(w, x)
        return np.sum(x)

    rng = np.random.default_rng(1)
    w, x = rng.normal(size=(3, 3)), rng.normal(size=(4, 3))
    expected = sg.grad(plain, mode="tape")(w, x)
    DENSE_CALLS.clear()
    np.testing.assert_allclose(call_twice(sg.grad(f, mode=mode), w, x), expected, rtol=1e-12)
    assert len(DENSE_CALLS) == 8


# forward mode ---------------------------------------------------------------------------------

ALL_MODES = ["s2s", "auto", "tape"]


def cube_root(x):
    return np.cbrt(x)


@sg.derivative(
    of=cube_root,
    jvp=lambda primals, tangents: (np.cbrt(primals[0]), 10.0 * tangents[0]),  # recognisable
)
def cube_root_derivative(x):
    y = np.cbrt(x)
    return y, lambda g: g / (3.0 * y * y)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_forward_mode_uses_the_jvp_companion(mode):
    value, tangent = sg.jvp(lambda x: cube_root(x) * 2.0, (8.0,), (1.0,), mode=mode)
    assert (value, tangent) == (4.0, 20.0)


@pytest.mark.parametrize("mode", ALL_MODES)
def test_forward_mode_through_stop_gradient(mode):
    value, tangent = sg.jvp(lambda x: x * sg.stop_gradient(x), (3.0,), (1.0,), mode=mode)
    assert value == 9.0 and tangent == 3.0


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_forward_mode_does_not_call_hooks(mode):
    # (the tape computes forward mode by transposing reverse mode, so there hooks do run)
    def f(x):
        return sg.with_derivative(x * x, lambda g: 100.0 * g)

    assert sg.jvp(f, (3.0,), (1.0,), mode=mode) == (9.0, 6.0)


@pytest.mark.parametrize("mode", ALL_MODES)
def test_forward_mode_through_checkpoints(mode, capsys):
    layer = sg.checkpoint(Dense(2.0))

    def f(w, x):
        return np.sum(layer(w, square(x)))

    w, x = np.eye(2) * 0.3, np.ones((3, 2))
    dw, dx = np.full((2, 2), 0.1), np.full((3, 2), -0.2)
    _, tangent = sg.jvp(f, (w, x), (dw, dx), mode=mode)
    gw, gx = sg.grad(f, wrt=(0, 1), mode="tape")(w, x)
    assert tangent == pytest.approx(np.sum(gw * dw) + np.sum(gx * dx))


# differentiating a function with a custom derivative directly ----------------------------------

DIRECT = MODES


@pytest.mark.parametrize("mode", DIRECT)
def test_differentiating_a_function_with_a_custom_derivative_directly(mode):
    assert call_twice(sg.grad(my_exp_silently, mode=mode), 1.0) == pytest.approx(3.0 * np.e)
    assert call_twice(sg.grad(clip_gradient, mode=mode), 3.0) == 0.5
    dx, dy = call_twice(sg.grad(product_with_swapped_gradient, wrt=(0, 1), mode=mode), 2.0, 5.0)
    assert (dx, dy) == (2.0, 5.0)


LIBRARY_USER_MODULE = """
import math

import numpy as np

import s2sgrad as sg


def bessel_i1(x):
    f = math.factorial
    return sum((x / 2) ** (2 * k + 1) / (f(k) * f(k + 1)) for k in range(30))


@sg.derivative(of=np.i0)
def i0_derivative(x):
    return np.i0(x), lambda g: g * bessel_i1(x)


def loss(x):
    return np.sum(np.i0(x) * x)
"""


def test_export_keeps_a_library_functions_custom_derivative(tmp_path, monkeypatch):

    (tmp_path / "library_user.py").write_text(LIBRARY_USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import library_user

        expected = sg.grad(library_user.loss, mode="s2s")(np.array([0.3, 1.2]))
        sg.export(library_user.loss, tmp_path / "dlibrary.py")
    finally:  # the import registered a derivative for np.i0: undo it
        sg.forget_derivative(of=np.i0)
        sys.modules.pop("library_user", None)
    program = (
        "import sys\nsys.path.insert(0, sys.argv[1])\nimport numpy as np\n"
        "from dlibrary import dloss\nprint(repr(dloss(np.array([0.3, 1.2])).tolist()))"
    )
    run = subprocess.run(
        [sys.executable, "-c", program, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(sg.__file__).parents[1],
    )
    np.testing.assert_allclose(eval(run.stdout), expected, rtol=1e-12)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_forget_derivative_restores_the_rule_before_it(mode):
    def loss(x):
        return np.sum(np.sin(x) * x)

    x = np.linspace(0.1, 0.9, 3)
    plain = np.cos(x) * x + np.sin(x)
    assert np.allclose(sg.grad(loss, mode=mode)(x), plain)

    @sg.derivative(of=np.sin)
    def doubled_sine(x):
        return np.sin(x), lambda g: 2.0 * g * np.cos(x)

    assert np.allclose(sg.grad(loss, mode=mode)(x), 2.0 * np.cos(x) * x + np.sin(x))
    assert sg.forget_derivative(of=np.sin)
    assert not sg.forget_derivative(of=np.sin)
    assert np.allclose(sg.grad(loss, mode=mode)(x), plain)  # NumPy's rule again
    assert np.allclose(sg.hvp(loss, (x,), (np.ones(3),), mode=mode), -np.sin(x) * x + 2 * np.cos(x))


def test_forget_derivative_of_a_user_function_goes_back_to_its_source():
    def cube(x):
        return x**3

    @sg.derivative(of=cube)
    def wrong_on_purpose(x):
        return cube(x), lambda g: 0.0 * g

    assert sg.grad(lambda x: cube(x))(2.0) == 0.0
    assert sg.forget_derivative(of=cube)
    for mode in ("s2s", "tape"):
        assert sg.grad(lambda x: cube(x), mode=mode)(2.0) == pytest.approx(12.0)
