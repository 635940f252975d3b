"""Programs written the way users write them, round 34, continued: textbook machine learning
the earlier rounds left out (a pre-norm transformer over a list of layer dicts, MADE's masks,
factorisation machines, knowledge-graph embeddings, prototypical networks, ArcFace margins,
beam-search scores, Bayesian logistic regression by Laplace, RBM free energies, LISTA,
Tobit, beta and conditional-logit regression, GIN, instance and weight normalisation, DQN
targets, Reptile, the SVM dual, MMD); checked in every mode as round 32 does
(``test_real_programs_round32.py``).
"""

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from test_real_programs_round32 import BY_THE_TAPE, EVERYWHERE, MODES, ON_THE_TAPE, _check_program

R = np.random.default_rng(3436)


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


X4 = R.normal(size=(4, 3))
Y4 = np.array([0, 2, 1, 2])
T4 = np.array([0.3, -0.5, 1.1, 0.2])


def softmax(z, axis=-1):
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(z, axis=-1):
    m = np.max(z, axis=axis, keepdims=True)
    return z - m - np.log(np.sum(np.exp(z - m), axis=axis, keepdims=True))


def layer_norm(x, gain, bias, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return gain * (x - mu) / np.sqrt(var + eps) + bias


# --- sequence models ----------------------------------------------------------------------------

SEQ = R.normal(size=(4, 3))


def prenorm_transformer(layers):
    """A pre-norm decoder: a list of layer dicts, causal single-head attention with a mask
    built by np.triu, a GELU feed-forward, residual connections."""
    x = SEQ
    n = len(x)
    mask = np.triu(np.ones((n, n)), k=1) * -1e9
    for layer in layers:
        h = layer_norm(x, layer["g1"], layer["b1"])
        q, k, v = h @ layer["Wq"], h @ layer["Wk"], h @ layer["Wv"]
        scores = q @ k.T / math.sqrt(q.shape[-1]) + mask
        x = x + softmax(scores) @ v
        h = layer_norm(x, layer["g2"], 0.0)
        hidden = h @ layer["W1"]
        gelu = 0.5 * hidden * (1 + np.tanh(0.79788456 * (hidden + 0.044715 * hidden**3)))
        x = x + gelu @ layer["W2"]
    return np.sum(x[-1] ** 2)


def _transformer_layers():
    return [
        {
            "g1": 1 + _n(3, scale=0.1),
            "b1": _n(3, scale=0.1),
            "Wq": _n(3, 3),
            "Wk": _n(3, 3),
            "Wv": _n(3, 3),
            "g2": 1 + _n(3, scale=0.1),
            "W1": _n(3, 4),
            "W2": _n(4, 3),
        }
        for _ in range(2)
    ]


def learned_positional_embeddings(params):
    """Token embeddings plus learned positions, one attention layer with ALiBi-like biases,
    mean pooled and classified."""
    tokens = np.array([3, 1, 0, 2])
    x = params["tok"][tokens] + params["pos"][: len(tokens)]
    distance = np.abs(np.arange(4)[:, None] - np.arange(4)[None, :])
    scores = x @ x.T / np.sqrt(3.0) - 0.5 * distance
    pooled = np.mean(softmax(scores) @ x, axis=0)
    return -log_softmax(pooled @ params["out"])[1]


def beam_search_scores(logits):
    """Beam search over three steps with width two: cumulative log-probabilities of the
    chosen beams (the choices fixed by argsort, the scores differentiated)."""
    steps = logits.reshape(3, 4)
    beams = [([], 0.0)]
    for t in range(3):
        logp = log_softmax(steps[t])
        candidates = []
        for seq, score in beams:
            for token in range(4):
                candidates.append((seq + [token], score + logp[token]))
        order = np.argsort([-float(np.asarray(s)) for _, s in candidates])[:2]
        beams = [candidates[i] for i in order]
    return beams[0][1] + 0.5 * beams[1][1]


def hmm_viterbi_free_forward(params):
    """An HMM's log-likelihood by the forward algorithm in log space with a hand-written
    logsumexp, emission Gaussian, transition softmax rows."""
    trans = log_softmax(params["trans"], axis=1)
    means = params["means"]
    obs = np.array([0.2, 1.1, 0.9, -0.3])
    log_alpha = np.log(np.full(2, 0.5)) - 0.5 * (obs[0] - means) ** 2
    for y in obs[1:]:
        m = log_alpha[:, None] + trans
        peak = np.max(m, axis=0)
        log_alpha = peak + np.log(np.sum(np.exp(m - peak), axis=0)) - 0.5 * (y - means) ** 2
    peak = np.max(log_alpha)
    return -(peak + np.log(np.sum(np.exp(log_alpha - peak))))


def linear_chain_crf_by_loops(params):
    """A linear-chain CRF's negative log-likelihood: the gold path's score by a loop, the
    partition function by the forward recursion with np.logaddexp.reduce."""
    emissions = SEQ @ params["W"]
    trans = params["trans"]
    tags = [0, 2, 1, 1]
    gold = emissions[0, tags[0]]
    for t in range(1, len(tags)):
        gold = gold + trans[tags[t - 1], tags[t]] + emissions[t, tags[t]]
    alpha = emissions[0]
    for t in range(1, len(tags)):
        alpha = np.logaddexp.reduce(alpha[:, None] + trans, axis=0) + emissions[t]
    return np.logaddexp.reduce(alpha) - gold


def wavenet_dilated(params):
    """Dilated causal convolutions with gated activations and skip connections, WaveNet
    style, on a short signal."""
    signal = np.sin(np.linspace(0.0, 3.0, 8))
    x = signal
    skip = np.zeros(8)
    for dilation, (wf, wg) in zip((1, 2), params):
        shifted = np.concatenate([np.zeros(dilation), x[:-dilation]])
        f = np.tanh(wf[0] * x + wf[1] * shifted)
        g = 1 / (1 + np.exp(-(wg[0] * x + wg[1] * shifted)))
        out = f * g
        skip = skip + out
        x = x + out
    return np.sum((skip[1:] - signal[:-1]) ** 2)


def gru_seq2seq_teacher_forcing(params):
    """A GRU encoder, its final state starting a decoder with teacher forcing, per-step
    cross entropy."""
    Wz, Wr, Wh, Wout = params["Wz"], params["Wr"], params["Wh"], params["Wout"]

    def cell(x, h):
        xh = np.concatenate([x, h])
        z = 1 / (1 + np.exp(-(xh @ Wz)))
        r = 1 / (1 + np.exp(-(xh @ Wr)))
        cand = np.tanh(np.concatenate([x, r * h]) @ Wh)
        return (1 - z) * h + z * cand

    h = np.zeros(2)
    for x in SEQ[:, :2]:
        h = cell(x, h)
    targets = [1, 0, 2]
    previous = np.zeros(2)
    loss = 0.0
    for t in targets:
        h = cell(previous, h)
        loss -= log_softmax(h @ Wout)[t]
        previous = np.eye(3)[t][:2]
    return loss


# --- representation learning --------------------------------------------------------------


def made_autoregressive(params):
    """MADE: masks from degrees make a one-hidden-layer net autoregressive; the Bernoulli
    negative log-likelihood of binary vectors."""
    data = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0]], dtype=float)
    in_deg = np.arange(1, 4)
    hid_deg = np.array([1, 2, 1, 2])
    M1 = (hid_deg[None, :] >= in_deg[:, None]).astype(float)
    M2 = (in_deg[None, :] > hid_deg[:, None]).astype(float)
    h = np.tanh(data @ (params["W1"] * M1) + params["b1"])
    logits = h @ (params["W2"] * M2) + params["b2"]
    return np.sum(np.logaddexp(0.0, logits) - data * logits)


