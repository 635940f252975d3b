"""Programs written the way users write them, round 33: peers' example programs told again
in our own words (autograd's, JAX's and the GradientTape tutorials' models) and textbook
machine learning written from scratch (CS231n's losses and layers, D2L, Bishop's models,
flows, graph networks); each checked in every mode as round 32 does
(``test_real_programs_round32.py``): the gradient on a first and a later call, forward mode
and the Hessian-vector product against central differences.
"""

import math

import numpy as np
import pytest
from test_real_programs_round32 import BY_THE_TAPE, MODES, ON_THE_TAPE, S2S_HVP, _check_program

import s2sgrad as sg

R = np.random.default_rng(3333)


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


# --- peers' examples: autograd --------------------------------------------------------------

GP_X = np.linspace(-2.0, 2.0, 6)[:, None]
GP_Y = np.sin(2.0 * GP_X[:, 0]) + 0.1 * np.cos(7.0 * GP_X[:, 0])


def rbf_covariance(params, x, xp):
    output_scale = np.exp(params[0])
    lengthscales = np.exp(params[1:2])
    diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(xp / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs**2, axis=2))


def gp_log_marginal_likelihood(params):
    """The negative log marginal likelihood with the mean, noise and kernel parameters
    packed in one vector, as autograd's Gaussian-process example does."""
    mean, noise_scale = params[0], np.exp(params[1]) + 0.001
    cov_params = params[2:]
    cov = rbf_covariance(cov_params, GP_X, GP_X) + noise_scale * np.eye(len(GP_Y))
    residual = GP_Y - mean
    sign, logdet = np.linalg.slogdet(cov)
    quad = residual @ np.linalg.solve(cov, residual)
    return 0.5 * (quad + logdet + len(GP_Y) * np.log(2 * np.pi))


BNN_X = np.linspace(-1.5, 1.5, 5)[:, None]
BNN_Y = np.cos(BNN_X[:, 0])
BNN_SHAPES = [(1, 3), (3,), (3, 1), (1,)]
BNN_SIZE = sum(int(np.prod(s)) for s in BNN_SHAPES)


def unpack_layers(weights):
    """A flat vector of weights cut into the layers' arrays."""
    out, start = [], 0
    for shape in BNN_SHAPES:
        size = int(np.prod(shape))
        out.append(weights[start : start + size].reshape(shape))
        start += size
    return out


def bnn_predict(weights):
    W1, b1, W2, b2 = unpack_layers(weights)
    return (np.tanh(BNN_X @ W1 + b1) @ W2 + b2)[:, 0]


def black_box_vi(variational):
    """Black-box variational inference for a Bayesian neural net: a Gaussian posterior,
    samples drawn by the reparameterisation trick with a fixed generator."""
    mean, log_std = variational[:BNN_SIZE], variational[BNN_SIZE:]
    rng = np.random.default_rng(0)
    eps = rng.standard_normal((3, BNN_SIZE))
    total = 0.0
    for e in eps:
        w = mean + np.exp(log_std) * e
        log_prior = -0.5 * np.sum(w**2)
        log_lik = -0.5 * np.sum((bnn_predict(w) - BNN_Y) ** 2) / 0.1**2
        total = total + log_prior + log_lik
    entropy = 0.5 * BNN_SIZE * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)
    return -(total / len(eps) + entropy)


MDN_X = np.linspace(-1.0, 1.0, 6)[:, None]
MDN_Y = np.sin(3 * MDN_X[:, 0])


def mdn_negative_log_likelihood(params):
    """A mixture density network: one hidden layer, mixing weights by a softmax, means
    and log scales from the same outputs."""
    hidden = np.tanh(MDN_X @ params["W1"] + params["b1"])
    out = hidden @ params["W2"] + params["b2"]
    logits, means, log_scales = np.split(out, 3, axis=1)
    log_weights = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    z = (MDN_Y[:, None] - means) / np.exp(log_scales)
    log_probs = log_weights - 0.5 * z**2 - log_scales - 0.5 * np.log(2 * np.pi)
    peak = np.max(log_probs, axis=1, keepdims=True)
    return -np.sum(peak[:, 0] + np.log(np.sum(np.exp(log_probs - peak), axis=1)))


VAE_X = (R.random((4, 5)) > 0.5).astype(float)
VAE_EPS = R.normal(size=(4, 2))


