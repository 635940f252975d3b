"""Specialise a generated gradient to the argument shapes of its first call.

Generic generated code cannot know shapes, so it calls helpers such as
``unbroadcast(g, x)`` that look at shapes at run time. When the shapes of every
intermediate follow from the shapes of the arguments, one run tells them all: the first
call with a new shape signature runs a *probe* copy of the code in which each such call
records what it saw, and the specialised copy replaces each call by what it amounts to
for those shapes (``g`` itself, ``np.sum(g, axis=0)``, ``g @ b.T``, a constant shape).
The result is both faster and closer to what a person would write.

A function is only specialised when its shapes cannot depend on values: no branch or
loop test that reads array values, no subscript by a computed index (boolean masks),
and none of the functions whose output size depends on values (``np.nonzero`` …).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.syntax import (
    attribute,
    call,
    clone,
    clone_rewriting,
    constant,
    load,
    names_modified,
    names_read,
    node_fields,
    walk,
)

__all__ = ["shapes_follow_arguments", "probe_and_specialise", "signature", "strip_broadcasts_in"]

_VALUE_SIZED = {
    np.nonzero,
    np.flatnonzero,
    np.argwhere,
    np.unique,
    np.extract,
    np.compress,
    np.trim_zeros,
    np.where,
}
_SHAPE_QUERIES = {"len", "range", "int", "min", "max", "abs", "shape", "ndim", "size"}


def signature(args: tuple, kwargs: dict) -> tuple:
    """A hashable description of argument shapes, dtypes and structure.

    Example::

        signature((np.ones((2, 3)), 1.0), {})  # (((2, 3), 'd'), <class 'float'>)
    """
    parts = tuple([(a.shape, a.dtype) if type(a) is np.ndarray else _describe(a) for a in args])
    if kwargs:
        parts += tuple((k, _describe(v)) for k, v in sorted(kwargs.items()))
    return parts


def _describe(value: Any):
    if type(value) is np.ndarray:
        if value.ndim == 0 and value.dtype.kind in "iub":
            return ((), value.dtype, value.item())  # an integer may set a shape
        return (value.shape, value.dtype)
    if isinstance(value, (bool, int, np.integer, str)) or value is None:
        return (type(value), value)  # integers may set shapes, so their values count
    if isinstance(value, dict):
        return ("dict", tuple((k, _describe(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_describe(v) for v in value))
    if isinstance(value, np.generic):
        return ((), value.dtype, "scalar")
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):  # a duck array (a Dask array): its shape sets the code's
        return (type(value), shape, getattr(value, "dtype", None))
    return type(value)


# static criterion ------------------------------------------------------------------------
def shapes_follow_arguments(body: list[gast.stmt], resolve: Callable[[gast.expr], Any]) -> bool:
    """Whether every intermediate shape of ``body`` is fixed by the argument shapes.

    ``body`` is in A-normal form; ``resolve`` maps a function reference to its object.
    """
    nodes = [node for statement in body for node in walk(statement)]
    shape_only = _shape_only_names(nodes)
    for node in nodes:
        if isinstance(node, (gast.If, gast.While)):
            if not _is_shape_only(node.test, shape_only):
                return False
        elif isinstance(node, gast.For) and not _is_shape_only(node.iter, shape_only):
            return False
        elif isinstance(node, gast.Subscript):
            index_names = names_read(node.slice)
            if not index_names <= shape_only:
                return False
        elif isinstance(node, gast.Call):
            try:
                target = resolve(node.func)
            except Exception:
                target = None
            if any(target is f for f in _VALUE_SIZED) and not _selects(target, node):
                return False
    return True


def _selects(target: Any, call: gast.Call) -> bool:
    """``np.where(condition, a, b)`` picks elements; only ``np.where(condition)`` has a
    value-dependent size."""
    return target is np.where and len(call.args) == 3


def _shape_only_names(nodes: list[gast.AST]) -> set[str]:
    """Names whose values depend only on shapes and constants (never on array values),
    given every node of a function body."""
    candidates: dict[str, list[gast.expr]] = {}
    loop_targets: dict[str, gast.expr] = {}
    for node in nodes:
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            candidates.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, gast.Assign):
            for target in walk(node.targets[0]):
                if isinstance(target, gast.Name) and isinstance(target.ctx, gast.Store):
                    candidates.setdefault(target.id, []).append(
                        gast.Constant(value=None, kind=None)
                    )
                    candidates[target.id].append(node.value)
        elif isinstance(node, gast.For) and isinstance(node.target, gast.Name):
            loop_targets[node.target.id] = node.iter
    known: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in candidates.items():
            if name not in known and all(_is_shape_only(v, known) for v in values):
                known.add(name)
                changed = True
        for name, iterable in loop_targets.items():
            if name not in known and name not in candidates and _is_shape_only(iterable, known):
                known.add(name)
                changed = True
    return known


def _is_shape_only(node: gast.expr, known: set[str]) -> bool:
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, gast.Name):
        return node.id in known
    if isinstance(node, gast.Attribute):
        return node.attr in ("shape", "ndim", "size") or _is_shape_only(node.value, known)
    if isinstance(node, (gast.BinOp,)):
        return _is_shape_only(node.left, known) and _is_shape_only(node.right, known)
    if isinstance(node, gast.UnaryOp):
        return _is_shape_only(node.operand, known)
    if isinstance(node, gast.Compare):
        return all(_is_shape_only(n, known) for n in [node.left, *node.comparators])
    if isinstance(node, gast.BoolOp):
        return all(_is_shape_only(v, known) for v in node.values)
    if isinstance(node, (gast.Tuple, gast.List)):
        return all(_is_shape_only(e, known) for e in node.elts)
    if isinstance(node, gast.Subscript):
        return _is_shape_only(node.value, known) and _is_shape_only(node.slice, known)
    if isinstance(node, gast.Slice):
        return all(
            p is None or _is_shape_only(p, known) for p in (node.lower, node.upper, node.step)
        )
    if isinstance(node, gast.Call):
        func = node.func
        name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", "")
        if name in ("len", "shape", "ndim", "size"):
            return True
        return name in _SHAPE_QUERIES and all(_is_shape_only(a, known) for a in node.args)
    return False


# probing ---------------------------------------------------------------------------------
class Seen(NamedTuple):
    """What one argument or result of a probed call looked like (a tuple: quick to make)."""

    kind: str  # array | scalar | float | int | tuple | basic index | unchanged | other
    shape: tuple | None = None
    dtype: str | None = None
    value: Any = None

    @staticmethod
    def of(value: Any) -> Seen:
        return Seen._make(_observed(value))


def _observed(value: Any) -> tuple:
    """The fields of ``Seen.of(value)`` as a plain tuple (equal to it, and quicker to make:
    the probe makes one per argument of every probed call)."""
    if type(value) is np.ndarray:
        return ("array", value.shape, value.dtype.char, None)
    if isinstance(value, np.generic):
        return ("scalar", (), value.dtype.char, None)
    if type(value) is float:
        return ("float", (), None, None)
    if type(value) is int:
        return ("int", (), None, value)
    if isinstance(value, tuple) and all(type(v) is int for v in value):
        return ("tuple", None, None, value)
    if _is_basic_index(value):
        return ("basic index", None, None, _hashable_index(value))
    return ("other", None, None, None)


def _hashable_index(index) -> tuple:
    """A basic index as a hashable tuple (slices are not hashable before Python 3.12)."""
    parts = index if isinstance(index, tuple) else (index,)
    return tuple(("slice", p.start, p.stop, p.step) if isinstance(p, slice) else p for p in parts)


def _is_basic_index(index) -> bool:
    """Integers, slices, None and Ellipsis: indexing that never repeats an element."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(
        isinstance(p, (int, np.integer, slice)) or p is None or p is Ellipsis for p in parts
    ) and not any(isinstance(p, bool) for p in parts)


