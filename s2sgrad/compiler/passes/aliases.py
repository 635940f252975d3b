"""Which names may share an array's memory, and the in-place updates that sharing forbids.

``x += v`` changes an array in place, while the ``x = x + v`` that the transformer works
with makes a new one. The two differ only when another name sees the same memory (``w =
x``, a view such as ``x[0]``, ``x.T`` or ``np.flip(x)``, a list holding ``x``) and is read
after the update: NumPy's answer then depends on the sharing, and neither engine records
it. Such code is refused with a message that says how to write it, rather than
differentiated wrongly: an item update at once (only arrays and lists have items), and
``x op= v`` when it runs with an array in ``x`` (with a number it means ``x = x op v``).

The analysis is deliberately simple and errs on the side of refusing. Each name gets the
*origins* its value may have (the arrays the code makes, and values from outside), through
every binding that may pass a value on without copying, regardless of the order of
statements. The world is closed: a call makes a new value only when it is known to (the
NumPy functions, array methods and builtins listed below, ufuncs, without ``out=``); any
other call may return its arguments or views of them. A Python function called is read
(the same analysis on its source) for the arguments its result may share; one without
source is taken to return any of them. Two
names may share memory when their origins meet. Only when the updated array was made
anew earlier in the same or an enclosing block (``v = np.zeros(3)``) is order used: then
only what was made from it since can share it.
"""

from __future__ import annotations

import builtins
import inspect
import sys
import sysconfig
import types
import weakref
from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.frontend import NOT_FOUND, parse_function
from s2sgrad.compiler.syntax import (
    MUTATING_METHODS,
    names_read,
    names_written,
    nested_statements,
    parameter_names,
    walk,
)
from s2sgrad.errors import UnsupportedError, where
from s2sgrad.rules import get_rule

__all__ = [
    "shared_in_place_updates",
    "index_list_loops",
    "fresh_result",
    "mutated_parameters",
    "calls_that_mutate",
    "refuse_mutating_calls",
]

# The world is closed: a call may return (a view of) any of its arguments unless it is
# positively known to return a new array. NumPy functions that do, by module and name
# (not among them: asarray, ascontiguousarray, require, reshape, ravel, squeeze, transpose,
# matrix_transpose, atleast_*d, broadcast_to, expand_dims, flip, rot90, split and its
# kin, unstack, einsum ('ij->ji' is a view), diag and diagonal, real, imag,
# real_if_close, linalg.matrix_power (a power of 1 is the argument itself) ...).
_FRESH_NUMPY = {
    "numpy": frozenset(
        """
        zeros ones empty full zeros_like ones_like empty_like full_like arange
        linspace logspace geomspace eye identity tri tril triu copy array
        indices fromfunction fromiter meshgrid concatenate concat stack vstack
        hstack dstack column_stack block append insert delete tile repeat pad
        roll resize sort argsort argmax argmin nonzero argwhere flatnonzero
        where searchsorted unique unique_values partition argpartition lexsort
        count_nonzero sort_complex extract select piecewise choose compress take
        take_along_axis histogram histogram2d bincount digitize isin intersect1d
        union1d setdiff1d setxor1d sum prod mean std var average median
        percentile quantile nansum nanprod nanmean nanstd nanvar nanmax nanmin
        nanmedian nanpercentile nanquantile nanargmax nanargmin nancumsum
        nancumprod max min amax amin ptp cumsum cumprod cumulative_sum
        cumulative_prod diff ediff1d gradient trapezoid cross dot vdot inner
        outer tensordot kron trace clip round around convolve correlate interp
        polyval polyfit all any allclose isclose array_equal cov corrcoef angle
        unwrap sinc i0 nan_to_num shape ndim size result_type broadcast_shapes
        iscomplexobj isrealobj isscalar
        """.split()  # noqa: SIM905
    ),
    "numpy.linalg": frozenset(
        """
        inv pinv solve lstsq det slogdet eig eigh eigvals eigvalsh svd svdvals
        qr cholesky norm vector_norm matrix_norm matrix_rank cond tensorsolve
        tensorinv multi_dot cross outer vecdot matmul trace
        """.split()  # noqa: SIM905
    ),
    "numpy.fft": frozenset(
        """
        fft ifft rfft irfft fft2 ifft2 rfft2 irfft2 fftn ifftn rfftn irfftn hfft
        ihfft fftfreq rfftfreq fftshift ifftshift
        """.split()  # noqa: SIM905
    ),
}
# ... unless given a parameter that can make them return an argument: (name, position)
_FRESH_UNLESS = {
    "array": ("copy", 2),
    "diff": ("n", 1),
    "nan_to_num": ("copy", 1),
    "meshgrid": ("copy", None),
}
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
_FRESH_BUILTINS = frozenset(
    """
    len abs float int bool complex round range isinstance issubclass hasattr
    callable id hash type print str repr format any all sum divmod pow ord chr
    """.split()  # noqa: SIM905
)
# s2sgrad's run-time helpers in generated code: the arguments their result may share
_HELPER_RESULTS = {
    "unbroadcast": (0,),
    "as_gradient": (0,),
    "cast_like": (0,),
    "add_cotangents": (0, 1),
    "owned": (),
    "snapshot": (),
    "assigned_cotangent": (),
    "only_last_writes": (0,),
    "seed_cotangent": (),
    "zeros_like_value": (),
    "zeros_like_structure": (),
}


