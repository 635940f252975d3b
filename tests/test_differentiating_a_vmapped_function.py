"""functorch's ``jacrev(vmap(f))`` written ``sg.jacobian(sg.vmap(f))``: mode "s2s" refused it
with "f: s2sgrad can only read the source of Python functions", naming no line, though
``f`` is a Python function; the refusal now says a function made by ``sg.vmap`` is
differentiated, where it is defined, and what to write. Mode "auto" differentiates it.
Forward mode over a call of ``sg.vmap`` inside the function now names the user's line too.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_jacobian

import s2sgrad as sg


def scaled_sines(x, y):
    return np.sin(x) * y[0] + x**2 * y[1]


Y = np.array([0.7, -1.3])


def batched(x):
    return sg.vmap(scaled_sines, in_axes=(0, None))(x, Y)


@pytest.mark.parametrize("transform", [sg.jacobian, sg.jacfwd])
def test_source_transformation_names_the_vmapped_function(transform):
    with pytest.raises(sg.UnsupportedError) as caught:
        transform(sg.vmap(np.sin), mode="s2s")(np.ones((2, 3)))
    message = str(caught.value)
    assert "a function made by sg.vmap is differentiated here" in message
    assert "sg.vmap(sg.grad(f))" in message

    with pytest.raises(sg.UnsupportedError, match=rf"{__file__}:\d+: a function made by sg.vmap"):
        sg.vjp(sg.vmap(scaled_sines, in_axes=(0, None)), np.ones((2, 3)), Y, mode="s2s")


@pytest.mark.parametrize("mode", ["auto", "tape"])
@pytest.mark.parametrize("shape", [(2, 3), (4, 2)])
def test_other_modes_differentiate_it(shape, mode):
    x = np.random.default_rng(len(shape) + shape[0]).normal(size=shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vmapped = sg.vmap(scaled_sines, in_axes=(0, None))
        jacobian = sg.jacobian(vmapped, mode=mode)(x, Y)
        _, tangent = sg.jvp(vmapped, (x, Y), (np.ones_like(x), np.zeros(2)), mode=mode)
    assert_close(jacobian, numeric_jacobian(batched, [x], 0))
    assert_close(tangent, np.cos(x) * Y[0] + 2 * x * Y[1])


def mapped_gradients(z):
    return sg.vmap(sg.grad(lambda t: np.sum(np.sin(t) * t**2)))(z)


def test_forward_mode_over_a_vmap_call_names_the_users_line():
    """Forward mode over a function that calls ``sg.vmap`` named s2sgrad's own file
    (vmap.py) in the refusal; it names the user's call now, as reverse mode does."""
    with pytest.raises(sg.UnsupportedError) as caught:
        sg.jacfwd(mapped_gradients, mode="s2s")(np.ones((2, 3)))
    message = str(caught.value)
    assert message.startswith(f"{__file__}:")
    assert "s2sgrad's own" in message
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jacobian = sg.jacfwd(mapped_gradients, mode="auto")(np.full((2, 3), 0.3))
    assert_close(jacobian, numeric_jacobian(mapped_gradients, [np.full((2, 3), 0.3)], 0))
