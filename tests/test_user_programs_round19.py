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

Newly differentiated: chained item writes into an array, ``out[i][j] = ...`` (``out[i]`` a
view of ``out``'s row), as beginners and code ported from lists of lists write them; they
were refused in every mode. They are written as ``out[i, j] = ...`` with a run-time check
that ``out`` is an array and ``i`` integers (``passes/library_writes.chained_item_writes``).

On the tape (and in mode="auto"), ``round(x, 2)`` raised Python's "TapeValue doesn't define
__round__", ``statistics.mean`` its "can't convert type 'TapeValue'" and a cache keyed by a
value being differentiated "unhashable type"; round is differentiated now, the other two
are refused naming the line.
"""

import statistics
import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_hvp_matches_differences,
    call_twice,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg

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


def convolve_by_chained_writes(image, kernel):
    out = np.zeros((image.shape[0] - 1, image.shape[1] - 1))
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i][j] = np.sum(image[i : i + 2, j : j + 2] * kernel)
            out[i][j] += 0.1 * image[i][j] ** 2
    return np.sum(np.tanh(out))


def correlate_by_chained_writes(image, kernel):
    out = np.zeros((image.shape[0] - 1, image.shape[1] - 1))
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i][j] = np.sum(image[i : i + 2, j : j + 2] * kernel)
    return np.sum(np.tanh(out))


def three_level_chain(cube, v):
    c = cube * 1.0
    c[1][0][2] = v[0] * v[1]
    c[np.int64(0)][-1] *= v[2]
    return np.sum(c**2)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_chained_item_writes_into_an_array_are_differentiated(mode):
    # out[i][j] = ... (the row out[i] is a view of out) was refused in every mode
    image, kernel = R.normal(size=(4, 5)), R.normal(size=(2, 2))
    cube, v = R.normal(size=(2, 3, 4)), R.normal(size=3)
    for f, args in ((three_level_chain, (cube, v)), (convolve_by_chained_writes, (image, kernel))):
        for index in range(2):
            gradient = sg.grad(f, wrt=index, mode=mode)
            assert_close(call_twice(gradient, *args), numeric_grad(f, args, index))
    # second order, against differences of the first-order gradient checked above (the
    # tape, the shared oracle's reference, refuses a chained write)
    gradient = sg.grad(correlate_by_chained_writes, mode="s2s")
    assert_close(gradient(image, kernel), numeric_grad(correlate_by_chained_writes, args, 0))
    direction = R.normal(size=image.shape)
    expected = numeric_jvp(lambda m: gradient(m, kernel), [image], 0, direction)
    product = sg.hvp(
        lambda m: correlate_by_chained_writes(m, kernel), (image,), (direction,), mode=mode
    )
    assert_close(product[0], expected, rtol=1e-4, atol=1e-6)


def chained_write_through_a_slice(a, v):
    b = a * 1.0
    b[1:][0] = v  # b[1:] is a view, but not a row: b[1:][0] is b[1]
    return np.sum(b**2)


def test_a_chained_write_through_a_slice_is_refused_naming_the_line():
    line = chained_write_through_a_slice.__code__.co_firstlineno + 2
    with pytest.raises(
        sg.UnsupportedError, match=rf"round19\.py:{line}: .*writes into part of an array"
    ):
        sg.grad(chained_write_through_a_slice, mode="s2s")(R.normal(size=(3, 2)), np.ones(2))


def rounded_scale(x):
    return np.sum(x * round(np.sum(x), 2)) + round(float(x[0] > 0)) * np.sum(x)


def mean_of_statistics(x):
    return statistics.mean(x * 2.0)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_round_is_differentiated_and_exact_arithmetic_refused_in_every_mode(mode):
    # on the tape, round(x, 2) raised "TapeValue doesn't define __round__" and
    # statistics.mean "can't convert type 'TapeValue' to numerator/denominator"
    x = np.array([0.31, -0.47, 0.83])
    assert_close(
        call_twice(sg.grad(rounded_scale, mode=mode), x), numeric_grad(rounded_scale, (x,), 0)
    )
    with pytest.raises(sg.S2SGradError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sg.grad(mean_of_statistics, mode=mode)(x)


def dense_with_optional_bias(layer, x):
    W, b = layer
    z = x @ W
    if b is not None:
        z = z + b
    return np.sum(np.tanh(z) ** 2)


def named_dense(layer, x):
    return dense_with_optional_bias((layer["W"], layer["b"]), x)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_none_entry_of_the_parameters_gets_none(mode):
    # a layer without bias, (W, None) or {"W": W, "b": None}, was refused ("holds a NoneType
    # value"); as in JAX, None is an entry with nothing in it, and its gradient is None
    W, x = R.normal(size=(3, 2)), R.normal(size=(4, 3))
    expected = numeric_grad(lambda w: dense_with_optional_bias((w, None), x), (W,), 0)
    gW, gb = call_twice(sg.grad(dense_with_optional_bias, mode=mode), (W, None), x)
    assert_close(gW, expected)
    assert gb is None
    named = call_twice(sg.grad(named_dense, mode=mode), {"W": W, "b": None}, x)
    assert_close(named["W"], expected)
    assert named["b"] is None
