"""``d[key] = value`` on a dict only this function holds, as generated code computes it:
``d = with_entry(d, key, value)``, a new dict with that entry. Its cotangent splits into
the dict's without the entry (:func:`without_key`: what was there before is overwritten)
and the entry's (:func:`entry_of`); those two are linear, and each helper's derivative is
another of them (:func:`only_entry` is ``entry_of``'s), so all differentiate to any order.

``dict(d)`` is :func:`copied_dict`, whose derivatives are the identity for a dict, and
for ``(key, value)`` pairs :func:`pairs_cotangent` and :func:`dict_of_pairs`, each
other's derivatives.

Dict cotangents are sparse (:class:`~s2sgrad.runtime.core.CotangentDict`): a missing
entry is zero.

Example::

    with_entry({"w": 1.0, "b": 2.0}, "w", 5.0)  # {'w': 5.0, 'b': 2.0}
"""

from __future__ import annotations

from typing import Any

from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.runtime.core import CotangentDict, CotangentList, zeros_like_value

__all__ = [
    "copied_dict",
    "pairs_cotangent",
    "dict_of_pairs",
    "with_entry",
    "without_key",
    "entry_of",
    "only_entry",
]


def copied_dict(mapping: Any) -> Any:
    """``dict(mapping)``: a new dict of a dict's entries, or of ``(key, value)`` pairs.

    Example::

        copied_dict({"w": 1.0})  # {'w': 1.0}, a new dict
        copied_dict([("w", 1.0)])  # {'w': 1.0}
    """
    if isinstance(mapping, CotangentDict):
        return CotangentDict(mapping)
    return dict(mapping)


def pairs_cotangent(g: Any, pairs: Any) -> Any:
    """The cotangent of the ``(key, value)`` pairs ``dict(pairs)`` was made of, from the
    dict's ``g``: each value gets its key's entry (zero where a later pair of the same key
    replaced it, as ``dict`` keeps the last); the keys get none.

    Example::

        pairs_cotangent({"w": 2.0}, [("w", 1.0), ("b", 3.0)])  # [[None, 2.0], [None, 0.0]]
    """
    pairs = list(pairs)
    last = {key: position for position, (key, _) in enumerate(pairs)}
    return CotangentList(
        CotangentList(
            [None, entry_of(g, key, value) if last[key] == position else zeros_like_value(value)]
        )
        for position, (key, value) in enumerate(pairs)
    )


def dict_of_pairs(t: Any, pairs: Any) -> Any:
    """The tangent of ``dict(pairs)`` from the pairs' tangent ``t`` (pairs of tangents).

    Example::

        dict_of_pairs([[None, 2.0]], [("w", 1.0)])  # {'w': 2.0}
    """
    return CotangentDict((key, tangent[1]) for (key, _), tangent in zip(pairs, t))


def with_entry(mapping: Any, key: Any, value: Any) -> Any:
    """A new dict of ``mapping``'s entries with ``key`` set to ``value``: what ``mapping``
    holds after ``mapping[key] = value``.

    Example::

        with_entry({"w": 1.0}, "b", 2.0)  # {'w': 1.0, 'b': 2.0}
    """
    if not isinstance(mapping, dict):
        raise UnsupportedError(
            f"an entry of a {type(mapping).__name__} is written here as a dict's; use mode='tape'"
        )
    updated = CotangentDict(mapping) if isinstance(mapping, CotangentDict) else dict(mapping)
    updated[key] = value
    return updated


def without_key(g: Any, key: Any) -> Any:
    """The cotangent ``g`` of a dict without its entry at ``key`` (which is then zero).

    Example::

        without_key({"w": 1.0, "b": 2.0}, "w")  # {'b': 2.0}
    """
    if g is None:
        return None
    return CotangentDict((k, v) for k, v in g.items() if k != key)


def entry_of(g: Any, key: Any, like: Any) -> Any:
    """The entry of the dict cotangent ``g`` at ``key``, zero (like ``like``) if missing.

    Example::

        entry_of({"b": 2.0}, "w", np.ones(2))  # array([0., 0.])
    """
    if g is None or key not in g or g[key] is None:
        return zeros_like_value(like)
    return g[key]


def only_entry(value: Any, key: Any) -> CotangentDict:
    """The dict cotangent with ``value`` at ``key`` and zero everywhere else.

    Example::

        only_entry(2.0, "w")  # {'w': 2.0}
    """
    return CotangentDict({key: value})


@vjp_rule(copied_dict)
def _copied_dict_vjp(g, ans, mapping):
    return (g if isinstance(mapping, dict) else pairs_cotangent(g, mapping),)


@jvp_rule(copied_dict)
def _copied_dict_jvp(t, ans, mapping):
    return (copied_dict(t) if isinstance(mapping, dict) else dict_of_pairs(t, mapping),)


@vjp_rule(pairs_cotangent)
def _pairs_cotangent_vjp(g, ans, g_in, pairs):
    return dict_of_pairs(g, pairs), None


@jvp_rule(pairs_cotangent)
def _pairs_cotangent_jvp(t, ans, g_in, pairs):
    return pairs_cotangent(t, pairs), None


@vjp_rule(dict_of_pairs)
def _dict_of_pairs_vjp(g, ans, t, pairs):
    return pairs_cotangent(g, pairs), None


@jvp_rule(dict_of_pairs)
def _dict_of_pairs_jvp(t, ans, t_in, pairs):
    return dict_of_pairs(t, pairs), None


@vjp_rule(with_entry)
def _with_entry_vjp(g, ans, mapping, key, value):
    return without_key(g, key), None, entry_of(g, key, value)


@jvp_rule(with_entry)
def _with_entry_jvp(t, ans, mapping, key, value):
    zeros = zeros_like_value(mapping)
    return with_entry(t, key, zeros_like_value(value)), None, with_entry(zeros, key, t)


@vjp_rule(without_key)
def _without_key_vjp(g, ans, g_in, key):
    return without_key(g, key), None


@jvp_rule(without_key)
def _without_key_jvp(t, ans, g_in, key):
    return without_key(t, key), None


@vjp_rule(entry_of)
def _entry_of_vjp(g, ans, g_in, key, like):
    return only_entry(g, key), None, None


@jvp_rule(entry_of)
def _entry_of_jvp(t, ans, g_in, key, like):
    return entry_of(t, key, like), None, None


@vjp_rule(only_entry)
def _only_entry_vjp(g, ans, value, key):
    return entry_of(g, key, value), None


@jvp_rule(only_entry)
def _only_entry_jvp(t, ans, value, key):
    return only_entry(t, key), None
