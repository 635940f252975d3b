"""A 30-line function for timing the source transformation itself (see run.py).

run.py copies this file under fresh module names, so that each copy has new code objects
and s2sgrad's cache is cold for it. Straight-line code only: no loops or branches.
"""

import numpy as np


def layer_norm_classifier(W1, b1, gamma, beta, W2, b2, X, Y):
    z = X @ W1 + b1
    mu = np.mean(z, axis=1, keepdims=True)
    centred = z - mu
    var = np.mean(centred**2, axis=1, keepdims=True)
    inv_std = 1.0 / np.sqrt(var + 1e-5)
    normed = centred * inv_std
    a = gamma * normed + beta
    h = np.tanh(a)
    gate = 1.0 / (1.0 + np.exp(-a))
    mixed = h * gate + 0.1 * a
    logits = mixed @ W2 + b2
    top = np.max(logits, axis=1, keepdims=True)
    shifted = logits - top
    e = np.exp(shifted)
    total = np.sum(e, axis=1, keepdims=True)
    p = e / total
    logp = shifted - np.log(total)
    n = X.shape[0]
    nll = -np.sum(Y * logp) / n
    entropy = -np.sum(p * logp) / n
    confidence = np.mean(np.max(p, axis=1))
    l2 = np.sum(W1 * W1) + np.sum(W2 * W2)
    l1 = np.sum(np.abs(gamma - 1.0)) + np.sum(np.abs(beta))
    spread = np.std(logits, axis=0)
    balance = np.mean((spread - 1.0) ** 2)
    act = np.mean(np.square(h))
    sparsity = np.mean(np.sqrt(mixed * mixed + 1e-8))
    reg = 1e-4 * l2 + 1e-3 * l1 + 0.01 * balance
    aux = 0.05 * entropy - 0.01 * confidence + 0.001 * (act + sparsity)
    return nll + reg + aux


def make_args(rng):
    """Small inputs: the transformation should dominate the first call's time."""
    n, d_in, d_hidden, d_out = 8, 6, 5, 3
    W1 = rng.normal(size=(d_in, d_hidden))
    b1 = rng.normal(size=d_hidden)
    gamma = 1.0 + 0.1 * rng.normal(size=d_hidden)
    beta = 0.1 * rng.normal(size=d_hidden)
    W2 = rng.normal(size=(d_hidden, d_out))
    b2 = rng.normal(size=d_out)
    X = rng.normal(size=(n, d_in))
    Y = np.eye(d_out)[rng.integers(0, d_out, size=n)]
    return W1, b1, gamma, beta, W2, b2, X, Y


WRT = (0, 1, 2, 3, 4, 5)
