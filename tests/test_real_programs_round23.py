"""Programs written the way users write them (textbook models from scratch, scientific
simulations, peers' examples), checked in every mode against central differences, first
order and, where it was asked for, second order.

Found here:

* the Hessian-vector product of a micrograd-style MLP (a list of layers of neurons, as
  dicts) called as ``mlp_loss(params["layers"], xs, ys)`` crashed in s2s and auto with
  NumPy's "inhomogeneous shape": the callee, compiled without knowing its parameter held a
  list, added its callees' cotangents with ``+``, whose forward-mode derivative is that of
  arrays.
* ``np.add.at(sums, segments, E[tokens])`` into ``sums = np.zeros(...)`` was refused on the
  tape (mode="tape", and the Hessian in mode="auto").
* the Hessian of a neural ODE whose integrator takes the vector field as an argument was
  refused in mode="auto": the tape, recording the s2s gradient, could not follow the
  backward sweep's ``dseq[i] = ...`` into its ``zeros_like_value`` buffer.
* ``np.concatenate([y, [t]])`` (a neural ODE's vector field of time) with a plain ``y`` was
  refused on the tape: NumPy handed the tape neither its list nor ``t`` (so too
  ``np.stack``, ``np.hstack``, ``np.vstack``, ``np.column_stack``, ``np.dstack``).
* ``sg.jvp`` of a function returning a NumPy float (a GP's marginal likelihood) gave a 0-d
  array tangent in s2s and auto, a float on the tape.
* forward mode through ``{k: v - lr * g[k] for k, v in params.items()}`` (the loss after
  one SGD step) was refused in s2s with "1 arguments for 0 parameters": the comprehension's
  ``dict(pairs)`` had no forward derivative.
* REINFORCE drawing its actions with ``rng.choice(n, p=p)`` of the differentiated ``p`` is
  refused in s2s, which advised only passing ``p`` positionally; it now names
  ``sg.stop_gradient(p)``, with which every mode gives the score-function gradient.
* forward mode in s2s through ``functools.reduce(lambda h, W: np.tanh(h @ W), Ws, x)`` was
  refused as "3 arguments for 0 parameters"; it now says reduce has no source to transform.
"""

import functools
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp
from scipy.special import logsumexp, softmax

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
R = np.random.default_rng(2323)


def _neuron(n, x):
    act = n["b"]
    for wi, xi in zip(n["w"], x):
        act = act + wi * xi
    return np.tanh(act)


def _mlp(layers, x):
    for layer in layers:
        outs = [_neuron(n, x) for n in layer]
        x = outs[0] if len(outs) == 1 else outs
    return x


def _micrograd_loss(layers, xs, ys):
    return sum((_mlp(layers, x) - y) ** 2 for x, y in zip(xs, ys))


XS = [list(R.normal(size=3)) for _ in range(3)]
YS = [1.0, -1.0, 1.0]


def micrograd_params(params):
    return _micrograd_loss(params["layers"], XS, YS) + 0.01 * params["scale"] ** 2


def embedding_bag(E, tokens, segments, target):
    sums = np.zeros((len(target), E.shape[1]))
    np.add.at(sums, segments, E[tokens])
    counts = np.bincount(segments, minlength=len(target))[:, None]
    return np.sum((sums / counts - target) ** 2)


def _field(params, y, t):
    h = np.tanh(params["W1"] @ np.concatenate([y, [t]]) + params["b1"])
    return params["W2"] @ h


def _odeint(fn, y0, ts, params):
    ys = [y0]
    y = y0
    for t0, t1 in zip(ts[:-1], ts[1:]):
        dt = t1 - t0
        k1 = fn(params, y, t0)
        k2 = fn(params, y + dt * k1 / 2, t0 + dt / 2)
        k3 = fn(params, y + dt * k2 / 2, t0 + dt / 2)
        k4 = fn(params, y + dt * k3, t1)
        y = y + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6
        ys.append(y)
    return np.array(ys)


TS = np.linspace(0.0, 1.0, 4)
TARGETS = R.normal(size=(4, 2))


def neural_ode(theta):
    params, ts = theta  # the time points differentiated too
    ys = _odeint(_field, np.array([1.0, 0.0]), ts, params)
    return np.mean((ys - TARGETS) ** 2)


def _trajectory_loss(params, y0, ts):
    return np.mean((_odeint(_field, y0, ts, params) - TARGETS) ** 2)


def neural_ode_listed(params):
    args = [params, np.array([1.0, 0.0]), TS]  # the time points taken for differentiated
    return _trajectory_loss(args[0], args[1], args[2])


def _matern52(X, ls, var):
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    r = np.sqrt(d2 + 1e-12) / ls
    return var * (1 + np.sqrt(5.0) * r + 5.0 / 3.0 * r**2) * np.exp(-np.sqrt(5.0) * r)


def gp_matern_nll(log_params, X, y):
    ls, var, noise = np.exp(log_params)
    K = _matern52(X, ls, var) + noise * np.eye(len(X))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * len(X) * np.log(2 * np.pi)


