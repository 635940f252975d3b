"""Print a generated gast function as ``ast.unparse`` prints it, without building ``ast``.

Converting a large function to ``ast`` nodes and printing them with ``ast.unparse``'s
generic visitor costs about as much as compiling it; generated code uses few node kinds,
so :func:`write_source` prints those directly from the gast tree, the same text character
for character (the same parentheses from the same precedence rules, the same literals).
It returns None for a tree holding any other kind, or anything printed in a special way
(a docstring, a type comment, a decorator, a nested function): the caller then prints
with ``ast.unparse``. Tests check the two agree on every generated function they make.
"""

from __future__ import annotations

import sys
import threading
from array import array
from collections.abc import Callable

import gast

from s2sgrad.compiler.syntax import names_used

__all__ = ["write_source", "write_source_and_names"]


def write_source(function: gast.FunctionDef) -> str | None:
    """``ast.unparse``'s text for ``function`` (Python 3.11 on), or None when it holds a
    node this printer leaves to ``ast.unparse``.

    Example::

        write_source(gast.parse("def f(x):\\n    return (x + 1) * 2").body[0])
        # 'def f(x):\\n    return (x + 1) * 2'
    """
    if sys.version_info < (3, 11):  # 3.10's printer differs (see ``codegen._unparse``)
        return None
    try:
        lines = [_header(function)]
        _block(function.body, "    ", lines)
    except _Unsupported:
        return None
    return "\n".join(lines)


def write_source_and_names(
    function: gast.FunctionDef, positions: array | None = None
) -> tuple[str, set[str]] | None:
    """:func:`write_source`'s text and every name in ``function`` (``syntax.names_used``'s
    answer), found while printing it: each of its names is printed, in one place. None
    where :func:`write_source` gives None. ``positions``, when given (an empty
    ``array("i")``), receives at each printed line's index (the header is 0) the ``lineno``
    of the statement that line starts, 0 where none starts there or it has none; where
    the calls on that line all come from one other statement (the optimiser moved them
    there: ``dx = unpad(db, a, 2) * 2.0``), that statement's, and 0 where they come from
    several.

    Example::

        write_source_and_names(gast.parse("def f(x):\\n    return g(x)").body[0])
        # ('def f(x):\\n    return g(x)', {'x', 'g'})
    """
    names: set[str] = set()
    _PRINTING.names = names
    _PRINTING.positions = positions
    try:
        text = write_source(function)
    finally:
        _PRINTING.names = _PRINTING.positions = _PRINTING.call_lines = None
    return None if text is None else (text, names)


class _Printing(threading.local):
    names: set[str] | None = None  # where the names printed go, when they are asked for
    positions: array | None = None  # the statements' line numbers, when they are asked for
    # with ``positions``: the line numbers of the calls printed on the statement's own line
    # (a call the optimiser moved there from another statement carries that one's)
    call_lines: set[int] | None = None


_PRINTING = _Printing()


class _Unsupported(Exception):
    """A node :func:`write_source` leaves to ``ast.unparse``."""


# ``ast._Precedence``'s values, lowest binding first
_NAMED_EXPR, _TUPLE, _YIELD, _TEST, _OR, _AND, _NOT, _CMP, _EXPR = range(1, 10)
_BXOR, _BAND, _SHIFT, _ARITH, _TERM, _FACTOR, _POWER, _AWAIT, _ATOM = range(10, 19)
_INFINITY = "1e" + repr(sys.float_info.max_10_exp + 1)

