"""The GradientTape examples of TensorFlow's documentation, over NumPy, with their numbers.

The examples come from the ``tf.GradientTape`` reference and the "Introduction to
gradients and automatic differentiation" and "Advanced automatic differentiation" guides.
Keras layers become a small ``Dense`` class holding two Variables.
"""

import numpy as np
import pytest
from oracle import numeric_grad

from s2sgrad.tape import GradientTape, Variable, constant


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def relu(x):
    return np.maximum(x, 0.0)


def elu(x):
    return np.where(x > 0.0, x, np.exp(np.minimum(x, 0.0)) - 1.0)


class Dense:
    """``tf.keras.layers.Dense``: ``activation(x @ kernel + bias)``."""

    def __init__(self, inputs, units, activation, rng):
        self.kernel = Variable(rng.normal(size=(inputs, units)) / np.sqrt(inputs), name="kernel")
        self.bias = Variable(0.1 * rng.normal(size=units), name="bias")
        self.activation = activation

    def __call__(self, x):
        return self.activation(x @ self.kernel + self.bias)

    @property
    def trainable_variables(self):
        return [self.kernel, self.bias]


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_gradient_of_x_squared():
    x = constant(3.0)
    with GradientTape() as g:
        g.watch(x)
        y = x * x
    assert g.gradient(y, x) == 6.0


def test_persistent_tape_gives_several_gradients():
    x = constant(3.0)
    with GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
        z = y * y
    assert g.gradient(z, x) == 108.0  # 4 * x**3 at x = 3
    assert g.gradient(y, x) == 6.0


def test_second_gradient_on_a_non_persistent_tape_raises():
    x = constant(3.0)
    with GradientTape() as g:
        g.watch(x)
        y = x * x
    g.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        g.gradient(y, x)


def test_nested_tapes_give_second_derivative():
    x = Variable(1.0)
    with GradientTape() as t2:
        with GradientTape() as t1:
            y = x * x * x
        dy_dx = t1.gradient(y, x)
    d2y_dx2 = t2.gradient(dy_dx, x)
    assert dy_dx.numpy() == 3.0  # 3 * x**2
    assert d2y_dx2 == 6.0  # 6 * x


def test_nested_tapes_with_watched_constant():
    x = constant(5.0)
    with GradientTape() as g:
        g.watch(x)
        with GradientTape() as gg:
            gg.watch(x)
            y = x * x
        dy_dx = gg.gradient(y, x)
    assert dy_dx.numpy() == 10.0
    assert g.gradient(dy_dx, x) == 2.0


def test_stop_recording_leaves_dz_dy_none():
    x = Variable(2.0)
    y = Variable(3.0)
    with GradientTape() as t:
        x_sq = x * x
        with t.stop_recording():
            y_sq = y * y
        z = x_sq + y_sq
    grad = t.gradient(z, {"x": x, "y": y})
    assert grad["x"] == 4.0
    assert grad["y"] is None


def test_stop_recording_outside_the_tape_raises():
    tape = GradientTape()
    with pytest.raises(RuntimeError, match="recording"), tape.stop_recording():
        pass
    with tape, tape.stop_recording(), pytest.raises(RuntimeError), tape.stop_recording():
        pass


def test_reset_forgets_what_was_recorded():
    x = Variable(2.0)
    y = Variable(3.0)
    with GradientTape() as t:
        y_sq = y * y
        t.reset()
        z = x * x + y_sq
    grad = t.gradient(z, {"x": x, "y": y})
    assert grad["x"] == 4.0
    assert grad["y"] is None


def test_two_tapes_each_watch_their_own_values():
    x0 = constant(0.0)
    x1 = constant(0.0)
    with GradientTape() as tape0, GradientTape() as tape1:
        tape0.watch(x0)
        tape1.watch(x1)
        y0 = np.sin(x0)
        y1 = sigmoid(x1)
        y = y0 + y1
        ys = np.sum(y)
    assert tape0.gradient(ys, x0) == pytest.approx(1.0)  # cos(0)
    assert tape1.gradient(ys, x1) == pytest.approx(0.25)  # sigmoid(0) * (1 - sigmoid(0))
    assert tape0.watched_variables() == () and tape1.watched_variables() == ()


def test_watch_accessed_variables_false_watches_only_what_is_watched():
    x0 = Variable(0.0)
    x1 = Variable(10.0)
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x1)
        y0 = np.sin(x0)
        y1 = np.logaddexp(x1, 0.0)  # softplus
        ys = np.sum(y0 + y1)
    grad = tape.gradient(ys, {"x0": x0, "x1": x1})
    assert grad["x0"] is None
    assert grad["x1"] == pytest.approx(0.9999546, abs=1e-7)


def test_watch_accessed_variables_false_with_nothing_watched_gives_none():
    x = Variable(2.0)
    with GradientTape(watch_accessed_variables=False) as tape:
        y = x**2
    assert tape.gradient(y, x) is None
    assert tape.watched_variables() == ()


def test_jacobian_of_sigmoid_wrt_scalar_shift():
    x = np.linspace(-10.0, 10.0, 200 + 1)
    delta = Variable(0.0)
    with GradientTape() as tape:
        y = sigmoid(x + delta)
    dy_dx = tape.jacobian(y, delta)
    assert y.shape == (201,)
    assert dy_dx.shape == (201,)
    s = sigmoid(x)
    np.testing.assert_allclose(dy_dx, s * (1 - s), rtol=1e-10)