def _layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return g * (x - mu) / np.sqrt(var + 1e-5) + b


def _head(x, Wk, Wq, Wv):
    T = x.shape[0]
    wei = (x @ Wq) @ (x @ Wk).T * Wk.shape[-1] ** -0.5
    wei = np.where(np.tril(np.ones((T, T))) == 0, -np.inf, wei)
    wei = np.exp(wei - wei.max(-1, keepdims=True))
    return (wei / wei.sum(-1, keepdims=True)) @ (x @ Wv)


def gpt_block(p, x, targets):
    h = _layer_norm(x, p["g"], p["b"])
    x = x + np.concatenate([_head(h, *w) for w in p["heads"]], axis=-1) @ p["proj"]
    logits = x @ p["unembed"]
    lp = logits - logsumexp(logits, axis=-1, keepdims=True)
    return -np.mean(lp[np.arange(x.shape[0]), targets])


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _lstm_cell(params, x, h, c):
    gates = {}
    for name in ("i", "f", "o", "g"):
        gates[name] = x @ params["W" + name] + h @ params["U" + name]
    c = _sigmoid(gates["f"]) * c + _sigmoid(gates["i"]) * np.tanh(gates["g"])
    return _sigmoid(gates["o"]) * np.tanh(c), c


def lstm_dict_gates(params, xs, target):
    h = np.zeros(params["Ui"].shape[0])
    c = np.zeros_like(h)
    for t in range(xs.shape[0]):
        h, c = _lstm_cell(params, xs[t], h, c)
    return np.sum((h - target) ** 2)


def fem_compliance(E):
    n = len(E)
    K = np.zeros((n + 1, n + 1))
    for i in range(n):
        K[i : i + 2, i : i + 2] += E[i] * n * np.array([[1.0, -1.0], [-1.0, 1.0]])
    f = np.zeros(n + 1)
    f[-1] = 1.0
    u = np.zeros(n + 1)
    u[1:] = np.linalg.solve(K[1:, 1:], f[1:])
    return f @ u


def sinkhorn_cost(x, y, eps=0.5, tol=1e-9):
    C = (x[:, None] - y[None, :]) ** 2
    f, g = np.zeros(len(x)), np.zeros(len(y))
    err = 1.0
    while err > tol:
        f_new = -eps * np.log(len(x)) - eps * np.log(np.sum(np.exp((g - C) / eps), axis=1))
        g = -eps * np.log(len(y)) - eps * np.log(np.sum(np.exp((f_new[:, None] - C) / eps), 0))
        err = np.abs(f_new - f).max()
        f = f_new
    return np.sum(np.exp((f[:, None] + g[None, :] - C) / eps) * C)


def _hamiltonian(params, q, p):
    return np.sum(params["w2"] * np.tanh(params["W1"] @ np.array([q, p]) + params["b1"]))


def hnn_loss(params, qs, ps, dqs, dps):
    dH_dq = sg.grad(_hamiltonian, wrt=1)
    dH_dp = sg.grad(_hamiltonian, wrt=2)
    loss = 0.0
    for q, p, dq, dp in zip(qs, ps, dqs, dps):
        loss = loss + (dH_dp(params, q, p) - dq) ** 2 + (-dH_dq(params, q, p) - dp) ** 2
    return loss / len(qs)


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


def _lstm_params():
    params = {}
    for gate in "ifog":
        params["W" + gate], params["U" + gate] = _n(2, 3), _n(3, 3)
    return params


_layers = [[{"w": _n(3), "b": float(_n())} for _ in range(3)], [{"w": _n(3), "b": 0.1}]]
_heads = [(_n(4, 2), _n(4, 2), _n(4, 2)) for _ in range(2)]
_gpt = {"heads": _heads, "g": 1 + _n(4, scale=0.1), "b": _n(4, scale=0.1), "proj": _n(4, 4)}
_gpt["unembed"] = _n(4, 5)
_ode = {"W1": _n(5, 3), "b1": _n(5, scale=0.1), "W2": _n(2, 5)}
_hnn = {"W1": _n(4, 2), "b1": _n(4, scale=0.1), "w2": _n(4)}

