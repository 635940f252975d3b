"""Checks registered rules against central finite differences in float64.

Used by the rule tests: ``check_rule(np.sin, x)`` checks the VJP and JVP rules of
``np.sin`` at ``x`` for every floating argument (or those in ``argnums``), and that a
float32 input gives float32 cotangents. ``case`` makes the pytest case of one call for a
table of them, and ``assert_every_rule_is_tested`` fails for a rule module's rule that no
case of its test file checks.
"""

from __future__ import annotations

import numpy as np
import pytest

from s2sgrad.rules import get_rule, registered_primitives
from s2sgrad.rules.registry import per_argument

try:  # tests/ is on sys.path under pytest; docs/writing-rules.md imports tests.rulecheck
    from oracle import STEP, numeric_jvp, numeric_vjp
except ModuleNotFoundError:
    from tests.oracle import STEP, numeric_jvp, numeric_vjp

__all__ = [
    "STEP",
    "VALUE_BASED_CASTING",
    "assert_arrays_close",
    "assert_every_rule_is_tested",
    "case",
    "check_rule",
    "primitive_name",
    "random_like",
    "rules_defined_in",
]

# NumPy 1.x promotes by value (NEP 50 ended that in 2.0): a 0-d float32 value times a Python
# float is float64 there, in a user's program as much as in a rule; as_gradient gives the
# user's gradient the argument's dtype on every version
VALUE_BASED_CASTING = np.result_type(np.ones((), np.float32), 1.0) == np.float64


def check_rule(
    primitive,
    *args,
    argnums=None,
    kwargs=None,
    rtol=1e-5,
    atol=1e-6,
    seed=0,
    jvp=True,
    float32=True,
):
    """Check the VJP (and JVP) rules of ``primitive`` at ``args`` against finite differences.

    ``argnums`` lists the positional arguments to differentiate (default: every argument
    that is a float, a float array or a list of float arrays).

    Example::

        check_rule(np.arctan2, rng.standard_normal(3), rng.standard_normal(3))
    """
    kwargs = kwargs or {}
    rng = np.random.default_rng(seed)
    rule = get_rule(primitive)
    assert rule is not None and rule.vjp is not None, f"no VJP rule for {primitive}"
    if argnums is None:
        argnums = [
            i
            for i, a in enumerate(args)
            if isinstance(a, (float, list)) or (isinstance(a, np.ndarray) and a.dtype.kind == "f")
        ]
    ans = primitive(*args, **kwargs)
    g = rng.standard_normal(np.shape(ans))
    cotangents = per_argument(
        rule.vjp(g if np.ndim(ans) else float(g), ans, *args, **kwargs), len(args)
    )
    for i in argnums:
        expected = numeric_vjp(primitive, args, i, g, kwargs)
        what = f"VJP of {primitive} wrt argument {i}"
        assert_arrays_close(cotangents[i], expected, rtol, atol, what)
    if jvp:
        assert rule.jvp is not None, f"no JVP rule for {primitive}"
        for i in argnums:
            t = random_like(args[i], rng)
            contributions = per_argument(rule.jvp(t, ans, *args, **kwargs), len(args))
            expected = numeric_jvp(primitive, args, i, t, kwargs)
            actual = np.broadcast_to(contributions[i], np.shape(expected))
            assert_arrays_close(actual, expected, rtol, atol, f"JVP of {primitive} wrt {i}")
    if float32:
        _check_float32_cotangents(primitive, rule, args, kwargs, argnums, g)


def _check_float32_cotangents(primitive, rule, args, kwargs, argnums, g):
    args32 = [_to32(a) for a in args]
    ans32 = primitive(*args32, **kwargs)
    g32 = np.asarray(g, dtype=np.float32)
    cotangents = per_argument(rule.vjp(g32, ans32, *args32, **kwargs), len(args))
    for i in argnums:
        for c in _leaves(cotangents[i]):
            scalar = np.ndim(c) == 0 or np.ndim(g32) == 0
            if isinstance(args32[i], (np.ndarray, list)) and not (VALUE_BASED_CASTING and scalar):
                got = np.result_type(c)
                assert got == np.float32, f"VJP of {primitive} wrt {i} gave {got} for float32"


def _leaves(a) -> list:
    """The arrays of ``a``, a cotangent that may be a list of lists of them (np.block's)."""
    if isinstance(a, list):
        return [leaf for x in a for leaf in _leaves(x)]
    return [a]


