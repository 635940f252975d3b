"""Rewrite sugar into the few statement forms the transformer knows.

* ``x op= v`` becomes ``x = x op v`` (refused where another name shares ``x``'s array:
  see :mod:`s2sgrad.compiler.passes.aliases`);
* ``a < b < c`` becomes ``a < b and b < c``;
* ``a, b = b, a`` becomes assignments through temporaries;
* ``a = b = v`` becomes ``b = v; a = b``;
* ``dict(a=x, b=y)`` of the builtin becomes the literal ``{'a': x, 'b': y}``
  (:mod:`s2sgrad.compiler.passes.dict_calls`);
* ``d[key] = v`` of a dict this function made becomes ``d = with_entry(d, key, v)``
  (:mod:`s2sgrad.compiler.passes.dict_entries`);
* ``items.pop()`` becomes ``popped = items.pop()``, and ``v = items.pop(i)`` of a list only
  this function holds ``v = items[i]; items = without_entry(items, i)``
  (:mod:`s2sgrad.compiler.passes.list_pops`);
* NumPy calls that write into an array (``np.add.at``, ``ufunc.at``, ``np.fill_diagonal``)
  become the item assignments they are, which the transformer differentiates
  (:mod:`s2sgrad.compiler.passes.library_writes`);
* docstrings, ``pass`` and ``del name`` disappear (``del d[k]`` is refused);
* ``match`` statements become ``if``/``elif`` chains on the subject (value, singleton,
  capture, wildcard, or-, sequence (with ``*rest``), mapping and class patterns, guards);
  the patterns left (``**rest``, or-patterns binding a name to different parts, positional
  sub-patterns of a class without ``__match_args__``) are refused.
"""

from __future__ import annotations

import builtins
import collections.abc
from typing import Any

import gast

from s2sgrad import runtime
from s2sgrad.compiler.block_walks import header_nodes
from s2sgrad.compiler.function_summary import FunctionSummary
from s2sgrad.compiler.node_kinds import kinds_of
from s2sgrad.compiler.passes.aliases import (
    ListCopyRead,
    mark_list_copies,
    shared_in_place_updates,
    shared_list_changes,
)
from s2sgrad.compiler.passes.chained_middles import name_middles, repeatable
from s2sgrad.compiler.passes.dict_calls import keyword_dicts_as_literals
from s2sgrad.compiler.passes.dict_entries import dict_entry_writes
from s2sgrad.compiler.passes.library_writes import (
    along_axis_puts,
    chained_item_writes,
    diagonal_fills,
    has_call_statements,
    method_writes,
    out_writes,
    put_writes,
    scatter_adds,
    ufunc_at_writes,
)
from s2sgrad.compiler.passes.list_entries import index_list_loops
from s2sgrad.compiler.passes.list_pops import indexed_pops
from s2sgrad.compiler.passes.local_dicts import scalarize_local_dicts
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.passes.piecewise_calls import piecewise_calls
from s2sgrad.compiler.passes.rebound_names import rename_rebound_names
from s2sgrad.compiler.passes.shallow_copies import EntryOfACopy
from s2sgrad.compiler.passes.statement_forms import plain_statement_forms
from s2sgrad.compiler.passes.try_statements import straighten_try_statements
from s2sgrad.compiler.passes.tuple_item_writes import split_tuple_item_writes
from s2sgrad.compiler.passes.view_writes import write_back_views
from s2sgrad.compiler.syntax import (
    call,
    clone,
    constant,
    load,
    located,
    names_written,
    nested_statements,
    store,
    walk,
)
from s2sgrad.errors import UnsupportedError
from s2sgrad.running import IN_A_DERIVATIVE

__all__ = ["desugar", "desugar_matches"]


