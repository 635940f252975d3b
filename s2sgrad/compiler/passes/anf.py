"""A-normal form: every operand of every operation is a name or a literal.

``y = np.sin(x * 2) + b`` becomes ``t1 = x * 2; t2 = np.sin(t1); y = t2 + b``, so that
the reverse sweep can refer to every intermediate value by name. References to
functions (``np.sin``, ``np.linalg.norm``) stay as they are; a method's receiver becomes
a name (``(a + b).sum()`` → ``t1 = a + b; t1.sum()``). Expressions the transformer
treats as opaque (lambdas, comprehensions, f-strings …) are left whole.

Unpacking reads a name into a flat tuple of names (``(a, b), c = f(x)`` → ``t1 = f(x);
t2, c = t1; a, b = t2``), starred arguments and literals are spelled out where their
length is known or joined with ``+`` where not, and :func:`join_sequences` marks the
``+`` that join lists or tuples.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import types

import gast
import numpy as np

from s2sgrad import numpy_signatures
from s2sgrad.compiler.block_walks import header_writes
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.plain_values import reads_of_value
from s2sgrad.compiler.syntax import (
    assign,
    call,
    clone,
    is_atom,
    literal_keys,
    load,
    method_receiver,
    names_read,
    names_written,
    nested_statements,
    store,
    walk,
)

__all__ = [
    "AssignmentTable",
    "assignment_table",
    "to_anf",
    "is_function_reference",
    "join_sequences",
]

_OPAQUE = (
    gast.Lambda,
    gast.ListComp,
    gast.SetComp,
    gast.DictComp,
    gast.GeneratorExp,
    gast.JoinedStr,
    gast.Dict,
    gast.Set,
    gast.Await,
    gast.Yield,
    gast.YieldFrom,
    gast.NamedExpr,
)


def is_function_reference(node: gast.expr, local_names: set[str]) -> bool:
    """A name or attribute chain rooted at a name that is not a local variable."""
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name) and node.id not in local_names


def to_anf(
    node: gast.FunctionDef, names: NameGenerator, local_names: set[str], resolve=None
) -> None:
    """Rewrite ``node``'s body into A-normal form, in place.

    ``resolve(node)`` gives the object a function reference names (or NOT_FOUND): a call
    ``f(a, *v)`` of a function whose parameters fix how many values ``v`` holds becomes an
    unpacking of ``v`` and an ordinary call.

    Example::

        # def f(x): return np.sin(x * 2)   becomes
        # def f(x): t1 = x * 2; t2 = np.sin(t1); return t2
    """
    _Flattener(names, local_names, resolve).block(node.body)


class _Flattener:
    def __init__(self, names: NameGenerator, local_names: set[str], resolve=None):
        self.names = names
        self.local_names = local_names
        self.resolve = resolve

    def block(self, statements: list[gast.stmt]) -> None:
        result: list[gast.stmt] = []
        for statement in statements:
            result.extend(self.statement(statement))
        statements[:] = result

    def statement(self, statement: gast.stmt) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        self.current = statement
        if isinstance(statement, gast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, gast.Name):
                statement.value = self.simple(statement.value, out)
            elif isinstance(target, (gast.Tuple, gast.List)):
                return self.unpacking(statement, out)
            elif isinstance(target, gast.Subscript):  # Python's order: value, array, index
                statement.value = self.atom(statement.value, out)
                target.value = self.atom(target.value, out)
                target.slice = self.index(target.slice, out)
        elif isinstance(statement, gast.Return) and statement.value is not None:
            value = statement.value
            if isinstance(value, gast.Tuple):
                value.elts = [self.atom(e, out) for e in value.elts]
            else:
                statement.value = self.atom(value, out)
        elif (
            isinstance(statement, gast.Expr)
            and method_receiver(statement.value, "append") is not None
        ):  # items.append(v): the appended value gets a name of its own
            statement.value.args = [self.atom(a, out) for a in statement.value.args]
        elif isinstance(statement, gast.Expr) and _is_conditional(statement.value):
            return self.conditional_effects(statement, out)
        elif isinstance(statement, gast.If):
            statement.test = self.atom(statement.test, out)
            self.block(statement.body)
            self.block(statement.orelse)
        elif isinstance(statement, (gast.For, gast.While)):
            if isinstance(statement, gast.For):
                statement.iter = self.atom(statement.iter, out)
            self.block(statement.body)
            self.block(statement.orelse)
        elif isinstance(statement, (gast.With, gast.Try)):
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(statement, field, None), list):
                    self.block(getattr(statement, field))
        out.append(statement)
        return out

    def unpacking(self, statement: gast.Assign, out: list[gast.stmt]) -> list[gast.stmt]:
        """``(a, b), obj.c = f(x)`` → ``t1 = f(x); t2, t3 = t1; a, b = t2; obj.c = t3``.

        An unpacking reads one name and binds names only (one of them maybe starred), so
        the reverse sweep can give the value one cotangent of its own structure.
        """
        statement.value = self.atom(statement.value, out)
        target = statement.targets[0]
        if isinstance(statement.value, gast.Name) and statement.value.id in names_written(target):
            copy = self.names.fresh("t")  # v, w = v: the backward sweep reads the old v
            out.append(assign(copy, statement.value, like=statement))
            statement.value = load(copy)
        later: list[gast.stmt] = []
        elements = []
        for element in target.elts:
            starred = isinstance(element, gast.Starred)
            inner = element.value if starred else element
            if not isinstance(inner, gast.Name):
                name = self.names.fresh("t")
                later.append(assign(inner, load(name), like=statement))
                inner = store(name)
            elements.append(gast.Starred(value=inner, ctx=gast.Store()) if starred else inner)
        statement.targets = [gast.Tuple(elts=elements, ctx=gast.Store())]
        out.append(statement)
        for assignment in later:
            out.extend(self.statement(assignment))
        return out

    def atom(self, node: gast.expr, out: list[gast.stmt]) -> gast.expr:
        kind = type(node)
        if kind is _NAME or kind is _CONSTANT:  # the commonest operands: atoms already
            return node
        if is_atom(node) or isinstance(node, _OPAQUE) and not _has_name(node):
            return node
        value = self.simple(node, out)
        if is_atom(value):
            return value
        name = self.names.fresh("t")
        out.append(assign(name, value, like=self.current))
        return load(name)

    def simple(self, node: gast.expr, out: list[gast.stmt]) -> gast.expr:
        """``node`` as one operation on atoms (its operands flattened into ``out``)."""
        kind = type(node)
        if kind is _BINARY:  # the commonest, and none of the kinds asked for before it
            node.left = self.atom(node.left, out)
            node.right = self.atom(node.right, out)
            return node
        if kind is _NAME or kind is _CONSTANT:
            return node
        if isinstance(node, gast.Dict) and literal_keys(node):  # a dict of values: a pack
            node.values = [self.atom(v, out) for v in node.values]
            return node
        if is_atom(node) or isinstance(node, _OPAQUE):
            return node
        if isinstance(node, gast.IfExp):
            return self.branch(node, out)
        if isinstance(node, gast.BoolOp) and not all(map(_is_boolean, node.values)):
            return self.branch(_as_conditional(node), out)
        if isinstance(node, gast.BinOp):
            node.left = self.atom(node.left, out)
            node.right = self.atom(node.right, out)
        elif isinstance(node, gast.UnaryOp):
            node.operand = self.atom(node.operand, out)
        elif isinstance(node, gast.Compare):
            node.left = self.atom(node.left, out)
            node.comparators = [self.atom(c, out) for c in node.comparators]
        elif isinstance(node, gast.BoolOp):
            return node  # short-circuit evaluation: operands must not be hoisted
        elif isinstance(node, gast.Call):
            node.func = self.function(node.func, out)
            node.args = [self.argument(a, out) for a in node.args]
            for keyword in node.keywords:
                keyword.value = self.argument(keyword.value, out)
            self.spread(node, out)
        elif isinstance(node, gast.Attribute):
            if is_function_reference(node, self.local_names):
                return node
            node.value = self.atom(node.value, out)
        elif isinstance(node, gast.Subscript):
            if not _builds_an_array(node.value, self.local_names):
                node.value = self.atom(node.value, out)
            node.slice = self.index(node.slice, out)
        elif isinstance(node, (gast.Tuple, gast.List)):
            if any(isinstance(e, gast.Starred) for e in node.elts):
                return self.joined(node, out)
            node.elts = [self.argument(e, out) for e in node.elts]
        elif isinstance(node, gast.Starred):
            node.value = self.atom(node.value, out)
        return node

    def joined(self, node: gast.Tuple | gast.List, out: list[gast.stmt]) -> gast.expr:
        """``[a, *v, b]`` → ``[a] + list(v) + [b]`` (``tuple`` for a tuple), whose pieces the
        reverse sweep can split again."""
        kind, convert = (
            (gast.List, "list") if isinstance(node, gast.List) else (gast.Tuple, "tuple")
        )
        if self.resolve is not None and self.resolve(load(convert)) is not getattr(
            builtins, convert
        ):
            node.elts = [self.argument(e, out) for e in node.elts]
            return node  # list or tuple named something else here: left to the tape
        pieces: list[gast.expr] = []
        plain: list[gast.expr] = []
        for element in node.elts:
            if isinstance(element, gast.Starred):
                if plain:
                    pieces.append(kind(elts=plain, ctx=gast.Load()))
                    plain = []
                pieces.append(call(load(convert), [element.value]))
            else:
                plain.append(element)
        if plain:
            pieces.append(kind(elts=plain, ctx=gast.Load()))
        total = self.atom(pieces[0], out)
        for piece in pieces[1:]:
            total = self.atom(
                gast.BinOp(left=total, op=gast.Add(), right=self.atom(piece, out)), out
            )
        return total

    def spread(self, node: gast.Call, out: list[gast.stmt]) -> None:
        """``f(a, *v)`` → ``t1, t2 = v; f(a, t1, t2)`` when ``f``'s parameters say that
        ``v`` must hold two values (a ufunc's inputs, a function's positional parameters
        without defaults)."""
        starred = [i for i, a in enumerate(node.args) if isinstance(a, gast.Starred)]
        if len(starred) != 1 or self.resolve is None or node.keywords:
            return
        if not is_function_reference(node.func, self.local_names):
            return
        count = _positional_count(self.resolve(node.func)) - (len(node.args) - 1)
        if count < 1:
            return
        position = starred[0]
        parts = [self.names.fresh("t") for _ in range(count)]
        target = gast.Tuple(elts=[store(p) for p in parts], ctx=gast.Store())
        out.append(assign(target, node.args[position].value, like=self.current))
        node.args[position : position + 1] = [load(p) for p in parts]

    def conditional_effects(self, statement: gast.Expr, out: list[gast.stmt]) -> list:
        """``f(x) if c else g(x)`` or ``a or f(x)``, its value unused, → an ``if``
        statement running each branch as a statement of its own (whose effects the
        sweeps then see, as they see those of the statements a user writes)."""
        value = statement.value
        if isinstance(value, gast.BoolOp):
            value = _as_conditional(value)
        test = self.atom(value.test, out)
        blocks: list[list[gast.stmt]] = []
        for branch in (value.body, value.orelse):
            if branch is value.test or is_atom(branch):
                blocks.append([])  # nothing left to run: the test's value, a name
                continue
            blocks.append(self.statement(gast.copy_location(gast.Expr(value=branch), statement)))
        self.current = statement
        body = blocks[0] or [gast.copy_location(gast.Pass(), statement)]
        out.append(gast.copy_location(gast.If(test=test, body=body, orelse=blocks[1]), statement))
        return out

    def branch(self, node: gast.IfExp, out: list[gast.stmt]) -> gast.expr:
        """``a if c else b`` → an ``if`` statement assigning a temporary in each branch."""
        test = self.atom(node.test, out)
        name = self.names.fresh("t")
        branches = []
        for value in (node.body, node.orelse):
            block: list[gast.stmt] = []
            # a or b is a if a else b: the branch reads the test's value, not a again
            simple = clone(test) if value is node.test else self.simple(value, block)
            block.append(assign(name, simple, like=self.current))
            branches.append(block)
        out.append(
            gast.copy_location(
                gast.If(test=test, body=branches[0], orelse=branches[1]), self.current
            )
        )
        return load(name)

    def function(self, node: gast.expr, out: list[gast.stmt]) -> gast.expr:
        if is_function_reference(node, self.local_names):
            return node
        if isinstance(node, gast.Attribute):  # a method: its receiver becomes a name
            node.value = self.atom(node.value, out)
            return node
        return self.atom(node, out)

    def argument(self, node: gast.expr, out: list[gast.stmt]) -> gast.expr:
        """Call arguments keep literal tuples/lists (shapes, lists of arrays) visible."""
        kind = type(node)
        if kind is _NAME or kind is _CONSTANT:  # atoms: what ``atom`` would give
            return node
        if isinstance(node, (gast.Tuple, gast.List)):
            if any(isinstance(e, gast.Starred) for e in node.elts):
                return self.atom(node, out)
            node.elts = [self.argument(e, out) for e in node.elts]
            return node
        if isinstance(node, gast.Starred):
            node.value = self.atom(node.value, out)
            return node
        if is_function_reference(node, self.local_names) and isinstance(node, gast.Attribute):
            return node  # np.float32, np.newaxis …
        return self.atom(node, out)

    def index(self, node: gast.expr, out: list[gast.stmt]) -> gast.expr:
        if isinstance(node, gast.Slice):
            for field in ("lower", "upper", "step"):
                part = getattr(node, field)
                if part is not None:
                    setattr(node, field, self.atom(part, out))
            return node
        if isinstance(node, gast.Tuple):
            node.elts = [self.index(e, out) for e in node.elts]
            return node
        if is_function_reference(node, self.local_names) and isinstance(node, gast.Attribute):
            return node  # np.newaxis
        return self.atom(node, out)


_NAME, _CONSTANT, _BINARY = gast.Name, gast.Constant, gast.BinOp

# NumPy objects indexed to build an array (np.r_[a, b]); the transformer reads them as calls
_INDEXED_BUILDERS = {"r_", "c_", "mgrid", "ogrid", "s_", "index_exp"}


def _builds_an_array(node: gast.expr, local_names: set[str]) -> bool:
    return (
        isinstance(node, gast.Attribute)
        and node.attr in _INDEXED_BUILDERS
        and is_function_reference(node, local_names)
    )


def join_sequences(
    node: gast.FunctionDef,
    containers: set[str],
    is_builtin,
    names: NameGenerator,
    table: AssignmentTable | None = None,
) -> str | None:
    """Make ``v = a + b`` a call ``concatenated(a, b)`` where ``a`` or ``b`` surely holds a
    list or tuple (``+`` adds arrays, but joins sequences, whose derivative splits).

    ``containers`` are the parameters known to hold dicts, lists or tuples; returns the
    name the calls use (for the caller to bind to ``runtime.concatenated``), or None.
    ``table``: :func:`assignment_table` of ``node``, when the caller keeps it for
    :func:`repeated_sequences` too.

    Example::

        # layers = params[:1] + params[2:]   becomes   layers = concatenated(t1, t2)
    """
    table = assignment_table(node) if table is None else table
    sums = table.operations(gast.Add)
    sequences = _sequence_names(table, containers, is_builtin, among=_operand_names(sums))
    joins = [
        s
        for s in sums
        if any(_is_name_in(operand, sequences) for operand in (s.value.left, s.value.right))
    ]
    if not joins:
        return None
    helper = names.claim("concatenated")
    for statement in joins:
        statement.value = call(load(helper), [statement.value.left, statement.value.right])
    return helper


def repeated_sequences(
    node: gast.FunctionDef,
    containers: set[str],
    is_builtin,
    returns_sequence=None,
    varied=None,
    table: AssignmentTable | None = None,
) -> list:
    """``(statement, sequence, count)`` for each ``v = a * n`` (or ``n * a``) where ``a``
    surely holds a list or tuple: ``*`` repeats it (the caller makes it a call whose
    derivative sums the copies).

    Example::

        # ys = xs * 2   with   xs = [x, y]   ->   [(that statement, xs, 2)]

    ``returns_sequence(call)`` says whether a call surely returns a list or tuple (a
    helper of the user's whose every ``return`` is one). With ``varied`` (the names that
    vary with a differentiated value), only the sequences that read one, repeated by a
    count that reads none. ``table``: :func:`assignment_table` of ``node``, made before
    (it reads the values as they are now).
    """
    table = assignment_table(node) if table is None else table
    products = table.operations(gast.Mult)
    if varied is not None:  # the products that cannot pass the last test: not asked
        products = [s for s in products if _may_repeat(s.value, varied)]
    among = _operand_names(products)
    sequences = _sequence_names(table, containers, is_builtin, returns_sequence, among)
    found = []
    for s in products:
        left, right = s.value.left, s.value.right
        if _is_name_in(left, sequences):
            found.append((s, left, right))
        elif _is_name_in(right, sequences):
            found.append((s, right, left))
    if varied is not None:
        found = [
            (s, sequence, count)
            for s, sequence, count in found
            if not names_read(count) & varied and names_read(sequence) & varied
        ]
    return found


def _may_repeat(product: gast.BinOp, varied: set[str]) -> bool:
    """Whether ``a * n`` may repeat a varied sequence by a count that is not: one operand
    a varied name, the other reading no varied name."""
    left, right = product.left, product.right
    # a literal count (the commonest: x * 2) reads no name, without a call
    if (
        type(left) is gast.Name
        and left.id in varied
        and (type(right) is gast.Constant or not reads_of_value(right) & varied)
    ):
        return True
    if type(right) is not gast.Name or right.id not in varied:
        return False
    return type(left) is gast.Constant or not reads_of_value(left) & varied


def _operand_names(statements: list[gast.Assign]) -> set[str]:
    return {
        operand.id
        for s in statements
        for operand in (s.value.left, s.value.right)
        if type(operand) is gast.Name
    }


class AssignmentTable:
    """The statements of a function's body (its blocks' included) that the sequence
    searches read, found by one pass: ``name = value`` by name, ``v = a op b``, and the
    names written otherwise. It keeps statements, not values: the values are read when
    asked, so a table made before :func:`join_sequences` rewrites ``a + b`` still holds
    for :func:`repeated_sequences`, as long as nothing else changes the body.

    Example::

        table = assignment_table(node)
        table.operations(gast.Mult)  # the statements ``v = a * b``, in order
    """

    def __init__(self, node: gast.FunctionDef):
        arguments = node.args
        self.parameters = {
            a.id for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs
        }
        # by name, its ``name = value`` statements, and for a name a starred unpacking
        # writes, an empty list display in their place
        self.assignments: dict[str, list[gast.Assign | gast.List]] = {}
        self.named: list[gast.Assign] = []  # the ``name = value`` statements
        # ``target = a op b`` by the operator's class, each list in order
        self.binary: dict[type, list[gast.Assign]] = {}
        self.written: set[str] = set()  # names written other than by ``name = value``
        for statement in nested_statements(node.body):
            kind = type(statement)
            if kind is gast.Assign:
                if type(statement.value) is gast.BinOp:
                    self.binary.setdefault(type(statement.value.op), []).append(statement)
                if type(statement.targets[0]) is gast.Name:
                    self.assignments.setdefault(statement.targets[0].id, []).append(statement)
                    self.named.append(statement)
                    continue
            if kind is not gast.Match and isinstance(getattr(statement, "body", None), list):
                self.written |= header_writes(statement)  # its blocks' statements come in turn
                continue
            starred = {
                e.value.id
                for e in walk(statement)
                if type(e) is gast.Starred and type(e.value) is gast.Name
            }
            for name in names_written(statement):
                if name in starred and kind is gast.Assign:
                    placeholder = gast.List(elts=[], ctx=gast.Load())
                    self.assignments.setdefault(name, []).append(placeholder)
                else:
                    self.written.add(name)

    def operations(self, operator: type) -> list[gast.Assign]:
        """The statements ``v = a <operator> b``, in order, as the body is now (a pass
        may make such a value something else, as join_sequences makes ``a + b`` a call,
        never another operation)."""
        return [
            s
            for s in self.binary.get(operator, ())
            if type(s.value) is gast.BinOp and type(s.value.op) is operator
        ]

    def values(self) -> dict[str, list[gast.expr]]:
        """Each name's values as the body is now, in order (``name = value`` only)."""
        return {
            name: [e.value if type(e) is gast.Assign else e for e in entries]
            for name, entries in self.assignments.items()
        }