def test_jacobian_of_dense_layer_wrt_kernel(rng):
    x = rng.normal(size=(7, 5))
    layer = Dense(5, 10, relu, rng)
    with GradientTape(persistent=True) as tape:
        y = layer(x)
    j = tape.jacobian(y, layer.kernel)
    assert y.shape == (7, 10)
    assert j.shape == (7, 10, 5, 10)
    g = tape.gradient(y, layer.kernel)
    np.testing.assert_allclose(g, np.sum(j, axis=(0, 1)), atol=1e-12)


def test_hessian_of_two_layer_network_and_newton_step(rng):
    x = rng.normal(size=(7, 5))
    layer1 = Dense(5, 8, relu, rng)
    layer2 = Dense(8, 6, relu, rng)

    def loss_value():
        return np.mean(layer2(layer1(x)) ** 2).numpy()

    with GradientTape() as t2:
        with GradientTape() as t1:
            loss = np.mean(layer2(layer1(x)) ** 2)
        g = t1.gradient(loss, layer1.kernel)
    h = t2.jacobian(g, layer1.kernel)
    assert layer1.kernel.shape == (5, 8)
    assert h.shape == (5, 8, 5, 8)
    n_params = layer1.kernel.size
    h_mat = np.reshape(h, (n_params, n_params))
    np.testing.assert_allclose(h_mat, h_mat.T, atol=1e-12)

    before = loss_value()
    update = np.linalg.solve(h_mat + 1e-3 * np.eye(n_params), np.reshape(g.numpy(), (n_params, 1)))
    layer1.kernel.assign_sub(np.reshape(update, layer1.kernel.shape))
    assert loss_value() < before


def test_batch_jacobian_equals_diagonal_blocks_of_the_jacobian(rng):
    x = constant(rng.normal(size=(7, 5)))
    layer1 = Dense(5, 8, elu, rng)
    layer2 = Dense(8, 6, elu, rng)
    with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = layer2(layer1(x))
    assert y.shape == (7, 6)
    j = tape.jacobian(y, x)
    assert j.shape == (7, 6, 7, 5)
    jb = tape.batch_jacobian(y, x)
    assert jb.shape == (7, 6, 5)
    for b in range(7):
        np.testing.assert_allclose(jb[b], j[b, :, b, :], atol=1e-12)
    np.testing.assert_allclose(jb, np.sum(j, axis=2), atol=1e-12)


def test_input_gradient_regularisation_matches_finite_differences(rng):
    x = constant(rng.normal(size=(7, 5)))
    layer = Dense(5, 10, relu, rng)

    def input_gradient_norm(kernel, bias):
        """The norm of d sum(layer(x)**2) / dx, on a first-order tape."""
        with GradientTape(watch_accessed_variables=False) as t1:
            t1.watch(x)
            out = np.sum(relu(x @ kernel + bias) ** 2)
        g1 = t1.gradient(out, x)
        return np.sqrt(np.sum(g1**2))

    with GradientTape() as t2:
        with GradientTape(watch_accessed_variables=False) as t1:
            t1.watch(x)
            out = np.sum(layer(x) ** 2)
        g1 = t1.gradient(out, x)
        g1_mag = np.linalg.norm(g1)
    dg1_mag = t2.gradient(g1_mag, layer.trainable_variables)

    kernel, bias = layer.kernel.numpy(), layer.bias.numpy()
    assert g1_mag.numpy() == pytest.approx(input_gradient_norm(kernel, bias))
    for index, got in enumerate(dg1_mag):
        expected = numeric_grad(input_gradient_norm, (kernel, bias), index)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_model_split_in_two_tapes_chained_by_output_gradients(rng):
    x = rng.normal(size=(7, 5))
    target = rng.normal(size=(7, 3))
    layer1 = Dense(5, 8, np.tanh, rng)
    layer2 = Dense(8, 3, sigmoid, rng)

    def loss_of(y):
        return np.mean((y - target) ** 2)

    with GradientTape() as whole:
        loss = loss_of(layer2(layer1(x)))
    expected = whole.gradient(loss, layer1.trainable_variables + layer2.trainable_variables)

    with GradientTape() as first:
        h = layer1(x)
    with GradientTape() as second:
        second.watch(h)
        loss = loss_of(layer2(h))
    dh, *grads2 = second.gradient(loss, [h, *layer2.trainable_variables])
    grads1 = first.gradient(h, layer1.trainable_variables, output_gradients=dh)

    for got, want in zip(grads1 + grads2, expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("plain", ["abc", 3, [1.0, 2.0], np.ones(2)])
def test_watching_a_plain_value_raises_valueerror_as_tensorflow_does(plain):
    with GradientTape() as tape, pytest.raises(ValueError) as raised:
        tape.watch(plain)
    assert "test_tape_tensorflow_examples.py" in str(raised.value)
    assert "s2sgrad.constant" in str(raised.value)


def test_a_variable_as_the_target_raises_valueerror_as_tensorflow_does():
    v = Variable(2.0)
    with GradientTape() as tape:
        y = v * v
    with pytest.raises(ValueError, match=r"v\.value\(\)") as raised:
        tape.gradient(v, v)
    assert "test_tape_tensorflow_examples.py" in str(raised.value)
    with GradientTape() as tape:
        read = v.value()
    assert tape.gradient(read, v) == 1.0 and y == 4.0
