"""``vmap(f, out_axes=k)`` with ``k`` beyond the stacked result's axes: a ValueError that
names out_axes and the axes there are (NumPy's AxisError about np.stack reached the user);
the axes there are still work, negative ones included."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sgrad as sg


def pair(a):
    return a * 2.0, np.sum(a)


@pytest.mark.parametrize("axes", [(0, 2), (3, 0), (-3, 0)])
def test_an_axis_out_of_range_is_refused_by_name(axes):
    a = np.random.default_rng(0).normal(size=(4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the batched run failing first, then one by one
        with pytest.raises(ValueError, match=r"vmap: out_axes entry -?\d is out of range"):
            sg.vmap(pair, out_axes=axes)(a)


def test_axes_in_range():
    a = np.random.default_rng(1).normal(size=(4, 3))
    doubled, sums = sg.vmap(pair, out_axes=(-1, 0))(a)
    np.testing.assert_allclose(doubled, 2 * a.T)
    np.testing.assert_allclose(sums, a.sum(axis=1))
