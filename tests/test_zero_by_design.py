"""A rule's ``None`` for a positional argument is a zero only where it is declared right.

``zero_by_design(primitive, position)`` says the output does not change with that argument
(np.full_like's ``a``); every declaration is proved here at random points. A differentiated
value in a position a rule gives no derivative, without the declaration, is refused by both
engines, naming the user's line.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.errors import S2SGradError
from s2sgrad.rules import get_rule, registered_primitives
from s2sgrad.rules.integer_arguments import INTEGER_ARGUMENTS, positions_of
from s2sgrad.rules.registry import positions_without_derivative, silent_zero_positions

MODES = ("s2s", "tape", "auto")
HERE = __file__.rsplit("/", 1)[-1]
RNG = np.random.default_rng(31)

FULL_RANK = RNG.standard_normal((4, 3))

# For each declaration: arguments, and how to move the declared one a little
PROOFS = {
    (np.full_like, 0): (RNG.standard_normal((2, 3)), 1.5),
    (np.arange, 1): (0.25, 3.1, 0.5),
    (np.heaviside, 0): (RNG.uniform(0.5, 2.0, 4) * RNG.choice([-1.0, 1.0], 4), 0.5),
    (np.heaviside.outer, 0): (RNG.uniform(0.5, 2.0, 3) * RNG.choice([-1.0, 1.0], 3), RNG.random(2)),
    (np.nextafter, 1): (RNG.standard_normal(4), RNG.standard_normal(4) + 10.0),
    (np.copysign, 1): (
        RNG.standard_normal(4),
        RNG.uniform(0.5, 2.0, 4) * RNG.choice([-1.0, 1.0], 4),
    ),
    (np.nextafter.outer, 1): (RNG.standard_normal(3), RNG.standard_normal(2) + 10.0),
    (np.linalg.pinv, 1): (FULL_RANK, 1e-10),
    (np.linalg.lstsq, 2): (FULL_RANK, RNG.standard_normal(4), 1e-10),
}
try:
    from scipy import special
except ImportError:  # the SciPy rules are not loaded: nothing of theirs is declared
    special = None
if special is not None:  # SciPy truncates a spherical Bessel order and reads a flag
    for _function in (
        special.spherical_jn,
        special.spherical_yn,
        special.spherical_in,
        special.spherical_kn,
    ):
        PROOFS[(_function, 0)] = (2.5, RNG.uniform(0.5, 2.0, 3), True)
        PROOFS[(_function, 2)] = (2, RNG.uniform(0.5, 2.0, 3), True)
# Declarations for indices and exponents: NumPy refuses a float there, so no derivative
# can be lost
INDICES = {
    (operator.getitem, 1): (RNG.standard_normal(4), np.float64(1.0)),
    (np.ldexp, 1): (RNG.standard_normal(4), np.array([1.0, 2.0, 0.0, -1.0])),
}


def _declaration_id(declaration) -> str:
    primitive, position = declaration
    owner = getattr(primitive, "__self__", None)
    name = getattr(primitive, "__name__", repr(primitive))
    if isinstance(owner, np.ufunc):
        name = f"{owner.__name__}.{name}"
    return f"{name}-{position}"


def _declarations():
    return [(p, i) for p in registered_primitives() for i in sorted(get_rule(p).zero_by_design)]


def _integer_arguments() -> set:
    """The declarations of rules/integer_arguments.py (proved in test_integer_arguments.py)."""
    return {
        (function, position)
        for function, names in INTEGER_ARGUMENTS.items()
        for position in positions_of(function, names)
    }


def test_every_declaration_has_a_proof():
    proved = {**PROOFS, **INDICES}.keys() | _integer_arguments()
    unproved = [f"{p}: {i}" for p, i in _declarations() if (p, i) not in proved]
    assert not unproved, f"zero_by_design without a proof here: {unproved}"


def _leaves(out):
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("declaration", list(PROOFS), ids=_declaration_id)
def test_output_is_constant_in_the_declared_argument(declaration):
    primitive, position = declaration
    assert position in get_rule(primitive).zero_by_design
    args = list(PROOFS[declaration])
    out = primitive(*args)
    for scale in (1e-7, -1e-7, 1e-3):
        moved = list(args)
        moved[position] = args[position] + scale * (1.0 + np.abs(args[position]))
        for a, b in zip(_leaves(out), _leaves(primitive(*moved))):
            np.testing.assert_array_equal(a, b, err_msg=f"argument {position} moved by {scale}")
    # and the rule gives it no derivative: the declaration is what lets that through
    assert position in positions_without_derivative(get_rule(primitive).vjp)


@pytest.mark.parametrize("declaration", list(INDICES), ids=lambda d: f"{d[0]}-{d[1]}")
def test_a_float_is_refused_by_numpy_where_an_index_is_declared(declaration):
    primitive, position = declaration
    assert position in get_rule(primitive).zero_by_design
    with pytest.raises((IndexError, TypeError)):
        primitive(*INDICES[declaration])


def items_of_a_dict(x):
    weights = {"a": x[0], "b": x[1] * x[2]}
    total = 0.0
    for key in weights:
        total = total + weights[key] ** 2
    return total


def test_keys_of_a_dict_iterated_are_not_refused():
    x = RNG.uniform(0.5, 1.5, 3)
    expected = numeric_grad(items_of_a_dict, (x,), 0)
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = call_twice(sg.grad(items_of_a_dict, mode=mode), x)
        assert_close(got, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# Zeros by design differentiate; the start of a builtin sum has a derivative now


def full_like_of_itself(x):
    return np.sum(np.full_like(x, x[1]) * x)


def heaviside_of_itself(x):
    return np.sum(np.heaviside(x, x[0] ** 2) * x)


def sum_with_a_start(x):
    return np.sum(sum([x[0] * x, np.sin(x)], x**2))


@pytest.mark.parametrize("f", [full_like_of_itself, heaviside_of_itself, sum_with_a_start])
def test_zero_by_design_and_sum_start_against_differences(f):
    x = RNG.uniform(0.5, 2.0, 4) * np.array([1.0, -1.0, 1.0, -1.0])
    expected = numeric_grad(f, (x,), 0)
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(call_twice(sg.grad(f, mode=mode), x), expected, rtol=1e-5, atol=1e-6)
    for mode in ("s2s", "tape"):
        sg.check_grads(f, x, order=2, mode=mode)


# ---------------------------------------------------------------------------------------
# A differentiated value where the rule has no derivative and no declaration: refused


XP = np.array([0.0, 1.0, 2.0, 3.0])
FP = np.array([1.0, -1.0, 2.0, 0.5])


def interp_with_a_differentiated_period(x):
    return np.sum(np.interp(x, XP, FP, None, None, x[0] + 4.0))


def cov_with_differentiated_weights_by_position(x):
    return np.sum(np.cov(np.reshape(x, (2, 2)), None, True, False, None, None, x[:2] ** 2))


@pytest.mark.parametrize(
    "f", [interp_with_a_differentiated_period, cov_with_differentiated_weights_by_position]
)
@pytest.mark.parametrize("mode", MODES)
def test_no_derivative_in_a_position_is_refused(f, mode):
    x = RNG.uniform(0.5, 2.0, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(S2SGradError, match=rf"{HERE}:\d+: .*no derivative in its argument"):
            sg.grad(f, mode=mode)(x)


def test_the_positions_found_in_a_rule():
    assert positions_without_derivative(get_rule(np.full_like).vjp) >= {0, 2, 3}
    assert 1 not in positions_without_derivative(get_rule(np.full_like).vjp)
    assert silent_zero_positions(np.full_like, get_rule(np.full_like)) == frozenset(
        positions_without_derivative(get_rule(np.full_like).vjp) - {0}
    )
    # np.maximum gives None only where an argument is not differentiated: no position
    assert not positions_without_derivative(get_rule(np.maximum).vjp)