def shared_in_place_updates(
    function: gast.FunctionDef, locate: Callable[[gast.AST], str], resolve=None
) -> dict[int, str]:
    """The in-place updates (``x op= v``, ``x[i] = v``) of ``function`` after which a name
    that may share ``x``'s memory is read, by ``id`` of the statement, each with the message
    that explains it (see the module docstring).

    ``resolve`` maps a function reference to its object (None: judge by name alone).

    Example::

        # w = x; x += 1.0; return np.sum(w)   ->  {id(x += 1.0): "...: 'x += ...' ..."}
    """
    statements = list(nested_statements(function.body))
    updates = [(i, s, name) for i, s in enumerate(statements) if (name := _updated(s))]
    if not updates:
        return {}
    containers = _containers(statements)
    everywhere = _Sharing(statements, resolve, containers, parameter_names(function))
    layout = _Layout(function.body, statements)
    loops = _loop_spans(statements)
    buffers = _swapped_buffers(function, statements, resolve)
    synced = {
        s.targets[0].id: s.s2s_synced
        for s in statements
        if getattr(s, "s2s_synced", None) and type(s.targets[0]) is gast.Name
    }
    found = {}
    for index, update, updated in updates:
        if getattr(update, "s2s_synced", None):
            continue  # items[i] = g: the list gets back the array it holds
        since = layout.made_since(update, updated, index, resolve)
        if since is None:
            sharing = everywhere.with_(updated)
        else:  # only what was made from the new array since can share it
            made = statements[since[0] : since[1]]
            sharing = _Sharing(made, resolve, containers, {updated}).with_(updated)
        sharing -= buffers.get(updated, frozenset())  # each holds an array of its own
        sharing.discard(synced.get(updated))  # the list's entry, stored back after the loop body
        read, later = next(
            (
                (read, later)
                for later in _run_after(index, statements, loops)
                if (read := _first_read(statements[later], sharing)) is not None
            ),
            (None, None),
        )
        if read is None:
            continue
        if type(update) is gast.AugAssign and type(update.target) is gast.Subscript:
            symbol = _SYMBOLS.get(type(update.op), "?=")
            what = f"'{updated}[...] {symbol} ...' changes {updated} (or the array in it) in place"
            instead = f"Make the changed {updated} a new array (np.where, np.concatenate)"
        elif type(update) is gast.AugAssign:
            symbol = _SYMBOLS.get(type(update.op), "?=")
            what = f"'{updated} {symbol} ...' changes the array {updated} in place"
            instead = (
                f"Write '{updated} = {updated} {symbol[:-1]} ...' to make a new array "
                f"(what the code means if {updated} is a number)"
            )
        else:
            what = f"'{updated}[...] = ...' changes {updated} in place"
            instead = f"Make the changed {updated} a new array (np.where, np.concatenate)"
        found[id(update)] = (
            f"{locate(update)}: {what}, and '{read}', read afterwards "
            f"({locate(statements[later])}), may share memory with it, so the result depends "
            f"on that sharing. {instead}, or give '{read}' a copy (.copy())"
        )
    return found


