"""What autograd's ``test_fft.py`` and ``test_complex.py`` ask, asked of s2sgrad: FFTs of
every kind (with ``n``, ``axes``, ``norm``, shifts, real transforms and their inverses) and
real functions of complex intermediates; in every engine, on a first and a later call,
forward mode and Hessian-vector products, against central differences in float64; and
what is refused (the builtin ``complex()`` of a differentiated number, second derivatives
of spectral matrix norms) named at the user's line.
"""

from __future__ import annotations

import numpy as np
import pytest
from peer_suite_checks import MODES, check_function, weighted

import s2sgrad as sg

rng = np.random.default_rng(1010034)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def away(*shape):
    """Normal numbers at least 0.1 from zero (and from each other, in small sets)."""
    x = rng.standard_normal(shape)
    return np.where(np.abs(x) < 0.1, 0.3, x) + 0.01 * np.arange(x.size).reshape(shape)


def well_conditioned(*shape):
    n = shape[-1]
    return rng.standard_normal(shape) + 3.0 * np.eye(n)


def spd(*shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


# (name, function, arguments, second order checked)
CASES = [
    # fft
    ("fft", lambda x: np.abs(np.fft.fft(x)) ** 2, [normal(5)], True),
    ("fft_n_axis", lambda x: np.real(np.fft.fft(x, n=6, axis=0)), [normal(4, 3)], True),
    ("ifft", lambda x: np.imag(np.fft.ifft(x)), [normal(4)], True),
    ("rfft", lambda x: np.abs(np.fft.rfft(x)) ** 2, [normal(6)], True),
    ("irfft", lambda x: np.fft.irfft(np.fft.rfft(x) * np.arange(1.0, 5.0)), [normal(6)], True),
    ("irfft_n", lambda x: np.fft.irfft(x + 0.5j * x, n=7), [normal(4)], True),
    (
        "fft2",
        lambda x: np.real(np.fft.fft2(x) * np.conj(np.fft.fft2(x[::-1]))),
        [normal(3, 4)],
        True,
    ),
    ("fftn_axes", lambda x: np.imag(np.fft.fftn(x, axes=(0, 2))), [normal(2, 3, 2)], True),
    (
        "rfft2_irfft2",
        lambda x: np.fft.irfft2(np.fft.rfft2(x) ** 2, s=x.shape),
        [normal(4, 4)],
        True,
    ),
    ("fftshift", lambda x: np.fft.fftshift(x) * np.arange(5.0), [normal(5)], True),
    (
        "ifftshift_axes",
        lambda x: np.fft.ifftshift(x, axes=1) * np.arange(4.0),
        [normal(2, 4)],
        True,
    ),
    ("fft_norm_ortho", lambda x: np.abs(np.fft.fft(x, norm="ortho")), [normal(4) + 2.0], True),
    # complex
    (
        "complex_mul_abs",
        lambda x, y: np.abs((x + 1j * y) * (y - 2j * x)),
        [normal(3), normal(3)],
        True,
    ),
    ("complex_angle", lambda x, y: np.angle(x + 1j * y), [away(3), away(3)], True),
    ("complex_exp_real", lambda x: np.real(np.exp(1j * x) * x), [normal(3)], True),
    (
        "complex_conj_prod",
        lambda x: np.real(np.conj(x * (1 + 2j)) * (x * (1 + 2j))),
        [normal(3)],
        True,
    ),
    ("complex_log_imag", lambda x: np.imag(np.log(x + 2j)), [normal(3)], True),
    ("complex_sqrt", lambda x: np.real(np.sqrt(x * (1 + 1j) + 3.0)), [positive(3)], True),
    (
        "complex_matmul",
        lambda x: np.abs(np.linalg.inv(x + 1j * np.eye(3)) @ x),
        [well_conditioned(3, 3)],
        True,
    ),
]
SCALARS = {name: weighted(f, args) for name, f, args, _ in CASES}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, f, args, second", CASES, ids=[c[0] for c in CASES])
def test_ffts_and_complex_intermediates(name, f, args, second, mode):
    check_function(SCALARS[name], args, mode, second_order=second, key=(__file__, name))


def eigenvalues_real_parts(x):
    return np.sum(np.sort(np.real(np.linalg.eigvals(x))) * np.arange(1.0, 4.0))


@pytest.mark.parametrize("mode", MODES)
def test_real_parts_of_general_eigenvalues(mode):
    check_function(eigenvalues_real_parts, [spd(3, 3)], mode)


def complex_of_a_number(a):
    return abs(complex(a, 2.0) ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_the_builtin_complex_of_a_differentiated_number_is_refused_with_advice(mode):
    with pytest.raises(sg.NonDifferentiableError, match=r"complex\(\) of a value") as refused:
        sg.grad(complex_of_a_number, mode=mode)(0.7)
    assert f"{__file__}:" in str(refused.value)


@pytest.mark.parametrize("order", [2, "nuc"])
def test_second_order_of_spectral_matrix_norms_is_refused_at_the_users_line(order):
    def norm(x):
        return np.linalg.norm(x, order)

    x = normal(3, 2)
    check_function(norm, [x], "s2s", second_order=False)
    with pytest.raises(sg.UnsupportedError, match="first derivative but no second") as refused:
        sg.hvp(norm, (x,), (normal(3, 2),), mode="s2s")
    assert f"{__file__}:" in str(refused.value)