def assignment_table(node: gast.FunctionDef) -> AssignmentTable:
    """The :class:`AssignmentTable` of ``node``'s body."""
    return AssignmentTable(node)


def _sequence_names(
    table: AssignmentTable, containers: set[str], is_builtin, returns_sequence=None, among=None
) -> set[str]:
    """The variables of ``among`` (every one, if None) every assignment of which gives a
    list or tuple (a greatest fixed point, so that ``items = items + [v]`` in a loop
    counts); ``table``: the function's :class:`AssignmentTable`."""
    values = _Values(table)
    unknown = (table.parameters - set(containers)) | table.written
    sequences = (table.assignments.keys() | set(containers)) - unknown
    if among is not None:  # only the names theirs can depend on
        never = functools.partial(_never_sequence, is_builtin=is_builtin, calls=returns_sequence)
        sequences = _reached(among & sequences, values, sequences, never)
    sequences = _fixed_point(sequences, values, is_builtin, returns_sequence)
    if sequences:  # a walrus in a value binds its name too (a walk of each: only now)
        assigned = [statement.value for statement in table.named]
        walrus = set().union(*map(names_written, assigned))
        if not walrus.isdisjoint(sequences):
            sequences = _fixed_point(sequences - walrus, values, is_builtin, returns_sequence)
    return sequences if among is None else sequences & among


