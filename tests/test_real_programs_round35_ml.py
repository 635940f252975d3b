"""Programs written the way users write them, round 35: textbook models written from scratch.
Regression and classification losses, an MLP with batch norm and a fixed dropout mask, a CNN
by im2col, RNN, LSTM and GRU cells over sequences, attention and a transformer block with
layer norm, a VAE with fixed noise, a GMM by logsumexp, a Gaussian process by Cholesky and
triangular solves written out, matrix factorisation, word2vec negative sampling, policy
gradients. Parameters come as lists of pairs, dicts, dataclasses and named tuples; helpers
call helpers. Each is checked in every mode as round 32 does.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pytest
from test_real_programs_round32 import MODES, S2S_HVP, _check_program

R = np.random.default_rng(3535_2)


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


X = _n(6, 3, scale=1.0)
Y_REG = _n(6, scale=1.0)
Y_BIN = (R.random(6) > 0.5).astype(float)
Y_CLS = np.array([0, 2, 1, 1, 0, 2])


# --- small helpers the models share -------------------------------------------------------


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def softmax(z, axis=-1):
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(z):
    shifted = z - np.max(z, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def one_hot(labels, k):
    out = np.zeros((len(labels), k))
    out[np.arange(len(labels)), labels] = 1.0
    return out


def layer_norm(h, gain, bias, eps=1e-5):
    mu = np.mean(h, axis=-1, keepdims=True)
    var = np.var(h, axis=-1, keepdims=True)
    return gain * (h - mu) / np.sqrt(var + eps) + bias


# --- regression and classification ---------------------------------------------------------


def logistic_regression_l2(w):
    """Binary cross-entropy with the bias as the last weight and an L2 penalty."""
    logits = X @ w[:-1] + w[-1]
    p = sigmoid(logits)
    eps = 1e-9
    bce = -np.mean(Y_BIN * np.log(p + eps) + (1 - Y_BIN) * np.log(1 - p + eps))
    return bce + 0.01 * np.sum(w[:-1] ** 2)


def softmax_regression(W):
    """Multinomial logistic regression with one-hot targets built in a helper."""
    logits = X @ W
    return -np.sum(one_hot(Y_CLS, 3) * log_softmax(logits)) / len(X)


def ridge_closed_form_cv(log_lam):
    """Ridge fitted in closed form on one fold, the validation error of the other."""
    lam = np.exp(log_lam)
    train, valid = slice(0, 4), slice(4, 6)
    A = X[train].T @ X[train] + lam * np.eye(3)
    w = np.linalg.solve(A, X[train].T @ Y_REG[train])
    return np.mean((X[valid] @ w - Y_REG[valid]) ** 2)


def huber_regression(w):
    """The Huber loss written with np.where on the residual's size."""
    r = X @ w - Y_REG
    delta = 0.5
    quad = 0.5 * r**2
    lin = delta * (np.abs(r) - 0.5 * delta)
    return np.mean(np.where(np.abs(r) <= delta, quad, lin))


def poisson_glm(w):
    """A Poisson GLM with a log link, counts from a fixed vector."""
    counts = np.array([0.0, 2.0, 1.0, 3.0, 0.0, 1.0])
    eta = X @ w
    return np.sum(np.exp(eta) - counts * eta)


def svm_squared_hinge(w):
    """A squared hinge loss, the margin below one selected with np.maximum."""
    signs = 2 * Y_BIN - 1
    margins = signs * (X @ w)
    return np.mean(np.maximum(0.0, 1.0 - margins) ** 2) + 0.05 * w @ w


def ordinal_regression(params):
    """Cumulative-logit ordinal regression: thresholds kept ordered by exp increments."""
    w, raw = params[:3], params[3:]
    thresholds = np.cumsum(np.concatenate([raw[:1], np.exp(raw[1:])]))
    eta = X @ w
    cdf = sigmoid(thresholds[None, :] - eta[:, None])
    cdf = np.concatenate([np.zeros((len(X), 1)), cdf, np.ones((len(X), 1))], axis=1)
    probs = np.diff(cdf, axis=1)
    return -np.mean(np.log(probs[np.arange(len(X)), Y_CLS] + 1e-12))


