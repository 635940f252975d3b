"""The check each ``test_peer_suites_*.py`` file asks of a function its peers differentiate:
the gradient wrt each differentiable argument on a first and a later call, the forward-mode
derivative along random tangents of all of them at once, and (where the function is smooth
enough) the Hessian-vector product, each against central differences in float64.

Example::

    check_function(lambda a, b: a * np.sin(b), [0.3, 1.2], mode="s2s", second_order=True)
"""

from __future__ import annotations

import warnings

import numpy as np
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp, shifted

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def differentiable_positions(args) -> tuple[int, ...]:
    """The positions of the arguments made of floats (a float, a float array, or a
    container whose leaves are all floats): the ones a peer's driver differentiates."""

    def floating(leaf) -> bool:
        return isinstance(leaf, float) or (
            isinstance(leaf, np.ndarray) and np.issubdtype(leaf.dtype, np.floating)
        )

    positions = []
    for index, arg in enumerate(args):
        leaves = sg.tree_leaves(arg)
        if leaves and all(floating(leaf) for leaf in leaves):
            positions.append(index)
    return tuple(positions)


def random_like(tree, rng):
    """A random tangent with ``tree``'s structure (a float for a float leaf)."""
    return sg.tree_map(
        lambda leaf: float(rng.normal()) if np.ndim(leaf) == 0 else rng.normal(size=leaf.shape),
        tree,
    )


def weighted(f, args):
    """``f``'s output (real part) summed against fixed random weights of its shape at
    ``args``: one scalar function whose gradient sees every output entry.

    Example::

        check_function(weighted(np.fft.fft, [x]), [x], mode="s2s")
    """
    weights = np.random.default_rng(7).standard_normal(np.shape(f(*args)))

    def scalar(*a):
        return np.sum(np.real(f(*a)) * weights)

    return scalar


def check_function(f, args, mode, *, second_order=True, rtol=1e-5, atol=1e-6, key=None):
    """``f(*args)`` (a scalar) in ``mode``: gradients wrt every differentiable argument one
    by one (each called twice), the jvp along random tangents of all of them, and the hvp
    along random directions (``second_order``), against central differences.

    ``key`` (any hashable naming ``f`` at ``args``): the differences are computed once per
    key and reused for the other modes."""
    positions = differentiable_positions(args)
    assert positions, "no argument to differentiate"
    wrapped = _closing_over_the_rest(f, args, positions)
    primals = tuple(args[i] for i in positions)
    expected = _EXPECTED.get(key) if key is not None else None
    if expected is None:
        expected = _expected(f, args, positions, wrapped, primals, second_order)
        if key is not None:
            _EXPECTED[key] = expected
    gradients, directions, tangent_wanted, products_wanted = expected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)  # mode="auto" may use the tape
        for index, wanted in zip(positions, gradients):
            gradient = call_twice(sg.grad(f, wrt=index, mode=mode), *args)
            assert_close(gradient, wanted, rtol=rtol, atol=atol)
        _, tangent = sg.jvp(wrapped, primals, directions, mode=mode)
        np.testing.assert_allclose(tangent, tangent_wanted, rtol=rtol, atol=atol)
        if second_order:
            for _ in range(2):
                products = sg.hvp(wrapped, primals, directions, mode=mode)
                for product, wanted in zip(products, products_wanted):
                    for got, want in zip(sg.tree_leaves(product), sg.tree_leaves(wanted)):
                        np.testing.assert_allclose(
                            np.reshape(got, np.shape(want)), want, rtol=max(rtol, 1e-4), atol=atol
                        )


_EXPECTED: dict = {}


def _expected(f, args, positions, wrapped, primals, second_order):
    """The gradients, random directions, jvp and hvp by central differences (the hvp as
    differences of the tape's gradient, itself checked against differences by the tape's
    own run of :func:`check_function`)."""
    rng = np.random.default_rng(len(args))
    gradients = [numeric_grad(f, list(args), index) for index in positions]
    directions = tuple(random_like(p, rng) for p in primals)
    tangent = numeric_jvp(lambda t: wrapped(*_along(primals, directions, t)), [0.0], 0, 1.0)
    products = None
    if second_order:
        tape_gradient = sg.grad(wrapped, wrt=tuple(range(len(primals))), mode="tape")
        products = numeric_jvp(
            lambda t: tape_gradient(*_along(primals, directions, t)), [0.0], 0, 1.0, step=1e-5
        )
    return gradients, directions, tangent, products


def _closing_over_the_rest(f, args, positions):
    """``f`` as a function of the differentiable arguments only (the rest fixed)."""
    if positions == tuple(range(len(args))):
        return f
    fixed = list(args)

    def of_the_differentiable(*chosen):
        full = list(fixed)
        for i, value in zip(positions, chosen):
            full[i] = value
        return f(*full)

    of_the_differentiable.__name__ = getattr(f, "__name__", "f")
    return of_the_differentiable


def _along(primals, directions, t):
    return [shifted(p, d, t) for p, d in zip(primals, directions)]
