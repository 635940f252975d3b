"""``scipy.linalg.solve_banded((l, u), ab, b)`` had no derivative rule ("has no derivative
rule" in every mode). Its rule reads the band ``ab`` as the dense matrix it stores
(a constant gather) and gives ``ab`` the band of ``-L x^T``, ``b`` the adjoint solution
``L``; built from functions with rules, so forward mode and second order follow.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from oracle import (
    assert_close,
    assert_hvp_matches_differences,
    call_twice,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
BANDS = [(1, 1), (2, 0), (0, 1)]


def banded_storage(l_and_u, n, seed):
    """A diagonally dominant band, with LAPACK's unused corners holding junk."""
    lower, upper = l_and_u
    rng = np.random.default_rng(seed)
    ab = rng.uniform(-1.0, 1.0, size=(lower + upper + 1, n))
    ab[upper] += 4.0
    return ab


def energy(ab, b, l_and_u):
    x = scipy.linalg.solve_banded(l_and_u, ab, b)
    return np.sum(np.sin(x) * x)


@pytest.mark.parametrize("b_shape", [(4,), (4, 2)])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("l_and_u", BANDS)
def test_gradients_of_the_band_and_the_right_hand_side(l_and_u, mode, b_shape):
    ab = banded_storage(l_and_u, 4, seed=sum(l_and_u))
    b = np.random.default_rng(len(b_shape)).uniform(-1.0, 1.0, size=b_shape)
    got = call_twice(sg.grad(energy, wrt=(0, 1), mode=mode), ab, b, l_and_u)
    assert_close(got[0], numeric_grad(energy, [ab, b, l_and_u], 0), rtol=1e-5, atol=1e-8)
    assert_close(got[1], numeric_grad(energy, [ab, b, l_and_u], 1), rtol=1e-5, atol=1e-8)


def test_the_unused_corners_get_no_gradient():
    ab = banded_storage((1, 1), 4, seed=0)
    gradient = sg.grad(energy, mode="s2s")(ab, np.ones(4), (1, 1))
    assert gradient[0, 0] == 0.0 and gradient[2, -1] == 0.0


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("wrt", [0, 1])
def test_forward_mode(wrt, mode):
    ab, b = banded_storage((1, 1), 4, seed=3), np.array([0.5, -1.0, 0.25, 2.0])
    args = [ab, b, (1, 1)]
    tangent = np.linspace(0.2, 1.0, num=np.size(args[wrt])).reshape(np.shape(args[wrt]))
    tangents = [np.zeros_like(ab), np.zeros_like(b)]
    tangents[wrt] = tangent
    _, got = sg.jvp(lambda a, v: energy(a, v, (1, 1)), (ab, b), tuple(tangents), mode=mode)
    assert_close(got, numeric_jvp(energy, args, wrt, tangent), rtol=1e-5)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_second_order(mode):
    ab, b = banded_storage((1, 1), 3, seed=5), np.array([0.5, -1.0, 0.25])

    def of_both(a, v):
        return energy(a, v, (1, 1))

    assert_hvp_matches_differences(of_both, (ab, b), mode)
