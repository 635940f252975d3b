"""The "Automatic Differentiation" section of Dive into Deep Learning, with s2sgrad.

- ``y = 2 xᵀx`` for ``x = [0, 1, 2, 3]``: the gradient is ``4x``.
- ``y = sum(x)``: the gradient is all ones.
- A non-scalar ``y = x * x``: its sum's gradient is ``2x``.
- Detaching: ``u = stop_gradient(x * x)``, ``z = u * x``: the gradient of ``sum(z)`` is
  ``u``, while that of ``sum(y)`` is still ``2x`` (a persistent tape gives both).
- Python control flow: ``f(a)`` doubles ``a`` in a ``while`` loop until the norm passes
  1000 and branches on the sign, so ``f(a) = k·a`` for a ``k`` that depends on ``a``,
  and the gradient is ``d / a``.

Each is shown with the function transforms (``sg.grad``) and with a ``GradientTape``, as
D2L shows it with PyTorch's ``backward`` and TensorFlow's tape.

Run with ``python examples/d2l_autograd.py``.
"""

import numpy as np

import s2sgrad as sg


def two_x_dot_x(x):
    return 2 * np.dot(x, x)


def total(x):
    return np.sum(x)


def sum_of_squares(x):
    y = x * x
    return np.sum(y)


def detached(x):
    u = sg.stop_gradient(x * x)
    z = u * x
    return np.sum(z)


def f(a):
    b = a * 2
    while np.linalg.norm(b) < 1000:
        b = b * 2
    if np.sum(b) > 0:  # noqa: SIM108 (D2L's if statement, kept as written)
        c = b
    else:
        c = 100 * b
    return c


def function_transforms(x, a) -> None:
    print("function transforms (sg.grad):")
    y = two_x_dot_x(x)
    grad = sg.grad(two_x_dot_x)(x)
    print("  y = 2 x.x =", y, " grad:", grad, " grad == 4 * x:", np.all(grad == 4 * x))
    print("  grad of sum(x):", sg.grad(total)(x))
    print("  grad of sum(x * x):", sg.grad(sum_of_squares)(x))
    u = x * x
    grad = sg.grad(detached)(x)
    print("  grad of sum(stop_gradient(x * x) * x):", grad, " == u:", np.all(grad == u))
    d = f(a)
    grad = sg.grad(f)(a)
    print(
        f"  control flow: a = {a:.6f}, d = f(a) = {d:.6f}, grad = {grad:.6f}, "
        f"grad == d / a: {grad == d / a}"
    )


def gradient_tape(x, a) -> None:
    print("GradientTape:")
    xv = sg.Variable(x)
    with sg.GradientTape() as t:
        y = 2 * np.dot(xv, xv)
    grad = t.gradient(y, xv)
    print("  y = 2 x.x =", y.numpy(), " grad:", grad, " grad == 4 * x:", np.all(grad == 4 * x))
    with sg.GradientTape() as t:
        y = np.sum(xv)
    print("  grad of sum(x):", t.gradient(y, xv))
    with sg.GradientTape(persistent=True) as t:
        y = xv * xv
        u = sg.stop_gradient(y)
        z = u * xv
    grad = t.gradient(z, xv)
    print("  grad of sum(stop_gradient(x * x) * x):", grad, " == u:", np.all(grad == u))
    grad = t.gradient(y, xv)
    print(
        "  the same persistent tape, grad of sum(x * x):", grad, " == 2 * x:", np.all(grad == 2 * x)
    )
    av = sg.Variable(a)
    with sg.GradientTape() as t:
        d = f(av)
    grad = t.gradient(d, av)
    print(f"  control flow: grad = {grad:.6f}, grad == d / a: {grad == d.numpy() / a}")


def main() -> None:
    x = np.arange(4.0)
    a = float(np.random.default_rng(0).normal())
    function_transforms(x, a)
    gradient_tape(x, a)


if __name__ == "__main__":
    main()
