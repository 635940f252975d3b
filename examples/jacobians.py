"""Jacobians and a Hessian, after TensorFlow's "Advanced automatic differentiation" guide.

- A scalar source: the Jacobian of ``sigmoid(x + delta)`` wrt the scalar ``delta`` is the
  derivative of the sigmoid; it is plotted next to the sigmoid (``sigmoid.png``).
- A tensor source: the Jacobian of a dense layer's output (7, 10) wrt its kernel (5, 10)
  has shape (7, 10, 5, 10); summed over the output it is the gradient.
- A batch Jacobian: for a two-layer network on 7 examples, ``batch_jacobian`` gives the
  (7, 6, 5) diagonal blocks of the full (7, 6, 7, 5) Jacobian.
- The BatchNorm caveat: batch normalisation mixes the examples of a batch, so the full
  Jacobian has off-diagonal blocks and ``batch_jacobian``'s result is not the per-example
  Jacobian.
- The Hessian of a two-layer model's loss wrt the first kernel (40 × 40), shown with
  ``imshow`` (``hessian.png``), and one Newton step that lowers the loss.

Each is computed on a ``GradientTape`` and with the function transforms
(``sg.jacobian``, ``sg.hessian``), and the two are compared.

Run with ``python examples/jacobians.py [output directory]``.
"""

import numpy as np
from _shared import output_directory, pyplot

import s2sgrad as sg


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def relu(x):
    return np.maximum(x, 0.0)


def elu(x):
    return np.where(x > 0.0, x, np.exp(np.minimum(x, 0.0)) - 1.0)


def dense(x, kernel, bias, activation):
    return activation(x @ kernel + bias)


def dense_params(rng, inputs, units):
    return rng.normal(size=(inputs, units)) / np.sqrt(inputs), 0.1 * rng.normal(size=units)


def scalar_source(directory) -> None:
    x = np.linspace(-10.0, 10.0, 201)
    delta = sg.Variable(0.0)
    with sg.GradientTape() as tape:
        y = sigmoid(x + delta)
    dy_dx = tape.jacobian(y, delta)
    print("scalar source: y", y.shape, " dy/ddelta", dy_dx.shape)
    s = sigmoid(x)
    error = np.max(np.abs(dy_dx - s * (1 - s)))
    print(f"  vs sigmoid'(x) = s (1 - s): largest difference {error:.1e}")
    transformed = sg.jacobian(lambda d: sigmoid(x + d))(0.0)
    print(f"  tape vs sg.jacobian: largest difference {np.max(np.abs(dy_dx - transformed)):.1e}")

    plt = pyplot()
    figure, axes = plt.subplots(figsize=(5, 3))
    axes.plot(x, y.numpy(), label="y = sigmoid(x)")
    axes.plot(x, dy_dx, label="dy/dx")
    axes.set_xlabel("x")
    axes.legend()
    figure.tight_layout()
    figure.savefig(directory / "sigmoid.png", dpi=80)
    plt.close(figure)


def tensor_source(rng) -> None:
    x = rng.normal(size=(7, 5))
    kernel, bias = (sg.Variable(v) for v in dense_params(rng, 5, 10))
    with sg.GradientTape(persistent=True) as tape:
        y = dense(x, kernel, bias, relu)
    j = tape.jacobian(y, kernel)
    g = tape.gradient(y, kernel)
    print("tensor source: y", y.shape, " kernel", kernel.shape, " jacobian", j.shape)
    print(
        f"  sum of the jacobian vs the gradient: {np.max(np.abs(np.sum(j, axis=(0, 1)) - g)):.1e}"
    )
    transformed = sg.jacobian(lambda k: dense(x, k, bias.numpy(), relu))(kernel.numpy())
    print(f"  tape vs sg.jacobian: largest difference {np.max(np.abs(j - transformed)):.1e}")


def batch_jacobian(rng) -> None:
    x = sg.constant(rng.normal(size=(7, 5)))
    (k1, b1), (k2, b2) = dense_params(rng, 5, 8), dense_params(rng, 8, 6)
    with sg.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = dense(dense(x, k1, b1, elu), k2, b2, elu)
    j = tape.jacobian(y, x)
    jb = tape.batch_jacobian(y, x)
    diagonal = np.einsum("bxby->bxy", j)
    print("batch jacobian: full", j.shape, " batch", jb.shape)
    print(f"  batch jacobian vs diagonal blocks: {np.max(np.abs(jb - diagonal)):.1e}")


def batch_norm(x):
    """Batch normalisation in training mode: each feature standardised over the batch."""
    mean = np.mean(x, axis=0)
    variance = np.mean((x - mean) ** 2, axis=0)
    return (x - mean) / np.sqrt(variance + 1e-3)


def batch_norm_caveat(rng) -> None:
    x = sg.constant(rng.normal(size=(7, 5)))
    k1, b1 = dense_params(rng, 5, 6)
    with sg.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = batch_norm(dense(x, k1, b1, elu))
    j = tape.jacobian(y, x)
    jb = tape.batch_jacobian(y, x)
    diagonal = np.einsum("bxby->bxy", j)
    off_diagonal = j.copy()
    for b in range(7):
        off_diagonal[b, :, b, :] = 0.0
    print(
        "batch norm: examples interact, the off-diagonal blocks are not zero: "
        f"largest {np.max(np.abs(off_diagonal)):.2f}"
    )
    print(f"  so batch_jacobian is not the diagonal blocks: {np.max(np.abs(jb - diagonal)):.2f}")


def hessian_and_newton_step(rng, directory) -> None:
    x = rng.normal(size=(7, 5))
    (k1, b1), (k2, b2) = dense_params(rng, 5, 8), dense_params(rng, 8, 6)

    def loss(kernel):
        hidden = elu(x @ kernel + b1)
        return np.mean(elu(hidden @ k2 + b2) ** 2)

    kernel = sg.Variable(k1)
    with sg.GradientTape() as t2:
        with sg.GradientTape() as t1:
            value = loss(kernel)
        g = t1.gradient(value, kernel)
    h = t2.jacobian(g, kernel)
    print("hessian: kernel", kernel.shape, " hessian", h.shape)
    transformed = sg.hessian(loss, mode="s2s")(k1)
    print(f"  tape vs sg.hessian: largest difference {np.max(np.abs(h - transformed)):.1e}")

    n = kernel.size
    h_mat = np.reshape(h, (n, n))
    print(f"  symmetric: largest |H - H^T| {np.max(np.abs(h_mat - h_mat.T)):.1e}")
    update = np.linalg.solve(h_mat + 1e-3 * np.eye(n), np.reshape(g.numpy(), (n, 1)))
    new_kernel = k1 - np.reshape(update, k1.shape)
    print(f"  Newton step: loss {float(loss(k1)):.6f} -> {float(loss(new_kernel)):.6f}")

    plt = pyplot()
    figure, axes = plt.subplots(figsize=(4, 4))
    image = axes.imshow(h_mat, cmap="viridis")
    figure.colorbar(image, ax=axes, shrink=0.8)
    axes.set_title("Hessian wrt the first kernel")
    figure.savefig(directory / "hessian.png", dpi=80)
    plt.close(figure)


def main() -> None:
    directory = output_directory()
    rng = np.random.default_rng(0)
    scalar_source(directory)
    tensor_source(rng)
    batch_jacobian(rng)
    batch_norm_caveat(rng)
    hessian_and_newton_step(rng, directory)
    print("plots written to", directory)


if __name__ == "__main__":
    main()