def _to32(a):
    if isinstance(a, list):
        return [_to32(x) for x in a]
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        return a.astype(np.float32)
    return a


def random_like(x, rng):
    """Standard normal values shaped like ``x`` (a list of arrays gives a list)."""
    if isinstance(x, list):
        return [random_like(a, rng) for a in x]
    return rng.standard_normal(np.shape(x))


def assert_arrays_close(actual, expected, rtol, atol, what):
    """``actual`` has ``expected``'s shape and values, compared in float64; lists entry by
    entry. ``what`` names the check in the failure message."""
    if isinstance(expected, list):
        assert len(actual) == len(expected), what
        for a, e in zip(actual, expected):
            assert_arrays_close(a, e, rtol, atol, what)
        return
    actual = np.asarray(actual, dtype=np.float64)
    assert actual.shape == np.shape(expected), (
        f"{what}: shape {actual.shape} != {np.shape(expected)}"
    )
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


# Tables of cases ----------------------------------------------------------------------------


def primitive_name(primitive, kwargs=None) -> str:
    """A test id: ``ndarray.sum-axis=0`` for ``np.ndarray.sum`` called with ``axis=0``."""
    owner = getattr(primitive, "__objclass__", None)
    name = getattr(primitive, "__name__", repr(primitive))
    name = f"{owner.__name__}.{name}" if owner else name
    return name + "".join(f"-{k}={_shown(v)}" for k, v in (kwargs or {}).items())


def _shown(value) -> str:
    if isinstance(value, np.ndarray):
        return "array" + "x".join(map(str, value.shape))
    return getattr(value, "__name__", None) or str(value)


def case(primitive, *args, _argnums=None, _jvp=True, _marks=(), **kwargs):
    """The pytest case of one call ``primitive(*args, **kwargs)``, as the values
    ``primitive, args, kwargs, argnums, jvp``; ``_argnums`` and ``_jvp`` as in
    ``check_rule``, ``_marks`` pytest's.

    Example::

        @pytest.mark.parametrize("primitive, args, kwargs, argnums, jvp", [case(np.sum, x)])
        def test_rule(primitive, args, kwargs, argnums, jvp): ...
    """
    return pytest.param(
        primitive,
        args,
        kwargs,
        _argnums,
        _jvp,
        id=primitive_name(primitive, kwargs),
        marks=_marks,
    )


def rules_defined_in(modules) -> list:
    """The primitives whose VJP or JVP rule is a function of one of ``modules`` (names)."""
    mine = []
    for primitive in registered_primitives():
        rule = get_rule(primitive)
        functions = [f for f in (rule.vjp, rule.jvp) if f is not None]
        if any(f.__module__ in modules for f in functions):
            mine.append(primitive)
    return mine


def assert_every_rule_is_tested(modules, tested) -> None:
    """Every rule defined in ``modules`` is among the primitives ``tested``, is
    differentiable and has both a VJP and a JVP; and each module defines a rule (so that a
    renamed module cannot make the check vacuous)."""
    mine = rules_defined_in(modules)
    for module in modules:
        assert any(_defined_in(p, module) for p in mine), f"{module} defines no rule"
    tested_ids = {id(p) for p in tested}
    untested = [primitive_name(p) for p in mine if id(p) not in tested_ids]
    assert not untested, f"rules without a test case: {untested}"
    incomplete = [
        primitive_name(p) for p in mine if get_rule(p).vjp is None or get_rule(p).jvp is None
    ]
    assert not incomplete, f"rules missing a VJP or a JVP: {incomplete}"
    assert all(get_rule(p).differentiable for p in mine)


def _defined_in(primitive, module: str) -> bool:
    rule = get_rule(primitive)
    return any(f is not None and f.__module__ == module for f in (rule.vjp, rule.jvp))


def inlined_vjp_rules():
    """Each VJP rule the transformer inlines, once (a rule shared by several primitives
    is one).

    Example::

        for rule in inlined_vjp_rules(): ...
    """
    seen = set()
    for primitive in registered_primitives():
        rule = get_rule(primitive)
        if rule is None or rule.vjp is None or not rule.inline_vjp or rule.vjp in seen:
            continue
        seen.add(rule.vjp)
        yield rule.vjp
