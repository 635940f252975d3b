"""The tape's facts about a buffer see a comprehension's own scope.

``u = np.zeros(5); u[1:4] = v`` writes a value being differentiated into a plain array the
function made; the tape follows such writes when the buffer's name is bound once. A
comprehension over ``for u, v in zip(x, y)`` binds its own ``u``, not the function's, but
the tape counted it as a second binding of ``u`` and refused the write in modes "tape"
(and after a refusal by source transformation, "auto")."""

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp

R = np.random.default_rng(35)


def pairs_then_buffer(x):
    y = np.array([0.2, 0.7, 0.1])
    v = np.array([min(u, w) + max(u, w) ** 2 for u, w in zip(x**2, y)])
    u = np.zeros(5)
    u[1:4] = v
    return np.sum(np.sin(u) * np.arange(1.0, 6.0))


def buffer_then_same_name_in_a_comprehension(x):
    u = np.zeros(4)
    u[:3] = x * 2.0
    scaled = [u * k for u in (x, x**2) for k in (1.0, 0.5)]
    return np.sum(np.cos(u)) + sum(np.sum(s) for s in scaled)


def buffer_bound_twice_in_the_function(x):
    u = np.zeros(3)
    u[:] = x
    u = np.zeros(3)  # bound twice: still right (or refused), never wrong
    u[1:] = x[1:] ** 2
    return np.sum(np.sin(u))


@pytest.mark.parametrize(
    "f",
    [
        pairs_then_buffer,
        buffer_then_same_name_in_a_comprehension,
        buffer_bound_twice_in_the_function,
    ],
)
@pytest.mark.parametrize("mode", ["tape", "auto", "s2s"])
def test_writes_into_a_buffer_beside_a_comprehension(f, mode):
    x = R.uniform(0.3, 1.2, size=3)
    v = R.normal(size=3)
    assert_grad_jvp_and_hvp(f, x, v, mode)
