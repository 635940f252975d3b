"""TensorFlow's ``GradientTape`` semantics, asked of ``sg.GradientTape``: persistent tapes
giving several gradients (of intermediates too), ``watch`` after a value was computed,
unconnected sources as ``None`` or zeros in nested structures, list and dict targets
summed, ``output_gradients`` chaining two tapes, ``stop_gradient`` and ``custom_gradient``
inside a tape, nested tapes to second and third order, ``jacobian`` and
``batch_jacobian`` (against central differences), ``Variable`` reads and ``assign``, and
in-place NumPy writes into arrays the tape follows.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import numeric_grad, numeric_jacobian

import s2sgrad as sg
from s2sgrad import GradientTape, Variable, constant

rng = np.random.default_rng(980047)


def plain(x):
    return x.numpy() if hasattr(x, "numpy") else x


def test_persistent_tape_differentiates_wrt_intermediates():
    x = constant(rng.standard_normal(3))
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = np.sin(y)
    v = plain(x)
    np.testing.assert_allclose(tape.gradient(z, x), np.cos(v**2) * 2 * v)
    np.testing.assert_allclose(tape.gradient(z, y), np.cos(v**2))
    np.testing.assert_allclose(tape.gradient(y, x), 2 * v)


def test_what_was_computed_before_watch_is_a_constant():
    x = constant(1.3)
    with GradientTape() as tape:
        y = x * x
        tape.watch(x)
        z = y * x
    assert tape.gradient(z, x) == pytest.approx(1.3**2)


def test_unconnected_sources_in_a_structure_are_none_or_zeros():
    x, y, w = constant(rng.standard_normal(3)), constant(rng.standard_normal((2, 2))), constant(1.0)
    with GradientTape(persistent=True) as tape:
        tape.watch([x, y, w])
        z = np.sum(x**2) * 3.0
    assert tape.gradient(z, y) is None
    g = tape.gradient(z, {"x": x, "rest": [y, w]}, unconnected_gradients="zero")
    np.testing.assert_allclose(g["x"], 6 * plain(x))
    np.testing.assert_array_equal(g["rest"][0], np.zeros((2, 2)))
    assert g["rest"][1] == 0.0


def test_list_and_dict_targets_are_summed():
    x = constant(rng.standard_normal(3))
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        a, b = np.sin(x), x**3
        total = np.sum(b)  # computed inside the tape: a target outside it is unconnected
    expected = np.cos(plain(x)) + 3 * plain(x) ** 2
    np.testing.assert_allclose(tape.gradient([a, b], x), expected)
    np.testing.assert_allclose(tape.gradient({"a": a, "b": total}, x), expected)


def test_output_gradients_chain_two_gradients():
    x = constant(rng.standard_normal(3))
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = np.sin(x)
        y = np.sum(h**2)
    dh = tape.gradient(y, h)
    np.testing.assert_allclose(tape.gradient(h, x, output_gradients=dh), tape.gradient(y, x))


def test_stop_gradient_and_custom_gradient_inside_a_tape():
    @sg.custom_gradient
    def clipped(x):
        return x * 1.0, lambda g: np.clip(g, -0.1, 0.1)

    x = constant(rng.standard_normal(4))
    with GradientTape() as tape:
        tape.watch(x)
        y = np.sum(clipped(x) * 5.0 + sg.stop_gradient(x**2) * x)
    np.testing.assert_allclose(tape.gradient(y, x), 0.1 + plain(x) ** 2)


def test_nested_tapes_give_the_hessian_by_jacobian():
    x = constant(rng.standard_normal(3))

    def f(v):
        return np.sum(np.sin(v) * v[::-1])

    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    expected = numeric_jacobian(sg.grad(f, mode="tape"), [plain(x)], 0, step=1e-5)
    np.testing.assert_allclose(outer.jacobian(g, x), expected, rtol=1e-5, atol=1e-7)


def test_three_nested_tapes_give_the_third_derivative():
    x = Variable(0.7)
    with GradientTape() as t3:
        with GradientTape() as t2:
            with GradientTape() as t1:
                y = np.sin(x) * x
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    assert plain(d2) == pytest.approx(-np.sin(0.7) * 0.7 + 2 * np.cos(0.7))
    assert plain(d3) == pytest.approx(-np.cos(0.7) * 0.7 - 3 * np.sin(0.7))


def test_gradient_penalty_of_the_input_gradient():
    w = Variable(rng.standard_normal((3, 2)))
    inputs = constant(rng.standard_normal((4, 3)))
    with GradientTape() as outer:
        with GradientTape() as inner:
            inner.watch(inputs)
            out = np.sum(np.tanh(inputs @ w))
        penalty = np.sum(inner.gradient(out, inputs) ** 2)

    def f(weights):
        h = np.tanh(plain(inputs) @ weights)
        return np.sum(((1 - h**2) @ weights.T) ** 2)

    np.testing.assert_allclose(
        outer.gradient(penalty, w), numeric_grad(f, [plain(w)], 0), rtol=1e-5
    )


def test_jacobian_and_batch_jacobian_match_central_differences():
    x = constant(rng.standard_normal((4, 3)))
    w = rng.standard_normal((3, 2))
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = np.tanh(x @ w)
    full = numeric_jacobian(lambda v: np.tanh(v @ w), [plain(x)], 0)
    np.testing.assert_allclose(tape.jacobian(y, x), full, rtol=1e-6, atol=1e-8)
    blocks = np.stack([full[i, :, i, :] for i in range(4)])
    np.testing.assert_allclose(tape.batch_jacobian(y, x), blocks, rtol=1e-6, atol=1e-8)


def test_jacobian_of_an_unconnected_source():
    x, z = constant(rng.standard_normal(3)), constant(rng.standard_normal(2))
    with GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = x * 2.0
    assert tape.jacobian(y, z) is None
    np.testing.assert_array_equal(
        tape.jacobian(y, z, unconnected_gradients="zero"), np.zeros((3, 2))
    )


def test_a_variable_assigned_inside_the_tape_keeps_its_reads():
    v = Variable(2.0)
    with GradientTape() as tape:
        y = v * v
        v.assign(5.0)
        z = y + v * 3.0
    assert plain(tape.gradient(z, v)) == pytest.approx(2 * 2.0 + 3.0)


def test_a_write_into_an_array_inside_a_gradient_tape_is_refused_with_advice_that_works():
    # values are immutable inside a GradientTape (TensorFlow's tensors are): np.zeros_like
    # of a watched value is a plain array, so the advice is to build the array anew
    x = constant(rng.standard_normal(4))
    with GradientTape() as tape:
        tape.watch(x)
        buffer = np.zeros_like(x)
        with pytest.raises(sg.S2SGradError, match="immutable") as refused:
            buffer[1:3] = x[:2] ** 2
        built = np.concatenate([np.zeros(1), x[:2] ** 2, np.zeros(1)])
        y = np.sum(built * x)
    assert f"{__file__}:" in str(refused.value)
    assert "np.zeros_like(x, shape" not in str(refused.value)

    def f(v):
        return np.sum(np.concatenate([[0.0], v[:2] ** 2, [0.0]]) * v)

    np.testing.assert_allclose(tape.gradient(y, x), numeric_grad(f, [plain(x)], 0), rtol=1e-6)


def written_buffer(v):
    buffer = np.zeros_like(v)
    buffer[1:3] = v[:2] ** 2
    return np.sum(buffer * v)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_the_same_write_in_a_transformed_function_is_followed(mode):
    x = rng.standard_normal(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)  # mode="auto" may use the tape
        actual = sg.grad(written_buffer, mode=mode)(x)
    np.testing.assert_allclose(actual, numeric_grad(written_buffer, [x], 0), rtol=1e-6)
