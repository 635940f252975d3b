"""Round 35's fixes, each against central differences.

Forward mode over the gradient of a loop filling a buffer (``out[t] = 0.7 * out[t - 1] +
...``) was refused in s2s: the gradient pushed ``t5 = out[t - 1]``, possibly a view of the
buffer, on its save stack whole although its backward reads only the shape, and the sharing
check of the code differentiated again saw the view read after ``out[t]`` changed. The view
is now pushed as a shape stand-in, and reads for the shape alone (``unbroadcast(g, t5)``,
``shape_only(t5)``) share no values.
"""

import warnings

import numpy as np
import pytest
from oracle import numeric_grad, numeric_jvp

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning

R = np.random.default_rng(3535)


def moving_average(signal):
    """An exponential moving average written into a preallocated buffer."""
    out = np.empty_like(signal)
    out[0] = signal[0]
    for t in range(1, len(signal)):
        out[t] = 0.7 * out[t - 1] + 0.3 * signal[t] ** 2
    return np.sum(np.sin(out))


def rows_recurrence(theta):
    """A 2-D state history: each row, a view of the buffer, made from the previous one."""
    states = np.zeros((5, 3))
    states[0] = theta
    for t in range(1, 5):
        states[t] = np.tanh(states[t - 1]) * 0.9 + 0.1 * theta
    return np.sum(states**2 * np.arange(1, 4))


def rows_moving_average(theta):
    """A 2-D buffer whose row ``states[t - 1]`` (a view) enters only linearly."""
    states = np.zeros((5, 3))
    states[0] = theta**2
    for t in range(1, 5):
        states[t] = 0.6 * states[t - 1] + 0.4 * np.sin(theta * t)
    return np.sum(np.cos(states))


def euler_trajectory(k):
    """Forward Euler of x' = -k x^3 stored in a trajectory buffer."""
    traj = np.zeros(6)
    traj[0] = 1.0
    for i in range(5):
        traj[i + 1] = traj[i] - 0.1 * k[0] * traj[i] ** 3 + 0.05 * k[1]
    return np.sum((traj - 0.5) ** 2)


def two_buffers(w):
    """Position and velocity buffers of a damped oscillator, leapfrog-like."""
    x = np.zeros(5)
    v = np.zeros(5)
    x[0], v[0] = w[0], w[1]
    for i in range(4):
        v[i + 1] = v[i] - 0.2 * (w[2] * x[i] + 0.3 * v[i])
        x[i + 1] = x[i] + 0.2 * v[i + 1]
    return np.sum(x**2) + 0.5 * np.sum(v**2)


PROGRAMS = [
    (moving_average, R.normal(size=5)),
    (rows_recurrence, R.normal(size=3)),
    (rows_moving_average, R.normal(size=3)),
    (euler_trajectory, np.array([0.8, 0.4])),
    (two_buffers, np.array([0.6, -0.2, 1.3])),
]


