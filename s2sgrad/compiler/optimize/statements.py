"""Small questions the optimiser's rewrites ask about statements and expressions.

Example::

    is_compound(parse("if c:\n    pass").body[0])  # True
"""

from __future__ import annotations

from collections import Counter
from itertools import compress

import gast

from s2sgrad.compiler.optimize.facts import simple_assignment
from s2sgrad.compiler.optimize.foldable import literal_number
from s2sgrad.compiler.optimize.simple_statements import SIMPLE_STATEMENTS
from s2sgrad.compiler.syntax import COMMENT_MARK, child_fields, names_read, string_statement, walk


def sum_length(value: gast.expr) -> int:
    """How many terms ``a + b + …`` adds (1 for anything else)."""
    length = 1
    while isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add):
        value, length = value.left, length + 1
    return length


def only_passes(statements) -> bool:
    """Whether ``statements`` are all ``pass``."""
    return all(type(s) is gast.Pass for s in statements)


def has_blocks(statement) -> bool:
    """Whether the optimiser treats ``statement``'s ``body``/``orelse`` as blocks of its own."""
    if type(statement) in SIMPLE_STATEMENTS:
        return False
    # a class body's assignments are the class's attributes, read through the class
    return not isinstance(statement, (gast.FunctionDef, gast.ClassDef)) and (
        type(getattr(statement, "body", None)) is list
        or type(getattr(statement, "orelse", None)) is list
    )


def count_names(node, reads: list[str], writes: list[str]) -> None:
    """Add the names ``node`` stores to ``writes`` and the others it names to ``reads``."""
    for child in walk(node) if isinstance(node, gast.AST) else ():
        if type(child) is gast.Name:
            (writes if isinstance(child.ctx, gast.Store) else reads).append(child.id)
    if type(node) is list:
        for item in node:
            count_names(item, reads, writes)


def value_reads(statement: gast.Assign, facts) -> set[str]:
    """``names_read(statement.value)``, from the statement's facts when that is the same."""
    if len(statement.targets) == 1 and type(statement.targets[0]) is gast.Name:
        return facts.reads
    return names_read(statement.value)


