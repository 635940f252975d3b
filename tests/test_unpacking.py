"""Reading parameters out of containers: unpacking, slices, loops, starred arguments.

Each way a function can take values out of a list, tuple, dict or array argument must
carry their cotangents back (or be refused): checked against central differences in
both engines, on the first call (which specialises) and the second, with no fallback
to the tape in mode="auto", and the gradient keeps its argument's structure (a list
stays a list, a tuple a tuple, an array unpacked into names comes back as one array).
"""

import re
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, directional_derivative, numeric_grad

import s2sgrad as sg

HERE = re.escape(__file__)


class Box:
    pass


def pair(x):
    return np.sin(x), np.cos(x)


def takes_four(y, w1, b1, w2, b2):
    return np.tanh(y @ w1 + b1) @ w2 + b2


def with_default(a, b=2.0):
    return a * np.sin(b)


def mlp(params, x):  # the canonical loop over all layers but the last
    for W, b in params[:-1]:
        x = np.tanh(x @ W + b)
    W, b = params[-1]
    return np.sum(x @ W + b)


def layers_from_one(layers, x):
    for w, b in layers[1:]:
        x = np.sin(x * w + b)
    return np.sum(x)


def every_other_layer(layers, x):
    for w, b in layers[::2]:
        x = np.sin(x * w + b)
    return np.sum(x)


def zip_of_slices(layers, x):
    for (w1, b1), (w2, b2) in zip(layers[:-1], layers[1:]):
        x = np.sin(x * w1 + b2) * w2 + b1
    return np.sum(x)


def reversed_layers(layers, x):
    for w, b in reversed(layers):
        x = np.sin(x * w + b)
    return np.sum(x)


def enumerated_layers(layers, x):
    for i, (w, b) in enumerate(layers):
        x = np.sin(x * w + b * i)
    return np.sum(x)


def layer_entries(layers, x):
    for layer in layers[:-1]:
        x = np.sin(x * layer[0] + layer[1])
    return np.sum(x)


def nested_unpacking(p, x):
    (a, b), c = p
    return np.sum(a * x + b * c)


def three_layers(params, x):  # the dropout MLP's unpacking
    (W1, b1), (W2, b2), (W3, b3) = params
    h = np.tanh(x @ W1 + b1)
    h = np.tanh(h @ W2 + b2)
    return np.sum(h @ W3 + b3)


def unpacked_twice(p, x):
    (a, b), c = p
    (d, e), f = p
    return np.sum(a * e + b * d * c * f)


def unpacked_array(theta):
    a, b = theta
    return a * b * b


def unpacked_rows(m):
    r0, r1 = m
    return np.sum(r0 * np.sin(r1))


def unpacked_result(t):
    a, b = np.exp(t)
    return a * b


def rows_in_a_loop(m):
    total = 0.0
    for a, b in m:
        total = total + a * b
    return total


def first_and_rest(layers, x):
    first, *rest = layers
    w, b = first
    y = x * w + b
    for w2, b2 in rest:
        y = np.sin(y * w2 + b2)
    return np.sum(y)


def first_middle_last(m):
    first, *middle, last = m
    return np.sum(first * last * np.sum(middle))


def nested_loop_target(layers, x):
    for (w, b), c in zip(layers, [1.0, 2.0, 3.0]):
        x = np.sin(x * w + b) * c
    return np.sum(x)


def joined_slices(layers, x):
    for w, b in layers[:1] + layers[2:]:
        x = np.sin(x * w + b)
    return np.sum(x)


def joined_tuple(t, x):
    u = t + (x,)
    return np.sum(u[0] * u[1] * u[2])


def list_of_layers(layers, x):
    for w, b in list(layers):
        x = np.sin(x * w + b)
    w, b = tuple(layers)[0]
    return np.sum(x * w + b)


def comprehension(layers, x):
    ws = [w * 2.0 for w, b in layers]
    bs = [b for w, b in layers]
    return np.sum(np.sin(ws[0] * x) * bs[1] + ws[2])


def comprehension_sum(layers, x):
    return sum([np.sum(np.sin(w * x) + b) for w, b in layers])


def dict_items(d, x):
    total = 0.0
    for name, (w, b) in d.items():
        total = total + np.sum(np.sin(w * x + b)) * len(name)
    return total


def dict_values(d, x):
    total = 0.0
    for v in d.values():
        total = total + np.sum(np.sin(v * x))
    return total


def dict_keys(d, x):
    total = 0.0
    for k in d.keys():  # noqa: SIM118 (the form under test)
        total = total + np.sum(np.sin(d[k] * x))
    return total


def dict_iteration(d, x):
    total = 0.0
    for k in d:
        total = total + np.sum(np.sin(d[k] * x)) * k
    return total