class _Probe:
    def __init__(self):
        self.sites: dict[int, set] = {}
        self.gradients: dict[int, int] = {}  # id of an as_gradient result → its site
        self.aliased: set[int] = set()

    def __call__(self, site: int, function, *args, **kwargs):
        # records are plain tuples, made Seen when read (see ``seen``)
        result = function(*args, **kwargs)
        seen = _observed(result)
        if function is runtime.as_gradient:
            if result is args[0] and seen[0] == "array":
                seen = ("unchanged", seen[1], seen[2], None)
            other = self.gradients.setdefault(id(result), site)
            if other != site:  # two gradients would be one array: keep the copies
                self.aliased |= {site, other}
        records = self.sites.get(site)
        if records is None:
            records = self.sites[site] = set()
        records.add((tuple([_observed(a) for a in args]), seen))
        return result

    def seen(self, site: int) -> tuple[tuple[Seen, ...], Seen] | None:
        """What the only run of ``site`` saw, as (arguments, result); None unless the site
        ran, always on values that looked alike, and may be specialised."""
        records = self.sites.get(site)
        if not records or len(records) != 1 or site in self.aliased:
            return None
        ((arguments, result),) = records
        return tuple([Seen._make(a) for a in arguments]), Seen._make(result)


def probe_and_specialise(
    node: gast.FunctionDef, namespace: dict, args: tuple, kwargs: dict, compile_function
):
    """Run ``node`` once, probing every specialisable call; return (result, specialised node).

    ``compile_function(node, namespace)`` compiles a gast function and returns it.

    Example::

        result, fast = probe_and_specialise(node, namespace, (x,), {}, compile_ast_function)
    """
    specialisers = _specialisers()
    probe = _Probe()
    probe_name = "__s2sgrad_probe__"
    operator_name = "__s2sgrad_operator__"
    sites: list[tuple[gast.Call, gast.AST, Any]] = []  # (probe call, site, target), inner first

    def instrument(site, site_node, target):
        if target is None:  # arithmetic: __s2sgrad_operator__("+", left, right)
            operands = [constant(_ARITHMETIC[type(site_node.op)]), site_node.left, site_node.right]
            probe_call = call(load(probe_name), [constant(site), load(operator_name), *operands])
        else:
            probe_call = call(load(probe_name), [constant(site), site_node.func, *site_node.args])
        sites.append((probe_call, site_node, target))
        return probe_call

    _mark_near_broadcasts(node, namespace)
    probed = clone_rewriting(
        node,
        _each_site(namespace, specialisers, instrument, _near_broadcast),
        kinds=(gast.BinOp, gast.Call),
    )
    function = compile_function(
        probed, {**namespace, probe_name: probe, operator_name: _apply_operator}
    )
    result = function(*args, **kwargs)

    def specialise(site, site_node, target):
        seen = probe.seen(site)
        if seen is None:
            return site_node  # never ran, or saw several shapes: stay generic
        arg_info, result_info = seen
        if target is None:  # arithmetic: the arguments were (symbol, left, right)
            return _without_broadcasts(site_node, arg_info[1], arg_info[2], result_info)
        replacement = specialisers[id(target)](site_node, arg_info, result_info, namespace)
        return site_node if replacement is None else replacement

    # Each probe call turns back into its site, specialised, in place: inner sites first,
    # so an outer site's operands are already final when it is specialised.
    for site, (probe_call, site_node, target) in enumerate(sites):
        if target is None:
            site_node.left, site_node.right = probe_call.args[3:]
        else:
            site_node.func, *site_node.args = probe_call.args[1:]
        _become(probe_call, specialise(site, site_node, target))
    _strip_broadcast_definitions(probed)
    _scatter_sums(probed, namespace)
    return result, probed


