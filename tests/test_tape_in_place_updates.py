"""In-place operators on plain arrays the function made, on the tape.

Simulations preallocate buffers and update them with ``+=``: ``f[1:] += k * d``,
``v += dt * f``, ``x = x0.copy(); x += dt * v``. On the tape an update of an item
(``a[i] += v``) stores what the operator returns with ``a[i] = ...``, which the tape takes
over as a write into the array; an update of a name the function bound once to a new array,
and only updates so, binds the name to the new value. Where another name may share the array
(an alias read later), or the array was given to the function, it stays refused.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.errors import S2SGradError


def spring_chain(k, x0):
    n = x0.shape[0]
    x = x0.copy()
    v = np.zeros(n)
    for _ in range(12):
        force = np.zeros(n)
        force[1:] += -k[0] * (x[1:] - x[:-1])
        force[:-1] += k[0] * (x[1:] - x[:-1])
        v += 0.05 * force
        x += 0.05 * v
    return np.sum(x**2)


def grid_updates(w, x):
    out = np.zeros((3, 4))
    out[:, 0] += w[0] * x[:3]
    out[1] *= w[1]
    out[2, 1:] -= x[1:4] * w[1:]
    out[[0, 2, 2], [1, 3, 3]] += w[:3] ** 2  # repeated: the last write counts, as in NumPy
    total = np.ones(4)
    total *= w
    total /= 1.0 + x**2
    return np.sum(out**2) + np.sum(total)


def element_updates(w):
    acc = np.zeros(3)
    for i in range(3):
        acc[i] += w[i] * w[(i + 1) % 3]
    return np.sum(np.sin(acc))


PROGRAMS = [
    (spring_chain, (np.array([1.3]), np.array([0.2, -0.4, 0.9, 0.1])), (0, 1)),
    (grid_updates, (np.array([0.5, -1.2, 0.8, 0.3]), np.array([0.1, 0.4, -0.6, 1.1])), (0, 1)),
    (element_updates, (np.array([0.3, -0.7, 1.1]),), (0,)),
]


@pytest.mark.parametrize("f, args, positions", PROGRAMS, ids=lambda p: getattr(p, "__name__", ""))
def test_updates_of_arrays_the_function_made_are_taped_to_second_order(f, args, positions):
    for wrt in positions:
        expected = numeric_grad(f, args, wrt)
        assert_close(call_twice(sg.grad(f, wrt=wrt, mode="tape"), *args), expected, rtol=1e-5)
    sg.check_grads(f, *args, order=2, mode="tape")


def test_the_users_arrays_are_left_as_they_were():
    k, x0 = np.array([1.3]), np.array([0.2, -0.4, 0.9, 0.1])
    before = x0.copy()
    sg.grad(spring_chain, wrt=(0, 1), mode="tape")(k, x0)
    np.testing.assert_array_equal(x0, before)


def updates_a_shared_array(w):
    v = np.zeros(3)
    seen = v
    v += w
    return np.sum(seen * w)


def updates_a_given_array(w, buffer):
    buffer += w
    return np.sum(buffer**2)


def test_an_update_others_may_see_is_still_refused():
    w = np.array([0.5, -0.2, 0.3])
    with pytest.raises(S2SGradError, match="test_tape_in_place_updates.py"):
        sg.grad(updates_a_shared_array, mode="tape")(w)
    with pytest.raises(S2SGradError, match=r"'buffer \+= w' updates a plain array in place"):
        sg.grad(updates_a_given_array, mode="tape")(w, np.zeros(3))


def test_auto_differentiates_the_gradient_of_a_simulation_again():
    """s2s refuses second order through the loop's saves; on the tape, the generated
    gradient's own item writes are not the user's: auto records the user's code instead."""
    k, x0 = np.array([1.3]), np.array([0.2, -0.4, 0.9, 0.1])

    def along(k):
        return np.sum(sg.grad(spring_chain, mode="tape")(k, x0))

    def gradient_sum(k, x0):
        return np.sum(sg.grad(spring_chain, mode="auto")(k, x0))

    expected = numeric_grad(along, (k,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(sg.grad(gradient_sum, mode="auto")(k, x0), expected, rtol=1e-5)