class _Values:
    """:meth:`AssignmentTable.values`, each name's list made when it is first asked for:
    the searches read the values of a few names, most often none (a straight-line
    function's products and sums rarely involve a list)."""

    def __init__(self, table: AssignmentTable):
        self.assignments = table.assignments
        self.made: dict[str, list[gast.expr]] = {}

    def get(self, name: str, default=()) -> list | tuple:
        found = self.made.get(name)
        if found is None:
            entries = self.assignments.get(name)
            if entries is None:
                return default
            found = self.made[name] = [e.value if type(e) is gast.Assign else e for e in entries]
        return found


def _fixed_point(sequences: set[str], values: _Values, is_builtin, returns_sequence) -> set[str]:
    """The greatest subset of ``sequences`` every value of whose names makes a sequence
    (a worklist: a name is looked at again only when one its values read is dropped)."""
    sequences = set(sequences)
    readers: dict[str, list[str]] = {}
    for name in sequences:
        for value in values.get(name, ()):
            for read in _names_followed(value):
                readers.setdefault(read, []).append(name)
    pending = list(sequences)
    while pending:
        name = pending.pop()
        if name in sequences and not all(
            _makes_sequence(v, sequences, is_builtin, returns_sequence)
            for v in values.get(name, ())
        ):
            sequences.discard(name)
            pending += readers.get(name, ())
    return sequences


