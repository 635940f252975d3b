"""Broadcasts that broadcasting restores: ``np.broadcast_to(c, S) * e`` is ``c * e`` when
``e`` already has the shape ``S``, and ``d = np.broadcast_to(e, S)`` is ``d = e`` when every
use of ``d`` broadcasts it back.

The probe looks only at the arithmetic that :func:`quiet_arithmetic` does not set aside;
what it saw is kept on each operation (``BROADCAST_FREE``) so that stripping can run again after
folding brings broadcasts next to full arrays (:func:`strip_broadcasts_in`).
"""

from __future__ import annotations

import copy
from collections import Counter
from itertools import chain
from operator import attrgetter
from typing import NamedTuple

import gast

from s2sgrad import runtime
from s2sgrad.compiler.annotations import BROADCAST_FREE, annotate, annotation
from s2sgrad.compiler.optimize.facts import FactsCache
from s2sgrad.compiler.optimize.simple_statements import SIMPLE_STATEMENTS
from s2sgrad.compiler.optimize.views import views_of_updated_arrays
from s2sgrad.compiler.specialize.interpreted import CHECKED, FRAME_READERS
from s2sgrad.compiler.specialize.seen import Seen
from s2sgrad.compiler.syntax import clone, node_fields, walk

__all__ = [
    "ARITHMETIC",
    "RawFacts",
    "gather_facts",
    "holds_broadcast_calls",
    "near_broadcasts",
    "note_facts",
    "quiet_arithmetic",
    "raw_facts",
    "resolve",
    "strip_broadcast_definitions",
    "strip_broadcasts_in",
    "without_broadcasts",
]

ARITHMETIC = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/"}


def quiet_arithmetic(
    assignments: list[gast.Assign], arithmetic: list[gast.BinOp], namespace: dict
) -> set[int]:
    """The ids of the operations of ``arithmetic`` (the ``+ - * /`` of a function, whose
    assignments to a name are ``assignments``, best in the code's order, as
    ``probe_copy.copy_with_facts`` lists them) that broadcast stripping cannot concern.

    It could where a ``broadcast_to``/``expand_dims`` call, or a name whose value may be
    one, is reached through elementwise arithmetic or through helpers that specialisation
    may turn into their first argument (``unbroadcast``); the primal's arithmetic, and
    most of the rest, never needs probing.
    """
    reached: dict[int, tuple[bool, set[str]]] = {}  # by id of an operation assigned
    made = []  # (name, whether its value may be a broadcast, the names it is made from)
    for node in assignments:
        reach = reached[id(node.value)] = _elementwise_reach(node.value, namespace)
        made.append((node.targets[0].id, *reach))
    near = near_broadcasts(made)
    quiet = set()
    for node in arithmetic:
        found = reached.get(id(node))
        broadcast, names = _elementwise_reach(node, namespace) if found is None else found
        if not broadcast and names.isdisjoint(near):
            quiet.add(id(node))
    return quiet


def near_broadcasts(made: list[tuple[str, bool, set[str]]]) -> set[str]:
    """The names whose value may be a broadcast: the least set holding each name made
    (``made``: name, whether its value may be a broadcast, the names it is made from) from
    a broadcast or from one of the set. Passes over ``made`` in the code's order find most
    of it in one pass (and a second one finds nothing more); a few more passes serve
    loops; what is still growing then is finished by following each name to its users.

    Example::

        near_broadcasts([("a", False, {"b"}), ("b", True, set())])  # {"a", "b"}
    """
    near: set[str] = set()
    for _ in range(4):
        growing = False
        for target, broadcast, names in made:
            if target not in near and (broadcast or not names.isdisjoint(near)):
                near.add(target)
                growing = True
        if not growing:
            return near
    users: dict[str, set[str]] = {}  # name -> the names whose values are made from it
    for target, _, names in made:
        for name in names:
            users.setdefault(name, set()).add(target)
    pending = list(near)
    while pending:
        for user in users.get(pending.pop(), ()):
            if user not in near:
                near.add(user)
                pending.append(user)
    return near


