"""Forward mode (jvp, hvp) of a function storing a value being differentiated into a dict,
list or array of the module around it (``STATS['mean'] = x.mean(0)``, running statistics
or a log kept in a global): source transformation refuses it naming the line, as the
reverse sweep does, and mode "auto" differentiates it on the tape, which leaves the primal
value in the outer dict or list. Generated code used to read a tangent it never bound
(UnboundLocalError)."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_jvp

import s2sgrad as sg

HERE = "test_forward_mode_stores_into_outer_containers.py"
R = np.random.default_rng(77)
STATS: dict = {}
HISTORY = [0.0, 0.0]


def keeps_a_mean(x):
    STATS["mean"] = x.mean(axis=0) * 2.0
    return np.sum(STATS["mean"] ** 2) + np.sum(np.sin(x))


def keeps_the_last_loss(x):
    HISTORY[0] = np.sum(x**2)
    return HISTORY[0] * 3.0 + np.sum(x**3)


@pytest.mark.parametrize("f", [keeps_a_mean, keeps_the_last_loss])
@pytest.mark.parametrize("shape", [(3, 2), (1, 4)])
def test_refused_by_source_and_taped_in_auto(f, shape):
    x = R.normal(size=shape)
    direction = R.normal(size=shape)
    with pytest.raises(sg.UnsupportedError, match="belongs to the code around") as refused:
        sg.jvp(f, (x,), (direction,), mode="s2s")
    assert f"{HERE}:" in str(refused.value)
    expected = numeric_jvp(f, [x], 0, direction)
    for mode in ("auto", "tape"):
        for _ in range(2):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value, tangent = sg.jvp(f, (x,), (direction,), mode=mode)
            assert_close(value, f(x), rtol=1e-12)
            assert_close(tangent, expected, rtol=1e-5, atol=1e-7)
            stored = STATS["mean"] if f is keeps_a_mean else HISTORY[0]
            assert type(stored) in (np.ndarray, np.float64)  # the primal value
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            product = sg.hvp(f, (x,), (direction,), mode=mode)[0]
            gradient = sg.grad(f, mode="tape")
            assert_close(product, numeric_jvp(gradient, [x], 0, direction), rtol=1e-4, atol=1e-6)
