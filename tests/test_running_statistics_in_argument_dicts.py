"""Batch normalisation in training mode keeps running statistics in a dict its caller
passes in (``bn_param['running_mean'] = ...``, CS231n's layer library): a side effect the
caller reads after the call, so every transform must leave the primal values there, as
calling the function does.

Source transformation used to differentiate a private copy of such a dict (the caller's
entries stayed as they were; reading an entry back after writing it crashed with an
IndexError from generated code), and mode "auto" refused the layer outright, since the
alias check took ``bn_param['running_mean'] = ...`` for an array's item write. Now a
parameter written under a string key is a dict: where the function writes it itself,
source transformation gives each entry a variable and the dict the primal value
(``test_caller_dict_entries.py``), and so where a helper it calls writes it (the helper
is inlined first).
Gradients are checked against central differences, first and second order, and forward
mode, with the dict made fresh for each evaluation."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = "test_running_statistics_in_argument_dicts.py"
R = np.random.default_rng(58)


def batchnorm_forward(x, gamma, beta, bn_param):
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    running_mean = bn_param.get("running_mean", np.zeros(x.shape[1]))
    running_var = bn_param.get("running_var", np.zeros(x.shape[1]))
    if bn_param["mode"] == "train":
        mean = x.mean(axis=0)
        var = x.var(axis=0)
        out = gamma * (x - mean) / np.sqrt(var + eps) + beta
        running_mean = momentum * running_mean + (1 - momentum) * mean
        running_var = momentum * running_var + (1 - momentum) * var
        cache = (mean, var, eps)
    else:
        out = gamma * (x - running_mean) / np.sqrt(running_var + eps) + beta
        cache = None
    bn_param["running_mean"] = running_mean
    bn_param["running_var"] = running_var
    return out, cache


def layer_loss(x, gamma, beta, bn_param):
    out, _ = batchnorm_forward(x, gamma, beta, bn_param)
    return np.sum(np.sin(out) * np.arange(out.size).reshape(out.shape))


def layer_loss_reading_back(x, gamma, beta, bn_param):
    out, _ = batchnorm_forward(x, gamma, beta, bn_param)
    return np.sum(np.sin(out)) + np.sum(bn_param["running_mean"] ** 2)


def stores_a_mean(x, stats):
    stats["mean"] = x.mean(axis=0)
    return np.sum(x**2)


def stores_and_reads_back(x, stats):
    stats["mean"] = x.mean(axis=0) * 2.0
    return np.sum(stats["mean"] ** 2) + np.sum(x**3)


def updates_an_average(x, stats):
    stats["mean"] = 0.9 * stats["mean"] + 0.1 * x.mean(axis=0)
    return np.sum(np.tanh(x) * stats["mean"])


def _fresh_stats(columns):
    return {"mode": "train", "running_mean": np.full(columns, 0.5), "running_var": np.ones(columns)}


def _with_fresh(f, make):
    """``f`` called with a new dict from ``make`` each time (its entries change per call)."""

    def called(*args):
        return f(*args, make())

    return called


LAYERS = [layer_loss, layer_loss_reading_back]
STORES = [stores_a_mean, stores_and_reads_back, updates_an_average]


def _layer_arguments(rows, columns):
    return [R.normal(size=(rows, columns)), R.normal(size=columns), R.normal(size=columns)]


@pytest.mark.parametrize("f", LAYERS)
@pytest.mark.parametrize("shape", [(5, 3), (2, 4), (7, 1)])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_layer_gradient_and_running_statistics(f, shape, mode):
    args = _layer_arguments(*shape)
    fresh = _with_fresh(f, lambda: _fresh_stats(shape[1]))
    wrt = (0, 1, 2)
    expected = [numeric_grad(fresh, list(args), i) for i in wrt]
    for _ in range(2):  # a first and a later call
        stats, plain = _fresh_stats(shape[1]), _fresh_stats(shape[1])
        f(*args, plain)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = sg.grad(f, wrt=wrt, mode=mode)(*args, stats)
        for g, e in zip(got, expected):
            assert_close(g, e, rtol=1e-5, atol=1e-7)
        for key in ("running_mean", "running_var"):
            assert type(stats[key]) is np.ndarray  # the primal value, no tape value
            assert_close(stats[key], plain[key], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f", LAYERS)
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_layer_forward_mode_and_second_order(f, mode):
    x0, gamma, beta = _layer_arguments(4, 3)
    direction = R.normal(size=(4, 3))

    def along(x):
        return f(x, gamma, beta, _fresh_stats(3))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, tangent = sg.jvp(along, (x0,), (direction,), mode=mode)
        assert_close(value, along(x0), rtol=1e-12)
        assert_close(tangent, numeric_jvp(along, [x0], 0, direction), rtol=1e-5)
        product = sg.hvp(along, (x0,), (direction,), mode=mode)[0]
        gradient = sg.grad(along, mode="tape")
        expected = numeric_jvp(gradient, [x0], 0, direction)
    assert_close(product, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("f", STORES)
@pytest.mark.parametrize("shape", [(4, 3), (1, 2)])
def test_stored_entries_hold_primal_values(f, shape):
    x = R.normal(size=shape)
    fresh = _with_fresh(f, lambda: {"mean": np.ones(shape[1])})
    expected = numeric_grad(fresh, [x], 0)
    plain = {"mean": np.ones(shape[1])}
    f(x, plain)
    for mode in ("s2s", "auto", "tape"):
        stats = {"mean": np.ones(shape[1])}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(sg.grad(f, mode=mode)(x, stats), expected, rtol=1e-5, atol=1e-7)
        assert type(stats["mean"]) is np.ndarray
        assert_close(stats["mean"], plain["mean"], rtol=1e-12, atol=1e-12)


def test_a_structured_array_field_write_stays_refused():
    """``rec['a'] = ...`` is no dict entry when ``rec`` is a structured array: a view of
    the field read afterwards sees the change, which neither engine follows."""

    def f(x):
        rec = np.zeros(3, dtype=[("a", float), ("b", float)])
        view = rec["a"]
        rec["a"] = x * 2.0
        return np.sum(view * x)

    for mode in ("s2s", "auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(sg.S2SGradError) as refused:
                sg.grad(f, mode=mode)(np.ones(3))
        assert f"{HERE}:" in str(refused.value)


def layer_with_its_own_statistics(x, gamma, beta):
    bn_param = {"mode": "train"}
    out, _ = batchnorm_forward(x, gamma, beta, bn_param)
    return np.sum(out**3) + np.sum(bn_param["running_var"])


def test_a_tuple_of_entries_does_not_hold_the_dict():
    """``cache = (mean, var, eps)``, ``eps`` an entry of ``bn_param``, holds no part of
    ``bn_param`` that ``bn_param['running_mean'] = ...`` changes: the refusal names the
    entry write (which the transformer does not follow), not a copy of the dict in
    ``cache``; mode "auto" differentiates the layer on the tape."""
    args = _layer_arguments(5, 3)
    with pytest.raises(sg.UnsupportedError, match="writing entries of the dict 'bn_param'"):
        sg.grad(layer_with_its_own_statistics, mode="s2s")(*args)
    expected = numeric_grad(layer_with_its_own_statistics, list(args), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(layer_with_its_own_statistics, mode="auto")(*args)
    assert_close(got, expected, rtol=1e-5, atol=1e-7)


def _holds_the_dict_through_a_list(x):
    d = {"a": x * 1.0}
    kept = []
    cache = (kept, 2.0)
    kept.append(d)
    d["a"] = x * 3.0
    return np.sum(cache[0][0]["a"] ** 2)


def _holds_the_dict_itself(x):
    d = {"a": x * 1.0}
    cache = (d, 1.0)
    d["a"] = x * 3.0
    return np.sum(cache[0]["a"] ** 2)


@pytest.mark.parametrize("f", [_holds_the_dict_through_a_list, _holds_the_dict_itself])
def test_a_tuple_holding_the_dict_sees_the_entry_write(f):
    x = R.normal(size=3)
    with pytest.raises(sg.UnsupportedError):
        sg.grad(f, mode="s2s")(x)
    for mode in ("auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(sg.grad(f, mode=mode)(x), 18.0 * x, rtol=1e-12)


def stores_by_position(x, stats):
    stats[0] = x * 2.0
    return np.sum(stats[0] ** 2)


def stores_each_step(x, stats):
    for t in range(3):
        stats[t] = np.tanh(x * t)
    return np.sum(x**2) + np.sum(stats[2])


def stores_under_a_name(x, stats, key="mean"):
    stats[key] = x.mean(axis=0)
    return np.sum(stats[key] ** 2) + np.sum(x**3)


@pytest.mark.parametrize("f", [stores_by_position, stores_each_step, stores_under_a_name])
@pytest.mark.parametrize("shape", [(3,), (4, 2)])
def test_entries_under_other_keys(f, shape):
    """Keys that are no string literal do not mark the argument as a dict: the call's
    dict does. Source transformation used to write into a copy taken for an array (a
    KeyError from generated code reading the entry back, or the caller's dict left
    empty); it now refuses naming the line, and mode "auto" tapes it."""
    x = R.normal(size=shape)
    expected = numeric_grad(_with_fresh(f, dict), [x], 0)
    plain: dict = {}
    f(x, plain)
    with pytest.raises(sg.UnsupportedError, match="dict 'stats'") as refused:
        sg.grad(f, mode="s2s")(x, {})
    assert f"{HERE}:" in str(refused.value)
    for mode in ("auto", "tape"):
        stats: dict = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(sg.grad(f, mode=mode)(x, stats), expected, rtol=1e-5, atol=1e-7)
        assert stats.keys() == plain.keys()
        for key in stats:
            assert type(stats[key]) is type(plain[key])  # the primal value, no tape value
            assert_close(stats[key], plain[key], rtol=1e-12, atol=1e-12)


def test_an_array_argument_written_by_position_stays_transformed():
    def f(x, buffer):
        buffer[0] = x[0] * 2.0
        return np.sum(buffer * x)

    x, buffer = R.normal(size=3), np.zeros(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        got = sg.grad(f, mode="auto")(x, buffer)
    assert_close(got, numeric_grad(lambda v: f(v, np.zeros(3)), [x], 0), rtol=1e-6)
