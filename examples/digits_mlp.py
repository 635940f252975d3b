"""An MLP trained on scikit-learn's handwritten digits with gradients from s2sgrad.

64 pixels → 64 tanh units → 10 classes, softmax cross-entropy, minibatch SGD. The gradient
is generated code (``sg.value_and_grad``). Writes ``digits_mlp_loss.png`` (the loss per
epoch) and ``digits_mlp_predictions.png`` (a few test images with their predicted labels)
and prints the test accuracy.

Run with ``python examples/digits_mlp.py [output directory]``; ``DIGITS_EPOCHS`` sets the
number of epochs (default 15).
"""

import numpy as np
from _digits import load_digits_split, report, softmax_cross_entropy, train
from _shared import env_int, output_directory

import s2sgrad as sg


def logits(params, images):
    flat = np.reshape(images, (images.shape[0], 64))
    hidden = np.tanh(flat @ params["w1"] + params["b1"])
    return hidden @ params["w2"] + params["b2"]


def loss(params, images, targets):
    return softmax_cross_entropy(logits(params, images), targets)


def init(seed: int = 0):
    rng = np.random.default_rng(seed)
    return {
        "w1": rng.normal(size=(64, 64)) / 8.0,
        "b1": np.zeros(64),
        "w2": rng.normal(size=(64, 10)) / 8.0,
        "b2": np.zeros(10),
    }


def main() -> None:
    directory = output_directory()
    epochs = env_int("DIGITS_EPOCHS", 15)
    train_images, train_labels, test_images, test_labels = load_digits_split()
    print(f"{len(train_labels)} training images, {len(test_labels)} test images")

    params, losses = train(
        sg.value_and_grad(loss), init(), train_images, train_labels, epochs, rate=0.3
    )
    predicted = np.argmax(logits(params, test_images), axis=1)
    report(losses, predicted, test_images, test_labels, directory, "digits_mlp", "MLP on digits")


if __name__ == "__main__":
    main()
