"""Models written the way people write them from scratch in NumPy.

The textbook's from-scratch models (D2L: linear and softmax regression, MLP with dropout,
weight decay, LeNet-style convolution and pooling with loops, batch norm as a function and
as a module, RNN, GRU, LSTM, gradient clipping, attention with a masked softmax, a
Transformer block), and the programs of real AD example collections and of scientists
(an MLP over a list of layers, an RNN and an LSTM whose cell is a nested def, a VAE, and
one built from closures, a Gaussian-process marginal likelihood, a mixture model's
log-likelihood and the same mixture fitted by EM, an MLP over a parameter vector flattened
by a helper returning ``(flat, unflatten)`` and read by a generator of layers, RK4 with a
right-hand-side helper, an explicit heat equation, a Kalman filter). Each ``case_*``
function returns ``(loss, args, wrt)``: the loss function, a tuple of small random
arguments, and the positions to differentiate.
"""

from __future__ import annotations

import numpy as np

# --------------------------------------------------------------------------------------
# D2L, chapter by chapter


def linreg(X, w, b):
    return X @ w + b


def squared_loss(y_hat, y):
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def linear_regression_loss(w, b, X, y):
    return np.mean(squared_loss(linreg(X, w, b), y))


def case_linear_regression(rng):
    X, y = rng.normal(size=(5, 2)), rng.normal(size=5)
    return linear_regression_loss, (rng.normal(size=2), 0.3, X, y), (0, 1)


def softmax(X):
    X_exp = np.exp(X - np.max(X, axis=1, keepdims=True))
    partition = X_exp.sum(1, keepdims=True)
    return X_exp / partition


def cross_entropy(y_hat, y):
    return -np.log(y_hat[np.arange(len(y_hat)), y])


def softmax_regression_loss(W, b, X, y):
    y_hat = softmax(X.reshape((-1, W.shape[0])) @ W + b)
    return np.mean(cross_entropy(y_hat, y))


def case_softmax_regression(rng):
    X, y = rng.normal(size=(4, 3)), np.array([0, 2, 1, 2])
    return softmax_regression_loss, (rng.normal(size=(3, 3)), np.zeros(3), X, y), (0, 1)


def relu(X):
    return np.maximum(X, 0)


def dropout_layer(X, mask, dropout):
    return mask * X / (1.0 - dropout)


def dropout_mlp_loss(params, X, y, masks):
    (W1, b1), (W2, b2), (W3, b3) = params
    H1 = relu(X @ W1 + b1)
    H1 = dropout_layer(H1, masks[0], 0.2)
    H2 = relu(H1 @ W2 + b2)
    H2 = dropout_layer(H2, masks[1], 0.5)
    out = H2 @ W3 + b3
    return np.mean(cross_entropy(softmax(out), y))


def case_dropout_mlp(rng):
    params = [
        (rng.normal(size=(4, 5)) * 0.5, rng.normal(size=5) * 0.1 + 0.3),
        (rng.normal(size=(5, 5)) * 0.5, rng.normal(size=5) * 0.1 + 0.3),
        (rng.normal(size=(5, 3)) * 0.5, np.zeros(3)),
    ]
    X, y = rng.normal(size=(3, 4)), np.array([0, 1, 2])
    masks = [rng.uniform(size=(3, 5)) > 0.2, rng.uniform(size=(3, 5)) > 0.5]
    return dropout_mlp_loss, (params, X, y, masks), (0,)


def l2_penalty(w):
    return np.sum(w**2) / 2


def weight_decay_loss(w, b, X, y, lambd):
    return np.mean(squared_loss(linreg(X, w, b), y)) + lambd * l2_penalty(w)


def case_weight_decay(rng):
    X, y = rng.normal(size=(6, 3)), rng.normal(size=6)
    return weight_decay_loss, (rng.normal(size=3), 0.1, X, y, 3.0), (0, 1)


def corr2d(X, K):
    h, w = K.shape
    Y = np.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j] = (X[i : i + h, j : j + w] * K).sum()
    return Y


