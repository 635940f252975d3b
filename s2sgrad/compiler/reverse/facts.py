"""What reverse mode reads off the normal form before it writes anything.

Plain functions of the statements: how often a name is bound on one path, which names
loops write, which lists and arrays are changed in place, which variables hold Python
lists, integers or containers, which entries of a literal are read, which indices cannot
repeat an element. The sweeps consult these facts (kept on :class:`Context`); none of them
writes code.
"""

from __future__ import annotations

from collections import Counter

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.annotations import RANGE_LOOP, SYNCED, annotation
from s2sgrad.compiler.frontend import parse_function
from s2sgrad.compiler.operations import OperationKind
from s2sgrad.compiler.passes.aliases import fresh_result
from s2sgrad.compiler.passes.sharing import returns_fresh
from s2sgrad.compiler.plain_values import plain_reads, writes_nothing, written_by
from s2sgrad.compiler.syntax import (
    is_integer_arithmetic,
    item_target_base,
    method_receiver,
    names_read,
    names_written,
    nested_statements,
    walk,
)
from s2sgrad.rules.registry import is_declared_several
from s2sgrad.runtime.records import record_fields

__all__ = [
    "plain_reads",
    "writes_nothing",
    "written_by",
    "statements_within",
    "write_counts",
    "names_written_in_loops",
    "mutated_base",
    "mutated_names",
    "fresh_names",
    "list_names",
    "maybe_structured",
    "entries_read",
    "integer_names",
    "range_targets",
    "basic_index",
    "indexed_by_counters",
    "iteration_local",
    "breaks",
    "target_names",
    "popped_list",
    "reads",
]


def statements_within(statements, nested: list | None = None):
    """``nested`` if given, else the statements of ``statements`` and of the blocks nested
    in them (:func:`nested_statements`): facts read off one function take the list made
    once, as ``list(nested_statements(statements))``.

    Example::

        nested = list(nested_statements(statements))
        mutated_names(statements, nested) == mutated_names(statements)  # True
    """
    return nested if nested is not None else nested_statements(statements)


def target_names(target: gast.expr) -> list[str]:
    """The names a target binds: one, or (A-normal form) a flat tuple of them, one maybe
    starred."""
    if isinstance(target, gast.Name):
        return [target.id]
    if not isinstance(target, (gast.Tuple, gast.List)):  # an attribute or an item
        return []
    elements = [e.value if isinstance(e, gast.Starred) else e for e in target.elts]
    return [e.id for e in elements if isinstance(e, gast.Name)]


def write_counts(statements) -> Counter:
    """How many times a path through ``statements`` may bind each name: two bindings in
    one arm of a branch overwrite as much as two side by side (``parts = []`` twice in an
    ``if`` lost the first list, whose items the backward sweep reads); the two arms of a
    branch count as one path each."""
    counts: Counter = Counter()
    for statement in statements:
        kind = type(statement)
        if kind is gast.Assign and len(statement.targets) == 1:  # the commonest first
            target = statement.targets[0]
            if type(target) is gast.Name and writes_nothing(statement.value):
                name = target.id  # written_by's one name, counted without a set
                counts[name] = counts.get(name, 0) + 1
            else:
                counts.update(names_written(statement))
        elif kind is gast.If:
            counts.update(names_written(statement.test))
            counts.update(write_counts(statement.body) | write_counts(statement.orelse))
        elif kind is gast.For or kind is gast.While:
            header = statement.target if kind is gast.For else statement.test
            counts.update(names_written(header))
            counts.update(write_counts(statement.body))
            counts.update(write_counts(statement.orelse))
        else:
            counts.update(written_by(statement))
    return counts


def names_written_in_loops(statements, nested: list | None = None) -> set[str]:
    """The names the loops of ``statements`` write (``nested``: all their statements, as
    :func:`statements_within` lists them, when the caller has them)."""
    result = set()
    for statement in statements_within(statements, nested):
        if isinstance(statement, (gast.For, gast.While)):
            for inner in statement.body:
                result |= names_written(inner)
            result |= names_written(statement.target) if isinstance(statement, gast.For) else set()
    return result


