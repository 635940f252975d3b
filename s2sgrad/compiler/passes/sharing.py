"""Which names may share an array's memory: each name's possible origins.

Each name gets the *origins* its value may have (the arrays the code makes, and values from
outside), through every binding that may pass a value on without copying, regardless of
the order of statements. A call makes a new value only when it is known to
(:mod:`.fresh_results`); any other call may return its arguments or views of them. A
Python function called is read (the same analysis on its source) for the arguments its
result may share; one without source is taken to return any of them. Two names may share
memory when their origins meet. :class:`Layout` adds what order tells: only what was made
from an array made anew earlier in the same or an enclosing block can share it.
"""

from __future__ import annotations

import inspect
import types
import weakref
from collections import Counter
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.frontend import NOT_FOUND, parse_function
from s2sgrad.compiler.passes.fresh_results import fresh_result, keeps_memory
from s2sgrad.compiler.primitive_callers import differentiated_by_its_rule
from s2sgrad.compiler.syntax import (
    is_integer_arithmetic,
    names_written,
    names_written_in_all,
    nested_statements,
    parameter_names,
    plain_binding,
    walk,
)
from s2sgrad.tape.rerouting import original_of

__all__ = [
    "Layout",
    "assigned_sources",
    "Sharing",
    "with_local_functions",
    "base_of",
    "container_names",
    "links_of",
    "makes_container",
    "resolved_target",
    "returns_fresh",
    "sources_of",
    "updated_name",
]

# Methods that return a new array or a number when called on an array (or list, dict)
_FRESH_METHODS = frozenset(
    """
    sum mean prod std var max min ptp argmax argmin argsort all any cumsum cumprod
    dot copy astype tolist item tobytes flatten round clip trace nonzero take repeat
    searchsorted count index sort
    """.split()  # noqa: SIM905
)
# Methods whose result is the receiver, a view of it or a new array, never one of their
# arguments (a shape, axes, a dtype)
_RECEIVER_VIEW_METHODS = frozenset({"reshape", "ravel", "transpose", "swapaxes", "squeeze", "view"})
# Attributes that are numbers or tuples of numbers, never arrays
_NUMBER_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype", "itemsize", "nbytes"})
# s2sgrad's run-time helpers in generated code: the arguments their result may share
_HELPER_RESULTS = {
    "unbroadcast": (0,),
    "as_gradient": (0,),
    "cast_like": (0,),
    "add_cotangents": (0, 1),
    "owned": (),
    "owned_argument": (),
    "owned_items": (),
    "owned_tangent": (),
    "snapshot": (),
    "shape_only": (),
    "assigned_cotangent": (),
    "only_last_writes": (0,),
    "seed_cotangent": (),
    "zeros_like_value": (),
    "zeros_like_structure": (),
    "is_view_of": (),
    "item_reads_are_views": (),
}


class Sharing:
    """Which names may share memory: each name's possible *origins* (the arrays the code
    makes, named after the variable they are first bound to, and the values that come from
    outside: parameters, globals), from the bindings and stores of ``statements`` in any
    order. ``w = f(x, v)`` gives ``w`` the origins of both, without making ``x`` and ``v``
    share: the analysis follows where values come from, not which names met.

    Example::

        Sharing(statements, None, set(), {"x"}).with_("v")  # {"w"} after w = v
    """

    def __init__(self, statements, resolve, containers: set[str], outside: set[str]):
        resolve = with_local_functions(statements, resolve)
        links = [link for s in statements for link in links_of(s, resolve, containers)]
        self.origins = {name: {name} for name in outside}
        for name, _ in links:
            self.origins.setdefault(name, set())
        names = set(self.origins) | {source for _, sources in links for source in sources}
        self.names = names
        changed = True
        while changed:
            changed = False
            for name, sources in links:
                new = set().union(*map(self.of, sources)) if sources else {name}
                if not new <= self.origins[name]:
                    self.origins[name] |= new
                    changed = True

    def of(self, name: str) -> set[str]:
        """The origins of ``name``'s values (a name nothing here binds is its own)."""
        origins = self.origins.get(name)
        return {name} if origins is None else origins

    def with_(self, name: str) -> set[str]:
        """The other names whose values may share memory with ``name``'s."""
        mine = self.of(name)
        return {n for n in self.names if n != name and not self.of(n).isdisjoint(mine)}