def _names_followed(value: gast.expr) -> list[str]:
    """The names whose being sequences :func:`_makes_sequence` of ``value`` reads."""
    kind = type(value)
    if kind is gast.Name:
        return [value.id]
    if kind is gast.Subscript and type(value.slice) is gast.Slice:
        parts = [value.value]
    elif kind is gast.BinOp and type(value.op) is gast.Add:
        parts = [value.left, value.right]
    else:
        return []
    return [part.id for part in parts if type(part) is gast.Name]


def _reached(names: set[str], values: _Values, allowed: set[str], never) -> set[str]:
    """The names of ``names`` and of ``allowed`` whose being sequences theirs depends on
    (:func:`_makes_sequence` reads them), transitively, but for those with a value that
    makes no sequence whatever the others are (``never(value)``: :func:`_never_sequence`)."""
    reached: set[str] = set()
    rejected: set[str] = set()  # names with such a value: each asked once
    assignments = values.assignments  # read here without making the lists of values
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in reached or name in rejected:
            continue
        found = [e.value if type(e) is gast.Assign else e for e in assignments.get(name, ())]
        for value in found:
            # arithmetic but + (the commonest value) makes none: _never_sequence's first
            # answer, without a call
            if type(value.op) is not gast.Add if type(value) is _BINARY else never(value):
                rejected.add(name)
                break
        else:
            reached.add(name)
            for value in found:
                pending += [read for read in _names_followed(value) if read in allowed]
    return reached


