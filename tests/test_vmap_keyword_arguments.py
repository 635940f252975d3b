"""``vmap(f)`` called with keyword arguments: ``in_axes`` has no entry for them, so the
call is refused with a TypeError that says how to pass them (it was Python's bare
"unexpected keyword argument" naming s2sgrad's own method); a bound keyword works."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import s2sgrad as sg


def scaled(a, scale=2.0):
    return a * scale


def test_keyword_arguments_are_refused_with_what_to_write():
    with pytest.raises(TypeError, match=r"scaled was given keyword arguments \(scale\)"):
        sg.vmap(scaled)(np.ones((3, 2)), scale=3.0)


def test_bound_keyword_and_positional_unmapped_argument():
    a = np.random.default_rng(0).normal(size=(4, 3))
    bound = sg.vmap(functools.partial(scaled, scale=3.0))(a)
    positional = sg.vmap(scaled, in_axes=(0, None))(a, 3.0)
    np.testing.assert_allclose(bound, 3 * a)
    np.testing.assert_allclose(positional, 3 * a)
