"""Peers' suites hand library functions to ``grad`` directly (``grad(stats.norm.logpdf)``).
A distribution's method with a rule has no source of the user's to transform: ``mode="s2s"``
refuses it as it refuses ``sg.grad(np.sin)``, saying what to write instead (not that the
library's file was edited), and ``mode="auto"`` and ``mode="tape"`` give its gradient."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sgrad as sg

stats = pytest.importorskip("scipy.stats")


def test_s2s_refuses_a_library_method_saying_what_to_do():
    with pytest.raises(sg.UnsupportedError, match="has a derivative rule") as caught:
        sg.grad(stats.norm.logpdf, mode="s2s")(0.3, 0.1, 2.0)
    assert "edited" not in str(caught.value)
    assert "calls it" in str(caught.value)


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_auto_and_the_tape_differentiate_a_library_method(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        g = sg.grad(stats.norm.logpdf, wrt=(0, 1, 2), mode=mode)(0.3, 0.1, 2.0)
    z = (0.3 - 0.1) / 2.0
    np.testing.assert_allclose(g, (-z / 2.0, z / 2.0, (z * z - 1.0) / 2.0), rtol=1e-12)
