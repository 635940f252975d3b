"""What autograd's ``test_numpy.py`` and ``test_systematic.py`` ask of ufuncs, asked of
s2sgrad: unary functions over the shapes () and (2, 3), binary ones over broadcasting
shape pairs, each summed against fixed random weights; in every engine, on a first and a
later call, forward mode and Hessian-vector products, against central differences in
float64. The functions are the ones ``test_peer_style_table.py`` does not cover.
"""

from __future__ import annotations

import numpy as np
import pytest
from peer_suite_checks import MODES, check_function, weighted

rng = np.random.default_rng(1010031)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def unit(*shape):
    return rng.uniform(0.1, 0.9, shape)


def away(*shape):
    """Normal numbers at least 0.1 from zero (and from each other, in small sets)."""
    x = rng.standard_normal(shape)
    return np.where(np.abs(x) < 0.1, 0.3, x) + 0.01 * np.arange(x.size).reshape(shape)


SHAPE_PAIRS = [((3,), ()), ((2, 1), (1, 3)), ((4, 2, 3), (2, 3))]

UNARY = [
    ("negative", np.negative, normal),
    ("square", np.square, normal),
    ("reciprocal", np.reciprocal, positive),
    ("cbrt", np.cbrt, positive),
    ("exp2", np.exp2, normal),
    ("expm1", np.expm1, normal),
    ("log2", np.log2, positive),
    ("log10", np.log10, positive),
    ("sinh", np.sinh, normal),
    ("cosh", np.cosh, normal),
    ("tan", np.tan, unit),
    ("arccos", np.arccos, unit),
    ("arctan", np.arctan, normal),
    ("arcsinh", np.arcsinh, normal),
    ("arccosh", lambda x: np.arccosh(x + 1.0), positive),
    ("arctanh", np.arctanh, unit),
    ("rad2deg", np.rad2deg, normal),
    ("deg2rad", np.deg2rad, normal),
    ("degrees", np.degrees, normal),
    ("fabs", np.fabs, away),
    ("sign_times", lambda x: np.sign(x) * x**2, away),
    ("real_imag_conj", lambda x: np.real(x) + np.imag(x) + np.conj(x), normal),
    ("log_abs", lambda x: np.log(np.abs(x)), away),
]

BINARY = [
    ("add", np.add),
    ("subtract", np.subtract),
    ("multiply", np.multiply),
    ("divide", lambda x, y: np.divide(x, y + 3.0)),
    ("true_divide", lambda x, y: np.true_divide(x, np.exp(y))),
    ("power", lambda x, y: np.power(np.exp(x), y)),
    ("float_power", lambda x, y: np.float_power(x**2 + 1.0, y)),
    ("minimum", np.minimum),
    ("fmax", np.fmax),
    ("fmin", np.fmin),
    ("logaddexp2", np.logaddexp2),
    ("remainder", lambda x, y: np.remainder(x, y**2 + 2.0)),
    ("fmod", lambda x, y: np.fmod(x, y**2 + 2.0)),
    ("copysign", lambda x, y: np.copysign(x, y) * x),
]


def _unary_cases():
    for name, f, domain in UNARY:
        for shape in [(), (2, 3)]:
            x = domain(*shape)
            yield pytest.param(weighted(f, [x]), [x], id=f"{name}-{shape}")


def _binary_cases():
    for name, f in BINARY:
        for a, b in SHAPE_PAIRS:
            args = [away(*a), away(*b)]
            yield pytest.param(weighted(f, args), args, id=f"{name}-{a}-{b}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, args", list(_unary_cases()))
def test_unary_functions_over_shapes(f, args, mode):
    check_function(f, args, mode, key=f)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, args", list(_binary_cases()))
def test_binary_functions_over_broadcasting_pairs(f, args, mode):
    check_function(f, args, mode, key=f)
