"""Forward mode (jvp, hessian) of a function that stores values being differentiated in
a list, dict or array of the code around it (a global, a closure's cache): refused in
mode='s2s' naming the user's line, as reverse mode does, where generated code raised
``UnboundLocalError``/``NameError`` for the tangent it never made; mode='auto' takes the
tape, which follows values through a list or dict. Writes into local containers keep
their forward-mode derivatives."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_jvp

import s2sgrad as sg

RNG = np.random.default_rng(880021)
LOG: list = []
CACHE: dict = {}
BUFFER = np.zeros(3)


def appends_to_global_list(x):
    LOG.append(x * 2.0)
    return np.sum(LOG[-1] ** 2)


def writes_global_dict(x):
    CACHE["v"] = np.sin(x)
    return np.sum(CACHE["v"] * x)


def writes_global_array(x):
    BUFFER[:] = x * 2.0
    return np.sum(BUFFER**2)


def closure_writer():
    cache = {}

    def writes_closure_dict(x):
        cache["v"] = x * 3.0
        return np.sum(cache["v"] ** 2)

    return writes_closure_dict


def writes_local_containers(x):
    d = {}
    d["a"] = np.sin(x)
    items = []
    items.append(d["a"] * x)
    buf = np.zeros_like(x)
    buf[1:] = items[0][1:] ** 2
    return np.sum(buf) + np.sum(items[0])


OUTSIDE = [appends_to_global_list, writes_global_dict, writes_global_array, closure_writer()]


@pytest.mark.parametrize("f", OUTSIDE, ids=lambda f: f.__name__)
def test_source_forward_mode_refuses_outside_containers(f):
    x = RNG.normal(size=3)
    with pytest.raises(
        sg.UnsupportedError, match=r"\.py:\d+: this stores .* belongs to the code around"
    ):
        sg.jvp(f, (x,), (np.ones(3),), mode="s2s")


@pytest.mark.parametrize(
    "f", [appends_to_global_list, writes_global_dict, closure_writer()], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("n", [2, 4])
def test_auto_takes_the_tape(f, n):
    x, v = RNG.normal(size=n), RNG.normal(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)  # the fallback, warned once
        _, tangent = sg.jvp(f, (x,), (v,), mode="auto")
    assert_close(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("n", [2, 5])
def test_local_containers_keep_forward_derivatives(mode, n):
    x, v = RNG.normal(size=n), RNG.normal(size=n)
    _, tangent = sg.jvp(writes_local_containers, (x,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(writes_local_containers, [x], 0, v), rtol=1e-5, atol=1e-6)
    hessian = sg.hessian(writes_local_containers, mode=mode)(x)
    columns = [
        numeric_jvp(sg.grad(writes_local_containers, mode=mode), [x], 0, e, step=1e-5)
        for e in np.eye(n)
    ]
    assert_close(hessian, np.stack(columns, axis=1), rtol=1e-4, atol=1e-5)