def mutated_base(statement) -> str | None:
    if isinstance(statement, gast.Assign):
        return item_target_base(statement)
    if isinstance(statement, gast.Expr):
        return method_receiver(statement.value, "append") or method_receiver(statement.value, "pop")
    return None


def mutated_names(statements, nested: list | None = None) -> set[str]:
    return {b for s in statements_within(statements, nested) if (b := mutated_base(s)) is not None}


def fresh_names(statements, parsed, local_names, nested: list | None = None) -> set[str]:
    """Names every assignment of which creates a new array or list, or passes on the value
    of another such name (``t = new; u = t``: buffers swapped between time steps)."""
    verdict: dict[str, bool] = {}
    copies: dict[str, set[str]] = {}
    for statement in statements_within(statements, nested):
        if not (isinstance(statement, gast.Assign) and isinstance(statement.targets[0], gast.Name)):
            continue
        name, value = statement.targets[0].id, statement.value
        if annotation(statement, SYNCED):
            verdict.setdefault(name, True)  # an entry of a list of new arrays, stored back
            continue
        if isinstance(value, gast.Name):
            copies.setdefault(name, set()).add(value.id)
            verdict.setdefault(name, True)
            continue
        verdict[name] = verdict.get(name, True) and _creates_new(value, parsed, local_names)
    fresh = {n for n, made in verdict.items() if made}
    changed = True
    while changed:  # a copy of a name that is not always new is not always new
        spoiled = {n for n in fresh if not copies.get(n, set()) <= fresh}
        fresh -= spoiled
        changed = bool(spoiled)
    return fresh


def _creates_new(value: gast.expr, parsed, local_names) -> bool:
    if isinstance(value, (gast.List, gast.BinOp, gast.UnaryOp)):
        return True
    if isinstance(value, gast.Call):
        func = value.func
        if isinstance(func, gast.Attribute) and func.attr == "copy":
            return True
        if isinstance(func, gast.Name) and func.id == "list":
            return True
        target = (
            parsed.resolve(func)
            if not (
                isinstance(func, gast.Attribute)
                and isinstance(func.value, gast.Name)
                and func.value.id in local_names
            )
            else None
        )
        name = getattr(target, "__name__", "")
        module = getattr(target, "__module__", "") or ""
        if module.startswith("s2sgrad.runtime"):  # generated code differentiated again
            return name in (
                "owned",
                "owned_argument",
                "owned_items",
                "owned_tangent",
                "zeros_like_value",
                "zeros_like_structure",
                "snapshot",
                "shape_only",
                "without_entry",
            )
        return fresh_result(target, value) or returns_fresh(target)  # a helper's own array
    return False


def list_names(statements, nested: list | None = None) -> set[str]:
    """Variables that hold Python lists or tuples made here, or copies of them (their
    cotangents are lists too); in a gradient differentiated again, a list's cotangent
    taken with ``owned_items``."""
    result = set()
    copies = []
    for statement in statements_within(statements, nested):
        if isinstance(statement, gast.Assign) and isinstance(statement.targets[0], gast.Name):
            value = statement.value
            is_list = isinstance(value, gast.List) or (
                isinstance(value, gast.Call)
                and isinstance(value.func, gast.Name)
                and value.func.id in ("list", "tuple", "owned_items")
            )
            if is_list:
                result.add(statement.targets[0].id)
            elif isinstance(value, gast.Name):
                copies.append((statement.targets[0].id, value.id))
    grown = True
    while grown:
        grown = False
        for copy, source in copies:
            if source in result and copy not in result:
                result.add(copy)
                grown = True
    return result


_STRUCTURED_RESULTS = frozenset(
    map(id, (runtime.for_items, runtime.concatenated, list, tuple, runtime.dict_keys))
)


