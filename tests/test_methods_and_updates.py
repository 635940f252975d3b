"""Buffers swapped between steps, helpers that update their arguments, state kept on objects.

Each gradient is checked against central differences at random points, on the first
(generic) and second (specialised) call, in every mode that can follow it, and to second
order where the feature allows. Refusals name this file and line and say what to do.
"""

import inspect
import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

HERE = "test_methods_and_updates.py"


def check_gradient(function, args, wrt=0, modes=("s2s", "auto"), hessian=True):
    """The gradient in each mode, both calls, against central differences; and a
    Hessian-vector product against differences of the s2s gradient."""
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    expected = tuple(numeric_grad(function, args, p) for p in positions)
    expected = expected if isinstance(wrt, tuple) else expected[0]
    for mode in modes:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # auto must not fall back to the tape
            transformed = sg.grad(function, wrt=wrt, mode=mode)
            for _ in ("first", "second"):
                assert_close(transformed(*args), expected, rtol=1e-5, atol=1e-7)
    if hessian and not isinstance(wrt, tuple):
        gradient = sg.grad(function, wrt=wrt, mode="s2s")
        along = np.random.default_rng(1).normal(size=np.shape(args[wrt]))
        vectors = tuple(along if i == wrt else np.zeros_like(a) for i, a in enumerate(args))
        product = sg.hvp(function, tuple(args), vectors, mode="s2s")
        product = product[wrt] if isinstance(product, tuple) else product

        def directional(*point):
            return np.sum(gradient(*point) * along)

        assert_close(product, numeric_grad(directional, args, wrt), rtol=1e-4, atol=1e-6)


def line_of(function, text: str) -> str:
    """``file:line`` of the first line of ``function`` that contains ``text``."""
    lines, first = inspect.getsourcelines(function)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"{HERE}:{first + offset}"


# -- buffers swapped between time steps -----------------------------------------------------


