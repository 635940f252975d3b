"""Common-subexpression elimination of pure calls: ``t2 = np.exp(z)`` after
``t1 = np.exp(z)`` becomes ``t2 = t1`` (copy propagation then drops it).

Only what is surely the same value is merged:

* the value is a call that ``is_pure`` proves free of side effects (NumPy's functions and
  array methods; never ``np.random``), with no ``out=``, of names and literals only;
* both statements are in one straight-line block, and no statement between them rebinds
  a name the call reads, rebinds the first target, or may write into any array in place
  (an item or attribute store, ``+=``, a mutating method, a call whose result is dropped,
  ``out=``, or any call that is not pure): such a statement empties the table;
* neither result, nor any value that may share its memory (a copy of the name, a part of
  it, a view NumPy may return), is ever written in place anywhere in the function: the two
  names become one array.

Example::

    body = eliminate_common_calls(parse("a = np.exp(z)\\nb = np.exp(z)").body, is_pure)
    # a = np.exp(z); b = a
"""

from __future__ import annotations

from collections.abc import Callable

import gast

from s2sgrad.compiler.optimize.facts import Facts, FactsCache
from s2sgrad.compiler.optimize.simple_statements import SIMPLE_STATEMENTS, without_blocks
from s2sgrad.compiler.optimize.statements import own_nodes
from s2sgrad.compiler.syntax import (
    MUTATING_METHODS,
    names_read,
    names_written,
    nested_statements,
)

__all__ = ["dumped_structure", "eliminate_common_calls"]

# Calls and operators whose result is a new array (never a view of an operand).
_FRESH_VALUES = (gast.BinOp, gast.UnaryOp, gast.Compare, gast.Constant)
_BLOCKS = ("body", "orelse", "finalbody")
_FRESH_METHODS = {"sum", "mean", "prod", "max", "min", "std", "var", "dot", "copy", "cumsum"}


def eliminate_common_calls(
    body: list[gast.stmt],
    is_pure: Callable[[gast.Call], bool],
    facts: FactsCache | None = None,
) -> list[gast.stmt]:
    """Replace repeated pure calls in ``body`` by a copy of the first result, in place.
    ``facts``, when given, is true of ``body``'s statements: what they read and call is
    read off their records where that is what a walk would find.

    Example::

        eliminate_common_calls(node.body, purity_of(namespace))
    """
    repeated = _may_repeat(body)  # a cheap look first: most code repeats no call
    if not repeated:
        return body
    records = None
    if facts is not None and facts.enabled and without_blocks(body):
        records = facts.of_each(body)
    effects: dict[int, tuple[gast.stmt, set[str], bool]] = {}  # see _written_in_place
    written_in_place = _written_in_place(body, is_pure, effects, records)
    unsafe = _sharing_memory(body, written_in_place, records)
    _block(body, is_pure, unsafe, effects, repeated, records, facts)
    return body


def _may_repeat(body: list[gast.stmt]) -> dict[int, gast.Call]:
    """The calls that two assignments in ``body`` may both assign, by id: those whose
    rough key another one shares (a key equal wherever :func:`_candidate`'s keys are, so
    no other call can be merged with one, or be merged into it). Empty when none is."""
    first: dict[tuple, gast.Call] = {}  # rough key -> the first call with it
    repeated: dict[int, gast.Call] = {}
    for statement in body if without_blocks(body) else nested_statements(body):
        if not _plain_assignment(statement):
            continue
        value = statement.value
        if type(value) is not gast.Call or type(value.func) is not gast.Attribute:
            continue
        key = (
            value.func.attr,
            _rough(value.func.value),
            tuple(map(_rough, value.args)),
            tuple((k.arg, _rough(k.value)) for k in value.keywords),
        )
        earlier = first.setdefault(key, value)
        if earlier is not value:
            repeated[id(earlier)] = earlier
            repeated[id(value)] = value
    return repeated


def _rough(node: gast.expr) -> object:
    """A name's name, a literal's value, else the node's kind: equal for equal nodes."""
    kind = type(node)
    if kind is gast.Name:
        return node.id
    if kind is gast.Constant:
        return (type(node.value), repr(node.value))  # as gast.dump tells them apart
    return kind