def rbm_free_energy(params):
    """A Bernoulli RBM's free energy difference between data and fantasy particles (the
    contrastive divergence objective with the negatives held)."""
    W, b, c = params["W"], params["b"], params["c"]
    data = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    fantasy = np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])

    def free_energy(v):
        return -v @ b - np.sum(np.logaddexp(0.0, v @ W + c), axis=1)

    return np.mean(free_energy(data)) - np.mean(free_energy(fantasy))


def lista_unrolled(params):
    """LISTA: ISTA's iterations unrolled with learned matrices and a soft threshold made
    smooth; the reconstruction error and sparsity."""
    D = np.array([[1.0, 0.3, -0.2], [0.2, 1.0, 0.5]])
    y = np.array([0.7, -0.4])
    We, S, theta = params

    def shrink(v):
        return v - theta * np.tanh(v / theta)

    z = shrink(We @ y)
    for _ in range(3):
        z = shrink(We @ y + S @ z)
    return np.sum((D @ z - y) ** 2) + 0.1 * np.sum(np.sqrt(z**2 + 1e-3))


def infomax_ica(W):
    """Infomax ICA's objective: the log-determinant of the unmixing matrix plus the
    log-density of the sources under a logistic prior."""
    mixed = X4[:, :2]
    sources = mixed @ W.T
    log_density = np.sum(-2 * np.logaddexp(0.0, sources) + sources)
    return -(len(mixed) * np.log(np.abs(np.linalg.det(W))) + log_density)


