"""Objects in generated code: attribute reads of parameter structures, and state stored on
objects while a derivative runs.

A dataclass, a ``NamedTuple``, a class registered with ``sg.register_pytree`` or a plain
model object is differentiated through its attributes: ``t = p.w`` sends its cotangent
back as ``attribute_cotangent(dt, p, "w")``, a sparse ``{"w": dt}`` (a list for a named
tuple), which ``object_gradient`` turns into an object of ``p``'s class. Only attributes
stored on the object itself carry a derivative; a property or another computed attribute
of a value being differentiated is refused (it would hide how it was computed).

A differentiated value stored on an object the function did not make (a batch norm's
running mean) is kept as the plain value the user's code stores, and noted until the
backward sweep of the function that stored it runs: reading it back in the same
computation (``reads_stored``) would take a value computed from differentiated inputs for
a constant, so it is refused.

Example::

    attribute_cotangent(np.ones(2), params, "w")  # CotangentDict({'w': array([1., 1.])})
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

from s2sgrad.errors import UnsupportedError
from s2sgrad.pytrees import registered_node
from s2sgrad.rules.registry import complex_ready, jvp_rule, nondifferentiable, vjp_rule
from s2sgrad.running import running_origin
from s2sgrad.runtime.core import (
    CotangentDict,
    CotangentList,
    zeros_like_structure,
    zeros_like_value,
)

__all__ = [
    "attribute_cotangent",
    "attribute_tangent",
    "attribute_entry",
    "note_stored",
    "forget_stored",
    "reads_stored",
    "refuse_stored_state",
    "opaque",
    "forget_all_stored",
]


def attribute_cotangent(g: Any, x: Any, name: str) -> Any:
    """The cotangent of ``x`` when ``g`` is the cotangent of ``x.name``: ``g`` at the named
    tuple's field, or a sparse ``{name: g}`` for another object. A computed attribute
    (a property, ``__getattr__``) is refused: its derivative is unknown.

    Example::

        attribute_cotangent(1.0, Point(x=2.0, y=3.0), "y")  # [0.0, 1.0]
    """
    fields = getattr(type(x), "_fields", None)
    if isinstance(x, tuple) and fields is not None and name in fields:
        cotangent = CotangentList(zeros_like_structure(item) for item in x)
        cotangent[fields.index(name)] = g
        return cotangent
    if not _stored_on_instance(x, name):
        if _class_constant(x, name):
            return None  # a class attribute: shared by all instances, not differentiated
        raise _computed_attribute(x, name)
    return CotangentDict({name: g})


def _computed_attribute(x: Any, name: str) -> UnsupportedError:
    if name == "__dict__":
        error = UnsupportedError(
            f"{running_origin('the differentiated function')}: reads .__dict__ of a "
            f"{type(x).__qualname__} being differentiated, whose entries are its attributes "
            "read without naming them, where no derivative follows; read them by name "
            "(p.w), or use mode='tape'"
        )
        error.whole_function_on_tape = True  # the tape's objects hold its own values
        return error
    error = UnsupportedError(
        f"{running_origin('the differentiated function')}: reads .{name} of a "
        f"{type(x).__qualname__} being differentiated, but .{name} is computed (a "
        "property or another descriptor), not stored on the object, so its derivative "
        f"is unknown; read the stored attributes it is computed from instead"
    )
    error.whole_function_on_tape = True  # the tape records the property's own code
    return error


def attribute_tangent(t: Any, name: str) -> Any:
    """The tangent of ``x.name`` when ``t`` is the tangent of ``x`` (an object of ``x``'s
    class, or the sparse dict of :func:`attribute_cotangent`).

    Example::

        attribute_tangent({"w": 1.0}, "w")  # 1.0
    """
    if t is None:
        return None
    if isinstance(t, dict):  # sparse: an entry nothing flowed into is zero
        part = t.get(name)
        return 0.0 if part is None else part
    return getattr(t, name)


def attribute_entry(g: Any, x: Any, name: str) -> Any:
    """The part of ``x``'s cotangent ``g`` that belongs to ``x.name`` (a named tuple's
    cotangent is a list).

    Example::

        attribute_entry([0.0, 1.0], Point(x=2.0, y=3.0), "y")  # 1.0
    """
    fields = getattr(type(x), "_fields", None) or ()
    if isinstance(x, tuple) and name in fields and isinstance(g, (list, tuple)):
        return g[fields.index(name)]
    if g is not None and not _stored_on_instance(x, name):
        # ``g`` is an object of x's class: its class attributes and properties are not
        # its entries (G = 9.81 read through the tangent is 9.81, not zero); nor are they
        # entries of a tangent by attribute name (an object the function made,
        # runtime/records.py), which has none for a property: it is refused, not zero
        if not _class_constant(x, name):
            raise _computed_attribute(x, name)
        if not hasattr(x, name):  # getattr(x, name, default) gave its default, a constant
            return 0.0
        return zeros_like_value(getattr(x, name))  # the same for every instance: constant
    return attribute_tangent(g, name)


def _stored_on_instance(x: Any, name: str) -> bool:
    if dataclasses.is_dataclass(x) and name in {f.name for f in dataclasses.fields(x)}:
        return True  # a static field's cotangent is dropped with its place in the structure
    node = registered_node(x)
    if node is not None:  # only the attributes that hold a child of the node
        value = getattr(x, name)
        return any(value is child for child in node[0])
    if name in getattr(x, "__dict__", {}):
        descriptor = getattr(type(x), name, None)
        return not hasattr(descriptor, "__set__")  # a data descriptor overrides __dict__
    slot = getattr(type(x), name, None)
    return isinstance(slot, types.MemberDescriptorType)


def _class_constant(x: Any, name: str) -> bool:
    if name == "__dict__":  # the object's own attributes, read without naming them
        return False
    value = getattr(type(x), name, None)
    return name not in getattr(x, "__dict__", {}) and not hasattr(value, "__get__")


# ---------------------------------------------------------------------------------------
# Differentiated values stored on objects the function did not make

_STORED: dict[int, tuple[Any, Any, str, str]] = {}  # id(value) → (value, owner, name, where)


def note_stored(value: Any, owner: Any, name: str) -> None:
    """Note that generated code stored ``value``, computed from values being differentiated,
    as ``owner.name``: until :func:`forget_stored`, reading it back is refused.

    Example::

        self.moving_mean = t3; note_stored(t3, self, "moving_mean")
    """
    _STORED[id(value)] = (value, owner, name, running_origin("a differentiated function"))


def forget_stored(value: Any) -> None:
    """The backward sweep of the function that stored ``value`` has run: its computation
    no longer reads it.

    Example::

        forget_stored(t3)
    """
    _STORED.pop(id(value), None)


def forget_all_stored() -> None:
    """A computation stopped by an exception: its backward sweeps will not forget what it
    stored, and the next computation must not take those values for its own.

    Example::

        forget_all_stored()
    """
    _STORED.clear()


def reads_stored(value: Any) -> Any:
    """``value``, read from an object's attribute; refused if it was stored there from
    differentiated values earlier in the same computation (its derivative would be lost).

    Example::

        t = reads_stored(self.moving_mean)
    """
    if _STORED:
        entry = _STORED.get(id(value))
        if entry is not None and entry[0] is value:
            _refuse_reading(entry)
    return value


def refuse_stored_state(owner: Any) -> None:
    """Refuse to call a method of ``owner`` (or ``owner`` itself) while it holds a value
    stored from differentiated values earlier in the same computation: the method may
    read it back.

    Example::

        refuse_stored_state(layer)  # before dispatching layer(x) a second time
    """
    for entry in list(_STORED.values()):
        value, stored_on, name, _ = entry
        if stored_on is owner and getattr(owner, name, None) is value:
            _refuse_reading(entry)


def opaque(function: Any) -> Any:
    """``function``, called by generated code as the user's code calls it, with nothing it
    is given being differentiated: refused while a differentiated value is stored on an
    object (by a function calling this one), which the called code may read as a constant.

    Example::

        t1 = opaque(helper)(x)  # helper may read layer.W, which the caller set to W
    """
    if _STORED:
        for entry in list(_STORED.values()):
            value, owner, name, _ = entry
            if getattr(owner, name, None) is value:
                _refuse_call(function, entry)
    return function


def _refuse_call(function: Any, entry: tuple) -> None:
    _, owner, name, origin = entry
    _STORED.clear()  # the computation stops here: its backward sweep will not forget them
    called = getattr(function, "__qualname__", None) or type(function).__qualname__
    error = UnsupportedError(
        f"{running_origin('the differentiated function')}: calls {called}, which may read "
        f"{type(owner).__qualname__}.{name}: {origin} stored it from values being "
        "differentiated earlier in this same computation, and a derivative is not carried "
        "through an object's attributes; pass the value as an argument instead, or use "
        "mode='tape'"
    )
    error.whole_function_on_tape = True  # mode="auto": the tape follows the attributes
    raise error


def _refuse_reading(entry: tuple) -> None:
    _, owner, name, origin = entry
    _STORED.clear()  # the computation stops here: its backward sweep will not forget them
    error = UnsupportedError(
        f"{running_origin('the differentiated function')}: reads {type(owner).__qualname__}"
        f".{name} (or calls the object holding it), which {origin} stored from values being "
        "differentiated earlier in this same computation; a derivative is not carried "
        "through an object's attributes: return the value and pass it on instead, or use "
        "mode='tape'"
    )
    error.whole_function_on_tape = True  # mode="auto": the tape follows the attributes
    raise error


@vjp_rule(reads_stored)
def _reads_stored_vjp(g, ans, value):
    return (g,)  # in a 1-tuple: g may be a tuple


@jvp_rule(reads_stored)
def _reads_stored_jvp(t, ans, value):
    return (t,)


@vjp_rule(getattr)
def _getattr_vjp(g, ans, x, name, *default):
    return attribute_cotangent(g, x, name), None


@jvp_rule(getattr)
def _getattr_jvp(t, ans, x, name, *default):
    return attribute_entry(t, x, name), None  # a named tuple's tangent may be a plain tuple


@vjp_rule(attribute_cotangent)
def _attribute_cotangent_vjp(g, ans, g_in, x, name):
    return attribute_entry(g, x, name), None, None


@jvp_rule(attribute_cotangent)
def _attribute_cotangent_jvp(t, ans, g_in, x, name):
    return attribute_cotangent(t, x, name), None, None


@vjp_rule(attribute_entry)
def _attribute_entry_vjp(g, ans, g_in, x, name):
    return attribute_cotangent(g, x, name), None, None


@jvp_rule(attribute_entry)
def _attribute_entry_jvp(t, ans, g_in, x, name):
    return attribute_entry(t, x, name), None, None


@vjp_rule(attribute_tangent)
def _attribute_tangent_vjp(g, ans, t, name):
    return CotangentDict({name: g}), None


@jvp_rule(attribute_tangent)
def _attribute_tangent_jvp(t, ans, t_in, name):
    return attribute_tangent(t, name), None


# bookkeeping, not computation: calls of them carry no derivative and change no value
nondifferentiable(note_stored, forget_stored, refuse_stored_state, opaque)
complex_ready(  # they move values and cotangents around: right for complex values too
    getattr,
    attribute_cotangent,
    attribute_tangent,
    attribute_entry,
    reads_stored,
    note_stored,
    forget_stored,
    refuse_stored_state,
    opaque,
)
