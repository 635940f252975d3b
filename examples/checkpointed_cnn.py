"""A small CNN trained with its convolution checkpointed (``s2sgrad.checkpoint``).

The network: a 5×5×3×6 convolution, 2×2 max-pooling, flattening, a dense layer to 10
classes and softmax cross-entropy, on 10 random 16×16×3 images. The convolution is
wrapped in ``checkpoint``: the backward pass recomputes its intermediates instead of
keeping them. Five steps of SGD lower the loss; the gradients equal those of the
un-checkpointed network; and over a deep chain of blocks, checkpointing lowers the peak
memory of a gradient step (measured with ``tracemalloc``).

Run it with ``python examples/checkpointed_cnn.py [s2s|tape]``.
"""

from __future__ import annotations

import os
import sys
import tracemalloc

import numpy as np

import s2sgrad as sg
from s2sgrad.controls import checkpoint

# the layers --------------------------------------------------------------------------------


def conv2d(x, kernel, bias):
    """A 'valid' convolution of images ``x`` (N, H, W, C) with ``kernel`` (KH, KW, C, O).

    Written as a sum of KH·KW shifted matrix products, one per kernel position.
    """
    n, h, w, c = x.shape
    kh, kw, _, _ = kernel.shape
    oh = h - kh + 1
    ow = w - kw + 1
    out = bias
    for i in range(kh):
        for j in range(kw):
            out = out + x[:, i : i + oh, j : j + ow, :] @ kernel[i, j]
    return out


def max_pool(x):
    """2×2 max-pooling with stride 2 of ``x`` (N, H, W, C), H and W even."""
    n, h, w, c = x.shape
    windows = np.reshape(x, (n, h // 2, 2, w // 2, 2, c))
    return np.max(windows, axis=(2, 4))


def softmax_cross_entropy(logits, labels):
    """Mean cross-entropy of the softmax of ``logits`` (N, K) against one-hot ``labels``."""
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * log_probs, axis=1))


checkpointed_conv2d = checkpoint(conv2d)


def loss(params, images, labels):
    """The network's loss, with the convolution checkpointed."""
    features = checkpointed_conv2d(images, params["kernel"], params["bias"])
    pooled = max_pool(features)
    flat = np.reshape(pooled, (pooled.shape[0], -1))
    logits = flat @ params["weights"] + params["offsets"]
    return softmax_cross_entropy(logits, labels)


def plain_loss(params, images, labels):
    """The same network without checkpointing."""
    features = conv2d(images, params["kernel"], params["bias"])
    pooled = max_pool(features)
    flat = np.reshape(pooled, (pooled.shape[0], -1))
    logits = flat @ params["weights"] + params["offsets"]
    return softmax_cross_entropy(logits, labels)


def init(seed: int = 0):
    """Parameters, 10 random 16×16×3 images and their one-hot labels."""
    rng = np.random.default_rng(seed)
    params = {
        "kernel": rng.normal(scale=0.1, size=(5, 5, 3, 6)),
        "bias": np.zeros(6),
        "weights": rng.normal(scale=0.05, size=(6 * 6 * 6, 10)),
        "offsets": np.zeros(10),
    }
    images = rng.normal(size=(10, 16, 16, 3))
    labels = np.eye(10)[rng.integers(0, 10, size=10)]
    return params, images, labels


def train(params, images, labels, steps: int = 5, rate: float = 0.05, mode: str = "s2s"):
    """``steps`` steps of SGD on the checkpointed network; returns the losses and parameters."""
    value_and_grad = sg.value_and_grad(loss, mode=mode)
    losses = []
    for _ in range(steps):
        value, grads = value_and_grad(params, images, labels)
        losses.append(float(value))
        params = {name: params[name] - rate * grads[name] for name in params}
    losses.append(float(loss(params, images, labels)))
    return losses, params


# memory: a deep chain of blocks ---------------------------------------------------------

BLOCKS = int(os.environ.get("CHECKPOINTED_CNN_BLOCKS", 20))  # the tests use fewer


def block(w, x):
    """Four tanh layers sharing one weight matrix: eight intermediates per block."""
    h = np.tanh(x @ w)
    h = np.tanh(h @ w)
    h = np.tanh(h @ w)
    return np.tanh(h @ w)


checkpointed_block = checkpoint(block)


def chain(w, x):
    """``BLOCKS`` (twenty) blocks in a row."""
    for _ in range(BLOCKS):
        x = block(w, x)
    return np.sum(x * x)


def checkpointed_chain(w, x):
    """The same blocks, each checkpointed."""
    for _ in range(BLOCKS):
        x = checkpointed_block(w, x)
    return np.sum(x * x)


def peak_memory(f, *args, mode: str = "s2s") -> int:
    """Peak bytes allocated by one gradient step of ``f`` (after a warm-up call)."""
    gradient = sg.grad(f, mode=mode)
    gradient(*args)  # transform and specialise outside the measurement
    tracemalloc.start()
    gradient(*args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def chain_inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.normal(scale=0.05, size=(128, 128)), rng.normal(size=(256, 128))


def main(mode: str = "s2s") -> None:
    params, images, labels = init()
    losses, _ = train(params, images, labels, mode=mode)
    print("losses over 5 SGD steps:", " ".join(f"{value:.4f}" for value in losses))

    checkpointed = sg.grad(loss, mode=mode)(params, images, labels)
    plain = sg.grad(plain_loss, mode=mode)(params, images, labels)
    difference = max(np.max(np.abs(checkpointed[k] - plain[k])) for k in params)
    print(f"largest difference from the un-checkpointed gradients: {difference:.1e}")

    w, x = chain_inputs()
    kept = peak_memory(chain, w, x, mode=mode)
    recomputed = peak_memory(checkpointed_chain, w, x, mode=mode)
    print(
        f"peak memory of a gradient step over {BLOCKS} blocks: {kept / 2**20:.1f} MiB kept, "
        f"{recomputed / 2**20:.1f} MiB checkpointed"
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
