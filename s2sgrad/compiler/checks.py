"""Refusals made before any code is built: what the transformer does not differentiate
(generators, ``global`` names, foreign array types, ``**kwargs`` wrt),
each naming the user's line and what to do instead.
"""

from __future__ import annotations

import builtins
from typing import Any

import gast

from s2sgrad import runtime
from s2sgrad.compiler.assemble import wrt_base
from s2sgrad.compiler.frontend import ParsedFunction
from s2sgrad.compiler.syntax import walk
from s2sgrad.errors import UnsupportedError
from s2sgrad.runtime.answering_objects import answers_arithmetic
from s2sgrad.runtime.object_gradients import is_instance_object

__all__ = [
    "check_no_outer_writes",
    "refuse_hidden_builtins",
    "check_signature",
    "first_yield",
    "refuse_foreign_array",
]


def check_signature(parsed: ParsedFunction, node, wrt) -> None:
    """Refuse a ``wrt`` the function cannot differentiate: a name it has no parameter for
    (``ValueError``), or its ``**kwargs``.

    Example::

        check_signature(parsed, node, ("x",))
    """
    args = node.args
    known = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
    for name in wrt:
        if args.vararg is not None and wrt_base(name) == args.vararg.id:
            continue  # what *args takes: all of it (a call's), or one argument ("args[1]")
        if args.kwarg is not None and name == args.kwarg.id:
            raise UnsupportedError(
                f"{parsed.location()}: {parsed.function.__qualname__} takes differentiated "
                f"values through **{name}; name their parameters, or use mode='tape'"
            )
        if name not in known:
            raise ValueError(f"{parsed.location()}: {parsed.name} has no parameter {name!r}")


def check_no_outer_writes(
    parsed: ParsedFunction, node: gast.FunctionDef, nodes: list[gast.AST] | None = None
) -> None:
    """Refuse ``global x`` and ``nonlocal x`` of a name outside the function: generated
    code lives in a module of its own, and would write somewhere else. ``nodes``:
    ``walk(node)``, when the caller has it.

    Example::

        check_no_outer_writes(parsed, node)  # raises for 'global counter'
    """
    outer = set(parsed.function.__code__.co_freevars)
    refuse_hidden_builtins(parsed, node, walk(node) if nodes is None else nodes)
    for statement in walk(node) if nodes is None else nodes:
        kind = type(statement)
        if kind is gast.Global or (kind is gast.Nonlocal and outer & set(statement.names)):
            word = "global" if kind is gast.Global else "nonlocal"
            raise UnsupportedError(
                f"{parsed.location(statement)}: {parsed.function.__qualname__} assigns the "
                f"{word} name {', '.join(statement.names)}, which generated code cannot write "
                "back; pass the value in and return the new one, or use mode='tape'"
            )


# the builtins generated code calls by name: a variable of the user's by one of these names
# would be called in their place. Loops and comprehensions are indexed (range, len,
# reversed, list, tuple, zip, dict; min and max for zip's lengths); a match statement's
# tests refuse their own (passes/desugar.py)
_GENERATED_BUILTINS = frozenset(
    {"range", "len", "reversed", "zip", "list", "tuple", "dict", "slice", "float", "min", "max"}
)
_FOR_LOOPS = frozenset({"range", "len", "reversed", "zip", "list", "tuple", "dict"})
_FOR_ZIP = frozenset({"min", "max"})
_LOOPS = (gast.For, gast.While, gast.comprehension)


def refuse_hidden_builtins(parsed: ParsedFunction, node, nodes) -> None:
    """Refuse a function whose variable (or whose module's global, as ``from numpy import
    *`` binds ``min``) hides a builtin that generated code calls by its name (``range = [0,
    2]`` made the loop's ``range(len(seq))`` call a list).

    Example::

        refuse_hidden_builtins(parsed, node, walk(node))  # raises for 'len = 2'
    """
    nodes = list(nodes)
    names = [n for n in nodes if type(n) is gast.Name]  # one scan of the nodes for names
    zips = any(n.id in ("zip", "zip_longest") for n in names)
    loops = not set(map(type, nodes)).isdisjoint(_LOOPS)
    local = {n.id for n in names if type(n.ctx) is not gast.Load}
    arguments = node.args
    every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
    local |= {a.id for a in every} | {a.id for a in (arguments.vararg, arguments.kwarg) if a}
    function = parsed.function
    cells = dict(zip(function.__code__.co_freevars, function.__closure__ or ()))
    for name in sorted(_GENERATED_BUILTINS):
        if (name in _FOR_ZIP and not zips) or (name in _FOR_LOOPS and not loops):
            continue
        if name in local:
            where = "a variable of the function is named"
        elif name in cells or getattr(builtins, name) is not function.__globals__.get(
            name, getattr(builtins, name)
        ):
            where = "the code around the function binds"
        else:
            continue
        line = next((n for n in names if n.id == name), node)
        raise UnsupportedError(
            f"{parsed.location(line)}: {where} {name!r}, which hides the builtin that "
            f"generated code calls by that name; rename it (or import the module instead "
            "of 'from ... import *'), or use mode='tape'"
        )


def refuse_foreign_array(parsed: ParsedFunction, node, name: str, obj: Any) -> None:
    """A global or closure array of a type s2sgrad does not understand (``np.matrix``, a
    masked array, a duck array) would be differentiated with the rules of plain arrays
    (a complex value is understood: see complex_values); so would an object whose class
    does arithmetic with methods of its own (``__radd__``), refused too (the tape lets it
    answer)."""
    if any(answers_arithmetic(type(item)) for item in _held(obj)):  # x + c: c's own
        read = next((n for n in walk(node) if type(n) is gast.Name and n.id == name), node)
        raise UnsupportedError(
            f"{parsed.location(read)}: {name!r} is or holds an object whose class does "
            "arithmetic with methods of its own (__radd__ ...), which source transformation "
            "would differentiate as NumPy's; use mode='tape'"
        )
    if not runtime.is_foreign_array(obj):
        return
    read = next((n for n in walk(node) if type(n) is gast.Name and n.id == name), node)
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    error = UnsupportedError(
        f"{parsed.location(read)}: {name!r} is a {kind}, an array type s2sgrad does not "
        "differentiate (np.matrix's * is a matrix product, a masked array hides elements); "
        f"use np.asarray({name}) (and apply a mask with np.where)"
    )
    error.tape_cannot_either = True  # the tape refuses it as well
    raise error


def _held(obj: Any, depth: int = 3) -> list[Any]:
    """``obj`` and the items of the tuples, lists and dicts it is, and the attributes of
    the objects, a few levels down."""
    if depth and type(obj) in (tuple, list):
        return [obj, *(i for item in obj for i in _held(item, depth - 1))]
    if depth and type(obj) is dict:
        return [obj, *(i for item in obj.values() for i in _held(item, depth - 1))]
    if depth and is_instance_object(obj):  # a model given by closure: model.scale
        held = getattr(obj, "__dict__", {}).values()
        return [obj, *(i for item in held for i in _held(item, depth - 1))]
    return [obj]


def first_yield(node: gast.AST) -> gast.AST | None:
    """The first ``yield`` of a function, not counting the functions defined inside it."""
    for child in gast.iter_child_nodes(node):
        if isinstance(child, (gast.Yield, gast.YieldFrom)):
            return child
        if not isinstance(child, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)):
            found = first_yield(child)
            if found is not None:
                return found
    return None