def pool2d(X, pool_size, mode="max"):
    p_h, p_w = pool_size
    Y = np.zeros((X.shape[0] - p_h + 1, X.shape[1] - p_w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            if mode == "max":
                Y[i, j] = X[i : i + p_h, j : j + p_w].max()
            elif mode == "avg":
                Y[i, j] = X[i : i + p_h, j : j + p_w].mean()
    return Y


def lenet_loss(K, bias, W, X):
    feature = np.tanh(corr2d(X, K) + bias)
    pooled = pool2d(feature, (2, 2), "avg")
    return np.sum(np.tanh(pooled.reshape(-1) @ W))


def case_lenet(rng):
    return (
        lenet_loss,
        (rng.normal(size=(2, 2)), 0.1, rng.normal(size=(4, 2)), rng.normal(size=(4, 4))),
        (0, 1, 2),
    )


def batch_norm(X, gamma, beta, moving_mean, moving_var, eps, momentum, training=True):
    if not training:
        X_hat = (X - moving_mean) / np.sqrt(moving_var + eps)
    else:
        if len(X.shape) == 2:
            mean = X.mean(axis=0)
            var = ((X - mean) ** 2).mean(axis=0)
        else:
            mean = X.mean(axis=(0, 2, 3), keepdims=True)
            var = ((X - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True)
        X_hat = (X - mean) / np.sqrt(var + eps)
        moving_mean = (1.0 - momentum) * moving_mean + momentum * mean
        moving_var = (1.0 - momentum) * moving_var + momentum * var
    Y = gamma * X_hat + beta
    return Y, moving_mean, moving_var


def batch_norm_loss(gamma, beta, X):
    Y, _, _ = batch_norm(X, gamma, beta, np.zeros(3), np.ones(3), 1e-5, 0.1)
    return np.sum(np.sin(Y))


def case_batch_norm_function(rng):
    return (
        batch_norm_loss,
        (rng.normal(size=3) + 1, rng.normal(size=3), rng.normal(size=(4, 3))),
        (
            0,
            1,
            2,
        ),
    )


class BatchNorm:
    def __init__(self, num_features):
        self.moving_mean = np.zeros(num_features)
        self.moving_var = np.ones(num_features)

    def __call__(self, X, gamma, beta):
        Y, self.moving_mean, self.moving_var = batch_norm(
            X, gamma, beta, self.moving_mean, self.moving_var, eps=1e-5, momentum=0.1
        )
        return Y


BN = BatchNorm(3)


def batch_norm_module_loss(gamma, beta, X):
    return np.sum(np.tanh(BN(X, gamma, beta)))


def case_batch_norm_module(rng):
    return (
        batch_norm_module_loss,
        (rng.normal(size=3) + 1, rng.normal(size=3), rng.normal(size=(4, 3))),
        (0, 1, 2),
    )


def rnn(inputs, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    (H,) = state
    outputs = []
    for X in inputs:
        H = np.tanh(X @ W_xh + H @ W_hh + b_h)
        Y = H @ W_hq + b_q
        outputs.append(Y)
    return np.concatenate(outputs, axis=0), (H,)


def rnn_loss(params, inputs):
    outputs, _ = rnn(inputs, (np.zeros((2, 4)),), params)
    return np.mean(outputs**2)


def case_rnn(rng):
    params = [
        rng.normal(size=(3, 4)) * 0.5,
        rng.normal(size=(4, 4)) * 0.5,
        np.zeros(4),
        rng.normal(size=(4, 3)) * 0.5,
        np.zeros(3),
    ]
    return rnn_loss, (params, rng.normal(size=(3, 2, 3))), (0,)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def gru(inputs, state, params):
    W_xz, W_hz, b_z, W_xr, W_hr, b_r, W_xh, W_hh, b_h, W_hq, b_q = params
    (H,) = state
    outputs = []
    for X in inputs:
        Z = sigmoid((X @ W_xz) + (H @ W_hz) + b_z)
        R = sigmoid((X @ W_xr) + (H @ W_hr) + b_r)
        H_tilda = np.tanh((X @ W_xh) + ((R * H) @ W_hh) + b_h)
        H = Z * H + (1 - Z) * H_tilda
        Y = H @ W_hq + b_q
        outputs.append(Y)
    return np.concatenate(outputs, axis=0), (H,)


def gru_loss(params, inputs):
    outputs, _ = gru(inputs, (np.zeros((2, 3)),), params)
    return np.sum(outputs**2)


def _three(rng, n_in, n_h):
    return [rng.normal(size=(n_in, n_h)) * 0.5, rng.normal(size=(n_h, n_h)) * 0.5, np.zeros(n_h)]


def case_gru(rng):
    params = [*_three(rng, 2, 3), *_three(rng, 2, 3), *_three(rng, 2, 3)]
    params += [rng.normal(size=(3, 2)) * 0.5, np.zeros(2)]
    return gru_loss, (params, rng.normal(size=(3, 2, 2))), (0,)


def lstm_gate(X, H, W_x, W_h, b):
    return sigmoid(X @ W_x + H @ W_h + b)


def lstm_loss(params, inputs):
    W_xi, W_hi, b_i, W_xf, W_hf, b_f, W_xo, W_ho, b_o, W_xc, W_hc, b_c, W_hq, b_q = params
    H = np.zeros((2, 3))
    C = np.zeros((2, 3))
    total = 0.0
    for X in inputs:
        gate_i = lstm_gate(X, H, W_xi, W_hi, b_i)
        gate_f = lstm_gate(X, H, W_xf, W_hf, b_f)
        gate_o = lstm_gate(X, H, W_xo, W_ho, b_o)
        C_tilda = np.tanh(X @ W_xc + H @ W_hc + b_c)
        C = gate_f * C + gate_i * C_tilda
        H = gate_o * np.tanh(C)
        total = total + np.sum((H @ W_hq + b_q) ** 2)
    return total


def case_lstm(rng):
    params = [*_three(rng, 2, 3), *_three(rng, 2, 3), *_three(rng, 2, 3), *_three(rng, 2, 3)]
    params += [rng.normal(size=(3, 2)) * 0.5, np.zeros(2)]
    return lstm_loss, (params, rng.normal(size=(3, 2, 2))), (0,)


def grad_clipping(grads, theta):
    norm = np.sqrt(sum(np.sum(g**2) for g in grads))
    if norm > theta:
        for g in grads:
            g[:] *= theta / norm
    return grads


def clipped_step_loss(w, x):
    grads = [np.sin(w * x), np.cos(w) * x]
    grads = grad_clipping(grads, 0.5)
    return np.sum(grads[0] * w) + np.sum(grads[1])


def case_grad_clipping(rng):
    return clipped_step_loss, (rng.normal(size=3), rng.normal(size=3) * 2), (0,)


def sequence_mask(X, valid_len, value=0.0):
    maxlen = X.shape[1]
    mask = np.arange(maxlen)[None, :] < valid_len[:, None]
    X = X.copy()
    X[~mask] = value
    return X


def masked_softmax(X, valid_lens):
    shape = X.shape
    valid_lens = np.repeat(valid_lens, shape[1])
    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return softmax(X).reshape(shape)


def dot_product_attention(queries, keys, values, valid_lens):
    d = queries.shape[-1]
    scores = queries @ np.swapaxes(keys, 1, 2) / np.sqrt(d)
    attention_weights = masked_softmax(scores, valid_lens)
    return attention_weights @ values


def attention_loss(queries, keys, values, valid_lens):
    return np.sum(np.tanh(dot_product_attention(queries, keys, values, valid_lens)))


def case_attention(rng):
    return (
        attention_loss,
        (
            rng.normal(size=(2, 2, 3)),
            rng.normal(size=(2, 4, 3)),
            rng.normal(size=(2, 4, 2)),
            np.array([2, 3]),
        ),
        (0, 1, 2),
    )


def position_wise_ffn(X, W1, b1, W2, b2):
    return relu(X @ W1 + b1) @ W2 + b2


def layer_norm(X, gamma, beta, eps=1e-5):
    mean = X.mean(axis=-1, keepdims=True)
    var = X.var(axis=-1, keepdims=True)
    return gamma * (X - mean) / np.sqrt(var + eps) + beta


def transformer_block_loss(params, X):
    Q = X @ params["W_q"]
    K = X @ params["W_k"]
    V = X @ params["W_v"]
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    Y = layer_norm(X + softmax(scores) @ V, *params["ln1"])
    Z = layer_norm(Y + position_wise_ffn(Y, *params["ffn"]), *params["ln2"])
    return np.sum(Z**2) * 0.1 + np.sum(np.sin(Z))


def case_transformer_block(rng):
    params = {
        "W_q": rng.normal(size=(3, 3)) * 0.5,
        "W_k": rng.normal(size=(3, 3)) * 0.5,
        "W_v": rng.normal(size=(3, 3)) * 0.5,
        "ln1": (np.ones(3) + 0.1 * rng.normal(size=3), 0.1 * rng.normal(size=3)),
        "ffn": (
            rng.normal(size=(3, 4)) * 0.5,
            rng.normal(size=4) * 0.1 + 0.2,
            rng.normal(size=(4, 3)) * 0.5,
            np.zeros(3),
        ),
        "ln2": (np.ones(3), np.zeros(3)),
    }
    return transformer_block_loss, (params, rng.normal(size=(4, 3))), (0,)


# --------------------------------------------------------------------------------------
# Real AD example programs and scientists' code


def mlp_predict(params, x):
    for W, b in params[:-1]:
        x = np.tanh(x @ W + b)
    W, b = params[-1]
    return x @ W + b


def mlp_layers_loss(params, x, y):
    return np.mean((mlp_predict(params, x) - y) ** 2)


def case_mlp_layers(rng):
    sizes = [3, 4, 4, 2]
    params = [
        (rng.normal(size=(m, n)) * 0.5, rng.normal(size=n) * 0.1)
        for m, n in zip(sizes[:-1], sizes[1:])
    ]
    return mlp_layers_loss, (params, rng.normal(size=(5, 3)), rng.normal(size=(5, 2))), (0,)


def rnn_with_cell_loss(params, inputs):
    def cell(h, x):
        return np.tanh(x @ params["W_x"] + h @ params["W_h"] + params["b"])

    h = np.zeros(3)
    total = 0.0
    for x in inputs:
        h = cell(h, x)
        total = total + np.sum(h * params["v"])
    return total


def case_rnn_nested_cell(rng):
    params = {
        "W_x": rng.normal(size=(2, 3)) * 0.5,
        "W_h": rng.normal(size=(3, 3)) * 0.5,
        "b": np.zeros(3),
        "v": rng.normal(size=3),
    }
    return rnn_with_cell_loss, (params, rng.normal(size=(4, 2))), (0,)


def rnn_statement_cell_loss(params, inputs):
    def cell(h, x):
        pre = x @ params["W_x"] + h @ params["W_h"]
        for _ in range(2):  # two refinement steps, a loop inside the cell
            pre = pre + 0.1 * np.sin(pre)
        h = np.tanh(pre + params["b"])
        return h

    h = np.zeros(3)
    outputs = []
    for x in inputs:
        h = cell(h, x)
        outputs.append(h)
    return sum(np.sum(o * params["v"]) for o in outputs)


def case_rnn_statement_cell(rng):
    params = {
        "W_x": rng.normal(size=(2, 3)) * 0.5,
        "W_h": rng.normal(size=(3, 3)) * 0.5,
        "b": rng.normal(size=3) * 0.1,
        "v": rng.normal(size=3),
    }
    return rnn_statement_cell_loss, (params, rng.normal(size=(4, 2))), (0,)


def lstm_nested_cell_loss(params, inputs):
    W, U, b = params

    def sigmoid(z):
        return 0.5 * (np.tanh(z / 2) + 1.0)

    def update_lstm(hiddens, cells, x):
        change = x @ W + hiddens @ U + b
        n = hiddens.shape[-1]
        ingate = sigmoid(change[:, :n])
        forget = sigmoid(change[:, n : 2 * n])
        outgate = sigmoid(change[:, 2 * n : 3 * n])
        candidate = np.tanh(change[:, 3 * n :])
        cells = cells * forget + ingate * candidate
        hiddens = outgate * np.tanh(cells)
        return hiddens, cells

    hiddens = np.zeros((inputs.shape[1], U.shape[0]))
    cells = np.zeros_like(hiddens)
    for x in inputs:
        hiddens, cells = update_lstm(hiddens, cells, x)
    return np.sum(hiddens**2) + 0.5 * np.sum(cells)


def case_lstm_nested_cell(rng):
    params = [
        rng.normal(size=(2, 12)) * 0.5,
        rng.normal(size=(3, 12)) * 0.5,
        rng.normal(size=12) * 0.1,
    ]
    return lstm_nested_cell_loss, (params, rng.normal(size=(3, 2, 2))), (0,)


def vae_closures_loss(params, x, noise):
    def encode(inputs):
        h = np.tanh(inputs @ params["enc_W"] + params["enc_b"])
        return h @ params["mu_W"], h @ params["logvar_W"]

    def decode(z):
        h = z @ params["dec_W"] + params["dec_b"]
        return np.tanh(h)

    def sample(mu, logvar):
        std = np.exp(0.5 * logvar)
        return mu + std * noise

    mu, logvar = encode(x)
    recon = decode(sample(mu, logvar))
    kl = -0.5 * np.sum(1 + logvar - mu**2 - np.exp(logvar))
    return np.sum((recon - x) ** 2) + kl


def case_vae_closures(rng):
    _, args, wrt = case_vae(rng)
    return vae_closures_loss, args, wrt


def make_vae_objective(x, noise, beta):
    """A variational objective built inside its factory, then differentiated."""

    def unpack(flat):
        shapes = [(4, 3), (3, 2), (3, 2), (2, 4)]
        parts = []
        start = 0
        for shape in shapes:
            stop = start + shape[0] * shape[1]
            parts.append(flat[start:stop].reshape(shape))
            start = stop
        return parts

    def objective(flat):
        enc, mu_W, logvar_W, dec = unpack(flat)

        def encode(inputs):
            h = np.tanh(inputs @ enc)
            return h @ mu_W, h @ logvar_W

        mu, logvar = encode(x)
        z = mu + np.exp(0.5 * logvar) * noise
        recon = np.tanh(z @ dec)
        kl = -0.5 * np.sum(1 + logvar - mu**2 - np.exp(logvar))
        return np.sum((recon - x) ** 2) + beta * kl

    return objective


def case_vae_factory(rng):
    objective = make_vae_objective(rng.normal(size=(3, 4)), rng.normal(size=(3, 2)), 0.5)
    return objective, (rng.normal(size=12 + 6 + 6 + 8) * 0.5,), (0,)


def vae_encode(params, x):
    h = np.tanh(x @ params["enc_W"] + params["enc_b"])
    return h @ params["mu_W"], h @ params["logvar_W"]


def vae_decode(params, z):
    return np.tanh(z @ params["dec_W"] + params["dec_b"])


def vae_loss(params, x, noise):
    mu, logvar = vae_encode(params, x)
    z = mu + np.exp(0.5 * logvar) * noise
    recon = vae_decode(params, z)
    kl = -0.5 * np.sum(1 + logvar - mu**2 - np.exp(logvar))
    return np.sum((recon - x) ** 2) + kl


def case_vae(rng):
    params = {
        "enc_W": rng.normal(size=(4, 3)) * 0.5,
        "enc_b": np.zeros(3),
        "mu_W": rng.normal(size=(3, 2)) * 0.5,
        "logvar_W": rng.normal(size=(3, 2)) * 0.5,
        "dec_W": rng.normal(size=(2, 4)) * 0.5,
        "dec_b": np.zeros(4),
    }
    return vae_loss, (params, rng.normal(size=(3, 4)), rng.normal(size=(3, 2))), (0,)


def rbf_kernel(X1, X2, log_length, log_variance):
    sq = np.sum(X1**2, 1)[:, None] + np.sum(X2**2, 1)[None, :] - 2 * X1 @ X2.T
    return np.exp(log_variance) * np.exp(-0.5 * sq / np.exp(2 * log_length))


def gp_negative_log_likelihood(theta, X, y):
    log_length, log_variance, log_noise = theta
    K = rbf_kernel(X, X, log_length, log_variance) + np.exp(log_noise) * np.eye(len(X))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * len(X) * np.log(2 * np.pi)


def case_gp(rng):
    X = rng.normal(size=(5, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=5)
    return gp_negative_log_likelihood, (np.array([0.1, -0.2, -1.0]), X, y), (0,)


def log_sum_exp(a, axis):
    top = np.max(a, axis=axis, keepdims=True)
    return np.squeeze(top, axis=axis) + np.log(np.sum(np.exp(a - top), axis=axis))


def mixture_log_likelihood(means, log_scales, logits, data):
    log_weights = logits - log_sum_exp(logits, axis=0)
    scales = np.exp(log_scales)
    z = (data[:, None] - means[None, :]) / scales[None, :]
    log_components = -0.5 * z**2 - log_scales - 0.5 * np.log(2 * np.pi)
    return np.sum(log_sum_exp(log_components + log_weights, axis=1))


def case_mixture(rng):
    return (
        mixture_log_likelihood,
        (np.array([-1.0, 0.5, 2.0]), np.zeros(3) - 0.2, np.zeros(3), rng.normal(size=6)),
        (0, 1, 2),
    )


def mixture_fitted_by_em(means, data):
    """A one-dimensional Gaussian mixture fitted by three EM steps from ``means``; the
    loss is the log-likelihood of the fitted mixture (differentiated through the steps)."""
    k = means.shape[0]
    log_weights = np.full(k, -np.log(k))
    log_scales = np.zeros(k)
    for _ in range(3):
        z = (data[:, None] - means[None, :]) / np.exp(log_scales)[None, :]
        log_joint = -0.5 * z**2 - log_scales + log_weights
        responsibilities = np.exp(log_joint - log_sum_exp(log_joint, axis=1)[:, None])
        counts = np.sum(responsibilities, axis=0)
        log_weights = np.log(counts / data.shape[0])
        means = responsibilities.T @ data / counts
        spread = np.sum(responsibilities * (data[:, None] - means[None, :]) ** 2, axis=0)
        log_scales = 0.5 * np.log(spread / counts + 1e-3)
    return mixture_log_likelihood(means, log_scales, log_weights, data)


def case_mixture_em(rng):
    data = np.concatenate([rng.normal(-2.0, 0.5, size=4), rng.normal(1.5, 0.7, size=4)])
    return mixture_fitted_by_em, (np.array([-1.0, 0.5]), data), (0, 1)


def flatten_parameters(params):
    """The flatten idiom: one vector, and the function that rebuilds the list from it."""
    shapes = [p.shape for p in params]
    flat = np.concatenate([p.ravel() for p in params])

    def unflatten(vector):
        out = []
        start = 0
        for shape in shapes:
            size = int(np.prod(shape))
            out.append(vector[start : start + size].reshape(shape))
            start = start + size
        return out

    return flat, unflatten


def layer_pairs(params):
    """The (W, b) pairs of a flat list of parameters, as a generator."""
    for i in range(0, len(params), 2):
        yield params[i], params[i + 1]


def flattened_mlp_loss(W1, b1, W2, b2, x, y):
    flat, unflatten = flatten_parameters([W1, b1, W2, b2])
    params = unflatten(flat * 0.9)  # a shrunk copy, as weight decay would
    h = x
    for W, b in layer_pairs(params):
        h = np.tanh(h @ W + b)
    return np.mean((h - y) ** 2)


def case_flattened_mlp(rng):
    W1, b1 = rng.normal(size=(3, 4)) * 0.5, rng.normal(size=4) * 0.1
    W2, b2 = rng.normal(size=(4, 2)) * 0.5, rng.normal(size=2) * 0.1
    args = (W1, b1, W2, b2, rng.normal(size=(5, 3)), rng.normal(size=(5, 2)))
    return flattened_mlp_loss, args, (0, 1, 2, 3)


def lotka_volterra(state, theta):
    prey, predator = state
    a, b, c, d = theta
    return np.array([a * prey - b * prey * predator, c * prey * predator - d * predator])


def rk4(rhs, state, theta, dt, steps):
    for _ in range(steps):
        k1 = rhs(state, theta)
        k2 = rhs(state + 0.5 * dt * k1, theta)
        k3 = rhs(state + 0.5 * dt * k2, theta)
        k4 = rhs(state + dt * k3, theta)
        state = state + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return state


def rk4_loss(theta, state):
    final = rk4(lotka_volterra, state, theta, 0.1, 5)
    return np.sum(final**2)


def case_rk4(rng):
    return rk4_loss, (np.array([1.0, 0.4, 0.3, 0.8]), np.array([1.2, 0.8])), (0, 1)


def heat_equation(u0, kappa, steps):
    u = u0.copy()
    new = np.empty_like(u)
    for _ in range(steps):
        new[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
        new[0] = u[0]
        new[-1] = u[-1]
        u, new = new, u
    return u


def heat_loss(u0, kappa):
    return np.sum(heat_equation(u0, kappa, 4) ** 2)


def case_heat(rng):
    return heat_loss, (rng.normal(size=6), 0.2), (0, 1)


def kalman_loss(q, observations):
    x, P = 0.0, 1.0
    total = 0.0
    for z in observations:
        P = P + q
        K = P / (P + 0.5)
        x = x + K * (z - x)
        P = (1 - K) * P
        total = total + (z - x) ** 2
    return total


def case_kalman(rng):
    return kalman_loss, (0.3, rng.normal(size=5)), (0,)


CASES = {name[len("case_") :]: case for name, case in globals().items() if name.startswith("case_")}
