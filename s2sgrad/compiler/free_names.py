"""The freshness entries (``compiler/freshness.py``) of what a function's code reads: its
globals and closure variables, and the attributes it reads from the user's modules.

Example::

    live, assumptions = free_name_entries(parsed, ["X", "np"])
    generated = depending(generated, live, assumptions)
"""

from __future__ import annotations

import builtins
import functools
import types

import gast

from s2sgrad.compiler.codegen import GeneratedFunction, generated_of
from s2sgrad.compiler.freshness import (
    Assumptions,
    class_attribute_entries,
    code_entries_for,
    entry_for,
    is_data,
)
from s2sgrad.compiler.frontend import ParsedFunction
from s2sgrad.compiler.syntax import walk

__all__ = ["attribute_entries", "depending", "free_name_entries"]


def free_name_entries(parsed: ParsedFunction, free_names: list[str]):
    """The entries (s2sgrad.compiler.freshness) of the globals and closure variables the code reads:
    the data ones by name, and all of them, with what the code it was made from assumed
    when that is generated code itself (a derivative differentiated again)."""
    function = parsed.function
    cells = dict(zip(function.__code__.co_freevars, function.__closure__ or ()))
    inner = generated_of(function)
    live: dict = {}
    assumptions = Assumptions(inner.assumptions if inner is not None else ())
    if inner is None and isinstance(function, types.FunctionType):
        assumptions.include(code_entries_for(function))  # a reload replaces the code
    for name in free_names:
        if inner is not None:  # its globals are its own: helpers, and copies of user data
            if name in inner.live:
                live[name] = inner.live[name]
            continue
        if name in cells:
            entry = entry_for(cells[name], name)
        elif name in parsed.closure:
            continue  # a name the passes gave a helper of their own
        elif name in parsed.globals or not hasattr(builtins, name):
            entry = entry_for(parsed.globals, name)
        else:  # a builtin, until a global of that name (def sum(...) later) hides it
            assumptions.include([entry_for(parsed.globals, name)])
            continue
        assumptions.include([entry])
        if is_data(entry.expected):
            live[name] = entry
        elif _users_function(entry.expected):  # a helper whose code may be reloaded
            assumptions.include(code_entries_for(entry.expected))
    return live, assumptions


def _users_function(value) -> bool:
    """A Python function of the user's (not NumPy's, SciPy's or s2sgrad's)."""
    if not isinstance(value, types.FunctionType):
        return False
    module = (getattr(value, "__module__", None) or "").partition(".")[0]
    return module not in ("numpy", "scipy", "s2sgrad")


def attribute_entries(
    parsed: ParsedFunction, node: gast.FunctionDef, nodes: list[gast.AST] | None = None
) -> list:
    """Entries for what the code reads from a module, a class or an object of the user's
    (``layers.dense(x)``, ``config.scale``, ``Model.activation``, ``settings.activation``),
    which a reload or a patch may replace without rebinding any name the code reads. ``nodes``:
    ``walk(node)``, when the caller has it.

    Example::

        assumptions.include(attribute_entries(parsed, node))
    """
    entries = []
    for attribute in walk(node) if nodes is None else nodes:
        if type(attribute) is not gast.Attribute or type(attribute.ctx) is not gast.Load:
            continue
        owner = parsed.resolve(attribute.value)
        if isinstance(owner, types.ModuleType):
            if owner.__name__.partition(".")[0] not in _OWN_MODULES:
                entries.append(entry_for(owner.__dict__, attribute.attr))
        elif isinstance(owner, type):
            if owner.__module__.partition(".")[0] not in _LIBRARIES:
                entries.extend(class_attribute_entries(owner, attribute.attr))
        elif _users_object(owner):  # config.activation: its own attribute, or its class's
            entries.append(entry_for(owner.__dict__, attribute.attr))
            entries.extend(class_attribute_entries(type(owner), attribute.attr))
    return entries


def _users_object(value) -> bool:
    """An instance of a user's class with attributes of its own (``vars(value)``)."""
    cls = type(value)
    return (
        type(getattr(value, "__dict__", None)) is dict
        and cls.__module__.partition(".")[0] not in _LIBRARIES
        and not isinstance(value, (types.FunctionType, types.MethodType, functools.partial))
    )


_LIBRARIES = ("numpy", "s2sgrad", "builtins", "math")
# Library modules are checked too: ``np.tanh = my_tanh`` (a patch, or a test's monkeypatch)
# changes what the generated code calls without changing its derivative rule.
_OWN_MODULES = ("s2sgrad", "builtins")


def depending(generated: GeneratedFunction, live: dict, assumptions: Assumptions):
    """``generated``, told the names it reads (``live``: copied into its globals as they
    change) and every entry it depends on; not specialised to shapes when one of them
    may change shape in place (a list, a dict, an object).

    Example::

        return depending(generated, live, assumptions)
    """
    generated.live = live
    generated.assumptions = assumptions
    if not all(entry.frozen() for entry in assumptions.entries):
        generated.shapes_follow_arguments = False  # an item replaced in place can reshape
    return generated