def links_of(statement: gast.stmt, resolve, containers: set[str]) -> list[tuple[str, set[str]]]:
    """``(name, names it may share memory with)`` for what ``statement`` binds or stores."""
    kind = type(statement)
    if kind is gast.Assign:
        sources = assigned_sources(statement.value, resolve, containers)
        links = []
        first = None  # a = b = v: every target holds the same value, made once
        for target in statement.targets:
            if type(target) is gast.Subscript:  # items[i] = x: a list holds x itself
                base = base_of(target)
                if type(base) is gast.Name and base.id in containers:
                    links.append((base.id, sources))
                continue
            names = [n.id for n in walk(target) if type(n) is gast.Name]
            if type(target) in (gast.Tuple, gast.List) and _unpacks_numbers(
                statement.value, resolve
            ):
                continue  # x, v = traj[t] of a 2-D array: numbers
            if first is not None and type(target) is gast.Name:
                links.append((target.id, {first}))
                continue
            pairs = _paired(target, statement.value)
            if pairs is not None and len(statement.targets) == 1:  # t, y = 0.0, y0
                links += [
                    (n.id, assigned_sources(part, resolve, containers))
                    for element, part in pairs
                    for n in walk(element)
                    if type(n) is gast.Name
                ]
                continue
            links += [(name, sources) for name in names]
            if type(target) is gast.Name:
                first = target.id
        return links
    if kind is gast.FunctionDef:  # a function holding what it reads: return u[1:]
        return [(statement.name, _held_by(statement))]
    if kind is gast.For:  # for row in X: each row is a view of X
        sources = sources_of(statement.iter, resolve)
        return [(n.id, sources) for n in walk(statement.target) if type(n) is gast.Name]
    if kind is gast.Expr and type(statement.value) is gast.Call:  # items.append(x)
        func = statement.value.func
        if type(func) is gast.Attribute and type(base_of(func.value)) is gast.Name:
            owner = base_of(func.value)
            if resolve is not None and isinstance(resolve(owner), types.ModuleType):
                return []  # np.exp(y, out=y): a module keeps nothing
            sources = set().union(*(sources_of(a, resolve) for a in statement.value.args))
            return [(owner.id, sources)]
    return []


def _paired(target: gast.expr, value: gast.expr) -> list[tuple[gast.expr, gast.expr]] | None:
    """The targets of ``a, b = u, v`` each with its value, when both are tuples or lists
    written out, of one length, without ``*``; else None."""
    kinds = (gast.Tuple, gast.List)
    if type(target) not in kinds or type(value) not in kinds:
        return None
    if len(target.elts) != len(value.elts):
        return None
    if any(type(e) is gast.Starred for e in (*target.elts, *value.elts)):
        return None
    return list(zip(target.elts, value.elts))


def _unpacks_numbers(value: gast.expr, resolve) -> bool:
    """Whether the entries an unpacking takes from ``value`` are numbers: ``value`` is an
    array of one dimension (``traj[t]`` of a 2-D array, or a name of a 1-D one)."""
    if type(value) is gast.Subscript:
        return _indexed_ndim(value, resolve) == 1
    ndims: dict[str, int] = getattr(resolve, "ndims", None) or {}
    return type(value) is gast.Name and ndims.get(value.id) == 1


def assigned_sources(value: gast.expr, resolve, containers: set[str]) -> set[str]:
    """The names whose memory a name bound to ``value`` may share: ``sources_of(value)``,
    but ``items`` for ``items.copy()`` of a list or dict made here (a new list holding the
    same arrays)."""
    copied = _copied_container(value, containers)
    return sources_of(value, resolve) if copied is None else {copied}


