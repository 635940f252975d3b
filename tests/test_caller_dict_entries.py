"""Entries a function stores into a dict its caller gives it (``bn_param['running_mean'] =
m``): source transformation gives each entry a variable, which carries the derivative to
the reads after the store, and stores the plain value into the caller's dict, as calling
the function does. Where a read could not be followed (an alias of the dict, a store under
a condition read after it, ``d.get`` after a store), it is refused naming the line, and
mode "auto" takes the tape.

Forward mode with such a dict held constant (``sg.jvp`` with a ``None`` tangent,
``sg.jacfwd``) used to give wrong tangents where the entry was read through an alias; a
forward-mode Jacobian computed column by column now starts each column from the dict's
first entries, and leaves the caller's dict as one call would.

Gradients are checked against central differences at random points, first and second
order, for several shapes, each transform called twice."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = "test_caller_dict_entries.py"
R = np.random.default_rng(1207)
SHAPES = [(4, 3), (2, 5), (6, 1)]


def running_mean_layer(x, gamma, bn_param):
    momentum = bn_param.get("momentum", 0.9)
    mean = x.mean(axis=0)
    var = x.var(axis=0)
    out = gamma * (x - mean) / np.sqrt(var + 1e-5)
    bn_param["running_mean"] = momentum * bn_param["running_mean"] + (1 - momentum) * mean
    bn_param["running_var"] = momentum * bn_param["running_var"] + (1 - momentum) * var
    return np.sum(np.tanh(out)) + np.sum(bn_param["running_mean"] ** 2)


def stored_twice(x, gamma, stats):
    stats["h"] = np.sin(x) * gamma
    for _ in range(2):
        stats["h"] = stats["h"] * x + stats["offset"]
    return np.sum(stats["h"] ** 2)


def mode_dependent(x, gamma, bn_param):
    running = bn_param.get("running_mean", np.zeros(x.shape[1]))
    if bn_param["mode"] == "train":
        running = 0.9 * running + 0.1 * x.mean(axis=0)
    bn_param["running_mean"] = running
    return np.sum(np.exp(0.1 * x) * gamma * running)


FUNCTIONS = [running_mean_layer, stored_twice, mode_dependent]


def _stats(columns):
    return {
        "mode": "train",
        "running_mean": np.linspace(0.1, 0.5, columns),
        "running_var": np.ones(columns),
        "offset": np.full(columns, 0.3),
    }


def _arguments(shape):
    return [R.normal(size=shape), R.normal(size=shape[1])]


def _fresh(f, columns):
    return lambda *args: f(*args, _stats(columns))


def _same_entries(got, expected):
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, np.ndarray):
            assert type(got[key]) is np.ndarray  # the primal value, not a tape value
            assert_close(got[key], value, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f", FUNCTIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_source_transformation_follows_the_entries(f, shape):
    args = _arguments(shape)
    expected = [numeric_grad(_fresh(f, shape[1]), args, i) for i in (0, 1)]
    plain = _stats(shape[1])
    f(*args, plain)
    for mode in ("s2s", "auto", "tape"):
        transformed = sg.grad(f, wrt=(0, 1), mode=mode)
        for _ in range(2):
            stats = _stats(shape[1])
            got = transformed(*args, stats)
            for g, e in zip(got, expected):
                assert_close(g, e, rtol=1e-5, atol=1e-7)
            _same_entries(stats, plain)


@pytest.mark.parametrize("f", FUNCTIONS)
def test_second_order_and_forward_mode(f):
    x, gamma = _arguments((3, 2))
    direction = R.normal(size=x.shape)
    gradient = sg.grad(lambda x: f(x, gamma, _stats(2)), mode="tape")
    expected_hessian = numeric_jvp(gradient, [x], 0, direction)
    expected_tangent = numeric_jvp(lambda x: f(x, gamma, _stats(2)), [x], 0, direction)
    plain = _stats(2)
    f(x, gamma, plain)
    for mode in ("s2s", "auto", "tape"):
        stats = _stats(2)
        hessian = sg.hessian(f, mode=mode)(x, gamma, stats)
        product = np.tensordot(hessian, direction, axes=x.ndim)
        assert_close(product, expected_hessian, rtol=1e-4, atol=1e-6)
        _same_entries(stats, plain)
        stats = _stats(2)
        jacobian = sg.jacfwd(f, mode=mode)(x, gamma, stats)
        assert_close(np.sum(jacobian * direction), expected_tangent, rtol=1e-5, atol=1e-7)
        _same_entries(stats, plain)


def test_generated_code_stores_the_plain_value_and_reads_the_variable():
    text = sg.source(sg.grad(running_mean_layer))
    assert "store_entry(bn_param, 'running_mean'" in text
    assert "owned(" not in text  # the caller's dict itself, not a copy
    assert "bn_param['running_mean'] ** 2" not in text.split("store_entry")[-1]


def shared_dict(x, a, b):
    a["k"] = x * 2.0
    return np.sum(b["k"] ** 2)


TABLE = {}


def global_alias(x, d):
    d["k"] = x * 2.0
    return np.sum(TABLE["k"] ** 2)


def stored_under_a_condition(x, d):
    if np.sum(x) > -1e9:
        d["k"] = x * 2.0
    return np.sum(d["k"] ** 2)


def read_with_get(x, d):
    d["k"] = x * 2.0
    return np.sum(d.get("k") ** 2)


def stored_then_changed(x, d):
    y = x * 2.0
    d["k"] = y
    y[0] = 5.0
    return np.sum(d["k"] * x)


def _shared():
    d = {}
    return [d, d]


def _global():
    TABLE.clear()
    return [TABLE]


REFUSED = [
    (shared_dict, _shared),
    (global_alias, _global),
    (stored_under_a_condition, lambda: [{"k": np.ones(3)}]),
    (read_with_get, lambda: [{}]),
    (stored_then_changed, lambda: [{}]),
]


@pytest.mark.parametrize(("f", "make"), REFUSED)
def test_reads_that_cannot_be_followed_are_refused_and_taped(f, make):
    x = R.normal(size=3)

    def fresh(x):
        return f(x, *make())

    expected = numeric_grad(fresh, [x], 0)
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.grad(f, mode="s2s")(x, *make())
    assert f"{HERE}:" in str(refused.value)
    direction = R.normal(size=3)
    tangents = (direction,) + (None,) * len(make())
    with pytest.raises(sg.UnsupportedError):
        sg.jvp(f, (x, *make()), tangents, mode="s2s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode in ("auto", "tape"):
            assert_close(sg.grad(f, mode=mode)(x, *make()), expected, rtol=1e-5, atol=1e-7)
            _, tangent = sg.jvp(f, (x, *make()), tangents, mode=mode)
            assert_close(tangent, np.sum(expected * direction), rtol=1e-5, atol=1e-7)
            jacobian = sg.jacfwd(f, mode=mode)(x, *make())
            assert_close(jacobian, expected, rtol=1e-5, atol=1e-7)


def updated_in_a_loop(x, d):
    for _ in range(3):
        d["k"] = d["k"] * x
    return np.sum(d["k"])


def test_forward_jacobian_columns_start_from_the_same_entries():
    """Column by column, each run of a function updating a dict it is given starts from
    the entries the first started from; the caller's dict is left as one call leaves it."""
    x = R.normal(size=4)
    expected = numeric_grad(lambda x: updated_in_a_loop(x, {"k": np.ones(4)}), [x], 0)
    plain = {"k": np.ones(4)}
    updated_in_a_loop(x, plain)
    for mode in ("auto", "tape"):
        stats = {"k": np.ones(4)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jacobian = sg.jacfwd(updated_in_a_loop, mode=mode)(x, stats)
        assert_close(jacobian, expected, rtol=1e-5, atol=1e-7)
        assert_close(stats["k"], plain["k"], rtol=1e-12, atol=1e-12)


def default_then_varied(x, options):
    scale = options.get("scale", np.ones(x.shape))
    if options["update"]:
        scale = 0.5 * scale + x
    return np.sum(np.sin(x) * scale)


@pytest.mark.parametrize("shape", [(3,), (2, 4)])
def test_a_constant_call_whose_variable_is_differentiated_later(shape):
    """``scale = options.get(k, np.ones(n))`` computes a constant; ``scale`` is
    differentiated after the branch. The call is no longer dispatched at run time (where
    its float default looked differentiated, and ``dict.get`` has no source)."""
    x = R.normal(size=shape)
    options = {"update": True, "scale": R.normal(size=shape)}
    expected = numeric_grad(lambda x: default_then_varied(x, options), [x], 0)
    for mode in ("s2s", "auto", "tape"):
        transformed = sg.grad(default_then_varied, mode=mode)
        for _ in range(2):
            assert_close(transformed(x, options), expected, rtol=1e-5, atol=1e-7)
    assert "dynamic_vjp" not in sg.source(sg.grad(default_then_varied))
    direction = R.normal(size=shape)
    hvp = sg.hvp(lambda x: default_then_varied(x, options), (x,), (direction,), mode="s2s")
    gradient = sg.grad(lambda x: default_then_varied(x, options), mode="tape")
    assert_close(hvp[0], numeric_jvp(gradient, [x], 0, direction), rtol=1e-4, atol=1e-6)


# A two-layer network written as CS231n's layer library writes it: helpers returning
# (out, cache), x.reshape(...).dot(w) (which the tape cannot follow), and batch
# normalisation keeping its running statistics in the dict the caller passes.


def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1).dot(w) + b
    return out, (x, w, b)


