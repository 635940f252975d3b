"""Arrays and lists a differentiated function writes in place are left to its caller as the
function left them.

The backward sweep of generated code undoes the forward sweep's in-place writes as it goes
back (``out[i] = stack.pop()``, ``hs.pop()``). An array the caller could still reach (an
auxiliary result, ``self.cache = out``, a row kept in a list) was left holding the values it
had before the function wrote them: zeros, where the function had written x ** 2, in every
mode but the tape. Each case is checked against the user's own function run without
s2sgrad, in every mode, and the gradient against central differences.
"""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")


class Holder:
    pass


def squares_kept_as_aux(x):
    out = np.zeros(3)
    for i in range(3):
        out[i] = x[i] ** 2
    return np.sum(out * x), {"out": out}


def squares_kept_on_an_object(x, holder):
    out = np.zeros(3)
    for i in range(3):
        out[i] = np.sin(x[i]) * x[i]
    holder.cache = (x, out)
    return np.sum(out**2)


def rows_kept_in_a_list(x, holder):
    table = np.zeros((3, 2))
    rows = []
    for t in range(3):
        row = np.zeros(2)
        row[0] = x[t] ** 2
        row[1] = np.cos(x[t]) * row[0]
        table[t] = row
        rows.append(row)
    holder.rows = rows
    return np.sum(table**2) + np.sum(rows[0] * rows[2])


def recurrence_read_back(x):
    # the backward sweep reads `state` as each step left it: its restores are needed
    state = np.ones(3)
    total = 0.0
    for i in range(3):
        total = total + np.sum(state * x)
        state[i] = np.tanh(x[i] + state[i - 1])
    return total, state


def _run(f, x, with_holder):
    holder = Holder()
    args = (x, holder) if with_holder else (x,)
    return holder, args


CASES = [
    (squares_kept_as_aux, False, True, lambda holder, aux: aux["out"]),
    (squares_kept_on_an_object, True, False, lambda holder, aux: holder.cache[1]),
    (rows_kept_in_a_list, True, False, lambda holder, aux: np.stack(holder.rows)),
    (recurrence_read_back, False, True, lambda holder, aux: aux),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("f", "with_holder", "has_aux", "left"), CASES, ids=lambda c: getattr(c, "__name__", None)
)
def test_the_caller_finds_what_the_function_wrote(mode, f, with_holder, has_aux, left):
    x = np.random.default_rng(5).uniform(-1.0, 1.0, 3)
    expected_holder, expected_args = _run(f, x, with_holder)
    expected_result = f(*expected_args)
    expected = left(expected_holder, expected_result[1] if has_aux else None)
    loss = (lambda *a: f(*a)[0]) if has_aux else f
    for _ in range(2):  # the generic code, then the specialised one
        holder, args = _run(f, x, with_holder)
        result = sg.grad(f, has_aux=has_aux, mode=mode)(*args)
        gradient, aux = result if has_aux else (result, None)
        assert_close(left(holder, aux), expected, rtol=1e-12, atol=0)
        assert_close(gradient, numeric_grad(loss, args, 0))


def test_a_derivative_differentiated_again_ignores_the_notes():
    x = np.random.default_rng(6).uniform(-1.0, 1.0, 3)
    v = np.array([0.5, -1.0, 2.0])

    def loss(x):
        return squares_kept_as_aux(x)[0]

    hvp = sg.grad(lambda x: sg.grad(loss, mode="s2s")(x) @ v, mode="s2s")
    expected = numeric_grad(lambda x: sg.grad(loss, mode="tape")(x) @ v, (x,), 0)
    assert_close(hvp(x), expected, rtol=1e-5, atol=1e-6)