def _block(
    statements: list[gast.stmt],
    is_pure,
    unsafe: set[str],
    effects: dict,
    repeated: dict[int, gast.Call],
    records=None,
    kept: FactsCache | None = None,
) -> bool:
    """Merge the repeated calls of one block (``records``: the facts of its statements, or
    None), then of the blocks inside it; whether any statement was replaced. ``kept``,
    the facts of the function's body, forgets each statement whose blocks changed; only a
    call of ``repeated`` (:func:`_may_repeat`) is looked at as a candidate."""
    changed = False
    seen: dict[object, tuple[str, set[str]]] = {}  # dumped call → (first target, names read)
    keys_of: dict[str, set[object]] = {}  # name → keys in ``seen`` whose entry mentions it
    for index, statement in enumerate(statements):
        for field in () if type(statement) in SIMPLE_STATEMENTS else _BLOCKS:
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and _block(inner, is_pure, unsafe, effects, repeated):
                changed = True
                if kept is not None:
                    kept.forget_all(statement)
        if not _plain_assignment(statement) or _may_write_in_place(statement, is_pure, effects):
            seen.clear()
            keys_of.clear()
            continue
        target = statement.targets[0].id
        value = statement.value
        key = (
            _candidate(value, is_pure)
            if target not in unsafe and repeated.get(id(value)) is value
            else None
        )
        earlier = seen.get(key) if key is not None else None
        if earlier is not None and earlier[0] != target:
            statements[index] = _copy_of(statement, earlier[0])
            changed = True
        for other in keys_of.pop(target, ()):  # what the new binding changes
            entry = seen.get(other)
            if entry is not None and (target == entry[0] or target in entry[1]):
                del seen[other]
        if key is not None and earlier is None:
            reads = _value_reads(statement, records[index] if records is not None else None)
            if target not in reads:
                seen[key] = (target, reads)
                for name in (target, *reads):
                    keys_of.setdefault(name, set()).add(key)
    return changed


def _plain_assignment(statement: gast.stmt) -> bool:
    return (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
    )


def _candidate(value: gast.expr, is_pure) -> object | None:
    """The key of a call that may be merged with an identical one, or None."""
    # a function of a module or a method (np.exp, t.sum): not a runtime helper or pullback
    if type(value) is not gast.Call or type(value.func) is not gast.Attribute:
        return None
    if not is_pure(value):
        return None
    if any(k.arg == "out" or k.arg is None for k in value.keywords):
        return None
    operands = [*value.args, *(k.value for k in value.keywords)]
    if not all(_simple_operand(a) for a in operands):
        return None
    return dumped_structure(value)


def dumped_structure(node: object) -> object:
    """What ``gast.dump(node)`` shows of ``node``, as nested tuples, without the text: two
    of them are equal where the dumps are (each field by its class, its fields in order,
    and ``repr`` of what is not a node), and made a few times quicker.

    Example::

        key = dumped_structure(parse_expression("np.exp(z)"))
        key == dumped_structure(parse_expression("np.exp(z)"))  # True
    """
    if isinstance(node, gast.AST):
        return (
            type(node).__name__,
            *[dumped_structure(getattr(node, f, _ABSENT)) for f in node._fields],
        )
    if isinstance(node, list):
        return (_LIST, *map(dumped_structure, node))
    if node is _ABSENT:
        return node
    return repr(node)


_ABSENT = object()  # a field the node lacks
_LIST = object()  # what a list's tuple starts with, unlike a node's (its class's name)


def _simple_operand(node: gast.expr) -> bool:
    if type(node) in (gast.Name, gast.Constant):
        return True
    if type(node) is gast.Tuple:
        return all(_simple_operand(e) for e in node.elts)
    return type(node) is gast.UnaryOp and type(node.operand) is gast.Constant


def _copy_of(statement: gast.Assign, source: str) -> gast.Assign:
    value = gast.Name(source, gast.Load(), None, None)
    copy = gast.Assign(targets=statement.targets, value=value, type_comment=None)
    return gast.copy_location(copy, statement)


def _may_write_in_place(statement: gast.stmt, is_pure, effects: dict) -> bool:
    """Whether ``statement`` may change an array in place (judged without its blocks);
    ``effects`` holds what :func:`_written_in_place` found of it."""
    if type(statement) in (gast.AugAssign, gast.Expr, gast.Delete):
        return True
    if type(statement) is gast.Assign and type(statement.targets[0]) is not gast.Name:
        return True
    known = effects.get(id(statement))
    if known is None or known[0] is not statement:
        known = (statement, *_effects(statement, is_pure))
    return bool(known[1]) or known[2]


