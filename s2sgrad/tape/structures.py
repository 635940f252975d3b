"""Nested structures (dicts, lists, tuples, dataclasses and registered pytree classes)
flattened to leaves and rebuilt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from s2sgrad.pytrees import registered_node
from s2sgrad.runtime.object_gradients import child_names

__all__ = ["flatten", "flatten_like", "map_leaves"]


def flatten(tree: Any) -> tuple[list, Callable[[list], Any]]:
    """The leaves of ``tree`` in order, and a function that rebuilds the structure from new ones.

    Example::

        leaves, rebuild = flatten({"w": a, "b": [c, d]})   # [a, c, d]
        rebuild([1, 2, 3])                                  # {'w': 1, 'b': [2, 3]}
    """
    leaves: list = []
    spec = _flatten(tree, leaves)
    return leaves, lambda new: _rebuild(spec, iter(new))


def flatten_like(tree: Any, like: Any) -> list:
    """The parts of ``tree`` at the positions of ``like``'s leaves (a leaf of ``like`` may
    match a whole sub-structure of ``tree``, such as a list standing for an array).

    Example::

        flatten_like([1.0, 2.0], np.zeros(2))           # [[1.0, 2.0]]
        flatten_like({"a": 1, "b": [2, 3]}, {"a": x, "b": [y, z]})  # [1, 2, 3]
    """
    if isinstance(like, dict):
        return [part for key in like for part in flatten_like(_child(tree, key), like[key])]
    if isinstance(like, (list, tuple)):
        if tree is not None and len(tree) != len(like):
            raise ValueError(f"expected {len(like)} parts, got {len(tree)}")
        return [
            part for i, child in enumerate(like) for part in flatten_like(_child(tree, i), child)
        ]
    node = registered_node(like)  # a dataclass: tree is one of its class (or None)
    if node is not None:
        if tree is None:
            parts = [None] * len(node[0])
        elif isinstance(tree, dict):  # sparse, by attribute: what generated code makes
            parts = [tree.get(name) for name in child_names(like, node[0])]
        else:
            other = registered_node(tree)
            assert other is not None  # a gradient of the same class
            parts = other[0]
        return [part for t, child in zip(parts, node[0]) for part in flatten_like(t, child)]
    return [tree]


def _child(tree: Any, key: Any) -> Any:
    return None if tree is None else tree[key]


def map_leaves(function: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``function`` applied to every leaf.

    Example::

        map_leaves(float, (1, [2]))  # (1.0, [2.0])
    """
    leaves, rebuild = flatten(tree)
    return rebuild([function(leaf) for leaf in leaves])


def _flatten(tree: Any, leaves: list) -> Any:
    if isinstance(tree, dict):
        return (type(tree), list(tree), [_flatten(v, leaves) for v in tree.values()])
    if isinstance(tree, (list, tuple)):
        return (type(tree), None, [_flatten(v, leaves) for v in tree])
    node = registered_node(tree)  # a dataclass, a registered pytree class
    if node is not None:
        children, rebuild = node
        return (_NODE, rebuild, [_flatten(v, leaves) for v in children])
    leaves.append(tree)
    return None


_NODE = object()  # the kind of a dataclass or registered node: rebuilt by its function


def _rebuild(spec: Any, leaves) -> Any:
    if spec is None:
        return next(leaves)
    kind, keys, children = spec
    values = [_rebuild(child, leaves) for child in children]
    if kind is _NODE:
        return keys(values)
    if keys is not None:
        return kind(zip(keys, values))
    if kind in (list, tuple):
        return kind(values)
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):  # a named tuple
        return kind(*values)
    return kind(values)