def vae_elbo(params):
    """A variational autoencoder's negative ELBO on binary data: an encoder giving the
    mean and log variance, a fixed draw, a Bernoulli decoder by logits."""
    enc = np.tanh(VAE_X @ params["enc_W"] + params["enc_b"])
    mu, log_var = enc[:, :2], enc[:, 2:]
    z = mu + np.exp(0.5 * log_var) * VAE_EPS
    logits = z @ params["dec_W"] + params["dec_b"]
    log_lik = np.sum(VAE_X * logits - np.logaddexp(0.0, logits))
    kl = -0.5 * np.sum(1 + log_var - mu**2 - np.exp(log_var))
    return (kl - log_lik) / len(VAE_X)


CONV_IMAGES = R.normal(size=(2, 5, 5))


def conv2d_valid(image, kernel):
    kh, kw = kernel.shape
    out_h, out_w = image.shape[0] - kh + 1, image.shape[1] - kw + 1
    out = np.zeros((out_h, out_w))
    for i in range(out_h):
        for j in range(out_w):
            out[i, j] = np.sum(image[i : i + kh, j : j + kw] * kernel)
    return out


def hand_written_convnet(params):
    kernels, W = params
    score = 0.0
    for img in CONV_IMAGES:
        maps = [np.maximum(conv2d_valid(img, k), 0.0) for k in kernels]
        feats = np.concatenate([m.ravel() for m in maps])
        score = score + np.tanh(feats @ W)
    return score**2


CHARS = "helo"
TEXT = "hello"


def one_hot_text(text):
    out = np.zeros((len(text), len(CHARS)))
    for t, ch in enumerate(text):
        out[t, CHARS.index(ch)] = 1.0
    return out


def sigmoid(x):
    return 0.5 * (np.tanh(x / 2.0) + 1.0)


def lstm_character_model(params):
    """An LSTM reading characters one-hot and scoring the next one: the gates from one
    matrix split in four."""
    inputs = one_hot_text(TEXT)
    hidden = np.zeros(3)
    cell = np.zeros(3)
    loss = 0.0
    for t in range(len(TEXT) - 1):
        joint = np.concatenate([inputs[t], hidden])
        gates = joint @ params["W"] + params["b"]
        i, f, o, g = np.split(gates, 4)
        cell = sigmoid(f) * cell + sigmoid(i) * np.tanh(g)
        hidden = sigmoid(o) * np.tanh(cell)
        logits = hidden @ params["V"]
        loss = loss - (logits[CHARS.index(TEXT[t + 1])] - np.log(np.sum(np.exp(logits))))
    return loss


NG_X = R.normal(size=(6, 2))
NG_Y = (NG_X @ np.array([1.0, -1.0]) > 0).astype(float)


def logistic_nll(w):
    z = NG_X @ w
    return np.sum(np.logaddexp(0.0, z) - NG_Y * z)


def natural_gradient_step(w, lr=0.5):
    """One natural-gradient step: the Fisher information of the logistic model solves
    against the gradient, then the loss after the step."""
    p = 1.0 / (1.0 + np.exp(-(NG_X @ w)))
    fisher = (NG_X * (p * (1 - p))[:, None]).T @ NG_X + 1e-3 * np.eye(2)
    g = NG_X.T @ (p - NG_Y)
    step = np.linalg.solve(fisher, g)
    return logistic_nll(w - lr * step)


RKHS_CENTRES = np.linspace(-1, 1, 5)
RKHS_X = np.linspace(-1.2, 1.2, 7)
RKHS_Y = np.abs(RKHS_X) ** 1.5


def rkhs_function(alphas, x, width=0.4):
    """f(x) = sum_i alpha_i k(c_i, x), a function in a kernel's Hilbert space."""
    return sum(a * np.exp(-((x - c) ** 2) / width) for a, c in zip(alphas, RKHS_CENTRES))


def rkhs_regression(alphas):
    K = np.exp(-((RKHS_CENTRES[:, None] - RKHS_CENTRES[None, :]) ** 2) / 0.4)
    residual = rkhs_function(alphas, RKHS_X) - RKHS_Y
    return np.mean(residual**2) + 0.01 * alphas @ K @ alphas


ODE_T = np.linspace(0.0, 1.0, 5)
ODE_TARGET = np.exp(-ODE_T)