def desugar(
    node: gast.FunctionDef,
    names: NameGenerator,
    locate=lambda node: "<source>",
    resolve=None,
    kinds: set[type] | None = None,
    nodes: list[gast.AST] | None = None,
) -> dict[str, Any]:
    """Desugar ``node``'s body in place. Returns the names the new code calls helpers by,
    each with the object to bind it to: ``refuse_if_array`` (the run-time check of ``x op=
    v`` on an array other names may share), ``added_at`` (for ``np.add.at``) and the tests
    of a desugared ``match`` (``Sequence``, ``Mapping``, ``matches_class``), ``diagonal_index``
    (``np.fill_diagonal``) and ``unique_index`` (``np.multiply.at`` and other ufuncs).

    Example::

        desugar(parse("def f(x):\\n    x += 1\\n    return x"))  # body: x = x + 1; return x

    ``kinds``: the classes of ``node``'s nodes (``kinds_of(walk(node))``), when the caller
    knows them; ``nodes``: that walk, when the caller has it too.
    """
    straightened: dict[str, Any] = {}
    if kinds is None or gast.Try in kinds or gast.With in kinds:  # the path raising nothing
        straightened = straighten_try_statements(node, names, locate, resolve)
        kinds = None if straightened else kinds
    if (kinds is None or not kinds.isdisjoint(_STATEMENT_FORMS)) and plain_statement_forms(
        node, names
    ):
        kinds = None  # nodes of new classes
    # each pass below asks the summary first and runs only where its construct is there
    summary = _Summary(node, nodes if kinds is not None else None)
    if summary.now.rebound and rename_rebound_names(node, names):
        summary.changed()
    # no pass here writes a chained comparison: one not in the function now is in none
    chained = _refuse_hidden_writes(node, locate, set(summary.now.kinds))
    if gast.keyword in summary.now.kinds:
        keyword_dicts_as_literals(node, resolve)
        summary.changed()
    if gast.Dict in summary.now.kinds:  # name = {...}
        scalarize_local_dicts(node, names)
        summary.changed()
    bindings: dict[str, Any] = {}
    if gast.Match in summary.now.kinds:
        bindings = desugar_matches(node, names, locate, resolve)
        summary.changed()
    added_at = None
    calls_alone = summary.now.call_statements or "out" in summary.now.keywords
    if resolve is not None and calls_alone and has_call_statements(node.body):
        added_at = scatter_adds(node.body, names, resolve)  # what the five rewrite
        diagonal_fills(node.body, names, resolve, bindings)
        along_axis_puts(node.body, names, resolve, bindings)
        put_writes(node.body, names, resolve, bindings)
        ufunc_at_writes(node.body, names, resolve, bindings)
        out_writes(node.body, resolve)
        method_writes(node.body, names, locate, resolve, bindings)
        summary.changed()
    if summary.now.subscript_stores:  # a[i][j] = v
        chained_item_writes(node.body, names, locate, bindings)
        summary.changed()
    pieces = {}  # np.piecewise as item writes: its helpers, known to the sharing check
    if resolve is not None and summary.now.mentions("piecewise"):
        pieces = piecewise_calls(node.body, names, resolve)
        bindings.update(pieces)
        summary.changed()
    if gast.For in summary.now.kinds:
        index_list_loops(node, names, resolve)
        summary.changed()
    if "pop" in summary.now.attributes:
        bindings.update(indexed_pops(node, names))
        summary.changed()
    # b[:3], b[3:] = b[3:], b[:3] and rows b[i], b[j] = b[j], b[i]: in Python's order
    split: dict[str, Any] = {}
    if summary.now.subscript_stores:
        split = split_tuple_item_writes(node.body, names, locate)
        bindings.update(split)
        summary.changed()
    rewritten: list[str] = []  # the views written back (t[0] = v), if any
    views_checked = write_back_views(
        node, names, locate, _also_resolving(split, resolve), rewritten
    )
    if rewritten:
        summary.changed()
    shared = {}
    if gast.AugAssign in summary.now.kinds or summary.now.subscript_stores:  # x op= v, x[i] = v
        shared = shared_in_place_updates(
            node, locate, _also_resolving({**split, **views_checked, **pieces}, resolve)
        )
    if shared:
        mark_list_copies(node, shared)  # b += v, then a = b read: b may be a list, changed too
    if summary.now.call_statements:  # b.append(v)
        for message in shared_list_changes(node, locate, resolve).values():
            raise UnsupportedError(message)  # the tape follows Python's lists: "auto" takes it
    for statement in nested_statements(node.body) if shared else ():
        if isinstance(shared.get(id(statement)), EntryOfACopy):
            continue  # q[0] += v of a shallow copy: refused as it runs, for an array
        if id(statement) in shared and _is_item_update(statement):  # x[i] = v, x[i] += v
            # mode "auto" takes it to the tape, which follows Python's lists and dicts and a
            # write through a view of a held array (s2sgrad.tape.view_writes), else refuses;
            # not in a derivative transformed again, whose views the tape leaves alone
            error = UnsupportedError(shared[id(statement)])
            error.tape_cannot_either = IN_A_DERIVATIVE in shared[id(statement)]
            raise error
    if _may_make_dicts(summary.now, resolve):  # after: no name shares them
        bindings.update(dict_entry_writes(node, names, resolve))
    # the name of the run-time check (runtime.refuse_if_array) for x op= v
    refusal = names.claim("refuse_if_array") if shared else None
    body = node.body
    if body and _is_docstring(body[0]):
        body = body[1:]
    # what a chain's middle operands may call, asked as each chain is rewritten
    middles = _MiddleOperands(locate, resolve) if chained else None
    node.body = _block(body, names, shared, refusal, middles) or [gast.Pass()]
    helpers: dict[str, Any] = {refusal: runtime.refuse_if_array} if refusal is not None else {}
    helpers.update(bindings)
    helpers.update(views_checked)
    helpers.update(straightened)
    if added_at is not None:
        helpers[added_at] = runtime.added_at
    return helpers


