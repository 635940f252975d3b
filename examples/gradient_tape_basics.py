"""TensorFlow's GradientTape examples, over NumPy, with the numbers TensorFlow prints.

The examples follow the ``tf.GradientTape`` reference and the "Introduction to gradients
and automatic differentiation" and "Advanced automatic differentiation" guides:
``watch``, nested tapes, persistent tapes, ``stop_recording``, ``reset``,
``watch_accessed_variables=False``, ``output_gradients``, ``unconnected_gradients``,
several tapes at once and higher-order derivatives. ``tf.constant`` is ``sg.constant``,
``tf.Variable`` is ``sg.Variable``; the code between is plain NumPy.

Run with ``python examples/gradient_tape_basics.py``.
"""

import numpy as np

import s2sgrad as sg


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def watch_a_constant() -> None:
    x = sg.constant(3.0)
    with sg.GradientTape() as g:
        g.watch(x)
        y = x * x
    print("d(x^2)/dx at 3:", g.gradient(y, x))  # 6.0


def nested_tapes() -> None:
    x = sg.constant(5.0)
    with sg.GradientTape() as g:
        g.watch(x)
        with sg.GradientTape() as gg:
            gg.watch(x)
            y = x * x
        dy_dx = gg.gradient(y, x)  # 2 * x
    d2y_dx2 = g.gradient(dy_dx, x)
    print("nested tapes, x = 5: dy/dx =", dy_dx.numpy(), " d2y/dx2 =", d2y_dx2)  # 10.0, 2.0


def persistent_tape() -> None:
    x = sg.constant(3.0)
    with sg.GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
        z = y * y
    print("persistent tape: dz/dx =", g.gradient(z, x), " dy/dx =", g.gradient(y, x))  # 108, 6
    del g  # drop the reference to the tape


def non_persistent_tape_is_used_once() -> None:
    x = sg.constant(3.0)
    with sg.GradientTape() as g:
        g.watch(x)
        y = x * x
    g.gradient(y, x)
    try:
        g.gradient(y, x)
    except RuntimeError as error:
        print("second gradient of a non-persistent tape: RuntimeError:", error)


def stop_recording() -> None:
    x = sg.Variable(2.0)
    y = sg.Variable(3.0)
    with sg.GradientTape() as t:
        x_sq = x * x
        with t.stop_recording():
            y_sq = y * y
        z = x_sq + y_sq
    grad = t.gradient(z, {"x": x, "y": y})
    print("stop_recording: dz/dx =", grad["x"], " dz/dy =", grad["y"])  # 4.0, None


def reset() -> None:
    x = sg.Variable(2.0)
    y = sg.Variable(3.0)
    with sg.GradientTape() as t:
        y_sq = y * y
        t.reset()  # forget y * y
        z = x * x + y_sq
    grad = t.gradient(z, {"x": x, "y": y})
    print("reset: dz/dx =", grad["x"], " dz/dy =", grad["y"])  # 4.0, None


def watch_accessed_variables_false() -> None:
    x0 = sg.Variable(0.0)
    x1 = sg.Variable(10.0)
    with sg.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x1)
        y0 = np.sin(x0)
        y1 = np.logaddexp(x1, 0.0)  # softplus
        ys = y0 + y1
    grad = tape.gradient(ys, {"x0": x0, "x1": x1})
    print("watch_accessed_variables=False: dy/dx0 =", grad["x0"], " dy/dx1 =", grad["x1"])


def output_gradients() -> None:
    x = sg.Variable(np.array([1.0, 2.0, 3.0]))
    with sg.GradientTape() as tape:
        y = x**2
    weights = np.array([1.0, 0.5, 0.25])
    print("output_gradients [1, 0.5, 0.25] for y = x^2:", tape.gradient(y, x, weights))


def unconnected_gradients() -> None:
    x = sg.Variable(2.0)
    y = sg.Variable(3.0)
    with sg.GradientTape(persistent=True) as tape:
        z = y * y
    print("unconnected source:", tape.gradient(z, x))  # None
    print("unconnected source, 'zero':", tape.gradient(z, x, unconnected_gradients="zero"))


def several_tapes() -> None:
    x0 = sg.constant(0.0)
    x1 = sg.constant(0.0)
    with sg.GradientTape() as tape0, sg.GradientTape() as tape1:
        tape0.watch(x0)
        tape1.watch(x1)
        ys = np.sin(x0) + sigmoid(x1)
    print("two tapes: dys/dx0 =", tape0.gradient(ys, x0), " dys/dx1 =", tape1.gradient(ys, x1))


def higher_order() -> None:
    x = sg.Variable(1.0)
    with sg.GradientTape() as t2:
        with sg.GradientTape() as t1:
            y = x * x * x
        dy_dx = t1.gradient(y, x)
    d2y_dx2 = t2.gradient(dy_dx, x)
    print("x^3 at 1: dy/dx =", dy_dx.numpy(), " d2y/dx2 =", d2y_dx2)  # 3.0, 6.0


def gradient_of_a_model() -> None:
    """The guide's first model: y = x @ w + b, loss = mean(y^2), gradients wrt w and b."""
    w = sg.Variable(np.random.default_rng(0).normal(size=(3, 2)), name="w")
    b = sg.Variable(np.zeros(2), name="b")
    x = np.array([[1.0, 2.0, 3.0]])
    with sg.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = np.mean(y**2)
    dl_dw, dl_db = tape.gradient(loss, [w, b])
    print("model: dl/dw shape", dl_dw.shape, " dl/db =", dl_db)


def main() -> None:
    watch_a_constant()
    nested_tapes()
    persistent_tape()
    non_persistent_tape_is_used_once()
    stop_recording()
    reset()
    watch_accessed_variables_false()
    output_gradients()
    unconnected_gradients()
    several_tapes()
    higher_order()
    gradient_of_a_model()


if __name__ == "__main__":
    main()
