"""Convert between gast trees and the standard library's ``ast`` trees, quickly.

``gast.gast_to_ast`` followed by ``ast.fix_missing_locations`` walks the tree twice
through generic visitors; generated code is converted on every transformation (to print
it, or to compile the specialisation probe), so :func:`to_python_ast` does both in one
direct pass. Missing locations are inherited from the enclosing node, as
``fix_missing_locations`` does. :func:`to_gast` is the other way; :func:`into_gast` too,
turning a tree the caller no longer needs into gast in place, for parsing the user's
functions.
"""

from __future__ import annotations

import ast
from typing import Any

import gast

from s2sgrad.compiler.syntax import node_fields

__all__ = ["to_python_ast", "to_gast", "into_gast"]

_CONTEXTS = {gast.Load: ast.Load(), gast.Store: ast.Store(), gast.Del: ast.Del()}
_SINGLETONS = {  # operators carry nothing, so one instance serves every node (as in CPython)
    kind: getattr(ast, kind.__name__)()
    for base in (gast.operator, gast.unaryop, gast.cmpop, gast.boolop)
    for kind in base.__subclasses__()
}
_START = {"lineno": 1, "col_offset": 0, "end_lineno": 1, "end_col_offset": 0}
_PLANS: dict[type, tuple] = {}
_NAME, _CONSTANT = ast.Name, ast.Constant


def to_python_ast(node: gast.AST) -> ast.AST:
    """The ``ast`` tree for a gast tree, with every location filled in.

    Example::

        tree = to_python_ast(gast.parse("def f(x):\\n    return x"))
        exec(compile(tree, "<f>", "exec"))
    """
    return _convert(node, _START)


# Each new node is made with ``__new__`` and gets its attributes as one dict: much quicker
# than ``ast``'s keyword constructors or a ``setattr`` per field.


def _location(state: dict, outer: dict) -> dict:
    """The location of a node (given its ``__dict__``), missing parts from ``outer``."""
    lineno = state.get("lineno")
    if lineno is None:  # generated code: the enclosing statement's place
        return outer
    col_offset = state.get("col_offset")
    end_lineno = state.get("end_lineno")
    end_col_offset = state.get("end_col_offset")
    return {
        "lineno": lineno,
        "col_offset": outer["col_offset"] if col_offset is None else col_offset,
        "end_lineno": outer["end_lineno"] if end_lineno is None else end_lineno,
        "end_col_offset": outer["end_col_offset"] if end_col_offset is None else end_col_offset,
    }


def _convert(node, outer: dict):
    kind = type(node)
    if kind is gast.Name or kind is gast.Constant:  # most nodes: the leaves, made directly
        state = node.__dict__
        if kind is gast.Name:
            new: ast.AST = _NAME.__new__(_NAME)
            new.__dict__ = attributes = _location(state, outer).copy()
            attributes["id"] = state["id"]
            attributes["ctx"] = _CONTEXTS[type(state["ctx"])]
        else:
            new = _CONSTANT.__new__(_CONSTANT)
            new.__dict__ = attributes = _location(state, outer).copy()
            attributes["value"] = state["value"]
            attributes["kind"] = state["kind"]
        return new
    plan = _PLANS.get(kind) or _plan(kind)
    target, located, children, operators, contexts, scalars = plan
    state = node.__dict__
    if not located:
        if target is None:  # arguments, except clauses: their own shapes
            return _SPECIAL[kind](node, outer)
        location, attributes = outer, {}
    else:
        location = _location(state, outer)
        attributes = location.copy()
    for field in children:
        value = state[field]
        if type(value) is list:
            attributes[field] = [
                _SINGLETONS.get(type(item)) or _convert(item, location)
                if isinstance(item, gast.AST)
                else item
                for item in value
            ]
        else:
            attributes[field] = _convert(value, location) if isinstance(value, gast.AST) else value
    for field in operators:
        attributes[field] = _SINGLETONS[type(state[field])]
    for field in contexts:
        attributes[field] = _CONTEXTS[type(state[field])]
    for field in scalars:
        attributes[field] = state.get(field)
    new = target.__new__(target)
    new.__dict__ = attributes
    return new