class _Summary:
    """The summary of the function as it is now, made anew when asked after a pass that
    may have changed the tree (:meth:`changed`)."""

    def __init__(self, node: gast.FunctionDef, nodes: list[gast.AST] | None = None) -> None:
        self.node = node  # ``nodes``: its walk, when the caller has it
        self.made = FunctionSummary.of(node, nodes) if nodes is not None else None

    @property
    def now(self) -> FunctionSummary:
        if self.made is None:
            self.made = FunctionSummary.of(self.node)
        return self.made

    def changed(self) -> None:
        self.made = None


def _may_make_dicts(summary: FunctionSummary, resolve) -> bool:
    """Whether ``dict_entry_writes`` may find a dict made or copied here: a dict display or
    comprehension, or a call of a name that is ``dict`` (without them it finds none)."""
    if summary.has(gast.Dict, gast.DictComp):
        return True
    if resolve is None:
        return "dict" in summary.called_names
    return any(resolve(load(name)) is dict for name in summary.called_names)


def _also_resolving(helpers: dict[str, Any], resolve):
    """``resolve``, which also knows the names of ``helpers`` (bound only after desugaring)."""
    if not helpers or resolve is None:
        return resolve

    def resolved(node: gast.expr) -> Any:
        if type(node) is gast.Name and node.id in helpers:
            return helpers[node.id]
        return resolve(node)

    return resolved


def _is_item_update(statement: gast.stmt) -> bool:
    if type(statement) is gast.AugAssign:
        return type(statement.target) is gast.Subscript
    return type(statement) is gast.Assign


def desugar_matches(
    node: gast.FunctionDef, names: NameGenerator, locate, resolve=None
) -> dict[str, Any]:
    """Rewrite the ``match`` statements of ``node``'s body into ``if`` chains, in place
    (for analyses that read statements, such as the tape's check of in-place updates).
    Returns the names the tests call (``Sequence``, ``Mapping``, ``matches_class``), each
    with the object to bind it to.

    Example::

        desugar_matches(parsed.node, NameGenerator(), parsed.location, parsed.resolve)
    """
    desugarer = _MatchDesugarer(node, names, locate, resolve)
    node.body = desugarer.block(node.body)
    return desugarer.bindings


