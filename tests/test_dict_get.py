"""``params.get(key, default)`` in differentiated code: source transformation refused it
(".get() of a dict being differentiated is not a method written in Python", and "dict.get
has no source to transform" for a differentiated default), and mode "auto", meeting the
refusal only as the code ran, raised it too. The entry's cotangent now goes to that entry
of the dict, or, when the key is missing, to the default.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def scaled_entry(params, fallback):
    return np.sum(params.get("w", fallback) ** 2 * np.sin(params.get("b", fallback)))


def only_present(params):
    w = params.get("w")
    return np.sum(np.tanh(w) * params["b"])


def present(shape):
    rng = np.random.default_rng(sum(shape))
    return {"w": rng.uniform(-1, 1, size=shape), "b": rng.uniform(-1, 1, size=shape)}


@pytest.mark.parametrize("shape", [(3,), (2, 2)])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("missing", [(), ("b",), ("w", "b")])
def test_gradients_wrt_the_dict_and_the_default(missing, mode, shape):
    params = {k: v for k, v in present(shape).items() if k not in missing}
    fallback = np.linspace(0.2, 0.9, num=int(np.prod(shape))).reshape(shape)
    gradient = sg.grad(scaled_entry, wrt=(0, 1), mode=mode)
    d_params, d_fallback = call_twice(gradient, params, fallback)
    assert_close(d_params, numeric_grad(scaled_entry, [params, fallback], 0))
    assert_close(d_fallback, numeric_grad(scaled_entry, [params, fallback], 1))


@pytest.mark.parametrize("mode", MODES)
def test_get_without_a_default(mode):
    params = present((3,))
    assert_close(
        call_twice(sg.grad(only_present, mode=mode), params),
        numeric_grad(only_present, [params], 0),
    )


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_forward_mode_and_second_order(mode):
    params, fallback = {"w": np.array([0.3, -0.6, 0.9])}, np.array([0.5, 0.1, -0.4])
    v = {"w": np.array([1.0, 0.5, -0.5])}

    def of_params(p):
        return scaled_entry(p, fallback)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, tangent = sg.jvp(of_params, (params,), (v,), mode=mode)
        assert_close(tangent, numeric_jvp(of_params, [params], 0, v), rtol=1e-5)
        inner = sg.grad(of_params, mode=mode)
        got = sg.grad(lambda p: np.sum(inner(p)["w"] * v["w"]), mode=mode)(params)
    expected = numeric_grad(lambda p: np.sum(inner(p)["w"] * v["w"]), [params], 0, step=1e-5)
    assert_close(got, expected, rtol=1e-4, atol=1e-6)


class Registry:
    def __init__(self, value):
        self.value = value

    def get(self, key, default=None):
        return self.value * 2.0


def through_a_get_of_the_users(x):
    return np.sum(Registry(x).get("anything"))


def test_a_get_method_of_the_users_own_class_is_its_own():
    x = np.array([1.0, -2.0])
    for mode in ("auto", "tape"):  # s2s refuses an object holding differentiated values
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(sg.grad(through_a_get_of_the_users, mode=mode)(x), np.full(2, 2.0))