def index_list_loops(function: gast.FunctionDef, names, resolve) -> None:
    """Rewrite, in place, ``for g in items:`` whose body updates ``g`` in place (``g[:] *=
    s``, the book's gradient clipping) into ``for i in range(len(items)): g = items[i]; ...;
    items[i] = g``, when ``items`` is a list of distinct new arrays that nothing else holds:
    then the update changes the list's entry, which the store makes plain to both engines
    (at run time it stores the same array). Both statements are marked ``s2s_synced``.

    Example::

        # for g in grads: g[:] *= 0.5  ->  for i in range(len(grads)): g = grads[i]; ...
    """
    statements = list(nested_statements(function.body))
    for loop in statements:
        if not _updates_its_entries(loop):
            continue
        items, entry = loop.iter.id, loop.target.id
        if not _owns_distinct_arrays(function, statements, items, loop, resolve):
            continue
        index = names.fresh("index")
        length = gast.Call(func=_load("len"), args=[_load(items)], keywords=[])
        loop.iter = gast.Call(func=_load("range"), args=[length], keywords=[])
        loop.target = gast.Name(id=index, ctx=gast.Store(), annotation=None, type_comment=None)
        read = gast.Assign(
            targets=[gast.Name(id=entry, ctx=gast.Store(), annotation=None, type_comment=None)],
            value=gast.Subscript(value=_load(items), slice=_load(index), ctx=gast.Load()),
            type_comment=None,
        )
        place = gast.Subscript(value=_load(items), slice=_load(index), ctx=gast.Store())
        back = gast.Assign(targets=[place], value=_load(entry), type_comment=None)
        for statement in (read, back):
            gast.copy_location(statement, loop)
            statement.s2s_synced = items
        loop.body = [read, *loop.body, back]


def _load(name: str) -> gast.Name:
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def _updates_its_entries(loop: gast.stmt) -> bool:
    """``for g in items:`` (no ``else``, ``break`` or ``continue``) whose body updates ``g``
    by item and never rebinds it."""
    if type(loop) is not gast.For or loop.orelse:
        return False
    if type(loop.target) is not gast.Name or type(loop.iter) is not gast.Name:
        return False
    entry = loop.target.id
    inner = list(nested_statements(loop.body))
    if any(type(n) in (gast.Break, gast.Continue) for s in loop.body for n in walk(s)):
        return False
    if any(
        entry in names_written(s.target if type(s) is gast.For else s)
        for s in inner
        if type(s) not in (gast.If, gast.While)
    ):
        return False
    return any(_updated(s) == entry and type(_base(_target_of(s))) is gast.Name for s in inner)


def _target_of(statement: gast.stmt) -> gast.expr:
    return statement.target if type(statement) is gast.AugAssign else statement.targets[0]


def _owns_distinct_arrays(function, statements, items: str, loop, resolve) -> bool:
    """Whether every value ``items`` holds is a list, written out, of new arrays (each its
    own), and no name but ``loop``'s variable takes them out of it: no other loop over it,
    no alias, entry read into a name, store, or call given the list."""
    if items in parameter_names(function) or {"len", "range"} & names_written(function):
        return False
    for statement in statements:
        if statement is loop:
            continue
        kind = type(statement)
        if kind is gast.Assign and items in names_written(statement):
            value = statement.value
            copy = type(value) is gast.Name and value.id == items
            written = type(value) is gast.List and not any(_sources(e, resolve) for e in value.elts)
            if not (copy or written) or len(statement.targets) != 1:
                return False
        else:
            header = statement.target if kind is gast.For else statement
            if (kind is gast.For or kind not in _PLAIN) and items in names_written(header):
                return False  # bound by a loop, a with, an unpacking ...
        copy = kind is gast.Assign and type(statement.value) is gast.Name
        for target, sources in _links(statement, resolve, {items}):
            if items in sources and target != items:
                return False  # an entry taken out of the list, or the list into another
            if target == items and sources and not copy:
                return False  # an array put in that may be held elsewhere, or twice
        if any(_given(node, items) for node in walk(statement)):
            return False
    return True


_PLAIN = (gast.If, gast.For, gast.While, gast.Assign, gast.Expr, gast.Return)


