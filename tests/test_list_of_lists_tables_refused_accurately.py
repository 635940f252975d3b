"""A dynamic programming table kept as a list of lists, ``D[i][j] = min(...)``: reverse
mode refuses the write by source transformation, and said it wrote "into part of an array
that an expression makes", advising ``a[0, 1] = ...``, which a list does not take. The
refusal now names the list of lists and says to build the table as a NumPy array; mode
"auto" differentiates it on the tape."""

from __future__ import annotations

import numpy as np
from oracle import assert_refused_in_s2s_and_taped_in_auto

HERE = "test_list_of_lists_tables_refused_accurately.py"


def edit_distance_like(x):
    n = 3
    D = [[0.0] * (n + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        D[i][0] = D[i - 1][0] + x[i - 1]
        D[0][i] = D[0][i - 1] + x[i]
    for i in range(1, n + 1):
        for j in range(1, n + 1):
            D[i][j] = min(D[i - 1][j] + x[i - 1], D[i][j - 1] + x[j], D[i - 1][j - 1] * x[j])
    return D[n][n]


def test_the_refusal_names_the_list_of_lists_and_auto_tapes_it():
    x = np.random.default_rng(32).uniform(0.5, 1.5, size=4)
    assert_refused_in_s2s_and_taped_in_auto(
        edit_distance_like, [x], r"list held in the list 'D'.*NumPy array", HERE
    )