def _become(node: gast.AST, replacement: gast.AST) -> None:
    """Make ``node`` the node ``replacement`` is, where it stands in its tree (no walk)."""
    node.__class__ = replacement.__class__
    node.__dict__ = dict(replacement.__dict__)


def _each_site(
    namespace: dict, specialisers: dict, handle, arithmetic: Callable[[gast.BinOp], bool]
) -> Callable[[gast.AST], gast.AST]:
    """A rewriter for :func:`clone_rewriting` that numbers the probed sites (specialisable
    calls, and arithmetic for which ``arithmetic(node)`` holds) and replaces each by
    ``handle(site, node, target)``."""
    count = iter(range(1 << 62))

    def rewrite(node: gast.AST) -> gast.AST:
        kind = type(node)
        if kind is gast.BinOp:
            if type(node.op) in _ARITHMETIC and arithmetic(node):
                return handle(next(count), node, None)
        elif kind is gast.Call:
            target = _resolve(node.func, namespace)
            if target is None or id(target) not in specialisers or node.keywords:
                return node
            if any(type(a) is gast.Starred for a in node.args):
                return node
            return handle(next(count), node, target)
        return node

    return rewrite


def _mark_near_broadcasts(function: gast.FunctionDef, namespace: dict) -> None:
    """Mark (``s2s_near_broadcast``) the arithmetic that broadcast stripping could concern.

    It could where a ``broadcast_to``/``expand_dims`` call, or a name whose value may be
    one, is reached through elementwise arithmetic or through helpers that specialisation
    may turn into their first argument (``unbroadcast``); the primal's arithmetic, and
    most of the rest, never needs probing.
    """
    near: set[str] = set()  # names whose value may be a broadcast
    users: dict[str, set[str]] = {}  # name -> the names whose values are made from it
    assignments, arithmetic = _assignments_and_arithmetic(function)
    for node in assignments:
        target = node.targets[0].id
        broadcast, names = _elementwise_reach(node.value, namespace)
        if broadcast:
            near.add(target)
        for name in names:
            users.setdefault(name, set()).add(target)
    pending = list(near)
    while pending:
        for user in users.get(pending.pop(), ()):
            if user not in near:
                near.add(user)
                pending.append(user)
    for node in arithmetic:
        broadcast, names = _elementwise_reach(node, namespace)
        node.s2s_near_broadcast = broadcast or not names.isdisjoint(near)


