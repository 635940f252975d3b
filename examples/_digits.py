"""What the two digits examples share: the data, the training loop and the pictures.

The data is scikit-learn's bundled copy of the UCI handwritten digits (1,797 images of
8×8 pixels, values 0 to 16), so nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from _shared import pyplot


def load_digits_split(test_fraction: float = 0.25, seed: int = 0):
    """Images scaled to [0, 1] (N, 8, 8), integer labels, split into train and test sets."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = digits.images / 16.0
    labels = digits.target
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return images[train], labels[train], images[test], labels[test]


def one_hot(labels, classes: int = 10):
    return np.eye(classes)[labels]


def softmax_cross_entropy(logits, targets):
    """Mean cross-entropy of the softmax of ``logits`` (N, K) against one-hot ``targets``."""
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(targets * log_probs, axis=1))


def train(
    value_and_grad: Callable,
    params: dict,
    images,
    labels,
    epochs: int,
    batch_size: int = 64,
    rate: float = 0.1,
    seed: int = 0,
):
    """Minibatch SGD (``s2sgrad.optimizers.sgd``) with a tqdm bar per epoch; returns the
    parameters and the epoch losses."""
    rng = np.random.default_rng(seed)
    targets = one_hot(labels)
    losses = []
    for epoch in range(epochs):
        order = rng.permutation(len(labels))
        description = f"epoch {epoch + 1}/{epochs}"
        batches = [
            order[start : start + batch_size]  # whole batches only
            for start in range(0, len(labels) - batch_size + 1, batch_size)
        ]
        params, loss = _epoch(value_and_grad, params, images, targets, batches, rate, description)
        losses.append(loss)
    return params, losses


def _epoch(value_and_grad, params, images, targets, batches, rate, description):
    """One pass over ``batches``; returns the parameters and the mean loss."""
    from tqdm import tqdm

    from s2sgrad.optimizers import sgd

    values = []

    def gradient(params, step):
        chosen = batches[step]
        value, grads = value_and_grad(params, images[chosen], targets[chosen])
        values.append(float(value))
        return grads

    with tqdm(total=len(batches), desc=description, unit="batch") as bar:

        def progress(params, step, grads):
            bar.set_postfix(loss=f"{values[-1]:.4f}", refresh=False)
            bar.update()

        params = sgd(gradient, params, len(batches), rate, callback=progress)
    return params, sum(values) / len(values)


def save_loss_curve(losses, path, title: str) -> None:
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(4.5, 3))
    axes.plot(range(1, len(losses) + 1), losses, marker="o")
    axes.set_xlabel("epoch")
    axes.set_ylabel("mean training loss")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)


def save_predictions(images, labels, predicted, path, count: int = 12) -> None:
    """The first ``count`` test images, each titled with its predicted and true label."""
    plt = pyplot()
    figure, axes = plt.subplots(2, count // 2, figsize=(count * 0.6, 2.8))
    for axis, image, label, guess in zip(axes.flat, images, labels, predicted):
        axis.imshow(image, cmap="gray_r")
        axis.set_title(f"{guess} ({label})", color="black" if guess == label else "red", fontsize=9)
        axis.axis("off")
    figure.suptitle("predicted (true)", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)


def report(losses, predicted, test_images, test_labels, directory, stem: str, title: str) -> None:
    """Print the losses and the test accuracy; save the loss curve and some predictions."""
    print("training loss per epoch:", " ".join(f"{value:.4f}" for value in losses))
    print(f"test accuracy: {np.mean(predicted == test_labels):.4f}")
    save_loss_curve(losses, directory / f"{stem}_loss.png", title)
    save_predictions(test_images, test_labels, predicted, directory / f"{stem}_predictions.png")
    print("plots written to", directory)
