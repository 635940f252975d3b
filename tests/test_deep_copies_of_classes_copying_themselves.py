"""``copy.deepcopy(p)`` is taken for a new value sharing nothing with ``p`` (the sharing
analysis both engines ask about ``q.w *= 2``). A class defining its own ``__deepcopy__``
may hand back ``p`` or its arrays, and then a write into the copy changes ``p``: the
gradient was silently that of another function in every mode. Such a copy is refused,
naming the line of ``deepcopy``; Python's own deep copies stay differentiated."""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg


@dataclass
class SharingParams:
    w: np.ndarray

    def __deepcopy__(self, memo):
        return SharingParams(self.w)  # the same array


@dataclass
class Params:
    w: np.ndarray


def doubled_copy(p):
    q = copy.deepcopy(p)
    q.w *= 2.0
    return np.sum(np.sin(p.w) * q.w)


class SharedList(list):
    def __deepcopy__(self, memo):
        return self


def tripled_copy(x):
    s = SharedList([x])
    t = copy.deepcopy(s)
    t[0] = t[0] * 3.0
    return np.sum(s[0] * x)


def copied_dict(x):
    params = {"w": x, "b": [x * 2.0]}
    q = copy.deepcopy(params)
    q["w"] *= 3.0
    return np.sum(params["w"] * q["w"] + np.cos(q["b"][0]))


def _sharing_plain(w):
    w = w.copy()
    w *= 2.0  # what the shared copy does to p.w
    return np.sum(np.sin(w) * w)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_dataclass_copying_itself_is_refused_at_the_deepcopy(mode):
    rng = np.random.default_rng(41)
    w = rng.normal(size=3)
    line = doubled_copy.__code__.co_firstlineno + 1
    assert_close(doubled_copy(SharingParams(w.copy())), _sharing_plain(w))  # what it computes
    with pytest.raises(sg.UnsupportedError, match=rf"{__file__}:{line}: .*SharingParams.*copy"):
        sg.grad(doubled_copy, mode=mode)(SharingParams(w.copy()))
    with pytest.raises(sg.UnsupportedError, match="__deepcopy__"):
        sg.vjp(doubled_copy, SharingParams(w.copy()), mode=mode)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_class_in_sight_copying_itself_is_refused(mode):
    x = np.random.default_rng(42).normal(size=3)
    line = tripled_copy.__code__.co_firstlineno + 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.UnsupportedError, match=rf"{__file__}:{line}: .*SharedList"):
            sg.grad(tripled_copy, mode=mode)(x)
        with pytest.raises(sg.UnsupportedError, match="__deepcopy__"):
            sg.jvp(tripled_copy, (x,), (x,), mode=mode)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_python_deep_copies_stay_differentiated(mode):
    rng = np.random.default_rng(43)
    w, x = rng.normal(size=3), rng.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = sg.grad(doubled_copy, mode=mode)(Params(w.copy()))
        assert_close(found.w, numeric_grad(lambda t: 2.0 * np.sum(np.sin(t) * t), [w], 0))
        assert_close(sg.grad(copied_dict, mode=mode)(x), numeric_grad(copied_dict, [x], 0))
