"""sg.vmap: the batched run against a plain loop over examples, and its fallbacks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg


def loop(f, in_axes, args, out_axis=0):
    """The oracle: f applied to each example by hand, results stacked."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    results = [
        f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)])
        for i in range(size)
    ]
    if isinstance(results[0], tuple):
        return tuple(np.stack(parts, axis=out_axis) for parts in zip(*results))
    return np.stack(results, axis=out_axis)


def mlp(w, x):
    return np.tanh(x @ w["a"] + w["b"]) @ w["c"]


def softmax_rows(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def norms(x, y):
    return np.sqrt(np.sum(x**2)), np.sum(x * y, axis=0)


@pytest.mark.parametrize("seed", range(3))
def test_batched_runs_agree_with_a_loop_over_examples(seed):
    rng = np.random.default_rng(seed)
    params = {"a": rng.normal(size=(3, 4)), "b": rng.normal(size=4), "c": rng.normal(size=4)}
    xs = rng.normal(size=(7, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # these batch: no per-example warning
        got = sg.vmap(mlp, in_axes=(None, 0))(params, xs)
        assert np.allclose(got, loop(mlp, (None, 0), (params, xs)))
        zs = rng.normal(size=(2, 6, 5))
        got = sg.vmap(softmax_rows, in_axes=1, out_axes=1)(zs)
        assert np.allclose(got, loop(softmax_rows, (1,), (zs,), out_axis=1))
        xs, ys = rng.normal(size=(5, 3, 2)), rng.normal(size=(3, 5, 2))
        got = sg.vmap(norms, in_axes=(0, 1))(xs, ys)
        expected = loop(norms, (0, 1), (xs, ys))
        assert all(np.allclose(g, e) for g, e in zip(got, expected))


def per_example_loss(w, x, y):
    return np.sum((np.tanh(x @ w) - y) ** 2)


def relu_layer_loss(w, v, x, y):
    h = np.maximum(x @ w, 0.0)
    return (h @ v - y) ** 2


@pytest.mark.parametrize("wrt", [0, 1, (0, 1)])
def test_per_example_gradients_run_batched_and_match_finite_differences(wrt):
    """vmap of grad runs the generated gradient once on the whole batch (no per-example
    warning), for parameters shared by the batch and for mapped arguments."""
    rng = np.random.default_rng(4)
    w, xs, ys = rng.normal(size=3), rng.normal(size=(6, 3)), rng.normal(size=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mapped = sg.vmap(sg.grad(per_example_loss, wrt=wrt), in_axes=(None, 0, 0))
        first, second = mapped(w, xs, ys), mapped(w, xs, ys)
    for got in (first, second):
        parts = got if isinstance(wrt, tuple) else (got,)
        for part, position in zip(parts, wrt if isinstance(wrt, tuple) else (wrt,)):
            assert part.shape == (6, *np.shape((w, xs[0])[position]))
            for i in range(6):
                expected = numeric_grad(per_example_loss, (w, xs[i], ys[i]), position)
                assert np.allclose(part[i], expected, atol=1e-7)


def test_per_example_values_and_gradients_of_a_relu_layer_run_batched():
    rng = np.random.default_rng(5)
    w, v = rng.normal(size=(3, 8)), rng.normal(size=8)
    xs, ys = rng.normal(size=(9, 3)), rng.normal(size=9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values, (dw, dv) = sg.vmap(
            sg.value_and_grad(relu_layer_loss, wrt=(0, 1)), in_axes=(None, None, 0, 0)
        )(w, v, xs, ys)
    assert np.allclose(values, [relu_layer_loss(w, v, xs[i], ys[i]) for i in range(9)])
    for i in range(9):
        assert np.allclose(dw[i], numeric_grad(relu_layer_loss, (w, v, xs[i], ys[i]), 0))
        assert np.allclose(dv[i], numeric_grad(relu_layer_loss, (w, v, xs[i], ys[i]), 1))


def test_per_example_gradients_of_parameters_in_a_dict_run_per_example_and_say_so():
    rng = np.random.default_rng(6)
    params = {"a": rng.normal(size=(3, 4)), "b": rng.normal(size=4), "c": rng.normal(size=4)}
    xs = rng.normal(size=(4, 3))
    with pytest.warns(sg.S2SGradWarning, match="once per example"):
        grads = sg.vmap(sg.grad(mlp), in_axes=(None, 0))(params, xs)
    for i in range(4):
        expected = numeric_grad(mlp, (params, xs[i]), 0)
        assert all(np.allclose(grads[k][i], expected[k], atol=1e-7) for k in params)


def test_gradient_through_vmap_matches_finite_differences():
    rng = np.random.default_rng(5)
    xs = rng.normal(size=(4, 3))

    def total(w):
        return np.sum(sg.vmap(lambda w, x: np.sin(x @ w) ** 2, in_axes=(None, 0))(w, xs))

    w = rng.normal(size=3)
    expected = numeric_grad(total, (w,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode in ("tape", "auto"):
            assert np.allclose(sg.grad(total, mode=mode)(w), expected, atol=1e-7)


def test_value_dependent_branches_run_per_example_and_warn_once():
    def branchy(x):
        if x.sum() > 0:
            return x * 2
        return -x

    xs = np.random.default_rng(6).normal(size=(5, 3))
    mapped = sg.vmap(branchy)
    with pytest.warns(sg.S2SGradWarning, match=r"once per example.*bool\(\)"):
        assert np.allclose(mapped(xs), loop(branchy, (0,), (xs,)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.allclose(mapped(-xs), loop(branchy, (0,), (-xs,)))


def test_a_function_that_sees_a_batch_differently_is_caught_by_the_first_example():
    def typed(x):
        return x.sum() if isinstance(x, np.ndarray) else x * 0

    with pytest.warns(sg.S2SGradWarning, match="differs from example 0"):
        got = sg.vmap(typed)(np.arange(12.0).reshape(4, 3))
    assert np.allclose(got, [3.0, 12.0, 21.0, 30.0])


def test_results_that_do_not_depend_on_the_batch_are_repeated():
    got = sg.vmap(lambda x, c: c * 2.0, in_axes=(0, None))(np.ones((3, 2)), np.arange(2.0))
    assert np.array_equal(got, np.tile(np.arange(2.0) * 2, (3, 1)))


@pytest.mark.parametrize(
    "in_axes, args, message",
    [
        ((0, 0), (np.ones((3, 2)), np.ones((4, 2))), "different lengths"),
        ((0,), (np.ones(3), np.ones(3)), "1 entries, but the function was called with 2"),
        (2, (np.ones((3, 2)),), "no axis 2"),
        (None, (np.ones(3),), "no argument is mapped"),
        (0, (np.ones((0, 2)),), "empty"),
    ],
)
def test_bad_axes_are_refused_clearly(in_axes, args, message):
    with pytest.raises(ValueError, match=message):
        sg.vmap(lambda *a: a[0], in_axes=in_axes)(*args)


def test_bad_specs_are_refused_when_vmap_is_called():
    with pytest.raises(TypeError, match="in_axes takes ints"):
        sg.vmap(np.sin, in_axes="0")
    with pytest.raises(TypeError, match="takes a function"):
        sg.vmap(3)
