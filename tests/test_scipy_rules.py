"""SciPy's optional rule set: scipy.special, scipy.stats, scipy.signal.convolve and three
functions of scipy.linalg, checked against central differences in float64 at random points
of each function's domain, in both engines, on the first and the second call, to second
order (reverse and forward mode); and the refusals, which name the user's line."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import s2sgrad as sg

scipy = pytest.importorskip("scipy")
from scipy import linalg, signal, special, stats  # noqa: E402

HERE = os.path.basename(__file__)
rng = np.random.default_rng(20261126)


def uniform(low, high, shape):
    return rng.uniform(low, high, shape)


def check(f, *args, rtol=1e-5, atol=1e-6, order=2, modes=("s2s", "tape")):
    for mode in modes:
        for _ in range(2):  # the first call, then the code cached (and specialised) for it
            sg.check_grads(f, *args, mode=mode, order=order, rtol=rtol, atol=atol)


# ------------------------------------------------------------------------ scipy.special


def f_gammaln(x):
    return np.sum(special.gammaln(x) * x)


def f_gamma(x):
    return np.sum(special.gamma(x))


def f_rgamma(x):
    return np.sum(special.rgamma(x))


def f_psi(x):
    return np.sum(special.psi(x) + special.digamma(x) ** 2)


def f_polygamma(x):
    return np.sum(special.polygamma(2, x))


def f_multigammaln(a):
    return np.sum(special.multigammaln(a, 3))


def f_beta(a, b):
    return np.sum(special.beta(a, b))


def f_betaln(a, b):
    return np.sum(special.betaln(a, b))


def f_betainc(x):
    return np.sum(special.betainc(2.5, np.array([1.5, 3.0, 0.7, 1.0]), x))


def f_gammainc(x):
    return np.sum(special.gammainc(2.0, x) + special.gammaincc(np.array([0.8, 1.5, 3.0, 2.2]), x))


def f_bessel_j(x):
    return np.sum(special.j0(x) + special.j1(x) * x + special.jn(2, x) + special.jv(1.5, x))


def f_bessel_y(x):
    return np.sum(special.y0(x) + special.y1(x) * x + special.yn(2, x))


def f_bessel_i(x):
    return np.sum(special.i0(x) + special.i1(x) * x + special.iv(1.5, x) + special.ive(2.5, x))


def f_erf(x):
    return np.sum(special.erf(x) * special.erfc(x))


def f_erfinv(x):
    return np.sum(special.erfinv(x) + special.erfcinv(x + 1.0))


def f_logistic(x):
    return np.sum(special.logit(x) * special.expit(x))


def f_ndtr(x):
    return np.sum(special.ndtr(x) + special.log_ndtr(x - 2.0) + special.ndtri(x))


def f_xlogy(x, y):
    return np.sum(special.xlogy(x, y) + special.xlog1py(x, y) + special.entr(y))


def f_logsumexp(x):
    return special.logsumexp(x * x)


def f_logsumexp_axis(x):
    return np.sum(special.logsumexp(x, axis=1) ** 2)


def f_logsumexp_keepdims(x):
    return np.sum(special.logsumexp(x, axis=(0, 2), keepdims=True) * x)


def f_logsumexp_weights(x, b):
    return np.sum(special.logsumexp(x, axis=0, b=b) ** 2)


def f_softmax(x):
    return np.sum(special.softmax(x, axis=1) * np.arange(12.0).reshape(3, 4))


def f_softmax_all(x):
    return np.sum(special.softmax(x) ** 2)


def f_log_softmax(x):
    return np.sum(special.log_softmax(x, axis=0) * np.arange(12.0).reshape(3, 4))


SPECIAL = [
    (f_gammaln, lambda: (uniform(0.5, 3.0, 4),)),
    (f_gamma, lambda: (uniform(0.5, 3.0, 4),)),
    (f_rgamma, lambda: (uniform(0.5, 3.0, 4),)),
    (f_psi, lambda: (uniform(0.5, 3.0, 4),)),
    (f_polygamma, lambda: (uniform(0.5, 3.0, 4),)),
    (f_multigammaln, lambda: (uniform(1.5, 3.0, 4),)),
    (f_beta, lambda: (uniform(0.5, 3.0, 3), uniform(0.5, 3.0, (2, 1)))),
    (f_betaln, lambda: (uniform(0.5, 3.0, 3), uniform(0.5, 3.0, (2, 1)))),
    (f_betainc, lambda: (uniform(0.1, 0.9, 4),)),
    (f_gammainc, lambda: (uniform(0.3, 3.0, 4),)),
    (f_bessel_j, lambda: (uniform(0.5, 4.0, 4),)),
    (f_bessel_y, lambda: (uniform(0.5, 4.0, 4),)),
    (f_bessel_i, lambda: (uniform(0.5, 2.0, 4),)),
    (f_erf, lambda: (uniform(-1.0, 1.0, 4),)),
    (f_erfinv, lambda: (uniform(-0.8, 0.8, 4),)),
    (f_logistic, lambda: (uniform(0.1, 0.9, 4),)),
    (f_ndtr, lambda: (uniform(0.1, 0.9, 4),)),
    (f_xlogy, lambda: (uniform(-1.0, 1.0, (2, 3)), uniform(0.3, 2.0, 3))),
    (f_logsumexp, lambda: (rng.standard_normal((3, 4)),)),
    (f_logsumexp_axis, lambda: (rng.standard_normal((3, 4)),)),
    (f_logsumexp_keepdims, lambda: (rng.standard_normal((2, 3, 2)),)),
    (f_logsumexp_weights, lambda: (rng.standard_normal((3, 4)), uniform(0.5, 2.0, 4))),
    (f_softmax, lambda: (rng.standard_normal((3, 4)),)),
    (f_softmax_all, lambda: (rng.standard_normal((3, 4)),)),
    (f_log_softmax, lambda: (rng.standard_normal((3, 4)),)),
]


@pytest.mark.parametrize("f, make_args", SPECIAL, ids=[f.__name__ for f, _ in SPECIAL])
def test_special(f, make_args):
    check(f, *make_args())


# -------------------------------------------------------------------------- scipy.stats


def f_norm(x, loc, scale):
    return np.sum(
        stats.norm.logpdf(x, loc, scale)
        + stats.norm.pdf(x, loc=loc, scale=scale)
        + stats.norm.cdf(x, loc, scale)
        + stats.norm.logcdf(x, loc, scale)
        + stats.norm.sf(x, loc, scale)
    )


def f_norm_standard(x):
    return np.sum(stats.norm.logpdf(x) * stats.norm.cdf(x))


def f_t(x, df, loc, scale):
    return np.sum(stats.t.logpdf(x, df, loc, scale) + stats.t.pdf(x, df, loc, scale))


def f_t_cdf(x, loc, scale):
    df = 3.5
    return np.sum(
        stats.t.cdf(x, df, loc, scale)
        + stats.t.logcdf(x, df, loc, scale)
        + stats.t.sf(x, df, loc, scale)
    )


def f_beta_density(x, a, b):
    return np.sum(stats.beta.logpdf(x, a, b) + stats.beta.pdf(x, a, b))


def f_beta_cdf(x, loc, scale):
    return np.sum(stats.beta.cdf(x, 2.0, 3.0, loc, scale) + stats.beta.logcdf(x, 2.0, 3.0, loc))


def f_gamma_density(x, a, loc, scale):
    return np.sum(stats.gamma.logpdf(x, a, loc, scale) + stats.gamma.pdf(x, a, loc, scale))


def f_gamma_cdf(x, scale):
    return np.sum(stats.gamma.cdf(x, 2.5, scale=scale) + stats.gamma.sf(x, 2.5, 0.0, scale))


def f_chi2(x, df):
    return np.sum(stats.chi2.logpdf(x, df) + stats.chi2.pdf(x, df) + stats.chi2.sf(x, 3.0))


def f_chi2_cdf(x, loc, scale):
    return np.sum(stats.chi2.cdf(x, 4.0, loc, scale) + stats.chi2.logcdf(x, 4.0, loc, scale))


def f_poisson(mu):
    k = np.array([0, 1, 3, 6])
    return np.sum(stats.poisson.logpmf(k, mu) + stats.poisson.pmf(k, mu))


def f_dirichlet(u, alpha):
    x = special.softmax(u)  # a point of the simplex, as the distribution asks
    return stats.dirichlet.logpdf(x, alpha) + stats.dirichlet.pdf(x, alpha)


def f_dirichlet_samples(u, alpha):
    x = special.softmax(u, axis=0)  # three components (rows), two samples (columns)
    return np.sum(stats.dirichlet.logpdf(x, alpha) * np.array([1.0, 2.0]))


def f_mvn(x, mean, root):
    cov = root @ root.T + np.eye(3)  # symmetric positive definite
    return np.sum(stats.multivariate_normal.logpdf(x, mean, cov) * np.arange(1.0, 5.0))


def f_mvn_pdf(x, mean, root):
    cov = root @ root.T + np.eye(3)
    return stats.multivariate_normal.pdf(x, mean, cov)


def f_mvn_diagonal(x, variances):
    return np.sum(stats.multivariate_normal.logpdf(x, np.zeros(3), variances))


def f_mvn_entropy(root):
    cov = root @ root.T + np.eye(3)
    return stats.multivariate_normal.entropy(cov=cov) ** 2


STATS = [
    (f_norm, lambda: (rng.standard_normal(4), uniform(-0.5, 0.5, 4), uniform(0.5, 2.0, 1))),
    (f_norm_standard, lambda: (rng.standard_normal(4),)),
    (
        f_t,
        lambda: (
            rng.standard_normal(4),
            uniform(2.0, 6.0, 4),
            uniform(-0.5, 0.5, 1),
            uniform(0.5, 2.0, 4),
        ),
    ),
    (f_t_cdf, lambda: (rng.standard_normal(4), uniform(-0.5, 0.5, 4), uniform(0.5, 2.0, 4))),
    (f_beta_density, lambda: (uniform(0.1, 0.9, 4), uniform(1.5, 3.0, 4), uniform(1.5, 3.0, 1))),
    (f_beta_cdf, lambda: (uniform(0.3, 0.9, 4), uniform(-0.1, 0.1, 4), uniform(1.1, 1.3, 1))),
    (
        f_gamma_density,
        lambda: (
            uniform(1.0, 3.0, 4),
            uniform(1.5, 3.0, 4),
            uniform(-0.5, 0.5, 4),
            uniform(0.5, 2.0, 1),
        ),
    ),
    (f_gamma_cdf, lambda: (uniform(0.5, 3.0, 4), uniform(0.5, 2.0, 4))),
    (f_chi2, lambda: (uniform(0.5, 4.0, 4), uniform(3.0, 6.0, 4))),
    (f_chi2_cdf, lambda: (uniform(1.0, 4.0, 4), uniform(-0.3, 0.3, 4), uniform(0.7, 1.5, 1))),
    (f_poisson, lambda: (uniform(0.5, 4.0, 4),)),
    (f_dirichlet, lambda: (rng.standard_normal(3), uniform(1.5, 3.0, 3))),
    (f_dirichlet_samples, lambda: (rng.standard_normal((3, 2)), uniform(1.5, 3.0, 3))),
    (
        f_mvn,
        lambda: (rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((3, 3))),
    ),
    (
        f_mvn_pdf,
        lambda: (rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal((3, 3))),
    ),
    (f_mvn_diagonal, lambda: (rng.standard_normal((2, 3)), uniform(0.5, 2.0, 3))),
    (f_mvn_entropy, lambda: (rng.standard_normal((3, 3)),)),
]


@pytest.mark.parametrize("f, make_args", STATS, ids=[f.__name__ for f, _ in STATS])
def test_stats(f, make_args):
    check(f, *make_args())


# --------------------------------------------------------- scipy.linalg and scipy.signal


def f_sqrtm(a):
    return np.sum(linalg.sqrtm(a) * np.arange(9.0).reshape(3, 3))


def f_expm(a):
    # batched, and a continuous-time Markov chain's transition probabilities
    rates = np.array([[-(a[0, 0] ** 2), a[0, 0] ** 2], [a[1, 1] ** 2, -(a[1, 1] ** 2)]])
    transition = linalg.expm(2.0 * rates)
    return np.sum(np.sin(linalg.expm(np.stack([a, a.T])))) + np.log(transition[0, 1])


def f_solve_triangular(a, b):
    lower = np.tril(a) + 3 * np.eye(3)
    upper = np.triu(a) + 3 * np.eye(3)
    return np.sum(
        linalg.solve_triangular(lower, b, lower=True) ** 2
        + linalg.solve_triangular(upper, b, trans=1) * b
        + linalg.solve_triangular(lower, b, trans="T", lower=True, unit_diagonal=True)
    )


def f_solve_triangular_vector(a, b):
    return np.sum(linalg.solve_triangular(a, b, lower=True) ** 2)


def f_solve_sylvester(a, b, q):
    return np.sum(linalg.solve_sylvester(a, b, q) ** 2)


def f_cholesky_factor_and_solve(a, b):
    k = a @ a.T + np.eye(3)  # cholesky reads one triangle: differentiated as symmetric
    upper, lower = linalg.cho_factor(k), linalg.cho_factor(k, lower=True)
    return (
        np.sum(linalg.cho_solve(upper, b) ** 2)
        + np.sum(linalg.cho_solve(lower, b[:, 0]) * b[:, 1])
        + np.sum(np.log(np.diag(upper[0])))
        + np.sum(lower[0] ** 2)  # the other triangle: k's own entries, or zeros (SciPy 1.18)
        + np.sum(linalg.cholesky(k) ** 3 + linalg.cholesky(k, lower=True) * k)
    )


def f_convolve(x, y):
    return np.sum(
        signal.convolve(x, y) ** 2
        + np.sum(signal.convolve(x, y, mode="valid")) * x[0]
        + np.sum(signal.convolve(x, y, mode="same") * x)
    )


def f_convolve_2d(x, y):
    return np.sum(
        signal.convolve(x, y, mode="full") ** 2
        + np.sum(signal.convolve(y, x, mode="valid") ** 2)
        + np.sum(signal.convolve(x, y, mode="same", method="direct") * x)
    )


OTHERS = [
    (f_sqrtm, lambda: (rng.standard_normal((3, 3)) * 0.3 + 2 * np.eye(3),)),
    (f_expm, lambda: (rng.standard_normal((3, 3)) * 0.5 + np.eye(3),)),
    (f_solve_triangular, lambda: (rng.standard_normal((3, 3)), rng.standard_normal((3, 2)))),
    (
        f_solve_triangular_vector,
        lambda: (rng.standard_normal((3, 3)) + 3 * np.eye(3), rng.standard_normal(3)),
    ),
    (
        f_solve_sylvester,
        lambda: (
            rng.standard_normal((3, 3)) + 3 * np.eye(3),
            rng.standard_normal((2, 2)) + 3 * np.eye(2),
            rng.standard_normal((3, 2)),
        ),
    ),
    (
        f_cholesky_factor_and_solve,
        lambda: (rng.standard_normal((3, 3)), rng.standard_normal((3, 2))),
    ),
    (f_convolve, lambda: (rng.standard_normal(5), rng.standard_normal(3))),
    (f_convolve_2d, lambda: (rng.standard_normal((4, 5)), rng.standard_normal((2, 3)))),
]


# On SciPy 1.15 (the newest for Python 3.10) the second-order check of sqrtm meets a None
# cotangent inside the generated backward code: not yet understood, so marked here.
OLD_SCIPY = tuple(int(part) for part in scipy.__version__.split(".")[:2]) < (1, 16)


@pytest.mark.parametrize(
    "f, make_args",
    [
        pytest.param(
            f,
            make,
            marks=[pytest.mark.xfail(OLD_SCIPY, reason="sqrtm on SciPy < 1.16", strict=True)]
            if f is f_sqrtm
            else [],
        )
        for f, make in OTHERS
    ],
    ids=[f.__name__ for f, _ in OTHERS],
)
def test_linalg_and_signal(f, make_args):
    check(f, *make_args())


# ------------------------------------------------------------------------------ refusals


def r_betainc(a):
    return np.sum(special.betainc(a, 2.0, 0.3))


def r_gammaincc(a):
    return np.sum(special.gammaincc(a, 1.3))


def r_jv(v):
    return np.sum(special.jv(v, 1.3))


def r_polygamma(n):
    return np.sum(special.polygamma(n, 1.3))


def r_t_cdf(df):
    return np.sum(stats.t.cdf(0.3, df))


def r_poisson(k):
    return np.sum(stats.poisson.pmf(k, 2.0))


REFUSED = [
    (r_betainc, "in x only, and here it is differentiated in a and b"),
    (r_gammaincc, "in x only, and here it is differentiated in a"),
    (r_jv, "differentiated in the order v"),
    (r_polygamma, "the order n is an integer"),
    (r_t_cdf, "scipy.stats.t.cdf in the shape parameter df has no closed form"),
    (r_poisson, "the count k and the shift loc are integers"),
]


def _line_of(marker):
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if line.rstrip().endswith(marker))


def _refusal(f, mode, kind):
    x = np.array([1.5, 2.5])
    with pytest.raises(sg.NonDifferentiableError) as caught:
        if kind == "reverse":
            sg.grad(f, mode=mode)(x)  # asks for the derivative in reverse mode
        else:
            sg.jvp(f, (x,), (np.ones(2),), mode=mode)  # asks for it in forward mode
    return str(caught.value)


@pytest.mark.parametrize("kind", ["reverse", "forward"])
@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("f, explanation", REFUSED, ids=[f.__name__ for f, _ in REFUSED])
def test_derivatives_without_a_closed_form_are_refused_at_the_users_line(
    f, explanation, mode, kind
):
    marker = "# asks for the derivative in reverse mode" if kind == "reverse" else "# asks for it"
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # mode="auto" does not fall back
        message = _refusal(f, mode, kind)
    assert message.startswith(
        f"{__file__}:{_line_of(marker + (' in forward mode' if kind == 'forward' else ''))}: "
    )
    assert explanation in message


def r_rayleigh(x):
    return np.sum(stats.rayleigh.logpdf(x))  # no rule for this distribution


def r_wrightomega(x):
    return np.sum(special.wrightomega(x))  # no rule for this function


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize(
    "f, name, marker",
    [
        (r_rayleigh, "scipy.stats.rayleigh.logpdf", "# no rule for this distribution"),
        (r_wrightomega, "scipy.special.wrightomega", "# no rule for this function"),
    ],
)
def test_scipy_functions_without_a_rule_are_refused_by_name(f, name, marker, mode):
    message = _refusal(f, mode, "reverse")
    assert message.startswith(f"{__file__}:{_line_of(marker)}: {name} has no derivative rule")


# --------------------------------------------------------------------- loaded lazily


LAZY = """
import sys
import numpy as np
import s2sgrad as sg