def _copied_container(value: gast.expr, containers: set[str]) -> str | None:
    """``items`` for ``items.copy()`` of a list or dict made here."""
    func = value.func if type(value) is gast.Call else None
    if func is None:
        return None
    if type(func) is gast.Attribute and func.attr == "copy" and type(func.value) is gast.Name:
        return func.value.id if func.value.id in containers else None
    return None


def base_of(node: gast.expr) -> gast.expr:
    while type(node) in (gast.Subscript, gast.Attribute):
        node = node.value
    return node


def sources_of(node: gast.expr | None, resolve) -> set[str]:
    """The names whose memory the value of ``node`` may share."""
    if node is None:
        return set()
    kind = type(node)
    if kind is gast.Name:
        return {node.id}
    if kind is gast.Attribute and node.attr in _NUMBER_ATTRIBUTES:
        return set()
    if kind is gast.Subscript and _indexed_ndim(node, resolve) == 0:
        return set()  # traj[t, 0] of a 2-D array: a number
    if kind in (gast.Subscript, gast.Attribute, gast.Starred):
        return sources_of(node.value, resolve)
    if kind in (gast.Tuple, gast.List, gast.Set):
        return set().union(*(sources_of(e, resolve) for e in node.elts))
    if kind is gast.Dict:
        return set().union(*(sources_of(v, resolve) for v in node.values))
    if kind is gast.IfExp:
        return sources_of(node.body, resolve) | sources_of(node.orelse, resolve)
    if kind is gast.BoolOp:
        return set().union(*(sources_of(v, resolve) for v in node.values))
    if kind in (gast.ListComp, gast.GeneratorExp, gast.SetComp, gast.DictComp):
        # the elements, and what they are taken from where they hold it: [y[i] for i in
        # ...], [r for r in y]; not [np.zeros_like(w) for w in ws], whose entries are new
        parts = [node.key, node.value] if kind is gast.DictComp else [node.elt]
        found = set().union(*(sources_of(p, resolve) for p in parts))
        for generator in reversed(node.generators):
            targets = {n.id for n in walk(generator.target) if type(n) is gast.Name}
            if found & targets:
                found = (found - targets) | sources_of(generator.iter, resolve)
        return found
    if kind is gast.Call:
        return _call_sources(node, resolve)
    if kind is gast.Lambda:  # a function holding what it reads: lambda: u[1:]
        return _held_by(node)
    if kind is gast.BinOp and (_is_sequence(node.left) or _is_sequence(node.right)):
        if type(node.op) is gast.Mult:  # [None] * n: the items of the sequence, not the count
            sides = [side for side in (node.left, node.right) if _is_sequence(side)]
            return set().union(*(sources_of(side, resolve) for side in sides))
        return sources_of(node.left, resolve) | sources_of(node.right, resolve)  # [a] + rest
    return set()  # arithmetic, comparisons, literals: new values


def _is_sequence(node: gast.expr) -> bool:
    """A list or tuple written out: ``+`` and ``*`` of it make a sequence of the same items."""
    return type(node) in (gast.List, gast.Tuple, gast.ListComp)


def _call_sources(call: gast.Call, resolve) -> set[str]:
    func = call.func
    arguments = [*call.args, *(k.value for k in call.keywords)]
    every = set().union(*(sources_of(a, resolve) for a in arguments))
    if isinstance(resolve, _LocalResolver) and type(func) is gast.Name:
        local = resolve.local(func.id)
        if local is not None:  # a function defined here may return what it closes over
            return local.sources(call, resolve) if local.known else every | resolve.captured
    target = resolved_target(func, resolve)
    if fresh_result(target, call):
        return set()
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", None)
    if target is not None and module.startswith("s2sgrad.runtime") and name in _HELPER_RESULTS:
        shared = [call.args[i] for i in _HELPER_RESULTS[name] if i < len(call.args)]
        return set().union(*(sources_of(a, resolve) for a in shared))
    if type(func) is gast.Attribute and (target is None or _is_array_method(target)):
        receiver = sources_of(func.value, resolve)
        if func.attr in _FRESH_METHODS and not keeps_memory(call, func.attr):
            return set()
        if func.attr in _RECEIVER_VIEW_METHODS:
            return receiver
        return receiver | every  # a method may return its receiver, a view, an argument
    if isinstance(target, types.FunctionType):  # a function of the user's, or generated
        returned = _returned_parameters(target)
        if returned is not None:
            chosen = _arguments_for(call, target, returned)
            return set().union(*(sources_of(a, resolve) for a in chosen))
    if target is None and isinstance(resolve, _LocalResolver):
        # a function made here (a closure, a partial, one a helper returned) may return
        # what it holds: fs[0](), getter(), partial(view, 1)()
        every |= sources_of(func, resolve) & resolve.bound
    return every  # it may return what it was given