def heat(u0, kappa):
    u = u0.copy()
    new = np.empty_like(u)
    for _ in range(4):
        new[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
        new[0] = u[0]
        new[-1] = u[-1]
        u, new = new, u
    return np.sum(u**2)


def three_buffers(x):
    a = x * 1.0
    b = np.zeros_like(x)
    c = np.zeros_like(x)
    for _ in range(3):
        b[:] = np.sin(a)
        c[1:] = b[:-1] * a[1:]
        c[0] = b[0]
        a, b, c = c, a, b
    return np.sum(a * x)


def test_swapped_buffers_are_differentiated():
    rng = np.random.default_rng(0)
    # not to second order: the gradient's own code reads views the swap shares (refused)
    check_gradient(heat, (rng.normal(size=6), 0.2), wrt=0, hessian=False)
    check_gradient(heat, (rng.normal(size=6), 0.2), wrt=1, hessian=False)
    check_gradient(three_buffers, (rng.normal(size=5),), hessian=False)


def view_read_after_swap(u0, k):
    u = u0.copy()
    new = np.zeros_like(u)
    for _ in range(3):
        old = u[1:]
        u, new = new, u
        u[1:] = old * k
        u[0] = old[0]
    return np.sum(u**2) + np.sum(old)


def buffer_shared_from_the_start(u0, k):
    u = u0.copy()
    new = u
    for _ in range(3):
        new[1:] = u[1:] * k + u[:-1]
        u, new = new, u
    return np.sum(u**2)


@pytest.mark.parametrize(
    "function, text",
    [(view_read_after_swap, "u[1:] = old * k"), (buffer_shared_from_the_start, "new[1:] =")],
)
def test_swapped_buffers_that_share_memory_are_refused(function, text):
    """Refused by source transformation; mode "auto" takes the tape, which follows the
    writes through the shared memory (tape/view_writes.py)."""
    with pytest.raises(sg.UnsupportedError, match="share memory") as caught:
        sg.grad(function, mode="s2s")(np.arange(1.0, 5.0), 0.3)
    assert line_of(function, text) in str(caught.value)
    assert "copy" in str(caught.value)
    u0 = np.arange(1.0, 5.0)
    expected = numeric_grad(function, [u0, 0.3], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        assert_close(sg.grad(function, mode="auto")(u0, 0.3), expected)


# -- methods and layer objects ---------------------------------------------------------------


class Dense:
    def __init__(self, rng):
        self.w = rng.normal(size=(3, 2))
        self.b = rng.normal(size=2)

    def __call__(self, x):
        return np.tanh(x @ self.w + self.b)

    def energy(self, x):
        return np.sum(self.__call__(x) ** 2) * self.scale()

    def scale(self):
        return 0.5


DENSE = Dense(np.random.default_rng(5))


def through_layer(x):
    return np.sum(DENSE(x) * np.sin(x[:, :2])) + DENSE.energy(x)


def test_methods_read_their_attributes_live():
    x = np.random.default_rng(6).normal(size=(4, 3))
    # not to second order in s2s: a method call's pullback is a closure forward mode refuses
    check_gradient(through_layer, (x,), hessian=False)
    old = DENSE.w
    try:
        DENSE.w = DENSE.w * 2.0  # read live: the next call sees the new weights
        check_gradient(through_layer, (x,), hessian=False)
    finally:
        DENSE.w = old


class RunningNorm:
    def __init__(self, n):
        self.moving_mean = np.zeros(n)
        self.calls = 0

    def __call__(self, X):
        mean = X.mean(axis=0)
        var = ((X - mean) ** 2).mean(axis=0)
        self.moving_mean = 0.9 * self.moving_mean + 0.1 * mean
        self.calls = self.calls + 1
        return (X - mean) / np.sqrt(var + 1e-5)


NORM = RunningNorm(3)


def through_norm(X):
    return np.sum(np.tanh(NORM(X)) ** 2)


class Box:
    pass


BOX = Box()


def pair(x):
    return np.sin(x), 2.0 * x


def into_attribute(x):
    y, BOX.r = pair(x)
    return np.sum(y)


def into_item(x):
    out = np.zeros(3)
    y, out[0] = pair(x[0])
    return y + np.sum(out * x)


def test_unpacking_into_an_item():
    x = np.random.default_rng(8).normal(size=3)
    check_gradient(into_item, (x,))


def stored_and_read_back(x):
    BOX.h = 2.0 * x
    return np.sum(BOX.h * x)


class Cell:
    def __init__(self):
        self.h = np.zeros(3)

    def __call__(self, x):
        h = np.tanh(x + 0.5 * self.h)
        self.h = h
        return h


CELL = Cell()


def cell_twice(x):
    a = CELL(x)
    b = CELL(2.0 * x)  # reads the state the first call stored
    return np.sum(a * b)


def stores_then_caller_reads(x):
    y = CELL(x)
    return np.sum(y) + np.sum(CELL.h)


def stored_by_a_helper(x):
    return 2.0 * x + np.sum(NORM(np.outer(x, x)))


def read_back_by_another_helper(x):
    s = stored_by_a_helper(x)
    return np.sum(NORM.moving_mean * x) + np.sum(s)


STATE_PROGRAMS = [
    cell_twice,
    stores_then_caller_reads,
    read_back_by_another_helper,
]


def layers_in_a_list(x):
    for layer in LAYERS:
        layer.h = np.zeros(3)
    total = 0.0
    for layer in [LAYERS[0], LAYERS[0]]:  # the second call reads what the first stored
        total = total + np.sum(layer(x) * x)
    return total


LAYERS = [Cell()]


def test_state_stored_by_a_call_resolved_at_run_time_is_refused_not_taken_for_a_constant():
    """Refused in s2s as the generated code runs; mode "auto" then tapes the call."""
    x = np.array([0.1, -0.4, 0.7])
    with pytest.raises(sg.UnsupportedError) as caught:
        sg.grad(layers_in_a_list, mode="s2s")(x)
    assert __file__ in str(caught.value) and "mode='tape'" in str(caught.value)
    expected = numeric_grad(layers_in_a_list, (x,), 0)
    for mode in ("tape", "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            found = sg.grad(layers_in_a_list, mode=mode)(x)
        assert_close(found, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("function", STATE_PROGRAMS, ids=lambda f: f.__name__)
def test_differentiated_state_stored_on_objects_is_refused_by_source_and_right_on_the_tape(
    function,
):
    # An attribute cannot carry a derivative, and a read of it anywhere later in the call
    # (in another helper, a constant to the transformer) would be taken for a constant: the
    # transformer refuses the store, and auto differentiates the call on the tape.
    x = np.random.default_rng(9).normal(size=3)
    with pytest.raises(sg.UnsupportedError) as caught:
        sg.grad(function, mode="s2s")(x)
    assert __file__ in str(caught.value) and "mode='tape'" in str(caught.value)
    objects = (NORM, CELL, BOX)
    state = [dict(vars(o)) for o in objects]

    def from_the_same_state(y):
        for o, saved in zip(objects, state):
            vars(o).clear()
            vars(o).update(saved)
        return function(y)

    expected = numeric_grad(from_the_same_state, (x,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        for mode in ("tape", "auto"):
            from_the_same_state(x)  # sets the state; the gradient call then changes it
            for o, saved in zip(objects, state):
                vars(o).clear()
                vars(o).update(saved)
            got = sg.grad(function, mode=mode)(x)
            assert_close(got, expected, rtol=1e-5, atol=1e-7)
    assert type(NORM.moving_mean) is np.ndarray and type(CELL.h) is np.ndarray


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize(
    "function", [through_norm, into_attribute, stored_and_read_back], ids=lambda f: f.__name__
)
def test_differentiated_state_stored_and_not_read_back_is_transformed(function, mode):
    # what is stored is the plain value the user's code stores, and nothing in the
    # computation reads it back: the gradient is that of the output alone
    x = np.random.default_rng(9).normal(size=(4, 3)) if function is through_norm else None
    x = np.random.default_rng(9).normal(size=3) if x is None else x
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto must not fall back to the tape
        gradient = sg.grad(function, mode=mode)
        for _ in ("first", "second"):
            assert_close(gradient(x), numeric_grad(function, (x,), 0), rtol=1e-5, atol=1e-7)
    stored = {through_norm: "moving_mean", into_attribute: "r", stored_and_read_back: "h"}
    owner = NORM if function is through_norm else BOX
    assert type(getattr(owner, stored[function])) is np.ndarray


# -- helpers that update their arguments in place ------------------------------------------


def halve(a):
    a[:] *= 0.5


def halves_a_copy(x):
    y = x.copy()
    halve(y)
    return np.sum(y * x)


def write_tail(out, v, factor=2.0):
    """Writes into out and returns it."""
    out[1:] = v[1:] * factor
    return out


def fills_a_buffer(x):
    y = np.zeros(3)
    z = write_tail(y, np.sin(x), factor=3.0)  # z is y itself
    return np.sum(y * x) + np.sum(z**2)


def fills_in_a_loop(x):
    y = np.ones(3)
    for k in range(2):
        write_tail(y, y * x + k)
    return np.sum(np.tanh(y) * x)


def test_a_helper_updating_the_callers_array_is_differentiated():
    rng = np.random.default_rng(12)
    x = np.array([1.0, 2.0, 3.0])
    assert_close(sg.grad(halves_a_copy, mode="s2s")(x), x)  # the example: [1, 2, 3]
    for function in (halves_a_copy, fills_a_buffer, fills_in_a_loop):
        check_gradient(function, (rng.normal(size=3),), hessian=False)
        tangent = rng.normal(size=3)
        point = rng.normal(size=3)
        _, actual = sg.jvp(function, (point,), (tangent,), mode="s2s")
        assert_close(actual, np.sum(numeric_grad(function, (point,), 0) * tangent))


def test_an_inlined_helper_redefined_is_followed():
    x = np.array([1.0, 2.0, 3.0])
    gradient = sg.grad(halves_a_copy, mode="s2s")
    assert_close(gradient(x), x)  # d/dx of 0.5 * sum(x**2)
    global halve
    original = halve
    try:

        def halve(a):
            a[:] *= 0.75

        assert_close(gradient(x), 1.5 * x)
    finally:
        halve = original


def clip(grads, theta):
    norm = np.sqrt(sum(np.sum(g**2) for g in grads))
    if norm > theta:
        for g in grads:
            g[:] *= theta / norm
    return grads


def clipped(w):
    grads = [np.sin(w), np.cos(w)]
    grads = clip(grads, 0.5)
    return np.sum(grads[0] * w) + np.sum(grads[1])


def scaled_in_a_loop(w):
    grads = [np.sin(w)]
    grads.append(np.cos(w) * w)
    for g in grads:
        g[1:] *= 0.5
    return np.sum(grads[0] * w) + np.sum(grads[1] ** 2)


def test_arrays_of_a_list_updated_through_the_loop_variable_are_differentiated():
    rng = np.random.default_rng(13)
    for function in (clipped, scaled_in_a_loop):
        for scale in (0.1, 3.0):  # clipped or not
            check_gradient(function, (scale * rng.normal(size=3),), hessian=False)


def entry_kept(w):
    grads = [np.sin(w), np.cos(w)]
    first = grads[0]
    grads = clip(grads, 0.5)
    return np.sum(first * w) + np.sum(grads[1])


def same_array_twice(w):
    a = np.sin(w)
    grads = [a, a]
    grads = clip(grads, 0.5)
    return np.sum(grads[0] * w) + np.sum(grads[1])


def list_aliased(w):
    grads = [np.sin(w), np.cos(w)]
    other = grads
    grads = clip(grads, 0.5)
    return np.sum(other[0] * w) + np.sum(grads[1])


def stored_twice(w):
    grads = [np.sin(w), np.cos(w)]
    grads[1] = grads[0]
    grads = clip(grads, 0.5)
    return np.sum(grads[0] * w) + np.sum(grads[1] ** 2)


@pytest.mark.parametrize("function", [entry_kept, same_array_twice, list_aliased, stored_twice])
def test_arrays_of_a_list_seen_elsewhere_are_refused(function):
    # the array updated in place is seen through another name, or twice in the list:
    # refused by source transformation; mode "auto" takes the tape, whose item writes
    # change the one tape value every name holds
    w = np.array([3.0, -2.0, 0.9])
    with pytest.raises(sg.UnsupportedError, match="in place") as caught:
        sg.grad(function, mode="s2s")(w)
    assert line_of(function, "grads = clip(grads") in str(caught.value)
    assert "copy" in str(caught.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        assert_close(sg.grad(function, mode="auto")(w), numeric_grad(function, [w], 0))
