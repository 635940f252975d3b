"""What autograd's ``test_linalg.py`` and ``test_scipy.py`` ask, asked of s2sgrad: inverse,
determinants, Cholesky, eigh, SVD, solve and QR on single and batched matrices (a function
that reads one triangle is given the symmetric part of its argument, so differences in
every entry agree with the symmetric gradient), and SciPy's special functions and
distributions; in every engine, on a first and a later call, forward mode and
Hessian-vector products, against central differences in float64.
"""

from __future__ import annotations

import numpy as np
import pytest
from peer_suite_checks import MODES, check_function, weighted
from scipy import special, stats

rng = np.random.default_rng(1010033)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def unit(*shape):
    return rng.uniform(0.1, 0.9, shape)


def well_conditioned(*shape):
    n = shape[-1]
    return rng.standard_normal(shape) + 3.0 * np.eye(n)


def spd(*shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def sym(x):
    """The symmetric part of ``x``: what a function reading one triangle sees, so that
    differences in every entry agree with the symmetric gradient convention."""
    return (x + np.swapaxes(x, -1, -2)) / 2.0


# (name, function, arguments, second order checked)
CASES = [
    # linalg
    ("inv", lambda x: np.linalg.inv(x), [well_conditioned(3, 3)], True),
    ("inv_batched", lambda x: np.linalg.inv(x), [well_conditioned(2, 3, 3)], True),
    ("det", lambda x: np.linalg.det(x), [well_conditioned(3, 3)], True),
    ("det_batched", lambda x: np.linalg.det(x), [well_conditioned(2, 3, 3)], True),
    ("slogdet_batched", lambda x: np.linalg.slogdet(x)[1], [well_conditioned(2, 3, 3)], True),
    ("cholesky", lambda x: np.linalg.cholesky(sym(x)), [spd(3, 3)], True),
    ("cholesky_batched", lambda x: np.linalg.cholesky(sym(x)), [spd(2, 3, 3)], True),
    ("eigh_vectors", lambda x: np.abs(np.linalg.eigh(x + x.T)[1][:, -1]), [normal(3, 3)], True),
    ("eigh_lower", lambda x: np.linalg.eigh(sym(x), UPLO="L")[0], [spd(3, 3)], True),
    ("eigh_batched", lambda x: np.linalg.eigh(sym(x))[0], [spd(2, 3, 3)], True),
    ("eigvalsh", lambda x: np.linalg.eigvalsh(sym(x)), [spd(3, 3)], True),
    ("svd_values", lambda x: np.linalg.svd(x, compute_uv=False), [normal(3, 2)], True),
    ("svd_batched_values", lambda x: np.linalg.svd(x, compute_uv=False), [normal(2, 3, 4)], True),
    (
        "svd_full_product",
        lambda x: np.abs(np.linalg.svd(x, full_matrices=False)[0][:, 0]),
        [normal(3, 2)],
        True,
    ),
    ("solve_vector", lambda a, b: np.linalg.solve(a, b), [well_conditioned(3, 3), normal(3)], True),
    (
        "solve_batched_matrix",
        lambda a, b: np.linalg.solve(a, b),
        [well_conditioned(2, 3, 3), normal(2, 3, 2)],
        True,
    ),
    ("matrix_power", lambda x: np.linalg.matrix_power(x, 3), [normal(3, 3) / 2], True),
    (
        "matrix_power_negative",
        lambda x: np.linalg.matrix_power(x, -2),
        [well_conditioned(3, 3)],
        True,
    ),
    ("qr_r", lambda x: np.abs(np.linalg.qr(x)[1]), [normal(4, 3)], True),
    (
        "multi_dot",
        lambda a, b, c: np.linalg.multi_dot([a, b, c]),
        [normal(2, 3), normal(3, 4), normal(4, 2)],
        True,
    ),
    (
        "tensorsolve",
        lambda a, b: np.linalg.tensorsolve(a, b),
        [well_conditioned(4, 4).reshape(2, 2, 4), normal(2, 2)],
        True,
    ),
    # scipy
    ("gamma", special.gamma, [positive(3)], True),
    ("gammaln", special.gammaln, [positive(3)], True),
    ("psi", special.psi, [positive(3)], True),
    ("polygamma", lambda x: special.polygamma(2, x), [positive(3)], True),
    ("multigammaln", lambda x: special.multigammaln(x, 3), [positive() + 2.0], True),
    ("beta", special.beta, [positive(3), positive(3)], True),
    ("betaln", special.betaln, [positive(2, 1), positive(3)], True),
    ("erf_erfc", lambda x: special.erf(x) * special.erfc(x), [normal(3)], True),
    ("erfinv_erfcinv", lambda x: special.erfinv(x - 0.5) + special.erfcinv(x), [unit(3)], True),
    ("logit_expit", lambda x: special.logit(x) * special.expit(x), [unit(3)], True),
    (
        "j0_j1_y0_y1",
        lambda x: special.j0(x) + special.j1(x) * special.y0(x) - special.y1(x),
        [positive(3)],
        True,
    ),
    ("i0_i1", lambda x: special.i0(x) * special.i1(x), [normal(3)], True),
    (
        "iv_jn_ive",
        lambda x: special.iv(2, x) + special.jn(1, x) + special.ive(1, x),
        [positive(3)],
        True,
    ),
    ("jv_in_x", lambda x: special.jv(2.5, x), [positive(3)], True),
    ("logsumexp_axis", lambda x: special.logsumexp(x, axis=0, keepdims=True), [normal(3, 2)], True),
    (
        "logsumexp_return_sign",
        lambda x: special.logsumexp(x, b=np.array([1.0, 2.0, 0.5]), return_sign=True)[0],
        [normal(3)],
        True,
    ),
    ("softmax", lambda x: special.softmax(x, axis=1), [normal(2, 3)], True),
    ("log_softmax", lambda x: special.log_softmax(x), [normal(4)], True),
    (
        "norm_pdf_cdf",
        lambda x, m, s: stats.norm.pdf(x, m, s) + stats.norm.logcdf(x, loc=m, scale=s),
        [normal(3), normal(3), positive(3)],
        True,
    ),
    ("t_logpdf", lambda x, df: stats.t.logpdf(x, df), [normal(3), positive(3) + 1.0], True),
    (
        "t_pdf_loc_scale",
        lambda x, m, s: stats.t.pdf(x, 3.0, m, s),
        [normal(3), normal(3), positive(3)],
        True,
    ),
    (
        "beta_logpdf",
        lambda x, a, b: stats.beta.logpdf(x, a, b),
        [unit(3), positive(3), positive(3)],
        True,
    ),
    ("gamma_logpdf", lambda x, a: stats.gamma.logpdf(x, a), [positive(3), positive(3)], True),
    (
        "poisson_logpmf",
        lambda mu: stats.poisson.logpmf(np.array([0.0, 2.0, 5.0]), mu),
        [positive(3)],
        True,
    ),
    (
        "dirichlet_logpdf",
        lambda a: stats.dirichlet.logpdf(np.array([0.2, 0.3, 0.5]), a),
        [positive(3)],
        True,
    ),
    (
        "mvn_logpdf",
        lambda x, m, c: stats.multivariate_normal.logpdf(x, m, sym(c)),
        [normal(3), normal(3), spd(3, 3)],
        True,
    ),
    (
        "mvn_logpdf_rows",
        lambda x, m: stats.multivariate_normal.logpdf(x, m, np.eye(2)),
        [normal(4, 2), normal(2)],
        True,
    ),
]
SCALARS = {name: weighted(f, args) for name, f, args, _ in CASES}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, f, args, second", CASES, ids=[c[0] for c in CASES])
def test_linalg_and_scipy_functions(name, f, args, second, mode):
    check_function(SCALARS[name], args, mode, second_order=second, key=(__file__, name))
