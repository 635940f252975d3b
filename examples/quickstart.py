"""A first tour of s2sgrad: differentiate a small model, read the code, train it.

Run with ``make demo`` (or ``python examples/quickstart.py`` once installed).
"""

import numpy as np

import s2sgrad as sg


def loss(w, b, x, y):
    """Mean squared error of a one-layer tanh model."""
    prediction = np.tanh(x @ w + b)
    return np.mean((prediction - y) ** 2)


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3))
    true_w = np.array([0.5, -1.0, 0.25])
    y = np.tanh(x @ true_w + 0.1)

    dloss = sg.grad(loss, wrt=("w", "b"))
    print("The gradient s2sgrad writes for loss(w, b, x, y), for any shapes:\n")
    sg.show(dloss)

    w, b = np.zeros(3), 0.0
    dloss(w, b, x, y)  # the first call specialises the code to these shapes
    print("\n... and after the first call, specialised to the shapes of w, b, x and y:\n")
    sg.show(dloss)

    print("\nGradient descent:")
    for step in range(201):
        dw, db = dloss(w, b, x, y)
        w, b = w - 0.5 * dw, b - 0.5 * db
        if step % 50 == 0:
            print(f"  step {step:3d}  loss {loss(w, b, x, y):.6f}")
    print(f"\nlearned w = {np.round(w, 3)}, b = {b:.3f} (true: {true_w}, 0.1)")


if __name__ == "__main__":
    main()
