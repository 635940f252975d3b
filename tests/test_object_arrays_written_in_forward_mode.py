"""An item written into an array an object holds, in forward mode.

``p.w[0] = v`` is, in A-normal form, ``t = p.w; t[0] = v``: forward mode wrote the
tangent into a private copy of ``t``'s, leaving ``p``'s tangent as it was, so the next
read of ``p.w`` had the old tangent (silently wrong for a dataclass given as an argument
on main, in modes "s2s" and "auto", and for a record the function makes on branch con18).
Such a write is refused now, as reverse mode refuses it, and mode "auto" tapes it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp, numeric_jvp

import s2sgrad as sg

HERE = "test_object_arrays_written_in_forward_mode.py"
R = np.random.default_rng(3320)


@dataclass
class Layer:
    w: object
    b: object


class Params:
    def __init__(self, w, b):
        self.w = w
        self.b = b


def written_argument(layer):
    layer.w[0] = layer.w[1] * 5.0
    return np.sum(layer.w**2) * layer.b


def written_record(x):
    p = Params(x * 1.0, x[2])
    p.w[0] = x[1] * 5.0
    return np.sum(p.w**2) * p.b


def test_a_dataclass_argument_written_is_refused_in_forward_mode():
    w, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    expected = numeric_jvp(lambda u: written_argument(Layer(u.copy(), 2.0)), [w], 0, v)
    with pytest.raises(sg.UnsupportedError, match=HERE):
        sg.jvp(written_argument, (Layer(w.copy(), 2.0),), (Layer(v.copy(), 0.0),), mode="s2s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        for _ in range(2):
            _, tangent = sg.jvp(
                written_argument, (Layer(w.copy(), 2.0),), (Layer(v.copy(), 0.0),), mode="auto"
            )
            assert_close(tangent, expected)


@pytest.mark.parametrize("transform", ["jvp", "hvp"])
def test_a_record_written_is_refused_in_forward_mode(transform):
    x, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    with pytest.raises(sg.UnsupportedError, match=HERE):
        if transform == "jvp":
            sg.jvp(written_record, (x,), (v,), mode="s2s")
        else:
            sg.hvp(written_record, (x,), (v,), mode="s2s")
    assert_grad_jvp_and_hvp(written_record, x, v, "auto")