def _held_by(function: gast.FunctionDef | gast.Lambda) -> set[str]:
    """The names of the code around ``function`` that it reads (and so holds)."""
    own = parameter_names(function)
    inner: set[str] = set()
    if isinstance(function, gast.FunctionDef):
        declared = {n for s in walk(function) if type(s) is gast.Nonlocal for n in s.names}
        inner = set().union(*map(names_written, function.body)) - declared
    read = {n.id for n in walk(function) if type(n) is gast.Name and type(n.ctx) is gast.Load}
    return read - own - inner


class _LocalFunction:
    """A function the analysed code defines (``def`` or a lambda bound to a name): what
    its result may share, from its own code: the arguments its parameters take, and the
    enclosing code's names it reads (a closure's ``return u[1:]`` is a view of ``u``)."""

    def __init__(self, node: gast.FunctionDef | gast.Lambda):
        self.node = node
        arguments = node.args
        self.known = not (arguments.vararg or arguments.kwarg or arguments.kwonlyargs)
        self.parameters = [a.id for a in arguments.posonlyargs + arguments.args]
        self._returned: set[str] | None = None

    def sources(self, call: gast.Call, resolve) -> set[str]:
        returned = self._returned_names(resolve)
        chosen = [a for a, p in zip(call.args, self.parameters) if p in returned]
        chosen += [k.value for k in call.keywords if k.arg in returned]
        if any(type(a) is gast.Starred for a in call.args):
            chosen = list(call.args)
        outer = returned - set(self.parameters)
        return set().union(outer, *(sources_of(a, resolve) for a in chosen))

    def _returned_names(self, resolve) -> set[str]:
        """Parameters and enclosing names whose values the result may share."""
        if self._returned is not None:
            return self._returned
        self._returned = set(self.parameters)  # a call of itself, while this runs
        node, parameters = self.node, set(self.parameters)
        if isinstance(node, gast.Lambda):
            returned = sources_of(node.body, resolve)
            made: set[str] = set()
        else:
            statements = list(nested_statements(node.body))
            sharing = Sharing(statements, resolve, container_names(statements), parameters)
            made = set().union(*map(names_written, statements)) - parameters
            returned = set()
            for statement in statements:
                if type(statement) is gast.Return and statement.value is not None:
                    for name in sources_of(statement.value, resolve):
                        returned |= sharing.of(name)
        self._returned = returned - made
        return self._returned


class _LocalResolver:
    """``resolve``, knowing which names the analysed code binds to functions it defines."""

    def __init__(self, resolve, functions: dict, captured: set[str], bound, statements=()):
        self.resolve = resolve
        self.functions = functions
        self.captured = captured  # every name a function defined here reads
        self._bound: set[str] | None = bound  # None: found at the first question
        self._statements = statements
        # name -> its arrays' number of dimensions, for names only ever bound to np.zeros
        # and the like of a shape written out; and names only ever a range loop's target
        self._ndims: dict[str, int] = {}
        self._integers: set[str] = set()
        self._facts_of: list | None = None  # the statements they are found in when asked

    @property
    def ndims(self) -> dict[str, int]:
        self._array_facts()
        return self._ndims

    @property
    def integers(self) -> set[str]:
        self._array_facts()
        return self._integers

    def _array_facts(self) -> None:
        """Find ``ndims`` and ``integers`` now, if :func:`with_local_functions` left them
        to the first question (the code stays as it is until then)."""
        statements, self._facts_of = self._facts_of, None
        if statements is not None:
            self._ndims, self._integers = _array_facts(statements, self.resolve)

    @property
    def bound(self) -> set[str]:
        """Every name the analysed code binds (what few calls ask: found when first asked,
        where :func:`with_local_functions` was told the code stays as it is)."""
        if self._bound is None:
            self._bound = names_written_in_all(self._statements)
            self._statements = ()
        return self._bound

    def __call__(self, node):
        return NOT_FOUND if self.resolve is None else self.resolve(node)

    def local(self, name: str) -> _LocalFunction | None:
        return self.functions.get(name)