def item_target(statement):
    """(name, dumped index) of ``d[i] = …`` or ``d[i] += …``, else None."""
    if isinstance(statement, gast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
    elif isinstance(statement, gast.AugAssign) and isinstance(statement.op, gast.Add):
        target = statement.target
    else:
        return None
    if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
        return target.value.id, gast.dump(target.slice)
    return None


def is_accumulation(statement) -> bool:
    """Whether ``statement`` reads ``d = d + e`` (what merge_accumulations starts from)."""
    return accumulates(statement, simple_assignment(statement))


def accumulates(statement, target: str | None) -> bool:
    """:func:`is_accumulation`, given the name ``statement`` assigns (None: none)."""
    if target is None:
        return False
    value = statement.value
    return (
        isinstance(value, gast.BinOp)
        and isinstance(value.op, gast.Add)
        and isinstance(value.left, gast.Name)
        and value.left.id == target
    )


def is_literal(value: gast.expr) -> bool:
    """Whether ``value`` is a number or ``True``/``False`` (which propagate like names)."""
    return literal_number(value) is not None or (
        type(value) is gast.Constant and type(value.value) is bool
    )


def has_copies(facts, allowed) -> bool:
    """Whether the statements of ``facts`` (their records in the optimiser's cache) have an
    ``a = b`` or ``a = 2`` (with ``a`` in ``allowed``, if given).

    Propagation only starts from one: without, it changes nothing.
    """
    Name, Constant, UnaryOp, Call = gast.Name, gast.Constant, gast.UnaryOp, gast.Call
    for record in facts:
        target = record.assigned
        if target is not None and (allowed is None or target in allowed):
            value = record.statement.value
            kind = type(value)  # what each test below needs first, asked once
            if kind is Name:
                return True
            if kind is Constant or kind is UnaryOp:
                if is_literal(value):
                    return True
            elif kind is Call and is_constant_range(value):
                return True
    return False


def is_constant_range(value: gast.expr) -> bool:
    """Whether ``value`` is ``range(...)`` of integer literals (``range(200)``), which reads
    as well written where a loop or its backward replay iterates as bound to a name."""
    return (
        type(value) is gast.Call
        and type(value.func) is gast.Name
        and value.func.id == "range"
        and not value.keywords
        and 1 <= len(value.args) <= 3
        and all(type(a) is gast.Constant and type(a.value) is int for a in value.args)
    )


def drop_orphan_comments(body, comments):
    """``body`` without the comments (``comments[i]`` tells) that no statement of theirs
    follows (the end, another comment, or the function's ``return``)."""
    last = len(body) - 1
    orphans = [
        index
        for index in compress(range(len(body)), comments)  # the comments' positions
        if index == last or comments[index + 1] or type(body[index + 1]) is gast.Return
    ]
    if not orphans:
        return list(body)
    dropped = set(orphans)
    return [statement for index, statement in enumerate(body) if index not in dropped]


def is_comment(statement) -> bool:
    """Whether ``statement`` is a ``# grad of:`` comment marker."""
    text = string_statement(statement)
    return text is not None and text.startswith(COMMENT_MARK)


_COMPOUNDS = (gast.If, gast.For, gast.While, gast.With, gast.Try)


def is_compound(statement) -> bool:
    """Whether ``statement`` is a loop, a branch, a ``with`` or a ``try``."""
    return isinstance(statement, _COMPOUNDS)


def flat_targets(target):
    """The targets of an assignment, tuples and lists unpacked."""
    if isinstance(target, (gast.Tuple, gast.List)):
        return [e for t in target.elts for e in flat_targets(t)]
    return [target]


def node_size(node) -> int:
    """How many nodes ``node`` has, as ``syntax.walk`` counts them."""
    return sum(1 for _ in walk(node))


def top_level_reads(statement, name) -> bool:
    """The read of ``name`` is not inside a lambda or comprehension (own scope)."""
    for node in walk(statement):
        scoped = (gast.Lambda, gast.ListComp, gast.GeneratorExp, gast.SetComp)
        if isinstance(node, scoped) and name in names_read(node):
            return False
    return True


def is_shape_stand_in(node) -> bool:
    """Whether ``node`` is ``shape_only(name)`` (the helper, maybe renamed ``shape_only_1``)."""
    return (
        isinstance(node, gast.Call)
        and isinstance(node.func, gast.Name)
        and node.func.id.startswith("shape_only")
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], gast.Name)
    )


_BLOCKS = ("body", "orelse", "finalbody", "handlers")


def own_nodes(statement: gast.stmt) -> list[gast.AST]:
    """``statement`` and its nodes outside its blocks (an ``if``'s test, a loop's header).

    Example::

        own_nodes(parse_statement("if a > 0:\n    b = f(a)"))  # the If, a > 0 and its parts
    """
    found: list[gast.AST] = [statement]
    state = statement.__dict__
    for field in child_fields(type(statement)):
        if field in _BLOCKS:
            continue
        value = state.get(field)
        for item in value if type(value) is list else (value,):
            if isinstance(item, gast.AST):
                found += walk(item)
    return found


def name_counts(body: list[gast.stmt]) -> tuple[Counter, Counter]:
    """How often each name is read, and written, in ``body`` (its blocks included).

    Example::

        reads, writes = name_counts(parse("a = b + b").body)  # reads["b"] == 2
    """
    reads: Counter = Counter()
    writes: Counter = Counter()
    for node in walk(gast.Module(body=body, type_ignores=[])):
        if type(node) is gast.Name:
            (reads if type(node.ctx) is gast.Load else writes)[node.id] += 1
    return reads, writes