def _given(node: gast.AST, items: str) -> bool:
    """Whether ``node`` is a call, other than ``len``, given the list ``items``."""
    if type(node) is not gast.Call or (type(node.func) is gast.Name and node.func.id == "len"):
        return False
    return any(type(a) is gast.Name and a.id == items for a in node.args)


def _swapped_buffers(function: gast.FunctionDef, statements, resolve) -> dict[str, set[str]]:
    """Names that only ever hold arrays made anew and trade them among themselves
    (``u, new = new, u``), each mapped to the others of its group: at any moment each holds
    an array none of the others holds, so updating one in place changes none of the others.

    Example::

        # u = x.copy(); new = np.empty_like(u); ...; u, new = new, u  ->  {"u": {"new"}, ...}
    """
    swaps = {id(s): names for s in statements if (names := _swapped(s)) is not None}
    if not swaps or any(type(n) is gast.Nonlocal for n in walk(function)):
        return {}
    groups: dict[str, set[str]] = {}
    for names in swaps.values():
        merged = set(names).union(*(groups.get(n, set()) for n in names))
        for name in merged:
            groups[name] = merged
    spoiled = parameter_names(function)  # bound otherwise than to a new array or by a swap
    for statement in statements:
        kind = type(statement)
        if id(statement) in swaps or kind in (gast.If, gast.While):
            continue
        single = kind is gast.Assign and len(statement.targets) == 1
        if single and type(statement.targets[0]) is gast.Name:
            if not _sources(statement.value, resolve):
                continue  # a new array (or number)
            spoiled.add(statement.targets[0].id)
        elif kind is gast.For:
            spoiled |= names_written(statement.target)
        else:
            spoiled |= names_written(statement)
    return {n: group - {n} for n, group in groups.items() if not group & spoiled}


def _swapped(statement: gast.stmt) -> list[str] | None:
    """The names ``a, b = b, a`` (any permutation of distinct names) trades."""
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return None
    target, value = statement.targets[0], statement.value
    if type(target) is not gast.Tuple or type(value) is not gast.Tuple:
        return None
    if not all(type(e) is gast.Name for e in [*target.elts, *value.elts]):
        return None
    stored = [e.id for e in target.elts]
    loaded = [e.id for e in value.elts]
    if len(set(stored)) != len(stored) or sorted(stored) != sorted(loaded):
        return None
    return stored


def _updated(statement: gast.stmt) -> str | None:
    """The name whose value ``statement`` changes in place (``x += v``, ``x[i] = v``, and
    ``x[i] += v``, which changes x, or the array x[i] of a list x, in place)."""
    if type(statement) is gast.AugAssign and type(statement.target) is gast.Name:
        return statement.target.id
    if type(statement) is gast.AugAssign and type(statement.target) is gast.Subscript:
        base = _base(statement.target)
        return base.id if type(base) is gast.Name else None
    if type(statement) is gast.Assign and len(statement.targets) == 1:
        target = statement.targets[0]
        if type(target) is gast.Subscript and type(_base(target)) is gast.Name:
            return _base(target).id
    return None


class _Layout:
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
                    single = type(earlier) is gast.Assign and len(earlier.targets) == 1
                    if single and type(earlier.targets[0]) is gast.Name:
                        fresh = not _sources(earlier.value, resolve)
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


def _containers(statements: list[gast.stmt]) -> set[str]:
    """Names made as lists or dicts: storing into them keeps a reference (into an array,
    a copy of the values)."""
    found = set()
    for statement in statements:
        if type(statement) is gast.Assign and type(statement.targets[0]) is gast.Name:
            value = statement.value
            if type(value) in (gast.List, gast.Dict, gast.ListComp, gast.DictComp) or (
                type(value) is gast.Call
                and type(value.func) is gast.Name
                and value.func.id in ("list", "dict")
            ):
                found.add(statement.targets[0].id)
    return found


_SYMBOLS = {
    gast.Add: "+=",
    gast.Sub: "-=",
    gast.Mult: "*=",
    gast.Div: "/=",
    gast.FloorDiv: "//=",
    gast.Mod: "%=",
    gast.Pow: "**=",
    gast.MatMult: "@=",
}


