"""``grad`` of a function returning a Python complex number (``z ** 3`` of a complex
argument): autograd's convention, ``f'(z)`` for a holomorphic ``f``, in every mode, as for
a NumPy complex scalar. It was refused as an output of more than one element."""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")


def cube(z):
    return z**3


def shifted_square(z):
    return z * z + 2 * z


def reciprocal(z):
    return 1 / z


def imaginary_square(x):
    return (x * 1j) ** 2


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("f", "derivative"),
    [
        (cube, lambda z: 3 * z**2),
        (shifted_square, lambda z: 2 * z + 2),
        (reciprocal, lambda z: -1 / z**2),
    ],
)
def test_holomorphic_functions_of_a_python_complex(mode, f, derivative):
    rng = np.random.default_rng(3)
    for _ in range(3):
        z = complex(rng.normal(), rng.normal())
        gradient = sg.grad(f, mode=mode)
        assert gradient(z) == pytest.approx(derivative(z))
        assert gradient(z) == pytest.approx(derivative(z))
        assert sg.value_and_grad(f, mode=mode)(z) == pytest.approx((f(z), derivative(z)))


@pytest.mark.parametrize("mode", MODES)
def test_real_argument_complex_output(mode):
    x = float(np.random.default_rng(4).normal())
    assert sg.grad(imaginary_square, mode=mode)(x) == pytest.approx(-2 * x)


@pytest.mark.parametrize("mode", MODES)
def test_second_derivative(mode):
    z = 0.7 + 0.4j
    assert sg.grad(sg.grad(cube, mode=mode), mode=mode)(z) == pytest.approx(6 * z)


@pytest.mark.parametrize("mode", MODES)
def test_a_sequence_output_is_still_refused(mode):
    with pytest.raises(ValueError, match="single-element output"):
        sg.grad(lambda z: [z, z], mode=mode)(1.0 + 1.0j)