def with_local_functions(statements, resolve, unchanged: bool = False):
    """``resolve`` wrapped with the names ``statements`` bind, and the functions they
    define (``def`` or a lambda bound to a name) by name. ``unchanged``: the caller does
    not change the code while it asks the resolver, which then finds the names bound
    only if asked (most analyses never ask)."""
    if isinstance(resolve, _LocalResolver):
        return resolve
    functions: dict[str, _LocalFunction] = {}
    captured: set[str] = set()
    for statement in statements:
        if type(statement) is gast.FunctionDef:
            functions[statement.name] = _LocalFunction(statement)
            captured |= {n.id for n in walk(statement) if type(n) is gast.Name}
        elif type(statement) is gast.Assign and type(statement.value) is gast.Lambda:
            for target in statement.targets:
                if type(target) is gast.Name:
                    functions[target.id] = _LocalFunction(statement.value)
            captured |= {n.id for n in walk(statement.value) if type(n) is gast.Name}
    if functions:  # how often each name is bound: only asked of the functions' names
        counts = Counter(name for statement in statements for name in names_written(statement))
        for name in list(functions):
            if counts[name] != 1:  # rebound: which function a call meets is not known
                functions[name] = _UNKNOWN_LOCAL
        local = _LocalResolver(resolve, functions, captured, set(counts))
    elif unchanged:  # one walk of them all, if ever asked
        local = _LocalResolver(resolve, functions, captured, None, list(statements))
    else:
        local = _LocalResolver(resolve, functions, captured, names_written_in_all(statements))
    if resolve is None:
        return local
    if unchanged:  # most analyses never ask: found at the first question
        local._facts_of = list(statements)
    else:
        local._ndims, local._integers = _array_facts(statements, resolve)
    return local


# NumPy's functions that make a new array of the shape given first
_SHAPED = tuple(id(f) for f in (np.zeros, np.ones, np.empty, np.full))


def _array_facts(statements, resolve) -> tuple[dict[str, int], set[str]]:
    """``(ndims, integers)``: the names every binding of which is ``np.zeros`` (``ones``,
    ``empty``, ``full``) of a shape written out, with their number of dimensions; and the
    names bound only as the target of a loop over ``range``. Any other binding of a name
    (a comprehension's variable, an unpacking, ``:=``, ``with ... as``) leaves it out."""
    made: dict[str, set[int]] = {}
    integers: set[str] = set()
    known: set[int] = set()  # the Name nodes of the bindings above
    for statement in statements:
        kind = type(statement)
        if kind is gast.For and type(statement.target) is gast.Name:
            iterable = statement.iter
            if type(iterable) is gast.Call and resolve(iterable.func) is range:
                integers.add(statement.target.id)
                known.add(id(statement.target))
        elif kind is gast.Assign and all(type(t) is gast.Name for t in statement.targets):
            ndim = _made_ndim(statement.value, resolve)
            if ndim is not None:
                for target in statement.targets:
                    made.setdefault(target.id, set()).add(ndim)
                    known.add(id(target))
    if not made and not integers:
        return {}, set()
    other: set[str] = set()  # the names bound otherwise
    for statement in statements:
        if type(statement) is gast.Assign and plain_binding(statement) is not None:
            target = statement.targets[0]  # the one name it binds: no walk
            if id(target) not in known:
                other.add(target.id)
            continue
        # a statement that holds none has every node below it as its own
        nodes = walk(statement) if type(statement) in _FLAT else _own_nodes(statement)
        other.update(
            n.id
            for n in nodes
            if type(n) is gast.Name and type(n.ctx) is not gast.Load and id(n) not in known
        )
    ndims = {n: d.pop() for n, d in made.items() if len(d) == 1 and n not in other}
    return ndims, integers - other - set(made)


