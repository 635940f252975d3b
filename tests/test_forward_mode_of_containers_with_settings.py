"""Forward mode of a function of a dict that holds an empty entry (``{"w": x, "b": None}``,
a layer without bias) gave a zero tangent, and its hvp zeros, in every mode: the whole dict
was taken for not differentiated, as an integer setting makes it, and its tangent dropped.
An empty entry is skipped, as the gradient skips it; a tangent that is not zero for a
dict holding an integer setting is refused as the gradient refuses the dict, not
dropped."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_jvp

import s2sgrad as sg

HERE = "test_forward_mode_of_containers_with_settings.py"


def layer(p, x):
    out = np.tanh(p["w"] * x)
    if p["b"] is not None:
        out = out + p["b"]
    return np.sum(out**2)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_an_empty_entry_keeps_the_tangent_of_the_others(mode):
    rng = np.random.default_rng(61)
    x, w, v = rng.normal(size=(3, 4))
    params = {"w": w, "b": None}
    direction = {"w": v, "b": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, tangent = sg.jvp(layer, (params, x), (direction, np.zeros(4)), mode=mode)
        (product, _) = sg.hvp(layer, (params, x), (direction, np.zeros(4)), mode=mode)
    assert_close(tangent, numeric_jvp(lambda u: layer({"w": u, "b": None}, x), [w], 0, v))

    def gradient(u):
        return sg.grad(layer, mode="tape")({"w": u, "b": None}, x)["w"]

    expected = numeric_jvp(gradient, [w], 0, v, step=1e-5)
    assert product["b"] is None
    assert_close(product["w"], expected, rtol=1e-4, atol=1e-6)


def scaled_sum(p):
    return np.sum(p["w"] * p["scale"])


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_tangent_for_a_dict_with_an_integer_setting_is_refused(mode):
    params = {"w": np.array([0.3, -0.7, 1.1]), "scale": 3}
    with pytest.raises(TypeError, match=r"p\['scale'\] holds an integer") as refused:
        sg.jvp(scaled_sum, (params,), ({"w": np.ones(3), "scale": 0},), mode=mode)
    assert f"{HERE}:" in str(refused.value)