_BINARY = {
    gast.Add: (" + ", _ARITH),
    gast.Sub: (" - ", _ARITH),
    gast.Mult: (" * ", _TERM),
    gast.MatMult: (" @ ", _TERM),
    gast.Div: (" / ", _TERM),
    gast.Mod: (" % ", _TERM),
    gast.LShift: (" << ", _SHIFT),
    gast.RShift: (" >> ", _SHIFT),
    gast.BitOr: (" | ", _EXPR),
    gast.BitXor: (" ^ ", _BXOR),
    gast.BitAnd: (" & ", _BAND),
    gast.FloorDiv: (" // ", _TERM),
    gast.Pow: (" ** ", _POWER),
}
_AUGMENTED = {kind: f" {symbol.strip()}= " for kind, (symbol, _) in _BINARY.items()}
_UNARY = {gast.Invert: "~", gast.UAdd: "+", gast.USub: "-"}  # and ``not``, apart
_COMPARISONS = {
    gast.Eq: " == ",
    gast.NotEq: " != ",
    gast.Lt: " < ",
    gast.LtE: " <= ",
    gast.Gt: " > ",
    gast.GtE: " >= ",
    gast.Is: " is ",
    gast.IsNot: " is not ",
    gast.In: " in ",
    gast.NotIn: " not in ",
}


def _header(function) -> str:
    if function.decorator_list or function.returns is not None or _scalar(function, "type_comment"):
        raise _Unsupported
    if getattr(function, "type_params", None):
        raise _Unsupported
    if _docstring(function.body):
        raise _Unsupported
    return f"def {function.name}({_arguments(function.args)}):"


def _docstring(body: list) -> bool:
    if not body or type(body[0]) is not gast.Expr:
        return False
    value = body[0].value
    return type(value) is gast.Constant and isinstance(value.value, str)


def _arguments(node: gast.arguments) -> str:
    parts = []
    positional = node.posonlyargs + node.args
    defaults = [None] * (len(positional) - len(node.defaults)) + node.defaults
    for index, (name, default) in enumerate(zip(positional, defaults), 1):
        text = _parameter(name)
        if default is not None:
            text += "=" + _expression(default, _TEST)
        parts.append(text)
        if index == len(node.posonlyargs):
            parts[-1] += ", /"
    if node.vararg is not None or node.kwonlyargs:
        parts.append("*" + (_parameter(node.vararg) if node.vararg is not None else ""))
    for name, default in zip(node.kwonlyargs, node.kw_defaults):
        text = _parameter(name)
        if default is not None:
            text += "=" + _expression(default, _TEST)
        parts.append(text)
    if node.kwarg is not None:
        parts.append("**" + _parameter(node.kwarg))
    return ", ".join(parts)


def _parameter(name: gast.Name) -> str:
    if type(name) is not gast.Name or _scalar(name, "type_comment"):
        raise _Unsupported
    names = _PRINTING.names
    if names is not None:
        names.add(name.id)
    if name.annotation is None:
        return name.id
    return f"{name.id}: {_expression(name.annotation, _TEST)}"


def _scalar(node, field: str):
    """A field holding a name or a literal, None where the node was made without it (as
    the conversion to ``ast`` reads it)."""
    return node.__dict__.get(field)


# statements -------------------------------------------------------------------------------
def _block(body: list, indent: str, lines: list[str]) -> None:
    positions = _PRINTING.positions
    for statement in body:
        write = _STATEMENTS.get(type(statement))
        if write is None:
            raise _Unsupported
        if positions is None:
            write(statement, indent, lines)
            continue
        while len(positions) < len(lines):  # a line no statement starts ("else:")
            positions.append(0)
        line = statement.__dict__.get("lineno") or 0
        positions.append(line)
        outer, _PRINTING.call_lines = _PRINTING.call_lines, set()
        calls = _PRINTING.call_lines  # the lines of the calls printed on its own line
        write(statement, indent, lines)
        _PRINTING.call_lines = outer
        calls.discard(0)
        if calls and calls != {line}:  # calls of another statement were moved into it
            positions[len(positions) - 1] = calls.pop() if len(calls) == 1 else 0


def _assign(node, indent, lines):
    if _scalar(node, "type_comment"):
        raise _Unsupported
    targets = "".join([_expression(t, _TUPLE) + " = " for t in node.targets])
    lines.append(indent + targets + _expression(node.value, _TEST))


def _augmented(node, indent, lines):
    symbol = _AUGMENTED[type(node.op)]
    lines.append(indent + _expression(node.target, _TEST) + symbol + _expression(node.value, _TEST))


