"""np.diagflat, np.ediff1d, np.resize, np.delete, np.geomspace, np.logspace, np.copysign,
np.modf and np.divmod (s2sgrad/rules/more_numpy.py) beyond test_coverage.py's one sample each: their
options and edge cases in s2s, auto and tape against central differences, forward mode
against finite differences of the value, and what is refused."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_gradient_in_every_mode, numeric_grad, numeric_jvp

import s2sgrad as sg

rng = np.random.default_rng(1818)
MASK = np.array([True, False, False, True, False])


def loss(out):
    """A weighted sum, so that every entry of ``out`` counts differently."""
    weights = np.linspace(0.5, 1.5, int(np.size(out))).reshape(np.shape(out))
    return np.sum(out * weights)


CASES = [
    ("diagflat", lambda x: loss(np.diagflat(x, 1)), (2, 2)),
    ("diagflat", lambda x: loss(np.diagflat(x[0] * x[1])), (2, 3)),
    ("ediff1d", lambda x: loss(np.ediff1d(x)), (2, 3)),
    ("ediff1d", lambda x: loss(np.ediff1d(x[1:], to_begin=x[0] * 2.0)), (4,)),
    ("ediff1d", lambda x: loss(np.ediff1d(x[2:], to_end=x[:2] ** 2)), (5,)),
    ("ediff1d", lambda x: loss(np.ediff1d(x[:1], to_end=x[1:])), (3,)),
    ("resize", lambda x: loss(np.resize(x, (2, 5))), (2, 2)),
    ("resize", lambda x: loss(np.resize(x, 3)), (2, 3)),
    ("resize", lambda x: loss(np.resize(x[0, 0], (2, 2))), (2, 3)),
    ("delete", lambda x: loss(np.delete(x, 1)), (2, 3)),
    ("delete", lambda x: loss(np.delete(x, slice(0, 3, 2), axis=-1)), (2, 4)),
    ("delete", lambda x: loss(np.delete(x, MASK, axis=0)), (5, 2)),
    ("insert", lambda x: loss(np.insert(x, 1, x[0] * 2.0)), (3,)),
    ("insert", lambda x: loss(np.insert(x[1:], 0, x[:2])), (4,)),
    ("insert", lambda x: loss(np.insert(x, [0, 2, 2], x[0, :1] ** 2, axis=1)), (2, 3)),
    ("insert", lambda x: loss(np.insert(x, 1, x[0], axis=0)), (2, 3)),
    ("insert", lambda x: loss(np.insert(x, slice(0, 2), 3.0 * x[:, :1], axis=1)), (2, 3)),
    ("insert", lambda x: loss(np.insert(x, -1, x[0, 0])), (2, 3)),
    ("geomspace", lambda x: loss(np.geomspace(x[0], x[1], 5)), (2,)),
    ("geomspace", lambda x: loss(np.geomspace(-x[0], -x[1], 4, endpoint=False)), (2,)),
    ("geomspace", lambda x: loss(np.geomspace(x[0], x[1], 3, axis=1)), (2, 2)),
    ("geomspace", lambda x: loss(np.geomspace(x[0], 3.0, 1)), (2,)),
    ("logspace", lambda x: loss(np.logspace(x[0], x[1], 4)), (2,)),
    ("logspace", lambda x: loss(np.logspace(x[0], x[1], 3, base=np.e, axis=-1)), (2, 3)),
    (
        "logspace",
        lambda x: loss(np.logspace(x[0], 1.0, 3, base=[2.0, 3.0], endpoint=False)),
        (2, 2),
    ),
    ("multi_dot", lambda x: loss(np.linalg.multi_dot([x, x.T])), (2, 3)),
    ("multi_dot", lambda x: loss(np.linalg.multi_dot([x[0], x.T, x, x[1]])), (2, 3)),
    ("multi_dot", lambda x: loss(np.linalg.multi_dot([x, x.T, x, x.T * 2.0])), (2, 3)),
    ("multi_dot", lambda x: loss(np.linalg.multi_dot([x.T, x, x[0]])), (2, 3)),
    ("copysign", lambda x: loss(np.copysign(x[0] - 1.2, x[1] - 1.3)), (2, 3)),
    ("copysign", lambda x: loss(np.copysign(x, -1.0)), (2, 3)),
    ("modf", lambda x: loss(np.modf(x * 3.0)[0]), (2, 3)),
    ("modf", lambda x: loss(np.stack(np.modf(x * 3.0))), (2, 3)),
    ("divmod", lambda x: loss(np.divmod(x * 3.0, 1.3)[1]), (2, 3)),
    ("divmod", lambda x: loss(np.stack(np.divmod(x * 3.0, x[0] + 0.7))), (2, 3)),
    ("divmod", lambda x: loss(divmod(x * 3.0, 1.1)[1] * x), (2, 3)),
    ("divmod", lambda x: loss(divmod(2.9, x)[1] ** 2), (3,)),
]
IDS = [f"{case[0]}-{i}" for i, case in enumerate(CASES)]


@pytest.mark.parametrize(("name", "f", "shape"), CASES, ids=IDS)
def test_gradient_in_every_mode(name, f, shape):
    x = rng.uniform(0.5, 2.0, shape)
    assert_gradient_in_every_mode(f, (x,))


@pytest.mark.parametrize(("name", "f", "shape"), CASES, ids=IDS)
def test_forward_mode(name, f, shape):
    x = rng.uniform(0.5, 2.0, shape)
    tangent = rng.standard_normal(shape)
    expected = numeric_jvp(f, (x,), 0, tangent)
    for mode in ("s2s", "tape"):
        _, actual = sg.jvp(f, (x,), (tangent,), mode=mode)
        assert_close(actual, expected, rtol=1e-5, atol=1e-7)


def test_copysign_flips_the_derivative_with_either_sign():
    x1 = np.array([1.5, -1.5, 2.0, -2.0])
    x2 = np.array([1.0, 1.0, -1.0, -1.0])
    for mode in ("s2s", "tape", "auto"):
        gradient = sg.grad(lambda a: np.sum(np.copysign(a, x2)), mode=mode)(x1)
        assert_close(gradient, np.array([1.0, -1.0, -1.0, 1.0]))
        in_x2 = sg.grad(lambda b: np.sum(np.copysign(x1, b)), mode=mode)(x2)
        assert_close(in_x2, np.zeros(4))


def test_float32_stays_float32():
    for _, f, shape in CASES:
        x = rng.uniform(0.5, 2.0, shape).astype(np.float32)
        for mode in ("s2s", "tape"):
            assert sg.grad(f, mode=mode)(x).dtype == np.float32


def test_logspace_in_its_base_a_number_or_an_array():
    def of_a_number(b):
        return loss(np.logspace(0.5, 1.0, 3, base=b))

    def of_an_array(b):
        return loss(np.logspace([0.5, -0.3], 1.0, 4, base=b, axis=1))

    for f, b in ((of_a_number, 2.5), (of_an_array, np.array([1.5, 3.0]))):
        expected = numeric_grad(f, (b,), 0)
        for mode in ("s2s", "tape", "auto"):
            assert_close(sg.grad(f, mode=mode)(b), expected, rtol=1e-5, atol=1e-7)
        tangent = np.ones_like(b) * 0.7
        along = numeric_jvp(f, (b,), 0, tangent)
        for mode in ("s2s", "tape"):
            assert_close(sg.jvp(f, (b,), (tangent,), mode=mode)[1], along, rtol=1e-5, atol=1e-7)


def test_geomspace_of_array_endpoints_in_both_arguments():
    def f(a, b):
        return loss(np.geomspace(a, b, 4, axis=-1))

    a, b = rng.uniform(0.5, 2.0, (2, 1)), rng.uniform(0.5, 2.0, 3)
    for index in (0, 1):
        expected = numeric_grad(f, (a, b), index)
        for mode in ("s2s", "tape", "auto"):
            assert_close(sg.grad(f, wrt=index, mode=mode)(a, b), expected, rtol=1e-5, atol=1e-7)
