"""``functools.partial`` of a user's function, given to a transform (JAX users write
``grad(partial(loss, data=X))``).

Source transformation refused a partial (it has no source of its own), so ``mode="s2s"``
raised and ``mode="auto"`` ran the tape with a warning. Now ``grad``, ``value_and_grad``,
``jacobian``, ``jacfwd``, ``hessian``, ``vjp``, ``jvp`` and ``hvp`` differentiate the
function the partial wraps, called with the arguments it binds, read at each call. The
oracle is central differences of the partial itself.
"""

import functools
import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")
SHAPES = [(), (3,), (2, 3)]


def loss(x, a, data=None):
    weights = 1.0 if data is None else data
    return np.sum(np.sin(a * x) * weights + 0.5 * x**2)


class Model:
    def __init__(self, shape):
        self.w = np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)

    def energy(self, x, scale):
        return np.sum(np.tanh(self.w * x) * scale)


def _point(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def _partials(shape):
    data = _point(shape, 1) + 2.0
    return {
        "keywords": functools.partial(loss, a=1.3, data=data),
        "nested": functools.partial(functools.partial(loss, data=data), a=0.7),
        "method": functools.partial(Model(shape).energy, scale=2.0),
    }


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("which", ["keywords", "nested", "method"])
def test_the_gradient_of_a_partial(mode, shape, which):
    f = _partials(shape)[which]
    x = _point(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the tape in "auto"
        gradient = sg.grad(f, mode=mode)
        for _ in range(2):  # the cached code too
            assert_close(gradient(x), numeric_grad(f, (x,), 0))
        value, again = sg.value_and_grad(f, mode=mode)(x)
    assert_close(value, f(x))
    assert_close(again, numeric_grad(f, (x,), 0))


@pytest.mark.parametrize("mode", MODES)
def test_positional_arguments_bound_first_shift_wrt(mode):
    data = _point((3,), 2)
    f = functools.partial(lambda scale, x, y: np.sum(scale * np.sin(x) * y), 1.5)
    x, y = _point((3,)), data
    gx, gy = sg.grad(f, wrt=(0, 1), mode=mode)(x, y)
    assert_close(gx, 1.5 * np.cos(x) * y)
    assert_close(gy, 1.5 * np.sin(x))
    assert_close(sg.grad(f, wrt="y", mode=mode)(x, y), 1.5 * np.sin(x))
    assert_close(sg.jacobian(f, wrt=np.int64(1), mode=mode)(x, y), 1.5 * np.sin(x))


@pytest.mark.parametrize("mode", MODES)
def test_keywords_changed_after_a_call_are_used(mode):
    f = functools.partial(loss, a=1.0)
    x = _point((3,))
    gradient = sg.grad(f, mode=mode)
    gradient(x)
    f.keywords["a"] = 2.5
    assert_close(gradient(x), numeric_grad(f, (x,), 0))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(3,), (2, 2)], ids=str)
def test_second_order_and_jacobians_of_a_partial(mode, shape):
    data = _point(shape, 3) + 2.0
    f = functools.partial(loss, a=1.3, data=data)
    x = _point(shape)
    expected = np.diag((-(1.3**2) * np.sin(1.3 * x) * data + 1.0).ravel()).reshape(shape + shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(sg.hessian(f, mode=mode)(x), expected)
        elementwise = functools.partial(lambda x, a: np.sin(a * x), a=1.3)
        jacobian = np.diag(1.3 * np.cos(1.3 * x).ravel()).reshape(shape + shape)
        assert_close(sg.jacobian(elementwise, mode=mode)(x), jacobian)
        assert_close(sg.jacfwd(elementwise, mode=mode)(x), jacobian)


@pytest.mark.parametrize("mode", MODES)
def test_hessian_blocks_of_a_partial_with_positional_arguments(mode):
    f = functools.partial(lambda a, x, y: np.sum(a * x**2 * y), 2.0)
    x, y = _point((3,)), _point((3,), 4)
    blocks = sg.hessian(f, wrt=(0, 1), mode=mode)(x, y)
    assert_close(blocks[0][0], np.diag(4.0 * y))
    assert_close(blocks[0][1], np.diag(4.0 * x))
    assert_close(blocks[1][1], np.zeros((3, 3)))


def test_a_partial_given_to_vjp_is_transformed():
    """Once refused in mode "s2s" (test_partials_in_products.py has more)."""
    f = functools.partial(loss, a=2.0)
    x = _point((2,))
    _, pullback = sg.vjp(f, x, mode="s2s")
    assert_close(pullback(1.0)[0], 2.0 * np.cos(2.0 * x) + x)


def test_a_partial_differentiated_again_is_transformed():
    f = functools.partial(loss, a=2.0)
    x = _point((3,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the tape
        (product,) = sg.hvp(f, (x,), (np.ones(3),), mode="s2s")
        assert_close(product, -4.0 * np.sin(2.0 * x) + 1.0)
        (product,) = sg.hvp(f, (x,), (np.ones(3),), mode="auto")
    assert_close(product, -4.0 * np.sin(2.0 * x) + 1.0)