class RawFacts(NamedTuple):
    """What the probe needs to know of the raw code's nodes (:func:`raw_facts`)."""

    assignments: list[gast.Assign]  # to a name
    arithmetic: list[gast.BinOp]  # + - * /
    subscripts: list[gast.Subscript]
    calls: list[gast.Call]
    kinds: set[type]  # of every node but names and literals (``interpreted.py``)
    # of kinds ``interpreted.CHECKED``, assignments to other than a name, and what reads
    # a builtin that reads its caller's frame (``locals()``)
    checked: list[gast.AST]
    bound: set[str]  # the names assigned to: the first targets of ``assignments``


def raw_facts(function: gast.AST) -> RawFacts:
    """The assignments to a name, the ``+ - * /`` operations, the subscripts and the calls
    in ``function``, and what decides whether its probe may be interpreted, found by one
    walk that skips names and literals (only parameters' names hold more: annotations)."""
    facts = RawFacts([], [], [], [], set(), [], set())
    gather_facts(facts, [function])
    return facts


def gather_facts(facts: RawFacts, roots: list) -> None:
    """Add to ``facts`` what :func:`raw_facts` finds in each of ``roots``."""
    pending = list(roots)
    while pending:
        node = pending.pop()
        kind = type(node)
        note_facts(facts, node, kind)
        skipped = _NAMES_AND_LITERALS if kind is not gast.arguments else _LITERALS
        state = node.__dict__
        for field in node_fields(kind):
            value = state.get(field)
            if type(value) is list:
                pending += [item for item in value if type(item) not in skipped]
            elif type(value) not in skipped:
                pending.append(value)


def note_facts(facts: RawFacts, node: gast.AST, kind: type) -> None:
    """Add to ``facts`` what :func:`raw_facts` notes of ``node`` itself (of kind ``kind``)."""
    facts.kinds.add(kind)
    if kind is gast.Call:
        facts.calls.append(node)
        if type(node.func) is gast.Name and node.func.id in FRAME_READERS:
            facts.checked.append(node)
    elif kind is gast.Assign:
        targets = node.targets
        if type(targets[0]) is gast.Name:
            facts.assignments.append(node)
            facts.bound.add(targets[0].id)
        value = node.value
        if (
            len(targets) != 1
            or type(targets[0]) is not gast.Name
            or (type(value) is gast.Name and value.id in FRAME_READERS)
        ):
            facts.checked.append(node)
    elif kind is gast.BinOp and type(node.op) in ARITHMETIC:
        facts.arithmetic.append(node)
    elif kind is gast.Subscript:
        facts.subscripts.append(node)
    elif kind in CHECKED:
        facts.checked.append(node)


_LITERALS = frozenset({type(None), str, bytes, int, float, bool, complex, type(Ellipsis)})


_NAMES_AND_LITERALS = _LITERALS | {gast.Name, gast.Constant}


def _elementwise_reach(expression: gast.expr, namespace: dict) -> tuple[bool, set[str]]:
    """Whether ``expression`` reaches a ``broadcast_to``/``expand_dims`` call through
    elementwise arithmetic (and helpers that may become their first argument), and the
    names it reaches that way."""
    names: set[str] = set()
    broadcast = False
    pending = [expression]
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is gast.Name:
            names.add(node.id)
        elif kind is gast.BinOp:
            pending += (node.left, node.right)
        elif kind is gast.UnaryOp:
            pending.append(node.operand)
        elif kind is gast.Call:
            func = node.func
            if type(func) is gast.Attribute and func.attr in ("broadcast_to", "expand_dims"):
                broadcast = True
            elif node.args and id(resolve(func, namespace)) in _PASS_THROUGH:
                pending.append(node.args[0])
    return broadcast, names


# helpers that specialisation may replace by their first argument
_PASS_THROUGH = frozenset(map(id, (runtime.unbroadcast, runtime.as_gradient, runtime.owned)))


