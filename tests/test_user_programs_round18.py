"""Programs written the way users write them, checked against central differences in
every mode that takes them, first and second order.

Found here: Hessian-vector products in mode="auto" of a wrapper passing a list of arrays
of different shapes through ``f(*args)`` crashed with NumPy's "inhomogeneous shape"
``ValueError``:

* a function iterating its list parameter (``max(... for v in xs)``) was transformed not
  knowing the parameter is a list, so the cotangents of its items were added with ``+``,
  whose derivative broadcasts to ``np.shape`` of the list; a parameter the function
  iterates now counts as maybe a list (``reverse/facts.maybe_structured``);
* on the tape, the derivative of ``unbroadcast`` (which generated code calls on each
  entry of a tuple of cotangents) took ``np.shape`` of the whole tuple; it now goes entry
  by entry (``runtime/core._broadcast_back``).
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

R = np.random.default_rng(1118)


def largest_and_total(xs):
    return max(np.sum(v**2) for v in xs) + sum(np.sum(np.sin(v)) for v in xs)


def forwarded(*args):
    return largest_and_total(*args)


def network(Ws, bs, x):
    h = x
    for W, b in zip(Ws, bs):
        h = np.tanh(h @ W + b)
    return np.sum(h**2)


def network_of_pairs(params, x):
    Ws, bs = zip(*params)
    return network(list(Ws), list(bs), x)


def forwarded_pairs(*args):
    return network_of_pairs(*args)


def _ragged():
    Ws = [R.normal(size=(3, 4)), R.normal(size=(4, 2))]
    bs = [R.normal(size=4), R.normal(size=2)]
    return Ws, bs


def _hvp_against_differences(f, args, mode):
    """``sg.hvp`` of ``f`` along a random direction, twice, against central differences of
    the tape's gradient (itself checked against differences first)."""
    wrt = tuple(range(len(args)))
    leaves, tree = sg.tree_flatten(args)
    direction = sg.tree_unflatten(tree, [R.normal(size=np.shape(leaf)) for leaf in leaves])
    gradient = sg.grad(f, wrt=wrt, mode="tape")
    for index in wrt:
        assert_close(gradient(*args)[index], numeric_grad(f, list(args), index))

    def gradient_along(t):
        shifted = sg.tree_unflatten(
            tree, [a + t * d for a, d in zip(leaves, sg.tree_flatten(direction)[0])]
        )
        return gradient(*shifted)

    expected = numeric_jvp(gradient_along, [0.0], 0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            products = sg.hvp(f, args, tuple(direction), mode=mode)
            assert_close(tuple(products), tuple(expected), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_hvp_of_a_wrapper_passing_a_ragged_list_to_a_function_iterating_it(mode):
    Ws, _ = _ragged()
    _hvp_against_differences(forwarded, (Ws,), mode)


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_hvp_of_a_wrapper_passing_pairs_unzipped_by_the_callee(mode):
    Ws, bs = _ragged()
    _hvp_against_differences(forwarded_pairs, (list(zip(Ws, bs)), R.normal(size=(5, 3))), mode)


def test_unbroadcast_derivative_goes_entry_by_entry_over_a_tuple_of_cotangents():
    def program(a, b):
        entries = sg.runtime.unbroadcast((a * 2.0, b**2), (a, b))
        return np.sum(entries[0] ** 2) + np.sum(np.sin(entries[1]))

    a, b = R.normal(size=3), R.normal(size=(2, 2))
    for index, arg in enumerate((a, b)):
        expected = numeric_grad(program, [a, b], index)
        assert_close(sg.grad(program, wrt=index, mode="tape")(a, b), expected)
        tangent = R.normal(size=np.shape(arg))
        _, derivative = sg.jvp(
            lambda v, i=index: program(*((v, b) if i == 0 else (a, v))),
            (arg,),
            (tangent,),
            mode="tape",
        )
        assert_close(derivative, numeric_jvp(program, [a, b], index, tangent))