def f(x):
    return np.sum(np.sin(x))

sg.grad(f)(np.ones(2))
assert "scipy" not in sys.modules, "importing or using s2sgrad imported SciPy"
from scipy import special

def g(x):
    return np.sum(special.gammaln(x))

for mode in ("s2s", "tape"):
    assert np.allclose(sg.grad(g, mode=mode)(np.array([1.5, 2.5])), special.psi([1.5, 2.5]))
assert "scipy.stats" not in sys.modules, "the rules of scipy.special imported scipy.stats"
"""


def test_scipy_is_imported_by_the_user_only_and_its_rules_then_load(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    environment = {**os.environ, "PYTHONPATH": root}
    subprocess.run(
        [sys.executable, "-c", "import s2sgrad, sys; assert 'scipy' not in sys.modules"],
        check=True,
        cwd=root,
        env=environment,
    )
    script = tmp_path / "lazy.py"  # a file: the transformer reads the functions' source
    script.write_text(LAZY)
    subprocess.run([sys.executable, str(script)], check=True, cwd=root, env=environment)


def test_a_gradient_tape_records_scipys_python_functions():
    # stats.norm.logpdf and special.logsumexp are Python functions: the tape routes them
    x = sg.constant(rng.standard_normal(4))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(stats.norm.logpdf(x, 0.5, 2.0)) + special.logsumexp(x)
    plain = x.numpy()
    expected = -(plain - 0.5) / 4.0 + special.softmax(plain)
    np.testing.assert_allclose(tape.gradient(y, x), expected, rtol=1e-12)
    # and routed calls without a tape compute what SciPy computes
    assert np.isclose(stats.norm.logpdf(0.5, 0.5, 2.0), -np.log(2.0) - np.log(2 * np.pi) / 2)


FROZEN = stats.norm(0.5, 2.0)


def f_frozen(x):
    return np.sum(FROZEN.logpdf(x) * x)  # a frozen distribution


def test_a_frozen_distribution_is_differentiated_on_the_tape_and_refused_by_name_in_s2s():
    # the frozen object calls a copy of stats.norm, whose class has the rule
    check(f_frozen, rng.standard_normal(3), modes=("tape",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        check(f_frozen, rng.standard_normal(3), modes=("auto",))
    with pytest.raises(sg.NonDifferentiableError) as caught:
        sg.grad(f_frozen, mode="s2s")(np.ones(3))
    line = _line_of("# a frozen distribution")
    assert str(caught.value).startswith(
        f"{__file__}:{line}: FROZEN.logpdf (from SciPy) has no derivative rule"
    )
