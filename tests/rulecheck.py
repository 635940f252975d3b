"""Checks a registered rule against central finite differences in float64.

Used by the rule tests: ``check_rule(np.sin, x)`` checks the VJP and JVP rules of
``np.sin`` at ``x`` for every floating argument (or those in ``argnums``), and that a
float32 input gives float32 cotangents.
"""

from __future__ import annotations

import numpy as np

from s2sgrad.rules import get_rule
from s2sgrad.rules.registry import per_argument

STEP = 1e-6
# NumPy 1.x promotes by value (NEP 50 ended that in 2.0): a 0-d float32 value times a Python
# float is float64 there, in a user's program as much as in a rule; as_gradient gives the
# user's gradient the argument's dtype on every version
VALUE_BASED_CASTING = np.result_type(np.ones((), np.float32), 1.0) == np.float64


def _perturbed(args, i, delta):
    args = list(args)
    if isinstance(args[i], list):
        args[i] = [np.asarray(a, dtype=np.float64) + d for a, d in zip(args[i], delta)]
    else:
        args[i] = np.asarray(args[i], dtype=np.float64) + delta
        if np.ndim(args[i]) == 0 and not isinstance(args[i], np.ndarray):
            args[i] = float(args[i])
    return args


def _random_like(x, rng):
    if isinstance(x, list):
        return [_random_like(a, rng) for a in x]
    return rng.standard_normal(np.shape(x))


def _numeric_vjp(f, args, kwargs, i, g):
    """d<g, f(args)>/d args[i] by central differences."""
    x = args[i]
    if isinstance(x, list):
        return [_numeric_list_vjp(f, args, kwargs, i, j, g) for j in range(len(x))]
    x = np.asarray(x, dtype=np.float64)
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[index] = STEP
        up = np.sum(g * np.asarray(f(*_perturbed(args, i, e), **kwargs), dtype=np.float64))
        down = np.sum(g * np.asarray(f(*_perturbed(args, i, -e), **kwargs), dtype=np.float64))
        grad[index] = (up - down) / (2 * STEP)
    return grad


def _numeric_list_vjp(f, args, kwargs, i, j, g):
    x = np.asarray(args[i][j], dtype=np.float64)
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[index] = STEP
        deltas = [np.zeros(np.shape(a)) for a in args[i]]
        deltas[j] = e
        up = np.sum(g * np.asarray(f(*_perturbed(args, i, deltas), **kwargs)))
        deltas[j] = -e
        down = np.sum(g * np.asarray(f(*_perturbed(args, i, deltas), **kwargs)))
        grad[index] = (up - down) / (2 * STEP)
    return grad


def _allclose(actual, expected, rtol, atol, what):
    if isinstance(expected, list):
        assert len(actual) == len(expected), what
        for a, e in zip(actual, expected):
            _allclose(a, e, rtol, atol, what)
        return
    actual = np.asarray(actual, dtype=np.float64)
    assert actual.shape == np.shape(expected), (
        f"{what}: shape {actual.shape} != {np.shape(expected)}"
    )
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


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
        expected = _numeric_vjp(primitive, args, kwargs, i, g)
        _allclose(cotangents[i], expected, rtol, atol, f"VJP of {primitive} wrt argument {i}")
    if jvp:
        assert rule.jvp is not None, f"no JVP rule for {primitive}"
        for i in argnums:
            t = _random_like(args[i], rng)
            contributions = per_argument(rule.jvp(t, ans, *args, **kwargs), len(args))
            up = np.asarray(primitive(*_perturbed(args, i, _scale(t, STEP)), **kwargs))
            down = np.asarray(primitive(*_perturbed(args, i, _scale(t, -STEP)), **kwargs))
            expected = (up - down) / (2 * STEP)
            actual = np.broadcast_to(contributions[i], np.shape(expected))
            _allclose(actual, expected, rtol, atol, f"JVP of {primitive} wrt argument {i}")
    if float32:
        args32 = [_to32(a) for a in args]
        ans32 = primitive(*args32, **kwargs)
        g32 = np.asarray(g, dtype=np.float32)
        cotangents = per_argument(rule.vjp(g32, ans32, *args32, **kwargs), len(args))
        for i in argnums:
            for c in cotangents[i] if isinstance(cotangents[i], list) else [cotangents[i]]:
                scalar = np.ndim(c) == 0 or np.ndim(g32) == 0
                if isinstance(args32[i], (np.ndarray, list)) and not (
                    VALUE_BASED_CASTING and scalar
                ):
                    got = np.result_type(c)
                    assert got == np.float32, f"VJP of {primitive} wrt {i} gave {got} for float32"


def _scale(t, s):
    return [s * a for a in t] if isinstance(t, list) else s * t


def _to32(a):
    if isinstance(a, list):
        return [_to32(x) for x in a]
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        return a.astype(np.float32)
    return a