def batchnorm_forward(x, gamma, beta, bn_param):
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    _, width = x.shape
    running_mean = bn_param.get("running_mean", np.zeros(width, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(width, dtype=x.dtype))
    if mode == "train":
        sample_mean = np.mean(x, axis=0)
        sample_var = np.var(x, axis=0)
        x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
        out = gamma * x_hat + beta
        running_mean = momentum * running_mean + (1 - momentum) * sample_mean
        running_var = momentum * running_var + (1 - momentum) * sample_var
        cache = (x, x_hat, sample_mean, sample_var, gamma, eps)
    else:
        out = gamma * (x - running_mean) / np.sqrt(running_var + eps) + beta
        cache = None
    bn_param["running_mean"] = running_mean
    bn_param["running_var"] = running_var
    return out, cache


def softmax_loss(scores, y):
    shifted = scores - np.max(scores, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.sum(log_probs[np.arange(scores.shape[0]), y]) / scores.shape[0]


def two_layer_loss(params, X, y, bn_param):
    a, _ = affine_forward(X, params["W1"], params["b1"])
    h, _ = batchnorm_forward(a, params["gamma"], params["beta"], bn_param)
    scores, _ = affine_forward(np.maximum(0, h), params["W2"], params["b2"])
    return softmax_loss(scores, y) + 5e-3 * np.sum(params["W1"] ** 2)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_layer_library_network_with_batch_normalisation(mode):
    n, d, h, c = 6, 4, 3, 3
    X, y = R.normal(size=(n, d)), R.integers(0, c, size=n)
    params = {
        "W1": R.normal(size=(d, h)) * 0.5,
        "b1": R.normal(size=h) * 0.1,
        "gamma": 1.0 + 0.1 * R.normal(size=h),
        "beta": 0.1 * R.normal(size=h),
        "W2": R.normal(size=(h, c)) * 0.5,
        "b2": R.normal(size=c) * 0.1,
    }

    def stats():
        return {"mode": "train", "running_mean": np.full(h, 0.1), "running_var": np.ones(h)}

    expected = {
        k: numeric_grad(lambda v, k=k: two_layer_loss({**params, k: v}, X, y, stats()), [v], 0)
        for k, v in params.items()
    }
    plain = stats()
    two_layer_loss(params, X, y, plain)
    transformed = sg.grad(two_layer_loss, mode=mode)
    for _ in range(2):
        bn_param = stats()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # by source transformation, no fallback
            got = transformed(params, X, y, bn_param)
        assert_close(got, expected, rtol=1e-5, atol=1e-7)
        _same_entries(bn_param, plain)


def _dict_nested_deep(entries, depth):
    holder = entries
    for _ in range(depth):
        holder = [holder]
    return holder


def running_statistics_twice(x, stats, model):
    stats["mean"] = np.mean(x * 2.0)
    return np.sum(x**2) * model[0] if isinstance(model, list) else np.sum(x**2)


@pytest.mark.parametrize("depth", [1, 4, 9])
def test_a_dict_another_argument_holds_at_any_depth_is_refused(depth):
    # the check once stopped four levels down: a deeper holder went unseen
    stats = {}
    model = [1.0, _dict_nested_deep(stats, depth)]
    with pytest.raises(sg.S2SGradError, match="another of its arguments holds|caller then sees"):
        sg.grad(running_statistics_twice, mode="s2s")(np.ones(3), stats, model)
