"""Programs written the way users write them, round 34, continued: the library calls and
indexing forms JAX's ``lax_numpy`` tests and autograd's ``test_numpy``/``test_scipy`` try,
each inside a small model (axes and keepdims, ``n=2`` differences, ``np.gradient``,
convolution modes, ``einsum`` with an ellipsis, ``pinv``, ``qr``, singular values, ``expm``,
triangular solves, FFTs, weighted averages, starred unpacking, ellipsis and ``None``
indexing, negative steps); checked in every mode as round 32 does
(``test_real_programs_round32.py``).
"""

import numpy as np
import pytest
import scipy.linalg
import scipy.special
from test_real_programs_round32 import MODES, _check_program

R = np.random.default_rng(3439)
# np.trapezoid is NumPy 2's name for np.trapz
trapezoid = getattr(np, "trapezoid", None) or np.trapz


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


def second_differences_and_gradient(u):
    """A smoothness penalty from np.diff with n=2 and np.gradient with a spacing."""
    d2 = np.diff(u, n=2)
    g = np.gradient(u, 0.5)
    return np.sum(d2**2) + np.sum(g**2) * 0.1 + np.sum(np.diff(u[::-1]) ** 3)


def convolution_modes(kernel):
    """A learned kernel convolved in full, same and valid modes, and correlated."""
    signal = np.sin(np.linspace(0.0, 3.0, 7))
    full = np.convolve(signal, kernel, mode="full")
    same = np.convolve(signal, kernel, mode="same")
    valid = np.convolve(signal, kernel, mode="valid")
    corr = np.correlate(signal, kernel, mode="valid")
    return np.sum(full**2) + np.sum(same * signal) + np.sum(valid) + np.sum(corr**2)


def einsum_ellipsis_batch(W):
    """einsum with an ellipsis over batch axes, and a bilinear form."""
    x = np.arange(12.0).reshape(2, 2, 3) / 10.0
    y = np.einsum("...i,ij->...j", x, W)
    bil = np.einsum("...i,ij,...j->...", x, W @ W.T, x)
    return np.sum(np.tanh(y)) + np.sum(bil)


def pinv_least_squares(A):
    """The minimum-norm solution by the pseudo-inverse of a tall matrix."""
    b = np.array([1.0, -0.5, 0.3, 0.8])
    x = np.linalg.pinv(A) @ b
    return np.sum(x**2) + np.sum((A @ x - b) ** 2)


def qr_orthogonalisation(A):
    """QR of a tall matrix: Q's projection of a vector and R's log-diagonal."""
    Q, Rm = np.linalg.qr(A)
    v = np.array([0.3, -0.2, 0.5, 0.1])
    return np.sum((Q.T @ v) ** 2) + np.sum(np.log(np.abs(np.diag(Rm))))


def singular_value_nuclear(A):
    """The nuclear norm and the condition-like ratio from singular values."""
    s = np.linalg.svd(A, compute_uv=False)
    return np.sum(s) + s[0] / s[-1]


def eigvalsh_log_barrier(M):
    """A log barrier on a symmetric matrix's eigenvalues computed by eigvalsh."""
    S = M @ M.T + np.eye(3)
    return -np.sum(np.log(np.linalg.eigvalsh(S))) + np.trace(S)


def matrix_power_markov(logits):
    """A Markov chain's distribution after several steps by np.linalg.matrix_power."""
    P = np.exp(logits) / np.sum(np.exp(logits), axis=1, keepdims=True)
    start = np.array([1.0, 0.0, 0.0])
    after = start @ np.linalg.matrix_power(P, 4)
    return -np.sum(np.array([0.2, 0.5, 0.3]) * np.log(after))


def expm_rotation_generator(theta):
    """scipy.linalg.expm of a skew-symmetric generator: a rotation applied to a point."""
    K = np.array(
        [[0.0, -theta[2], theta[1]], [theta[2], 0.0, -theta[0]], [-theta[1], theta[0], 0.0]]
    )
    Rm = scipy.linalg.expm(K)
    p = np.array([1.0, 0.5, -0.3])
    return np.sum((Rm @ p - np.array([0.2, 1.0, 0.1])) ** 2)


