"""Forward mode of a library call dispatched when it runs (``np.linalg.solve(a, b, **opts)``,
whose keywords the transformer cannot see): the JVP rule was evaluated once per
differentiated argument with that argument's tangent, and the entries it computes for
the other arguments, with the wrong shapes, raised a NumPy ValueError from generated code.
Where that happens the call's tangent now comes from its VJP rule, transposed on the tape
for this one call.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, numeric_jvp

import s2sgrad as sg


def solved(a, b, options):
    return np.sum(np.sin(np.linalg.solve(a, b, **options)))


def contracted(a, b, options):
    return np.sum(np.tensordot(a, b, **options) ** 2)


CASES = [
    (solved, (3, 3), (3,), {}),
    (solved, (3, 3), (3, 2), {}),
    (contracted, (2, 3), (3, 4), {"axes": 1}),
]


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize(("f", "a_shape", "b_shape", "options"), CASES)
def test_tangent_of_both_arguments(f, a_shape, b_shape, options, mode):
    rng = np.random.default_rng(len(b_shape))
    a = rng.uniform(-1.0, 1.0, size=a_shape) + (3.0 * np.eye(3) if a_shape == (3, 3) else 0.0)
    b = rng.uniform(-1.0, 1.0, size=b_shape)
    ta, tb = rng.normal(size=a_shape), rng.normal(size=b_shape)

    _, got = sg.jvp(f, (a, b, options), (ta, tb, None), mode=mode)
    args = [a, b, options]
    expected = numeric_jvp(f, args, 0, ta) + numeric_jvp(f, args, 1, tb)
    assert_close(got, expected, rtol=1e-5)