def ode_net_euler(params, steps_per_interval=4):
    """An ODE whose right-hand side is a small network, integrated by Euler with a fixed
    step, fitted to a decaying curve at the observation times."""
    W1, b1, W2 = params
    y = np.array([1.0])
    preds = [y[0]]
    dt = (ODE_T[1] - ODE_T[0]) / steps_per_interval
    for _ in range(len(ODE_T) - 1):
        for _ in range(steps_per_interval):
            dydt = np.tanh(y[:, None] @ W1 + b1) @ W2
            y = y + dt * dydt[0]
        preds.append(y[0])
    return np.sum((np.array(preds) - ODE_TARGET) ** 2)


# --- peers' examples: JAX -------------------------------------------------------------------

MNIST_X = R.normal(size=(5, 4))
MNIST_LABELS = np.array([0, 2, 1, 2, 0])
MNIST_Y = np.eye(3)[MNIST_LABELS]


def mlp_predict(params, inputs):
    activations = inputs
    for W, b in params[:-1]:
        activations = np.tanh(activations @ W + b)
    final_W, final_b = params[-1]
    logits = activations @ final_W + final_b
    return logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))


def mnist_mlp_loss(params):
    """JAX's MNIST example: a list of (W, b) pairs, log-softmax outputs, the mean of the
    targets' log probabilities."""
    preds = mlp_predict(params, MNIST_X)
    return -np.mean(np.sum(preds * MNIST_Y, axis=1))


DP_X = R.normal(size=(4, 3))
DP_Y = R.normal(size=4)


def example_loss(w, x, y):
    return (np.tanh(x @ w) - y) ** 2


def dp_sgd_objective(w, clip=0.5, lr=0.3):
    """Differentially private SGD's step without the noise: per-example gradients by
    sg.vmap of sg.grad, each clipped to a norm, averaged; the loss after the step."""
    per_example = sg.vmap(sg.grad(example_loss), in_axes=(None, 0, 0))(w, DP_X, DP_Y)
    norms = np.sqrt(np.sum(per_example**2, axis=1, keepdims=True) + 1e-12)
    clipped = per_example / np.maximum(1.0, norms / clip)
    w_new = w - lr * np.mean(clipped, axis=0)
    return np.mean((np.tanh(DP_X @ w_new) - DP_Y) ** 2)


KF_OBS = np.array([0.3, 0.9, 1.4, 2.2, 2.8])


def kalman_filter_nll(params):
    """A constant-velocity Kalman filter's negative log likelihood of the observations
    in the noise parameters (log scale), the state a position and a velocity."""
    q, r = np.exp(params[0]), np.exp(params[1])
    F = np.array([[1.0, 1.0], [0.0, 1.0]])
    H = np.array([[1.0, 0.0]])
    Q = q * np.array([[1 / 3, 1 / 2], [1 / 2, 1.0]])
    m, P = np.zeros(2), np.eye(2)
    nll = 0.0
    for y in KF_OBS:
        m = F @ m
        P = F @ P @ F.T + Q
        S = (H @ P @ H.T)[0, 0] + r
        K = (P @ H.T)[:, 0] / S
        innovation = y - m[0]
        nll = nll + 0.5 * (np.log(2 * np.pi * S) + innovation**2 / S)
        m = m + K * innovation
        P = P - np.outer(K, K) * S
    return nll


def neural_ode_rk4(theta, T=1.0, n=6):
    """A two-dimensional neural ODE integrated by RK4, final state against a target."""
    W, b = theta[:4].reshape(2, 2), theta[4:]

    def field(z):
        return np.tanh(W @ z + b)

    z = np.array([1.0, 0.0])
    h = T / n
    for _ in range(n):
        k1 = field(z)
        k2 = field(z + 0.5 * h * k1)
        k3 = field(z + 0.5 * h * k2)
        k4 = field(z + h * k3)
        z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.sum((z - np.array([0.2, 0.7])) ** 2)


# --- peers' examples: GradientTape tutorials ------------------------------------------------

LR_X = np.linspace(0, 1, 8)
LR_Y = 3.0 * LR_X + 2.0 + 0.1 * np.sin(9 * LR_X)


class LinearModel:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return self.w * x + self.b


def linear_regression_model(wb):
    model = LinearModel(wb[0], wb[1])
    return np.mean((model(LR_X) - LR_Y) ** 2)


