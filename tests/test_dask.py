"""Gradients of functions of Dask arrays: lazy until computed, right, and on a real cluster."""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("dask.distributed")
from dask.callbacks import Callback  # noqa: E402


class Computations(Callback):
    """Counts the computations Dask runs while it is active."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def _start(self, graph):
        self.count += 1


def logistic(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def logistic_gradient(w, X, y):
    """The analytic gradient: X^T (sigmoid(X w) - y) / n."""
    return X.T @ (1.0 / (1.0 + np.exp(-(X @ w))) - y) / len(y)


def mlp(params, X, y):
    hidden = np.tanh(X @ params["W"] + params["b"])
    p = 1.0 / (1.0 + np.exp(-(hidden @ params["v"])))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def data(seed, rows=400, columns=5, chunk=100):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, columns))
    y = (X @ rng.normal(size=columns) + rng.normal(size=rows) > 0).astype(float)
    return X, y, da.from_array(X, chunks=(chunk, columns)), da.from_array(y, chunks=chunk)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
def test_gradients_stay_lazy_and_are_right(mode, transform):
    X, y, Xd, yd = data(0)
    w = np.random.default_rng(1).normal(size=5)
    differentiated = getattr(sg, transform)(logistic, mode=mode)
    for _ in ("first call", "second call"):
        with Computations() as computations:
            result = differentiated(w, Xd, yd)
        assert computations.count == 0
        gradient = result[1] if transform == "value_and_grad" else result
        assert isinstance(gradient, da.Array)
        assert np.allclose(gradient.compute(), logistic_gradient(w, X, y), rtol=1e-12)
        if transform == "value_and_grad":
            assert np.isclose(result[0].compute(), logistic(w, X, y), rtol=1e-12)


def test_a_model_gradient_wrt_a_dict_matches_finite_differences_lazily():
    X, y, Xd, yd = data(2)
    rng = np.random.default_rng(3)
    params = {"W": 0.3 * rng.normal(size=(5, 4)), "b": np.zeros(4), "v": rng.normal(size=4)}
    with Computations() as computations:
        gradient = sg.grad(mlp, mode="s2s")(params, Xd, yd)
    assert computations.count == 0
    (gradient,) = dask.compute(gradient)
    for name, value in params.items():
        numeric = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            step = np.zeros_like(value)
            step[index] = 1e-6
            plus = mlp({**params, name: value + step}, X, y)
            minus = mlp({**params, name: value - step}, X, y)
            numeric[index] = (plus - minus) / 2e-6
        assert np.allclose(gradient[name], numeric, rtol=1e-6, atol=1e-9), name


def test_vjp_jvp_and_a_gradient_wrt_the_dask_array_itself_stay_lazy():
    X, y, Xd, yd = data(4)
    w = np.random.default_rng(5).normal(size=5)
    with Computations() as computations:
        out, pullback = sg.vjp(logistic, w, Xd, yd, mode="s2s")
        dw, dX, _ = pullback(1.0)
        _, tangent = sg.jvp(logistic, (w, Xd, yd), (np.ones(5), np.zeros_like(X), np.zeros(400)))
        gX = sg.grad(logistic, wrt=1, mode="s2s")(w, Xd, yd)
    assert computations.count == 0
    assert np.allclose(dw.compute(), logistic_gradient(w, X, y), rtol=1e-12)
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    assert np.allclose(gX.compute(), np.outer(p - y, w) / len(y), rtol=1e-12)
    assert np.isclose(tangent.compute(), np.sum(logistic_gradient(w, X, y)), rtol=1e-12)


def test_code_specialised_to_one_shape_is_not_reused_for_another_or_for_numpy():
    dlogistic = sg.grad(logistic, mode="s2s")
    w = np.random.default_rng(8).normal(size=5)
    for rows, chunk in [(400, 100), (2000, 250), (400, 400)]:
        X, y, Xd, yd = data(rows, rows=rows, chunk=chunk)
        for _ in range(2):
            assert np.allclose(dlogistic(w, X, y), logistic_gradient(w, X, y), rtol=1e-12)
            gradient = dlogistic(w, Xd, yd)
            assert isinstance(gradient, da.Array)  # not the NumPy specialisation's result
            assert np.allclose(gradient.compute(), logistic_gradient(w, X, y), rtol=1e-12)


def test_the_tape_refuses_dask_arrays_clearly():
    _, _, Xd, yd = data(6)
    with pytest.raises(
        sg.UnsupportedError,
        match=r"test_dask\.py:\d+: logistic is given a "
        r"dask\.array\.core\.Array.*mode='s2s'",
    ):
        sg.grad(logistic, mode="tape")(np.zeros(5), Xd, yd)


def test_a_real_cluster_computes_the_gradient_and_a_descent_loop():
    X, y, Xd, yd = data(7, rows=2000, chunk=250)  # 8 chunks for 2 workers
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        dlogistic = sg.grad(logistic)
        w_cluster, w_numpy = np.zeros(5), np.zeros(5)
        for _ in range(3):
            gradient = dlogistic(w_cluster, Xd, yd).compute()
            assert np.allclose(gradient, logistic_gradient(w_numpy, X, y), rtol=1e-10, atol=0)
            w_cluster = w_cluster - 0.5 * gradient
            w_numpy = w_numpy - 0.5 * logistic_gradient(w_numpy, X, y)
    assert np.allclose(w_cluster, w_numpy, rtol=1e-10)
