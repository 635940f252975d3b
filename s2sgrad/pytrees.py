"""Pytrees: nested containers of arrays, flattened to a list of leaves and rebuilt.

A pytree is a tuple, list, dict, ``NamedTuple``, dataclass instance, ``None`` (a node
with no leaves), or an object of a class registered with :func:`register_pytree`; its
children are pytrees again, and everything else is a leaf (an array, a number). A
dataclass field marked ``dataclasses.field(metadata={"static": True})`` is part of the
structure, not a child (a layer's size, its activation function)::

    leaves, structure = tree_flatten({"w": np.ones(2), "layers": [1.0, (2.0, None)]})
    # leaves == [1.0, 2.0, array([1., 1.])]    (a dict's children in sorted key order)
    tree_unflatten(structure, [2 * leaf for leaf in leaves])

Optimisers (``s2sgrad.optimizers``) update parameters of any such structure, leaf by leaf.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "TreeDef",
    "register_pytree",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_structure",
    "tree_map",
    "registered_node",
]

Flatten = Callable[[Any], tuple[Iterable[Any], Any]]
Unflatten = Callable[[Any, list[Any]], Any]

_REGISTERED: dict[type, tuple[Flatten, Unflatten]] = {}


@dataclasses.dataclass(frozen=True)
class TreeDef:
    """The structure of a pytree without its leaves: what ``tree_unflatten`` rebuilds.

    ``kind`` is the node's class (``None`` for a leaf), ``aux`` what its flatten function
    kept beside the children (a dict's keys, a dataclass's field names), ``children`` the
    structures below it.

    Example::

        tree_structure((1.0, [2.0])).leaf_count  # 2
    """

    kind: type | None
    aux: Any = None
    children: tuple[TreeDef, ...] = ()
    rebuild: Unflatten | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def leaf_count(self) -> int:
        """How many leaves a pytree of this structure has."""
        if self.kind is None:
            return 1
        return sum(child.leaf_count for child in self.children)

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(repr(child) for child in self.children)
        return f"{self.kind.__name__}({inner})"


_LEAF = TreeDef(None)


def register_pytree(cls: type, flatten: Flatten, unflatten: Unflatten) -> type:
    """Make instances of ``cls`` pytree nodes (not leaves).

    ``flatten(obj)`` returns ``(children, aux)``: the values below the node and whatever
    else rebuilding it needs (hashable and comparable); ``unflatten(aux, children)``
    rebuilds an object from them. Returns ``cls``, so it can be used after a class body.

    Example::

        class Layer:
            def __init__(self, w, b, name):
                self.w, self.b, self.name = w, b, name

        register_pytree(
            Layer,
            lambda layer: ((layer.w, layer.b), layer.name),
            lambda name, children: Layer(*children, name),
        )
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_pytree takes a class, not {cls!r}")
    if cls in (tuple, list, dict, type(None)):
        raise ValueError(f"{cls.__name__} is a pytree node already")
    _REGISTERED[cls] = (flatten, unflatten)
    return cls


def _node(obj: Any) -> tuple[Flatten, Unflatten] | None:
    """How to take ``obj`` apart and put it back together, or ``None`` for a leaf."""
    kind = type(obj)
    registered = _REGISTERED.get(kind)
    if registered is not None:
        return registered
    if kind is tuple or kind is list:
        return _flatten_sequence, _unflatten_sequence
    if kind is dict or kind is OrderedDict:
        return _flatten_mapping, _unflatten_mapping
    if obj is None:
        return _flatten_none, _unflatten_none
    if isinstance(obj, tuple) and hasattr(kind, "_fields"):
        return _flatten_named_tuple, _unflatten_named_tuple
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _flatten_dataclass, _unflatten_dataclass
    return None


def registered_node(obj: Any) -> tuple[list[Any], Callable[[list[Any]], Any]] | None:
    """For a dataclass instance or an object of a registered class (not a dict, list,
    tuple or named tuple): its children and a function rebuilding such an object from new
    ones; ``None`` for anything else.

    Example::

        children, rebuild = registered_node(Params(w=1.0, b=2.0))  # [1.0, 2.0]
        rebuild([0.0, 0.0])  # Params(w=0.0, b=0.0)
    """
    if isinstance(obj, (tuple, list, dict)) or obj is None:
        return None
    node = _node(obj)
    if node is None:
        return None
    flatten, unflatten = node
    children, aux = flatten(obj)
    return list(children), lambda new: unflatten(aux, list(new))


def _flatten_sequence(obj):
    return list(obj), type(obj)


def _unflatten_sequence(kind, children):
    return kind(children)


