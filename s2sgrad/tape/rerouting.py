"""Route every call of a Python function through a handler, by replacing its code.

Replacing the code object, rather than returning a new function, reaches every reference
to the function that already exists (``from module import f`` elsewhere, lists of
callbacks, SciPy's own calls). The tape uses it for functions NumPy's dispatch never shows
it: those with a custom derivative (``controls.derivative``) and SciPy's Python functions
that have rules (``tape/library_calls.py``).

Example::

    reroute(f, lambda original: lambda args, kwargs: original(*args, **kwargs), "__route__")
"""

from __future__ import annotations

import inspect
import types
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["reroute", "unroute", "original_of"]

Handler = Callable[[tuple, dict], Any]

# routed function -> a function running the code it had
_ORIGINALS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def original_of(function: Any) -> Any:
    """The function running the code ``function`` had before :func:`reroute`, for an
    analysis that reads a function's code (``function`` itself if it is not routed).

    Example::

        original_of(index_cotangent).__code__  # the helper's own code, not the router's
    """
    try:
        return _ORIGINALS.get(function, function)
    except TypeError:  # not weakly referable: never routed
        return function


def reroute(
    function: types.FunctionType,
    make_handler: Callable[[types.FunctionType], Handler],
    parameter: str,
) -> bool:
    """Make ``function`` call ``make_handler(original)(args, kwargs)``, where ``original``
    runs the code ``function`` had. ``inspect.signature`` and ``inspect.getsource`` still
    describe the original (``__signature__``, ``__wrapped__``). ``parameter`` names the
    keyword-only parameter that carries the handler; a function already routed through it
    is left alone (returns ``False``).
    """
    if parameter in (function.__kwdefaults__ or {}):
        return False
    original = types.FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    original.__kwdefaults__ = function.__kwdefaults__
    original.__dict__.update(function.__dict__)  # a decorator's __wrapped__, for one
    original.__qualname__ = function.__qualname__
    original.__module__ = function.__module__
    original.__doc__ = function.__doc__
    signature = inspect.signature(function)
    function.__code__ = _routing_code(function.__code__, parameter)
    function.__defaults__ = None
    function.__kwdefaults__ = {parameter: make_handler(original)}
    function.__dict__["__signature__"] = signature
    function.__dict__["__wrapped__"] = original
    _ORIGINALS[function] = original
    return True


def unroute(function: types.FunctionType, parameter: str) -> bool:
    """Give ``function`` back the code :func:`reroute` replaced (``False`` if it was not
    routed through ``parameter``).

    Example::

        unroute(f, "__route__")
    """
    if parameter not in (function.__kwdefaults__ or {}):
        return False
    original = function.__dict__["__wrapped__"]
    function.__code__ = original.__code__
    function.__defaults__ = original.__defaults__
    function.__kwdefaults__ = original.__kwdefaults__
    del function.__dict__["__signature__"], function.__dict__["__wrapped__"]
    _ORIGINALS.pop(function, None)
    return True


def _routing_code(code: types.CodeType, parameter: str) -> types.CodeType:
    """Code for ``def f(*args, <parameter>, **kwargs)`` returning ``<parameter>(args,
    kwargs)``, with ``code``'s free variables (a function's closure must match its code)
    and its name, file and first line."""
    free = code.co_freevars
    cells = "".join(f"    {name} = None\n" for name in free)
    never = f" if True else ({', '.join(free)},)" if free else ""
    source = (
        "def make():\n"
        f"{cells}"
        f"    def routed(*args, {parameter}, **kwargs):\n"
        f"        return {parameter}(args, kwargs){never}\n"
        "    return routed\n"
    )
    namespace: dict = {}
    exec(compile(source, code.co_filename, "exec"), namespace)
    made = namespace["make"]().__code__
    assert made.co_freevars == free, (made.co_freevars, free)
    names = {"co_name": code.co_name, "co_firstlineno": code.co_firstlineno}
    if hasattr(code, "co_qualname"):  # Python 3.11+
        names["co_qualname"] = code.co_qualname
    return made.replace(**names)