def triangular_whitening(L_raw):
    """A lower-triangular factor from raw entries, solve_triangular to whiten residuals."""
    L = np.tril(L_raw) + 2.0 * np.eye(3)
    r = np.array([0.5, -1.0, 0.3])
    z = scipy.linalg.solve_triangular(L, r, lower=True)
    return 0.5 * z @ z + np.sum(np.log(np.diag(L)))


def cho_factor_solve(A_raw):
    """scipy.linalg.cho_factor and cho_solve for a positive definite system."""
    A = A_raw @ A_raw.T + np.eye(3)
    b = np.array([1.0, 0.2, -0.4])
    c, low = scipy.linalg.cho_factor(A)
    x = scipy.linalg.cho_solve((c, low), b)
    return b @ x


def rfft_filtering(signal):
    """A low-pass filter in the frequency domain by rfft and irfft, energy kept."""
    spectrum = np.fft.rfft(signal)
    weights = np.exp(-0.5 * np.arange(len(spectrum)) ** 2)
    filtered = np.fft.irfft(spectrum * weights, n=len(signal))
    return np.sum((filtered - signal) ** 2) + np.sum(np.abs(spectrum) ** 2) * 0.01


def fft2_power(image):
    """The 2-D power spectrum's high-frequency share."""
    F = np.fft.fft2(image)
    power = np.real(F * np.conj(F))
    return np.sum(power[1:, 1:]) / np.sum(power)


def complex_parts(z_parts):
    """real, imag, conj, angle and abs of a complex value built from real parameters."""
    z = z_parts[:3] + 1j * z_parts[3:]
    w = z * np.exp(1j * 0.3)
    return np.sum(np.real(w) ** 2) + np.sum(np.imag(np.conj(w) * z)) + np.sum(np.angle(z + 2.0))


def weighted_average_and_ptp(x):
    """np.average with weights along an axis, and a ptp spread."""
    M = x.reshape(2, 3)
    avg = np.average(M, axis=1, weights=np.array([0.2, 0.3, 0.5]))
    return np.sum(avg**2) + np.ptp(M[0]) + np.sum(np.nansum(M, axis=0))


def median_and_percentiles(x):
    """A robust loss from the median and two percentiles of distinct values."""
    return np.median(x) ** 2 + np.percentile(x, 25) - np.percentile(x, 75) * 0.5


def vander_polynomial_fit(c):
    """Predictions by a Vandermonde matrix, a penalty on the coefficients' roughness."""
    xs = np.linspace(-1.0, 1.0, 5)
    V = np.vander(xs, len(c), increasing=True)
    return np.sum((V @ c - np.cos(xs)) ** 2) + np.sum(np.diff(c) ** 2)


def meshgrid_potential(centre):
    """A potential on a grid from np.meshgrid, summed as a soft penalty."""
    gx, gy = np.meshgrid(np.linspace(-1, 1, 4), np.linspace(-1, 1, 3))
    d2 = (gx - centre[0]) ** 2 + (gy - centre[1]) ** 2
    return np.sum(np.exp(-d2))


def scipy_special_more(x):
    """betaln, xlog1py, ndtr, log_softmax, softmax and logsumexp with weights."""
    a = 1.0 + np.exp(x)
    sm = scipy.special.softmax(x)
    return (
        np.sum(scipy.special.betaln(a, 2.0))
        + np.sum(scipy.special.xlog1py(a, sm))
        + np.sum(scipy.special.ndtr(x))
        + np.sum(scipy.special.log_softmax(x) * sm)
        + scipy.special.logsumexp(x, b=np.array([0.5, 1.0, 2.0, 0.1]))
    )


def starred_unpacking(x):
    """first, *middle, last = values; a head and tail handled separately."""
    first, *middle, last = x
    body = np.sum(np.array(middle) ** 2)
    head, *tail = np.split(x, 4)
    return first * last + body + np.sum(head) * sum(np.sum(t) for t in tail)


