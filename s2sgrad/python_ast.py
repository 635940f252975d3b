"""Convert between gast trees and the standard library's ``ast`` trees, quickly.

``gast.gast_to_ast`` followed by ``ast.fix_missing_locations`` walks the tree twice
through generic visitors; generated code is converted on every transformation (to print
it, or to compile the specialisation probe), so :func:`to_python_ast` does both in one
direct pass. Missing locations are inherited from the enclosing node, as
``fix_missing_locations`` does. :func:`to_gast` is the other way, for parsing the user's
functions.
"""

from __future__ import annotations

import ast

import gast

from s2sgrad.syntax import child_fields

__all__ = ["to_python_ast", "to_gast"]

_CONTEXTS = {gast.Load: ast.Load(), gast.Store: ast.Store(), gast.Del: ast.Del()}
_SINGLETONS = {  # operators carry nothing, so one instance serves every node (as in CPython)
    kind: getattr(ast, kind.__name__)()
    for base in (gast.operator, gast.unaryop, gast.cmpop, gast.boolop)
    for kind in base.__subclasses__()
}
_START = {"lineno": 1, "col_offset": 0, "end_lineno": 1, "end_col_offset": 0}
_PLANS: dict[type, tuple[type, tuple[str, ...], tuple[str, ...], bool]] = {}


def to_python_ast(node: gast.AST) -> ast.AST:
    """The ``ast`` tree for a gast tree, with every location filled in.

    Example::

        tree = to_python_ast(gast.parse("def f(x):\\n    return x"))
        exec(compile(tree, "<f>", "exec"))
    """
    return _convert(node, _START)


# Each new node is made with ``__new__`` and gets its attributes as one dict: much quicker
# than ``ast``'s keyword constructors. The commonest kinds have converters of their own.


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
    return (_CONVERTERS.get(type(node)) or _convert_any)(node, outer)


def _convert_name(node, outer):
    state = node.__dict__
    new = _new(ast.Name)
    new.__dict__ = attributes = outer.copy() if "lineno" not in state else _located(state, outer)
    attributes["id"] = state["id"]
    attributes["ctx"] = _CONTEXTS[type(state["ctx"])]
    return new


def _convert_constant(node, outer):
    state = node.__dict__
    new = _new(ast.Constant)
    new.__dict__ = attributes = outer.copy() if "lineno" not in state else _located(state, outer)
    attributes["value"] = state["value"]
    attributes["kind"] = state["kind"]
    return new


def _convert_binop(node, outer):
    state = node.__dict__
    location = _location(state, outer)
    left, right = state["left"], state["right"]
    new = _new(ast.BinOp)
    new.__dict__ = attributes = location.copy()
    attributes["left"] = (_CONVERTERS.get(type(left)) or _convert_any)(left, location)
    attributes["op"] = _SINGLETONS[type(state["op"])]
    attributes["right"] = (_CONVERTERS.get(type(right)) or _convert_any)(right, location)
    return new


def _convert_call(node, outer):
    state = node.__dict__
    location = _location(state, outer)
    func = state["func"]
    new = _new(ast.Call)
    new.__dict__ = attributes = location.copy()
    attributes["func"] = (_CONVERTERS.get(type(func)) or _convert_any)(func, location)
    attributes["args"] = [
        (_CONVERTERS.get(type(item)) or _convert_any)(item, location) for item in state["args"]
    ]
    attributes["keywords"] = [_convert_keyword(item, location) for item in state["keywords"]]
    return new


def _convert_keyword(node, outer):
    state = node.__dict__
    location = _location(state, outer)
    value = state["value"]
    new = _new(ast.keyword)
    new.__dict__ = attributes = location.copy()
    attributes["arg"] = state["arg"]
    attributes["value"] = (_CONVERTERS.get(type(value)) or _convert_any)(value, location)
    return new


def _convert_assign(node, outer):
    state = node.__dict__
    location = _location(state, outer)
    value = state["value"]
    new = _new(ast.Assign)
    new.__dict__ = attributes = location.copy()
    attributes["targets"] = [
        (_CONVERTERS.get(type(item)) or _convert_any)(item, location) for item in state["targets"]
    ]
    attributes["value"] = (_CONVERTERS.get(type(value)) or _convert_any)(value, location)
    attributes["type_comment"] = state.get("type_comment")
    return new


