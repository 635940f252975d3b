"""scipy.linalg.lstsq (s2sgrad/rules/scipy_linalg_lstsq.py) in a and b, for tall and wide
full-rank matrices, through the solution, the residues and the singular values: to second
order, reverse and forward, in s2s, tape and auto on a first and a later call, against
central differences; a rank-deficient matrix is refused at the user's line."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import check_grads_on_two_calls
from rulecheck import assert_every_rule_is_tested, rules_defined_in

import s2sgrad as sg

linalg = pytest.importorskip("scipy.linalg")

MODES = ("s2s", "tape", "auto")
HERE = __file__.rsplit("/", 1)[-1]


def every_output(a, b):
    x, residues, rank, singular_values = linalg.lstsq(a, b)
    return np.sum(x**3) + 2.0 * np.sum(residues) + np.sum(singular_values**2)


def solution_only(a, b):
    return np.sum(np.sin(linalg.lstsq(a, b)[0]))


def with_a_driver(a, b):
    x = linalg.lstsq(a, b, lapack_driver="gelsy")[0]
    return np.sum(x * x)


CASES = [
    (every_output, (5, 3), (5,)),
    (every_output, (6, 3), (6, 2)),
    (every_output, (3, 5), (3,)),
    (solution_only, (2, 4), (2, 3)),
    (solution_only, (4, 4), (4,)),
    (with_a_driver, (5, 3), (5, 2)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("f", "a_shape", "b_shape"), CASES, ids=lambda v: getattr(v, "__name__", str(v))
)
def test_second_order_reverse_and_forward_against_differences(f, a_shape, b_shape, mode):
    generator = np.random.default_rng(sum(a_shape) + len(b_shape))
    a = generator.standard_normal(a_shape)
    b = generator.standard_normal(b_shape)
    check_grads_on_two_calls(f, (a, b), mode)


def rank_deficient_solution(a, b):
    return np.sum(linalg.lstsq(a, b)[0])  # the refused line


@pytest.mark.parametrize("mode", MODES)
def test_a_rank_deficient_matrix_is_refused_at_the_users_line(mode):
    column = np.arange(1.0, 5.0)
    a = np.stack([column, 2.0 * column, column**2], axis=1)  # rank 2
    b = np.ones(4)
    with pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: scipy.linalg.lstsq of a rank"):
        sg.grad(rank_deficient_solution, mode=mode)(a, b)
    with pytest.raises(sg.S2SGradError, match="rank-deficient"):
        sg.jvp(rank_deficient_solution, (a, b), (a, b))


def test_every_rule_is_tested():
    module = "s2sgrad.rules.scipy_linalg_lstsq"
    assert rules_defined_in([module]) == [linalg.lstsq]
    assert_every_rule_is_tested([module], [linalg.lstsq])