@pytest.mark.parametrize("f, x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_hvp_of_a_buffer_filled_in_a_loop(f, x):
    v = R.normal(size=x.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)  # auto must not need the tape
        for mode in ("s2s", "auto"):
            (product,) = sg.hvp(f, (x,), (v,), mode=mode)
            # differences of the s2s gradient, itself checked against differences of f below
            # (the tape takes apart one line's item writes by positions only from 3.11 on)
            expected = numeric_jvp(lambda y: sg.grad(f, mode="s2s")(y), [x], 0, v, step=1e-5)
            np.testing.assert_allclose(product, expected, rtol=1e-5, atol=1e-7)
    gradient = sg.grad(f, mode="s2s")(x)
    np.testing.assert_allclose(gradient, numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8)


class ArrayView:
    """A user's wrapper handing NumPy an array's memory by ``__array_interface__``."""

    def __init__(self, data):
        self.data = data

    @property
    def __array_interface__(self):
        return self.data.__array_interface__


def wrapped_in_an_interface(w):
    """An object made inside the function, converted by np.asarray: on the tape NumPy made
    an object array of it (a TypeError at ``** 2``); now refused at the property's line."""
    return np.sum(np.asarray(ArrayView(w * 2.0)) ** 2)


@pytest.mark.filterwarnings("ignore")  # auto says it takes the tape
@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_array_interface_of_a_value_being_differentiated_is_refused(mode):
    line = ArrayView.__array_interface__.fget.__code__.co_firstlineno + 2
    with pytest.raises(sg.S2SGradError, match=rf"{__file__}:{line}: .*__array_interface__"):
        sg.grad(wrapped_in_an_interface, mode=mode)(np.array([0.3, -0.2, 0.5]))


def test_array_interface_of_a_constant_still_works():
    def f(w):
        return np.sum(np.asarray(ArrayView(np.arange(3.0))) * w**2)

    w = np.array([0.3, -0.2, 0.5])
    for mode in ("s2s", "tape", "auto"):
        np.testing.assert_allclose(sg.grad(f, mode=mode)(w), 2 * np.arange(3.0) * w)


def outer_by_ix(x):
    """np.ix_ as an outer product's operands: it had no derivative rule at all."""
    a, b = np.ix_(x, x[:2] ** 2)
    return np.sum(np.sin(a * b))


def fem_assembly_by_ix(source):
    """P1 elements assembled through np.ix_ index grids: forward mode over the gradient
    (a Hessian) met np.ix_ of the popped index list and refused it."""
    K = np.zeros((5, 5))
    F = np.zeros(5)
    for e in range(4):
        nodes = [e, e + 1]
        K[np.ix_(nodes, nodes)] += np.array([[4.0, -4.0], [-4.0, 4.0]]) * (1.0 + 0.1 * e)
        F[nodes] += source[e] / 8
    u = np.linalg.solve(K[1:-1, 1:-1], F[1:-1])
    return 0.5 * u @ K[1:-1, 1:-1] @ u - F[1:-1] @ u + np.sum(source**4) / 4


def hamiltonian_updated_after_its_items(hoppings):
    """A matrix filled item by item, then updated by ``+=``: the tape took over the plain
    array only when no ``+=`` followed (``H += np.diag(...)`` refused the item writes)."""
    n = len(hoppings) + 1
    H = np.zeros((n, n))
    for i, t in enumerate(hoppings):
        H[i, i + 1] = -t
        H[i + 1, i] = -t
    H += np.diag(0.1 * np.arange(n))
    H[0, 0] += hoppings[0] ** 2
    return np.sum(np.linalg.eigvalsh(H)[:2])


FIXED = [
    (outer_by_ix, R.normal(size=3)),
    (fem_assembly_by_ix, np.array([1.0, 0.5, -0.3, 0.8])),
    (hamiltonian_updated_after_its_items, np.array([1.0, 0.8, 1.2])),
]


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("f, x", FIXED, ids=[p[0].__name__ for p in FIXED])
def test_fixed_programs_in_every_mode(f, x, mode):
    v = np.random.default_rng(35).normal(size=x.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        np.testing.assert_allclose(
            sg.grad(f, mode=mode)(x), numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8
        )
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        np.testing.assert_allclose(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-6, atol=1e-8)
        (product,) = sg.hvp(f, (x,), (v,), mode=mode)
    # differences of the gradient, itself checked against differences of f above
    expected = numeric_jvp(sg.grad(f, mode=mode), [x], 0, v, step=1e-5)
    np.testing.assert_allclose(product, expected, rtol=1e-5, atol=1e-7)


SEQUENCE = np.random.default_rng(7).normal(size=(4, 2))


def states_in_a_list_of_nones(W):
    """``fwd = [None] * n`` filled by index: s2s took the count ``n`` for a name sharing
    the list, and refused ``fwd[t] = h`` since ``n`` is read afterwards."""
    n = len(SEQUENCE)
    fwd = [None] * n
    h = np.zeros(2)
    for t in range(n):
        h = np.tanh(SEQUENCE[t] @ W[:2] + h @ W[2:])
        fwd[t] = h
    return np.sum(np.array(fwd) ** 2) / n


def test_a_list_repeated_by_a_count_shares_nothing_with_the_count():
    W = np.random.default_rng(8).normal(size=(4, 2)) * 0.5
    v = np.random.default_rng(9).normal(size=W.shape)
    f = states_in_a_list_of_nones
    np.testing.assert_allclose(
        sg.grad(f, mode="s2s")(W), numeric_grad(f, [W], 0), rtol=1e-6, atol=1e-8
    )
    _, tangent = sg.jvp(f, (W,), (v,), mode="s2s")
    np.testing.assert_allclose(tangent, numeric_jvp(f, [W], 0, v), rtol=1e-6, atol=1e-8)
    (product,) = sg.hvp(f, (W,), (v,), mode="s2s")
    expected = numeric_jvp(sg.grad(f, mode="s2s"), [W], 0, v, step=1e-5)
    np.testing.assert_allclose(product, expected, rtol=1e-5, atol=1e-7)


def windows_by_a_local_generator(x):
    """A generator function defined inside: auto refused it, naming the generated file,
    since the code s2s generated handed the generator's consumer to the tape alone."""

    def windows(v, size):
        for start in range(len(v) - size + 1):
            yield v[start : start + size]

    return sum(np.prod(w) for w in windows(x, 3)) + np.sum(x**2)


@pytest.mark.filterwarnings("ignore")  # auto says it takes the tape
def test_auto_tapes_a_function_defining_a_generator():
    f = windows_by_a_local_generator
    x = np.random.default_rng(10).normal(size=5)
    v = np.random.default_rng(11).normal(size=5)
    np.testing.assert_allclose(
        sg.grad(f, mode="auto")(x), numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8
    )
    _, tangent = sg.jvp(f, (x,), (v,), mode="auto")
    np.testing.assert_allclose(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-6, atol=1e-8)
    (product,) = sg.hvp(f, (x,), (v,), mode="auto")
    expected = numeric_jvp(sg.grad(f, mode="tape"), [x], 0, v, step=1e-5)
    np.testing.assert_allclose(product, expected, rtol=1e-5, atol=1e-7)
    with pytest.raises(sg.S2SGradError, match=rf"{__file__}:[0-9]+: .*generator functions"):
        sg.grad(f, mode="s2s")(x)


def pair_energy_by_nested_comprehension(x):
    """A comprehension over two generators with a condition: s2s refused it ("cannot
    differentiate through ListComp"); it is now the nested loops a user would write."""
    n = len(x)
    terms = [np.exp(-((x[i] - x[j]) ** 2)) for i in range(n) for j in range(i, n) if i != j]
    i = 1  # the function's own i, which the comprehension's must not change
    return sum(terms) + x[i] * sum(v * w for v in x for w in x[:2])


def test_comprehension_over_two_generators_in_s2s():
    f = pair_energy_by_nested_comprehension
    x = np.random.default_rng(12).normal(size=4)
    v = np.random.default_rng(13).normal(size=4)
    np.testing.assert_allclose(
        sg.grad(f, mode="s2s")(x), numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8
    )
    _, tangent = sg.jvp(f, (x,), (v,), mode="s2s")
    np.testing.assert_allclose(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-6, atol=1e-8)
    (product,) = sg.hvp(f, (x,), (v,), mode="s2s")
    expected = numeric_jvp(sg.grad(f, mode="tape"), [x], 0, v, step=1e-5)
    np.testing.assert_allclose(product, expected, rtol=1e-5, atol=1e-7)