ALL = frozenset(MODES)
# the vector field passed as an argument: forward mode over its gradient is refused in s2s
BY_THE_TAPE = frozenset({"auto", "tape"})
# name: (function, arguments, the modes whose Hessian-vector product is checked too)
PROGRAMS = {
    "micrograd_params": (micrograd_params, ({"layers": _layers, "scale": 0.5},), ALL),
    "embedding_bag": (
        embedding_bag,
        (_n(5, 3), np.array([0, 2, 2, 4, 1, 3]), np.array([0, 0, 1, 1, 2, 2]), _n(3, 3)),
        ALL,
    ),
    "neural_ode": (neural_ode, ((_ode, TS),), BY_THE_TAPE),
    "neural_ode_listed": (neural_ode_listed, (_ode,), BY_THE_TAPE),
    "gp_matern": (gp_matern_nll, (np.array([0.0, 0.3, -2.0]), _n(5, 2, scale=1.0), _n(5)), ALL),
    "gpt_block": (gpt_block, (_gpt, _n(4, 4, scale=1.0), np.array([1, 0, 4, 2])), ALL),
    "lstm_dict_gates": (lstm_dict_gates, (_lstm_params(), _n(3, 2, scale=1.0), _n(3)), ALL),
    "fem_compliance": (fem_compliance, (R.random(4) + 1.0,), frozenset()),
    "sinkhorn": (sinkhorn_cost, (_n(4, scale=1.0), _n(5, scale=1.0)), frozenset()),
    "hnn_nested_grad": (hnn_loss, (_hnn, _n(3), _n(3), _n(3), _n(3)), frozenset()),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_real_program(name, mode):
    f, args, second_order = PROGRAMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = call_twice(sg.grad(f, mode=mode), *args)
        assert_close(got, numeric_grad(f, list(args), 0), rtol=1e-5, atol=1e-6)
        direction = sg.tree_map(lambda a: np.ones(np.shape(a)) * 0.5, args[0])
        along = numeric_jvp(f, list(args), 0, direction)
        value, tangent = sg.jvp(lambda a: f(a, *args[1:]), (args[0],), (direction,), mode=mode)
        assert isinstance(tangent, float)  # a number (not a 0-d array), in every mode
        assert_close(tangent, float(along), rtol=1e-5, atol=1e-6)
        if mode not in second_order:
            return
        gradient = sg.grad(f, mode=mode)
        expected = numeric_jvp(lambda a: gradient(a, *args[1:]), [args[0]], 0, direction)
        of_first = f if len(args) == 1 else lambda a: f(a, *args[1:])
        for _ in range(2):
            (product,) = sg.hvp(of_first, (args[0],), (direction,), mode=mode)
            assert_close(product, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_jvp_of_a_function_returning_a_numpy_float_is_a_float(mode):
    args = PROGRAMS["gp_matern"][1]
    tangents = (np.full(3, 0.5), np.zeros_like(args[1]), np.zeros_like(args[2]))
    value, tangent = sg.jvp(gp_matern_nll, args, tangents, mode=mode)
    assert isinstance(tangent, float)  # not a 0-d array
    expected = numeric_jvp(lambda packed: gp_matern_nll(*packed), [args], 0, tangents)
    assert_close(tangent, float(expected), rtol=1e-5)


_X = R.normal(size=(6, 3))
_Y = R.normal(size=6)


def _mse(p):
    return np.mean((_X @ p["w"] + p["b"] - _Y) ** 2)


def loss_after_an_sgd_step(params, lr=0.1):
    g = sg.grad(_mse)(params)
    return _mse({k: v - lr * g[k] for k, v in params.items()})


@pytest.mark.parametrize("mode", MODES)
def test_forward_mode_through_a_dict_comprehension(mode):
    params = {"w": R.normal(size=3), "b": 0.2}
    tangent = {"w": np.full(3, 0.5), "b": 1.0}
    value, got = sg.jvp(loss_after_an_sgd_step, (params,), (tangent,), mode=mode)
    assert value == pytest.approx(loss_after_an_sgd_step(params))
    expected = numeric_jvp(loss_after_an_sgd_step, [params], 0, tangent)
    assert_close(float(got), float(expected), rtol=1e-5)


def reinforce_sampling_with_p(theta, states):
    rng = np.random.default_rng(0)
    total = 0.0
    for s in states:
        p = softmax(s @ theta)
        a = rng.choice(len(p), p=p)
        total += -np.log(p[a]) * (1.0 if a == 0 else -0.5)
    return total


def reinforce_sampling_with_stopped_p(theta, states):
    rng = np.random.default_rng(0)
    total = 0.0
    for s in states:
        p = softmax(s @ theta)
        a = rng.choice(len(p), p=sg.stop_gradient(p))
        total += -np.log(p[a]) * (1.0 if a == 0 else -0.5)
    return total


@pytest.mark.parametrize("mode", MODES)
def test_reinforce_samples_with_probabilities_without_a_derivative(mode):
    theta, states = _n(3, 3, scale=0.3), _n(4, 3, scale=1.0)
    with pytest.raises(sg.S2SGradError, match=r"stop_gradient"):
        sg.grad(reinforce_sampling_with_p, mode="s2s")(theta, states)
    f = reinforce_sampling_with_stopped_p
    got = call_twice(sg.grad(f, mode=mode), theta, states)
    assert_close(got, numeric_grad(f, [theta, states], 0))


def reduced_layers(W, x):
    return np.sum(functools.reduce(lambda h, V: np.tanh(h @ V), [W, W.T], x) ** 2)


def test_forward_mode_through_functools_reduce():
    # functools.reduce is differentiated call by call (runtime/folds.py) in every mode
    W, x = _n(3, 3), _n(4, 3)
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            _, tangent = sg.jvp(lambda V: reduced_layers(V, x), (W,), (W,), mode=mode)
        assert_close(tangent, float(numeric_jvp(reduced_layers, [W, x], 0, W)))
