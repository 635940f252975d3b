"""Every NumPy indexing form, read and written, in both engines (issue 13, item 7).

Basic (integers, slices, negative steps), advanced (integer arrays, repeated indices),
boolean masks, ``np.ix_``, ellipsis and ``np.newaxis``, and mixtures of them; each read
and each write is checked by ``check_grads`` (reverse and forward against central
differences, and the derivatives of the gradient) in mode "s2s" and "tape", and the
gradient in mode "auto" on its first and second call. Repeated indices follow NumPy: a
read adds up, a write keeps the last value written (``y[[1, 1]] = v`` leaves ``v[1]``), and
``y[[1, 1]] += v`` adds ``v[1]`` once, as NumPy's buffered ``+=`` does.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.errors import S2SGradError

HERE = __file__.rsplit("/", 1)[-1]

RNG = np.random.default_rng(77)
MASK = np.array([True, False, True, True, False, False])
ROWS, COLUMNS = np.array([0, 2]), np.array([3, 1, 3])

# ------------------------------------------------------------------------------- reads


def basic(x):
    return x[1] * x[-1] + np.sum(x[1:4] ** 2) + np.sum(x[::2] * x[1::2])


def negative_steps(x):
    m = np.reshape(x, (2, 3))
    return np.sum(x[::-1] * x) + np.sum(x[4:0:-2] ** 3) + np.sum(m[::-1, 1:] * m[:, :-3:-1])


def ellipsis_and_newaxis(x):
    t = np.reshape(x, (1, 2, 3))
    outer = t[..., 1] * t[0, :, None, 2]
    return np.sum(outer**2) + np.sum(t[None, 0, ..., ::2] * x[np.newaxis, :2, np.newaxis])


def advanced_with_repeats(x):
    m = np.reshape(x, (2, 3))
    return np.sum(x[[0, 2, 2, -1]] ** 2) + np.sum(m[[0, 1, 1], [2, 2, 0]] * x[:3])


def boolean_masks(x):
    m = np.reshape(x, (2, 3))
    return np.sum(x[MASK] ** 3) + np.sum(x[x > 0.5] ** 2) + np.sum(m[m[:, 0] > -9.0, 1:] ** 2)


def ix_grid(x):
    m = np.reshape(x, (2, 3))
    t = np.reshape(np.concatenate([x, x**2]), (3, 4))
    return np.sum(t[np.ix_(ROWS, COLUMNS)] ** 2) + np.sum(m[np.ix_([1], [0, 0])] * x[0])


def mixed(x):
    t = np.reshape(np.concatenate([x, np.sin(x)]), (2, 2, 3))
    apart = t[[0, 1], :, [2, 0]]  # advanced indices split by a slice: their axis comes first
    return np.sum(t[0, [1, 0], 1:] ** 2) + np.sum(apart * apart[::-1]) + np.sum(t[:, [1], ...])


# ------------------------------------------------------------------------------ writes


def write_basic(x):
    y = np.zeros_like(x, shape=6)
    y[1:3] = x[:2] ** 2
    y[-1] = x[3] * x[4]
    y[::2] = y[::2] + x[3:]
    return np.sum(y * x)


def write_negative_steps(x):
    y = np.ones_like(x, shape=(2, 3))
    y[::-1, ::-2] = np.reshape(x[:4], (2, 2)) * 3.0
    y[1, 2:0:-1] = x[4:] ** 2
    return np.sum(y**2 * np.reshape(x, (2, 3)))


def write_ellipsis_and_newaxis(x):
    y = np.zeros_like(x, shape=(2, 3, 2))
    y[..., 0] = np.reshape(x, (2, 3))
    y[None, 1, ..., 1] = x[:3] ** 2
    return np.sum(np.sin(y) * y)


def write_advanced_with_repeats(x):
    y = np.zeros_like(x, shape=4)
    y[[1, 1, 3]] = x[:3]  # NumPy keeps the last write: y[1] = x[1]
    z = np.ones_like(x, shape=3)
    z[[0, 0, 2]] += x[3:] * 2.0  # buffered: z[0] += 2 * x[4] once
    return np.sum(y * np.arange(1.0, 5.0)) + np.sum(z**2 * x[:3])


def write_boolean_mask(x):
    y = np.reshape(x, (2, 3)) * 1.0
    y[y > 0.3] = y[y > 0.3] ** 2
    z = np.zeros_like(x, shape=6)
    z[MASK] = x[:3] * x[3:]
    return np.sum(y * x[:3]) + np.sum(z * x)


def write_ix_grid(x):
    y = np.zeros_like(x, shape=(3, 4))
    y[np.ix_(ROWS, [3, 1])] = np.reshape(x[:4], (2, 2))
    return np.sum(y**2 * np.arange(12.0).reshape(3, 4)) + np.sum(y[np.ix_(ROWS, COLUMNS)] * x[5])


def write_mixed(x):
    y = np.zeros_like(x, shape=(2, 2, 3))
    y[0, [1, 0], 1:] = np.reshape(x[:4], (2, 2))
    y[[0, 1], :, [2, 0]] = y[[0, 1], :, [2, 0]] + np.reshape(x[2:], (2, 2))
    return np.sum(np.cos(y) * np.reshape(np.concatenate([x, x]), (2, 2, 3)))


READS = [basic, negative_steps, ellipsis_and_newaxis, advanced_with_repeats, boolean_masks]
READS += [ix_grid, mixed]
WRITES = [write_basic, write_negative_steps, write_ellipsis_and_newaxis]
WRITES += [write_advanced_with_repeats, write_boolean_mask, write_ix_grid, write_mixed]


# Second order by source transformation is refused (naming the line) where the backward
# code of a write with a boolean mask or a mixed index cannot be transformed again (the
# refusal is checked here); the tape differentiates them to second order. The reads' backward
# code indexes with np.s_[...], which forward mode takes as the index it is.
S2S_FIRST_ORDER = {write_boolean_mask, write_mixed}
# Second order by source of these is right or refused at the line, depending on which code
# of the gradient (specialised or generic) the cache holds when it is differentiated again
S2S_MAY_REFUSE_SECOND_ORDER = {write_basic}


@pytest.mark.parametrize("f", READS + WRITES, ids=lambda f: f.__name__)
def test_indexing_form_in_both_engines(f):
    x = RNG.uniform(0.6, 1.6, 6) * np.array([1.0, -1.0, 1.0, 1.0, -1.0, 1.0])
    sg.check_grads(f, x, order=2, mode="tape")
    if f in S2S_MAY_REFUSE_SECOND_ORDER:
        try:
            sg.check_grads(f, x, order=2, mode="s2s")
        except S2SGradError as refusal:  # right, or refused naming the line
            assert f"{HERE}:" in str(refusal)
    first_only = S2S_FIRST_ORDER | S2S_MAY_REFUSE_SECOND_ORDER
    sg.check_grads(f, x, order=1 if f in first_only else 2, mode="s2s")
    if f in S2S_FIRST_ORDER:
        with pytest.raises(S2SGradError, match=rf"{HERE}:\d+"):
            sg.check_grads(f, x, order=2, mode="s2s")
    expected = numeric_grad(f, (x,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode="auto"), x), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_repeated_writes_follow_numpy(mode):
    """The last write wins, and a buffered += adds once: x[0] and x[3] are overwritten."""
    x = RNG.uniform(0.5, 1.5, 6)
    z0, z2 = 1.0 + 2.0 * x[4], 1.0 + 2.0 * x[5]
    expected = [z0**2, 3.0, 4.0 + z2**2, 0.0, 4.0 * z0 * x[0], 4.0 * z2 * x[2]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = call_twice(sg.grad(write_advanced_with_repeats, mode=mode), x)
    np.testing.assert_allclose(gradient, expected, rtol=1e-12, atol=1e-12)
