"""Lists, tuples and dicts of the user's own subclasses that change what their items are.

Generated code differentiates ``d["a"] = v``, ``l[1]`` and ``l.append(v)`` as a plain list's
or dict's: the item read is the item stored. A subclass of the user's that defines its own
``__getitem__``, ``__setitem__``, ``append`` ... (``super().__setitem__(k, v * 2)``) may
store or give back something else, and its derivative would then be that of a plain
container, silently wrong; it is refused, and mode="auto" takes the tape, which runs the
class's own methods.

Example::

    refuse_overriding_container([1.0])   # nothing: a plain list
    refuse_overriding_container(Doubling())  # UnsupportedError
"""

from __future__ import annotations

import collections
from typing import Any

from s2sgrad.errors import UnsupportedError
from s2sgrad.running import running_origin

__all__ = ["refuse_overriding_container", "refuse_deque"]

_ITEM_METHODS = frozenset(
    {
        "__getitem__", "__setitem__", "__delitem__", "__iter__", "__reversed__",
        "__missing__", "append", "extend", "insert", "pop", "update", "setdefault", "get",
        "values", "items", "__add__", "__radd__", "__iadd__", "__or__", "__ior__",
    }
)  # fmt: skip
_PLAIN = (list, tuple, dict)
_WRITTEN_IN_PYTHON = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class statement's class


def refuse_overriding_container(x: Any) -> None:
    """Raise ``UnsupportedError`` (mode="auto" then takes the tape) when ``x`` is a list,
    tuple or dict of a subclass of the user's that defines its own item methods.

    Example::

        refuse_overriding_container({"w": 1.0})  # nothing
    """
    cls = type(x)
    if cls in _PLAIN or not isinstance(x, _PLAIN):
        return
    for klass in cls.__mro__:
        if klass in _PLAIN:
            return
        if not klass.__flags__ & _WRITTEN_IN_PYTHON or klass.__module__.startswith("s2sgrad"):
            continue
        overridden = sorted(_ITEM_METHODS.intersection(vars(klass)))
        if overridden:
            base = next(b.__name__ for b in cls.__mro__ if b in _PLAIN)
            error = UnsupportedError(
                f"{running_origin()}: {cls.__qualname__}, a subclass of {base}, defines its "
                f"own {overridden[0]}, which source transformation does not follow (it "
                f"differentiates item reads and writes as a plain {base}'s); use "
                "mode='tape', or a plain {base}".replace("{base}", base)
            )
            error.whole_function_on_tape = True  # the tape runs the class's own methods
            raise error


def refuse_deque(x: Any) -> None:
    """Raise ``UnsupportedError`` (mode="auto" then takes the tape) for a
    ``collections.deque``, whose tangent or cotangent generated code has no container for
    (one with a ``maxlen`` drops items as the function appends).

    Example::

        refuse_deque([1.0])  # nothing
    """
    if isinstance(x, collections.deque):
        error = UnsupportedError(
            f"{running_origin()}: a collections.deque holding values being differentiated "
            "cannot be transformed; use a list (and slice it), or mode='tape'"
        )
        error.whole_function_on_tape = True
        raise error
