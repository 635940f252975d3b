"""What round 33's real programs found wrong, each shown by a small program of its kind
checked against central differences in the modes it failed in."""

import sys

import numpy as np
import pytest
from test_nested_helper_updates import (
    called_inside_an_expression,
    given_a_view,
    passed_as_a_value,
)
from test_real_programs_round32 import BY_THE_TAPE, _check_program

import s2sgrad as sg

R = np.random.default_rng(3335)


def assembled_by_index_tuple(k):
    """Element matrices scattered into a global one by np.add.at with a row and a column
    index array broadcast against each other (finite elements); forward mode over the
    gradient asked the added_at rule for the index tuple's tangent and failed on its
    ragged shape (ValueError in s2s and auto Hessian-vector products)."""
    n = len(k) + 1
    K = np.eye(n) * 0.1
    local = np.array([[1.0, -1.0], [-1.0, 1.0]])
    for e in range(len(k)):
        idx = np.array([e, e + 1])
        np.add.at(K, (idx[:, None], idx[None, :]), np.exp(k[e]) * local)
    f = np.linspace(0.5, 1.0, n)
    return f @ np.linalg.solve(K, f)


ELEMENT_LOGS = R.normal(size=3) * 0.3


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_add_at_with_a_broadcast_index_tuple_second_order(mode):
    _check_program(assembled_by_index_tuple, ELEMENT_LOGS, mode)


def implicit_cable(params, steps=3):
    """Implicit steps whose right-hand side is a copy of the state with a current added
    to its first entry in place (``rhs = v.copy(); rhs[0] += i``): the state starts as
    plain zeros, and the tape refused the update as one of a list's shallow copy, whose
    entries the original shares (an array's copy shares none)."""
    g_m, current = params[0], params[1]
    n = 4
    A = np.diag(np.full(n, 2.0 + g_m)) - np.diag(np.ones(n - 1), 1) - np.diag(np.ones(n - 1), -1)
    v = np.zeros(n)
    for _ in range(steps):
        rhs = v.copy()
        rhs[0] += current
        v = np.linalg.solve(np.eye(n) + 0.5 * A, rhs)
    return v[-1] * 10 + np.sum(v**2)


CABLE_PARAMETERS = np.array([0.3, 1.0]) + R.normal(size=2) * 0.1


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_an_entry_update_of_an_arrays_copy_on_the_tape(mode):
    # forward mode over the generated gradient, which writes rhs back from its save stack,
    # is refused in s2s (auto takes the tape)
    _check_program(implicit_cable, CABLE_PARAMETERS, mode, frozenset({("s2s", "hvp")}))


def filter_with_unpacked_writes(log_q):
    """A Kalman filter keeping its predictions and estimates in buffers made by np.zeros,
    two entries written by one unpacking (``mp[t], Pp[t] = mean, var + q``): the tape
    followed ``mp[t] = mean`` alone and refused the unpacking as a write that would drop
    the derivative."""
    q = np.exp(log_q)
    obs = np.array([0.2, 0.5, 0.4, 0.9, 1.3])
    n = len(obs)
    mp, Pp = np.zeros(n), np.zeros(n)
    m, P = np.zeros(n), np.zeros(n)
    mean, var = 0.0, 1.0
    for t in range(n):
        mp[t], Pp[t] = mean, var + q[0]
        gain = Pp[t] / (Pp[t] + q[1])
        mean, var = mp[t] + gain * (obs[t] - mp[t]), (1 - gain) * Pp[t]
        m[t], P[t], last = mean, var, t
    return np.sum((m - obs) ** 2) + np.sum(P * mp) + last


NOISE_LOGS = np.array([-1.0, -0.5]) + R.normal(size=2) * 0.1


@pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="the tape tells two writes of a line apart by instruction positions (Python 3.11+)",
)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_item_writes_by_one_unpacking_on_the_tape(mode):
    _check_program(filter_with_unpacked_writes, NOISE_LOGS, mode, frozenset({("s2s", "hvp")}))


def memoised_recurrence(params, n=7):
    """A second-order recurrence by a recursive nested function keeping its terms in a
    dict passed along: the transformer cannot inline a helper that changes its argument
    inside an expression, and refused it for the tape too, which runs it as written."""
    a, b = params[0], params[1]

    def term(k, memo):
        if k in memo:
            return memo[k]
        value = a * term(k - 1, memo) + b * term(k - 2, memo)
        memo[k] = value
        return value

    return term(n, {0: 1.0, 1: 0.5})


RECURRENCE = np.array([0.6, 0.3]) + R.normal(size=2) * 0.05
HELPER_INPUT = R.uniform(-1.0, 1.0, size=3)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_nested_helper_changing_a_dict_inside_an_expression(mode):
    _check_program(memoised_recurrence, RECURRENCE, mode, BY_THE_TAPE)


@pytest.mark.parametrize(
    "f",
    [called_inside_an_expression, given_a_view, passed_as_a_value],
    ids=lambda f: f.__name__,
)
def test_nested_helpers_the_transformer_cannot_inline_are_taped_by_auto(f):
    """Refused by the transformer (test_nested_helper_updates), differentiated by auto's
    fallback to the tape, which follows the helper's change as NumPy makes it."""
    _check_program(f, HELPER_INPUT, "auto")


GT_X = np.linspace(-1.0, 1.0, 5)
GT_Y = np.sin(2.0 * GT_X)


def step_by_a_gradient_tape(w, lr=0.3):
    """One step by a GradientTape block inside the loss, written as TensorFlow's tutorials
    write it (``sg.constant`` of the weights, watched): the constant of a value an outer
    transform records dropped its derivative, so the outer gradient missed the step's."""
    weights = sg.constant(w)
    with sg.GradientTape() as tape:
        tape.watch(weights)
        inner = np.mean((np.tanh(GT_X * weights[0] + weights[1]) - GT_Y) ** 2)
    g = tape.gradient(inner, weights)
    w_new = w - lr * g
    return np.mean((np.tanh(GT_X * w_new[0] + w_new[1]) - GT_Y) ** 2)


TAPE_WEIGHTS = np.array([0.3, -0.2]) + R.normal(size=2) * 0.1


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_constant_of_a_value_being_differentiated_keeps_its_derivative(mode):
    _check_program(step_by_a_gradient_tape, TAPE_WEIGHTS, mode, BY_THE_TAPE)


def test_a_constant_of_a_tape_value_in_another_dtype_keeps_its_derivative():
    x = sg.constant(np.array([1.0, 2.0]))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(sg.constant(x, dtype=np.float32) ** 2)
    np.testing.assert_allclose(tape.gradient(y, x), 2 * np.array([1.0, 2.0]))


def weights_held_in_a_variable(w):
    """A Variable made from the weights inside the loss: it holds a plain copy, and the
    tape returned a zero gradient without a word."""
    v = sg.Variable(w)
    return np.sum(v * v * GT_X[:2])


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_a_variable_of_a_value_being_differentiated_is_refused(mode):
    with pytest.raises(sg.S2SGradError, match=f"{__file__}:[0-9]+: sg.Variable"):
        sg.grad(weights_held_in_a_variable, mode=mode)(TAPE_WEIGHTS)