def custom_training_loop(w, epochs=3, lr=0.1):
    """A training loop written out, each step's gradient taken inside the function; the
    final loss depends on the initial weights through every step."""

    def loss_fn(v):
        return np.mean((np.tanh(LR_X[:, None] * v[0] + v[1]) - LR_Y / 5) ** 2)

    for _ in range(epochs):
        w = w - lr * sg.grad(loss_fn)(w)
    return loss_fn(w)


PINN_T = np.linspace(0.1, 1.0, 4)


def pinn_u(theta, t):
    return theta[0] * np.sin(theta[1] * t) + theta[2] * t**2


def physics_informed_loss(theta):
    """u'' + u = 0 at collocation points, the second derivative by nested gradients,
    plus the initial conditions u(0) = 0, u'(0) = 1."""
    du = sg.grad(pinn_u, wrt=1)
    d2u = sg.grad(du, wrt=1)
    residual = 0.0
    for t in PINN_T:
        residual = residual + (d2u(theta, t) + pinn_u(theta, t)) ** 2
    return residual + pinn_u(theta, 0.0) ** 2 + (du(theta, 0.0) - 1.0) ** 2


# --- textbook ML: CS231n --------------------------------------------------------------------

CS_X = R.normal(size=(5, 4))
CS_Y = np.array([0, 1, 2, 1, 0])


def svm_loss_naive(W, reg=0.1):
    loss = 0.0
    num_train = CS_X.shape[0]
    num_classes = W.shape[1]
    for i in range(num_train):
        scores = CS_X[i].dot(W)
        correct_class_score = scores[CS_Y[i]]
        for j in range(num_classes):
            if j == CS_Y[i]:
                continue
            margin = scores[j] - correct_class_score + 1
            if margin > 0:
                loss += margin
    loss /= num_train
    loss += reg * np.sum(W * W)
    return loss


def svm_loss_vectorized(W, reg=0.1):
    scores = CS_X @ W
    correct = scores[np.arange(len(CS_Y)), CS_Y][:, None]
    margins = np.maximum(0, scores - correct + 1)
    margins[np.arange(len(CS_Y)), CS_Y] = 0
    return np.sum(margins) / len(CS_Y) + reg * np.sum(W * W)


def softmax_loss_naive(W, reg=0.05):
    loss = 0.0
    for i in range(CS_X.shape[0]):
        scores = CS_X[i] @ W
        scores -= np.max(scores)
        loss += -scores[CS_Y[i]] + np.log(np.sum(np.exp(scores)))
    return loss / CS_X.shape[0] + reg * np.sum(W**2)


def softmax_loss_vectorized(W, reg=0.05):
    scores = CS_X @ W
    scores = scores - scores.max(axis=1, keepdims=True)
    probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    loss = -np.log(probs[range(len(CS_Y)), CS_Y]).mean()
    return loss + reg * (W**2).sum()


def two_layer_net(params, reg=0.01):
    W1, b1, W2, b2 = params["W1"], params["b1"], params["W2"], params["b2"]
    N = CS_X.shape[0]
    h1 = np.maximum(0, CS_X.dot(W1) + b1)
    scores = h1.dot(W2) + b2
    shifted = scores - np.max(scores, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    data_loss = -np.sum(log_probs[np.arange(N), CS_Y]) / N
    return data_loss + 0.5 * reg * (np.sum(W1 * W1) + np.sum(W2 * W2))


BN_X = R.normal(size=(6, 3)) * 2 + 1


def batchnorm_forward(x, gamma, beta, eps=1e-5):
    sample_mean = x.mean(axis=0)
    sample_var = x.var(axis=0)
    x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
    out = gamma * x_hat + beta
    cache = (x_hat, gamma, sample_mean)
    return out, cache


def batchnorm_net(params):
    out, _ = batchnorm_forward(BN_X @ params["W"], params["gamma"], params["beta"])
    return np.sum(np.tanh(out) ** 2 * np.arange(1, 4))


def layernorm_forward(x, gamma, beta, eps=1e-5):
    mu = np.mean(x, axis=1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def layernorm_net(params):
    h = layernorm_forward(BN_X @ params["W"], params["gamma"], params["beta"])
    return np.sum(np.sin(h) * BN_X[:, :1])


DROP_MASK = (np.random.default_rng(7).random((6, 4)) < 0.7) / 0.7


def dropout_forward(x, mask):
    out = x * mask
    return out.astype(x.dtype, copy=False)


def inverted_dropout_net(params):
    h = np.maximum(BN_X @ params[0], 0.0)
    h = dropout_forward(h, DROP_MASK)
    return np.sum((h @ params[1]) ** 2)


CONV_X = R.normal(size=(1, 2, 5, 5))


def conv_forward_naive(x, w, b, stride=1, pad=1):
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), mode="constant")
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    out = np.zeros((N, F, H_out, W_out))
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    window = x_pad[n, :, i * stride : i * stride + HH, j * stride : j * stride + WW]
                    out[n, f, i, j] = np.sum(window * w[f]) + b[f]
    return out