def _assignments_and_arithmetic(function: gast.AST) -> tuple[list[gast.Assign], list[gast.BinOp]]:
    """The assignments to a name and the ``+ - * /`` operations in ``function``, found by a
    walk that skips names and literals (only parameters' names hold more: annotations)."""
    assignments, arithmetic = [], []
    pending = [function]
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is gast.Assign and type(node.targets[0]) is gast.Name:
            assignments.append(node)
        elif kind is gast.BinOp and type(node.op) in _ARITHMETIC:
            arithmetic.append(node)
        skipped = _NAMES_AND_LITERALS if kind is not gast.arguments else _LITERALS
        state = node.__dict__
        for field in node_fields(kind):
            value = state.get(field)
            if type(value) is list:
                pending += [item for item in value if type(item) not in skipped]
            elif type(value) not in skipped:
                pending.append(value)
    return assignments, arithmetic


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
            elif node.args and id(_resolve(func, namespace)) in _PASS_THROUGH:
                pending.append(node.args[0])
    return broadcast, names


# helpers that specialisation may replace by their first argument
_PASS_THROUGH = frozenset(map(id, (runtime.unbroadcast, runtime.as_gradient, runtime.owned)))


def _near_broadcast(node: gast.BinOp) -> bool:
    return node.__dict__.get("s2s_near_broadcast", True)


_ARITHMETIC = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/"}
_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def _apply_operator(symbol, left, right):
    return _OPERATORS[symbol](left, right)


def _without_broadcasts(binop: gast.BinOp, left: Seen, right: Seen, result: Seen) -> gast.BinOp:
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
    binop.s2s_broadcast_free = sides  # kept so that later folding can strip again
    _strip_sides(binop)
    return binop


def strip_broadcasts_in(node: gast.AST) -> bool:
    """Apply the broadcast stripping recorded on BinOps inside ``node``, in place.

    Returns whether any ``broadcast_to`` call was removed.
    """
    changed = False
    for binop in walk(node):
        if getattr(binop, "s2s_broadcast_free", None):
            changed |= _strip_sides(binop)
    return changed


def _strip_sides(binop: gast.BinOp) -> bool:
    removed = False
    for side in binop.s2s_broadcast_free:
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
        inner, removed = _strip_broadcasts(node.args[0])
        if _is_number(inner):
            return inner, True
        node.args[0] = inner
    if isinstance(node, gast.BinOp) and type(node.op) in _ARITHMETIC:
        node.left, removed_left = _strip_broadcasts(node.left)
        node.right, removed_right = _strip_broadcasts(node.right)
        removed = removed_left or removed_right
    elif isinstance(node, gast.UnaryOp):
        node.operand, removed = _strip_broadcasts(node.operand)
    return node, removed