# --- multilayer networks ------------------------------------------------------------------


def _mlp_forward(params, x):
    h = x
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
    W, b = params[-1]
    return h @ W + b


def mlp_list_of_pairs(params):
    """An MLP whose parameters are a list of (W, b) pairs, ``for W, b in params[:-1]``."""
    out = _mlp_forward(params, X)
    return np.mean((out[:, 0] - Y_REG) ** 2)


def batchnorm_dropout_mlp(params):
    """Batch norm (training statistics) and a fixed dropout mask between two layers."""
    W1, gamma, beta, W2 = params["W1"], params["gamma"], params["beta"], params["W2"]
    h = X @ W1
    mu = h.mean(axis=0)
    var = h.var(axis=0)
    h = gamma * (h - mu) / np.sqrt(var + 1e-5) + beta
    h = np.maximum(h, 0.0) + 0.01 * h
    mask = np.array(
        [[1, 0, 1, 1], [1, 1, 0, 1], [0, 1, 1, 1], [1, 1, 1, 0], [1, 0, 1, 1], [1, 1, 1, 1]]
    )
    h = h * mask / 0.75
    logits = h @ W2
    return -np.mean(np.sum(one_hot(Y_CLS, 3) * log_softmax(logits), axis=1))


def residual_mlp_early_exit(params):
    """A residual stack whose loop stops early once the activations are small."""
    h = X
    for depth, W in enumerate(params):
        update = np.tanh(h @ W)
        h = h + 0.5 * update
        if np.mean(update**2) < 1e-6 or depth > 5:
            break
    return np.sum(h**2) / len(X)


# --- convolutional --------------------------------------------------------------------------

IMAGES = _n(2, 5, 5, scale=1.0)


def im2col(images, k):
    n, h, w = images.shape
    out_h, out_w = h - k + 1, w - k + 1
    cols = np.zeros((n, out_h * out_w, k * k))
    for i in range(out_h):
        for j in range(out_w):
            patch = images[:, i : i + k, j : j + k]
            cols[:, i * out_w + j, :] = patch.reshape(n, -1)
    return cols


def cnn_im2col(kernels):
    """Two 3x3 filters by im2col and a matmul, ReLU-like softplus, global average pool."""
    cols = im2col(IMAGES, 3)  # (2, 9, 9)
    maps = cols @ kernels.reshape(2, 9).T  # (2, 9, 2)
    act = np.log1p(np.exp(maps))
    pooled = act.mean(axis=1)
    return np.sum((pooled - np.array([[0.5, 0.2], [0.1, 0.9]])) ** 2)


def conv1d_loop_valid(kernel):
    """A 1-D convolution written with an output buffer filled in a loop."""
    signal = np.sin(np.linspace(0.0, 3.0, 10))
    k = len(kernel)
    out = np.zeros(len(signal) - k + 1)
    for i in range(len(out)):
        out[i] = np.dot(signal[i : i + k], kernel[::-1])
    return np.sum(np.tanh(out) ** 2)


def max_pool_cnn(kernel):
    """A convolution by sliding windows, 2x2 max pooling by reshape, a linear readout."""
    img = IMAGES[0]
    k = kernel.reshape(2, 2)
    feat = np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            feat[i, j] = np.sum(img[i : i + 2, j : j + 2] * k)
    pooled = feat.reshape(2, 2, 2, 2).max(axis=(1, 3))
    return np.sum(pooled * np.array([[1.0, -0.5], [0.3, 0.8]]))


# --- recurrent --------------------------------------------------------------------------------

SEQ = _n(5, 2, scale=1.0)


def elman_rnn(params):
    """An Elman RNN unrolled over a sequence, predicting the next input."""
    Wx, Wh, Wy = params
    h = np.zeros(3)
    loss = 0.0
    for t in range(len(SEQ) - 1):
        h = np.tanh(SEQ[t] @ Wx + h @ Wh)
        loss += np.sum((h @ Wy - SEQ[t + 1]) ** 2)
    return loss / (len(SEQ) - 1)


