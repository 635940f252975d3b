"""What round 33's real programs found wrong, each shown by a small program of its kind
checked against central differences in the modes it failed in."""

import numpy as np
import pytest
from test_real_programs_round32 import _check_program

R = np.random.default_rng(3335)


def assembled_by_index_tuple(k):
    """Element matrices scattered into a global one by np.add.at with a row and a column
    index array broadcast against each other (finite elements); forward mode over the
    gradient asked the added_at rule for the index tuple's tangent and failed on its
    ragged shape (ValueError in s2s and auto Hessian-vector products)."""
    n = len(k) + 1
    K = np.eye(n) * 0.1
    local = np.array([[1.0, -1.0], [-1.0, 1.0]])
    for e in range(len(k)):
        idx = np.array([e, e + 1])
        np.add.at(K, (idx[:, None], idx[None, :]), np.exp(k[e]) * local)
    f = np.linspace(0.5, 1.0, n)
    return f @ np.linalg.solve(K, f)


ELEMENT_LOGS = R.normal(size=3) * 0.3


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_add_at_with_a_broadcast_index_tuple_second_order(mode):
    _check_program(assembled_by_index_tuple, ELEMENT_LOGS, mode)