def max_pool_forward_naive(x, size=2, stride=2):
    N, C, H, W = x.shape
    H_out = 1 + (H - size) // stride
    W_out = 1 + (W - size) // stride
    out = np.zeros((N, C, H_out, W_out))
    for i in range(H_out):
        for j in range(W_out):
            window = x[:, :, i * stride : i * stride + size, j * stride : j * stride + size]
            out[:, :, i, j] = np.max(window, axis=(2, 3))
    return out


def conv_relu_pool(params):
    conv = conv_forward_naive(CONV_X, params["w"], params["b"], stride=2)
    pooled = max_pool_forward_naive(np.maximum(conv, 0))
    return np.sum(pooled**2) + np.sum(conv[:, :, 0, :] * 0.1)


CAPTION_FEATURES = R.normal(size=(2, 4))
CAPTIONS = np.array([[0, 2, 1, 3], [0, 1, 1, 3]])


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    next_h = np.tanh(x.dot(Wx) + prev_h.dot(Wh) + b)
    cache = (x, prev_h, next_h)
    return next_h, cache


def rnn_captioning_loss(params):
    """CS231n's captioning RNN: image features project to the first hidden state, words
    embedded, a temporal softmax over the vocabulary at each step."""
    h = CAPTION_FEATURES @ params["W_proj"]
    captions_in, captions_out = CAPTIONS[:, :-1], CAPTIONS[:, 1:]
    loss = 0.0
    for t in range(captions_in.shape[1]):
        x = params["W_embed"][captions_in[:, t]]
        h, _ = rnn_step_forward(x, h, params["Wx"], params["Wh"], params["b"])
        scores = h @ params["W_vocab"]
        scores = scores - scores.max(axis=1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=1, keepdims=True)
        loss -= np.sum(np.log(probs[np.arange(len(h)), captions_out[:, t]]))
    return loss / len(h)


# --- textbook ML: D2L and Bishop --------------------------------------------------------------

GMM_X = np.concatenate([R.normal(-1, 0.5, size=5), R.normal(1.5, 0.7, size=5)])


def gmm_log_likelihood(params):
    """A one-dimensional Gaussian mixture's negative log likelihood: mixing weights by a
    softmax of logits, scales by exp, log-sum-exp written out."""
    logits, means, log_sds = params[:2], params[2:4], params[4:]
    log_w = logits - np.log(np.sum(np.exp(logits)))
    total = 0.0
    for x in GMM_X:
        comps = log_w - 0.5 * ((x - means) / np.exp(log_sds)) ** 2 - log_sds
        m = comps.max()
        total += m + np.log(np.exp(comps - m).sum())
    return -(total - len(GMM_X) * 0.5 * math.log(2 * math.pi))


PROBIT_X = R.normal(size=(6, 2))
PROBIT_Y = np.array([1, 0, 1, 1, 0, 0])


def normal_cdf(z):
    return 0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)))


def probit_regression(w):
    p = normal_cdf(PROBIT_X @ w)
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return -np.sum(PROBIT_Y * np.log(p) + (1 - PROBIT_Y) * np.log(1 - p))


RBF_X = np.linspace(-2, 2, 9)
RBF_Y = np.sinc(RBF_X)


def rbf_network_fit(params):
    centres, log_widths, weights = params
    phi = np.exp(-((RBF_X[:, None] - centres[None, :]) ** 2) / np.exp(2 * log_widths))
    return 0.5 * np.sum((phi @ weights - RBF_Y) ** 2)