def _refuse_hidden_writes(node: gast.FunctionDef, locate, kinds: set[type] | None = None) -> bool:
    """Refuse what the transformer would not see, in one walk: an assignment expression
    (``:=``) first, then ``del d[k]`` and ``del obj.a``, which change a value in place
    (``del x`` only unbinds a name, which code that ran without error does not read again,
    and is dropped). Returns whether the function has a chained comparison (``a < b < c``).
    ``kinds``: the classes of ``node``'s nodes, when known (no walk when none is looked at)."""
    if kinds is not None and kinds.isdisjoint(_HIDDEN_WRITES):
        return False
    deleting = None
    chained = False
    nodes = walk(node)
    if kinds_of(nodes).isdisjoint(_HIDDEN_WRITES):  # the commonest case: none of them
        return False
    for child in nodes:
        kind = type(child)
        if kind is gast.Compare and len(child.ops) > 1:
            chained = True
        if kind is gast.NamedExpr:
            raise UnsupportedError(
                f"{locate(child)}: an assignment expression (:=) cannot be transformed; "
                "assign with a plain statement, or use mode='tape'"
            )
        if (
            kind is gast.Delete
            and deleting is None
            and not all(isinstance(t, gast.Name) for t in child.targets)
        ):
            deleting = child
    if deleting is not None:
        raise UnsupportedError(
            f"{locate(deleting)}: deleting an item or an attribute (del d[k]) cannot be "
            "transformed; build a new container without it, or use mode='tape'"
        )
    return chained


_HIDDEN_WRITES = (gast.Compare, gast.NamedExpr, gast.Delete)  # what the walk looks at
_STATEMENT_FORMS = (gast.NamedExpr, gast.For, gast.While)  # what statement_forms rewrites


def _in_place_guard(target: gast.expr, message: str, refusal: str, like: gast.stmt) -> gast.Expr:
    """``refuse_if_array(x, message)``: ``x += v`` must not change an array in place here
    (nor a list, when a plain copy of ``x`` is read afterwards)."""
    if isinstance(target, gast.Attribute):  # layer.W -= v: when it holds an array
        arguments = [_as_load(target), constant(str(message))]
        return _located(gast.Expr(value=call(load(refusal), arguments)), like)
    if isinstance(message, EntryOfACopy):  # q[0] += v: the entry, when q is a list or dict
        entry, container = _as_load(target), _as_load(target.value)
        arguments = [entry, constant(str(message)), constant(False), container]
        return _located(gast.Expr(value=call(load(refusal), arguments)), like)
    arguments = [load(target.id), constant(str(message))]
    if isinstance(message, ListCopyRead):
        arguments.append(constant(True))
    return _located(gast.Expr(value=call(load(refusal), arguments)), like)


def _is_docstring(statement: gast.stmt) -> bool:
    return (
        isinstance(statement, gast.Expr)
        and isinstance(statement.value, gast.Constant)
        and isinstance(statement.value.value, str)
    )


def _block(
    statements: list[gast.stmt], names: NameGenerator, shared: dict, refusal=None, chained=True
):
    result = []
    for statement in statements:
        result.extend(_statement(statement, names, shared, refusal, chained))
    return result


