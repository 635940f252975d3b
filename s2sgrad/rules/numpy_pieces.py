"""Derivative rules of ``np.frexp``, ``np.choose``, ``np.unique`` and ``np.fft.hfft`` /
``np.fft.ihfft``.

* ``m, e = frexp(x)`` has ``x = m * 2**e`` with ``e`` an integer that is constant between
  powers of two: ``dm = dx * 2**-e``; ``e`` has no derivative.
* ``choose(a, choices)`` picks, at each position, the entry of the choice ``a`` names:
  each choice's cotangent is ``g`` where it was picked (zero elsewhere), summed back to
  its own shape; ``a`` (integers) has none.
* ``unique(x)`` gives the sorted distinct values, each one of ``x``'s entries: its
  cotangent goes to the entries equal to it, shared equally between them (the same
  derivative along every direction keeping the ties, which is all a tied value allows);
  ``return_index``, ``return_inverse`` and ``return_counts`` give integers.
* ``hfft(a, n)`` is ``irfft(conj(a), n)`` and ``ihfft(a, n)`` is ``conj(rfft(a, n))``, with
  the direction of the norm swapped (NumPy's own definition): both are real-linear, so
  forward mode applies them to the tangent and reverse mode goes through ``irfft``'s and
  ``rfft``'s rules, conjugated.

Each rule is written with functions that have rules, so derivatives of any order follow.

Example::

    sg.grad(lambda x: np.sum(np.frexp(x)[0] ** 2))(np.array([3.0, 0.2]))
"""

from __future__ import annotations

import numpy as np

from s2sgrad.rules.fft import _irfft, _rfft
from s2sgrad.rules.registry import complex_ready, jvp_rule, returns_several, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime.core import unbroadcast

__all__: list[str] = []


@vjp_rule(np.frexp)
def _frexp(g, ans, x):
    if g[0] is None:
        return np.zeros_like(x)
    return g[0] * np.exp2(-ans[1].astype(np.result_type(ans[0])))


@jvp_rule(np.frexp)
def _frexp_jvp(t, ans, x):
    scale = np.exp2(-ans[1].astype(np.result_type(ans[0])))
    return ((t * scale, np.zeros_like(ans[1])),)  # the exponent's: integer zeros


# choose(a, choices): the mask of the positions where choice k is picked


def _picked(a, choices, k, shape):
    return np.broadcast_to(np.asarray(a) == k, shape)


@vjp_rule(np.choose)
def _choose(g, ans, a, choices, out=None, mode="raise"):
    if mode != "raise":  # wrap/clip pick by a changed index
        a = np.choose(a, np.arange(len(choices)), mode=mode)
    shape = np.shape(ans)
    cotangents = [
        unbroadcast(np.where(_picked(a, choices, k, shape), g, 0.0), choice)
        for k, choice in enumerate(choices)
    ]
    return None, type(choices)(cotangents) if isinstance(choices, (list, tuple)) else None


@jvp_rule(np.choose)
def _choose_jvp(t, ans, a, choices, out=None, mode="raise"):
    if mode != "raise":
        a = np.choose(a, np.arange(len(choices)), mode=mode)
    shape = np.shape(ans)
    tangent = np.zeros(shape, dtype=np.result_type(ans))
    for k, choice in enumerate(t):
        if choice is not None:
            tangent = tangent + np.where(_picked(a, choices, k, shape), choice, 0.0)
    return None, tangent


def _unique_groups(x, ans):
    """The index of the unique value each entry of ``x`` equals (flattened), and how many
    entries share it."""
    values = ans[0] if type(ans) is tuple else ans
    flat = np.ravel(x)
    where = np.searchsorted(values, flat)
    counts = np.bincount(where, minlength=np.size(values))
    return where, counts


_UNIQUE_REFUSED = (
    "np.unique(x, axis=...) or sorted=False is not differentiated; call it on a flat array "
    "(np.unique(x) sorts the distinct values, whose derivative is known)"
)


@vjp_rule(np.unique)
def _unique(g, ans, ar, return_index=False, return_inverse=False, return_counts=False,
            axis=None, *, equal_nan=True, sorted=True):  # fmt: skip
    if axis is not None or not sorted:
        refuse(_UNIQUE_REFUSED)
    g_values = g[0] if type(ans) is tuple else g
    if g_values is None:
        return np.zeros_like(ar)
    where, counts = _unique_groups(ar, ans)
    shared = g_values / counts
    return np.reshape(shared[where], np.shape(ar))


@jvp_rule(np.unique)
def _unique_jvp(t, ans, ar, return_index=False, return_inverse=False, return_counts=False,
                axis=None, *, equal_nan=True, sorted=True):  # fmt: skip
    if axis is not None or not sorted:
        refuse(_UNIQUE_REFUSED)
    where, counts = _unique_groups(ar, ans)
    size = np.size(counts)
    summed = np.bincount(where, weights=np.ravel(t), minlength=size)
    tangent = summed / counts
    if type(ans) is tuple:
        return ((tangent, *(np.zeros_like(a) for a in ans[1:])),)  # integers: zeros
    return tangent


def _swapped(norm):
    return {None: "forward", "backward": "forward", "forward": "backward"}.get(norm, norm)


@vjp_rule(np.fft.hfft)
def _hfft(g, ans, a, n=None, axis=-1, norm=None):
    return np.conj(_irfft(g, ans, np.conj(a), n, axis, _swapped(norm)))


@jvp_rule(np.fft.hfft)
def _hfft_jvp(t, ans, a, n=None, axis=-1, norm=None):
    return np.fft.hfft(t, n, axis, norm)


@vjp_rule(np.fft.ihfft)
def _ihfft(g, ans, a, n=None, axis=-1, norm=None):
    return _rfft(np.conj(g), np.conj(ans), a, n, axis, _swapped(norm))


@jvp_rule(np.fft.ihfft)
def _ihfft_jvp(t, ans, a, n=None, axis=-1, norm=None):
    return np.fft.ihfft(t, n, axis, norm)


returns_several(np.frexp)
complex_ready(np.fft.hfft, np.fft.ihfft)