def _never_sequence(value: gast.expr, is_builtin, calls=None) -> bool:
    """Whether :func:`_makes_sequence` is false for ``value`` whichever names are sequences
    (``calls``: its ``returns_sequence``, if any; a call's answer depends on no name's, so
    it is asked here, which keeps ``y = np.sin(x)`` and the names it reads out of the
    fixed point)."""
    kind = type(value)
    if kind is gast.BinOp:
        return type(value.op) is not gast.Add
    if kind is gast.Call:
        if calls is not None:  # what a call makes reads no name's answer: asked now
            return not _makes_sequence(value, set(), is_builtin, calls)
        func = value.func
        return not (type(func) is gast.Name and func.id in _SEQUENCE_BUILTINS)
    if kind is gast.Subscript:
        return type(value.slice) is not gast.Slice
    return kind not in (gast.Name, gast.List, gast.Tuple)


_SEQUENCE_BUILTINS = ("list", "tuple", "sorted")


def _makes_sequence(
    value: gast.expr, sequences: set[str], is_builtin, returns_sequence=None
) -> bool:
    if type(value) in (gast.List, gast.Tuple):
        return True
    if type(value) is gast.Name:
        return value.id in sequences
    if type(value) is gast.Subscript:
        return type(value.slice) is gast.Slice and _is_name_in(value.value, sequences)
    if type(value) is gast.BinOp and type(value.op) is gast.Add:
        return _is_name_in(value.left, sequences) or _is_name_in(value.right, sequences)
    if type(value) is gast.Call and type(value.func) is gast.Name:
        name = value.func.id
        if name in _SEQUENCE_BUILTINS and is_builtin(name):
            return True
    if type(value) is gast.Call and returns_sequence is not None:
        return returns_sequence(value)
    return False