SG_CENTRE = np.array([0, 1, 2, 3, 1])
SG_CONTEXT = np.array([1, 2, 3, 0, 0])
SG_NEGATIVES = np.array([[2, 3], [0, 3], [1, 0], [2, 1], [3, 2]])


def log_sigmoid(x):
    return -np.logaddexp(0.0, -x)


def word2vec_negative_sampling(embeddings):
    """Skip-gram with negative sampling: centre vectors and context vectors in one
    dict, the negatives drawn beforehand."""
    V_in, V_out = embeddings["in"], embeddings["out"]
    loss = 0.0
    for c, o, negs in zip(SG_CENTRE, SG_CONTEXT, SG_NEGATIVES):
        v = V_in[c]
        loss -= log_sigmoid(V_out[o] @ v)
        loss -= np.sum(log_sigmoid(-(V_out[negs] @ v)))
    return loss / len(SG_CENTRE)


MF_USERS = np.array([0, 0, 1, 2, 2, 3])
MF_ITEMS = np.array([0, 2, 1, 0, 1, 2])
MF_RATINGS = np.array([4.0, 3.0, 5.0, 2.0, 4.5, 1.0])


def matrix_factorisation_sgd_loss(params, lam=0.05):
    P, Q, bu, bi = params
    preds = np.einsum("ij,ij->i", P[MF_USERS], Q[MF_ITEMS]) + bu[MF_USERS] + bi[MF_ITEMS] + 3.0
    return np.mean((preds - MF_RATINGS) ** 2) + lam * (np.sum(P**2) + np.sum(Q**2))


ATT_Q = R.normal(size=(3, 4))
ATT_KV = R.normal(size=(5, 4))


def scaled_dot_attention(q, k, v, mask=None):
    scores = q @ k.T / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ v


def cross_attention(params):
    q = ATT_Q @ params["Wq"]
    k = ATT_KV @ params["Wk"]
    v = ATT_KV @ params["Wv"]
    mask = np.ones((3, 5), dtype=bool)
    mask[:, -1] = False
    return np.sum(scaled_dot_attention(q, k, v, mask) ** 2)


def bahdanau_attention(params):
    """Additive attention: scores from tanh of projected queries and keys summed."""
    feats = np.tanh((ATT_Q @ params["Wq"])[:, None, :] + (ATT_KV @ params["Wk"])[None, :, :])
    scores = feats @ params["v"]
    alpha = np.exp(scores) / np.sum(np.exp(scores), axis=1, keepdims=True)
    context = alpha @ ATT_KV
    return np.sum(np.sin(context))


def linear_attention(params):
    """Attention with the feature map elu(x) + 1 instead of a softmax."""

    def phi(x):
        return np.where(x > 0, x + 1.0, np.exp(x))

    q = phi(ATT_Q @ params["Wq"])
    k = phi(ATT_KV @ params["Wk"])
    kv = k.T @ ATT_KV
    normaliser = q @ k.sum(axis=0)
    return np.sum((q @ kv) / normaliser[:, None])


GRAPH_EDGES = np.array([[0, 1], [1, 2], [2, 0], [2, 3], [3, 1]])
NODE_FEATS = R.normal(size=(4, 3))


def gnn_message_passing(params, rounds=2):
    """Messages along directed edges summed at receivers by np.add.at, node states
    updated by a residual layer, a readout by the mean."""
    h = NODE_FEATS
    senders, receivers = GRAPH_EDGES[:, 0], GRAPH_EDGES[:, 1]
    for W_msg, W_upd in params:
        messages = np.tanh(h[senders] @ W_msg)
        aggregated = np.zeros_like(h)
        np.add.at(aggregated, receivers, messages)
        h = h + np.tanh(aggregated @ W_upd)
    return np.sum(np.mean(h, axis=0) ** 2)


def gcn_normalised(W):
    A = np.zeros((4, 4))
    A[GRAPH_EDGES[:, 0], GRAPH_EDGES[:, 1]] = 1.0
    A = A + A.T + np.eye(4)
    d = 1.0 / np.sqrt(A.sum(axis=1))
    A_hat = d[:, None] * A * d[None, :]
    h = np.maximum(A_hat @ NODE_FEATS @ W[0], 0)
    logits = A_hat @ h @ W[1]
    return -np.sum(logits[:, 0] - np.log(np.sum(np.exp(logits), axis=1)))


FLOW_Z = R.normal(size=(5, 2))


