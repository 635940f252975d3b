"""Imports inside the differentiated function (notebook style): done once when
transforming, the names they bind read as free names, so s2s differentiates the calls
(they were "undefined names" and fell back to the tape)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_helper_calls import check_gradient, check_second_order

import s2sgrad as sg


def numpy_imported_inside(x):
    import numpy as np

    return np.sum(np.sin(x) ** 2)


def scipy_names_imported_inside(x):
    from scipy.special import expit as sigmoid
    from scipy.special import logsumexp

    return logsumexp(x * 2) + np.sum(sigmoid(x))


def a_submodule_imported_inside(x):
    import numpy.linalg as la
    import scipy.special

    return la.norm(x) ** 2 + np.sum(scipy.special.gammaln(x + 2.0))


def imported_in_a_loop(x):
    for _ in range(2):
        from scipy import stats

        x = np.tanh(x) + stats.norm.logpdf(x) * 0.1
    return np.sum(x)


def an_imported_name_rebound(x):
    import math as scale  # noqa: F811

    scale = 3.0  # noqa: F811 (also bound otherwise: the import stays a statement)
    return np.sum(x * scale)


PROGRAMS = [
    numpy_imported_inside,
    scipy_names_imported_inside,
    a_submodule_imported_inside,
    imported_in_a_loop,
    an_imported_name_rebound,
]


@pytest.mark.parametrize("f", PROGRAMS, ids=[f.__name__ for f in PROGRAMS])
def test_imports_inside_the_function(f):
    pytest.importorskip("scipy")
    x = np.array([0.3, -0.4, 1.1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        check_gradient(f, (x,))
        check_second_order(f, (x,), modes=("s2s", "auto", "tape"))
    lines = sg.source(sg.grad(f, mode="s2s")).splitlines()
    imports = [line for line in lines if line.strip().startswith(("import ", "from "))]
    assert not imports or f is an_imported_name_rebound