def _strip_broadcast_definitions(function: gast.FunctionDef) -> None:
    """``d = np.broadcast_to(e, S)`` becomes ``d = e`` when every use broadcasts ``d`` back.

    A use is broadcast back when it is reached through elementwise arithmetic from an
    operand whose partner has the full shape, directly or through names that are
    themselves only used that way.
    """
    reads: dict[str, int] = {}
    writes: dict[str, int] = {}
    restored: dict[str, set[int]] = {}  # the reads of each name that broadcasting restores
    definitions: dict[str, gast.Assign] = {}
    pending: list[gast.AST] = [function]  # a walk that counts names as it meets them
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is gast.BinOp:
            for side in node.__dict__.get("s2s_broadcast_free", ()):
                for leaf in _elementwise_leaves(getattr(node, side)):
                    restored.setdefault(leaf.id, set()).add(id(leaf))
        elif kind is gast.Assign and type(node.targets[0]) is gast.Name:
            definitions[node.targets[0].id] = node
        state = node.__dict__
        for field in node_fields(kind):
            value = state.get(field)
            for item in value if type(value) is list else (value,):
                if type(item) is gast.Name:
                    table = writes if type(item.ctx) is gast.Store else reads
                    table[item.id] = table.get(item.id, 0) + 1
                    if item.annotation is not None:
                        pending.append(item.annotation)
                elif type(item) not in _LITERALS:
                    pending.append(item)
    settled: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, uses in list(restored.items()):
            if name in settled or len(uses) != reads.get(name, 0) or writes.get(name) != 1:
                continue
            settled.add(name)
            changed = True
            definition = definitions.get(name)
            if definition is not None:
                value = definition.value
                value = value.args[0] if _is_broadcast_call(value) else value
                for leaf in _elementwise_leaves(value):
                    restored.setdefault(leaf.id, set()).add(id(leaf))
    for name in settled:
        definition = definitions.get(name)
        if definition is not None and _is_broadcast_call(definition.value):
            definition.value = definition.value.args[0]


def _elementwise_leaves(node) -> list[gast.Name]:
    """The names reached from ``node`` through elementwise arithmetic only."""
    if type(node) is gast.Name:
        return [node]
    if type(node) is gast.BinOp and type(node.op) in _ARITHMETIC:
        return _elementwise_leaves(node.left) + _elementwise_leaves(node.right)
    if type(node) is gast.UnaryOp:
        return _elementwise_leaves(node.operand)
    return []


def _reaches_broadcast(node) -> bool:
    """Whether a ``broadcast_to`` call is reached from ``node`` through elementwise
    arithmetic (what stripping that side would remove)."""
    if _is_broadcast_call(node):
        return True
    if type(node) is gast.BinOp and type(node.op) in _ARITHMETIC:
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


def _resolve(func: gast.expr, namespace: dict):
    if isinstance(func, gast.Name):
        return namespace.get(func.id)
    if isinstance(func, gast.Attribute):
        base = _resolve(func.value, namespace)
        return getattr(base, func.attr, None) if base is not None else None
    return None


# specialisers ----------------------------------------------------------------------------
def _numpy_name(namespace: dict) -> str:
    for name, value in namespace.items():
        if value is np:
            return name
    namespace["np"] = np
    return "np"


def _unbroadcast(node, args, result, namespace):
    g, x = args
    if g.kind not in ("array", "scalar") or x.shape is None:
        return None
    if g.shape == x.shape and (x.kind in ("array", "scalar") or g.kind == "scalar"):
        return node.args[0]
    if x.kind == "float" and g.kind == "array" and g.shape:  # everything sums into a number
        return call(attribute(load(_numpy_name(namespace)), "sum"), [node.args[0]])
    if x.kind not in ("array",):
        return None
    extra = len(g.shape) - len(x.shape)
    if extra < 0:
        return None
    leading = tuple(range(extra))
    inner = tuple(i for i, n in enumerate(x.shape) if n == 1 and g.shape[extra + i] != 1)
    value = node.args[0]
    if leading:
        value = call(attribute(value, "sum"), [], {"axis": _axis(leading)})
    if inner:
        value = call(
            attribute(value, "sum"), [], {"axis": _axis(inner), "keepdims": constant(True)}
        )
    return value


def _axis(axes: tuple) -> gast.expr:
    if len(axes) == 1:
        return constant(axes[0])
    return gast.Tuple(elts=[constant(a) for a in axes], ctx=gast.Load())


def _transposed(node: gast.expr) -> gast.expr:
    return attribute(node, "T")


def _matmul(left, right):
    return gast.BinOp(left=left, op=gast.MatMult(), right=right)


def _ranks(a: Seen, b: Seen) -> tuple[int, int] | None:
    if a.kind == b.kind == "array":
        return len(a.shape), len(b.shape)
    return None


