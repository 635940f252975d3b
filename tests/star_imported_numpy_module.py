"""A module that star-imports NumPy, whose ``min`` and ``max`` then are NumPy's
(``tests/test_hidden_builtins.py``)."""

import numpy as np
from numpy import *  # noqa: F403


def zipped_products(x):
    total = 0.0
    for a, b in zip(x, x[1:]):
        total = total + a * b
    return total


def reversed_weights(x):
    total = 0.0
    for i, a in enumerate(reversed(x)):
        total = total + np.sin(a) * (i + 1.0)
    return total