def factor_analysis_nll(params):
    """Factor analysis: the marginal covariance Lambda Lambda^T + Psi, the Gaussian
    negative log-likelihood by slogdet and solve."""
    loadings, log_psi = params[:6].reshape(3, 2), params[6:]
    cov = loadings @ loadings.T + np.diag(np.exp(log_psi))
    centred = X4 - X4.mean(axis=0)
    sign, logdet = np.linalg.slogdet(cov)
    quad = np.sum(centred * np.linalg.solve(cov, centred.T).T)
    return 0.5 * (len(X4) * logdet + quad)


def denoising_score_matching(params):
    """Denoising score matching with fixed noise: a small net's score regressed on the
    noise direction."""
    sigma = 0.3
    noise = np.array([[0.2, -0.4, 0.1], [0.5, 0.3, -0.2], [-0.1, 0.1, 0.6], [0.3, 0.0, -0.5]])
    noisy = X4 + sigma * noise
    score = np.tanh(noisy @ params[0]) @ params[1]
    return np.mean(np.sum((score + noise / sigma) ** 2, axis=1)) * sigma**2


def prototypical_network(W):
    """Prototypical networks: class prototypes as mean embeddings of the support set,
    queries classified by a softmax over negative squared distances."""
    support = X4
    support_labels = np.array([0, 0, 1, 1])
    query = np.array([[0.1, 0.4, -0.2], [0.8, -0.3, 0.5]])
    query_labels = [1, 0]
    emb = np.tanh(support @ W)
    prototypes = np.stack([emb[support_labels == k].mean(axis=0) for k in range(2)])
    q = np.tanh(query @ W)
    d = np.sum((q[:, None, :] - prototypes[None, :, :]) ** 2, axis=-1)
    logp = log_softmax(-d, axis=1)
    return -sum(logp[i, c] for i, c in enumerate(query_labels))


def arcface_loss(params):
    """ArcFace: normalised features and class weights, an additive angular margin on the
    true class's angle."""
    W, feats = params
    s, m = 4.0, 0.3
    f = feats / np.linalg.norm(feats, axis=1, keepdims=True)
    w = W / np.linalg.norm(W, axis=0, keepdims=True)
    cos = np.clip(f @ w, -0.999, 0.999)
    theta = np.arccos(cos)
    labels = np.array([0, 2, 1])
    onehot = np.eye(3)[labels]
    logits = s * np.where(onehot > 0, np.cos(theta + m), cos)
    return -np.mean(np.sum(onehot * log_softmax(logits), axis=1))


def center_loss(params):
    """Softmax cross entropy plus the center loss pulling features to their class centres."""
    W, centres = params
    feats = np.tanh(X4 @ W)
    labels = np.array([0, 1, 1, 0])
    ce = -np.mean(log_softmax(feats)[np.arange(4), labels])
    return ce + 0.5 * np.mean(np.sum((feats - centres[labels]) ** 2, axis=1))


