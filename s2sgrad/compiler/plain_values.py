"""Cheap, exact looks at the commonest statements of the normal form, without a walk.

``name = value`` where ``value`` is a name, a literal, an operator or a call applied to
names and literals: what it reads and writes can be read off its few nodes (no walrus,
comprehension or lambda can hide in them). Every analysis that asks ``names_read`` or
``names_written`` per statement takes these first.

Example::

    plain_reads(parse_expression("np.sin(t1)"))  # {'np', 't1'}
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.node_kinds import names_in
from s2sgrad.compiler.syntax import (
    names_read,
    names_read_in_all,
    names_written,
    names_written_in_all,
    walk,
)

__all__ = [
    "calls_in",
    "names_read_by_body",
    "plain_calls",
    "plain_reads",
    "reads_of_value",
    "writes_nothing",
    "written_by",
    "written_by_all",
]


_ATOMS = (gast.Name, gast.Constant)


def writes_nothing(value: gast.expr) -> bool:
    """A cheap, exact check that ``names_written(value)`` is empty for the commonest
    values of the normal form: a name, a literal, an operator or a call applied to names
    and literals (no walrus, comprehension or lambda can hide in them); False when unsure.

    Example::

        writes_nothing(parse_expression("np.sin(t1) "))  # True
    """
    kind = type(value)
    if kind in _ATOMS:
        return True
    if kind is gast.BinOp:
        return type(value.left) in _ATOMS and type(value.right) in _ATOMS
    if kind is gast.UnaryOp:
        return type(value.operand) in _ATOMS
    if kind is gast.Call:
        func = value.func
        if type(func) is gast.Attribute:
            func = func.value
        if type(func) is not gast.Name:
            return False
        for argument in value.args:
            if type(argument) not in _ATOMS:
                return False
        keywords = value.keywords
        return not keywords or all(type(k.value) in _ATOMS for k in keywords)
    return False


def written_by(statement: gast.stmt) -> set[str]:
    """``names_written(statement)``, faster for ``name = value`` where ``value`` surely
    writes nothing (:func:`writes_nothing`)."""
    if type(statement) is gast.Assign and len(statement.targets) == 1:
        target = statement.targets[0]
        if type(target) is gast.Name and writes_nothing(statement.value):
            return {target.id}
    return names_written(statement)


def written_by_all(statements: list[gast.stmt]) -> set[str]:
    """``names_written_in_all(statements)``, with the plain ``name = value`` among them
    (:func:`writes_nothing`) read off their targets: one walk of the others only.

    Example::

        written_by_all(function.body)  # every name the body binds
    """
    found: set[str] = set()
    others = []
    for statement in statements:
        if type(statement) is gast.Assign and len(statement.targets) == 1:
            target = statement.targets[0]
            if type(target) is gast.Name and writes_nothing(statement.value):
                found.add(target.id)
                continue
        others.append(statement)
    if others:
        found |= names_written_in_all(others)
    return found


def plain_reads(value: gast.expr) -> set[str] | None:
    """``names_read(value)`` for a value :func:`writes_nothing` sees through (every name
    in it is read), else None."""
    kind = type(value)
    if kind is gast.Name:
        return {value.id}
    if kind is gast.Constant:
        return set()
    if kind is gast.BinOp:
        parts = [value.left, value.right]
    elif kind is gast.UnaryOp:
        parts = [value.operand]
    elif kind is gast.Call:
        func = value.func
        parts = [func.value if type(func) is gast.Attribute else func, *value.args]
        if type(parts[0]) is not gast.Name:
            return None
        for keyword in value.keywords:
            parts.append(keyword.value)
    else:
        return None
    reads = set()
    for part in parts:  # writes_nothing's test: every part a name or a literal
        kind = type(part)
        if kind is gast.Name:
            reads.add(part.id)
        elif kind is not gast.Constant:
            return None
    return reads


def reads_of_value(value: gast.expr) -> set[str]:
    """``names_read(value)``, without a walk for a value :func:`plain_reads` sees through.

    Example::

        reads_of_value(parse_expression("a[i] + b"))  # {'a', 'i', 'b'}
    """
    reads = plain_reads(value)
    return names_read(value) if reads is None else reads


def plain_calls(statement: gast.stmt) -> list[gast.Call] | None:
    """The calls of ``name = value`` where ``value`` is plain (:func:`writes_nothing`): no
    call can hide in its parts, so the value is the one call there may be; None for any
    other statement.

    Example::

        plain_calls(parse_statement("y = np.sin(x)"))  # [the call np.sin(x)]
    """
    if type(statement) is gast.Assign and len(statement.targets) == 1:
        value = statement.value
        if type(statement.targets[0]) is gast.Name and writes_nothing(value):
            return [value] if type(value) is gast.Call else []
    return None


def calls_in(statement: gast.stmt) -> list[gast.Call]:
    """``[n for n in walk(statement) if type(n) is gast.Call]``, in that order, without a
    walk for ``name = value`` where ``value`` is plain (:func:`plain_calls`).

    Example::

        calls_in(parse_statement("y = f(g(x))"))  # [f(g(x)), g(x)]
    """
    calls = plain_calls(statement)
    return [n for n in walk(statement) if type(n) is gast.Call] if calls is None else calls


def names_read_by_body(node: gast.FunctionDef, nodes: list[gast.AST]) -> set[str]:
    """``names_read_in_all(node.body)``, read off ``nodes`` (``walk(node)``, which the
    caller has) where the definition's header (defaults, annotations, decorators) reads
    no name: then every name loaded in the walk is loaded in the body.

    Example::

        names_read_by_body(function, walk(function))  # every name its body reads
    """
    header = [node.args, *node.decorator_list, *(getattr(node, "type_params", None) or ())]
    if node.returns is not None:
        header.append(node.returns)
    if names_read_in_all(header):
        return names_read_in_all(node.body)
    return names_in(nodes, gast.Name, gast.Load)