_FLAT = frozenset({gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Return})


def _own_nodes(statement: gast.stmt) -> list[gast.AST]:
    """The nodes of ``statement`` outside the statements it holds, which ``statements``
    lists on their own (a walk of each would see a nested block once per block around it)."""
    found: list[gast.AST] = []
    stack = list(gast.iter_child_nodes(statement))
    while stack:
        node = stack.pop()
        if isinstance(node, gast.stmt):
            continue
        found.append(node)
        stack.extend(gast.iter_child_nodes(node))
    return found


def _made_ndim(value: gast.expr, resolve) -> int | None:
    """The number of dimensions of ``np.zeros((m, n))`` and the like, else None."""
    if type(value) is not gast.Call or not value.args:
        return None
    if id(resolve(value.func)) not in _SHAPED:
        return None
    shape = value.args[0]
    if type(shape) is gast.Tuple and not any(type(e) is gast.Starred for e in shape.elts):
        return len(shape.elts)
    if type(shape) is gast.Constant and type(shape.value) is int:
        return 1
    return None


def _indexed_ndim(node: gast.Subscript, resolve) -> int | None:
    """How many dimensions ``a[i, j]`` keeps of an array ``a`` of known dimensions when
    every index is an integer (a constant, a range loop's target, arithmetic of them; an
    array there would make a copy): None when that is not certain (a slice, ``None``,
    ``...``, or an index that might hold one)."""
    base = node.value
    ndims = getattr(resolve, "ndims", None)
    if not ndims or type(base) is not gast.Name or base.id not in ndims:
        return None
    indices = node.slice.elts if type(node.slice) is gast.Tuple else [node.slice]
    if not all(is_integer_arithmetic(i, resolve.integers) for i in indices):
        return None
    kept = ndims[base.id] - len(indices)
    return kept if kept >= 0 else None


class _UnknownLocal:
    known = False


_UNKNOWN_LOCAL: Any = _UnknownLocal()


def updated_name(statement: gast.stmt) -> str | None:
    """The name whose value ``statement`` changes in place (``x += v``, ``x[i] = v``, and
    ``x[i] += v``, which changes x, or the array x[i] of a list x, in place)."""
    if type(statement) is gast.AugAssign and type(statement.target) is gast.Name:
        return statement.target.id
    if type(statement) is gast.AugAssign and type(statement.target) is gast.Subscript:
        base = base_of(statement.target)
        return base.id if type(base) is gast.Name else None
    if type(statement) is gast.Assign and len(statement.targets) == 1:
        target = statement.targets[0]
        if type(target) is gast.Subscript and type(base_of(target)) is gast.Name:
            return base_of(target).id
    return None


