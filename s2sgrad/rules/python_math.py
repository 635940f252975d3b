"""Python's ``math`` module: a function of floats differentiated as its NumPy twin is.

``math.sin(x)`` computes what ``np.sin(x)`` computes on a Python float, so the twin's rules
apply as they are (their results are NumPy numbers where ``math`` gives floats, which
arithmetic treats alike). ``math.log`` with a base, ``math.hypot`` of any number of
coordinates, ``math.erf``/``math.erfc`` and ``math.gamma``/``math.lgamma`` (with the
digamma function NumPy lacks, :func:`s2sgrad.runtime.polygamma`) have rules of their own, and
so do ``math.fsum`` and ``math.prod`` of a list (or tuple, or 1-d array) of numbers: each
number's cotangent is ``g`` for a sum; for a product, ``g`` times the product of the others,
taken as the products before and after it (exact where a number is zero, unlike
``ans / x``).
Functions whose result is an integer (``math.floor``) have no rule: they stay refused, with
the advice to use NumPy.

``math`` converts its argument with ``float()``, which the tape refuses
(``tape/values.py``); while a tape records, the functions with rules are replaced on the
``math`` module by wrappers recording them (``tape/conversions.py``), so ``math.sin(x)``
is followed and ``from math import sin`` (taken before) is refused.

Example::

    sg.grad(lambda k: math.exp(-k) * math.sin(k))(0.3)
"""

from __future__ import annotations

import math

import numpy as np

from s2sgrad.rules.registry import get_rule, jvp_rule, rule_function, vjp_rule
from s2sgrad.runtime import polygamma, unbroadcast, zeros_like_value
from s2sgrad.runtime.core import CotangentList

__all__ = ["NUMPY_TWINS"]

NUMPY_TWINS = {
    math.sin: np.sin,
    math.cos: np.cos,
    math.tan: np.tan,
    math.asin: np.arcsin,
    math.acos: np.arccos,
    math.atan: np.arctan,
    math.sinh: np.sinh,
    math.cosh: np.cosh,
    math.tanh: np.tanh,
    math.asinh: np.arcsinh,
    math.acosh: np.arccosh,
    math.atanh: np.arctanh,
    math.exp: np.exp,
    math.expm1: np.expm1,
    math.log1p: np.log1p,
    math.log2: np.log2,
    math.log10: np.log10,
    math.sqrt: np.sqrt,
    math.fabs: np.fabs,
    math.pow: np.power,
    math.atan2: np.arctan2,
    math.fmod: np.fmod,
    math.degrees: np.degrees,
    math.radians: np.radians,
}
for _name in ("exp2", "cbrt"):  # Python 3.11 added them
    if hasattr(math, _name):
        NUMPY_TWINS[getattr(math, _name)] = getattr(np, _name)


def _register_twins() -> None:
    for function, twin in NUMPY_TWINS.items():
        rule = get_rule(twin)
        if rule is None or rule.vjp is None or rule.jvp is None:
            raise LookupError(f"np.{twin.__name__} has no rule for math.{function.__name__}")
        vjp_rule(function, inline=rule.inline_vjp)(rule_function(twin, "vjp"))
        jvp_rule(function, inline=rule.inline_jvp)(rule_function(twin, "jvp"))


_register_twins()

_TWO_OVER_ROOT_PI = 2.0 / math.sqrt(math.pi)


@vjp_rule(math.log)
def _log(g, ans, x, base=math.e):
    log_base = np.log(base)
    return g / (x * log_base), -g * ans / (base * log_base)


@jvp_rule(math.log)
def _log_jvp(t, ans, x, base=math.e):
    log_base = np.log(base)
    return t / (x * log_base), -t * ans / (base * log_base)


@vjp_rule(math.hypot, inline=False)  # any number of coordinates: run as it is
def _hypot(g, ans, *coordinates):
    return tuple(g * c / ans for c in coordinates)


@jvp_rule(math.hypot, inline=False)
def _hypot_jvp(t, ans, *coordinates):
    return tuple(t * c / ans for c in coordinates)


@vjp_rule(math.erf)
def _erf(g, ans, x):
    return g * _TWO_OVER_ROOT_PI * np.exp(-(x**2))


@jvp_rule(math.erf)
def _erf_jvp(t, ans, x):
    return t * _TWO_OVER_ROOT_PI * np.exp(-(x**2))


@vjp_rule(math.erfc)
def _erfc(g, ans, x):
    return -g * _TWO_OVER_ROOT_PI * np.exp(-(x**2))


@jvp_rule(math.erfc)
def _erfc_jvp(t, ans, x):
    return -t * _TWO_OVER_ROOT_PI * np.exp(-(x**2))


@vjp_rule(math.gamma)
def _gamma(g, ans, x):
    return g * ans * polygamma(0, x)


@jvp_rule(math.gamma)
def _gamma_jvp(t, ans, x):
    return t * ans * polygamma(0, x)


@vjp_rule(math.lgamma)  # log|gamma(x)|, whose slope is digamma(x) on either sign of gamma
def _lgamma(g, ans, x):
    return g * polygamma(0, x)


@jvp_rule(math.lgamma)
def _lgamma_jvp(t, ans, x):
    return t * polygamma(0, x)


# math.fsum and math.prod read a list of numbers (a tuple, or a 1-d array: its entries):
# the cotangent of a list is a CotangentList (added entry by entry), of an array an array


def _items_cotangent(iterable, entries: list):
    if isinstance(iterable, (list, tuple)):
        return CotangentList(entries)
    # an array (or a tape's value of one): stacked, so that a tape's values stay followed
    return np.stack(entries) if entries else zeros_like_value(iterable)


def _others(items: list, start) -> list:
    """For each number of ``items``, ``start`` times the product of all the others."""
    before, running = [], start
    for item in items:
        before.append(running)
        running = running * item
    others, running = [None] * len(items), 1.0
    for index in range(len(items) - 1, -1, -1):
        others[index] = before[index] * running
        running = running * items[index]
    return others


@vjp_rule(math.fsum, inline=False)
def _fsum(g, ans, iterable):
    items = list(iterable)
    return (_items_cotangent(iterable, [unbroadcast(g, item) for item in items]),)


@jvp_rule(math.fsum, inline=False)
def _fsum_jvp(t, ans, iterable):
    return (sum(list(t), 0.0),)


@vjp_rule(math.prod, inline=False)
def _prod(g, ans, iterable, *, start=1):
    items = list(iterable)
    entries = [unbroadcast(g * other, item) for other, item in zip(_others(items, start), items)]
    return (_items_cotangent(iterable, entries),)


@jvp_rule(math.prod, inline=False)
def _prod_jvp(t, ans, iterable, *, start=1):
    items = list(iterable)
    return (sum([u * other for u, other in zip(list(t), _others(items, start))], 0.0),)