def maybe_structured(
    statements, known: set[str], parameters, operations, nested: list | None = None
) -> set[str]:
    """Variables that may hold lists, tuples or dicts (``known`` do): their cotangents are
    added with ``add_cotangents`` (``+`` on them is not differentiable again), never
    updated in place. Too many is safe: ``add_cotangents`` of arrays is ``+``.

    Besides ``known``: literals, slices and entries of such variables, what ``for_items``,
    ``list``, ``tuple`` and ``concatenated`` return (``for_items`` of an array argument
    aside), every unpacked value, and starred targets; and what holds such entries or
    entries that are unpacked (a helper's ``params`` in ``W, b = params[-1]``: a list when
    the caller passes one, which the helper's code cannot tell).
    """
    result = set(known)
    assignments = [
        s
        for s in statements_within(statements, nested)
        if type(s) is gast.Assign and type(s.targets[0]) in _NAME_OR_TUPLE
    ]
    arrays = parameters - known  # the other differentiated arguments
    slices = {
        s.targets[0].id: s.value
        for s in assignments
        if type(s.value) is gast.Subscript
        and type(s.value.slice) is gast.Slice
        and type(s.targets[0]) is gast.Name
    }
    # what each statement adds whatever the others do, and the links "if a may hold
    # entries, so may b" the rest adds: the result is what the links reach from the first
    # (each statement asked once, not once per round until nothing changes)
    found: set[str] = set()
    links: dict[str, list[str]] = {}
    for statement in assignments:
        target, value = statement.targets[0], statement.value
        kind = type(value)
        if type(target) is gast.Tuple:  # the value, and a starred name (a list)
            if kind is gast.Name:
                found.add(value.id)
            found |= {e.value.id for e in target.elts if type(e) is gast.Starred}
            if kind is gast.Subscript and type(value.value) is gast.Name:
                found.add(value.value.id)  # what holds entries that are unpacked
        elif kind is gast.Name:  # y = x: a copy
            links.setdefault(value.id, []).append(target.id)
            continue  # nor does _parameter_holding find anything in a name or an item
        elif kind is gast.Subscript:
            if type(value.value) is gast.Name:  # an entry of x, and what holds y's
                base = value.value.id
                links.setdefault(base, []).append(target.id)
                links.setdefault(target.id, []).append(base)
            continue
        elif kind is gast.Constant or kind is gast.BinOp:  # numbers, or arithmetic
            continue
        elif _structured_value(statement, result, arrays, operations):  # no name it reads
            found.add(target.id)
        if kind is gast.Call and type(value.func) is gast.Name and value.func.id in parameters:
            found.add(value.func.id)  # a differentiated argument called: a function (from a
            # list the caller differentiates), whose cotangent is None, which + cannot add
        if kind is gast.Call or kind is gast.Attribute:
            held = _parameter_holding(statement, parameters, operations, slices)
            if held is not None:  # the caller may pass a list or a named tuple, which
                found.add(held)  # f(*args) tells no one
    result |= found
    pending = list(result)
    while pending:
        for reached in links.get(pending.pop(), ()):
            if reached not in result:
                result.add(reached)
                pending.append(reached)
    return result


_NAME_OR_TUPLE = (gast.Name, gast.Tuple)
_ARRAY_ATTRIBUTES = frozenset(dir(np.ndarray))


def _parameter_holding(statement, parameters, operations, slices: dict) -> str | None:
    """The parameter ``statement`` iterates (``for_items(xs)``, or a slice of it) or reads a
    field of (``p.W``, not an array's ``x.T``), if any: it holds values. ``slices``: the
    names bound to a slice of something (``t1 = params[:-1]``), by name."""
    value = statement.value
    if isinstance(value, gast.Attribute):
        base = value.value
        if isinstance(base, gast.Name) and base.id in parameters:
            return None if value.attr in _ARRAY_ATTRIBUTES else base.id
        return None
    if not isinstance(value, gast.Call):
        return None
    operation = operations.of(statement)
    if operation.primitive is not runtime.for_items or not operation.args:
        return None
    argument = operation.args[0]
    seen = set()
    while True:  # for_items(params[:-1]), or t1 = params[:-1]; for_items(t1): params holds them
        if isinstance(argument, gast.Name) and argument.id in slices and argument.id not in seen:
            seen.add(argument.id)  # xs = xs[1:] binds a name to a slice of itself
            argument = slices[argument.id]
        elif isinstance(argument, gast.Subscript) and isinstance(argument.slice, gast.Slice):
            argument = argument.value
        else:
            break
    if isinstance(argument, gast.Name) and argument.id in parameters:
        return argument.id
    return None