def without_broadcasts(binop: gast.BinOp, left: Seen, right: Seen, result: Seen) -> gast.BinOp:
    """``np.broadcast_to(c, S) * e`` is ``c * e`` when ``e`` already has the shape ``S``."""
    sides = [
        side
        for side, other in (("left", right), ("right", left))
        if other.kind == "array" and other.shape == result.shape
    ]
    if len(sides) == 2:  # each side restores the other's shape, so only one may lose it
        sides = (
            ["right"]
            if _reaches_broadcast(binop.right) and not _reaches_broadcast(binop.left)
            else ["left"]
        )
    annotate(binop, BROADCAST_FREE, sides)  # kept so that later folding can strip again
    _strip_sides(binop)
    return binop


def strip_broadcasts_in(node: gast.AST) -> bool:
    """Apply the broadcast stripping recorded on BinOps inside ``node``, in place.

    Returns whether any ``broadcast_to`` call was removed.
    """
    changed = False
    for binop in _marked_operations(node):
        changed |= _strip_sides(binop)
    return changed


def holds_broadcast_calls(function: gast.FunctionDef, facts: FactsCache) -> bool:
    """Whether ``function`` may hold a ``broadcast_to`` or ``expand_dims`` call, the calls
    :func:`strip_broadcasts_in` strips (without one it changes nothing), told from
    ``facts``, true of its body's statements (their ``calls``), and a walk of its other
    fields (True when the cache keeps no record).

    Example::

        if holds_broadcast_calls(function, facts):
            strip_broadcasts_in(function)
    """
    if not facts.enabled:  # each record would be a walk of its own
        return True
    calls = chain.from_iterable(map(attrgetter("calls"), facts.of_each(function.body)))
    outside = copy.copy(function)  # the function without its body: a shallow copy
    outside.body = []
    calls = chain(calls, (node for node in walk(outside) if type(node) is gast.Call))
    return any(
        type(call.func) is gast.Attribute and call.func.attr in _STRIPPED_CALLS for call in calls
    )


_STRIPPED_CALLS = frozenset({"broadcast_to", "expand_dims"})


def _marked_operations(root: gast.AST) -> list[gast.BinOp]:
    """The operations inside ``root`` marked with sides to strip (all found before any is
    stripped), by a walk that skips names and literals (only parameters' names hold more)."""
    found = []
    pending = [root]
    while pending:
        node = pending.pop()
        kind = type(node)
        state = node.__dict__
        if kind is gast.BinOp and state.get(BROADCAST_FREE):
            found.append(node)
        skipped = _NAMES_AND_LITERALS if kind is not gast.arguments else _LITERALS
        for field in node_fields(kind):
            value = state.get(field)
            if type(value) is list:
                pending += [item for item in value if type(item) not in skipped]
            elif type(value) not in skipped:
                pending.append(value)
    return found


def _strip_sides(binop: gast.BinOp) -> bool:
    removed = False
    for side in annotation(binop, BROADCAST_FREE):
        stripped, removed_here = _strip_broadcasts(getattr(binop, side))
        setattr(binop, side, stripped)
        removed |= removed_here
    return removed