def _matmul_cotangent_a(node, args, result, namespace):
    g_node, a_node, b_node = node.args
    ranks = _ranks(args[1], args[2])
    if ranks == (2, 2):
        return _matmul(g_node, _transposed(b_node))  # g @ b.T
    if ranks == (1, 2):
        return _matmul(b_node, g_node)  # b @ g
    if ranks == (2, 1):
        return call(attribute(load(_numpy_name(namespace)), "outer"), [g_node, b_node])
    return None


def _matmul_cotangent_b(node, args, result, namespace):
    g_node, a_node, b_node = node.args
    ranks = _ranks(args[1], args[2])
    if ranks == (2, 2):
        return _matmul(_transposed(a_node), g_node)  # a.T @ g
    if ranks == (2, 1):
        return _matmul(g_node, a_node)  # g @ a
    if ranks == (1, 2):
        return call(attribute(load(_numpy_name(namespace)), "outer"), [a_node, g_node])
    return None


def _seed(node, args, result, namespace):
    (out,) = args
    if out.kind == "float" or (out.kind in ("scalar", "array") and out.dtype == "d"):
        return constant(1.0)
    return None


def _broadcast_to(node, args, result, namespace):
    g, shape = args
    if g.kind in ("array", "scalar", "float") and shape.kind == "tuple" and g.shape == shape.value:
        return node.args[0]
    return None


def _shape(node, args, result, namespace):
    if result.kind == "tuple":
        return gast.Tuple(elts=[constant(n) for n in result.value], ctx=gast.Load())
    return None


def _number(node, args, result, namespace):
    return constant(result.value) if result.kind == "int" else None


def _index_cotangent(node, args, result, namespace):
    g, x, index = args
    if x.kind == "array" and index.kind in ("basic index", "int") and result.kind == "array":
        node.s2s_scatter = result.dtype == x.dtype  # may become an in-place add
        if index.kind == "basic index":
            node.s2s_uncovered = _uncovered(index.value, x.shape)
    return None


def _assigned_cotangent(node, args, result, namespace):
    """A basic index writes each element once: the cotangent is ``snapshot(g[index])``."""
    g, index = args
    if g.kind != "array" or index.kind not in ("basic index", "int"):
        return None
    part = gast.Subscript(value=node.args[0], slice=node.args[1], ctx=gast.Load())
    return call(load(_helper_name(namespace, runtime.snapshot)), [part])


def _helper_name(namespace: dict, helper) -> str:
    for name, value in namespace.items():
        if value is helper:
            return name
    name = f"_{helper.__name__}"
    namespace[name] = helper
    return name


def _uncovered(index: tuple, shape: tuple) -> list[gast.expr] | None:
    """The slices of an array of ``shape`` that ``a[index] = v`` leaves untouched, as
    subscripts (``[:1]``, ``[-1:]``); None unless ``index`` is one contiguous slice of the
    first axis (``1:``, ``:-1``, ``2:5, :``).

    Example::

        _uncovered((("slice", None, -1, None),), (10,))  # the subscript -1:
    """
    first, *rest = index
    if not shape or not (isinstance(first, tuple) and first[3] in (None, 1)):
        return None
    if any(part not in (("slice", None, None, None), Ellipsis) for part in rest):
        return None
    length = shape[0]
    start, stop, _ = slice(first[1], first[2]).indices(length)
    if stop <= start:
        return None
    parts = []
    if start > 0:
        parts.append(gast.Slice(lower=None, upper=constant(start), step=None))
    if stop < length:
        parts.append(gast.Slice(lower=_integer(stop - length), upper=None, step=None))
    return parts


def _integer(value: int) -> gast.expr:
    if value < 0:
        return gast.UnaryOp(op=gast.USub(), operand=constant(-value))
    return constant(value)


def _scatter_sums(function: gast.FunctionDef, namespace: dict) -> None:
    """``d = index_cotangent(a, x, i) + index_cotangent(b, x, j) + e`` → one buffer.

    Becomes ``d = np.zeros_like(x); d[i] += a; d[j] += b; d = d + e``: one array instead
    of one per term, as a person would write it.
    """
    npn = _numpy_name(namespace)

    def rewrite(statements):
        result = []
        buffers: set[str] = set()  # names holding a private zeros buffer, not read since
        for statement in statements:
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                    setattr(statement, field, rewrite(inner))
            lines = _scatter_statement(statement, npn, buffers)
            if lines is None:
                if buffers:
                    buffers -= names_read(statement) | _written(statement)
                lines = [statement]
            result.extend(lines)
        return result

    function.body = rewrite(function.body)