def lstm_cell(x, h, c, W, U, b):
    z = x @ W + h @ U + b
    n = len(h)
    i, f, o, g = (
        sigmoid(z[:n]),
        sigmoid(z[n : 2 * n]),
        sigmoid(z[2 * n : 3 * n]),
        np.tanh(z[3 * n :]),
    )
    c = f * c + i * g
    return o * np.tanh(c), c


def lstm_sequence(params):
    """An LSTM over the sequence, states carried as a tuple, a readout of the last one."""
    W, U, b = params["W"], params["U"], params["b"]
    state = (np.zeros(2), np.zeros(2))
    outputs = []
    for x in SEQ:
        state = lstm_cell(x, *state, W, U, b)
        outputs.append(state[0])
    H = np.stack(outputs)
    return np.sum(H[-1] ** 2) + 0.1 * np.sum(H)


def gru_sequence(params):
    """A GRU cell written inline, hidden states stored into a preallocated array."""
    Wz, Wr, Wh = params
    h = np.zeros(2)
    hs = np.zeros((len(SEQ), 2))
    for t, x in enumerate(SEQ):
        xh = np.concatenate([x, h])
        z = sigmoid(xh @ Wz)
        r = sigmoid(xh @ Wr)
        h_tilde = np.tanh(np.concatenate([x, r * h]) @ Wh)
        h = (1 - z) * h + z * h_tilde
        hs[t] = h
    return np.sum(hs**2)


def bidirectional_rnn(W):
    """Forward and backward passes over the sequence by reversed(range(...)), concatenated."""
    n = len(SEQ)
    fwd, bwd = [None] * n, [None] * n
    h = np.zeros(2)
    for t in range(n):
        h = np.tanh(SEQ[t] @ W[:2] + h @ W[2:])
        fwd[t] = h
    h = np.zeros(2)
    for t in reversed(range(n)):
        h = np.tanh(SEQ[t] @ W[:2] - h @ W[2:])
        bwd[t] = h
    states = np.concatenate([np.array(fwd), np.array(bwd)], axis=1)
    return np.sum(states[:, 0] * states[:, -1])


# --- attention and transformers ----------------------------------------------------------

TOKENS = _n(4, 4, scale=1.0)


def scaled_dot_attention(q, k, v, mask=None):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    return softmax(scores) @ v


def causal_self_attention(W):
    """Single-head causal self-attention with the projections sliced from one matrix."""
    Wq, Wk, Wv = W[:, :4], W[:, 4:8], W[:, 8:]
    mask = np.tril(np.ones((4, 4), dtype=bool))
    out = scaled_dot_attention(TOKENS @ Wq, TOKENS @ Wk, TOKENS @ Wv, mask)
    return np.sum(out**2)


def transformer_block(params):
    """Pre-norm transformer block: two heads, a residual, an MLP with GELU (tanh form)."""
    h = layer_norm(TOKENS, params["g1"], params["b1"])
    heads = []
    for head in range(2):
        cols = slice(2 * head, 2 * head + 2)
        q = h @ params["Wq"][:, cols]
        k = h @ params["Wk"][:, cols]
        v = h @ params["Wv"][:, cols]
        heads.append(scaled_dot_attention(q, k, v))
    x = TOKENS + np.concatenate(heads, axis=1) @ params["Wo"]
    h2 = layer_norm(x, params["g2"], params["b2"])
    u = h2 @ params["W1"]
    gelu = 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u**3)))
    x = x + gelu @ params["W2"]
    return np.mean(x**2)


def cross_attention_pooling(query):
    """A learned query attending over tokens (attention pooling), einsum for the scores."""
    scores = np.einsum("d,td->t", query, TOKENS) / 2.0
    weights = softmax(scores)
    pooled = np.einsum("t,td->d", weights, TOKENS)
    return np.sum(pooled * np.array([1.0, -1.0, 0.5, 0.2]))


