"""What autograd's own test suite asks of NumPy functions (its ``test_numpy.py``,
``test_systematic.py``, ``test_graphs.py``), asked of s2sgrad: each function at a random
point, in every engine (``s2s``, ``auto``, ``tape``), its gradient on a first and a later
call and its forward-mode derivative against central differences in float64, and the
derivatives of the gradient too (``sg.check_grads(order=2)``).

The checks are written anew against s2sgrad's API; the functions are the kinds that suite
covers: lists given to NumPy (``np.append`` of a list and a number), ``np.real_if_close``,
slicing fan-out, arrays built from differentiated scalars, ``np.r_``, reductions with
``ddof`` and ``keepdims``, ``np.where`` with a fixed condition, and gradients of gradients.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
rng = np.random.default_rng(980017)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def appended(a, b):
    return np.append(a, b) ** 2


def inserted(a, b):
    return np.insert(a, 1, b) * np.arange(1.0, 5.0)


def differenced(a, b):
    return np.diff(a, prepend=b) ** 2


def real_if_close_of_real(x):
    return np.sin(np.real_if_close(x)) * x


def real_if_close_of_complex(x):
    return np.real_if_close(np.exp(x) + 1e-20j) ** 2  # imaginary parts within tol: real


def real_if_close_kept_complex(x):
    z = np.real_if_close(np.exp(1j * x) * x)  # imaginary parts far from zero: complex
    return np.abs(z) ** 2 + np.real(z)


def slice_fan_out(x):
    y = x[::-1, 2:4, :]
    z = x[::-1, 3:5, :]
    return y + z


def slices_of_slices(x):
    y = x[2:6]
    return y[1:3]


def array_of_scalars(x):
    a = np.array([[x, x * 1.0, x + 2.5], [x**2, x, x / 2.0]])
    return a + a


def output_read_again(a):
    b = a + 1.0
    c = b[0] + 1.5
    d = a + b
    return d + c


CONDITION = normal(4, 5) > 0
KEPT = normal(3, 2)

# (name, function, arguments)
CASES = [
    ("append_list_and_number", appended, [[1.0, 2.0, 3.0], 4.0]),
    ("append_number_and_list", lambda a, b: appended(b, a), [0.7, [1.0, 2.0, 3.0]]),
    ("append_array_and_number", appended, [normal(3), 4.0]),
    ("insert_into_list", inserted, [[1.0, -2.0, 3.0], 0.5]),
    ("diff_of_list_with_prepend", differenced, [[1.0, 2.0, 4.0], 0.5]),
    ("real_if_close_real", real_if_close_of_real, [normal(2, 3)]),
    ("real_if_close_complex_made_real", real_if_close_of_complex, [normal(3)]),
    ("real_if_close_kept_complex", real_if_close_kept_complex, [normal(3)]),
    ("index_mixed", lambda x: x[3, 2:, [1, 3]], [normal(5, 6, 4)]),
    ("slice_fan_out", slice_fan_out, [normal(5, 6, 4)]),
    ("slices_of_slices", slices_of_slices, [normal(7)]),
    ("index_repeated", lambda x: np.sum(x[[0, 1, 0]]) * x, [normal(3)]),
    ("dot_of_two_slices", lambda x: np.dot(x[:2], x[2:]), [normal(4)]),
    ("array_of_scalars_fan_out", array_of_scalars, [0.8]),
    ("array_of_arrays", lambda x: np.array([[2 * x, x + 1], [x, x]]), [normal(3, 2)]),
    ("output_read_again", output_read_again, [normal(5)]),
    ("r_with_constant", lambda x: np.r_[x, KEPT, x] * 2.0, [normal(3, 2)]),
    ("c_with_constant", lambda x: np.c_[x, KEPT, x] ** 2, [normal(3, 2)]),
    ("where_fixed_condition", lambda x, y: np.where(CONDITION, x, y) ** 2, [normal(4, 5)] * 2),
    ("var_ddof_keepdims", lambda x: np.var(x, axis=1, keepdims=True, ddof=2), [normal(3, 4)]),
    ("std_ddof_keepdims", lambda x: np.std(x, axis=None, keepdims=True, ddof=1), [normal(1, 3)]),
    ("trace_extra_dims", lambda x: np.trace(x, offset=1), [normal(5, 6, 4, 3)]),
    ("tensordot_by_position", lambda x: np.tensordot(x * np.ones((2, 2)), x, 2), [normal(2, 2)]),
    ("sum_builtin_of_arrays", lambda x, y: sum([x, y]) ** 2, [normal(2, 3), normal(2, 3)]),
    ("prod_keepdims", lambda x: np.prod(x, axis=0, keepdims=True), [positive(2, 3)]),
    ("singleton_keepdims", lambda x: np.sum(np.sin(x), axis=1, keepdims=True), [normal(1, 3)]),
    (
        "nan_to_num_shifted",
        lambda x: np.sin(np.nan_to_num(x + np.array([0.0, np.nan]))),
        [normal(2)],
    ),
]


def _weights(f, args):
    out = np.asarray(f(*args))
    return np.real(normal(*out.shape)) if out.shape else 1.0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, f, args", CASES, ids=[c[0] for c in CASES])
def test_gradient_and_jvp_match_central_differences(name, f, args, mode):
    weights = _weights(f, args)

    def scalar(*a):
        return np.sum(np.real(f(*a)) * weights)

    wrt = tuple(i for i, a in enumerate(args) if isinstance(a, (float, list, np.ndarray)))
    tangents = [
        sg.tree_map(
            lambda leaf: float(normal()) if np.ndim(leaf) == 0 else normal(*np.shape(leaf)), args[i]
        )
        for i in wrt
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)  # mode="auto" may use the tape
        gradients = call_twice(sg.grad(scalar, wrt=wrt, mode=mode), *args)
        for gradient, i in zip(gradients, wrt):
            assert_close(gradient, numeric_grad(scalar, args, i), rtol=1e-5, atol=1e-6)
        _, tangent = sg.jvp(scalar, tuple(args), tuple(tangents), mode=mode)
    expected = sum(numeric_jvp(scalar, args, i, t) for i, t in zip(wrt, tangents))
    np.testing.assert_allclose(tangent, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
@pytest.mark.parametrize(
    "name, f, args", [c for c in CASES if c[0].startswith(("append", "real_if"))]
)
def test_second_derivatives_match_central_differences(name, f, args, mode):
    numbers = [np.asarray(a, dtype=float) if isinstance(a, list) else a for a in args]
    sg.check_grads(lambda *a: np.real(f(*a)), *numbers, mode=mode, order=2)


def third_derivative_target(x):
    return np.sin(np.sin(x) + np.sin(x))


def test_grad_of_grad_of_grad_matches_the_closed_form():
    # f(x) = sin(2 sin x); with u = 2 sin x: f' = 2 cos x cos u, and so on by hand
    x = float(normal())
    third = sg.grad(sg.grad(sg.grad(third_derivative_target, mode="s2s"), mode="s2s"))

    def second(y):
        u = 2 * np.sin(y)
        return -2 * np.sin(y) * np.cos(u) - 4 * np.cos(y) ** 2 * np.sin(u)

    assert third(x) == pytest.approx(numeric_grad(second, [x], 0), rel=1e-6, abs=1e-7)