def ellipsis_and_newaxis(T):
    """Ellipsis indexing, None axes and negative-step slices of a small tensor."""
    last = T[..., -1]
    first_rows = T[:, None, 0, :]
    flipped = T[::-1, :, ::-2]
    return np.sum(last**2) + np.sum(first_rows * T[:, :1, :]) + np.sum(np.sin(flipped))


def boolean_mask_assignment(x):
    """Values above a threshold replaced through a boolean mask on a copy."""
    y = x.copy()
    mask = x > 0.2
    y[mask] = np.sqrt(x[mask])
    y[~mask] = 0.1 * x[~mask]
    return np.sum(y**2) + np.sum(y[mask])


def integer_array_scatter(v):
    """np.add.at into bins and fancy-index assignment into a table."""
    bins = np.array([0, 2, 2, 1, 0])
    totals = np.zeros(3)
    np.add.at(totals, bins, v)
    table = np.zeros((2, 3))
    table[[0, 1, 1], [2, 0, 1]] = v[:3] ** 2
    return np.sum(totals**2) + np.sum(table * np.arange(6).reshape(2, 3))


def norm_axis_keepdims(M):
    """Row normalisation by np.linalg.norm with axis and keepdims, cosine similarities."""
    U = M / np.linalg.norm(M, axis=1, keepdims=True)
    sims = U @ U.T
    return np.sum(np.triu(sims, 1) ** 2)


def sinc_unwrap_and_nan_to_num(x):
    """np.sinc, np.unwrap of a phase and np.nan_to_num of a finite computation."""
    phase = np.cumsum(0.9 * np.pi + 0.1 * x)
    unwrapped = np.unwrap(phase)
    return np.sum(np.sinc(x)) + np.sum(np.diff(unwrapped) ** 2) + np.sum(np.nan_to_num(x / 2.0))


def trapezoid_and_cumulative(f_values):
    """A definite integral by np.trapezoid and a running integral by hand."""
    xs = np.linspace(0.0, 1.0, len(f_values))
    total = trapezoid(np.exp(f_values), xs)
    running = np.concatenate([[0.0], np.cumsum(0.5 * (f_values[1:] + f_values[:-1]) * np.diff(xs))])
    return total**2 + np.sum(running**2)


PROGRAMS = [
    (second_differences_and_gradient, _n(6)),
    (convolution_modes, _n(3)),
    (einsum_ellipsis_batch, _n(3, 2)),
    (pinv_least_squares, _n(4, 2)),
    (qr_orthogonalisation, _n(4, 3)),
    (singular_value_nuclear, _n(3, 2)),
    (eigvalsh_log_barrier, _n(3, 3)),
    (matrix_power_markov, _n(3, 3)),
    (expm_rotation_generator, _n(3)),
    (triangular_whitening, _n(3, 3, scale=0.3)),
    (cho_factor_solve, _n(3, 3)),
    (rfft_filtering, _n(6)),
    (fft2_power, _n(3, 4)),
    (complex_parts, _n(6)),
    (weighted_average_and_ptp, np.array([0.3, -0.4, 1.1, 0.2, 0.9, -0.8])),
    (median_and_percentiles, np.array([0.3, -1.1, 0.8, 1.6, -0.2])),
    (vander_polynomial_fit, _n(4)),
    (meshgrid_potential, _n(2)),
    (scipy_special_more, _n(4)),
    (starred_unpacking, _n(8)),
    (ellipsis_and_newaxis, _n(2, 3, 4)),
    (boolean_mask_assignment, np.array([0.5, -0.3, 0.9, 0.05, 1.3])),
    (integer_array_scatter, _n(5)),
    (norm_axis_keepdims, _n(3, 3)),
    (sinc_unwrap_and_nan_to_num, _n(4)),
    (trapezoid_and_cumulative, _n(5)),
]

REFUSED: dict = {}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_program(f, x, mode):
    _check_program(f, x, mode, REFUSED.get(f.__name__, frozenset()))