def _statement(
    statement: gast.stmt, names: NameGenerator, shared: dict, refusal=None, chained=True
):
    # the blocks' statements are checked in turn below (a rewrite is the same either way);
    # ``chained``: whether the function has a chained comparison at all
    if chained and any(type(n) is gast.Compare and len(n.ops) > 1 for n in header_nodes(statement)):
        resolve = chained.resolve if isinstance(chained, _MiddleOperands) else None
        before = name_middles(statement, names, resolve)  # lo < rng.uniform() < hi: one draw
        _ChainedComparisons(chained).visit(statement)
        if before:
            return [*before, *_statement(statement, names, shared, refusal, chained)]
    if isinstance(statement, (gast.Pass, gast.Delete)):  # del x: see _refuse_hidden_writes
        return []
    if isinstance(statement, gast.AugAssign):
        before = _index_calls_named(statement, names)  # y[next(it)] += v: next once
        if before:
            return [*before, *_statement(statement, names, shared, refusal, chained)]
        target_load = _as_load(statement.target)
        value = gast.BinOp(left=target_load, op=statement.op, right=statement.value)
        assign = gast.Assign(targets=[statement.target], value=value, type_comment=None)
        if id(statement) in shared:  # in place, where other names see it, if an array
            guard = _in_place_guard(statement.target, shared[id(statement)], refusal, statement)
            return [guard, _located(assign, statement)]
        return [_located(assign, statement)]
    if isinstance(statement, gast.AnnAssign):
        if statement.value is None:
            return []
        assign = gast.Assign(targets=[statement.target], value=statement.value, type_comment=None)
        return _statement(_located(assign, statement), names, shared, refusal, chained)
    if isinstance(statement, gast.Assign):
        return _assign(statement, names)
    if (
        isinstance(statement, gast.Expr)
        and isinstance(statement.value, gast.Call)
        and isinstance(statement.value.func, gast.Attribute)
        and statement.value.func.attr == "pop"
        and not statement.value.args
    ):  # items.pop() → popped = items.pop(): the reverse sweep puts the value back
        popped = gast.Assign(
            targets=[store(names.fresh("popped"))], value=statement.value, type_comment=None
        )
        return [_located(popped, statement)]
    for field in ("body", "orelse", "finalbody"):
        if isinstance(getattr(statement, field, None), list):
            inner = _block(getattr(statement, field), names, shared, refusal, chained)
            setattr(statement, field, inner)
    return [statement]


def _assign(statement: gast.Assign, names: NameGenerator) -> list[gast.stmt]:
    if len(statement.targets) > 1:
        *outer, last = statement.targets
        first = _located(
            gast.Assign(targets=[last], value=statement.value, type_comment=None), statement
        )
        rest = [
            _located(gast.Assign(targets=[t], value=_as_load(last), type_comment=None), statement)
            for t in outer
        ]
        return [s for part in [first, *rest] for s in _assign(part, names)]
    target = statement.targets[0]
    if isinstance(target, (gast.Tuple, gast.List)) and isinstance(
        statement.value, (gast.Tuple, gast.List)
    ):
        if len(target.elts) != len(statement.value.elts) or any(
            isinstance(e, gast.Starred) for e in target.elts
        ):
            return [statement]
        temps = [names.fresh("t") for _ in target.elts]
        first = [
            _located(gast.Assign(targets=[store(t)], value=value, type_comment=None), statement)
            for t, value in zip(temps, statement.value.elts)
        ]
        second = [
            _located(gast.Assign(targets=[elt], value=load(t), type_comment=None), statement)
            for t, elt in zip(temps, target.elts)
        ]
        return [s for part in first + second for s in _assign(part, names)]
    return [statement]


class _MiddleOperands:
    """Refuses a chain ``lo < f(x) < hi`` whose middle operand calls what may not run twice
    (``rng.normal()``, ``next(it)``, a helper of the user's): written as ``lo < f(x) and
    f(x) < hi`` it would run twice, and only the chains :func:`name_middles` names first
    are safe (a call without effects, run twice, gives the same value)."""

    def __init__(self, locate, resolve):
        self.locate, self.resolve = locate, resolve

    def check(self, node: gast.Compare) -> None:
        for middle in node.comparators[:-1]:
            if any(type(n) is gast.Call and not repeatable(n, self.resolve) for n in walk(middle)):
                raise UnsupportedError(
                    f"{self.locate(node)}: the middle operand of this chained comparison "
                    "calls code that may draw a random number, advance an iterator or change "
                    "state, which Python runs once; name its value first (t = ...; lo < t < "
                    "hi), or use mode='tape'"
                )


class _ChainedComparisons(gast.NodeTransformer):
    def __init__(self, middle_operands=None):
        self.middle_operands = middle_operands

    def visit_Compare(self, node: gast.Compare) -> gast.AST:
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        if isinstance(self.middle_operands, _MiddleOperands):  # not in a match's desugaring
            self.middle_operands.check(node)
        operands = [node.left, *node.comparators]
        parts = [
            gast.Compare(left=left, ops=[op], comparators=[right])
            for left, op, right in zip(operands, node.ops, operands[1:])
        ]
        return gast.copy_location(gast.BoolOp(op=gast.And(), values=parts), node)

    def visit_FunctionDef(self, node):  # nested functions keep their own sugar
        return node