def _convert_attribute(node, outer):
    state = node.__dict__
    location = _location(state, outer)
    value = state["value"]
    new = _new(ast.Attribute)
    new.__dict__ = attributes = location.copy()
    attributes["value"] = (_CONVERTERS.get(type(value)) or _convert_any)(value, location)
    attributes["attr"] = state["attr"]
    attributes["ctx"] = _CONTEXTS[type(state["ctx"])]
    return new


def _located(state: dict, outer: dict) -> dict:
    location = _location(state, outer)
    return location.copy() if location is outer else location


def _convert_any(node, outer):
    kind = type(node)
    plan = _PLANS.get(kind) or _plan(kind)
    target, children, others, located = plan
    state = node.__dict__
    location = _location(state, outer) if located else outer
    if kind is gast.arguments:
        return _arguments(node, location)
    if kind is gast.ExceptHandler:
        new = ast.ExceptHandler(
            type=_value(node.type, location),
            name=node.name.id if node.name is not None else None,
            body=_value(node.body, location),
        )
        new.__dict__.update(location)
        return new
    attributes = location.copy() if located else {}
    for field in children:
        value = state.get(field)
        if type(value) is list:
            value = [
                _convert(item, location) if isinstance(item, gast.AST) else item for item in value
            ]
        elif isinstance(value, gast.AST):
            value = _SINGLETONS.get(type(value)) or _convert(value, location)
        attributes[field] = value
    for field in others:
        value = state.get(field)
        attributes[field] = _CONTEXTS.get(type(value), value)
    new = target.__new__(target)
    new.__dict__ = attributes
    return new


def _new(kind: type) -> ast.AST:
    return kind.__new__(kind)


_CONVERTERS = {
    gast.Name: _convert_name,
    gast.Constant: _convert_constant,
    gast.BinOp: _convert_binop,
    gast.Call: _convert_call,
    gast.keyword: _convert_keyword,
    gast.Assign: _convert_assign,
    gast.Attribute: _convert_attribute,
}


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


def _plan(kind: type) -> tuple[type, tuple[str, ...], tuple[str, ...], bool]:
    """The ``ast`` class for a gast class, its child fields, its other fields, and whether
    it has a location."""
    target = getattr(ast, kind.__name__)
    children = tuple(f for f in child_fields(kind) if f in target._fields)
    others = tuple(f for f in target._fields if f not in children)
    plan = _PLANS[kind] = (target, children, others, "lineno" in target._attributes)
    return plan


def to_gast(node: ast.AST, locations: bool = True) -> gast.AST:
    """The gast tree for an ``ast`` tree (what ``gast.ast_to_gast`` gives, faster);
    without ``locations``, no node has one.

    Example::

        function = to_gast(ast.parse("def f(x):\n    return x")).body[0]
    """
    return _to_gast(node, _LOCATION_KEYS if not locations else frozenset())


def _to_gast(node: ast.AST, dropped: frozenset) -> gast.AST:
    kind = type(node)
    state = node.__dict__
    if kind is ast.Name:  # the commonest nodes, made without gast's keyword constructor
        new = _GAST_NAME.__new__(_GAST_NAME)
        converted = new.__dict__
        converted.update(state)
        converted["ctx"] = _GAST_CONTEXTS[type(node.ctx)]
        converted["annotation"] = converted["type_comment"] = None
    elif kind is ast.Constant:
        new = _GAST_CONSTANT.__new__(_GAST_CONSTANT)
        new.__dict__.update(state)
    elif kind is ast.arg:
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
        target = _GAST_CLASSES.get(kind)
        if target is None:
            target = _GAST_CLASSES[kind] = getattr(gast, kind.__name__)
        new = target.__new__(target)
        converted = new.__dict__
        for field, value in state.items():
            if type(value) is list:
                converted[field] = [
                    _to_gast(item, dropped) if isinstance(item, ast.AST) else item for item in value
                ]
            elif isinstance(value, ast.AST):
                converted[field] = _to_gast(value, dropped)
            else:  # locations, names and literals
                converted[field] = value
        for field in _MISSING.get(target, ()):  # fields gast has and this Python's ast has not
            converted.setdefault(field, [] if field == "type_params" else None)
    if dropped:
        for key in dropped:
            new.__dict__.pop(key, None)
    return new


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
_GAST_CLASSES: dict[type, type] = {}
_GAST_NAME, _GAST_CONSTANT = gast.Name, gast.Constant
_MISSING = {
    kind: missing
    for kind in (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.TypeVar)
    if hasattr(kind, "_fields")
    and (missing := tuple(set(kind._fields) - set(getattr(ast, kind.__name__, kind)._fields)))
}