def _value(value, location):
    if type(value) is list:
        return [_value(item, location) for item in value]
    if isinstance(value, gast.AST):
        return _convert(value, location)
    return value


def _arguments(node, location):
    def parameter(name):
        if name is None:
            return None
        new = ast.arg(
            arg=name.id,
            annotation=_value(name.annotation, location),
            type_comment=name.type_comment,
        )
        new.__dict__.update(_location(name.__dict__, location))
        return new

    return ast.arguments(
        posonlyargs=[parameter(n) for n in node.posonlyargs],
        args=[parameter(n) for n in node.args],
        vararg=parameter(node.vararg),
        kwonlyargs=[parameter(n) for n in node.kwonlyargs],
        kw_defaults=_value(node.kw_defaults, location),
        kwarg=parameter(node.kwarg),
        defaults=_value(node.defaults, location),
    )


def _except_handler(node, outer):
    location = _location(node.__dict__, outer)
    new = ast.ExceptHandler(
        type=_value(node.type, location),
        name=node.name.id if node.name is not None else None,
        body=_value(node.body, location),
    )
    new.__dict__.update(location)
    return new


_SPECIAL = {gast.arguments: _arguments, gast.ExceptHandler: _except_handler}


def _plan(kind: type) -> tuple:
    """How to convert a node of a gast class: the ``ast`` class, whether it has a location,
    and its fields by what they hold: nodes (a node, a list or None), an operator, a
    context, or a name or literal."""
    if kind in _SPECIAL:
        plan: tuple = (None, False, (), (), (), ())
    else:
        target = getattr(ast, kind.__name__)
        fields = target._fields
        children = tuple(f for f in node_fields(kind) if f in fields) + (
            ("ops",) if "ops" in fields else ()
        )
        operators = ("op",) if "op" in fields else ()
        contexts = ("ctx",) if "ctx" in fields else ()
        used = children + operators + contexts
        scalars = tuple(f for f in fields if f not in used)
        plan = (target, "lineno" in target._attributes, children, operators, contexts, scalars)
    _PLANS[kind] = plan
    return plan


def to_gast(node: ast.AST, locations: bool = True) -> gast.AST:
    """The gast tree for an ``ast`` tree (what ``gast.ast_to_gast`` gives, faster);
    without ``locations``, no node has one.

    Example::

        function = to_gast(ast.parse("def f(x):\n    return x")).body[0]
    """
    return _to_gast(node, _LOCATION_KEYS if not locations else frozenset())


def _to_gast(node: Any, dropped: frozenset) -> gast.AST:
    kind = type(node)
    state = node.__dict__
    if kind is ast.Name:  # the commonest nodes, made without gast's keyword constructor
        new = _GAST_NAME.__new__(_GAST_NAME)
        if dropped:  # the entries in the order the copy below leaves them
            new.__dict__ = {"id": state["id"], "ctx": _GAST_CONTEXTS[type(node.ctx)]}
        else:
            new.__dict__.update(state)
            new.__dict__["ctx"] = _GAST_CONTEXTS[type(node.ctx)]
        new.__dict__["annotation"] = new.__dict__["type_comment"] = None
        return new
    if kind is ast.Constant:
        new = _GAST_CONSTANT.__new__(_GAST_CONSTANT)
        if dropped:
            new.__dict__ = {key: value for key, value in state.items() if key not in dropped}
        else:
            new.__dict__.update(state)
        return new
    if kind is ast.arg:
        new = gast.Name(
            node.arg, gast.Param(), _to_gast_value(node.annotation, dropped), node.type_comment
        )
        _copy_location(new, node)
    elif kind is ast.ExceptHandler:
        name = node.name
        if name is not None:
            name = gast.Name(name, gast.Store(), None, None)
        new = gast.ExceptHandler(
            _to_gast_value(node.type, dropped), name, _to_gast_value(node.body, dropped)
        )
        _copy_location(new, node)
    elif kind in _GAST_CONTEXTS:
        return _GAST_CONTEXTS[kind]
    else:
        plan = _GAST_PLANS.get(kind)
        if plan is None:
            plan = _GAST_PLANS[kind] = _gast_plan(kind)
        target, fields, missing = plan
        new = target.__new__(target)
        # locations (unless dropped), names and literals copied as they are; nodes converted
        if dropped:
            converted = {key: value for key, value in state.items() if key not in dropped}
        else:
            converted = state.copy()
        new.__dict__ = converted
        for field in fields:
            value = converted.get(field)
            if type(value) is list:
                converted[field] = [
                    _to_gast(item, dropped) if isinstance(item, ast.AST) else item for item in value
                ]
            elif isinstance(value, ast.AST):
                converted[field] = _to_gast(value, dropped)
        for field in missing:  # fields gast has and this Python's ast has not
            converted.setdefault(field, [] if field == "type_params" else None)
        return new
    if dropped:
        for key in dropped:
            new.__dict__.pop(key, None)
    return new


