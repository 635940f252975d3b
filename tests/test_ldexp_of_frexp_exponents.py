"""``m, e = np.frexp(x); np.ldexp(f(m), e)``: the integer exponent ``e`` comes from a value
being differentiated, and ``np.ldexp``'s rule has no entry for its exponent, so the call was
refused ("np.ldexp has no derivative in its argument 'x2'"). The exponent is an integer by
NumPy's own rule, constant between powers of two: no derivative, by design.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp

MODES = ["s2s", "auto", "tape"]


def rebuilt_from_squared_mantissa(x):
    mantissa, exponent = np.frexp(x)
    return np.sum(np.ldexp(mantissa**2, exponent) * np.cos(x))


def scaled_by_own_exponent(x):
    _, exponent = np.frexp(x)
    return np.sum(np.ldexp(np.sin(x), exponent))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(4,), (2, 3)])
@pytest.mark.parametrize("f", [rebuilt_from_squared_mantissa, scaled_by_own_exponent])
def test_ldexp_with_an_exponent_from_frexp(f, shape, mode):
    rng = np.random.default_rng(len(shape))
    x = rng.uniform(0.6, 3.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    x = np.where(np.abs(np.abs(x) - np.round(np.abs(x))) < 0.05, x + 0.1, x)  # off 2**k
    assert_grad_jvp_and_hvp(f, x, rng.normal(size=shape), mode)