def barlow_twins(W):
    """Barlow Twins: two augmented views (fixed perturbations), the cross-correlation
    matrix of their standardised embeddings pushed to the identity."""
    view_a = X4 + 0.1 * np.sin(X4)
    view_b = X4 * 0.9 + 0.05
    za, zb = view_a @ W, view_b @ W
    za = (za - za.mean(0)) / za.std(0)
    zb = (zb - zb.mean(0)) / zb.std(0)
    c = za.T @ zb / len(X4)
    on_diag = np.sum((np.diag(c) - 1) ** 2)
    off_diag = np.sum(c**2) - np.sum(np.diag(c) ** 2)
    return on_diag + 0.05 * off_diag


def mmd_two_sample(shift):
    """The maximum mean discrepancy with a Gaussian kernel between samples and shifted
    samples: a generator's moment-matching objective."""
    real = X4[:, :2]
    fake = np.array([[0.1, 0.2], [-0.5, 0.3], [0.4, -0.6]]) + shift

    def k(a, b):
        return np.exp(-np.sum((a[:, None] - b[None]) ** 2, axis=-1) / 2.0)

    return k(real, real).mean() + k(fake, fake).mean() - 2 * k(real, fake).mean()


# --- regression models ------------------------------------------------------------------------


def tobit_regression(params):
    """Tobit: a normal linear model censored below at zero; censored points contribute
    the log of the normal CDF."""
    from scipy.special import log_ndtr

    beta, log_sigma = params[:3], params[3]
    y = np.array([0.0, 0.7, 0.0, 1.4])
    sigma = np.exp(log_sigma)
    mu = X4 @ beta
    censored = y <= 0.0
    ll = np.where(
        censored,
        log_ndtr(-mu / sigma),
        -0.5 * ((y - mu) / sigma) ** 2 - log_sigma - 0.5 * np.log(2 * np.pi),
    )
    return -np.sum(ll)


def beta_regression(params):
    """Beta regression with a logit link for the mean and a log precision."""
    from scipy.special import gammaln

    beta, log_phi = params[:3], params[3]
    y = np.array([0.2, 0.6, 0.45, 0.8])
    mu = 1 / (1 + np.exp(-(X4 @ beta)))
    phi = np.exp(log_phi)
    a, b = mu * phi, (1 - mu) * phi
    ll = gammaln(phi) - gammaln(a) - gammaln(b) + (a - 1) * np.log(y) + (b - 1) * np.log(1 - y)
    return -np.sum(ll)


def conditional_logit(beta):
    """McFadden's conditional logit: alternatives with attributes per choice situation,
    the chosen alternative's log-probability."""
    attributes = R_ATTR
    chosen = [2, 0, 1]
    total = 0.0
    for situation, c in zip(attributes, chosen):
        utilities = situation @ beta
        total += utilities[c] - np.log(np.sum(np.exp(utilities)))
    return -total


R_ATTR = np.random.default_rng(34).normal(size=(3, 3, 2))


def mixed_logit_fixed_draws(params):
    """Mixed logit by simulation: random coefficients from fixed standard normal draws."""
    mean, log_sd = params[:2], params[2:]
    draws = np.random.default_rng(7).standard_normal((5, 2))
    chosen = np.array([2, 0, 1])
    betas = mean + np.exp(log_sd) * draws
    total = 0.0
    for situation, c in zip(R_ATTR, chosen):
        u = situation @ betas.T
        probs = np.exp(u[c]) / np.sum(np.exp(u), axis=0)
        total += np.log(np.mean(probs))
    return -total


def bayesian_logistic_laplace(w_map):
    """The Laplace approximation's log evidence for Bayesian logistic regression at a given
    mode: the log joint plus half the log-determinant of the inverse Hessian."""
    y = np.array([1.0, 0.0, 1.0, 1.0])
    logits = X4 @ w_map
    log_joint = np.sum(y * logits - np.logaddexp(0.0, logits)) - 0.5 * w_map @ w_map
    p = 1 / (1 + np.exp(-logits))
    H = X4.T @ (X4 * (p * (1 - p))[:, None]) + np.eye(3)
    sign, logdet = np.linalg.slogdet(H)
    return -(log_joint - 0.5 * logdet)


