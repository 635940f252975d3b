"""A gradient taken inside a function differentiated on the tape, of a dict with an entry
the inner function does not read (a model's parameters, one layer unused): its generated
code ends in ``as_gradient(sparse cotangent, params)``, whose VJP, run on the tape's values,
unbroadcasts a full cotangent dict onto the sparse one: with an entry the sparse one lacks,
the tape recorded that ``unbroadcast`` whole instead of entry by entry, and its rule lost
the cotangent, so the tape's forward mode and its second derivatives came out 0 (wrong,
silently). An entry the sparse cotangent lacks now gets nothing, the others are recorded
one by one.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg


def energy(params):
    return np.sum(np.sin(params["w"])) + np.sum(np.cos(params["layer"]["b"]) * 2.0)


def roughness(params):
    slope = sg.grad(energy)(params)
    return np.sum(np.sin(slope["w"])) + np.sum(slope["layer"]["b"] ** 2)


def point(shape):
    rng = np.random.default_rng(sum(shape))
    return {
        "w": rng.uniform(-1.0, 1.0, size=shape),
        "layer": {"b": rng.uniform(-1.0, 1.0, size=shape), "unused": rng.normal(size=2)},
        "unused": rng.normal(size=3),
    }


def direction(params):
    return sg.tree_map(
        lambda leaf: np.linspace(0.5, 1.5, num=leaf.size).reshape(leaf.shape), params
    )


@pytest.mark.parametrize("shape", [(3,), (2, 2)])
@pytest.mark.parametrize("mode", ["tape", "auto", "s2s"])
def test_forward_mode_through_an_inner_gradient(mode, shape):
    params = point(shape)
    v = direction(params)
    _, tangent = sg.jvp(roughness, (params,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(roughness, [params], 0, v), rtol=1e-5)


@pytest.mark.parametrize("shape", [(3,), (2, 2)])
@pytest.mark.parametrize("mode", ["tape", "auto", "s2s"])
def test_gradient_through_an_inner_gradient(mode, shape):
    params = point(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(roughness, mode=mode)(params)
    assert_close(got, numeric_grad(roughness, [params], 0), rtol=1e-5)


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_hessian_vector_product_of_the_outer_function(mode):
    params = point((3,))
    v = direction(params)

    def along(p):
        g = sg.grad(roughness, mode=mode)(p)
        return sum(np.sum(a * b) for a, b in zip(sg.tree_leaves(g), sg.tree_leaves(v)))

    tape_gradient = sg.grad(roughness, mode="tape")
    expected = numeric_grad(
        lambda p: sum(
            np.sum(a * b) for a, b in zip(sg.tree_leaves(tape_gradient(p)), sg.tree_leaves(v))
        ),
        [params],
        0,
        step=1e-5,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(sg.grad(along, mode=mode)(params), expected, rtol=1e-4, atol=1e-6)