class Layout:
    """Where each statement sits: its position in the flattened statements, the block (list)
    holding it, and the compound statement and block around each block."""

    def __init__(self, body: list[gast.stmt], statements: list[gast.stmt]):
        self.position = {id(s): i for i, s in enumerate(statements)}
        self.block_of: dict[int, list] = {}
        self.owner: dict[int, tuple[gast.stmt, list]] = {}  # id(block) -> (statement, block)
        self._enter(body)

    def _enter(self, block: list[gast.stmt]) -> None:
        for statement in block:
            self.block_of[id(statement)] = block
            if isinstance(statement, (gast.FunctionDef, gast.ClassDef)):
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list):
                    self.owner[id(inner)] = (statement, block)
                    self._enter(inner)

    def made_since(self, update: gast.stmt, updated: str, index: int, resolve):
        """``(first, end)``: the positions of the statements that can make a name share the
        array ``updated`` holds at ``update`` (at ``index``), when the binding that made it
        is known to run before ``update`` and to make a new array (``v = np.zeros(3)``, ``g =
        owned(g)``); else None. A loop around ``update`` that the binding is outside of
        runs ``update`` again after all of the loop's statements."""
        statement, block, end = update, self.block_of[id(update)], index
        while True:
            at = next(i for i, s in enumerate(block) if s is statement)
            for earlier in reversed(block[:at]):
                if updated in names_written(earlier):
                    if _updates_itself(earlier, updated):
                        continue  # W *= 2.0 after W = W.copy(): the same new array
                    single = type(earlier) is gast.Assign and len(earlier.targets) == 1
                    if single and type(earlier.targets[0]) is gast.Name:
                        fresh = not sources_of(earlier.value, resolve)
                        return (self.position[id(earlier)] + 1, end) if fresh else None
                    return None
            if id(block) not in self.owner:
                return None
            statement, block = self.owner[id(block)]
            if isinstance(statement, (gast.For, gast.While)):
                if isinstance(statement, gast.For) and updated in names_written(statement.target):
                    return None
                end = max(end, self._end_of(statement))

    def _end_of(self, statement: gast.stmt) -> int:
        """The position just after ``statement`` and everything nested in it."""
        return max(self.position[id(s)] for s in nested_statements([statement])) + 1


def _updates_itself(statement: gast.stmt, name: str) -> bool:
    """Whether ``statement`` is ``name op= value``: it leaves ``name`` the array it held (or,
    for a number, a number, which no other name shares)."""
    return (
        type(statement) is gast.AugAssign
        and type(statement.target) is gast.Name
        and statement.target.id == name
    )


def container_names(statements: list[gast.stmt]) -> set[str]:
    """Names made as lists or dicts: storing into them keeps a reference (into an array,
    a copy of the values)."""
    found = set()
    for statement in statements:
        if type(statement) is not gast.Assign:
            continue
        target, value = statement.targets[0], statement.value
        if type(target) is gast.Name and makes_container(value):
            found.add(target.id)
        elif type(target) is type(value) is gast.Tuple and len(target.elts) == len(value.elts):
            # params, m = {"w": w0}, {"w": zeros}: each name made so, as by one assignment
            pairs = zip(target.elts, value.elts)
            found.update(n.id for n, v in pairs if type(n) is gast.Name and makes_container(v))
    return found


def makes_container(value: gast.expr) -> bool:
    """Whether ``value`` makes a new list or dict (``[...]``, ``dict(...)``, a comprehension)."""
    return type(value) in (gast.List, gast.Dict, gast.ListComp, gast.DictComp) or (
        type(value) is gast.Call
        and type(value.func) is gast.Name
        and value.func.id in ("list", "dict")
    )


def _is_array_method(target: Any) -> bool:
    return isinstance(getattr(target, "__self__", None), np.ndarray)


# code object -> the parameters whose values the function's result may share (None: unknown)
_SUMMARIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SUMMARISING: set = set()


def _returned_parameters(function: types.FunctionType) -> frozenset[str] | None:
    """The parameters of ``function`` whose values its result may share, from the same
    analysis run on its source; None when that cannot be told (no source, ``*args``,
    a generator, a function that calls itself).

    Example::

        def helper(a, b):
            return a * np.sin(b), (a,)

        _returned_parameters(helper)  # frozenset({'a'})
    """
    function = original_of(function)  # a runtime helper the tape routes: its own code
    code = function.__code__
    if code in _SUMMARIES:
        return _SUMMARIES[code]
    if code in _SUMMARISING:
        return None
    _SUMMARISING.add(code)
    try:
        summary = _summary(function)
    finally:
        _SUMMARISING.discard(code)
    _SUMMARIES[code] = summary
    return summary