def _effects(statement: gast.stmt, is_pure) -> tuple[set[str], bool]:
    """Names ``statement`` (outside its blocks) may write into in place, and whether it
    calls what is not pure there."""
    found: set[str] = set()
    impure = False
    if type(statement) is gast.AugAssign:
        found |= names_read(statement.target) | names_written(statement.target)
    for node in own_nodes(statement):
        kind = type(node)
        if kind in (gast.Subscript, gast.Attribute) and type(node.ctx) is gast.Store:
            found |= names_read(node.value)
        elif kind is gast.Call:
            func = node.func
            mutating = isinstance(func, gast.Attribute) and func.attr in MUTATING_METHODS
            if mutating:
                found |= names_read(func.value)
            pure = is_pure(node)
            impure = impure or not pure
            if mutating or not pure or any(k.arg == "out" for k in node.keywords):
                found |= names_read(node)
    if type(statement) is gast.Expr:
        found |= names_read(statement.value)
    return found, impure


def _written_in_place(body: list[gast.stmt], is_pure, effects: dict, records=None) -> set[str]:
    """Names any statement may write into in place; ``effects`` gets each statement's
    ``(statement, those names, whether it calls what is not pure)``, by id. ``records``,
    when given, are the facts of ``body``'s statements (a body without blocks)."""
    found: set[str] = set()
    if records is not None:
        for record in records:
            statement = record.statement
            if _writes_nothing_in_place(record, is_pure):
                effects[id(statement)] = (statement, set(), False)
                continue
            names, impure = _effects(statement, is_pure)
            effects[id(statement)] = (statement, names, impure)
            found |= names
        return found
    for statement in nested_statements(body):
        names, impure = _effects(statement, is_pure)
        effects[id(statement)] = (statement, names, impure)
        found |= names
    return found


def _writes_nothing_in_place(record: Facts, is_pure) -> bool:
    """Whether :func:`_effects` of ``record.statement``, ``name = value``, finds nothing:
    no item or attribute is a target in it (the value's comprehensions included), and
    each call in it (``record.calls``: every one, as ``own_nodes`` walks every one of an
    assignment) is pure, no mutating method and without ``out=``."""
    if record.assigned is None or record.stores_items:
        return False
    for call in record.calls:
        func = call.func
        if type(func) is gast.Attribute and func.attr in MUTATING_METHODS:
            return False
        if not is_pure(call) or any(k.arg == "out" for k in call.keywords):
            return False
    return True


def _value_reads(statement: gast.Assign, record: Facts | None) -> set[str]:
    """``names_read(statement.value)``, from ``statement``'s facts when that is what they
    hold (``name = value``, no annotation: its reads are the value's)."""
    if record is not None and record.assigned is not None and not record.annotated:
        return record.reads
    return names_read(statement.value)


def _sharing_memory(body: list[gast.stmt], written: set[str], records=None) -> set[str]:
    """Names whose value may share memory with a name in ``written`` (those included);
    ``records``, when given, are the facts of ``body``'s statements (without blocks)."""
    flows: dict[str, set[str]] = {}  # name → names whose value may share memory with it
    pairs = zip(body, records) if records is not None else _without_records(body)
    for statement, record in pairs:
        if type(statement) is gast.Assign:
            if _fresh(statement.value):
                continue
            target = record.assigned if record is not None else None
            targets = {target} if target is not None else names_written(statement.targets[0])
            reads = _value_reads(statement, record)
        elif type(statement) is gast.For:
            if _fresh(statement.iter):
                continue
            targets, reads = names_written(statement.target), names_read(statement.iter)
        else:
            continue
        for source in reads:  # both ways: a view's source and its other views
            flows.setdefault(source, set()).update(targets)
            for target in targets:
                flows.setdefault(target, set()).add(source)
    unsafe = set(written)
    pending = list(written)
    while pending:
        name = pending.pop()
        for other in flows.get(name, set()) - unsafe:
            unsafe.add(other)
            pending.append(other)
    return unsafe


def _without_records(body: list[gast.stmt]):
    for statement in nested_statements(body):
        yield statement, None


def _fresh(value: gast.expr) -> bool:
    """Whether ``value`` surely makes a new object, sharing no memory with its operands."""
    if isinstance(value, _FRESH_VALUES):
        return True
    if type(value) is gast.Call and isinstance(value.func, gast.Attribute):
        return value.func.attr in _FRESH_METHODS and not value.keywords
    return False
