"""Give every ``for`` loop one shape: ``for i in range(...)`` with explicit element reads.

``for row in X`` becomes ``for i in range(len(X)): row = X[i]``; ``enumerate``, ``zip``
and ``reversed`` become index arithmetic the same way. The reverse sweep can then run any
loop backwards by running its ``range`` backwards, storing nothing per iteration for the
loop variable. Comprehensions that build lists become loops that append
(:mod:`.comprehensions`). First, the local functions and partials the body only calls are
inlined (:mod:`.inline_locals`), and again afterwards where ``map(f, xs)`` became a loop
calling ``f`` plainly.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import gast

from s2sgrad.compiler.annotations import CHANGED_AS_VISITED, RANGE_LOOP, annotate, annotation
from s2sgrad.compiler.block_walks import header_nodes
from s2sgrad.compiler.node_kinds import of_kind
from s2sgrad.compiler.passes.comprehensions import Comprehensions
from s2sgrad.compiler.passes.inline_locals import inline_local_functions, inline_local_partials
from s2sgrad.compiler.passes.lowered_order import conditionals_first, refuse_reordered_effects
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import (
    COMPREHENSIONS,
    assign,
    call,
    clone,
    constant,
    load,
    located,
    names_modified,
    names_read,
    store,
    walk,
)
from s2sgrad.errors import UnsupportedError

__all__ = ["normalise_loops", "only_partials_to_rewrite"]


def refuse_views_changed_as_visited(nodes: list[gast.AST], varied: set[str], locate) -> None:
    """Refuse a loop over a part of an array it writes into (``for i, row in
    enumerate(t[:-1]): t[i + 1] = row * 0.5``) where that array holds a value being
    differentiated: a later row may be one the loop wrote, which neither engine follows
    (the tape reads the rows it runs over as they were), so mode "auto" raises it too.
    ``nodes``: the function's walk, after :func:`normalise_loops` marked its loops.

    Example::

        refuse_views_changed_as_visited(walk(node), {"t", "x"}, parsed.location)
    """
    for loop in of_kind(nodes, gast.For):
        changed = annotation(loop, CHANGED_AS_VISITED)
        if not changed or not changed.endswith("[...]") or changed[:-5] not in varied:
            continue
        name = changed[:-5]
        error = UnsupportedError(
            f"{locate(loop)}: this loop runs over a part of '{name}' and writes into "
            f"'{name}': a later row may be one the loop wrote, which neither engine follows; "
            f"loop over range(...) and read {name}[i] in the body instead"
        )
        error.tape_cannot_either = True
        raise error


def normalise_loops(
    node: gast.FunctionDef,
    names: NameGenerator,
    resolve,
    partials_only: bool = False,
    locate: Callable[[gast.AST], str] | None = None,
) -> dict[str, str]:
    """Rewrite the loops and list comprehensions of ``node`` in place.

    ``resolve(node)`` is the object a free name or attribute chain refers to, which tells
    whether ``range``/``enumerate``/``map``/``partial`` in the code really are those (a
    user may shadow them). ``map(f, xs)`` passed on or iterated becomes the list
    ``[f(x) for x in xs]``, and ``partial(g, a)(b)`` the call ``g(a, b)``, so that the
    calls they make are differentiated like any other.

    Example::

        # for i, v in enumerate(xs): ...   becomes
        # for i in range(len(xs)): v = xs[i]; ...

    Returns the names the new code calls runtime helpers by (name → helper's name in
    :mod:`s2sgrad.runtime`), for the caller to bind: ``for k in d`` visits
    ``for_items(d)`` (a dict's keys), and ``for k, v in d.items()`` ``dict_keys(d)``.

    ``partials_only``: the caller knows the function holds nothing else this pass rewrites
    (:func:`only_partials_to_rewrite`), so that it is not walked unless a partial is inlined.
    ``locate(node)``: the user's file and line of a node, for refusals.
    """
    if partials_only:  # no lambda nor nested def: no local function to inline
        if not inline_local_partials(node, names, resolve):
            return {}
        nodes = walk(node)
    else:
        nodes = walk(node)
        changed = inline_local_functions(node, names, nodes, resolve)
        changed = inline_local_partials(node, names, resolve) or changed
        if changed:
            nodes = walk(node)
    if not _rewrites_any(nodes, node):
        return {}  # no loop, comprehension, map, partial call or local function
    uses = Counter(n.id for n in nodes if type(n) is gast.Name)
    loops = Loops(names, resolve, uses, locate)
    loops.local_functions = {  # what each local function reads when it is called
        n.name if type(n) is gast.FunctionDef else n.targets[0].id: names_read(n)
        for n in nodes  # the tree is as it was walked
        if n is not node
        and (
            type(n) is gast.FunctionDef
            or (
                type(n) is gast.Assign
                and type(n.value) is gast.Lambda
                and type(n.targets[0]) is gast.Name
            )
        )
    }
    node.body = loops.block(node.body)
    if inline_local_functions(node, names, None, resolve):  # map(f, xs): a loop calling f
        node.body = loops.block(node.body)  # the loops the inlined statements hold
    return {name: helper for helper, name in loops.helpers.items()}


def only_partials_to_rewrite(
    nodes: list[gast.AST], function: gast.FunctionDef, kinds: set[type]
) -> bool:
    """Whether :func:`normalise_loops` can find nothing to rewrite in ``function`` but
    partials (``normalise_loops(..., partials_only=True)``) once it is desugared, given
    its walk ``nodes`` and their classes ``kinds`` before: :func:`_rewrites_any` is false
    of them, and desugaring makes no loop, comprehension, lambda, def, nor a call of
    ``map``. The one call of a call it may make, ``f(...)(a, i)`` of ``f(...).at(a, i)``,
    is ruled out with any method called on the value of a call.

    Example::

        only_partials_to_rewrite(walk(node), node, kinds_of(walk(node)))  # True: no loop
    """
    if _rewrites_any(nodes, function, kinds):
        return False
    for called in of_kind(nodes, gast.Call):
        func = called.func
        if type(func) is gast.Attribute and type(func.value) is gast.Call:
            return False
    return True


def _rewrites_any(
    nodes: list[gast.AST], function: gast.FunctionDef, kinds: set[type] | None = None
) -> bool:
    """Whether ``nodes`` (``function``'s walk) hold something :func:`normalise_loops`
    rewrites or reads: a loop, comprehension, lambda, nested def, ``map(...)`` or a call
    of a call (``partial(g, a)(b)``). A cheap look, before any of its work; the node
    classes are asked first (most functions have no loop, comprehension nor lambda);
    ``kinds``: those classes, when known."""
    kinds = set(map(type, nodes)) if kinds is None else kinds
    if gast.For in kinds or gast.Lambda in kinds or not kinds.isdisjoint(COMPREHENSIONS):
        return True
    # what is left to ask: nested defs, and calls (of a call, or of map)
    defs = of_kind(nodes, gast.FunctionDef) if gast.FunctionDef in kinds else ()
    if any(n is not function for n in defs):
        return True
    for called in of_kind(nodes, gast.Call):
        func = called.func
        if type(func) is gast.Call or (type(func) is gast.Name and func.id == "map"):
            return True
        if _names_reduce(func) or _names_listed_iterator(func):
            return True
        if type(func) is gast.Name and _lists_an_iterator(called):
            return True
    return False


def _lists_an_iterator(called: gast.Call) -> bool:
    """``list(reversed(xs))``, ``tuple(zip(...))``, ``dict(enumerate(xs))``, or
    ``sorted(xs, key=f)``, by name (resolved later): what :class:`Comprehensions` reads
    whole, a loop over the iterator."""
    name = called.func.id if type(called.func) is gast.Name else None
    if name == "sorted":
        return bool(called.keywords)
    if name not in ("list", "tuple", "dict") or len(called.args) != 1:
        return False
    inner = called.args[0]
    return (
        type(inner) is gast.Call
        and type(inner.func) is gast.Name
        and inner.func.id in ("reversed", "zip", "enumerate")
    )


def _names_reduce(func: gast.expr) -> bool:
    """``reduce`` or ``functools.reduce`` by name (resolved later, by the loops)."""
    if type(func) is gast.Name:
        return func.id == "reduce"
    return type(func) is gast.Attribute and func.attr == "reduce"


# itertools' iterators made the list of what they give, by :class:`Comprehensions`
_LISTED_ITERATORS = {
    name: getattr(itertools, name) for name in ("accumulate", "chain", "zip_longest")
}


def _names_listed_iterator(func: gast.expr) -> bool:
    """``accumulate``, ``chain`` or ``zip_longest`` by name (resolved later)."""
    if type(func) is gast.Name:
        return func.id in _LISTED_ITERATORS
    return type(func) is gast.Attribute and func.attr in _LISTED_ITERATORS


@dataclass
class _Visit:
    """What a loop reads by index: its sequences (named), the targets their elements go
    to, the target of ``enumerate``'s count, whether it runs backwards, and which ``zip``
    arguments were ``reversed(...)``."""

    sequences: list[gast.Name]
    targets: list[gast.expr]
    index_target: gast.expr | None = None
    backwards: bool = False
    flipped: set[int] = dataclasses.field(default_factory=set)


class Loops:
    """The loop normalisation of one function: :meth:`block` rewrites a block's loops
    (and, through :class:`Comprehensions`, the comprehensions of its statements)."""

    def __init__(self, names: NameGenerator, resolve, uses: Counter, locate=None):
        self.names = names
        self.resolve = resolve
        self.locate = locate
        self.uses = uses  # how often each name occurs in the function
        self.local_functions: dict[str, set[str]] = {}
        self.helpers: dict[str, str] = {}  # runtime helper → the name the code calls it by

    def helper(self, name: str) -> gast.Name:
        if name not in self.helpers:
            self.helpers[name] = self.names.claim(name)
        return load(self.helpers[name])

    def is_builtin(self, name: str) -> bool:
        return self.resolve(load(name)) is getattr(builtins, name)

    def is_partial(self, node: gast.expr) -> bool:
        """``partial(g, ...)`` with functools' partial and positional arguments only."""
        return (
            isinstance(node, gast.Call)
            and self.resolve(node.func) is functools.partial
            and bool(node.args)
            and not any(isinstance(a, gast.Starred) for a in node.args)
            and all(k.arg is not None for k in node.keywords)
        )

    def is_reduce(self, node: gast.expr) -> bool:
        """``functools.reduce(f, items)`` or ``reduce(f, items, initial)``, positional."""
        return (
            isinstance(node, gast.Call)
            and _names_reduce(node.func)
            and 2 <= len(node.args) <= 3
            and not node.keywords
            and not any(isinstance(a, gast.Starred) for a in node.args)
            and self.resolve(node.func) is functools.reduce
        )

    def iterator_listed(self, node: gast.expr) -> str | None:
        """``"accumulate"``, ``"chain"`` or ``"zip_longest"`` for a call of that itertools
        function with positional iterables (and ``func=``, ``initial=``, ``fillvalue=``),
        which :class:`Comprehensions` makes the list of what it gives; else None."""
        if type(node) is not gast.Call or not _names_listed_iterator(node.func):
            return None
        if any(type(a) is gast.Starred for a in node.args) or not node.args:
            return None
        maker = self.resolve(node.func)
        kind = next((k for k, m in _LISTED_ITERATORS.items() if maker is m), None)
        keywords = {k.arg for k in node.keywords}
        allowed = {"accumulate": {"func", "initial"}, "zip_longest": {"fillvalue"}}
        if kind is None or not keywords <= allowed.get(kind, set()):
            return None
        if kind == "accumulate" and len(node.args) > (1 if "func" in keywords else 2):
            return None
        return kind

    def moves_out(self, node: gast.AST) -> bool:
        """Whether :class:`Comprehensions` computes ``node`` before its statement (all it
        lowers but ``partial(g, a)(b)``, rewritten in place)."""
        return self.lowers(node) and not (type(node) is gast.Call and type(node.func) is gast.Call)

    def lowers(self, node: gast.AST) -> bool:
        """Whether ``node`` is rewritten by :class:`Comprehensions`."""
        if type(node) in COMPREHENSIONS:
            return True
        if type(node) is not gast.Call:
            return False
        func = node.func  # names first: resolving every call would cost the first call
        if _names_reduce(func):
            return self.is_reduce(node)
        if _names_listed_iterator(func):
            return self.iterator_listed(node) is not None
        if type(func) is gast.Name:
            if func.id in ("list", "tuple", "dict") and len(node.args) == 1:  # of zip(...)
                inner = node.args[0]
                return (
                    type(inner) is gast.Call
                    and type(inner.func) is gast.Name
                    and (inner.func.id in ("zip", "enumerate", "reversed"))
                )
            if func.id == "sorted":
                return self.sorted_by_key(node)
            return func.id == "map" and self.builtin_call(node, "map")
        return type(func) is gast.Call and self.is_partial(func)

    def block(self, statements: list[gast.stmt]) -> list[gast.stmt]:
        result: list[gast.stmt] = []
        for statement in statements:
            prefix: list[gast.stmt] = []
            # Comprehensions lowers only what is outside the blocks (headers, statements)
            if any(self.lowers(n) for n in header_nodes(statement)):
                chosen = conditionals_first(
                    statement, self.moves_out, self.names, self.resolve, self.locate
                )
                result.extend(self.block(chosen))
                refuse_reordered_effects(statement, self.moves_out, self.resolve, self.locate)
                Comprehensions(self, prefix, statement).visit(statement)
            result.extend(prefix)
            if isinstance(statement, gast.For):
                result.extend(self.for_loop(statement))
                continue
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                    setattr(statement, field, self.block(inner))
            result.append(statement)
        return result

    def sorted_by_key(self, node: gast.expr) -> bool:
        """``sorted(xs, key=f)`` (``reverse=`` too) of the builtin, which
        :class:`Comprehensions` makes element reads in an order found at run time."""
        return (
            type(node) is gast.Call
            and type(node.func) is gast.Name
            and node.func.id == "sorted"
            and len(node.args) == 1
            and type(node.args[0]) is not gast.Starred
            and any(k.arg == "key" for k in node.keywords)
            and all(k.arg in ("key", "reverse") for k in node.keywords)
            and self.is_builtin("sorted")
        )

    def transposed(self, loop: gast.For) -> list[gast.stmt] | None:
        """``for col in zip(*rows)`` as ``for j in range(zipped_length(rows)): col =
        tuple([row[j] for row in rows])`` (the statements naming ``rows`` returned, to go
        before the loop), so that each element read is differentiated; None (the loop left
        as it is) for anything else, or where the body changes what ``rows`` reads."""
        iterator = loop.iter
        if not (
            self.builtin_call(iterator, "zip")
            and len(iterator.args) == 1
            and type(iterator.args[0]) is gast.Starred
            and self.is_builtin("tuple")
            and _indexable(iterator.args[0].value)
            and not self.sees_changes(iterator, loop)
        ):
            return None
        prefix: list[gast.stmt] = []
        rows = self.named(iterator.args[0].value, prefix, loop)
        width, index, row = (self.names.fresh(n) for n in ("width", "j", "row"))
        length = call(self.helper("zipped_length"), [load(rows.id)])
        prefix.append(assign(width, length, like=loop))
        read = gast.Subscript(value=load(row), slice=load(index), ctx=gast.Load())
        generator = gast.comprehension(target=store(row), iter=load(rows.id), ifs=[], is_async=0)
        column = call(load("tuple"), [gast.ListComp(elt=read, generators=[generator])])
        loop.body = [assign(loop.target, column, like=loop), *loop.body]
        loop.target = store(index)
        loop.iter = located(call(load("range"), [load(width)]), iterator)
        return prefix

    def builtin_call(self, node: gast.expr, name: str) -> bool:
        return (
            isinstance(node, gast.Call)
            and isinstance(node.func, gast.Name)
            and node.func.id == name
            and self.is_builtin(name)
            and not node.keywords
        )

    def for_loop(self, loop: gast.For) -> list[gast.stmt]:
        """``loop`` (its blocks normalised first) as ``for i in range(...)`` reading its
        elements by index, after the statements that name what it runs over; left as it
        is when what it runs over has no ``len`` (a generator, an itertools iterator)."""
        transposed = self.transposed(loop)
        if transposed is not None:  # for col in zip(*rows): a range, reading each row
            return [*transposed, *self.for_loop(loop)]
        loop.body = self.block(loop.body)
        loop.orelse = self.block(loop.orelse)
        iterator = loop.iter
        annotate(loop, RANGE_LOOP, False)  # set once the loop runs over a plain range
        if self.builtin_call(iterator, "range") and isinstance(loop.target, gast.Name):
            annotate(loop, RANGE_LOOP, True)
            return [loop]
        prefix: list[gast.stmt] = []
        self.count_from_zero(loop, prefix)
        iterator = loop.iter
        changed = self.changed_as_visited(loop)
        if changed is not None:  # Python's loop sees the change; one by index would not
            annotate(loop, CHANGED_AS_VISITED, changed)
            return [*prefix, loop]
        if self.gathered(loop, prefix):
            return [*prefix, *self.for_loop(loop)]
        iterator = loop.iter = self.listed(iterator, loop)
        if self.builtin_call(iterator, "zip") or self.builtin_call(iterator, "enumerate"):
            iterator.args = [self.listed(a, loop) for a in iterator.args]
            if any(self.is_iterator(a) for a in iterator.args):
                return [loop]  # zip(xs, count()): no len to loop by
        if self.is_iterator(iterator):
            return [loop]
        view = _dict_view(iterator)
        if view is not None:
            return self.dict_loop(loop, *view)
        visit = self.visit(loop, iterator, prefix)
        if visit is None:
            return [loop]
        return [*prefix, self.by_index(loop, visit)]

    def count_from_zero(self, loop: gast.For, prefix: list[gast.stmt]) -> None:
        """``for i, v in enumerate(xs, start=s)`` (or ``enumerate(xs, s)``, ``s`` a name or
        a number) as ``for k, v in enumerate(xs): i = k + s``, ``s`` read once before the
        loop as Python does."""
        iterator, target = loop.iter, loop.target
        if not (
            isinstance(iterator, gast.Call)
            and isinstance(iterator.func, gast.Name)
            and iterator.func.id == "enumerate"
            and self.is_builtin("enumerate")
            and isinstance(target, gast.Tuple)
            and len(target.elts) == 2
        ):
            return
        keywords = iterator.keywords
        if len(iterator.args) == 2 and not keywords:
            start = iterator.args[1]
        elif len(iterator.args) == 1 and len(keywords) == 1 and keywords[0].arg == "start":
            start = keywords[0].value
        else:
            return
        literal = isinstance(start, gast.UnaryOp) and isinstance(start.operand, gast.Constant)
        if not (literal or isinstance(start, (gast.Name, gast.Constant))):
            return
        first = self.names.fresh("start")
        count = self.names.fresh("count")
        prefix.append(assign(first, start, like=loop))
        counted = gast.BinOp(left=load(count), op=gast.Add(), right=load(first))
        loop.body = [assign(target.elts[0], counted, like=loop), *loop.body]
        target.elts[0] = store(count)
        loop.iter = located(call(clone(iterator.func), [iterator.args[0]]), iterator)

    def changed_as_visited(self, loop: gast.For) -> str | None:
        """The name of a list the loop visits (``for v in xs``, also inside ``enumerate``,
        ``zip`` or ``reversed``) that its body grows, shrinks or writes into elsewhere than
        at the entry just visited (``xs.append(v)``, ``xs.pop()``, ``xs[0] = v``): Python's
        loop visits the list as it is changed, a loop over a copy read by index would not."""
        iterator = loop.iter
        sources = [iterator]
        keys: set[str] = set()  # the names holding the key or index of the entry visited
        if any(self.builtin_call(iterator, n) for n in ("enumerate", "zip", "reversed")):
            sources = list(iterator.args)
            if self.builtin_call(iterator, "enumerate") and isinstance(loop.target, gast.Tuple):
                first = loop.target.elts[0] if loop.target.elts else None
                keys = {first.id} if isinstance(first, gast.Name) else set()
        elif isinstance(loop.target, gast.Name):
            keys = {loop.target.id}  # for k in d: d[k] = ...
        visited = {s.id for s in sources if isinstance(s, gast.Name)}
        # a part of an array (for row in t[:-1]) is a view: a write anywhere into t may be
        # seen by a later row (a list's slice is a copy, which would not: refused all the same)
        viewed = {
            s.value.id
            for s in sources
            if isinstance(s, gast.Subscript) and isinstance(s.value, gast.Name)
        }
        if not (visited or viewed):
            return None
        for statement in loop.body:
            for node in walk(statement):
                changed = _change_of(node, visited, keys)
                if changed is not None:
                    return changed
                changed = _change_of(node, viewed, set()) if viewed else None
                if changed is not None:
                    return f"{changed}[...]"
        return None

    def visit(self, loop: gast.For, iterator: gast.expr, prefix: list[gast.stmt]):
        """What ``loop`` reads by index (its sequences named in ``prefix``), or None when
        it cannot be read so."""
        backwards = False
        if self.builtin_call(iterator, "reversed") and len(iterator.args) == 1:
            backwards = True
            iterator = iterator.args[0]
        if self.builtin_call(iterator, "enumerate") and len(iterator.args) == 1:
            return self.enumerated(loop, iterator, backwards, prefix)
        if self.builtin_call(iterator, "zip") and iterator.args:
            return self.zipped(loop.target, iterator, backwards, prefix, loop)
        if self.builtin_call(iterator, "range") and backwards:
            pass  # reversed(range(...)): the range is read by index, as a list would be
        elif self.builtin_call(iterator, "range") or not _indexable(iterator):
            return None  # e.g. a generator: only the tape can follow it
        return _Visit([self.items(iterator, prefix, loop)], [loop.target], backwards=backwards)

    def enumerated(self, loop, iterator: gast.Call, backwards: bool, prefix) -> _Visit | None:
        """``for i, v in enumerate(xs)`` (or ``enumerate(reversed(xs))``, or
        ``for i, (a, b) in enumerate(zip(xs, ys))``)."""
        inner = iterator.args[0]
        target = loop.target
        if (
            self.builtin_call(inner, "zip")
            and not backwards
            and isinstance(target, gast.Tuple)
            and len(target.elts) == 2
        ):
            visit = self.zipped(target.elts[1], inner, False, prefix, loop)
            if visit is not None:
                visit.index_target = target.elts[0]
            return visit
        if self.builtin_call(inner, "reversed") and len(inner.args) == 1 and not backwards:
            backwards = True  # enumerate(reversed(x)): counts up, runs over x downwards
            iterator = gast.Call(func=iterator.func, args=inner.args, keywords=[])
        if not (
            isinstance(loop.target, gast.Tuple)
            and len(loop.target.elts) == 2
            and _indexable(iterator.args[0])
        ):
            return None
        index_target, element = loop.target.elts
        sequences = [self.items(iterator.args[0], prefix, loop)]
        return _Visit(sequences, [element], index_target, backwards)

    def zipped(self, target, iterator: gast.Call, backwards: bool, prefix, loop) -> _Visit | None:
        """``for a, b in zip(xs, ys)`` (``target`` is ``a, b``), each of them possibly
        ``reversed(...)``."""
        if not (isinstance(target, gast.Tuple) and len(target.elts) == len(iterator.args)):
            return None
        arguments = list(iterator.args)
        flipped: set[int] = set()
        for position, argument in enumerate(arguments):
            if self.builtin_call(argument, "reversed") and len(argument.args) == 1:
                arguments[position] = argument.args[0]
                flipped.add(position)
        if not all(map(_indexable, arguments)):
            return None
        sequences = [self.items(a, prefix, loop) for a in arguments]
        return _Visit(sequences, list(target.elts), None, backwards, flipped)

    def by_index(self, loop: gast.For, visit: _Visit) -> gast.For:
        """``loop`` running over a ``range`` of indices, its targets read at its start."""
        sequences, index_target, backwards = visit.sequences, visit.index_target, visit.backwards
        length: gast.expr = call(load("len"), [load(sequences[0].id)])
        if len(sequences) > 1:
            length = call(load("min"), [call(load("len"), [load(s.id)]) for s in sequences])
        index = (
            index_target.id
            if isinstance(index_target, gast.Name) and not backwards
            else self.names.fresh("i")
        )
        reads: list[tuple[gast.expr, gast.expr]] = []  # (target, element) pairs
        for position, (target, sequence) in enumerate(zip(visit.targets, sequences)):
            where: gast.expr = load(index)
            if position in visit.flipped:  # reversed(s)[i] is s[len(s) - 1 - i]
                last = gast.BinOp(
                    left=call(load("len"), [load(sequence.id)]), op=gast.Sub(), right=constant(1)
                )
                where = gast.BinOp(left=last, op=gast.Sub(), right=load(index))
            element = gast.Subscript(value=load(sequence.id), slice=where, ctx=gast.Load())
            reads.append((target, element))
        if backwards:
            bounds = [
                gast.BinOp(left=length, op=gast.Sub(), right=constant(1)),
                constant(-1),
                constant(-1),
            ]
        else:
            bounds = [length]
        header = [assign(clone(t), e, like=loop) for t, e in reads]
        if index_target is not None and (backwards or not isinstance(index_target, gast.Name)):
            count: gast.expr = load(index)
            if backwards:  # enumerate(reversed(x)) counts up while the index counts down
                count = gast.BinOp(
                    left=gast.BinOp(left=clone(length), op=gast.Sub(), right=constant(1)),
                    op=gast.Sub(),
                    right=load(index),
                )
            header.insert(0, assign(clone(index_target), count, like=loop))
        loop.target = store(index)
        loop.iter = call(load("range"), bounds)
        annotate(loop, RANGE_LOOP, True)
        loop.body = header + loop.body
        return loop

    def gathered(self, loop: gast.For, prefix: list[gast.stmt]) -> bool:
        """``for a, b in product(xs, ys)`` (``combinations``, ``permutations``,
        ``combinations_with_replacement``, ``pairwise`` alike) as a loop over the index
        tuples the same function makes of ``range(len(...))``, reading the elements by
        index: ``for t in list(product(range(len(xs)), range(len(ys)))): a, b = xs[t[0]],
        ys[t[1]]``, so what the loop reads is differentiated like any element read. The
        sequences are named in ``prefix``. False (the loop unchanged) when the tuples'
        length is not a literal or the loop changes what it runs over."""
        iterator = loop.iter
        if type(iterator) is not gast.Call or self.sees_changes(iterator, loop):
            return False
        maker = self.resolve(iterator.func)
        kind = next((k for k, m in _GATHERED.items() if m is not None and maker is m), None)
        sources = iterator.args if kind == "product" else iterator.args[:1]
        if kind is None or not sources or not all(map(_indexable, sources)):
            return False
        if any(isinstance(a, gast.Starred) for a in iterator.args):
            return False
        sizes = {k.arg: k.value for k in iterator.keywords}
        pools = list(sources)
        if kind == "product":
            repeat = sizes.pop("repeat", constant(1))
            width = _literal_int(repeat)
            if width is None or sizes:
                return False
            pools = pools * width
        elif kind == "pairwise":
            if len(pools) != 1 or sizes:
                return False
            pools = pools * 2
        else:
            size = sizes.pop("r", iterator.args[1] if len(iterator.args) == 2 else None)
            width = _literal_int(size) if size is not None else None
            if width is None or sizes or len(iterator.args) > 2:
                return False
            pools = pools[:1] * width
        named = [self.items(p, prefix, loop) for p in sources]
        by_pool = {id(p): n for p, n in zip(sources, named)}
        ranges = [call(load("range"), [call(load("len"), [load(n.id)])]) for n in named]
        keywords = {}
        if kind == "product":
            keywords = {k.arg: clone(k.value) for k in iterator.keywords}
        elif kind != "pairwise":
            ranges.append(constant(width))
        indices = call(clone(iterator.func), ranges, keywords)
        index = self.names.fresh("indices")
        reads = [
            gast.Subscript(
                value=load(by_pool[id(pool)].id),
                slice=gast.Subscript(value=load(index), slice=constant(position), ctx=gast.Load()),
                ctx=gast.Load(),
            )
            for position, pool in enumerate(pools)
        ]
        target = loop.target
        if isinstance(target, gast.Tuple) and len(target.elts) == len(reads):
            header = [assign(t, r, like=loop) for t, r in zip(target.elts, reads)]
        else:
            header = [assign(target, gast.Tuple(elts=reads, ctx=gast.Load()), like=loop)]
        loop.target = store(index)
        loop.iter = located(call(load("list"), [indices]), iterator)
        loop.body = header + loop.body
        return True

    def listed(self, node: gast.expr, loop: gast.For) -> gast.expr:
        """``list(node)`` for an iterator of itertools (``product``, ``pairwise`` …) or
        ``filter``, which has no ``len`` to loop over by index: read whole before the loop,
        when the loop changes nothing it reads (it would read the changes as it goes)."""
        if not (type(node) is gast.Call and self.is_builtin("list")):
            return node
        maker = self.resolve(node.func)
        if not any(maker is m for m in _LISTED) and not self.builtin_call(node, "filter"):
            return node
        if self.sees_changes(node, loop):
            return node
        return located(call(load("list"), [node]), node)

    def sees_changes(self, iterable: gast.expr, loop: gast.For) -> bool:
        """Whether ``iterable``, made lazily as the loop runs, reads a name the loop's body
        changes (also through a local function it calls: ``filter(keep, xs)``), so that
        reading it whole beforehand would give other values."""
        changed = set().union(*(names_modified(s) for s in loop.body + loop.orelse))
        reads = names_read(iterable)
        for name in reads & self.local_functions.keys():
            reads = reads | self.local_functions[name]
        return bool(reads & changed)

    def is_iterator(self, node: gast.expr) -> bool:
        """Whether ``node`` makes an itertools iterator (``count()``, ``cycle(xs)`` …), which
        has no ``len``: a loop over it is left as it is, for the reverse sweep to refuse."""
        if type(node) is not gast.Call:
            return False
        maker = self.resolve(node.func)
        return getattr(maker, "__module__", None) == "itertools"

    def items(self, node: gast.expr, prefix: list[gast.stmt], like) -> gast.Name:
        """What a loop visits, as a name to index: ``for_items(x)`` where ``x`` may be a
        dict (whose keys a loop visits, where indexing would read its values)."""
        if _sequence_or_array(node, self.is_builtin):
            return self.named(node, prefix, like)
        name = self.names.fresh("seq")
        prefix.append(assign(name, call(self.helper("for_items"), [node]), like=like))
        return load(name)

    def dict_loop(self, loop: gast.For, view: str, owner: gast.expr) -> list[gast.stmt]:
        """``for k, v in d.items()`` → ``keys = dict_keys(d)``, then ``for i in
        range(len(keys)): k = keys[i]; v = d[k]`` (``.keys()``, ``.values()`` alike)."""
        prefix: list[gast.stmt] = []
        owner = self.named(owner, prefix, loop)
        keys = self.names.fresh("keys")
        prefix.append(assign(keys, call(self.helper("dict_keys"), [owner]), like=loop))
        index = self.names.fresh("i")
        key_read = gast.Subscript(value=load(keys), slice=load(index), ctx=gast.Load())
        target = loop.target
        if view == "keys":
            header = [assign(target, key_read, like=loop)]
        else:
            pair = view == "items" and isinstance(target, gast.Tuple) and len(target.elts) == 2
            named_key = pair and isinstance(target.elts[0], gast.Name)
            key = target.elts[0].id if named_key else self.names.fresh("key")
            header = [assign(key, key_read, like=loop)]
            value = gast.Subscript(value=load(owner.id), slice=load(key), ctx=gast.Load())
            if view == "values":
                header.append(assign(target, value, like=loop))
            elif pair:
                if not named_key:
                    header.append(assign(target.elts[0], load(key), like=loop))
                header.append(assign(target.elts[1], value, like=loop))
            else:
                both = gast.Tuple(elts=[load(key), value], ctx=gast.Load())
                header.append(assign(target, both, like=loop))
        loop.target = store(index)
        loop.iter = call(load("range"), [call(load("len"), [load(keys)])])
        annotate(loop, RANGE_LOOP, True)
        loop.body = header + loop.body
        return [*prefix, loop]

    def named(self, node: gast.expr, prefix: list[gast.stmt], like) -> gast.Name:
        if isinstance(node, gast.Name):
            return node
        name = self.names.fresh("seq")
        prefix.append(assign(name, node, like=like))
        return load(name)


# iterators a loop reads whole beforehand (what they make is decided by their arguments)
_LISTED = tuple(
    getattr(itertools, name)
    for name in (
        "product",
        "pairwise",
        "combinations",
        "combinations_with_replacement",
        "permutations",
        "chain",
        "islice",
        "accumulate",
        "starmap",
        "zip_longest",
        "compress",
        "takewhile",
        "dropwhile",
        "filterfalse",
    )
    if hasattr(itertools, name)
)


# iterators of tuples of their arguments' elements, made again of indices by ``gathered``
_GATHERED = {
    name: getattr(itertools, name, None)
    for name in (
        "product",
        "pairwise",
        "combinations",
        "combinations_with_replacement",
        "permutations",
    )
}


_RESIZING = frozenset(
    ("append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update")
    + ("popitem", "setdefault")
)


def _change_of(node: gast.AST, visited: set[str], keys: set[str]) -> str | None:
    """The name in ``visited`` that ``node`` changes as a loop over it would see, else
    None: a resizing method call, ``del xs[...]``, ``xs += ...`` (also as desugared), or a
    write at an index other than a name of ``keys``."""
    kind = type(node)
    if kind is gast.Call:
        func = node.func
        if (
            type(func) is gast.Attribute
            and type(func.value) is gast.Name
            and func.value.id in visited
            and func.attr in _RESIZING
        ):
            return func.value.id
        return None
    if kind is gast.AugAssign and type(node.target) is gast.Name and node.target.id in visited:
        return node.target.id
    if (  # xs = xs + [v]: what desugaring made of xs += [v], which extends xs in place
        kind is gast.Assign
        and len(node.targets) == 1
        and type(node.targets[0]) is gast.Name
        and node.targets[0].id in visited
        and type(node.value) is gast.BinOp
        and type(node.value.left) is gast.Name
        and node.value.left.id == node.targets[0].id
    ):
        return node.targets[0].id
    if kind is gast.Delete:
        targets = node.targets
    elif kind in (gast.Assign, gast.AugAssign, gast.AnnAssign):
        targets = node.targets if kind is gast.Assign else [node.target]
    else:
        return None
    for target in targets:
        for part in walk(target):
            if type(part) is not gast.Subscript or type(part.value) is not gast.Name:
                continue
            if part.value.id not in visited:
                continue
            index = part.slice
            if kind is gast.Delete or not (type(index) is gast.Name and index.id in keys):
                return part.value.id
    return None


def _literal_int(node: gast.expr) -> int | None:
    if isinstance(node, gast.Constant) and type(node.value) is int and node.value >= 0:
        return node.value
    return None


def _indexable(node: gast.expr) -> bool:
    """Whether the loop runs over something with ``len`` and indexing (not a generator)."""
    if isinstance(
        node, (gast.Name, gast.Attribute, gast.Subscript, gast.List, gast.Tuple, gast.BinOp)
    ):
        return True
    if isinstance(node, gast.Constant) and isinstance(node.value, (str, bytes)):
        return True  # for axis in "xyz": s[i] is the i-th item the loop would see
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name):
        # a function of the user's (layers(w)) is read through for_items, as a method is
        name = node.func.id
        return name in ("list", "tuple", "sorted", "range") or not hasattr(builtins, name)
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)


def _dict_view(node: gast.expr) -> tuple[str, gast.expr] | None:
    """``("items", d)`` for ``d.items()`` (and ``.keys()``, ``.values()``), else None."""
    if (
        isinstance(node, gast.Call)
        and isinstance(node.func, gast.Attribute)
        and node.func.attr in ("items", "keys", "values")
        and not node.args
        and not node.keywords
    ):
        return node.func.attr, node.func.value
    return None


def _sequence_or_array(node: gast.expr, is_builtin) -> bool:
    """Whether ``node`` surely is no dict (a loop over it may index it directly)."""
    if isinstance(node, (gast.List, gast.Tuple, gast.BinOp)):
        return True
    return (
        isinstance(node, gast.Call)
        and isinstance(node.func, gast.Name)
        and node.func.id in ("list", "tuple", "sorted")
        and is_builtin(node.func.id)
    )