def starred_ufunc(xs):
    return np.sum(np.add(*xs))


def starred_helper(params, y):
    return np.sum(takes_four(y, *params["ffn"]))


def starred_with_default(xs, x):
    return np.sum(with_default(*xs) * x)


def two_starred_calls(layers, x):
    return np.sum(np.add(*layers[0]) * np.multiply(*layers[1]) * x)


def starred_in_a_list(xs, x):
    return np.sum(np.stack([*xs, x]) ** 2)


def enumerated_backwards(layers, x):
    for i, (w, b) in enumerate(reversed(layers)):
        x = np.tanh(x * w) + b * (i + 1.0)
    return np.sum(x)


def enumerated_zip(layers, x):  # enumerate of a zip, one of its sequences reversed
    weights, offsets = layers
    for i, (w, b) in enumerate(zip(weights, reversed(offsets))):
        x = np.tanh(x * w) + b * (i + 1.0)
    return np.sum(x)


def dict_comprehension(layers, x):
    scaled = {k: np.tanh(w * x) + b for k, (w, b) in enumerate(layers)}
    return sum(np.sum(scaled[k] ** 2) * (k + 1.0) for k in scaled)


def dict_of_zip(layers, x):
    weights = dict(zip(["first", "second", "third"], [w * x for w, _ in layers]))
    return np.sum(weights["first"] * weights["third"]) + np.sum(np.sin(weights["second"]))


def lists_of_pairs(layers, x):
    pairs = list(zip(range(len(layers)), layers))
    counted = tuple(enumerate(layer[1] for layer in layers))
    total = sum(np.sum(np.tanh(w * x) * b) * k for k, (w, b) in pairs)
    return total + sum(np.sum(b * x) * k for k, b in counted)


def zip_with_a_range(layers, x):
    for k, (w, b) in zip(range(2), layers):
        x = np.tanh(x * w) + b * (k + 1.0)
    return np.sum(x)


def nested_literal(x):  # entries of a list of tuples built here
    layers = [(x * 2.0, x * 0.5), (x + x, x)]
    y = x * 1.0
    for w, b in layers[:-1]:
        y = np.tanh(y * w + b)
    return np.sum(y * layers[1][0] * layers[1][1])


def layer(p, x):
    W, b = p
    return np.tanh(x @ W + b)


def layers_through_a_helper(params, x):
    for p in params[:-1]:
        x = layer(p, x)
    return np.sum(layer(params[-1], x))


def layers_in_a_dict(params, x):
    for w, b in params["layers"][1:]:
        x = np.sin(x * w + b)
    return np.sum(x * params["scale"])


def unpacked_slice(t, x):
    a, b = t[1:]
    return np.sum(a * b * x)


def item_target(x):
    out = np.zeros((2,) + np.shape(x))
    y, out[0] = pair(x)
    return np.sum(y * out)


RNG = np.random.default_rng(19)


def r(*shape):
    return RNG.standard_normal(shape)


def pairs(count=3):
    return [(r(3), r(3)) for _ in range(count)]


