"""The gradient of an object differentiated through its attributes (a dataclass, an object
of a registered pytree class), built from its sparse cotangent.

Example::

    object_gradient({"w": 2.0}, Params(w=1.0, b=0.0), as_gradient)  # Params(w=2.0, b=0.0)
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import numbers
import types
from typing import Any

from s2sgrad.errors import UnsupportedError
from s2sgrad.pytrees import registered_node
from s2sgrad.running import running_origin

__all__ = [
    "is_object_node",
    "is_instance_object",
    "object_gradient",
    "child_names",
    "attribute_values",
]


def is_object_node(x: Any) -> bool:
    """Whether ``x`` is differentiated through its attributes: a dataclass instance or an
    object of a class registered with ``sg.register_pytree`` (plain objects are not: their
    attributes may hold anything, so a model's class says which it differentiates).

    Example::

        is_object_node(Params(w=np.ones(2)))  # True
    """
    return registered_node(x) is not None


def is_instance_object(x: Any) -> bool:
    """Whether ``x`` is an object with attributes of its own (a layer, a model), not a
    module, class, function, number or array.

    Example::

        is_instance_object(np)  # False
    """
    if isinstance(x, (_NOT_OBJECTS, numbers.Number)) or any(hasattr(x, a) for a in _ARRAYS):
        return False
    return hasattr(x, "__dict__") or hasattr(type(x), "__slots__")


_ARRAYS = ("__array__", "__array_function__", "__array_ufunc__", "dtype")
_NOT_OBJECTS = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    functools.partial,
)


def object_gradient(g: Any, x: Any, convert) -> Any:
    """The gradient of the dataclass or registered object ``x`` from its sparse cotangent
    ``g`` (attribute name → cotangent; ``None`` for zero), or from an object of its class:
    an object of ``x``'s class, rebuilt from its children (``__init__`` is not called),
    each child ``convert(cotangent, child)``.

    Example::

        object_gradient({"w": 2.0}, Params(w=1.0, b=0.0), as_gradient)  # Params(w=2.0, b=0.0)
    """
    if g is not None and not isinstance(g, dict) and type(g) is not type(x):
        raise UnsupportedError(  # never silently zero: what flowed in is not by attribute
            f"{running_origin('the differentiated function')}: the derivative of a "
            f"{type(x).__qualname__} came back as a {type(g).__qualname__}, not by attribute; "
            "read its attributes by name (p.w), or use mode='tape'"
        )
    # sparse, or a gradient object already (a tangent the caller gave)
    parts = (g or {}) if isinstance(g, dict) or g is None else _stored_attributes(g)
    node = registered_node(x)
    assert node is not None  # the caller checked that x is registered
    children, rebuild = node
    names = child_names(x, children)
    return rebuild([convert(parts.get(n) if n else None, c) for n, c in zip(names, children)])


def child_names(x: Any, children: list) -> list[str | None]:
    """The attribute of ``x`` holding each child (``None`` where none does).

    Example::

        child_names(Params(w=w, b=b), [w, b])  # ['w', 'b']
    """
    stored = _stored_attributes(x)
    holders = [[n for n, v in stored.items() if v is child] for child in children]
    if any(len(held) > 1 for held in holders):  # two attributes hold one object
        probed = _probed_names(x, stored, children)
        if probed is not None:
            return probed
    names: list[str | None] = []
    for held in holders:  # each attribute names one child
        names.append(next((n for n in held if n not in names), None))
    return names


def _probed_names(x: Any, stored: dict[str, Any], children: list) -> list[str | None] | None:
    """The attribute of each child, found by flattening a copy of ``x`` whose attributes
    hold markers; ``None`` when the class's flatten does not take them as they are."""
    try:
        probe = copy.copy(x)
        markers = {name: _Marker() for name in stored}
        for name, marker in markers.items():
            object.__setattr__(probe, name, marker)
        node = registered_node(probe)
    except Exception:  # noqa: BLE001 - a flatten that computes: fall back to identity
        return None
    if node is None or len(node[0]) != len(children):
        return None
    by_marker = {id(marker): name for name, marker in markers.items()}
    names = [by_marker.get(id(child)) for child in node[0]]
    for held, child in zip(names, children):
        if held is not None and stored[held] is not child:
            return None
    return names


class _Marker:
    __slots__ = ()


def _stored_attributes(x: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(x):
        fields = dataclasses.fields(x)
        return {f.name: getattr(x, f.name) for f in fields if not f.metadata.get("static")}
    return dict(getattr(x, "__dict__", {}))


def attribute_values(x: Any) -> dict[str, Any]:
    """The children of a dataclass or registered object by the attribute holding them:
    how generated code's cotangents of such an object are kept.

    Example::

        attribute_values(Params(w=1.0, b=2.0))  # {'w': 1.0, 'b': 2.0}
    """
    node = registered_node(x)
    assert node is not None  # the caller checked that x is registered
    children, _ = node
    return {n: c for n, c in zip(child_names(x, children), children) if n is not None}
