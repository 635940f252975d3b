"""A model split into two parts, trained by chaining their pullbacks.

The question: a network runs as two separate pieces (on two machines, say), so no single
function computes the loss. How are both pieces trained? Reverse mode answers it: the
second piece's pullback turns the loss's cotangent 1.0 into the cotangent of the hidden
activations ``dh``; the first piece's pullback turns ``dh`` into the gradients of its
parameters. With ``sg.vjp`` each piece gives ``(output, pullback)``; with a
``GradientTape`` the same chaining is ``output_gradients=dh``.

The chained gradients equal those of the whole model, and 200 steps of SGD fit a small
regression problem.

Run with ``python examples/split_model.py``.
"""

import os

import numpy as np

import s2sgrad as sg


def first_part(params, x):
    """Two tanh layers: the piece running on the first machine."""
    h = np.tanh(x @ params["w1"] + params["b1"])
    return np.tanh(h @ params["w2"] + params["b2"])


def second_part(params, h, y):
    """A linear read-out and the mean squared error: the piece on the second machine."""
    prediction = h @ params["w3"] + params["b3"]
    return np.mean((prediction - y) ** 2)


def whole_model(params1, params2, x, y):
    return second_part(params2, first_part(params1, x), y)


def init(seed: int = 0):
    rng = np.random.default_rng(seed)
    params1 = {
        "w1": rng.normal(size=(3, 16)) / np.sqrt(3),
        "b1": np.zeros(16),
        "w2": rng.normal(size=(16, 8)) / 4.0,
        "b2": np.zeros(8),
    }
    params2 = {"w3": rng.normal(size=(8, 1)) / np.sqrt(8), "b3": np.zeros(1)}
    x = rng.uniform(-1.0, 1.0, size=(128, 3))
    y = np.sin(2.0 * x[:, :1]) * np.cos(x[:, 1:2]) + 0.5 * x[:, 2:]
    return params1, params2, x, y


def chained_gradients(params1, params2, x, y):
    """The loss and both pieces' gradients, each piece differentiated on its own."""
    h, pullback1 = sg.vjp(first_part, params1, x)
    loss, pullback2 = sg.vjp(second_part, params2, h, y)
    grads2, dh, _ = pullback2(1.0)  # cotangents of params2, h and y
    grads1, _ = pullback1(dh)  # cotangents of params1 and x
    return loss, grads1, grads2


def tape_chained_gradients(params1, params2, x, y):
    """The same with two GradientTapes: the first one pulls back ``output_gradients=dh``."""
    variables1 = {k: sg.Variable(v) for k, v in params1.items()}
    variables2 = {k: sg.Variable(v) for k, v in params2.items()}
    with sg.GradientTape() as first:
        h = first_part(variables1, x)
    boundary = sg.constant(h.numpy())  # what crosses between the machines: a plain array
    with sg.GradientTape() as second:
        second.watch(boundary)
        loss = second_part(variables2, boundary, y)
    grads2, dh = second.gradient(loss, [variables2, boundary])
    grads1 = first.gradient(h, variables1, output_gradients=dh)
    return loss, grads1, grads2


def largest_difference(a, b):
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


def main() -> None:
    steps = int(os.environ.get("SPLIT_MODEL_STEPS", 200))
    params1, params2, x, y = init()

    loss, grads1, grads2 = chained_gradients(params1, params2, x, y)
    whole1, whole2 = sg.grad(whole_model, wrt=(0, 1))(params1, params2, x, y)
    print(f"loss {float(loss):.6f}")
    print(
        "chained pullbacks vs the whole model's gradient: largest difference "
        f"{max(largest_difference(grads1, whole1), largest_difference(grads2, whole2)):.1e}"
    )
    _, tape1, tape2 = tape_chained_gradients(params1, params2, x, y)
    print(
        "two GradientTapes and output_gradients vs the whole model: largest difference "
        f"{max(largest_difference(tape1, whole1), largest_difference(tape2, whole2)):.1e}"
    )

    for step in range(steps + 1):
        loss, grads1, grads2 = chained_gradients(params1, params2, x, y)
        if step % 50 == 0:
            print(f"step {step:3d}  loss {float(loss):.6f}")
        params1 = {k: params1[k] - 0.3 * grads1[k] for k in params1}
        params2 = {k: params2[k] - 0.3 * grads2[k] for k in params2}


if __name__ == "__main__":
    main()
