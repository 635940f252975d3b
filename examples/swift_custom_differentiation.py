"""Swift for TensorFlow's "Custom differentiation" tutorial, in NumPy with s2sgrad.

- ``@derivative(of: sillyExp)``: a custom derivative. ``sillyExp`` prints each time it
  runs; its derivative reuses the value, so one gradient prints the message once.
- ``withoutDerivative(at:)``: ``sin(sin(sin(x))) + withoutDerivative(cos(cos(cos(y))))``
  has the gradient ``(-0.18009877, 0.0)``.
- ``withDerivative``: hooks that print and rewrite cotangents in the backward pass,
  printed in the order Swift prints them (the hook on ``x`` inside ``log`` first, then the
  one on ``sin(x)``); the gradient is ``cos(30) + 0.5 = 0.65425146``.
- An MLP trained on XOR, with hooks printing the cotangents of its hidden layer and of
  its prediction at every step, as in the tutorial; then trained further, quietly, until
  it predicts XOR.
- ``makeRecomputedInGradient``: ``sg.checkpoint`` recomputes a function in the backward
  pass, so "Computing square..." is printed twice.

Run with ``python examples/swift_custom_differentiation.py``.
"""

import math
import os

import numpy as np

import s2sgrad as sg

# derivative(of:) -----------------------------------------------------------------------


def silly_exp(x):
    e = math.e
    print(f"Taking e({e}) to the power of {x}!")
    return e**x


@sg.derivative(of=silly_exp)
def silly_derivative(x):
    y = silly_exp(x)
    return y, lambda v: v * y


def custom_derivative() -> None:
    print("exp(3) =", silly_exp(3.0))
    print("∇exp(3) =", sg.grad(silly_exp)(3.0))


# withoutDerivative(at:) ------------------------------------------------------------------


def sines_and_cosines(x, y):
    return np.sin(np.sin(np.sin(x))) + sg.without_derivative(np.cos(np.cos(np.cos(y))))


def without_derivative() -> None:
    print(sg.grad(sines_and_cosines, wrt=(0, 1))(2.0, 3.0))


# withDerivative ---------------------------------------------------------------------------


def print_sin_cotangent(g):
    print("∂+/∂sin =", g)


def rewrite_log_cotangent(g):
    print(f"∂log/∂x = {g}, but rewritten to 0.5")
    return 0.5


def sin_plus_log(x):
    a = sg.with_derivative(np.sin(x), print_sin_cotangent)
    b = np.log(sg.with_derivative(x, rewrite_log_cotangent))
    return a + b


def with_derivative() -> None:
    print(sg.grad(sin_plus_log)(30.0))


# an MLP on XOR with hooks ------------------------------------------------------------------


def relu(x):
    return np.maximum(x, 0.0)


verbose = True  # the hooks and the loss print while this is true


def show_hidden_cotangent(g):
    if verbose:
        print("∂L/∂layer1 =", np.round(g, 4).tolist())


def show_prediction_cotangent(g):
    if verbose:
        print("∂L/∂ŷ =", np.round(g, 4).tolist())


def mlp(params, x):
    hidden = relu(x @ params["w1"] + params["b1"])
    h0 = sg.with_derivative(hidden, show_hidden_cotangent)
    return relu(h0 @ params["w2"] + params["b2"])


def xor_loss(params, x, y):
    prediction = sg.with_derivative(mlp(params, x)[:, 0], show_prediction_cotangent)
    loss = np.mean((prediction - y) ** 2)
    if verbose:
        print("Loss:", sg.without_derivative(loss))
    return loss


def xor_mlp(steps: int, more_steps: int) -> None:
    """``steps`` steps as in the tutorial (printing), then ``more_steps`` quiet ones."""
    global verbose
    rng = np.random.default_rng(1)
    params = {
        "w1": rng.uniform(-0.6, 0.6, size=(2, 10)),
        "b1": np.zeros(10),
        "w2": rng.uniform(-0.6, 0.6, size=(10, 1)),
        "b2": np.zeros(1),
    }
    x = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = np.array([0.0, 1.0, 1.0, 0.0])
    dloss = sg.grad(xor_loss)
    for _ in range(steps):
        grads = dloss(params, x, y)
        params = {k: params[k] - 0.02 * grads[k] for k in params}

    verbose = False  # the generated code reads the global at each call
    for _ in range(more_steps):
        grads = dloss(params, x, y)
        params = {k: params[k] - 0.1 * grads[k] for k in params}
    prediction = mlp(params, x)[:, 0]
    loss = np.mean((prediction - y) ** 2)
    print(f"after {more_steps} more steps: loss {loss:.6f}, predictions {np.round(prediction, 3)}")
    verbose = True


# makeRecomputedInGradient ------------------------------------------------------------------


@sg.checkpoint
def square(x):
    print("  Computing square...")
    return x * x


def cos_squared(x):
    return square(np.cos(x))


def recomputed_in_gradient() -> None:
    print("Running original computation...")
    output, backprop = sg.vjp(cos_squared, 10.0)
    print("Running backpropagation...")
    (grad,) = backprop(1.0)
    print("Gradient =", grad)


def main() -> None:
    custom_derivative()
    without_derivative()
    with_derivative()
    xor_mlp(int(os.environ.get("XOR_STEPS", 10)), int(os.environ.get("XOR_MORE_STEPS", 1000)))
    recomputed_in_gradient()


if __name__ == "__main__":
    main()