CASES = [
    (mlp, lambda: ([(r(3, 3), r(3)) for _ in range(3)], r(3))),
    (layers_from_one, lambda: (pairs(), r(3))),
    (every_other_layer, lambda: (pairs(), r(3))),
    (zip_of_slices, lambda: (pairs(), r(3))),
    (reversed_layers, lambda: (pairs(), r(3))),
    (enumerated_layers, lambda: (pairs(), r(3))),
    (enumerated_backwards, lambda: (pairs(), r(3))),
    (enumerated_zip, lambda: (([r(3), r(3), r(3)], [r(3), r(3)]), r(3))),
    (dict_comprehension, lambda: (pairs(), r(3))),
    (dict_of_zip, lambda: (pairs(), r(3))),
    (lists_of_pairs, lambda: (pairs(), r(3))),
    (zip_with_a_range, lambda: (pairs(), r(3))),
    (nested_literal, lambda: (r(3),)),
    (layers_through_a_helper, lambda: ([(r(3, 3), r(3)) for _ in range(3)], r(3))),
    (layers_in_a_dict, lambda: ({"layers": pairs(), "scale": r(3)}, r(3))),
    (unpacked_slice, lambda: ((r(3), r(3), r(3)), r(3))),
    (layer_entries, lambda: (pairs(), r(3))),
    (nested_unpacking, lambda: (((r(2), r(2)), r(2)), r(2))),
    (three_layers, lambda: (tuple((r(3, 3), r(3)) for _ in range(3)), r(3))),
    (unpacked_twice, lambda: (((r(2), r(2)), r(2)), r(2))),
    (unpacked_array, lambda: (r(2),)),
    (unpacked_rows, lambda: (r(2, 3),)),
    (unpacked_result, lambda: (r(2),)),
    (rows_in_a_loop, lambda: (r(3, 2),)),
    (first_and_rest, lambda: (pairs(), r(3))),
    (first_and_rest, lambda: (pairs(1), r(3))),  # rest is empty
    (first_middle_last, lambda: (r(4, 3),)),
    (nested_loop_target, lambda: (pairs(), r(3))),
    (joined_slices, lambda: (pairs(), r(3))),
    (joined_tuple, lambda: ((r(2), r(2)), r(2))),
    (list_of_layers, lambda: (pairs(), r(3))),
    (comprehension, lambda: (pairs(), r(3))),
    (comprehension_sum, lambda: (pairs(), r(3))),
    (dict_items, lambda: ({"a": (r(3), r(3)), "b": (r(3), r(3))}, r(3))),
    (dict_values, lambda: ({"a": r(3), "b": r(3)}, r(3))),
    (dict_keys, lambda: ({"a": r(3), "b": r(3)}, r(3))),
    (dict_iteration, lambda: ({1: r(3), 0: r(3)}, r(3))),  # integer keys: not positions
    (starred_ufunc, lambda: ([r(2), r(2)],)),
    (starred_ufunc, lambda: (r(2, 3),)),
    (starred_helper, lambda: ({"ffn": [r(3, 4), r(4), r(4, 3), r(3)]}, r(2, 3))),
    (starred_with_default, lambda: ([r(3), 0.7], r(3))),
    (two_starred_calls, lambda: (pairs(), r(3))),
    (starred_in_a_list, lambda: ([r(3), r(3)], r(3))),
]
TAPE_REFUSES = {item_target, first_middle_last}  # item writes; np.sum of a list of values
IDS = [f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)]