def _expression_statement(node, indent, lines):
    lines.append(indent + _expression(node.value, _YIELD))


def _return(node, indent, lines):
    value = node.value
    lines.append(indent + ("return" if value is None else "return " + _expression(value, _TEST)))


def _if(node, indent, lines):
    inner = indent + "    "
    lines.append(f"{indent}if {_expression(node.test, _TEST)}:")
    _block(node.body, inner, lines)
    while len(node.orelse) == 1 and type(node.orelse[0]) is gast.If:
        node = node.orelse[0]
        lines.append(f"{indent}elif {_expression(node.test, _TEST)}:")
        _block(node.body, inner, lines)
    if node.orelse:
        lines.append(indent + "else:")
        _block(node.orelse, inner, lines)


def _for(node, indent, lines):
    if _scalar(node, "type_comment"):
        raise _Unsupported
    target, sequence = _expression(node.target, _TUPLE), _expression(node.iter, _TEST)
    lines.append(f"{indent}for {target} in {sequence}:")
    _loop_blocks(node, indent, lines)


def _while(node, indent, lines):
    lines.append(f"{indent}while {_expression(node.test, _TEST)}:")
    _loop_blocks(node, indent, lines)


def _loop_blocks(node, indent, lines):
    _block(node.body, indent + "    ", lines)
    if node.orelse:
        lines.append(indent + "else:")
        _block(node.orelse, indent + "    ", lines)


def _delete(node, indent, lines):
    lines.append(indent + "del " + ", ".join([_expression(t, _TEST) for t in node.targets]))


def _keyword_statement(word: str) -> Callable:
    def write(node, indent, lines):
        lines.append(indent + word)

    return write


_STATEMENTS: dict[type, Callable] = {
    gast.Assign: _assign,
    gast.AugAssign: _augmented,
    gast.Expr: _expression_statement,
    gast.Return: _return,
    gast.If: _if,
    gast.For: _for,
    gast.While: _while,
    gast.Delete: _delete,
    gast.Pass: _keyword_statement("pass"),
    gast.Break: _keyword_statement("break"),
    gast.Continue: _keyword_statement("continue"),
}


# expressions: each printer gets the precedence its place requires ------------------------
def _expression(node, required: int) -> str:
    kind = type(node)
    if kind is gast.Name:
        names = _PRINTING.names
        if names is not None:
            names.add(node.id)
            if node.annotation is not None:  # not printed, but its names count
                names |= names_used(node.annotation)
        return node.id
    write = _EXPRESSIONS.get(kind)
    if write is None:
        raise _Unsupported
    return write(node, required)


def _constant(node, required):
    state = node.__dict__
    value = state.get("value")
    kind = type(value)
    if (kind is float or kind is int) and state.get("kind") is None:  # the commonest
        if kind is int:
            return repr(value)
        return repr(value).replace("inf", _INFINITY).replace("nan", f"({_INFINITY}-{_INFINITY})")
    if isinstance(value, tuple):
        raise _Unsupported
    if value is ...:
        return "..."
    prefix = "u" if state.get("kind") == "u" else ""
    if isinstance(value, (float, complex)):
        text = repr(value).replace("inf", _INFINITY).replace("nan", f"({_INFINITY}-{_INFINITY})")
        return prefix + text
    return prefix + repr(value)


def _binary(node, required):
    symbol, precedence, left, right = _BINARY_PLANS[type(node.op)]
    text = _expression(node.left, left) + symbol + _expression(node.right, right)
    return f"({text})" if required > precedence else text


# each operator's symbol, precedence, and the precedences its operands need (``**`` is
# right-associative: its left operand binds tighter, the others' right one)
_BINARY_PLANS = {
    kind: (symbol, level, level + 1, level)
    if level == _POWER
    else (symbol, level, level, level + 1)
    for kind, (symbol, level) in _BINARY.items()
}


