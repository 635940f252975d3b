"""Messages name what the user wrote: ``np.r_``, not ``np.<...RClass object at 0x...>``.

A function computing with complex numbers whose step is not known to be right for complex
values was refused at that step with the repr of NumPy's index helpers (``np.r_``,
``np.c_``: objects without a ``__name__``), which now are complex-ready."""

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.naming import describe


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (np.r_, "np.r_"),
        (np.c_, "np.c_"),
        (np.mgrid, "np.mgrid"),
        (np.sin, "np.sin"),
        (np.linalg.norm, "np.linalg.norm"),
        (np.ndarray.sum, "np.ndarray.sum"),
        (np.add.reduce, "np.add.reduce"),
        (len, "len"),
    ],
)
def test_library_objects_are_named_as_users_write_them(value, name):
    assert describe(value) == name


def joined_complex_values(x):
    z = x * (1.0 + 2.0j)
    w = np.r_[z, z[:1]]
    v = np.c_[z[:, None], z[:, None] * 1j]
    return np.sum(np.abs(w) ** 2) + np.sum(np.real(v) * x[:, None])


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_np_r_and_np_c_of_complex_values(mode):
    """They were refused in s2s, by the repr of the objects; they move values (and
    cotangents) around, right for complex values as np.concatenate is."""
    x = np.random.default_rng(7).normal(size=4)
    # |w|² = 5 x² with x[0] twice; Re(v) = [x, -2x], times x
    expected = 10.0 * x * np.array([2.0, 1.0, 1.0, 1.0]) + 2.0 * x - 4.0 * x
    np.testing.assert_allclose(sg.grad(joined_complex_values, mode=mode)(x), expected, rtol=1e-10)