def factorization_machine(params):
    """A second-order factorisation machine with the O(kn) pairwise term."""
    w0, w, V = params["w0"], params["w"], params["V"]
    linear = w0 + X4 @ w
    pairwise = 0.5 * np.sum((X4 @ V) ** 2 - (X4**2) @ (V**2), axis=1)
    return np.mean((linear + pairwise - T4) ** 2)


def wide_and_deep(params):
    """Wide and deep: a linear model on crossed features plus an MLP, summed logits,
    binary cross entropy."""
    crossed = np.stack([X4[:, 0] * X4[:, 1], X4[:, 1] * X4[:, 2]], axis=1)
    wide = crossed @ params["wide"]
    deep = np.maximum(X4 @ params["W1"], 0.0) @ params["W2"]
    logits = wide + deep[:, 0]
    y = np.array([1.0, 0.0, 0.0, 1.0])
    return np.mean(np.logaddexp(0.0, logits) - y * logits)


def transe_margin(params):
    """TransE: head + relation ≈ tail, a margin ranking loss against corrupted tails."""
    entities, relations = params["E"], params["R"]
    triples = [(0, 0, 1), (1, 1, 2), (2, 0, 3)]
    corrupt = [3, 0, 1]
    loss = 0.0
    for (h, r, t), t_bad in zip(triples, corrupt):
        pos = np.sum((entities[h] + relations[r] - entities[t]) ** 2)
        neg = np.sum((entities[h] + relations[r] - entities[t_bad]) ** 2)
        loss += np.logaddexp(0.0, 1.0 + pos - neg)
    return loss + 0.01 * np.sum(entities**2)


def distmult_bce(params):
    """DistMult's trilinear scores with binary cross entropy on true and false triples."""
    E, Rl = params
    triples = np.array([[0, 0, 1], [1, 1, 2], [2, 0, 3], [3, 1, 0]])
    labels = np.array([1.0, 1.0, 0.0, 0.0])
    scores = np.sum(E[triples[:, 0]] * Rl[triples[:, 1]] * E[triples[:, 2]], axis=1)
    return np.mean(np.logaddexp(0.0, scores) - labels * scores)


def gin_layer(params):
    """A graph isomorphism network layer: (1 + eps) times self plus the neighbours' sum,
    through an MLP, summed as a graph readout."""
    A = np.array([[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 1], [0, 0, 1, 0]], dtype=float)
    eps, W1, W2 = params
    h = (1 + eps) * X4 + A @ X4
    h = np.tanh(h @ W1) @ W2
    return np.sum(np.sum(h, axis=0) ** 2)


def instance_norm_conv(params):
    """A 1-D convolution by sliding windows, then instance normalisation per channel with
    a learned affine."""
    w, gamma, beta = params
    x = np.sin(np.linspace(0.0, 4.0, 9))
    windows = np.stack([x[i : i + 3] for i in range(7)])
    out = windows @ w.T
    mu, var = out.mean(axis=0), out.var(axis=0)
    normed = gamma * (out - mu) / np.sqrt(var + 1e-5) + beta
    return np.sum(np.tanh(normed) * np.arange(7)[:, None])


def weight_normalised_mlp(params):
    """Weight normalisation: each unit's weights a direction v over its norm times g."""
    v, g, w_out = params
    W = g * v / np.linalg.norm(v, axis=0)
    h = np.tanh(X4 @ W)
    return np.mean((h @ w_out - T4) ** 2)


def spectral_normalised_layer(W):
    """Spectral normalisation by two power-iteration steps from a fixed vector."""
    u = np.ones(W.shape[0]) / np.sqrt(W.shape[0])
    for _ in range(2):
        v = W.T @ u
        v = v / np.linalg.norm(v)
        u = W @ v
        u = u / np.linalg.norm(u)
    sigma = u @ W @ v
    return np.sum(np.tanh(X4 @ (W / sigma)) ** 2)


