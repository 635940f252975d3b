"""Input-gradient regularisation: a gradient of the norm of a gradient.

TensorFlow's "Advanced automatic differentiation" guide penalises a layer by the size of
its output's gradient with respect to its *input*: an inner tape computes
``g1 = d sum(layer(x)²) / dx``, an outer tape the gradient of ``|g1|`` with respect to the
layer's weights. Here the same thing three ways:

1. with ``sg.GradientTape``, as in the guide;
2. with function transforms: ``sg.grad`` of a function that itself calls ``sg.grad``
   (the outer gradient as generated code, ``mode="s2s"``, or on the tape, ``mode="tape"``);
3. checked against central finite differences of the regulariser.

Then a few steps of gradient descent on a loss plus the penalty.

Run with ``python examples/input_gradient_regularisation.py``.
"""

import numpy as np

import s2sgrad as sg


def layer(params, x):
    """A dense layer with a tanh activation."""
    return np.tanh(x @ params["kernel"] + params["bias"])


def layer_output_energy(x, params):
    return np.sum(layer(params, x) ** 2)


def input_gradient_norm(params, x):
    """|d sum(layer(x)²) / dx|, written with sg.grad inside."""
    g1 = sg.grad(layer_output_energy, wrt="x")(x, params)
    return np.sqrt(np.sum(g1**2))


def init(seed: int = 0):
    rng = np.random.default_rng(seed)
    params = {"kernel": rng.normal(size=(5, 10)) / np.sqrt(5), "bias": 0.1 * rng.normal(size=10)}
    x = rng.normal(size=(7, 5))
    target = rng.normal(size=(7, 10))
    return params, x, target


def with_gradient_tapes(params, x):
    """The guide's code: nested tapes, the inner one watching the input."""
    kernel, bias = sg.Variable(params["kernel"]), sg.Variable(params["bias"])
    xc = sg.constant(x)
    with sg.GradientTape() as t2:
        with sg.GradientTape(watch_accessed_variables=False) as t1:
            t1.watch(xc)
            y = np.tanh(xc @ kernel + bias)
            out = np.sum(y**2)
        g1 = t1.gradient(out, xc)
        g1_mag = np.linalg.norm(g1)
    dg1_mag = t2.gradient(g1_mag, [kernel, bias])
    return float(g1_mag.numpy()), {"kernel": dg1_mag[0], "bias": dg1_mag[1]}


def finite_differences(f, params, eps=1e-6):
    """Central differences of f(params) wrt every entry of every array in params."""
    result = {}
    for name, value in params.items():
        gradient = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            shifted = []
            for sign in (1.0, -1.0):
                moved = {k: v.copy() for k, v in params.items()}
                moved[name][index] += sign * eps
                shifted.append(f(moved))
            gradient[index] = (shifted[0] - shifted[1]) / (2 * eps)
        result[name] = gradient
    return result


def largest_difference(a, b):
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


def penalised_loss(params, x, target):
    """Mean squared error plus 0.1 · the input-gradient norm."""
    error = np.mean((layer(params, x) - target) ** 2)
    return error + 0.1 * input_gradient_norm(params, x)


def main() -> None:
    params, x, target = init()
    value, tape_grads = with_gradient_tapes(params, x)
    print(f"|g1| = {value:.6f}")
    print(
        "d|g1|/dkernel shape",
        tape_grads["kernel"].shape,
        " d|g1|/dbias shape",
        tape_grads["bias"].shape,
    )

    numeric = finite_differences(lambda p: input_gradient_norm(p, x), params)
    for mode in ("s2s", "tape", "auto"):
        grads = sg.grad(input_gradient_norm, mode=mode)(params, x)
        print(
            f"grad of grad, mode={mode}: largest difference from finite differences "
            f"{largest_difference(grads, numeric):.1e}"
        )
    print(
        f"GradientTape: largest difference from finite differences "
        f"{largest_difference(tape_grads, numeric):.1e}"
    )

    dloss = sg.value_and_grad(penalised_loss, mode="s2s")
    for step in range(31):
        value, grads = dloss(params, x, target)
        params = {k: params[k] - 0.2 * grads[k] for k in params}
        if step % 10 == 0:
            print(f"step {step:2d}  loss + penalty {value:.6f}")


if __name__ == "__main__":
    main()
