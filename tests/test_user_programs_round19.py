"""Programs written the way users write them, checked against central differences in
every mode that takes them, first and second order.

Found here:

* the Hessian-vector product, in mode="s2s" and in mode="auto", of a wrapper passing the
  parameter list of an MLP through ``f(*args)`` to a function that iterates
  ``params[:-1]`` and reads ``params[-1][0]`` crashed with NumPy's "inhomogeneous shape"
  ``ValueError``. The function was transformed not knowing its parameter is a list (the
  caller's ``*args`` does not say), and a parameter counted as maybe a list only when the
  function iterated it whole (``for layer in params``), not a slice of it
  (``for layer in params[:-1]``, which the normal form binds to a name first). Its items'
  cotangents were then added with ``+``, whose forward-mode derivative takes ``np.shape``
  of the list.
* the same in mode="auto" for a dict of named layers bound to its data by a closure: the
  tape recorded ``unbroadcast`` of a dict of cotangents as one call, whose rule broadcast
  the dict to ``np.shape`` of a dict; it records the call on each entry now, as it does
  for a tuple (``tape/values.ENTRYWISE_HELPERS``).
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


def mlp_of_named_layers(params, X, Y):
    h = X
    names = sorted(params)
    for name in names[:-1]:
        h = np.tanh(h @ params[name]["W"] + params[name]["b"])
    last = params[names[-1]]
    return np.sum((h @ last["W"] + last["b"] - Y) ** 2)


def with_data(f, data, position):
    """f of one argument, the others fixed: how a user binds the data before an hvp."""

    def bound(value):
        arguments = list(data)
        arguments[position] = value
        return f(*arguments)

    return bound


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_hvp_of_bound_data_around_an_mlp_of_a_dict_of_named_layers(mode):
    # the tape recorded unbroadcast of the dict of cotangents as one call, whose rule
    # broadcast the dict to np.shape of a dict: "np.asarray() of a value being
    # differentiated" in mode="auto"; it records the call on each entry now, as for a tuple
    layers = {f"layer{i}": {"W": W, "b": b} for i, (W, b) in enumerate(_layers([3, 4, 2]))}
    data = (layers, R.normal(size=(5, 3)), R.normal(size=(5, 2)))
    assert_hvp_matches_differences(with_data(mlp_of_named_layers, data, 0), (layers,), mode)
