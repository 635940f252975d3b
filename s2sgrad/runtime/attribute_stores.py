"""Attribute stores the source transformation may read back as the value assigned.

``o.h = v; ... o.h`` reads ``v`` back in generated code (``passes/object_state.py``), which is
what Python does for an attribute stored plainly: not for one set through a property's setter,
a ``__setattr__`` or read through a ``__getattribute__`` of the user's class, which may store
or return something else (``self._a = np.tanh(v)``).

Example::

    stores_plainly(SimpleNamespace, "h")            # True
    refuse_unless_stored_plainly(obj, "a", "...")   # UnsupportedError if type(obj) has a property a
"""

from __future__ import annotations

import types
from typing import Any

from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.registry import nondifferentiable

__all__ = ["refuse_unless_stored_plainly"]  # stores_plainly: for the transformer

_HOOKS = ("__setattr__", "__getattribute__")
_WRITTEN_IN_PYTHON = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class statement's class, not object's
# or SimpleNamespace's, whose own __setattr__ stores plainly


def stores_plainly(cls: type, attribute: str) -> bool:
    """Whether ``obj.attribute = v`` on an instance of ``cls`` stores ``v`` and
    ``obj.attribute`` then gives ``v`` back: no ``__setattr__`` or ``__getattribute__`` of a
    class of the user's, and no data descriptor (a property) of that name but a slot.

    Example::

        stores_plainly(type("P", (), {"a": property(lambda s: 1.0)}), "a")  # False
    """
    mro = getattr(cls, "__mro__", None)
    if mro is None:
        return False
    for klass in mro:
        if klass.__flags__ & _WRITTEN_IN_PYTHON and any(hook in vars(klass) for hook in _HOOKS):
            return False
    for klass in mro:
        if attribute in vars(klass):
            found = vars(klass)[attribute]
            sets = hasattr(type(found), "__set__") or hasattr(type(found), "__delete__")
            return not sets or isinstance(found, types.MemberDescriptorType)
    return True


def refuse_unless_stored_plainly(obj: Any, attribute: str, message: str) -> None:
    """Raise ``UnsupportedError(message)`` (which mode="auto" takes to the tape) unless
    ``obj.attribute`` is stored plainly (:func:`stores_plainly`).

    Example::

        refuse_unless_stored_plainly(types.SimpleNamespace(), "h", "...")  # nothing
    """
    if not stores_plainly(type(obj), attribute):
        error = UnsupportedError(message)
        error.whole_function_on_tape = True  # the tape runs the user's property itself
        raise error


nondifferentiable(refuse_unless_stored_plainly)
