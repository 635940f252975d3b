"""A rule whose body calls a NumPy function the tape routes (``np.polynomial``'s
``chebval``), in forward mode on the tape.

The tape's ``sg.jvp`` transposes the pullback its first tape recorded; a rule run then is
given the values that finished tape recorded, tape values no recording tape tracks. The
router of ``chebval`` ran NumPy's own code on them, which tests ``isinstance(x,
np.ndarray)`` and broadcast a coefficient matrix against ``x`` instead of taking the outer
product: a wrong tangent where the shapes broadcast (two points, two columns), a bare
``ValueError`` where they do not. The router now hands such values over plain.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.polynomial import chebyshev
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg
from s2sgrad.rules.registry import get_rule, vjp_rule

_COLUMNS = np.array([[0.5, 1.0], [-1.0, 0.2], [2.0, 0.7], [0.3, -0.4]])  # (4, 2)


@pytest.fixture
def chebval_rule_calling_chebval():
    """chebval's VJP replaced by one whose body calls chebval (a user's rule made through
    the registry), put back afterwards."""
    rule = get_rule(chebyshev.chebval)
    kept = (rule.vjp, rule.inline_vjp)

    @vjp_rule(chebyshev.chebval, inline=False)
    def _chebval_through_itself(g, ans, x, c, tensor=True):
        slopes = chebyshev.chebval(x, chebyshev.chebder(c), tensor)
        return np.sum(g * slopes, axis=tuple(range(np.ndim(c) - 1))), None

    try:
        yield
    finally:
        rule.vjp, rule.inline_vjp = kept


def _fit(x):
    values = chebyshev.chebval(x * 1.5, _COLUMNS)  # (2, len(x)): the outer product
    return np.sum(np.sin(values) * np.arange(1.0, 1.0 + values.size).reshape(values.shape))


@pytest.mark.parametrize("size", [2, 3])
def test_forward_mode_on_the_tape_through_a_rule_calling_a_routed_function(
    chebval_rule_calling_chebval, size
):
    rng = np.random.default_rng(31 + size)
    x, v = rng.standard_normal(size), rng.standard_normal(size)
    assert_close(sg.grad(_fit, mode="tape")(x), numeric_grad(_fit, [x], 0))
    _, tangent = sg.jvp(_fit, (x,), (v,), mode="tape")
    assert_close(tangent, numeric_jvp(_fit, [x], 0, v))
