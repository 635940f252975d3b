"""Loops and branches: a small RNN and an iterative solver, differentiated by s2sgrad.

Both functions are ordinary Python: a ``for`` loop over the rows of an array with an ``if``
whose test reads the data, and a ``while`` loop that runs until the iterate has converged
(so the number of iterations is only known at run time). The example prints the gradient
code s2sgrad writes for each and checks the gradients against central finite differences.

Run with ``python examples/loops_and_branches.py``.
"""

import numpy as np

import s2sgrad as sg


def rnn_loss(W, U, b, xs, target):
    """Squared error of the last state of a tanh RNN whose state is kept inside the unit ball."""
    h = np.zeros((xs.shape[1], W.shape[0]))
    for x in xs:
        h = np.tanh(h @ W + x @ U + b)
        norm = np.linalg.norm(h)
        if norm > 1.0:
            h = h / norm
    return np.sum((h - target) ** 2)


def fixed_point(a, x0):
    """Solve x = cos(a * x) by damped iteration; the loop stops when the step is tiny."""
    x = x0
    step = 1.0
    while np.abs(step) > 1e-12:
        step = np.cos(a * x) - x
        x = x + 0.5 * step
    return x


def numerical_gradient(f, args, index, eps=1e-6):
    """Central finite differences of ``f(*args)`` wrt ``args[index]`` (an array or a float)."""
    value = np.array(args[index], dtype=float)
    gradient = np.zeros_like(value)
    for position in np.ndindex(value.shape):
        shifted = []
        for sign in (1.0, -1.0):
            moved = value.copy()
            moved[position] += sign * eps
            new_args = list(args)
            new_args[index] = moved if moved.ndim else float(moved)
            shifted.append(f(*new_args))
        gradient[position] = (shifted[0] - shifted[1]) / (2 * eps)
    return gradient


def main() -> None:
    rng = np.random.default_rng(0)
    W = 0.5 * rng.standard_normal((4, 4))
    U = rng.standard_normal((3, 4))
    b = 0.1 * rng.standard_normal(4)
    xs = rng.standard_normal((6, 2, 3))  # 6 time steps, batch of 2, 3 inputs
    target = 0.3 * rng.standard_normal((2, 4))

    drnn = sg.grad(rnn_loss, wrt=("W", "U", "b"))
    gradients = drnn(W, U, b, xs, target)
    print("The gradient of rnn_loss (W, U, b):\n")
    print(sg.source(drnn))
    args = (W, U, b, xs, target)
    for name, index, gradient in zip("WUb", range(3), gradients):
        error = np.max(np.abs(gradient - numerical_gradient(rnn_loss, args, index)))
        print(f"d{name}: largest difference from finite differences {error:.1e}")
        assert error < 1e-6, name

    dsolve = sg.grad(fixed_point)
    a, x0 = 0.8, 0.5
    slope = dsolve(a, x0)
    print("\nThe gradient of fixed_point wrt a:\n")
    print(sg.source(dsolve))
    x = fixed_point(a, x0)
    implicit = -x * np.sin(a * x) / (1.0 + a * np.sin(a * x))  # from x = cos(a x)
    numeric = numerical_gradient(fixed_point, (a, x0), 0)
    print(f"dx/da = {slope:.10f}  (finite differences {numeric:.10f}, implicit {implicit:.10f})")
    assert abs(slope - numeric) < 1e-6 and abs(slope - implicit) < 1e-9


if __name__ == "__main__":
    main()