def rotary_position_scores(theta):
    """Rotary position embeddings applied to pairs of features, then attention scores."""
    pos = np.arange(4)[:, None]
    angles = pos * theta[None, :]
    x1, x2 = TOKENS[:, 0::2], TOKENS[:, 1::2]
    rot = np.concatenate(
        [x1 * np.cos(angles) - x2 * np.sin(angles), x1 * np.sin(angles) + x2 * np.cos(angles)],
        axis=1,
    )
    scores = rot @ rot.T
    return np.sum(softmax(scores) * np.eye(4))


# --- generative and probabilistic ------------------------------------------------------------

NOISE = _n(3, 2, scale=1.0)
VAE_X = R.random((3, 4))


def vae_loss(params):
    """Encoder to a diagonal Gaussian, reparameterised sample with fixed noise, a
    Bernoulli decoder, the negative ELBO."""
    We, Wmu, Wlv, Wd = params
    h = np.tanh(VAE_X @ We)
    mu, logvar = h @ Wmu, h @ Wlv
    z = mu + np.exp(0.5 * logvar) * NOISE
    logits = z @ Wd
    recon = np.sum(np.logaddexp(0.0, logits) - VAE_X * logits)
    kl = -0.5 * np.sum(1 + logvar - mu**2 - np.exp(logvar))
    return (recon + kl) / len(VAE_X)


GMM_DATA = np.concatenate([_n(4, 2, scale=0.5) + 1.0, _n(4, 2, scale=0.5) - 1.0])


def logsumexp(a, axis=None):
    m = np.max(a, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(a - m), axis=axis))


def gmm_log_likelihood(params):
    """A two-component isotropic GMM: log-weights by log-softmax, means, log-scales."""
    logits, means, log_s = params[:2], params[2:6].reshape(2, 2), params[6:8]
    log_w = log_softmax(logits)
    diff = GMM_DATA[:, None, :] - means[None, :, :]
    var = np.exp(2 * log_s)
    log_comp = -0.5 * np.sum(diff**2, axis=-1) / var - np.log(2 * np.pi * var)
    return -np.sum(logsumexp(log_w + log_comp, axis=1))


GP_X = np.linspace(-1.0, 1.0, 5)
GP_Y = np.sin(2 * GP_X) + 0.1 * _n(5, scale=1.0)


def cholesky_by_hand(A):
    n = len(A)
    L = np.zeros_like(A)
    for j in range(n):
        s = A[j, j] - np.sum(L[j, :j] ** 2)
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            L[i, j] = (A[i, j] - np.sum(L[i, :j] * L[j, :j])) / L[j, j]
    return L


def forward_substitution(L, b):
    x = np.zeros_like(b)
    for i in range(len(b)):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def gp_marginal_likelihood(log_params):
    """The GP negative log marginal likelihood with a hand-written Cholesky and forward
    substitution, log-determinant from the factor's diagonal."""
    ell, sf, sn = np.exp(log_params)
    d = GP_X[:, None] - GP_X[None, :]
    K = sf**2 * np.exp(-0.5 * d**2 / ell**2) + sn**2 * np.eye(len(GP_X))
    L = cholesky_by_hand(K)
    alpha = forward_substitution(L, GP_Y)
    return 0.5 * alpha @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * len(GP_X) * np.log(2 * np.pi)


def gp_numpy_cholesky(log_params):
    """The same with np.linalg.cholesky and np.linalg.solve for the triangular systems."""
    ell, sf, sn = np.exp(log_params)
    d = GP_X[:, None] - GP_X[None, :]
    K = sf**2 * np.exp(-0.5 * (d / ell) ** 2) + (sn**2 + 1e-6) * np.eye(len(GP_X))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, GP_Y))
    return 0.5 * GP_Y @ alpha + np.sum(np.log(np.diag(L)))


RATINGS = [(0, 0, 4.0), (0, 2, 1.0), (1, 1, 3.0), (2, 0, 5.0), (2, 2, 2.0), (1, 0, 3.5)]


def matrix_factorisation(params):
    """Rating prediction by user and item factors, the observed triples looped over."""
    U, V = params[:6].reshape(3, 2), params[6:].reshape(3, 2)
    loss = 0.0
    for u, i, r in RATINGS:
        loss += (U[u] @ V[i] + 3.0 - r) ** 2
    return loss / len(RATINGS) + 0.05 * (np.sum(U**2) + np.sum(V**2))