# NumPy functions returning a tuple or list of arrays: a name bound to one's result whose
# cotangent gathers several parts (saved twice, read by entries) adds them entry by entry
_SEVERAL_RESULTS = frozenset(
    id(f)
    for f in (
        np.linalg.eig,
        np.linalg.eigh,
        np.linalg.svd,
        np.linalg.slogdet,
        np.linalg.qr,
        np.linalg.lstsq,
        np.split,
        np.array_split,
        np.hsplit,
        np.vsplit,
        np.dsplit,
        np.meshgrid,
        np.broadcast_arrays,
        np.ix_,
        np.histogram,
        getattr(np, "unstack", None),
    )
    if f is not None
)


def _returns_several(primitive) -> bool:
    if isinstance(primitive, np.ufunc):
        return primitive.nout > 1  # np.modf, np.frexp, np.divmod
    return id(primitive) in _SEVERAL_RESULTS or is_declared_several(primitive)


_CONTAINERS = (gast.Tuple, gast.List, gast.Dict, gast.ListComp, gast.DictComp)


def _returns_tuples(function) -> bool:
    """Whether every ``return`` of a user function (read from its source) gives a tuple,
    list or dict: a literal (``return value, flag``), a comprehension, or a name the
    function binds only to those (``parts = []`` then ``parts.append(...)``); False when
    its source cannot be read."""
    try:
        node = parse_function(function).node
    except Exception:  # no source, or source the transformer cannot read
        return False
    statements = list(nested_statements(node.body))
    returns = [n for n in statements if isinstance(n, gast.Return)]
    containers: dict[str, bool] = {}  # name -> whether every binding is a container literal
    for statement in statements:
        if isinstance(statement, gast.Assign):
            for target in statement.targets:
                for bound in walk(target):
                    if type(bound) is gast.Name and type(bound.ctx) is gast.Store:
                        literal = target is bound and isinstance(statement.value, _CONTAINERS)
                        containers[bound.id] = containers.get(bound.id, True) and literal
        else:
            for bound in names_written(statement):
                containers[bound] = False

    def container(value) -> bool:
        if isinstance(value, _CONTAINERS):
            return True
        return type(value) is gast.Name and containers.get(value.id, False)

    return bool(returns) and all(container(r.value) for r in returns)


def _structured_value(statement, structured, arrays, operations) -> bool:
    value = statement.value
    if isinstance(value, (gast.List, gast.Tuple, gast.Dict)):
        return True
    if isinstance(value, gast.Name):
        return value.id in structured
    if isinstance(value, gast.Subscript):
        return isinstance(value.value, gast.Name) and value.value.id in structured
    if isinstance(value, gast.Call):
        operation = operations.of(statement)
        if _returns_several(operation.primitive):  # np.modf(x): two arrays
            return True
        if operation.kind is OperationKind.CALL and _returns_tuples(operation.primitive):
            return True  # a helper's return (value, flag)
        if record_fields(operation.primitive) is not None:  # an object made of its
            return True  # arguments (runtime/records.py): its cotangent by attribute, or a list
        if id(operation.primitive) not in _STRUCTURED_RESULTS:
            return False
        argument = operation.args[0] if operation.args else None
        over_array = isinstance(argument, gast.Name) and argument.id in arrays
        return not (operation.primitive is runtime.for_items and over_array)
    return False


def entries_read(body: list[gast.stmt]) -> dict[str, set]:
    """For each name read only as ``name[literal]`` (a tuple, list or dict built here, say),
    the literals; names read any other way (passed on, iterated, updated) are left out."""
    entries = {}
    read: dict[str, set] = {}
    other_uses = set()
    name, subscript, store = gast.Name, gast.Subscript, gast.Store
    for statement in body:
        names = []
        for node in walk(statement):
            kind = type(node)
            if kind is name:
                if type(node.ctx) is not store:
                    names.append(node)
            elif (
                kind is subscript
                and type(node.ctx) is gast.Load
                and type(node.value) is name
                and type(node.slice) is gast.Constant
                and type(node.slice.value) in (int, str)
                and (type(node.slice.value) is str or node.slice.value >= 0)
            ):
                entries[id(node.value)] = node.slice.value
        for node in names:
            if id(node) in entries:
                read.setdefault(node.id, set()).add(entries[id(node)])
            else:
                other_uses.add(node.id)
    return {name: keys for name, keys in read.items() if name not in other_uses}