def _flatten_mapping(obj):
    keys = sorted(obj, key=_sort_key) if type(obj) is dict else list(obj)
    return [obj[key] for key in keys], (type(obj), tuple(keys))


def _sort_key(key):
    return (type(key).__name__, key) if isinstance(key, (str, int, float)) else ("~", repr(key))


def _unflatten_mapping(aux, children):
    kind, keys = aux
    return kind(zip(keys, children))


def _flatten_none(obj):
    return [], None


def _unflatten_none(aux, children):
    return None


def _flatten_named_tuple(obj):
    return list(obj), type(obj)


def _unflatten_named_tuple(kind, children):
    return kind(*children)


def _flatten_dataclass(obj):
    # a field marked dataclasses.field(metadata={"static": True}) is kept beside the
    # children (a layer's size, its activation function): not a leaf, not differentiated
    names, statics = [], []
    for field in dataclasses.fields(obj):
        if field.metadata.get("static", False):
            statics.append((field.name, getattr(obj, field.name)))
        else:
            names.append(field.name)
    return [getattr(obj, name) for name in names], (type(obj), tuple(names), tuple(statics))


def _unflatten_dataclass(aux, children):
    # Bypasses __init__ and __post_init__, so frozen classes and derived fields work too:
    # each field takes the value given, as a gradient of the same structure needs.
    kind, names, statics = aux
    obj = object.__new__(kind)
    for name, child in [*zip(names, children), *statics]:
        object.__setattr__(obj, name, child)
    return obj


def tree_flatten(tree: Any) -> tuple[list[Any], TreeDef]:
    """The leaves of ``tree``, left to right, and its structure.

    Example::

        leaves, structure = tree_flatten([np.ones(2), (3.0, None)])
        # leaves == [array([1., 1.]), 3.0]; structure: list(*, tuple(*, NoneType()))
    """
    leaves: list[Any] = []
    return leaves, _flatten_into(tree, leaves)


def _flatten_into(tree: Any, leaves: list[Any]) -> TreeDef:
    node = _node(tree)
    if node is None:
        leaves.append(tree)
        return _LEAF
    flatten, unflatten = node
    children, aux = flatten(tree)
    structures = tuple(_flatten_into(child, leaves) for child in children)
    return TreeDef(type(tree), aux, structures, unflatten)


def tree_unflatten(structure: TreeDef, leaves: Iterable[Any]) -> Any:
    """A pytree of the given structure with ``leaves`` in place of the original ones.

    Example::

        leaves, structure = tree_flatten({"a": 1.0, "b": [2.0]})
        tree_unflatten(structure, [10.0, 20.0])  # {"a": 10.0, "b": [20.0]}
    """
    leaves = list(leaves)
    if len(leaves) != structure.leaf_count:
        raise ValueError(
            f"the structure {structure!r} has {structure.leaf_count} leaves, "
            f"but {len(leaves)} were given"
        )
    rest = iter(leaves)
    return _build(structure, rest)


def _build(structure: TreeDef, leaves) -> Any:
    if structure.kind is None:
        return next(leaves)
    children = [_build(child, leaves) for child in structure.children]
    rebuild = structure.rebuild
    if rebuild is None:  # a structure made without flattening an object
        raise ValueError(f"no function rebuilds {structure!r}")
    return rebuild(structure.aux, children)


def tree_leaves(tree: Any) -> list[Any]:
    """The leaves of ``tree``, left to right.

    Example::

        tree_leaves({"b": [2.0, 3.0], "a": 1.0})  # [1.0, 2.0, 3.0]
    """
    return tree_flatten(tree)[0]


def tree_structure(tree: Any) -> TreeDef:
    """The structure of ``tree`` without its leaves.

    Example::

        tree_structure((np.ones(3), [1.0])) == tree_structure((0, [0]))  # True
    """
    return tree_flatten(tree)[1]


def tree_map(function: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``function`` applied to each leaf of ``tree`` (and the matching leaves of ``rest``,
    which must have the same structure), in a pytree of the same structure.

    Example::

        tree_map(lambda p, g: p - 0.1 * g, params, gradient)
    """
    leaves, structure = tree_flatten(tree)
    others = []
    for position, other in enumerate(rest, start=2):
        other_leaves, other_structure = tree_flatten(other)
        if other_structure != structure:
            raise ValueError(
                f"tree_map: argument {position} has the structure {other_structure!r}, "
                f"but the first has {structure!r}; pass pytrees of one structure"
            )
        others.append(other_leaves)
    return tree_unflatten(structure, [function(*items) for items in zip(leaves, *others)])
