"""What peers' test suites check of a gradient, asked here of a table of functions: each
function at a point of its domain, in every engine (``s2s``, ``auto``, ``tape``), reverse and
forward mode against central differences in float64, and the derivatives of the gradient
too where the function is twice differentiable there (``sg.check_grads(order=2)``).

The table spans what those suites cover: unary functions over the shapes (), (3,), (2, 3);
binary ones over broadcasting pairs; reductions with an axis, a tuple of axes, keepdims and
ddof; products; shape functions; indexing forms; linear algebra; and the SciPy functions
with rules, the families added for parity with peers among them (the scaled and modified
Bessel functions, the exponential integrals, the entropy terms and losses, the location-scale
distributions, the normal quantiles, the Poisson distribution function, ``fftconvolve`` and
``convolve2d``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sgrad as sg

special = pytest.importorskip("scipy.special")
stats = pytest.importorskip("scipy.stats")
signal = pytest.importorskip("scipy.signal")

MODES = ["s2s", "auto", "tape"]
rng = np.random.default_rng(875001)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def probability(*shape):
    return rng.uniform(0.15, 0.85, shape)


def away_from_kinks(*shape):
    """Values at least 0.2 from every integer, with both signs."""
    return rng.integers(-2, 2, shape) + rng.uniform(0.2, 0.8, shape)


def well_conditioned(n):
    return rng.standard_normal((n, n)) + n * np.eye(n)


SHAPES = [(), (3,), (2, 3)]
PAIRS = [((), (3,)), ((3, 1), (1, 4)), ((2, 3), (3,))]

# (name, function, domain)
UNARY = [
    ("log1p", lambda x: np.log1p(x), positive),
    ("arcsin", lambda x: np.arcsin(x - 0.5), probability),
    ("abs", lambda x: np.abs(x) * x, away_from_kinks),
    ("sinc", lambda x: np.sinc(x), away_from_kinks),
    ("clip", lambda x: np.clip(x, -0.5, 0.5) * x, away_from_kinks),
    ("i0e", lambda x: special.i0e(x), normal),
    ("i1e", lambda x: special.i1e(x), normal),
    ("k0", lambda x: special.k0(x), positive),
    ("k1", lambda x: special.k1(x), positive),
    ("kv", lambda x: special.kv(1.5, x), positive),
    ("kve", lambda x: special.kve(0.5, x), positive),
    ("yv", lambda x: special.yv(1.5, x), positive),
    ("erfcx", lambda x: special.erfcx(x), probability),
    ("dawsn", lambda x: special.dawsn(x), normal),
    ("exp1", lambda x: special.exp1(x), positive),
    ("expi", lambda x: special.expi(x), positive),
    ("spence", lambda x: special.spence(x), positive),
    ("log_expit", lambda x: special.log_expit(x), normal),
    ("zeta_in_q", lambda x: special.zeta(3.0, x), positive),
    ("boxcox", lambda x: special.boxcox(x, 0.7), positive),
    ("boxcox_at_zero", lambda x: special.boxcox1p(x, 0.0), positive),
    ("digamma", lambda x: special.digamma(x), positive),
]

BINARY = [
    ("pow", lambda x, y: x**y, positive, normal),
    ("arctan2", lambda x, y: np.arctan2(x, y), normal, normal),
    ("hypot", lambda x, y: np.hypot(x, y), normal, normal),
    ("logaddexp", lambda x, y: np.logaddexp(x, y), normal, normal),
    ("maximum", lambda x, y: np.maximum(x, y), normal, normal),
    ("xlogy", lambda x, y: special.xlogy(x, y), normal, positive),
    ("rel_entr", lambda x, y: special.rel_entr(x, y), positive, positive),
    ("kl_div", lambda x, y: special.kl_div(x, y), positive, positive),
    ("huber", lambda x, y: special.huber(y, x), normal, positive),
    ("pseudo_huber", lambda x, y: special.pseudo_huber(y, x), normal, positive),
    ("boxcox1p", lambda x, y: special.boxcox1p(y, x), normal, positive),
]

# (name, function, arguments, order)
OTHERS = [
    ("sum_axes", lambda x: np.sum(x, axis=(0, 2)), [normal(2, 3, 4)], 2),
    ("mean_keepdims", lambda x: np.mean(x, axis=-1, keepdims=True) * x, [normal(2, 3)], 2),
    ("var_ddof", lambda x: np.var(x, axis=1, ddof=1), [normal(2, 4)], 2),
    ("std_ddof", lambda x: np.std(x, axis=0, ddof=1), [normal(4, 3)], 2),
    ("prod_one_zero", lambda x: np.prod(x * np.array([1.0, 0.0, 1.0])), [normal(3)], 2),
    ("cumprod", lambda x: np.cumprod(x, axis=1), [normal(2, 3)], 2),
    ("max_axis", lambda x: np.max(x, axis=0), [normal(3, 4)], 1),
    (
        "tensordot",
        lambda x, y: np.tensordot(x, y, axes=[(0, 1), (1, 2)]),
        [normal(2, 3), normal(2, 2, 3, 4)],
        2,
    ),
    (
        "einsum_three",
        lambda x, y, z: np.einsum("ijk,lji,lli->lki", x, y, z),
        [normal(3, 4, 4), normal(4, 4, 3), normal(4, 4, 3)],
        2,
    ),
    ("matmul_broadcast", lambda x, y: x @ y, [normal(2, 1, 2, 3), normal(3, 3, 2)], 2),
    ("kron", lambda x, y: np.kron(x, y), [normal(2, 2), normal(2, 3)], 2),
    ("trace_offset", lambda x: np.trace(x, offset=-1), [normal(4, 3)], 2),
    ("moveaxis", lambda x: np.moveaxis(x, [0, 1], [-1, -2]), [normal(2, 3, 4)], 2),
    ("rot90", lambda x: np.rot90(x, 3, axes=(0, 1)), [normal(2, 3)], 2),
    ("array_split", lambda x: np.array_split(x, 3)[0], [normal(7)], 2),
    ("index_negative_step", lambda x: x[4:0:-2], [normal(6)], 2),
    ("index_ix", lambda x: x[np.ix_([0, 2], [1, 0])], [normal(3, 3)], 2),
    ("index_ellipsis", lambda x: x[0, ..., None, 1], [normal(2, 3, 2)], 2),
    ("slogdet", lambda x: np.linalg.slogdet(x)[1], [well_conditioned(3)], 2),
    (
        "solve_batch",
        lambda x, y: np.linalg.solve(x, y),
        [np.stack([well_conditioned(3), well_conditioned(3)]), normal(2, 3, 1)],
        2,
    ),
    ("eigh_symmetric", lambda x: np.linalg.eigh(x + x.T)[0], [normal(3, 3)], 2),
    ("pinv", lambda x: np.linalg.pinv(x), [normal(3, 2)], 2),
    ("lstsq", lambda x, y: np.linalg.lstsq(x, y, rcond=None)[0], [normal(4, 2), normal(4)], 2),
    (
        "logsumexp_b",
        lambda x: special.logsumexp(x, axis=1, b=np.array([[0.5, 1.0, 2.0]])),
        [normal(2, 3)],
        2,
    ),
    (
        "norm_ppf",
        lambda q, m, s: stats.norm.ppf(q, m, s),
        [probability(4, 3), normal(1, 3), positive(4, 1)],
        2,
    ),
    (
        "norm_isf",
        lambda q, m, s: stats.norm.isf(q, m, s),
        [probability(3), normal(3), positive(3)],
        2,
    ),
    (
        "norm_logsf",
        lambda x, m, s: stats.norm.logsf(x, m, s),
        [normal(4, 3), normal(1, 3), positive(4, 1)],
        2,
    ),
    (
        "poisson_cdf",
        lambda mu: stats.poisson.cdf(np.array([[0.0, 1.0, 3.5]]), mu),
        [positive(2, 1)],
        2,
    ),
    ("poisson_logcdf", lambda mu: stats.poisson.logcdf(np.array([0.0, 2.0]), mu), [positive(2)], 2),
    ("poisson_sf", lambda mu: stats.poisson.sf(2.0, mu), [positive(3)], 2),
    (
        "fftconvolve_valid",
        lambda x, y: signal.fftconvolve(x, y, mode="valid"),
        [normal(5), normal(3)],
        2,
    ),
    (
        "fftconvolve_same_2d",
        lambda x, y: signal.fftconvolve(x, y, mode="same"),
        [normal(4, 3), normal(3, 2)],
        2,
    ),
    ("convolve2d_full", lambda x, y: signal.convolve2d(x, y), [normal(4, 3), normal(2, 2)], 2),
    (
        "convolve2d_same",
        lambda x, y: signal.convolve2d(x, y, mode="same"),
        [normal(3, 3), normal(4, 2)],
        2,
    ),
]


def _called(method):
    """A function of the user's calling ``method`` (a distribution's ``logpdf``, say)."""
    return lambda x, loc, scale: method(x, loc, scale)


for family in ("cauchy", "laplace", "logistic", "gumbel_r"):
    distribution = getattr(stats, family)
    smooth = 1 if family == "laplace" else 2
    for method in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
        OTHERS.append(
            (
                f"{family}_{method}",
                _called(getattr(distribution, method)),
                [away_from_kinks(4, 3) / 3.0, normal(1, 3) / 10.0, positive(4, 1)],
                smooth if method in ("logpdf", "pdf") else 2,
            )
        )
OTHERS += [
    ("expon_logpdf", lambda x, s: stats.expon.logpdf(x, -0.5, s), [positive(3), positive(3)], 2),
    ("expon_cdf", lambda x, s: stats.expon.cdf(x, -0.5, s), [positive(3), positive(3)], 2),
    (
        "uniform_logpdf",
        lambda loc, s: stats.uniform.logpdf(0.5, loc - 1.0, s + 1.0),
        [probability(2), positive(2)],
        2,
    ),
    (
        "uniform_cdf",
        lambda loc, s: stats.uniform.cdf(0.5, loc - 1.0, s + 2.0),
        [probability(2), positive(2)],
        2,
    ),
]


def _cases():
    for name, f, domain in UNARY:
        for shape in SHAPES:
            yield pytest.param(f, [domain(*shape)], 2, id=f"{name}-{shape}")
    for name, f, first, second in BINARY:
        for a, b in PAIRS:
            yield pytest.param(f, [first(*a), second(*b)], 2, id=f"{name}-{a}-{b}")
    for name, f, args, order in OTHERS:
        yield pytest.param(f, args, order, id=name)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, args, order", list(_cases()))
def test_gradients_match_central_differences(f, args, order, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)  # mode="auto" may use the tape
        if mode == "auto":  # the code of mode="s2s" (or the tape): its first order suffices
            sg.check_grads(f, *args, mode=mode, modes=("rev",), order=1)
        else:
            sg.check_grads(f, *args, mode=mode, order=order)


def _refused_order(v, x):
    return np.sum(special.kv(v, x))  # asks for the order's derivative


@pytest.mark.parametrize("mode", MODES)
def test_an_order_without_a_closed_form_is_refused_at_the_users_line(mode):
    with pytest.raises(sg.NonDifferentiableError, match="the order v") as caught:
        sg.grad(_refused_order, wrt=0, mode=mode)(1.5, np.array([0.5, 2.0]))
    assert __file__ in str(caught.value)
