"""The from-scratch models of tests/model_zoo.py, in every mode, against central differences.

Each model's gradient is checked on the first call (generic code) and the second
(specialised), in ``s2s``, ``tape`` and ``auto``; ``auto`` must not fall back to the tape.
"""

import warnings

import model_zoo
import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")

# (model, mode) pairs that do not work yet, and why. Strict: each one that starts working
# fails the suite until it is taken off this list.
KNOWN_FAILURES: dict[tuple[str, str], str] = {}


def _cases():
    for name in sorted(model_zoo.CASES):
        for mode in MODES:
            reason = KNOWN_FAILURES.get((name, mode))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(name, mode, marks=marks, id=f"{name}-{mode}")


@pytest.mark.parametrize("name, mode", list(_cases()))
def test_model_gradient_matches_differences(name, mode):
    loss, args, wrt = model_zoo.CASES[name](np.random.default_rng(3))
    expected = tuple(numeric_grad(loss, args, position) for position in wrt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto must not fall back to the tape
        transformed = sg.grad(loss, wrt=wrt, mode=mode)
        for _ in ("first", "second"):
            assert_close(transformed(*args), expected, rtol=1e-4, atol=1e-6)


def _step(value, gradient, rate):
    """``value - rate * gradient`` leaf by leaf (arrays, floats, and structures of them)."""
    return sg.tree_map(lambda v, g: v - rate * g, value, gradient)


def _squared_norm(gradient) -> float:
    return float(sum(np.sum(np.square(leaf)) for leaf in sg.tree_leaves(gradient)))


@pytest.mark.parametrize("name", sorted(model_zoo.CASES))
def test_three_steps_of_gradient_descent_lower_the_loss(name):
    """The gradient is a descent direction the training loop can use: three small steps
    along the s2s gradient (the specialised code from the second call on) lower the loss."""
    loss, args, wrt = model_zoo.CASES[name](np.random.default_rng(3))
    gradient = sg.grad(loss, wrt=wrt, mode="s2s")
    args = list(args)
    losses = [float(loss(*args))]
    for _ in range(3):
        grads = gradient(*args)
        rate = 1e-3 / max(1.0, np.sqrt(sum(_squared_norm(g) for g in grads)))
        for position, g in zip(wrt, grads):
            args[position] = _step(args[position], g, rate)
        losses.append(float(loss(*args)))
    assert all(later < earlier for earlier, later in zip(losses, losses[1:])), losses
