"""``scipy.linalg.solve(a, b)`` had no derivative rule ("has no derivative rule" by source,
and the tape refused the ``np.asarray`` inside SciPy). Its rule is ``np.linalg.solve``'s,
with ``transposed=True`` solving ``a^T x = b``; with ``assume_a`` symmetric or positive
definite SciPy reads one triangle of ``a``, so the cotangent of ``a`` is folded onto that
triangle, the other entries (never read) getting zero.
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
OPTIONS = [
    {},
    {"assume_a": "gen", "transposed": True},
    {"assume_a": "pos"},
    {"assume_a": "sym", "lower": True},
]


def energy(a, b, options):
    x = scipy.linalg.solve(a, b, **options)
    return np.sum(np.sin(x) * x)


def matrix(options, seed):
    """Well conditioned; for one-triangle solves, junk in the triangle SciPy does not read."""
    rng = np.random.default_rng(seed)
    m = rng.uniform(-1.0, 1.0, size=(3, 3))
    spd = m @ m.T + 3.0 * np.eye(3)
    if options.get("assume_a") in ("pos", "sym"):
        junk = rng.uniform(-1.0, 1.0, size=(3, 3))
        if options.get("lower"):
            return np.tril(spd) + np.triu(junk, 1)
        return np.triu(spd) + np.tril(junk, -1)
    return m + 3.0 * np.eye(3)


@pytest.mark.parametrize("b_shape", [(3,), (3, 2)])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("options", OPTIONS)
def test_gradients(options, mode, b_shape):
    a = matrix(options, seed=len(options))
    b = np.random.default_rng(len(b_shape)).uniform(-1.0, 1.0, size=b_shape)
    got = call_twice(sg.grad(energy, wrt=(0, 1), mode=mode), a, b, options)
    assert_close(got[0], numeric_grad(energy, [a, b, options], 0), rtol=1e-5, atol=1e-8)
    assert_close(got[1], numeric_grad(energy, [a, b, options], 1), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("options", OPTIONS)
def test_the_triangle_not_read_gets_zero(options):
    a = matrix(options, seed=1)
    gradient = sg.grad(energy, mode="s2s")(a, np.ones(3), options)
    if options.get("assume_a") == "pos":
        assert np.all(np.tril(gradient, -1) == 0.0)
    if options.get("assume_a") == "sym":
        assert np.all(np.triu(gradient, 1) == 0.0)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("options", OPTIONS)
def test_forward_mode(options, mode):
    a, b = matrix(options, seed=4), np.array([0.5, -1.0, 0.25])
    ta = np.linspace(-0.5, 0.5, num=9).reshape(3, 3)
    tb = np.array([1.0, 0.0, -2.0])

    def of_both(m, v):
        return energy(m, v, options)

    _, got = sg.jvp(of_both, (a, b), (ta, tb), mode=mode)
    expected = numeric_jvp(of_both, [a, b], 0, ta) + numeric_jvp(of_both, [a, b], 1, tb)
    assert_close(got, expected, rtol=1e-5)


def general(a, b):
    return np.sum(np.sin(scipy.linalg.solve(a, b)) ** 2)


def upper_triangle_read(a, b):
    return np.sum(np.sin(scipy.linalg.solve(a, b, assume_a="pos")) ** 2)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize(
    ("f", "options"), [(general, {}), (upper_triangle_read, {"assume_a": "pos"})]
)
def test_second_order(f, options, mode):
    a, b = matrix(options, seed=5), np.array([0.5, -1.0, 0.25])
    assert_hvp_matches_differences(f, (a, b), mode)


def test_other_structures_are_refused_with_what_to_call():
    with pytest.raises(sg.NonDifferentiableError, match="solve_triangular, solve_banded"):
        sg.grad(energy, mode="s2s")(np.eye(3) * 2.0, np.ones(3), {"assume_a": "diagonal"})
