"""A recurrent loss keeping its time steps in dicts, as the classic minimal character RNN
does: ``xs, hs, ys, ps = {}, {}, {}, {}``, ``hs[-1] = np.copy(hprev)``, ``hs[t] = ...``.

Source transformation refuses entries of a dict written with values being differentiated,
and mode "auto" gives such a function to the tape. With the four dicts made in one
statement, the normal form binds each name to a dict through a temporary (``hs = t2``),
which the check did not follow: it took ``hs`` for an array that may share memory, which
it also told mode "auto" the tape could not do either, so auto refused a loss the tape
differentiates.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.errors import UnsupportedError

VOCABULARY, HIDDEN = 5, 4


def char_rnn_loss(Wxh, Whh, Why, bh, by, inputs, targets, hprev):
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((VOCABULARY, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    return loss


def _arguments():
    rng = np.random.default_rng(0)
    return [
        rng.normal(size=(HIDDEN, VOCABULARY)) * 0.3,
        rng.normal(size=(HIDDEN, HIDDEN)) * 0.3,
        rng.normal(size=(VOCABULARY, HIDDEN)) * 0.3,
        rng.normal(size=(HIDDEN, 1)) * 0.1,
        rng.normal(size=(VOCABULARY, 1)) * 0.1,
        [0, 1, 2, 3, 1],
        [1, 2, 3, 1, 4],
        rng.normal(size=(HIDDEN, 1)) * 0.1,
    ]


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_every_weight_against_central_differences(mode):
    args = _arguments()
    gradient = sg.grad(char_rnn_loss, wrt=(0, 1, 2, 3, 4), mode=mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):  # the first call, then the code kept for these arguments
            found = gradient(*args)
    for index, weight in enumerate(found):
        assert_close(weight, numeric_grad(char_rnn_loss, args, index), rtol=1e-5, atol=1e-8)


def test_source_transformation_names_the_dict_written():
    with pytest.raises(UnsupportedError, match=r"test_dicts_of_time_steps.py:\d+: .*dict 'hs'"):
        sg.grad(char_rnn_loss, mode="s2s")(*_arguments())