def into_gast(node: ast.AST) -> gast.AST:
    """:func:`to_gast` of ``node``, made by turning its nodes into gast nodes in place:
    quicker (no node is copied), and ``node``'s tree is used up. Operators and contexts,
    which the parser shares between trees, are replaced, never changed.

    Example::

        function = into_gast(ast.parse("def f(x):\n    return x")).body[0]
    """
    return _into_gast(node)


def _into_gast(node: Any) -> gast.AST:
    kind = type(node)
    state = node.__dict__
    if kind is ast.Name:  # the entries in the order to_gast leaves them
        node.__class__ = _GAST_NAME
        state["ctx"] = _GAST_CONTEXTS[type(state["ctx"])]
        state["annotation"] = state["type_comment"] = None
        return node
    if kind is ast.Constant:
        node.__class__ = _GAST_CONSTANT
        return node
    plan = _IN_PLACE_PLANS.get(kind)
    if plan is None:
        plan = _IN_PLACE_PLANS[kind] = _in_place_plan(kind)
    if plan is _COPIED:  # parameters, except clauses, and the parser's shared nodes
        return _to_gast(node, frozenset())
    target, fields, missing = plan
    node.__class__ = target
    for field in fields:
        value = state.get(field)
        if type(value) is list:
            value[:] = [_into_gast(item) if isinstance(item, ast.AST) else item for item in value]
        elif isinstance(value, ast.AST):
            state[field] = _into_gast(value)
    for field in missing:  # fields gast has and this Python's ast has not
        state.setdefault(field, [] if field == "type_params" else None)
    return node


def _in_place_plan(kind: Any) -> tuple:
    """:func:`_gast_plan`, or ``_COPIED`` for a node :func:`into_gast` hands to
    :func:`to_gast`: one made anew (``arg``, ``ExceptHandler``) or shared (operators and
    contexts: the parser makes one of each)."""
    if kind in (ast.arg, ast.ExceptHandler) or issubclass(kind, _SHARED):
        return _COPIED
    return _gast_plan(kind)


def _gast_plan(kind: Any) -> tuple:
    """How :func:`_to_gast` converts an ``ast`` node of ``kind``: the gast class, the fields
    that may hold nodes (the others are copied), and the fields gast adds."""
    target = getattr(gast, kind.__name__)
    return target, tuple(kind._fields), _MISSING.get(target, ())


def _to_gast_value(value, dropped: frozenset):
    if type(value) is list:
        return [_to_gast_value(item, dropped) for item in value]
    if isinstance(value, ast.AST):
        return _to_gast(value, dropped)
    return value


def _copy_location(new: gast.AST, old: ast.AST) -> None:
    state = old.__dict__
    for attribute in new._attributes:
        if attribute in state:
            setattr(new, attribute, state[attribute])


_GAST_CONTEXTS = {ast.Load: gast.Load(), ast.Store: gast.Store(), ast.Del: gast.Del()}
_LOCATION_KEYS = frozenset({"lineno", "col_offset", "end_lineno", "end_col_offset"})
_GAST_PLANS: dict[type, tuple] = {}
_IN_PLACE_PLANS: dict[type, tuple] = {}
_COPIED: tuple = ("copied by to_gast",)
_SHARED = (ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context)
_GAST_NAME, _GAST_CONSTANT = gast.Name, gast.Constant
_MISSING = {
    kind: missing
    for kind in (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.TypeVar)
    if hasattr(kind, "_fields")
    and (missing := tuple(set(kind._fields) - set(getattr(ast, kind.__name__, kind)._fields)))
}