def _index_calls_named(statement: gast.AugAssign, names: NameGenerator) -> list[gast.stmt]:
    """``t = next(it)`` for ``y[next(it)] += v``, whose index Python evaluates once: the
    parts of the index that call something, each assigned to a name the index then reads
    (the update reads and writes ``y[t]``; a slice's bounds one by one)."""
    target = statement.target
    if type(target) is not gast.Subscript:
        return []
    named: list[gast.stmt] = []

    def named_part(part):
        if part is None or not any(type(n) is gast.Call for n in walk(part)):
            return part
        name = names.fresh("index")
        named.append(
            _located(gast.Assign(targets=[store(name)], value=part, type_comment=None), statement)
        )
        return load(name)

    def index(node):
        if type(node) is gast.Slice:
            node.lower, node.upper, node.step = map(named_part, (node.lower, node.upper, node.step))
            return node
        if type(node) is gast.Tuple:
            node.elts = [index(e) for e in node.elts]
            return node
        return named_part(node)

    target.slice = index(target.slice)
    return named


def _as_load(target: gast.expr) -> gast.expr:
    copy = clone(target)
    for node in walk(copy):
        if isinstance(getattr(node, "ctx", None), gast.Store):
            node.ctx = gast.Load()
    return copy


def _located(new: gast.AST, old: gast.AST) -> gast.AST:
    return gast.copy_location(new, old)


# match statements -----------------------------------------------------------------------
# Built-in classes whose one positional sub-pattern matches the subject itself.
_SELF_MATCHING = (bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple)
_BUILTINS_USED = ("isinstance", "len", "hasattr", "list", "str", "bytes", "bytearray")