def dice_and_focal_segmentation(logits):
    """Soft Dice plus focal loss for a tiny binary segmentation map."""
    target = np.array([[0, 1, 1], [0, 0, 1], [1, 0, 0]], dtype=float)
    p = 1 / (1 + np.exp(-logits))
    dice = 1 - (2 * np.sum(p * target) + 1) / (np.sum(p) + np.sum(target) + 1)
    pt = np.where(target > 0, p, 1 - p)
    focal = -np.mean((1 - pt) ** 2 * np.log(pt))
    return dice + focal


def listnet_ranking(w):
    """ListNet: the cross entropy between the softmax of true relevances and of scores."""
    relevance = np.array([3.0, 1.0, 0.0, 2.0])
    scores = X4 @ w
    return -np.sum(softmax(relevance) * log_softmax(scores))


def svm_dual_objective(log_alpha):
    """The kernel SVM's dual objective with positive multipliers by exp; the equality
    constraint as a penalty."""
    y = np.array([1.0, -1.0, 1.0, -1.0])
    alpha = np.exp(log_alpha)
    K = np.exp(-np.sum((X4[:, None] - X4[None]) ** 2, axis=-1))
    Q = (y[:, None] * y[None, :]) * K
    return 0.5 * alpha @ Q @ alpha - np.sum(alpha) + 5.0 * (alpha @ y) ** 2


# --- reinforcement learning and meta-learning -----------------------------------------------


DQN_TARGET_WEIGHTS = R.normal(size=(2, 2)) * 0.5


def dqn_huber_target(params):
    """DQN's loss: Q-values of taken actions against a target from a frozen copy of the
    network synchronised earlier (a module constant), the Huber loss smooth at the edges."""
    W = params
    frozen = DQN_TARGET_WEIGHTS
    states = X4[:, :2]
    next_states = X4[:, 1:]
    actions = np.array([0, 1, 1, 0])
    rewards = np.array([1.0, 0.0, -1.0, 0.5])
    q = (states @ W)[np.arange(4), actions]
    target = rewards + 0.9 * np.max(next_states @ frozen, axis=1)
    err = q - target
    return np.sum(np.sqrt(1 + err**2) - 1)


def actor_critic_advantage(params):
    """An actor-critic loss with normalised advantages held fixed, an entropy bonus and
    a value loss sharing the trunk."""
    trunk, actor, critic = params
    h = np.tanh(X4 @ trunk)
    logits = h @ actor
    values = h @ critic
    returns = np.array([1.0, 0.5, 0.2, -0.3])
    actions = np.array([1, 0, 1, 1])
    adv = returns - np.array(values.tolist())
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    logp = log_softmax(logits)
    policy = -np.mean(logp[np.arange(4), actions] * adv)
    entropy = -np.mean(np.sum(np.exp(logp) * logp, axis=1))
    return policy - 0.01 * entropy + 0.5 * np.mean((values - returns) ** 2)


def reptile_step(w):
    """Reptile: a few SGD steps on a task from the current weights; the meta-objective is
    the loss at the weights moved part of the way to the adapted ones."""
    X, y = X4, T4
    phi = w
    for _ in range(3):
        residual = np.tanh(X @ phi) - y
        grad = X.T @ (residual * (1 - np.tanh(X @ phi) ** 2)) / len(y)
        phi = phi - 0.5 * grad
    new_w = w + 0.5 * (phi - w)
    return np.mean((np.tanh(X @ new_w) - y) ** 2)


def soft_q_iteration(rewards):
    """Soft Q-iteration on a tiny MDP: the soft Bellman backup by logsumexp a few times."""
    P = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.1, 0.9]]])
    r = rewards.reshape(2, 2)
    Q = np.zeros((2, 2))
    for _ in range(5):
        V = np.log(np.sum(np.exp(Q), axis=1))
        Q = r + 0.8 * np.einsum("sap,p->sa", P, V)
    return np.sum(np.log(np.sum(np.exp(Q), axis=1)))


# --- configuration by dataclasses and classes -----------------------------------------------


