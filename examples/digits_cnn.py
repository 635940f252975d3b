"""A small CNN, its convolution checkpointed, trained on scikit-learn's handwritten digits.

8×8 images → a 3×3 convolution to 8 channels (checkpointed with ``sg.checkpoint``: the
backward pass recomputes it instead of keeping its intermediates) → relu → 2×2
max-pooling → a dense layer to 10 classes, softmax cross-entropy, minibatch SGD. The
convolution and pooling are those of ``checkpointed_cnn.py``, written in NumPy. Before
training, the checkpointed network's gradient is compared with the plain network's.
Writes ``digits_cnn_loss.png`` and ``digits_cnn_predictions.png`` and prints the test
accuracy.

Run with ``python examples/digits_cnn.py [output directory]``; ``DIGITS_EPOCHS`` sets the
number of epochs (default 8).
"""

import numpy as np
from _digits import load_digits_split, report, softmax_cross_entropy, train
from _shared import env_int, output_directory
from checkpointed_cnn import conv2d, max_pool

import s2sgrad as sg

checkpointed_conv2d = sg.checkpoint(conv2d)


def head(params, features):
    pooled = max_pool(np.maximum(features, 0.0))
    flat = np.reshape(pooled, (pooled.shape[0], -1))
    return flat @ params["weights"] + params["offsets"]


def logits(params, images):
    features = conv2d(images[..., None], params["kernel"], params["bias"])
    return head(params, features)


def loss(params, images, targets):
    """The network's loss, with the convolution checkpointed."""
    features = checkpointed_conv2d(images[..., None], params["kernel"], params["bias"])
    return softmax_cross_entropy(head(params, features), targets)


def plain_loss(params, images, targets):
    """The same loss without checkpointing."""
    return softmax_cross_entropy(logits(params, images), targets)


def init(seed: int = 0):
    rng = np.random.default_rng(seed)
    return {
        "kernel": rng.normal(scale=1.0 / 3.0, size=(3, 3, 1, 8)),
        "bias": np.zeros(8),
        "weights": rng.normal(scale=1.0 / np.sqrt(72), size=(3 * 3 * 8, 10)),
        "offsets": np.zeros(10),
    }


def main() -> None:
    directory = output_directory()
    epochs = env_int("DIGITS_EPOCHS", 8)
    train_images, train_labels, test_images, test_labels = load_digits_split()
    print(f"{len(train_labels)} training images, {len(test_labels)} test images")

    params = init()
    targets = np.eye(10)[train_labels[:32]]
    checkpointed = sg.grad(loss)(params, train_images[:32], targets)
    plain = sg.grad(plain_loss)(params, train_images[:32], targets)
    difference = max(float(np.max(np.abs(checkpointed[k] - plain[k]))) for k in params)
    print(f"checkpointed vs plain gradient: largest difference {difference:.1e}")

    params, losses = train(
        sg.value_and_grad(loss), params, train_images, train_labels, epochs, rate=0.3
    )
    predicted = np.argmax(logits(params, test_images), axis=1)
    title = "CNN on digits (checkpointed conv)"
    report(losses, predicted, test_images, test_labels, directory, "digits_cnn", title)


if __name__ == "__main__":
    main()