class _MatchDesugarer:
    """``match`` statements as ``if``/``elif`` chains with the same tests, in the same order.

    ``match p:`` / ``case [a, b] if a > 0: body`` becomes::

        if isinstance(p, Sequence) and not isinstance(p, (str, bytes, bytearray)) and \\
                len(p) == 2 and p[0] > 0:
            a = p[0]
            b = p[1]
            body

    A pattern's captures are bound at the start of its case; its guard reads the
    subject's parts in their place. ``Sequence`` and ``Mapping`` (from
    ``collections.abc``, as ``match`` uses them) and the runtime's ``matches_class`` are
    called by the names in ``bindings`` (name → object), for the caller to bind.
    """

    def __init__(self, node: gast.FunctionDef, names: NameGenerator, locate, resolve):
        self.node = node
        self.names = names
        self.locate = locate
        self.resolve = resolve
        self.bindings: dict[str, Any] = {}

    def block(self, statements: list[gast.stmt]) -> list[gast.stmt]:
        result = []
        for statement in statements:
            if isinstance(statement, gast.Match):
                result.extend(self.block(self.match(statement)))
                continue
            if not isinstance(statement, (gast.FunctionDef, gast.ClassDef)):
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(statement, field, None)
                    if isinstance(inner, list):
                        setattr(statement, field, self.block(inner))
                for handler in getattr(statement, "handlers", None) or []:
                    handler.body = self.block(handler.body)
            result.append(statement)
        return result

    def match(self, statement: gast.Match) -> list[gast.stmt]:
        self._check_builtins(statement)
        prelude = []
        subject = statement.subject
        captured = {
            n.name
            for case in statement.cases
            for n in walk(case.pattern)
            if type(n) in (gast.MatchAs, gast.MatchStar) and n.name
        }
        # evaluated once, as match does, and kept apart from the names the cases bind
        if not isinstance(subject, gast.Name) or subject.id in captured:
            name = self.names.fresh("subject")
            prelude.append(located(assign_to(name, subject), statement))
            subject = load(name)
        chain: list[gast.stmt] = []
        for case in reversed(statement.cases):
            tests, captures = self.pattern(case.pattern, subject)
            if case.guard is not None:
                tests.append(self._guard(case.guard, dict(captures)))
            body = [located(assign_to(n, clone(v)), case.pattern) for n, v in captures]
            body.extend(case.body)
            if not tests:  # irrefutable: the cases after it cannot run
                chain = body
            else:
                test = tests[0] if len(tests) == 1 else gast.BoolOp(op=gast.And(), values=tests)
                chain = [located(gast.If(test=test, body=body, orelse=chain), case.pattern)]
        return prelude + chain

    def pattern(self, pattern, subject: gast.expr) -> tuple[list[gast.expr], list]:
        """The tests ``subject`` must pass, and the ``(name, value)`` captures it binds."""
        kind = type(pattern)
        if kind is gast.MatchValue:
            return [_compare(subject, gast.Eq(), pattern.value)], []
        if kind is gast.MatchSingleton:
            return [_compare(subject, gast.Is(), constant(pattern.value))], []
        if kind is gast.MatchAs:
            tests, captures = (
                ([], []) if pattern.pattern is None else self.pattern(pattern.pattern, subject)
            )
            if pattern.name is not None:
                captures = [*captures, (pattern.name, subject)]
            return tests, captures
        if kind is gast.MatchOr:
            return self._or(pattern, subject)
        if kind is gast.MatchSequence:
            return self._sequence(pattern, subject)
        if kind is gast.MatchMapping:
            return self._mapping(pattern, subject)
        if kind is gast.MatchClass:
            return self._class(pattern, subject)
        raise self._refusal(pattern, f"a {kind.__name__} pattern", "an if statement")

    def _or(self, pattern, subject):
        """Alternatives may bind names when each binds them to the same part of the subject
        (``float(v) | np.floating(v)``)."""
        alternatives, bound = [], None
        for alternative in pattern.patterns:
            tests, captures = self.pattern(alternative, subject)
            key = sorted((name, gast.dump(value)) for name, value in captures)
            if bound is not None and key != bound[0]:
                raise self._refusal(
                    pattern,
                    "an or-pattern whose alternatives bind names to different parts",
                    "one case per alternative",
                )
            bound = bound or (key, captures)
            if not tests:
                return [], captures
            alternatives.append(_all(tests))
        return [gast.BoolOp(op=gast.Or(), values=alternatives)], bound[1]

    def _sequence(self, pattern, subject):
        items = pattern.patterns
        stars = [i for i, p in enumerate(items) if isinstance(p, gast.MatchStar)]
        is_sequence = call(load("isinstance"), [subject, load(self._bound("Sequence"))])
        text = gast.Tuple(elts=[load("str"), load("bytes"), load("bytearray")], ctx=gast.Load())
        not_text = gast.UnaryOp(op=gast.Not(), operand=call(load("isinstance"), [subject, text]))
        size = call(load("len"), [subject])
        if stars:  # [first, *rest, last]: at least the others, rest a list of the middle
            star, after = stars[0], len(items) - stars[0] - 1
            length = _compare(size, gast.GtE(), constant(len(items) - 1))
        else:
            star, after = None, 0
            length = _compare(size, gast.Eq(), constant(len(items)))
        tests, captures = [is_sequence, not_text, length], []
        for index, item in enumerate(items):
            if index == star:
                if item.name is not None:
                    end = gast.BinOp(left=clone(size), op=gast.Sub(), right=constant(after))
                    middle = gast.Slice(lower=constant(index), upper=end, step=None)
                    part = gast.Subscript(value=subject, slice=middle, ctx=gast.Load())
                    captures.append((item.name, call(load("list"), [part])))
                continue
            position = index if star is None or index < star else index - len(items)
            part = gast.Subscript(value=subject, slice=constant(position), ctx=gast.Load())
            self._add(tests, captures, self.pattern(item, part))
        return tests, captures

    def _mapping(self, pattern, subject):
        if pattern.rest is not None:
            raise self._refusal(pattern, "a **rest sub-pattern", "the keys it needs")
        tests = [call(load("isinstance"), [subject, load(self._bound("Mapping"))])]
        captures: list = []
        for key, item in zip(pattern.keys, pattern.patterns):
            tests.append(_compare(key, gast.In(), subject))
            part = gast.Subscript(value=subject, slice=key, ctx=gast.Load())
            self._add(tests, captures, self.pattern(item, part))
        return tests, captures

    def _class(self, pattern, subject):
        tests = [call(load(self._bound("matches_class")), [subject, pattern.cls])]
        captures: list = []
        positional = getattr(pattern, "patterns", None) or []
        attributes = list(getattr(pattern, "kwd_attrs", None) or [])
        sub_patterns = list(getattr(pattern, "kwd_patterns", None) or [])
        if positional:
            cls = self.resolve(pattern.cls) if self.resolve is not None else None
            names = getattr(cls, "__match_args__", None)
            self_matching = isinstance(cls, type) and issubclass(cls, _SELF_MATCHING)
            if names is None and self_matching and len(positional) == 1:
                self._add(tests, captures, self.pattern(positional[0], subject))
            else:
                if not (isinstance(names, tuple) and len(names) >= len(positional)):
                    raise self._refusal(
                        pattern,
                        "a class pattern with positional sub-patterns and no __match_args__",
                        "keyword sub-patterns (C(x=...))",
                    )
                attributes = [*names[: len(positional)], *attributes]
                sub_patterns = [*positional, *sub_patterns]
        for attribute, item in zip(attributes, sub_patterns):
            tests.append(call(load("hasattr"), [subject, constant(attribute)]))
            part = gast.Attribute(value=subject, attr=attribute, ctx=gast.Load())
            self._add(tests, captures, self.pattern(item, part))
        return tests, captures

    @staticmethod
    def _add(tests: list, captures: list, found: tuple) -> None:
        tests.extend(found[0])
        captures.extend(found[1])

    def _guard(self, guard: gast.expr, captures: dict) -> gast.expr:
        """The guard, reading each captured name's value where the name stands."""
        guard = clone(guard)
        scopes = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)
        if captures and any(isinstance(n, scopes) for n in walk(guard)):
            raise self._refusal(
                guard, "a guard with a lambda or comprehension", "an if inside the case"
            )
        if isinstance(guard, gast.Name) and guard.id in captures:
            return clone(captures[guard.id])
        for node in walk(guard):
            for field, value in gast.iter_fields(node):
                if isinstance(value, gast.Name) and value.id in captures:
                    setattr(node, field, clone(captures[value.id]))
                elif isinstance(value, list):
                    value[:] = [
                        clone(captures[v.id])
                        if isinstance(v, gast.Name) and v.id in captures
                        else v
                        for v in value
                    ]
        return guard

    def _bound(self, name: str) -> str:
        """A name for ``collections.abc.<name>`` (or a runtime helper) in the generated code."""
        obj = getattr(runtime, name, None) or getattr(collections.abc, name)
        for bound, known in self.bindings.items():
            if known is obj:
                return bound
        bound = self.names.claim(name)
        self.bindings[bound] = obj
        return bound

    def _check_builtins(self, statement: gast.Match) -> None:
        """The tests call builtins: refuse if the function's names hide one."""
        local = set()
        for inner in nested_statements(self.node.body):
            local |= names_written(inner)
        args = self.node.args
        local |= {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
        for name in _BUILTINS_USED:
            hidden = name in local or (
                self.resolve is not None
                and self.resolve(
                    gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)
                )
                is not getattr(builtins, name)
            )
            if hidden:
                raise self._refusal(
                    statement,
                    f"a match statement where {name!r} is not the builtin",
                    "another name for your " + name,
                )

    def _refusal(self, node, what: str, instead: str) -> UnsupportedError:
        return UnsupportedError(
            f"{self.locate(node)}: {what} cannot be transformed; use {instead}, or mode='tape'"
        )


def assign_to(name: str, value: gast.expr) -> gast.Assign:
    return gast.Assign(targets=[store(name)], value=value, type_comment=None)


def _compare(left: gast.expr, op: gast.cmpop, right: gast.expr) -> gast.Compare:
    return gast.Compare(left=clone(left), ops=[op], comparators=[clone(right)])


def _all(tests: list[gast.expr]) -> gast.expr:
    return tests[0] if len(tests) == 1 else gast.BoolOp(op=gast.And(), values=tests)