@dataclass
class TrainConfig:
    lr: float = 0.1
    steps: int = 3
    l2: float = 0.01
    widths: list = field(default_factory=lambda: [3, 4, 1])


DEFAULT_TRAINING = TrainConfig()


def unrolled_training_with_config(w, config=DEFAULT_TRAINING):
    """Gradient descent steps written by hand, the settings in a dataclass with a list
    field; the validation loss after training depends on the initial weights."""
    X, y = X4, T4
    for step in range(config.steps):
        pred = X @ w
        grad = 2 * X.T @ (pred - y) / len(y) + 2 * config.l2 * w
        w = w - config.lr * grad
        if step == config.steps - 1:
            print(f"step {step}: loss {float(np.mean((X @ w - y) ** 2)):.3f}") if False else None
    return np.mean((X @ w - y) ** 2) + 0.0 * len(config.widths)


class MixtureOfExpertsLayer:
    """Experts as small linear maps, a softmax gate with a load-balancing penalty."""

    def __init__(self, experts, gate):
        self.experts = experts
        self.gate = gate

    def __call__(self, x):
        weights = softmax(x @ self.gate)
        outputs = np.stack([np.tanh(x @ E) for E in self.experts], axis=1)
        mixed = np.sum(weights[:, :, None] * outputs, axis=1)
        importance = weights.sum(axis=0)
        balance = np.var(importance) / np.mean(importance) ** 2
        return mixed, balance


def moe_with_balance(params):
    experts, gate = params
    layer = MixtureOfExpertsLayer(experts, gate)
    out, balance = layer(X4)
    return np.mean((out[:, 0] - T4) ** 2) + 0.1 * balance


class TwoTowerModel:
    """A two-tower retrieval model: user and item encoders, in-batch softmax."""

    def __init__(self, user_W, item_W, temperature=0.5):
        self.user_W, self.item_W, self.temperature = user_W, item_W, temperature

    def encode(self, x, W):
        z = np.tanh(x @ W)
        return z / np.sqrt(np.sum(z**2, axis=1, keepdims=True) + 1e-9)

    def loss(self, users, items):
        u = self.encode(users, self.user_W)
        v = self.encode(items, self.item_W)
        logits = u @ v.T / self.temperature
        return -np.mean(np.diag(log_softmax(logits, axis=1)))


def two_tower_retrieval(params):
    model = TwoTowerModel(*params)
    return model.loss(X4, X4[::-1] + 0.1)


def tsne_student_t_kl(Y):
    """t-SNE's objective with fixed input affinities: a Student-t kernel on the embedding,
    the KL divergence of P from Q."""
    D = np.sum((X4[:, None] - X4[None]) ** 2, axis=-1)
    P = np.exp(-D) * (1 - np.eye(4))
    P = P / P.sum()
    num = 1 / (1 + np.sum((Y[:, None] - Y[None]) ** 2, axis=-1)) * (1 - np.eye(4))
    Q = num / num.sum()
    off = ~np.eye(4, dtype=bool)
    return np.sum(P[off] * np.log(P[off] / Q[off]))


def kmeans_deterministic_annealing(centres):
    """Deterministic annealing for k-means: soft assignments at a falling temperature,
    the free energy at the last one."""
    points = X4[:, :2]
    free = 0.0
    for temperature in (2.0, 1.0, 0.5):
        d = np.sum((points[:, None] - centres[None]) ** 2, axis=-1)
        free = -temperature * np.sum(np.log(np.sum(np.exp(-d / temperature), axis=1)))
    return free


def natural_gradient_fisher(theta):
    """A natural-gradient step for a softmax policy: the Fisher matrix from the policy's
    probabilities, the step solved, the loss at the stepped parameters."""
    probs = softmax(theta)
    F = np.diag(probs) - np.outer(probs, probs) + 1e-2 * np.eye(len(theta))
    grad = probs - np.array([0.2, 0.5, 0.3])
    step = np.linalg.solve(F, grad)
    new = theta - 0.1 * step
    return -np.sum(np.array([0.2, 0.5, 0.3]) * log_softmax(new))