PAIRS = [(0, 1, [2, 3]), (1, 2, [0, 3]), (3, 0, [1, 2])]


def word2vec_negative_sampling(embeddings):
    """Skip-gram with negative sampling: centre and context tables from one array."""
    E = embeddings.reshape(2, 4, 3)
    centre, context = E[0], E[1]
    loss = 0.0
    for c, o, negatives in PAIRS:
        loss -= np.log(sigmoid(centre[c] @ context[o]))
        for k in negatives:
            loss -= np.log(sigmoid(-centre[c] @ context[k]))
    return loss


EPISODE_STATES = _n(5, 3, scale=1.0)
EPISODE_ACTIONS = [0, 1, 1, 0, 1]
EPISODE_REWARDS = [0.0, 1.0, 0.0, 0.5, 1.0]


def reinforce_loss(theta):
    """REINFORCE with discounted returns computed backwards and a mean baseline."""
    returns = []
    g = 0.0
    for r in reversed(EPISODE_REWARDS):
        g = r + 0.9 * g
        returns.insert(0, g)
    returns = np.array(returns)
    advantages = returns - returns.mean()
    logits = EPISODE_STATES @ theta.reshape(3, 2)
    logp = log_softmax(logits)[np.arange(5), EPISODE_ACTIONS]
    return -np.sum(logp * advantages)


def ppo_clipped_objective(theta):
    """PPO's clipped surrogate with an entropy bonus, old log-probabilities fixed."""
    logits = EPISODE_STATES @ theta.reshape(3, 2)
    logp_all = log_softmax(logits)
    logp = logp_all[np.arange(5), EPISODE_ACTIONS]
    old_logp = np.log(np.array([0.5, 0.4, 0.6, 0.5, 0.45]))
    ratio = np.exp(logp - old_logp)
    adv = np.array(EPISODE_REWARDS) - 0.5
    surrogate = np.minimum(ratio * adv, np.clip(ratio, 0.8, 1.2) * adv)
    entropy = -np.sum(np.exp(logp_all) * logp_all, axis=1)
    return -np.mean(surrogate) - 0.01 * np.mean(entropy)


def actor_critic(params):
    """An actor and a critic sharing a trunk: TD(0) advantages with the target held by a
    copy of plain values (.copy() of values of the critic is still differentiated)."""
    trunk, actor, critic = params
    h = np.tanh(EPISODE_STATES @ trunk)
    values = h @ critic
    logits = h @ actor
    rewards = np.array(EPISODE_REWARDS)
    targets = rewards[:-1] + 0.9 * values[1:]
    td = targets - values[:-1]
    logp = log_softmax(logits)[np.arange(4), EPISODE_ACTIONS[:4]]
    return -np.sum(logp * td) + 0.5 * np.sum(td**2)


# --- configuration by dataclasses and named tuples ----------------------------------------


@dataclass
class Layer:
    W: np.ndarray
    b: np.ndarray


@dataclass
class Net:
    hidden: Layer
    out: Layer


def dataclass_network(net):
    """Parameters in nested dataclasses, the forward pass reading attributes."""
    h = np.tanh(X @ net.hidden.W + net.hidden.b)
    y = h @ net.out.W + net.out.b
    return np.mean((y[:, 0] - Y_REG) ** 2)


class Params(NamedTuple):
    scale: np.ndarray
    shift: np.ndarray


def named_tuple_affine_flow(p):
    """An affine normalising flow layer: log-density of the data through it."""
    z = (X - p.shift) * np.exp(-p.scale)
    log_det = -np.sum(p.scale)
    return -np.mean(-0.5 * np.sum(z**2, axis=1) + log_det)


def config_dict_model(params, config={"act": "tanh", "depth": 2}):  # noqa: B006
    """A model built from a configuration dict chosen by string keys (a default argument
    that is read, never written)."""
    act = np.tanh if config["act"] == "tanh" else np.sin
    h = X
    for d in range(config["depth"]):
        h = act(h @ params[d])
    return np.sum(h**2)