def _written(statement) -> set[str]:
    return names_modified(statement)


def _scatter_statement(statement, npn, buffers: set[str]):
    if not (isinstance(statement, gast.Assign) and isinstance(statement.targets[0], gast.Name)):
        return None
    target = statement.targets[0].id
    terms = _sum_terms(statement.value)
    existing = bool(terms) and isinstance(terms[0], gast.Name) and terms[0].id == target
    if existing:
        if target not in buffers:
            return None
        terms = terms[1:]
    scatters = [t for t in terms if getattr(t, "s2s_scatter", False)]
    if not scatters:
        return None
    base = scatters[0].args[1]
    if not isinstance(base, gast.Name):
        return None
    scatters = [t for t in scatters if isinstance(t.args[1], gast.Name) and t.args[1].id == base.id]
    rest = [t for t in terms if all(t is not u for u in scatters)]
    if any(target in names_read(t) for t in terms):
        return None
    lines = []
    # where the first part does not write, a fresh buffer needs zeros: all of it, or just
    # the rest of the first axis when the first part is one slice of it
    uncovered = None if existing else getattr(scatters[0], "s2s_uncovered", None)
    if not existing:
        create = "zeros_like" if uncovered is None else "empty_like"
        lines.append(
            gast.Assign(
                targets=[
                    gast.Name(id=target, ctx=gast.Store(), annotation=None, type_comment=None)
                ],
                value=call(attribute(load(npn), create), [clone(base)]),
                type_comment=None,
            )
        )
        for part in uncovered or ():
            rest_of_axis = gast.Subscript(value=load(target), slice=part, ctx=gast.Store())
            lines.append(
                gast.Assign(targets=[rest_of_axis], value=constant(0.0), type_comment=None)
            )
    for position, term in enumerate(scatters):
        index = _index_syntax(term.args[2])
        place = gast.Subscript(value=load(target), slice=index, ctx=gast.Store())
        if position == 0 and not existing:  # a fresh buffer: the first part is written
            lines.append(gast.Assign(targets=[place], value=term.args[0], type_comment=None))
        else:
            lines.append(gast.AugAssign(target=place, op=gast.Add(), value=term.args[0]))
    if rest:
        total = load(target)
        for term in rest:
            total = gast.BinOp(left=total, op=gast.Add(), right=term)
        lines.append(
            gast.Assign(
                targets=[
                    gast.Name(id=target, ctx=gast.Store(), annotation=None, type_comment=None)
                ],
                value=total,
                type_comment=None,
            )
        )
    for line in lines:
        gast.copy_location(line, statement)
    if rest:
        buffers.discard(target)  # d = d + e made a new array
    else:
        buffers.add(target)
    return lines


def _sum_terms(node):
    if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Add):
        return _sum_terms(node.left) + _sum_terms(node.right)
    return [node]


def _index_syntax(index: gast.expr) -> gast.expr:
    """``np.s_[1:]`` back to the subscript ``1:`` it was written as."""
    if (
        isinstance(index, gast.Subscript)
        and isinstance(index.value, gast.Attribute)
        and index.value.attr == "s_"
    ):
        return index.slice
    return index


def _as_gradient(node, args, result, namespace):
    """The gradient array is already fresh, of the right shape and dtype: return it."""
    return node.args[0] if result.kind == "unchanged" else None


def _specialisers() -> dict[int, Callable]:
    table = {
        runtime.as_gradient: _as_gradient,
        runtime.unbroadcast: _unbroadcast,
        runtime.seed_cotangent: _seed,
        np.broadcast_to: _broadcast_to,
        np.shape: _shape,
        np.size: _number,
        np.ndim: _number,
    }
    if hasattr(runtime, "index_cotangent"):
        table[runtime.index_cotangent] = _index_cotangent
        table[runtime.assigned_cotangent] = _assigned_cotangent
    if hasattr(runtime, "matmul_cotangent_a"):
        table[runtime.matmul_cotangent_a] = _matmul_cotangent_a
        table[runtime.matmul_cotangent_b] = _matmul_cotangent_b
    return {id(k): v for k, v in table.items()}
