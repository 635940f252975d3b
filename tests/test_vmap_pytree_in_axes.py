"""``vmap``'s ``in_axes`` entries may be pytrees matching an argument's first levels (as
in JAX): each part mapped over its own axis or not at all; a mismatch is a clear error."""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([[0.1, 0.2], [1.0, -1.0], [0.0, 0.3]])


def predict(params, x):
    return np.tanh(x @ params["w"] + params["b"])


def scaled(d):
    return d["x"] * d["s"]


def test_a_dict_of_axes_for_a_dict_argument():
    params = {"w": np.array([0.2, -0.5]), "b": 0.3}
    out = sg.vmap(predict, in_axes=({"w": None, "b": None}, 0))(params, X)
    assert np.allclose(out, np.tanh(X @ params["w"] + 0.3))


def test_parts_mapped_differently():
    out = sg.vmap(scaled, in_axes=({"x": 0, "s": None},))({"x": X, "s": np.array([2.0, 3.0])})
    assert np.allclose(out, X * np.array([2.0, 3.0]))
    columns = sg.vmap(scaled, in_axes=({"x": 1, "s": 0},))({"x": X, "s": np.array([2.0, 3.0])})
    assert np.allclose(columns, (X * np.array([2.0, 3.0])).T)


def test_per_example_gradients_with_dict_axes():
    def loss(params, x):
        return predict(params, x) ** 2

    params = {"w": np.array([0.2, -0.5]), "b": 0.3}
    grads = sg.vmap(sg.grad(loss), in_axes=({"w": None, "b": None}, 0))(params, X)
    for i in range(len(X)):
        one = sg.grad(loss)(params, X[i])
        assert np.allclose(grads["w"][i], one["w"]) and np.isclose(grads["b"][i], one["b"])


def test_mismatches_are_clear_errors():
    with pytest.raises(ValueError, match="does not match"):
        sg.vmap(scaled, in_axes=({"x": 0, "t": None},))({"x": X, "s": 2.0})
    with pytest.raises(TypeError, match="one entry per positional argument"):
        sg.vmap(scaled, in_axes={"x": 0, "s": None})
    with pytest.raises(TypeError, match="ints, None"):
        sg.vmap(scaled, in_axes=({"x": "0"},))