def integer_names(statements, nested: list | None = None) -> set[str]:
    """Variables that only ever hold Python integers: ``range`` loop counters, and integer
    arithmetic of them and of literals (``t = i + 1``) that is their only binding."""
    bindings: dict[str, list] = {}
    for statement in statements_within(statements, nested):
        kind = type(statement)
        if kind is gast.Assign and len(statement.targets) == 1:
            if type(statement.targets[0]) is gast.Name:
                bindings.setdefault(statement.targets[0].id, []).append(statement.value)
        elif kind is gast.For and range_targets(statement) and type(statement.target) is gast.Name:
            bindings.setdefault(statement.target.id, []).append(None)  # None: a counter
    # the names found among candidates are among those found among all bindings: when
    # none of those is, no store needs counting (straight-line code has no integers)
    if not _integer_fixed_point(bindings):
        return set()
    stores = Counter(
        n.id
        for statement in statements
        for n in walk(statement)
        if type(n) is gast.Name and type(n.ctx) is gast.Store
    )
    return _integer_fixed_point(
        {n: values for n, values in bindings.items() if stores[n] == len(values)}
    )


def _integer_fixed_point(candidates: dict[str, list]) -> set[str]:
    """The candidates all of whose values are integer arithmetic of literals and of the
    candidates found (None: a ``range`` counter), found until no more are."""
    found: set[str] = set()
    while True:
        more = {
            n
            for n, values in candidates.items()
            if n not in found and all(v is None or is_integer_arithmetic(v, found) for v in values)
        }
        if not more:
            return found
        found |= more


def range_targets(loop) -> set[str]:
    if isinstance(loop, gast.For) and annotation(loop, RANGE_LOOP, False):
        return set(names_written(loop.target))
    return set()


def basic_index(index: gast.expr, counters: set[str]) -> bool:
    """An index made of integer literals, loop counters, slices, None and ``...`` only."""
    if isinstance(index, gast.Tuple):
        return all(basic_index(e, counters) for e in index.elts)
    if isinstance(index, gast.Slice):
        return all(
            p is None or basic_index(p, counters) for p in (index.lower, index.upper, index.step)
        )
    if isinstance(index, gast.Constant):
        return type(index.value) is int or index.value is None or index.value is Ellipsis
    if isinstance(index, gast.UnaryOp) and isinstance(index.operand, gast.Constant):
        return type(index.operand.value) is int
    return isinstance(index, gast.Name) and index.id in counters


def indexed_by_counters(body, counters: set[str]) -> set[str]:
    """Arrays a loop body reads at basic indices (candidates for in-place accumulation)."""
    found = set()
    for node in nested_statements(body):
        if (
            isinstance(node, gast.Assign)
            and isinstance(node.value, gast.Subscript)
            and isinstance(node.value.value, gast.Name)
            and basic_index(node.value.slice, counters)
        ):
            found.add(node.value.value.id)
    return found


def popped_list(statement) -> str | None:
    """The list ``v = items.pop()`` pops from, or None."""
    value = statement.value
    if method_receiver(value, "pop") is not None and not value.args:
        return value.func.value.id
    return None


def iteration_local(body: list[gast.stmt], read_elsewhere: frozenset = frozenset()) -> set[str]:
    """Variables one pass over ``body`` assigns before it reads them, used nowhere else.

    Inside an ``if``, a variable is local to a branch when that branch assigns it before
    reading it and nothing outside the branch reads it.

    Example::

        iteration_local(loop.body, frozenset(read_after_the_loop))  # {'t'} for t = x * 2
    """
    return _IterationLocal().block(body, read_elsewhere)