def _is_number(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        node = node.operand
    return isinstance(node, gast.Constant) and type(node.value) in (int, float)


def _strip_broadcasts(node: gast.expr) -> tuple[gast.expr, bool]:
    """Drop broadcast_to calls inside an elementwise expression that broadcasting restores.

    Returns the expression and whether a ``broadcast_to`` call was removed.
    """
    if _is_broadcast_call(node):
        return _strip_broadcasts(node.args[0])[0], True
    removed = False
    if (
        isinstance(node, gast.Call)
        and isinstance(node.func, gast.Attribute)
        and node.func.attr == "expand_dims"
        and node.args
    ):  # expand_dims of a number is the number, as far as broadcasting is concerned
        inner, removed = _strip_broadcasts(clone(node.args[0]))
        if _is_number(inner):
            return inner, True
        # else the broadcast stays: expand_dims needs its rank (of a 0-d array, axis 1 fails)
        return node, False
    if isinstance(node, gast.BinOp) and type(node.op) in ARITHMETIC:
        node.left, removed_left = _strip_broadcasts(node.left)
        node.right, removed_right = _strip_broadcasts(node.right)
        removed = removed_left or removed_right
    elif isinstance(node, gast.UnaryOp):
        node.operand, removed = _strip_broadcasts(node.operand)
    return node, removed


def strip_broadcast_definitions(function: gast.FunctionDef) -> FactsCache | None:
    """``d = np.broadcast_to(e, S)`` becomes ``d = e`` when every use broadcasts ``d`` back.

    A use is broadcast back when it is reached through elementwise arithmetic from an
    operand whose partner has the full shape, directly or through names that are
    themselves only used that way.

    The names are counted from the optimiser's facts of ``function.body``'s statements
    (one walk of each), which are returned, true of the code as it is now, for the
    optimiser to start from (None when it must walk them itself).

    Example::

        facts = strip_broadcast_definitions(function)  # then optimize(body, pure, facts)
    """
    if not _defines_a_broadcast(function.body):  # nothing to strip
        return None
    primed = FactsCache()
    operations: list[gast.BinOp] = []
    primed.prime(function.body, operations)
    facts = primed if primed.enabled else None
    if facts is not None:
        names = _names_from_facts(function, facts, operations)
    else:  # two statements share a node: the facts are not kept, count by a walk
        names = _Names()
        names.walk([function])
    settled = _settled(names)
    changed = []
    for name in settled:
        definition = names.definitions.get(name)
        if definition is not None and _is_broadcast_call(definition.value):
            definition.value = definition.value.args[0]
            changed.append(definition)
    if facts is not None and changed:
        top = set(map(id, function.body))
        if not all(id(definition) in top for definition in changed):
            return None  # a loop or branch holding one would have to be forgotten too
        # ``d = e`` may make ``d`` a view of an array written in place (with none written
        # in place, as the targets, which stay, told the cache: no view matters)
        if facts.updated and views_of_updated_arrays(function.body) != facts.sharing:
            return None
        for definition in changed:
            facts.forget(definition)
    return facts


class _Names:
    """How often each name is read and written, the reads of each that broadcasting
    restores (by id of the ``Name``), and the assignment to each name (the last found)."""

    def __init__(self):
        self.reads: dict[str, int] = {}
        self.writes: dict[str, int] = {}
        self.restored: dict[str, set[int]] = {}
        self.definitions: dict[str, gast.Assign] = {}

    def note_operation(self, binop: gast.BinOp) -> None:
        """Count the reads of a marked operation (``BROADCAST_FREE``) as restored."""
        restored, state = self.restored, binop.__dict__
        for side in state.get(BROADCAST_FREE) or ():
            for leaf in _elementwise_leaves(state[side]):
                restored.setdefault(leaf.id, set()).add(id(leaf))

    def walk(self, pending: list) -> None:
        """Count the names in the nodes of ``pending``, and what they hold."""
        reads, writes, definitions = self.reads, self.writes, self.definitions
        pop, push = pending.pop, pending.append
        name_kind, binop_kind, assign_kind, store = gast.Name, gast.BinOp, gast.Assign, gast.Store
        skipped = _LITERALS | {gast.Constant}  # a literal holds no name
        while pending:
            node = pop()
            kind = type(node)
            state = node.__dict__
            if kind is binop_kind:
                self.note_operation(node)
            elif kind is assign_kind and type(node.targets[0]) is name_kind:
                definitions[node.targets[0].id] = node
            for field in node_fields(kind):
                value = state.get(field)
                if type(value) is not list:
                    value = (value,)
                for item in value:
                    item_kind = type(item)
                    if item_kind is name_kind:
                        table = writes if type(item.ctx) is store else reads
                        name = item.id
                        table[name] = table.get(name, 0) + 1
                        if item.annotation is not None:
                            push(item.annotation)
                    elif item_kind not in skipped:
                        push(item)


def _names_from_facts(
    function: gast.FunctionDef, facts: FactsCache, operations: list[gast.BinOp]
) -> _Names:
    """What :meth:`_Names.walk` counts in ``function``, read from the facts of its body's
    statements (``operations``: every ``BinOp`` their walks met) and from a walk of its
    other fields (parameters, decorators, annotations).

    The definitions are the assignments to a name among the body's statements, and inside
    those that hold others (blocks, nested functions): only those of names written once are
    ever looked at (see :func:`_settled`), and such a name has one assignment, wherever
    it is found from."""
    names = _Names()
    records = facts.of_each(function.body)
    reads = Counter(chain.from_iterable(map(attrgetter("loads"), records)))
    # ``del`` and parameters of functions inside count as reads, as the walk counts them
    reads.update(chain.from_iterable(map(attrgetter("others"), records)))
    names.reads.update(reads)
    names.writes.update(Counter(chain.from_iterable(map(attrgetter("stores"), records))))
    definitions = names.definitions
    for node in operations:
        if BROADCAST_FREE in node.__dict__:
            names.note_operation(node)
    assign_kind, name_kind = gast.Assign, gast.Name
    for statement in function.body:
        kind = type(statement)
        if kind is assign_kind:  # a simple statement holds no other
            if type(statement.targets[0]) is name_kind:
                definitions[statement.targets[0].id] = statement
        elif kind not in SIMPLE_STATEMENTS:
            for node in walk(statement):
                if type(node) is assign_kind and type(node.targets[0]) is name_kind:
                    definitions[node.targets[0].id] = node
    outside = copy.copy(function)  # the function without its body: a shallow copy
    outside.body = []
    names.walk([outside])
    return names


def _settled(names: _Names) -> set[str]:
    """The names broadcasting restores every read of, written once: a name is settled
    once all its reads are restored, which makes the names of its definition candidates
    again (a worklist, each name looked at when its restored reads grow)."""
    reads, writes, restored = names.reads, names.writes, names.restored
    settled: set[str] = set()
    candidates = list(restored)
    while candidates:
        name = candidates.pop()
        uses = restored[name]
        if name in settled or len(uses) != reads.get(name, 0) or writes.get(name) != 1:
            continue
        settled.add(name)
        definition = names.definitions.get(name)
        if definition is not None:
            value = definition.value
            value = value.args[0] if _is_broadcast_call(value) else value
            for leaf in _elementwise_leaves(value):
                restored.setdefault(leaf.id, set()).add(id(leaf))
                candidates.append(leaf.id)
    return settled


def _defines_a_broadcast(statements: list[gast.stmt]) -> bool:
    """Whether any of the statements ``syntax.every_statement`` lists assigns a
    ``broadcast_to`` call: looked for among statements alone, up to the first found."""
    pending = list(statements)
    while pending:
        statement = pending.pop()
        kind = type(statement)
        if kind is gast.Assign and _is_broadcast_call(statement.value):
            return True
        if kind in SIMPLE_STATEMENTS:  # no block to look into
            continue
        state = statement.__dict__
        for field in _BLOCK_FIELDS:
            inner = state.get(field)
            if type(inner) is list:
                pending += inner
    return False


_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")  # as every_statement's


def _elementwise_leaves(node) -> list[gast.Name]:
    """The names reached from ``node`` through elementwise arithmetic only."""
    if type(node) is gast.Name:
        return [node]
    if type(node) is gast.BinOp and type(node.op) in ARITHMETIC:
        return _elementwise_leaves(node.left) + _elementwise_leaves(node.right)
    if type(node) is gast.UnaryOp:
        return _elementwise_leaves(node.operand)
    return []


def _reaches_broadcast(node) -> bool:
    """Whether a ``broadcast_to`` call is reached from ``node`` through elementwise
    arithmetic (what stripping that side would remove)."""
    if _is_broadcast_call(node):
        return True
    if type(node) is gast.BinOp and type(node.op) in ARITHMETIC:
        return _reaches_broadcast(node.left) or _reaches_broadcast(node.right)
    if type(node) is gast.UnaryOp:
        return _reaches_broadcast(node.operand)
    return False


def _is_broadcast_call(node) -> bool:
    return (
        isinstance(node, gast.Call)
        and isinstance(node.func, gast.Attribute)
        and node.func.attr == "broadcast_to"
        and len(node.args) == 2
        and not node.keywords
    )


def resolve(func: gast.expr, namespace: dict):
    """The object a function reference names in ``namespace`` (``np.sum`` → ``numpy.sum``),
    or None."""
    if isinstance(func, gast.Name):
        return namespace.get(func.id)
    if isinstance(func, gast.Attribute):
        base = resolve(func.value, namespace)
        return getattr(base, func.attr, None) if base is not None else None
    return None