def _own_code(function: types.FunctionType) -> types.FunctionType:
    """``function``, or, when it has a derivative rule (a runtime helper, a SciPy function),
    a copy of it without one: ``parse_function`` reads a function with a rule as a call of
    its primitive (any argument may come back), a copy as its own source. A helper the tape
    has routed is summarised through such a copy (``original_of``), so without this the
    summary, cached by code, would depend on whether a tape had recorded before.

    Example::

        _own_code(runtime.added_at)  # a copy: 'return a + index_cotangent(...)' is read
    """
    if not differentiated_by_its_rule(function):
        return function
    copy = types.FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    copy.__module__ = function.__module__
    return copy


def _summary(function: types.FunctionType) -> frozenset[str] | None:
    flags = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR
    if function.__code__.co_flags & flags:
        return None
    try:
        parsed = parse_function(_own_code(function))
    except Exception:  # no source, or source the transformer cannot read
        return None
    statements = list(nested_statements(parsed.node.body))
    parameters = parameter_names(parsed.node)
    sharing = Sharing(statements, parsed.resolve, container_names(statements), parameters)
    returned: set[str] = set()
    for statement in statements:
        if type(statement) is gast.Return and statement.value is not None:
            for name in sources_of(statement.value, parsed.resolve):
                returned |= sharing.of(name)
    return frozenset(returned & parameters)


# code object -> whether every value the function returns is an array (or list) it made
_FRESH_RETURNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def returns_fresh(function: Any) -> bool:
    """Whether ``function``, one of the user's, returns only values it made itself (no
    parameter, global or captured value, nor a view of one), from its source; False when
    that cannot be told.

    Example::

        def kernel(x):
            return np.exp(-np.subtract.outer(x, x) ** 2)

        returns_fresh(kernel)  # True: kernel(x)[1, 1] += 0.5 changes nothing else
    """
    if not isinstance(function, types.FunctionType):
        return False
    module = getattr(function, "__module__", None) or ""
    if module.split(".")[0] in ("s2sgrad", "numpy"):
        return False  # the engines' primitives, NumPy's own: fresh_results' closed list
    code = function.__code__
    if code not in _FRESH_RETURNS:
        _FRESH_RETURNS[code] = False  # a function that calls itself: not known
        _FRESH_RETURNS[code] = _made_inside(function)
    return _FRESH_RETURNS[code]


def _made_inside(function: types.FunctionType) -> bool:
    flags = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR
    if function.__code__.co_flags & flags or function.__closure__:
        return False
    try:
        parsed = parse_function(function)
    except Exception:  # no source, or source the transformer cannot read
        return False
    statements = list(nested_statements(parsed.node.body))
    parameters = parameter_names(parsed.node)
    sharing = Sharing(statements, parsed.resolve, container_names(statements), parameters)
    made = set().union(*map(names_written, statements)) - parameters
    returns = [s for s in statements if type(s) is gast.Return]
    if not returns or any(s.value is None for s in returns):
        return False
    for statement in returns:
        if type(statement.value) is not gast.Name:
            if sources_of(statement.value, parsed.resolve):
                return False  # a view, or a container holding what came from outside
            continue
        if not sharing.of(statement.value.id) <= made:
            return False
    return True


def _arguments_for(call: gast.Call, function: types.FunctionType, parameters) -> list:
    """The arguments of ``call`` that go to ``parameters`` of ``function`` (all of them
    where ``*`` or ``**`` hides which is which). A function the tape has routed (SciPy's,
    NumPy's ``as_strided``) runs a router's code now: its parameters are its original's."""
    if any(type(a) is gast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
        return [*call.args, *(k.value for k in call.keywords)]
    code = original_of(function).__code__
    positional = code.co_varnames[: code.co_argcount]
    chosen = [a for a, p in zip(call.args, positional) if p in parameters]
    return chosen + [k.value for k in call.keywords if k.arg in parameters]


def resolved_target(func: gast.expr, resolve) -> Any:
    if resolve is None:
        return None
    try:
        target = resolve(func)
    except Exception:
        return None
    return None if target is NOT_FOUND else target
