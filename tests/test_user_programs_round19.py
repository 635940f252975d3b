"""Programs written the way users write them, checked against central differences in
every mode that takes them, first and second order.

Found here: the Hessian-vector product, in mode="s2s" and in mode="auto", of a wrapper
passing the parameter list of an MLP through ``f(*args)`` to a function that iterates
``params[:-1]`` and reads ``params[-1][0]`` crashed with NumPy's "inhomogeneous shape"
``ValueError``. The function was transformed not knowing its parameter is a list (the
caller's ``*args`` does not say), and a parameter counted as maybe a list only when the
function iterated it whole (``for layer in params``), not a slice of it
(``for layer in params[:-1]``, which the normal form binds to a name first). Its items'
cotangents were then added with ``+``, whose forward-mode derivative takes ``np.shape``
of the list.
"""

import numpy as np
import pytest
from oracle import assert_hvp_matches_differences

R = np.random.default_rng(1119)


def mlp_unpacking_each_layer(params, X, Y):
    h = X
    for layer in params[:-1]:
        W, b = layer
        h = np.tanh(h @ W + b)
    out = h @ params[-1][0] + params[-1][1]
    return np.sum((out - Y) ** 2)


def forwarded_mlp(*args):
    arguments = list(args)
    return mlp_unpacking_each_layer(*arguments)


def _layers(sizes):
    return [(R.normal(size=(m, n)) * 0.5, R.normal(size=n) * 0.1) for m, n in zip(sizes, sizes[1:])]


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_hvp_of_a_wrapper_around_an_mlp_iterating_a_slice_of_its_layers(mode):
    params = _layers([3, 4, 4, 2])
    args = (params, R.normal(size=(5, 3)), R.normal(size=(5, 2)))
    assert_hvp_matches_differences(forwarded_mlp, args, mode)
