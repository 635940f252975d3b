"""Second derivatives through a checkpointed loop (or ``sg.checkpoint``) whose body draws
random numbers from a generator.

A second derivative runs the custom derivative again where the outer tape sees it, and a
reverse Jacobian pulls back more than once. Those runs drew new random numbers from the
generator, which had moved on: ``sg.hessian``, ``sg.hvp`` and ``sg.grad`` of a gradient were
silently wrong (a product of the first draws and the next ones) and ``sg.jacobian`` of the
gradient refused. The generators reachable from the call's functions are now set back to
where the call started for each such run, and left where Python leaves them after."""

import warnings

import numpy as np
import pytest
from oracle import assert_close

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")
SHAPES = [(3,), (4,), (2, 2)]
STEPS = 4


def scale_of_draws(seed):
    rng = np.random.default_rng(seed)
    return np.prod([rng.normal() for _ in range(STEPS)]) ** 2


def looped(x):
    rng = np.random.default_rng(3)
    h = x
    for _ in sg.checkpointed(range(STEPS), snapshots=1):
        h = h * rng.normal()
    return np.sum(h**2)


def drawn_steps(h, rng):
    for _ in range(STEPS):
        h = h * rng.normal()
    return h


def checkpointed_call(x):
    rng = np.random.default_rng(3)
    return np.sum(sg.checkpoint(drawn_steps)(x, rng) ** 2)


def second_derivatives(f, x, mode):
    """Each way of taking the Hessian (as a matrix over x's elements)."""
    size = x.size
    hessian = np.reshape(sg.hessian(f, mode=mode)(x), (size, size))
    gradient = sg.grad(f, mode=mode)
    rows = []
    for k in range(size):
        direction = np.zeros(size)
        direction[k] = 1.0
        (product,) = sg.hvp(f, (x,), (direction.reshape(x.shape),), mode=mode)
        rows.append(np.ravel(product))
    by_reverse = np.reshape(sg.jacobian(gradient, mode=mode)(x), (size, size))
    by_forward = np.reshape(sg.jacfwd(gradient, mode=mode)(x), (size, size))
    summed = np.ravel(sg.grad(lambda z: np.sum(gradient(z)), mode=mode)(x))
    return hessian, np.array(rows), by_reverse, by_forward, summed


@pytest.mark.parametrize("f", [looped, checkpointed_call], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_second_derivatives_draw_what_the_function_drew(f, shape, mode):
    x = np.random.default_rng(sum(shape)).normal(size=shape)
    expected = 2.0 * scale_of_draws(3) * np.eye(x.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hessian, rows, by_reverse, by_forward, summed = second_derivatives(f, x, mode)
    for got in (hessian, rows, by_reverse, by_forward):
        assert_close(got, expected, rtol=1e-8)
    assert_close(summed, expected.sum(axis=0), rtol=1e-8)


@pytest.mark.parametrize("f", [looped, checkpointed_call], ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", MODES)
def test_the_first_derivative_and_the_generator_after_it(f, mode):
    x = np.random.default_rng(0).normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(f, mode=mode)(x)
        jacobian = sg.jacobian(lambda z: np.stack([f(z), 2 * f(z)]), mode=mode)(x)
    assert_close(got, 2.0 * scale_of_draws(3) * x, rtol=1e-8)
    assert_close(jacobian, np.stack([got, 2 * got]), rtol=1e-8)