PROGRAMS = [
    (prenorm_transformer, _transformer_layers()),
    (learned_positional_embeddings, {"tok": _n(4, 3), "pos": _n(4, 3), "out": _n(3, 3)}),
    (beam_search_scores, _n(12, scale=1.0)),
    (hmm_viterbi_free_forward, {"trans": _n(2, 2), "means": np.array([0.0, 1.0])}),
    (linear_chain_crf_by_loops, {"W": _n(3, 3), "trans": _n(3, 3)}),
    (wavenet_dilated, [(_n(2), _n(2)), (_n(2), _n(2))]),
    (
        gru_seq2seq_teacher_forcing,
        {"Wz": _n(4, 2), "Wr": _n(4, 2), "Wh": _n(4, 2), "Wout": _n(2, 3)},
    ),
    (made_autoregressive, {"W1": _n(3, 4), "b1": _n(4), "W2": _n(4, 3), "b2": _n(3)}),
    (rbm_free_energy, {"W": _n(3, 2), "b": _n(3), "c": _n(2)}),
    (lista_unrolled, (_n(3, 2), _n(3, 3, scale=0.2), 0.3)),
    (infomax_ica, np.eye(2) + _n(2, 2, scale=0.2)),
    (factor_analysis_nll, np.concatenate([_n(6), _n(3, scale=0.1)])),
    (denoising_score_matching, (_n(3, 4), _n(4, 3))),
    (prototypical_network, _n(3, 2)),
    (arcface_loss, (_n(2, 3), _n(3, 2))),
    (center_loss, (_n(3, 2), _n(2, 2))),
    (barlow_twins, _n(3, 2)),
    (mmd_two_sample, _n(2)),
    (tobit_regression, np.concatenate([_n(3), [-0.2]])),
    (beta_regression, np.concatenate([_n(3), [1.0]])),
    (conditional_logit, _n(2)),
    (mixed_logit_fixed_draws, np.concatenate([_n(2), [-1.0, -0.8]])),
    (bayesian_logistic_laplace, _n(3)),
    (factorization_machine, {"w0": 0.1, "w": _n(3), "V": _n(3, 2)}),
    (wide_and_deep, {"wide": _n(2), "W1": _n(3, 4), "W2": _n(4, 1)}),
    (transe_margin, {"E": _n(4, 2), "R": _n(2, 2)}),
    (distmult_bce, (_n(4, 2), _n(2, 2))),
    (gin_layer, (0.1, _n(3, 3), _n(3, 2))),
    (instance_norm_conv, (_n(2, 3), 1 + _n(2, scale=0.1), _n(2, scale=0.1))),
    (weight_normalised_mlp, (_n(3, 3), 1 + _n(3, scale=0.1), _n(3))),
    (spectral_normalised_layer, _n(3, 3)),
    (dice_and_focal_segmentation, _n(3, 3)),
    (listnet_ranking, _n(3)),
    (svm_dual_objective, _n(4, scale=0.3) - 1.0),
    (dqn_huber_target, _n(2, 2)),
    (actor_critic_advantage, (_n(3, 3), _n(3, 2), _n(3))),
    (reptile_step, _n(3)),
    (soft_q_iteration, _n(4)),
    (unrolled_training_with_config, _n(3)),
    (moe_with_balance, ([_n(3, 2) for _ in range(3)], _n(3, 3))),
    (two_tower_retrieval, (_n(3, 2), _n(3, 2))),
    (tsne_student_t_kl, _n(4, 2)),
    (kmeans_deterministic_annealing, _n(2, 2)),
    (natural_gradient_fisher, _n(3)),
]

# what each mode refuses, naming the program's line: float() of a score on the tape (s2s and
# auto differentiate it), an object holding the weights built inside (auto tapes it), and
# .tolist() used to hold values fixed, which drops a derivative (sg.stop_gradient says it)
REFUSED = {
    "beam_search_scores": ON_THE_TAPE,
    "two_tower_retrieval": BY_THE_TAPE,
    "actor_critic_advantage": EVERYWHERE,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_program(f, x, mode):
    _check_program(f, x, mode, REFUSED.get(f.__name__, frozenset()))