def _is_name_in(node: gast.expr, names: set[str]) -> bool:
    return type(node) is gast.Name and node.id in names


def _positional_count(function) -> int:
    """How many positional arguments every call of ``function`` passes (0: not fixed)."""
    if isinstance(function, np.ufunc):
        return function.nin
    if not isinstance(function, types.FunctionType):
        return 0
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    count = 0
    for parameter in numpy_signatures.signature(function).parameters.values():
        if parameter.kind == inspect.Parameter.VAR_POSITIONAL:
            return 0
        if parameter.kind in kinds:
            if parameter.default is not inspect.Parameter.empty:
                return 0
            count += 1
    return count


def _is_boolean(node: gast.expr) -> bool:
    """An operand of ``and``/``or`` whose value is a truth value, not an array to keep."""
    if isinstance(node, (gast.Compare, gast.Constant)):
        return True
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not):
        return True
    return isinstance(node, gast.BoolOp) and all(map(_is_boolean, node.values))


def _is_conditional(node: gast.expr) -> bool:
    """``a if c else b``, or ``a or b`` / ``a and b`` of values: evaluated in part."""
    kind = type(node)
    return kind is gast.IfExp or (kind is gast.BoolOp and not all(map(_is_boolean, node.values)))


def _as_conditional(node: gast.BoolOp) -> gast.IfExp:
    """``a or b`` → ``a if a else b``; ``a and b`` → ``b if a else a`` (``a`` evaluated once)."""
    first, *rest = node.values
    second = rest[0] if len(rest) == 1 else gast.BoolOp(op=node.op, values=rest)
    if isinstance(node.op, gast.Or):
        return gast.IfExp(test=first, body=first, orelse=second)
    return gast.IfExp(test=first, body=second, orelse=first)


def _has_name(node: gast.AST) -> bool:
    return any(isinstance(n, gast.Name) for n in walk(node))