class _Sharing:
    """Which names may share memory: each name's possible *origins* (the arrays the code
    makes, named after the variable they are first bound to, and the values that come from
    outside: parameters, globals), from the bindings and stores of ``statements`` in any
    order. ``w = f(x, v)`` gives ``w`` the origins of both, without making ``x`` and ``v``
    share: the analysis follows where values come from, not which names met.

    Example::

        _Sharing(statements, None, set(), {"x"}).with_("v")  # {"w"} after w = v
    """

    def __init__(self, statements, resolve, containers: set[str], outside: set[str]):
        links = [link for s in statements for link in _links(s, resolve, containers)]
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


def _links(statement: gast.stmt, resolve, containers: set[str]) -> list[tuple[str, set[str]]]:
    """``(name, names it may share memory with)`` for what ``statement`` binds or stores."""
    kind = type(statement)
    if kind is gast.Assign:
        sources = _sources(statement.value, resolve)
        copied = _copied_container(statement.value, containers)
        if copied is not None:  # a new list holding the same arrays
            sources = {copied}
        links = []
        for target in statement.targets:
            if type(target) is gast.Subscript:  # items[i] = x: a list holds x itself
                base = _base(target)
                if type(base) is gast.Name and base.id in containers:
                    links.append((base.id, sources))
                continue
            links += [(n.id, sources) for n in walk(target) if type(n) is gast.Name]
        return links
    if kind is gast.For:  # for row in X: each row is a view of X
        sources = _sources(statement.iter, resolve)
        return [(n.id, sources) for n in walk(statement.target) if type(n) is gast.Name]
    if kind is gast.Expr and type(statement.value) is gast.Call:  # items.append(x)
        func = statement.value.func
        if type(func) is gast.Attribute and type(_base(func.value)) is gast.Name:
            sources = set().union(*(_sources(a, resolve) for a in statement.value.args))
            return [(_base(func.value).id, sources)]
    return []


def _copied_container(value: gast.expr, containers: set[str]) -> str | None:
    """``items`` for ``items.copy()`` of a list or dict made here."""
    func = value.func if type(value) is gast.Call else None
    if type(func) is gast.Attribute and func.attr == "copy" and type(func.value) is gast.Name:
        return func.value.id if func.value.id in containers else None
    return None


def _base(node: gast.expr) -> gast.expr:
    while type(node) in (gast.Subscript, gast.Attribute):
        node = node.value
    return node


def _sources(node: gast.expr | None, resolve) -> set[str]:
    """The names whose memory the value of ``node`` may share."""
    kind = type(node)
    if kind is gast.Name:
        return {node.id}
    if kind is gast.Attribute and node.attr in _NUMBER_ATTRIBUTES:
        return set()
    if kind in (gast.Subscript, gast.Attribute, gast.Starred):
        return _sources(node.value, resolve)
    if kind in (gast.Tuple, gast.List, gast.Set):
        return set().union(*(_sources(e, resolve) for e in node.elts))
    if kind is gast.Dict:
        return set().union(*(_sources(v, resolve) for v in node.values))
    if kind is gast.IfExp:
        return _sources(node.body, resolve) | _sources(node.orelse, resolve)
    if kind is gast.BoolOp:
        return set().union(*(_sources(v, resolve) for v in node.values))
    if kind in (gast.ListComp, gast.GeneratorExp, gast.SetComp, gast.DictComp):
        # the elements, and what they are taken from: [y[i] for i in ...], [r for r in y]
        parts = [node.key, node.value] if kind is gast.DictComp else [node.elt]
        parts += [g.iter for g in node.generators]
        return set().union(*(_sources(p, resolve) for p in parts))
    if kind is gast.Call:
        return _call_sources(node, resolve)
    if kind is gast.BinOp and (_is_sequence(node.left) or _is_sequence(node.right)):
        return _sources(node.left, resolve) | _sources(node.right, resolve)  # [a] + rest
    return set()  # arithmetic, comparisons, literals: new values


def _is_sequence(node: gast.expr) -> bool:
    """A list or tuple written out: ``+`` and ``*`` of it make a sequence of the same items."""
    return type(node) in (gast.List, gast.Tuple, gast.ListComp)