def assert_same_structure(actual, expected):
    """Lists stay lists, tuples tuples, dicts dicts, and arrays arrays of one shape."""
    if isinstance(expected, dict):
        assert type(actual) is dict and actual.keys() == expected.keys()
        for key in expected:
            assert_same_structure(actual[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same_structure(a, e)
    elif isinstance(expected, np.ndarray):
        assert type(actual) is np.ndarray and actual.shape == expected.shape


@pytest.mark.parametrize("function, make", CASES, ids=IDS)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_gradient_matches_finite_differences(function, make, mode):
    if mode == "tape" and function in TAPE_REFUSES:
        pytest.skip("the tape refuses this by design")
    args = make()
    expected = numeric_grad(function, args, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no fallback in mode="auto"
        gradient = call_twice(sg.grad(function, mode=mode), *args)
    assert_same_structure(gradient, expected)
    assert_close(gradient, expected, rtol=1e-5, atol=1e-6)


def test_item_target_in_an_unpacking():
    x = r(3)
    gradient = call_twice(sg.grad(item_target, mode="s2s"), x)
    assert_close(gradient, numeric_grad(item_target, [x], 0), rtol=1e-5, atol=1e-6)


def _leaves(tree):
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in _leaves(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [np.asarray(tree, dtype=float)]


def _random_like(tree):
    if isinstance(tree, dict):
        return {k: _random_like(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_random_like(v) for v in tree)
    return RNG.standard_normal(np.shape(tree)) if np.ndim(tree) else float(RNG.standard_normal())


def _zeros_like(tree):
    if isinstance(tree, dict):
        return {k: _zeros_like(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_zeros_like(v) for v in tree)
    return np.zeros(np.shape(tree)) if np.ndim(tree) else 0.0


SECOND_ORDER = [
    c for c in CASES if c[0] not in TAPE_REFUSES | {starred_with_default, dict_iteration}
]


# dict(pairs)'s pullback is found as the code runs, which forward mode does not follow (the
# tape does: mode="auto" uses it)
S2S_REFUSES_SECOND_ORDER = {dict_comprehension, dict_of_zip}


@pytest.mark.parametrize(
    "function, make", SECOND_ORDER, ids=[f"{c[0].__name__}" for c in SECOND_ORDER]
)
@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_hessian_vector_product(function, make, mode):
    """sg.hvp against central differences of the tape's gradient along the vector."""
    args = make()
    vector = _random_like(args[0])
    vectors = (vector, *map(_zeros_like, args[1:]))
    if mode == "s2s" and function in S2S_REFUSES_SECOND_ORDER:
        with pytest.raises(sg.UnsupportedError, match=f"{HERE}:\\d+ .*forward mode"):
            sg.hvp(function, args, vectors, mode=mode)
        return
    (product, *_) = sg.hvp(function, args, vectors, mode=mode)
    gradient = sg.grad(function, mode="tape")
    along = directional_derivative(lambda a: gradient(a, *args[1:]), args[0], vector, step=1e-5)
    expected = _leaves(along)
    assert_same_structure(product, args[0])
    for actual, wanted in zip(_leaves(product), expected, strict=True):
        np.testing.assert_allclose(actual, wanted, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_hessian_of_an_unpacked_array(mode):
    """a * b * b with a, b = theta: the Hessian is [[0, 2b], [2b, 2a]]."""
    theta = r(2)
    a, b = theta
    expected = np.array([[0.0, 2 * b], [2 * b, 2 * a]])
    np.testing.assert_allclose(sg.hessian(unpacked_array, mode=mode)(theta), expected)


def loop_over_a_constant_dict(x):
    total = 0.0
    for k in SCALES:
        total = total + np.sum(x * SCALES[k]) * k
    return total


SCALES = {2: 0.5, 1: 3.0}


def test_a_loop_over_a_dict_visits_its_keys():
    """Indexing a dict by position read the wrong entries where its keys are integers."""
    x = r(3)
    expected = np.full(3, 2 * 0.5 + 1 * 3.0)
    for mode in ("s2s", "tape"):
        assert_close(call_twice(sg.grad(loop_over_a_constant_dict, mode=mode), x), expected)


def attribute_target(x):
    box = Box()
    y, box.r = pair(x)
    return np.sum(y * 2.0 + box.r)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_an_attribute_in_an_unpacking(mode):
    # box is the function's own object: box.r is a variable (docs/models.md)
    x = r(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = call_twice(sg.grad(attribute_target, mode=mode), x)
    assert_close(gradient, numeric_grad(attribute_target, [x], 0), rtol=1e-5, atol=1e-6)


def test_unpacking_reads_one_cotangent_of_the_value():
    """The generated code builds the cotangent of the unpacked value in one place."""
    df = sg.grad(nested_unpacking, mode="s2s")
    df(((r(2), r(2)), r(2)), r(2))
    text = sg.source(df)
    assert text.count("unpack_cotangent(") == 2


def unpacked_dict_values(d, x):
    a, b = d.values()
    return np.sum(a * x + b)


def test_dict_views_outside_loops_are_refused_or_taped():
    d, x = {"a": r(3), "b": r(3)}, r(3)
    with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+: .values\(\) .* mode='tape'"):
        sg.grad(unpacked_dict_values, mode="s2s")(d, x)
    with pytest.warns(UserWarning, match="values"):
        gradient = sg.grad(unpacked_dict_values)(d, x)
    assert_close(gradient, numeric_grad(unpacked_dict_values, [d, x], 0), rtol=1e-5, atol=1e-6)


def summary(a):
    return np.mean(a), a.shape, "summary", np.sum


def starred_rest_of_non_arrays(x):
    m, *rest = summary(np.sin(x))
    return np.sum(np.sin(m * x * len(rest)))


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_hessian_through_a_starred_rest_that_holds_no_arrays(mode):
    """Forward mode over the gradient once failed here: the rest's cotangent is None, its
    tangent 0.0, which the unpacking's cotangent took for a list (found by
    tests/program_families.py, seed 39)."""
    x, along = r(3), r(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = call_twice(sg.grad(starred_rest_of_non_arrays, mode=mode), x)
        (product,) = sg.hvp(starred_rest_of_non_arrays, (x,), (along,), mode=mode)
    assert_close(gradient, numeric_grad(starred_rest_of_non_arrays, [x], 0), rtol=1e-5, atol=1e-6)
    tape_gradient = sg.grad(starred_rest_of_non_arrays, mode="tape")
    expected = numeric_grad(lambda x: np.sum(tape_gradient(x) * along), [x], 0)
    assert_close(product, expected, rtol=1e-4, atol=1e-6)


def product_and_sine(a, b):
    return a * b, np.sin(a) + b


def unpacked_in_a_loop_one_part_unused(x, y):
    t = x * 0.5
    for _ in range(2):
        t, unused = product_and_sine(t, x)  # noqa: F841
    return np.sum(np.sin(t)) * y


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_hessian_through_an_unpacking_whose_other_part_is_unused(mode):
    """The unused part's cotangent is None and its tangent 0.0, which once reached
    ``unbroadcast`` against an array and failed (tests/program_fuzzer.py, seed 65)."""
    x, y, along = r(3), 0.7, r(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (product, _) = sg.hvp(unpacked_in_a_loop_one_part_unused, (x, y), (along, 0.0), mode=mode)
    tape_gradient = sg.grad(unpacked_in_a_loop_one_part_unused, mode="tape")
    expected = numeric_grad(lambda x: np.sum(tape_gradient(x, y) * along), [x], 0)
    assert_close(product, expected, rtol=1e-4, atol=1e-6)