def planar_flows(params):
    """Planar flows f(z) = z + u tanh(w.z + b) stacked, their log-determinants summed,
    the mean negative log density of the base under the flow."""
    z = FLOW_Z
    log_det = np.zeros(len(z))
    for u, w, b in params:
        a = z @ w + b
        psi = (1 - np.tanh(a) ** 2)[:, None] * w
        log_det = log_det + np.log(np.abs(1 + psi @ u))
        z = z + np.outer(np.tanh(a), u)
    log_base = -0.5 * np.sum(z**2, axis=1)
    return -np.mean(log_base + log_det)


def affine_coupling_flow(params):
    """RealNVP coupling layers: half the coordinates scale and shift the other half, the
    halves swapped between layers."""
    x = np.concatenate([FLOW_Z, FLOW_Z[:, ::-1] * 0.5], axis=1)
    log_det = 0.0
    for layer, (Ws, Wt) in enumerate(params):
        x1, x2 = x[:, :2], x[:, 2:]
        if layer % 2:
            x1, x2 = x2, x1
        s = np.tanh(x1 @ Ws)
        t = x1 @ Wt
        y2 = x2 * np.exp(s) + t
        log_det = log_det + np.sum(s, axis=1)
        x = np.concatenate([x1, y2], axis=1) if layer % 2 == 0 else np.concatenate([y2, x1], axis=1)
    return np.mean(0.5 * np.sum(x**2, axis=1) - log_det)


GPH_X = np.array([[0.0, 0.1], [0.5, -0.3], [1.0, 0.8], [1.6, 0.2], [2.1, -0.5]])
GPH_Y = np.array([0.3, -0.1, 0.9, 0.4, -0.6])


def gp_hyperparameters_cholesky(log_params):
    """GP hyperparameters by Cholesky: ARD lengthscales, the marginal likelihood from
    the factor's diagonal and two triangular solves."""
    lengthscales = np.exp(log_params[:2])
    signal, noise = np.exp(log_params[2]), np.exp(log_params[3])
    scaled = GPH_X / lengthscales
    sq = np.sum(scaled**2, 1)[:, None] + np.sum(scaled**2, 1)[None, :] - 2 * scaled @ scaled.T
    K = signal**2 * np.exp(-0.5 * sq) + (noise**2 + 1e-6) * np.eye(len(GPH_Y))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, GPH_Y))
    return 0.5 * GPH_Y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * len(GPH_Y) * np.log(2 * np.pi)


def d2l_softmax_regression(params):
    W, b = params

    def net(X):
        return softmax(X.reshape((-1, W.shape[0])) @ W + b)

    def softmax(X):
        X_exp = np.exp(X)
        partition = X_exp.sum(1, keepdims=True)
        return X_exp / partition

    y_hat = net(CS_X)
    return -np.log(y_hat[range(len(y_hat)), CS_Y]).mean()


def d2l_gru(params):
    """D2L's GRU from scratch: a state carried through a loop over time steps, the
    parameters a tuple unpacked at the top."""
    W_xz, W_hz, b_z, W_xr, W_hr, b_r, W_xh, W_hh, b_h, W_hq = params
    H = np.zeros((1, 3))
    outputs = []
    for X in CS_X[:, None, :]:
        Z = sigmoid((X @ W_xz) + (H @ W_hz) + b_z)
        Rg = sigmoid((X @ W_xr) + (H @ W_hr) + b_r)
        H_tilde = np.tanh((X @ W_xh) + ((Rg * H) @ W_hh) + b_h)
        H = Z * H + (1 - Z) * H_tilde
        outputs.append(H @ W_hq)
    return np.sum(np.concatenate(outputs, axis=0) ** 2)


def _gru_params():
    shapes = [(4, 3), (3, 3), (3,)] * 3 + [(3, 2)]
    return tuple(_n(*s) for s in shapes)