class _ReadElsewhere:
    """Whether a name is read outside one block: outside the statement holding it (the
    block around counts the statements reading each name), in what that statement reads
    beside the block (an ``if``'s test and other branch, a loop's header), or outside the
    block around. Asked per name, so no set of every name read outside is ever built."""

    __slots__ = ("around", "beside", "counts", "own")

    def __init__(self, around, counts: Counter, own: set[str], beside: set[str]):
        self.around, self.counts, self.own, self.beside = around, counts, own, beside

    def __contains__(self, name: str) -> bool:
        return name in self.beside or self.counts[name] > (name in self.own) or name in self.around


class _IterationLocal:
    """``iteration_local`` reading each statement once: the names a compound statement reads
    are the union of its parts' (kept per statement), and whether a name is read outside a
    branch is answered by counting, not by reading every other statement again for each
    ``if`` (which made a loop body of n ``if`` statements cost n²)."""

    def __init__(self):
        self.known: dict[int, tuple[gast.stmt, set[str]]] = {}

    def reads(self, statement: gast.stmt) -> set[str]:
        """``names_read(statement)``, each nested statement read once."""
        known = self.known.get(id(statement))
        if known is not None and known[0] is statement:
            return known[1]
        if isinstance(statement, gast.If):
            found = names_read(statement.test) | self.reads_in(statement.body)
            found |= self.reads_in(statement.orelse)
        elif isinstance(statement, gast.For):
            found = names_read(statement.target) | names_read(statement.iter)
            found |= self.reads_in(statement.body) | self.reads_in(statement.orelse)
        elif isinstance(statement, gast.While):
            found = names_read(statement.test) | self.reads_in(statement.body)
            found |= self.reads_in(statement.orelse)
        else:
            found = names_read(statement)
        self.known[id(statement)] = (statement, found)
        return found

    def reads_in(self, statements: list[gast.stmt]) -> set[str]:
        return set().union(*(self.reads(s) for s in statements))

    def block(self, body: list[gast.stmt], read_elsewhere) -> set[str]:
        reads = [self.reads(statement) for statement in body]
        counts: Counter = Counter()
        for found in reads:
            counts.update(found)
        seen_reads: set[str] = set()
        local: set[str] = set()
        for index, statement in enumerate(body):
            if isinstance(statement, gast.Assign) and isinstance(
                statement.targets[0], (gast.Name, gast.Tuple)
            ):
                seen_reads |= names_read(statement.value)
                for name in names_written(statement.targets[0]):
                    if name not in seen_reads and name not in read_elsewhere:
                        local.add(name)
            elif isinstance(statement, gast.If):
                test = names_read(statement.test)
                for branch, other in (
                    (statement.body, statement.orelse),
                    (statement.orelse, statement.body),
                ):
                    beside = self.reads_in(other) | test
                    elsewhere = _ReadElsewhere(read_elsewhere, counts, reads[index], beside)
                    local |= self.block(branch, elsewhere) - seen_reads
                seen_reads |= reads[index]
            elif isinstance(statement, (gast.For, gast.While)) and not statement.orelse:
                # a variable local to each pass of a nested loop, read nowhere else, is local
                # to this pass too (the nested loop may run no pass: then nobody reads it)
                header = _header_reads(statement)
                elsewhere = _ReadElsewhere(read_elsewhere, counts, reads[index], header)
                local |= self.block(statement.body, elsewhere) - seen_reads
                seen_reads |= reads[index]
                seen_reads |= names_written(statement)
            else:
                seen_reads |= reads[index]
                seen_reads |= names_written(statement)  # conditional writes are not definite
        return local


def _header_reads(loop) -> set[str]:
    """What a loop's header reads and (a ``for``) writes: its test, or its sequence and
    target."""
    if isinstance(loop, gast.While):
        return names_read(loop.test)
    return names_read(loop.iter) | names_written(loop.target)


def breaks(body) -> bool:
    for statement in body:
        if isinstance(statement, gast.Break):
            return True
        if isinstance(statement, (gast.For, gast.While, gast.FunctionDef)):
            continue
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and breaks(inner):
                return True
    return False


def reads(node: gast.AST, name: str) -> bool:
    return any(isinstance(n, gast.Name) and n.id == name for n in walk(node))