def _unary(node, required):
    kind = type(node.op)
    if kind is gast.Not:
        text = "not " + _expression(node.operand, _NOT)
        return f"({text})" if required > _NOT else text
    text = _UNARY[kind] + _expression(node.operand, _FACTOR)
    return f"({text})" if required > _FACTOR else text


def _boolean(node, required):
    symbol, precedence = (" and ", _AND) if type(node.op) is gast.And else (" or ", _OR)
    parts, level = [], precedence
    for value in node.values:
        level = min(level + 1, _ATOM)
        parts.append(_expression(value, level))
    text = symbol.join(parts)
    return f"({text})" if required > precedence else text


def _compare(node, required):
    parts = [_expression(node.left, _CMP + 1)]
    for operator, value in zip(node.ops, node.comparators):
        parts.append(_COMPARISONS[type(operator)])
        parts.append(_expression(value, _CMP + 1))
    text = "".join(parts)
    return f"({text})" if required > _CMP else text


def _call(node, required):
    if _PRINTING.call_lines is not None:
        _PRINTING.call_lines.add(node.__dict__.get("lineno") or 0)
    arguments = [_expression(a, _TEST) for a in node.args]
    for keyword in node.keywords:
        value = _expression(keyword.value, _TEST)
        name = _scalar(keyword, "arg")
        arguments.append("**" + value if name is None else f"{name}={value}")
    return f"{_expression(node.func, _ATOM)}({', '.join(arguments)})"


def _attribute(node, required):
    value = node.value
    text = _expression(value, _ATOM)
    if type(value) is gast.Constant and isinstance(value.value, int):
        return f"{text} .{node.attr}"
    return f"{text}.{node.attr}"


def _subscript(node, required):
    index = node.slice
    if type(index) is gast.Tuple and index.elts:
        inside = _items(index.elts)
    else:
        inside = _expression(index, _TEST)
    return f"{_expression(node.value, _ATOM)}[{inside}]"


def _slice(node, required):
    text = "" if node.lower is None else _expression(node.lower, _TEST)
    text += ":"
    if node.upper is not None:
        text += _expression(node.upper, _TEST)
    if node.step is not None:
        text += ":" + _expression(node.step, _TEST)
    return text


def _items(elements: list) -> str:
    if len(elements) == 1:
        return _expression(elements[0], _TEST) + ","
    return ", ".join([_expression(e, _TEST) for e in elements])


def _tuple(node, required):
    if not node.elts:
        return "()"
    text = _items(node.elts)
    return f"({text})" if required > _TUPLE else text


def _list(node, required):
    return "[" + ", ".join([_expression(e, _TEST) for e in node.elts]) + "]"


def _named(node, required):
    text = f"{_expression(node.target, _ATOM)} := {_expression(node.value, _ATOM)}"
    return f"({text})" if required > _NAMED_EXPR else text


def _starred(node, required):
    return "*" + _expression(node.value, _EXPR)


def _if_expression(node, required):
    body, test = _expression(node.body, _OR), _expression(node.test, _OR)
    text = f"{body} if {test} else {_expression(node.orelse, _TEST)}"
    return f"({text})" if required > _TEST else text


def _dictionary(node, required):
    items = []
    for key, value in zip(node.keys, node.values):
        if key is None:
            items.append("**" + _expression(value, _EXPR))
        else:
            items.append(f"{_expression(key, _TEST)}: {_expression(value, _TEST)}")
    return "{" + ", ".join(items) + "}"


_EXPRESSIONS: dict[type, Callable] = {
    gast.Constant: _constant,
    gast.BinOp: _binary,
    gast.UnaryOp: _unary,
    gast.BoolOp: _boolean,
    gast.Compare: _compare,
    gast.Call: _call,
    gast.Attribute: _attribute,
    gast.Subscript: _subscript,
    gast.Slice: _slice,
    gast.Tuple: _tuple,
    gast.List: _list,
    gast.Starred: _starred,
    gast.NamedExpr: _named,
    gast.IfExp: _if_expression,
    gast.Dict: _dictionary,
}