PROGRAMS = [
    (gp_log_marginal_likelihood, np.array([0.1, -1.0, 0.2, -0.3])),
    (black_box_vi, np.concatenate([_n(BNN_SIZE), -1.0 + _n(BNN_SIZE, scale=0.1)])),
    (
        mdn_negative_log_likelihood,
        {"W1": _n(1, 4), "b1": _n(4), "W2": _n(4, 6), "b2": _n(6)},
    ),
    (vae_elbo, {"enc_W": _n(5, 4), "enc_b": _n(4), "dec_W": _n(2, 5), "dec_b": _n(5)}),
    (hand_written_convnet, ([_n(2, 2), _n(2, 2)], _n(32, scale=0.2))),
    (lstm_character_model, {"W": _n(7, 12), "b": _n(12), "V": _n(3, 4)}),
    (natural_gradient_step, _n(2)),
    (rkhs_regression, _n(5)),
    (ode_net_euler, (_n(1, 3), _n(3), _n(3, 1))),
    (mnist_mlp_loss, [(_n(4, 5), _n(5)), (_n(5, 4), _n(4)), (_n(4, 3), _n(3))]),
    (dp_sgd_objective, _n(3)),
    (kalman_filter_nll, np.array([-1.0, -0.5])),
    (neural_ode_rk4, _n(6)),
    (linear_regression_model, _n(2)),
    (custom_training_loop, _n(2)),
    (physics_informed_loss, np.array([0.9, 1.1, 0.1])),
    (svm_loss_naive, _n(4, 3)),
    (svm_loss_vectorized, _n(4, 3)),
    (softmax_loss_naive, _n(4, 3)),
    (softmax_loss_vectorized, _n(4, 3)),
    (two_layer_net, {"W1": _n(4, 5), "b1": _n(5), "W2": _n(5, 3), "b2": _n(3)}),
    (batchnorm_net, {"W": _n(3, 3), "gamma": 1 + _n(3), "beta": _n(3)}),
    (layernorm_net, {"W": _n(3, 4), "gamma": 1 + _n(4), "beta": _n(4)}),
    (inverted_dropout_net, [_n(3, 4), _n(4, 2)]),
    (conv_relu_pool, {"w": _n(2, 2, 3, 3), "b": _n(2)}),
    (
        rnn_captioning_loss,
        {
            "W_proj": _n(4, 3),
            "W_embed": _n(4, 2),
            "Wx": _n(2, 3),
            "Wh": _n(3, 3),
            "b": _n(3),
            "W_vocab": _n(3, 4),
        },
    ),
    (gmm_log_likelihood, np.array([0.1, -0.2, -1.0, 1.4, -0.6, -0.4])),
    (probit_regression, _n(2)),
    (rbf_network_fit, (np.linspace(-1.5, 1.5, 4), _n(4, scale=0.1), _n(4))),
    (word2vec_negative_sampling, {"in": _n(4, 3), "out": _n(4, 3)}),
    (matrix_factorisation_sgd_loss, (_n(4, 2), _n(3, 2), _n(4), _n(3))),
    (cross_attention, {"Wq": _n(4, 3), "Wk": _n(4, 3), "Wv": _n(4, 2)}),
    (bahdanau_attention, {"Wq": _n(4, 3), "Wk": _n(4, 3), "v": _n(3)}),
    (linear_attention, {"Wq": _n(4, 3), "Wk": _n(4, 3)}),
    (gnn_message_passing, [(_n(3, 3), _n(3, 3)), (_n(3, 3), _n(3, 3))]),
    (gcn_normalised, [_n(3, 4), _n(4, 2)]),
    (planar_flows, [(_n(2), _n(2), 0.1), (_n(2), _n(2), -0.2)]),
    (affine_coupling_flow, [(_n(2, 2), _n(2, 2)), (_n(2, 2), _n(2, 2))]),
    (gp_hyperparameters_cholesky, np.array([0.0, 0.3, 0.1, -1.5])),
    (d2l_softmax_regression, (_n(4, 3), _n(3))),
    (d2l_gru, _gru_params()),
]

# what each mode refuses, naming the program's line: objects and sg.vmap in the transformer
# (auto tapes them), forward mode over a gradient taken inside or over a save stack sharing a
# buffer, and the tape's a.dot(b) of a plain a (NumPy converts b; s2s and auto differentiate)
REFUSED = {
    "dp_sgd_objective": BY_THE_TAPE,
    "custom_training_loop": S2S_HVP,
    "physics_informed_loss": S2S_HVP,
    "gnn_message_passing": S2S_HVP,
    "svm_loss_naive": ON_THE_TAPE,
    "two_layer_net": ON_THE_TAPE,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_program(f, x, mode):
    _check_program(f, x, mode, REFUSED.get(f.__name__, frozenset()))
