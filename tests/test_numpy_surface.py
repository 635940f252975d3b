"""NumPy functions added for issue 13, differentiated end to end.

Each function is checked through whole programs with ``sg.check_grads`` (reverse and
forward mode against central differences, and the derivatives of the gradient: second
order) in every engine, twice: the second call runs the code specialised to the shapes.
The rules themselves are checked one by one in tests/test_rules_*.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
RNG = np.random.default_rng(13)


# Rules that are called rather than inlined (``inline=False``) reach the generated code as
# ``vjp_call(...)``, which the source transformer does not differentiate again: in mode
# "s2s" those functions are checked to first order (mode "auto" then uses the tape).
CALLED_RULES = set()


def check_everywhere(f, *args, rtol=1e-5, atol=1e-6):
    """``check_grads`` to second order in every engine, on the first call and the second."""
    for mode in MODES:
        order = 1 if mode == "s2s" and f in CALLED_RULES else 2
        for _ in range(2):
            sg.check_grads(f, *args, order=order, mode=mode, rtol=rtol, atol=atol)


def einsum_sublists(x):
    m = np.reshape(x, (3, 4))
    return np.sum(np.einsum(m, [0, 1], m, [0, 1], [0]) ** 2)


def einsum_sublists_product(x, y):
    return np.einsum(x, [0, 1], y, [1, 2], [0, 2])


CALLED_RULES |= {einsum_sublists, einsum_sublists_product}


@pytest.mark.parametrize(
    "f, args",
    [
        (einsum_sublists, (RNG.standard_normal(12),)),
        (einsum_sublists_product, (RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2)))),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_functions(f, args):
    check_everywhere(f, *args)