def _call_sources(call: gast.Call, resolve) -> set[str]:
    func = call.func
    arguments = [*call.args, *(k.value for k in call.keywords)]
    every = set().union(*(_sources(a, resolve) for a in arguments))
    target = _resolved(func, resolve)
    if fresh_result(target, call):
        return set()
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", None)
    if target is not None and module.startswith("s2sgrad.runtime") and name in _HELPER_RESULTS:
        shared = [call.args[i] for i in _HELPER_RESULTS[name] if i < len(call.args)]
        return set().union(*(_sources(a, resolve) for a in shared))
    if type(func) is gast.Attribute and (target is None or _is_array_method(target)):
        receiver = _sources(func.value, resolve)
        if func.attr in _FRESH_METHODS and not _keeps_memory(call, func.attr):
            return set()
        if func.attr in _RECEIVER_VIEW_METHODS:
            return receiver
        return receiver | every  # a method may return its receiver, a view, an argument
    if isinstance(target, types.FunctionType):  # a function of the user's, or generated
        returned = _returned_parameters(target)
        if returned is not None:
            chosen = _arguments_for(call, target, returned)
            return set().union(*(_sources(a, resolve) for a in chosen))
    return every  # it may return what it was given


def fresh_result(target: Any, call: gast.Call) -> bool:
    """Whether ``call``, a call of ``target``, is known to return a new array (or a number,
    or a tuple of new arrays) that shares no memory with anything: the NumPy functions
    listed above, ufuncs and the builtins that compute, without ``out=``.

    Example::

        fresh_result(np.concatenate, call)  # True;  np.split, np.asarray: False
    """
    if target is None or _keeps_memory(call, getattr(target, "__name__", None)):
        return False
    if isinstance(target, np.ufunc):
        return True
    name = getattr(target, "__name__", None)
    if getattr(builtins, name or "", None) is target:
        return name in _FRESH_BUILTINS
    if target is np.einsum:  # of one operand it may be a view ('ij->ji'), of more a product
        subscripts = call.args[0] if call.args else None
        written = type(subscripts) is gast.Constant and isinstance(subscripts.value, str)
        return written and len(call.args) >= 3
    names = _FRESH_NUMPY.get(getattr(target, "__module__", None) or "")
    return names is not None and name in names and getattr(_module_of(target), name) is target


def _keeps_memory(call: gast.Call, name: str | None) -> bool:
    """Whether ``call`` passes ``out=`` or a parameter that can make ``name`` return an
    argument itself (``np.array(x, copy=False)``, ``x.astype(t, copy=False)``)."""
    keywords = {k.arg for k in call.keywords}
    if "out" in keywords or None in keywords:
        return True
    copy = next((k.value for k in call.keywords if k.arg == "copy"), None)
    if copy is not None and not (type(copy) is gast.Constant and copy.value is True):
        return True
    if any(type(a) is gast.Starred for a in call.args):
        return True
    parameter = _FRESH_UNLESS.get(name or "")
    if parameter is None:
        return False
    keyword, position = parameter
    return keyword in keywords or (position is not None and len(call.args) > position)


def _module_of(target: Any) -> types.ModuleType | None:
    return sys.modules.get(getattr(target, "__module__", None) or "")


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


def _summary(function: types.FunctionType) -> frozenset[str] | None:
    flags = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR
    if function.__code__.co_flags & flags:
        return None
    try:
        parsed = parse_function(function)
    except Exception:  # no source, or source the transformer cannot read
        return None
    statements = list(nested_statements(parsed.node.body))
    parameters = parameter_names(parsed.node)
    sharing = _Sharing(statements, parsed.resolve, _containers(statements), parameters)
    returned: set[str] = set()
    for statement in statements:
        if type(statement) is gast.Return and statement.value is not None:
            for name in _sources(statement.value, parsed.resolve):
                returned |= sharing.of(name)
    return frozenset(returned & parameters)