def planar_flow_chain(params):
    """Two planar flows z + u tanh(w.z + b), log-det terms accumulated."""
    z = NOISE[:, :2] if NOISE.shape[1] >= 2 else NOISE
    log_det = 0.0
    for k in range(2):
        u, w, b = params[k, :2], params[k, 2:4], params[k, 4]
        a = z @ w + b
        psi = (1 - np.tanh(a) ** 2)[:, None] * w
        log_det = log_det + np.log(np.abs(1 + psi @ u))
        z = z + np.tanh(a)[:, None] * u
    return np.mean(0.5 * np.sum(z**2, axis=1) - log_det)


PROGRAMS = [
    (logistic_regression_l2, _n(4)),
    (softmax_regression, _n(3, 3)),
    (ridge_closed_form_cv, np.array(-0.5)),
    (huber_regression, _n(3)),
    (poisson_glm, _n(3, scale=0.3)),
    (svm_squared_hinge, _n(3)),
    (ordinal_regression, np.array([0.3, -0.2, 0.1, -0.5, 0.0])),
    (mlp_list_of_pairs, [(_n(3, 4), _n(4)), (_n(4, 4), _n(4)), (_n(4, 1), _n(1))]),
    (
        batchnorm_dropout_mlp,
        {"W1": _n(3, 4), "gamma": 1.0 + _n(4, scale=0.1), "beta": _n(4), "W2": _n(4, 3)},
    ),
    (residual_mlp_early_exit, [_n(3, 3), _n(3, 3)]),
    (cnn_im2col, _n(18)),
    (conv1d_loop_valid, _n(3)),
    (max_pool_cnn, _n(4)),
    (elman_rnn, (_n(2, 3), _n(3, 3), _n(3, 2))),
    (lstm_sequence, {"W": _n(2, 8), "U": _n(2, 8), "b": _n(8)}),
    (gru_sequence, (_n(4, 2), _n(4, 2), _n(4, 2))),
    (bidirectional_rnn, _n(4, 2)),
    (causal_self_attention, _n(4, 12)),
    (
        transformer_block,
        {
            "g1": 1.0 + _n(4, scale=0.1),
            "b1": _n(4, scale=0.1),
            "Wq": _n(4, 4),
            "Wk": _n(4, 4),
            "Wv": _n(4, 4),
            "Wo": _n(4, 4),
            "g2": 1.0 + _n(4, scale=0.1),
            "b2": _n(4, scale=0.1),
            "W1": _n(4, 6),
            "W2": _n(6, 4),
        },
    ),
    (cross_attention_pooling, _n(4)),
    (rotary_position_scores, _n(2)),
    (vae_loss, [_n(4, 3), _n(3, 2), _n(3, 2, scale=0.2), _n(2, 4)]),
    (gmm_log_likelihood, np.array([0.1, -0.1, 0.8, 1.1, -0.9, -1.2, -0.3, -0.2])),
    (gp_marginal_likelihood, np.array([-0.5, 0.1, -1.5])),
    (gp_numpy_cholesky, np.array([-0.5, 0.1, -1.5])),
    (matrix_factorisation, _n(12)),
    (word2vec_negative_sampling, _n(24)),
    (reinforce_loss, _n(6)),
    (ppo_clipped_objective, _n(6, scale=0.3)),
    (actor_critic, [_n(3, 3), _n(3, 2), _n(3)]),
    (dataclass_network, Net(Layer(_n(3, 4), _n(4)), Layer(_n(4, 1), _n(1)))),
    (named_tuple_affine_flow, Params(_n(3, scale=0.2), _n(3))),
    (config_dict_model, [_n(3, 3), _n(3, 3)]),
    (planar_flow_chain, _n(2, 5)),
]

# forward mode over a gradient whose save stack holds reads of a buffer filled in a loop
# (the Cholesky factor written element by element) or a state tuple's cotangent entries
REFUSED = {
    "lstm_sequence": S2S_HVP,
    "gp_marginal_likelihood": S2S_HVP,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_program(f, x, mode):
    _check_program(f, x, mode, REFUSED.get(f.__name__, frozenset()))
