"""A reshape of an argument written into: whether it is a view depends on the caller's
array, not on the private copy the generated code writes into.

``C = A.ravel(); C[0] = 5`` changes ``A`` only when ``A.ravel()`` is a view of ``A``, which
NumPy decides from ``A``'s strides: a view for a contiguous array or one whose elements are
evenly spaced (``B[:, ::2]`` of a 6-column ``B``), a copy for ``B[:, :2]`` or ``B.T``.
Source transformation copies an argument it writes into, and asked the question of that
copy, which is always contiguous: arguments such as ``B[:, :2]`` got the gradient of a
program whose write reached ``A``. The oracle is central differences perturbing the
caller's array in place, so that each evaluation sees the same layout.
"""

import numpy as np
import pytest
from oracle import assert_close

import s2sgrad as sg

MODES = ("s2s", "auto")
BASE = np.arange(24.0).reshape(4, 6) * 0.1 + 0.3
LAYOUTS = {
    "every other column": lambda b: b[:, ::2],
    "first two columns": lambda b: b[:, :2],
    "transposed": lambda b: b.T,
    "strided both ways": lambda b: b[::2, ::3],
    "inner block": lambda b: b[1:3, 1:4],
    "Fortran order": np.asfortranarray,
    "contiguous": lambda b: b,
}


def raveled_then_written(a):
    c = a.ravel()
    c[0] = 5.0
    return np.sum(a * a) + np.sum(c * 2.0)


def reshaped_then_written(a):
    c = a.reshape(-1)
    c[1] = 0.0
    return np.sum(np.sin(a)) + np.sum(c**2)


def _differences(f, layout, direction=None):
    """Central differences of ``f`` at ``layout(BASE)``, the caller's array perturbed in
    place (its layout kept): the gradient, or the derivative along ``direction``."""
    shape = layout(BASE.copy()).shape

    def at(step):
        b = BASE.copy()
        a = layout(b)
        a += step  # in place: a keeps its strides (np.asfortranarray of b is a new array)
        return f(a)

    if direction is not None:
        return (at(1e-6 * direction) - at(-1e-6 * direction)) / 2e-6
    gradient = np.zeros(shape)
    for index in np.ndindex(shape):
        e = np.zeros(shape)
        e[index] = 1e-6
        gradient[index] = (at(e) - at(-e)) / 2e-6
    return gradient


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize(
    "f", [raveled_then_written, reshaped_then_written], ids=lambda f: f.__name__
)
def test_the_gradient_follows_the_callers_layout(f, layout, mode):
    make = LAYOUTS[layout]
    gradient = sg.grad(f, mode=mode)
    for _ in range(2):
        a = make(BASE.copy())
        before = a.copy()
        assert_close(gradient(a), _differences(f, make), atol=1e-6)
        np.testing.assert_array_equal(a, before)  # the caller's array is left alone


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_forward_mode_follows_the_callers_layout_or_refuses(layout, mode):
    make = LAYOUTS[layout]
    a = make(BASE.copy())
    direction = np.random.default_rng(0).normal(size=a.shape)
    try:
        _, tangent = sg.jvp(raveled_then_written, (a,), (direction,), mode=mode)
    except sg.UnsupportedError as error:
        assert "test_reshapes_of_strided_arguments.py" in str(error)
        return
    assert_close(tangent, _differences(raveled_then_written, make, direction), atol=1e-6)