def _arguments_for(call: gast.Call, function: types.FunctionType, parameters) -> list:
    """The arguments of ``call`` that go to ``parameters`` of ``function`` (all of them
    where ``*`` or ``**`` hides which is which)."""
    if any(type(a) is gast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
        return [*call.args, *(k.value for k in call.keywords)]
    positional = function.__code__.co_varnames[: function.__code__.co_argcount]
    chosen = [a for a, p in zip(call.args, positional) if p in parameters]
    return chosen + [k.value for k in call.keywords if k.arg in parameters]


def _resolved(func: gast.expr, resolve) -> Any:
    if resolve is None:
        return None
    try:
        target = resolve(func)
    except Exception:
        return None
    return None if target is NOT_FOUND else target


def _loop_spans(statements: list[gast.stmt]) -> list[tuple[int, int]]:
    """``(first, last)`` positions in ``statements`` of each loop and what it contains."""
    position = {id(s): i for i, s in enumerate(statements)}
    spans = []
    for statement in statements:
        if type(statement) in (gast.For, gast.While):
            inside = [position[id(s)] for s in nested_statements([statement])]
            spans.append((min(inside), max(inside)))
    return spans


def _run_after(index: int, statements: list, loops: list[tuple[int, int]]) -> list[int]:
    """Positions of the statements that may run after the one at ``index``: those after it,
    and everything in a loop around it (the next iteration)."""
    after = set(range(index + 1, len(statements)))
    for first, last in loops:
        if first <= index <= last:
            after |= set(range(first, last + 1))
    after.discard(index)
    return sorted(after)


def _first_read(statement: gast.stmt, names: set[str]) -> str | None:
    """A name of ``names`` that ``statement`` itself reads (for a loop or branch, its
    header: the statements inside are looked at on their own)."""
    kind = type(statement)
    own = statement.iter if kind is gast.For else statement.test if kind in _BLOCKS else statement
    for node in walk(own):
        if type(node) is gast.Name and type(node.ctx) is gast.Load and node.id in names:
            return node.id
    return None


_BLOCKS = (gast.If, gast.While)


_LIBRARY_DIRECTORIES = tuple(
    {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
)

# code object -> the parameters whose arrays the function may change in place
_MUTATIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MUTATING: set = set()


def mutated_parameters(function: types.FunctionType) -> frozenset[str]:
    """The parameters of ``function`` whose values it may change in place (``a[i] = v``,
    ``a += v``, ``a.append(v)``, ``out=a``), itself or through the functions it calls with
    them, read from its source (nothing when there is none).

    Example::

        def halve(a):
            a[:] *= 0.5

        mutated_parameters(halve)  # frozenset({'a'})
    """
    code = function.__code__
    if code in _MUTATIONS:
        return _MUTATIONS[code]
    if code in _MUTATING:
        return frozenset()  # a call to itself: what it changes is found at the first
    _MUTATING.add(code)
    try:
        parsed = parse_function(function)
    except Exception:  # no source, or source the transformer cannot read
        summary = frozenset()
    else:
        statements = list(nested_statements(parsed.node.body))
        parameters = parameter_names(parsed.node)
        sharing = _Sharing(statements, parsed.resolve, _containers(statements), parameters)
        layout = _Layout(parsed.node.body, statements)
        own = _own_containers(statements) - parameters
        changed = set()
        for index, statement in enumerate(statements):
            for name in _changed_by(statement, parsed.resolve) - own:
                if layout.made_since(statement, name, index, parsed.resolve) is None:
                    changed.add(name)  # else an array made anew before: not an argument
        summary = frozenset(set().union(*map(sharing.of, changed)) & parameters)
    finally:
        _MUTATING.discard(code)
    _MUTATIONS[code] = summary
    return summary


def _own_containers(statements: list[gast.stmt]) -> set[str]:
    """Names every binding of which makes a new list or dict: changing one (``items.append(
    x)``, ``items[0] = x``) changes no argument, even when it holds one."""
    made = _containers(statements)
    for statement in statements:
        for name in names_written(statement) & made:
            fresh = type(statement) is gast.Assign and type(statement.targets[0]) is gast.Name
            if fresh and not _makes_container(statement.value):
                made.discard(name)
            elif not fresh and _updated(statement) != name:
                made.discard(name)  # bound by a loop, an unpacking ...
    return made


def _makes_container(value: gast.expr) -> bool:
    return type(value) in (gast.List, gast.Dict, gast.ListComp, gast.DictComp) or (
        type(value) is gast.Call
        and type(value.func) is gast.Name
        and value.func.id in ("list", "dict")
    )


def calls_that_mutate(statement: gast.stmt, resolve) -> list[tuple[Any, str, str]]:
    """``(function, parameter, argument name)`` for each argument that a call of a Python
    function in ``statement`` (a plain name, or the receiver of a method) may change in
    place.

    Example::

        calls_that_mutate(parse_statement("halve(y)"), resolve)  # [(halve, 'a', 'y')]
    """
    found = []
    for node in walk(statement):
        if type(node) is not gast.Call:
            continue
        for function, parameter, argument in _mutating_arguments(node, resolve):
            base = _base(argument)
            if type(base) is gast.Name:
                found.append((function, parameter, base.id))
    return found


def _changed_by(statement: gast.stmt, resolve) -> set[str]:
    """The names whose values ``statement`` changes in place."""
    changed = set()
    updated = _updated(statement)
    if updated is not None:
        changed.add(updated)
    if type(statement) is gast.AugAssign and type(_base(statement.target)) is gast.Name:
        changed.add(_base(statement.target).id)  # a[i] += v
    for node in walk(statement):
        if type(node) is not gast.Call:
            continue
        func = node.func
        if type(func) is gast.Attribute and func.attr in MUTATING_METHODS | {"fill", "sort"}:
            changed |= _sources(func.value, resolve)
        for keyword in node.keywords:
            if keyword.arg == "out":
                changed |= _sources(keyword.value, resolve)
        for _, _, argument in _mutating_arguments(node, resolve):
            changed |= _sources(argument, resolve)
    return changed


def _mutating_arguments(call: gast.Call, resolve) -> list[tuple[Any, str, gast.expr]]:
    target = _resolved(call.func, resolve)
    arguments = list(call.args)
    if isinstance(target, types.MethodType) and type(call.func) is gast.Attribute:
        target, arguments = target.__func__, [call.func.value, *arguments]
    if not isinstance(target, types.FunctionType):
        return []
    module = getattr(target, "__module__", None) or ""
    if module.split(".")[0] in ("s2sgrad", "numpy") or get_rule(target) is not None:
        return []  # primitives of the engines, and NumPy's own Python functions
    if target.__code__.co_filename.startswith(_LIBRARY_DIRECTORIES):
        return []  # the standard library and installed packages: not the user's code
    mutated = mutated_parameters(target)
    if not mutated:
        return []
    if any(type(a) is gast.Starred for a in arguments) or any(k.arg is None for k in call.keywords):
        every = [*arguments, *(k.value for k in call.keywords)]
        return [(target, "*", a) for a in every]
    code = target.__code__
    positional = code.co_varnames[: code.co_argcount]
    found = [(target, p, a) for a, p in zip(arguments, positional) if p in mutated]
    return found + [(target, k.arg, k.value) for k in call.keywords if k.arg in mutated]


def refuse_mutating_calls(statements, parsed, parameters: set[str], activity) -> None:
    """Refuse a call of a Python function that may change in place an array it is given
    (``halve(y)`` with ``a[:] *= 0.5`` inside), when the array is an input, is being
    differentiated, or is read by a derivative: neither engine sees the change."""
    calls = [n for s in statements for n in walk(s) if type(n) is gast.Call]
    if not any(_mutating_arguments(c, parsed.resolve) for c in calls):
        return  # the common case: no call of a function that changes an argument
    read_by_derivatives = set()
    for statement in nested_statements(statements):
        if isinstance(statement, gast.Assign) and names_written(statement) & activity.active:
            read_by_derivatives |= names_read(statement.value)
    for statement in nested_statements(statements):
        if isinstance(statement, (gast.If, gast.For, gast.While)):
            continue  # their blocks are looked at on their own
        for function, parameter, name in calls_that_mutate(statement, parsed.resolve):
            if not (
                name in parameters
                or name in activity.varied
                or activity.is_active(name)
                or name in read_by_derivatives
            ):
                continue
            callee = getattr(function, "__qualname__", "the function")
            code = function.__code__
            error = UnsupportedError(
                f"{parsed.location(statement)}: {callee} may change its argument "
                f"'{parameter}' in place ({where(code.co_filename, code.co_firstlineno)}), "
                f"here '{name}', and neither engine can follow that change; have {callee} "
                f"leave '{parameter}' as it is and return new arrays instead (g = g * s "
                "rather than g[:] *= s)"
            )
            error.tape_cannot_either = True
            raise error
