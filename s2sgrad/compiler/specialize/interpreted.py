"""The probe run by walking its tree, not compiled: each of its statements runs at most once.

The probe runs once. Compiling it costs more than running it: CPython parses and compiles
every statement, and a probe of 2,000 user statements has ~14,000. When the probe has no
loop and no function inside (every statement then runs at most once), walking its tree and
doing what each node says costs less than compiling it, and does the same: the same
operations on the same values in the same order (``a * b`` is ``operator.mul(a, b)``, a
call is the call), so the probe records, and returns, the same.

Only the kinds of nodes in :data:`INTERPRETED` are walked; a probe with another kind, or
calling a builtin that reads its caller's frame (``locals()``), is compiled
(:func:`interpretable`). The probe's own function is a stub compiled from its signature
alone (so arguments bind as Python binds them), as a compiled probe is, under a file name
whose origin is registered: the runtime still names the user's line
(``running.running_origin``). Any error ends the probe as a compiled probe's would (the
generic code then runs, with readable lines). What differs is only what reads the stack:
the user's functions run a few frames deeper, under the walk's own.

The walk runs the code as it is, not a copy rewritten to record what it sees: the calls
and operations to record are its *sites*, found by the id of their node
(:class:`Observer`), and the walk hands each to the observer, which makes it and records
it (what a probe call would do in a compiled probe).

Example::

    facts = raw_facts(code)
    if interpretable(code, facts):
        names = bound_names(code, facts)
        function = interpreted(code, names, namespace, compile_probe, lambda: None, observer)
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from typing import Any, Protocol

import gast

from s2sgrad.compiler.syntax import (
    BINARY_OPERATORS,
    COMPARISON_OPERATORS,
    UNARY_OPERATORS,
    parameter_names,
)

__all__ = [
    "CHECKED",
    "FRAME_READERS",
    "INTERPRETED",
    "Observer",
    "bound_names",
    "interpretable",
    "interpreted",
]

_INTERPRET = "__s2sgrad_interpret__"
_LOCALS = "__s2sgrad_locals__"


def interpretable(function: gast.FunctionDef, facts: Any) -> bool:
    """Whether ``function`` may be interpreted, given its ``broadcasts.RawFacts``: the kinds
    of all its nodes but names and literals, and its nodes whose fields decide (of the
    kinds in :data:`CHECKED`, and what reads a builtin of :data:`FRAME_READERS`). No loop,
    no function inside, nothing this module does not walk, and no builtin that reads its
    caller's frame (``locals()`` would read the walk's)."""
    if not facts.kinds <= INTERPRETED:
        return False
    for node in facts.checked:
        kind = type(node)
        if kind is gast.FunctionDef:
            allowed = node is function
        elif kind is gast.Starred:
            allowed = type(node.ctx) is gast.Load
        elif kind is gast.keyword:
            allowed = node.arg is not None
        elif kind is gast.Dict:
            allowed = None not in node.keys
        elif kind is gast.AugAssign:
            allowed = type(node.target) in _DELETED  # a name, an item or an attribute
        elif kind is gast.NamedExpr:
            allowed = type(node.target) is gast.Name
        elif kind is gast.Delete:
            allowed = all(type(t) in _DELETED for t in node.targets)
        elif kind is gast.Assign:  # to other than one name, or of a frame reader
            allowed = all(_stores_only(t) for t in node.targets) and not (
                type(node.value) is gast.Name and node.value.id in FRAME_READERS
            )
        else:  # a call of a frame reader
            allowed = False
        if not allowed:
            return False
    return True


def bound_names(function: gast.FunctionDef, facts: Any) -> set[str]:
    """The names ``function`` binds, given its ``broadcasts.RawFacts``: its parameters and
    its assignments' targets (the first ones of assignments to a name are ``facts.bound``;
    the others, and deletions, are among ``facts.checked``)."""
    names = parameter_names(function) | facts.bound
    for node in facts.checked:
        kind = type(node)
        targets = (
            node.targets
            if kind is gast.Assign or kind is gast.Delete
            else [node.target]
            if kind is gast.AugAssign or kind is gast.NamedExpr
            else ()
        )
        for target in targets:
            names.update(_target_names(target))
    return names


def _stores_only(target: gast.expr) -> bool:
    kind = type(target)
    if kind is gast.Tuple or kind is gast.List:
        return all(_stores_only(t) for t in target.elts)
    return kind in _DELETED


def _target_names(target: gast.expr) -> list[str]:
    kind = type(target)
    if kind is gast.Name:
        return [target.id]
    if kind is gast.Tuple or kind is gast.List:
        return [name for t in target.elts for name in _target_names(t)]
    return []


class Observer(Protocol):
    """What the walk hands its sites to: ``site_of`` maps the id of a site's node (a call, or
    an operation ``+ - * /``) to its number; the observer makes the call (the operation)
    and returns its result."""

    site_of: dict[int, int]

    def call(self, site: int, function: Callable, arguments: list, keywords: dict | None) -> Any:
        """``function(*arguments, **keywords)``, recorded as the site ``site``."""

    def arithmetic(self, site: int, operation: Callable, left: Any, right: Any) -> Any:
        """``operation(left, right)``, recorded as the site ``site``."""


def interpreted(
    function: gast.FunctionDef,
    local_names: set[str],
    namespace: dict,
    compile_stub: Callable[[gast.FunctionDef, dict], Callable],
    after: Callable[[], None],
    observer: Observer | None = None,
) -> Callable:
    """A function that runs ``function``'s body by walking it, in ``namespace``, then calls
    ``after``. ``local_names`` are the names ``function`` binds (:func:`bound_names`):
    read before they are bound, they raise as Python's locals do. ``compile_stub`` compiles
    the stub that binds the arguments (as the probe would be compiled). The calls and
    operations of ``observer.site_of`` are made by ``observer``."""
    module_globals = {"__name__": "s2sgrad.generated", "__builtins__": __builtins__}
    module_globals.update(namespace)
    given = module_globals["__builtins__"]
    known_builtins = given if type(given) is dict else vars(given)
    sites = {} if observer is None else observer.site_of

    def interpret(arguments: dict) -> Any:
        frame = _Frame(arguments, local_names, module_globals, known_builtins, sites, observer)
        try:
            result = _block(function.body, frame)
        finally:
            after()
        return None if result is _NOTHING else result

    return compile_stub(_stub(function), {**namespace, _INTERPRET: interpret, _LOCALS: locals})


def _stub(function: gast.FunctionDef) -> gast.FunctionDef:
    """``function``'s signature with the body ``return __s2sgrad_interpret__(locals())``."""
    stub = gast.FunctionDef.__new__(gast.FunctionDef)
    stub.__dict__ = dict(function.__dict__)
    stub.decorator_list = []
    reads = gast.Call(gast.Name(_LOCALS, gast.Load(), None, None), [], [])
    run = gast.Call(gast.Name(_INTERPRET, gast.Load(), None, None), [reads], [])
    stub.body = [gast.Return(run)]
    return stub


class _Frame:
    __slots__ = ("locals", "local_names", "globals", "builtins", "sites", "observer")

    def __init__(
        self,
        arguments: dict,
        local_names: set[str],
        globals_: dict,
        builtins_: dict,
        sites: dict[int, int],
        observer: Any,
    ):
        self.locals = arguments
        self.local_names = local_names
        self.globals = globals_
        self.builtins = builtins_
        self.sites = sites
        self.observer = observer


_NOTHING = object()  # what a block that ran to its end, without ``return``, returns


def _block(body: list, frame: _Frame) -> Any:
    """Run the statements of ``body``; the value of its ``return``, else ``_NOTHING``
    (at the function's end: None, as Python returns)."""
    for statement in body:
        kind = type(statement)
        if kind is _ASSIGN:  # no variable of this loop holds a value past its statement:
            targets = statement.targets  # the lean probe lets go of arrays (releases.py)
            if len(targets) == 1 and type(targets[0]) is _NAME_NODE:
                value = statement.value  # an operation or a call most often: no dispatch
                kind = type(value)
                if kind is _CALL_NODE:
                    frame.locals[targets[0].id] = _call(value, frame)
                elif kind is _BINOP_NODE:
                    frame.locals[targets[0].id] = _binary(value, frame)
                else:
                    frame.locals[targets[0].id] = _evaluate(value, frame)
            else:
                _store_each(targets, _evaluate(statement.value, frame), frame)
        elif kind is _EXPR:
            if type(statement.value) is not _CONSTANT_NODE:  # a comment marker: nothing
                _evaluate(statement.value, frame)
        elif kind is _RETURN:
            return None if statement.value is None else _evaluate(statement.value, frame)
        elif kind is _IF:
            branch = statement.body if _evaluate(statement.test, frame) else statement.orelse
            result = _block(branch, frame)
            if result is not _NOTHING:
                return result
        else:
            _STATEMENTS[kind](statement, frame)
    return _NOTHING


def _aug_assign(statement: gast.AugAssign, frame: _Frame) -> None:
    """``t += v`` as Python runs it: for ``a[i] += v``, ``a``, ``i``, the item, ``v``, the
    in-place operation, then the item stored back."""
    target, operation = statement.target, _IN_PLACE[type(statement.op)]
    kind = type(target)
    if kind is _NAME_NODE:
        current = _name(target, frame)
        frame.locals[target.id] = operation(current, _evaluate(statement.value, frame))
    elif kind is gast.Subscript:
        container = _evaluate(target.value, frame)
        index = _evaluate(target.slice, frame)
        updated = operation(container[index], _evaluate(statement.value, frame))
        container[index] = updated
    else:  # an attribute (``interpretable`` lets no other target through)
        owner = _evaluate(target.value, frame)
        updated = operation(getattr(owner, target.attr), _evaluate(statement.value, frame))
        setattr(owner, target.attr, updated)


def _delete(statement: gast.Delete, frame: _Frame) -> None:
    for target in statement.targets:
        kind = type(target)
        if kind is _NAME_NODE:
            del frame.locals[target.id]
        elif kind is gast.Subscript:
            operator.delitem(_evaluate(target.value, frame), _evaluate(target.slice, frame))
        elif kind is gast.Attribute:
            delattr(_evaluate(target.value, frame), target.attr)
        else:
            raise _Unsupported(target)


def _pass(statement: gast.Pass, frame: _Frame) -> None:
    pass


class _Unsupported(Exception):
    """A node the walk does not know (``interpretable`` keeps such probes compiled)."""


def _store_each(targets: list, value: Any, frame: _Frame) -> None:
    for target in targets:
        _store(target, value, frame)


def _store(target: gast.expr, value: Any, frame: _Frame) -> None:
    kind = type(target)
    if kind is _NAME_NODE:
        frame.locals[target.id] = value
    elif kind is gast.Subscript:  # Python evaluates the value, then the object, the index
        container = _evaluate(target.value, frame)
        operator.setitem(container, _evaluate(target.slice, frame), value)
    elif kind is gast.Attribute:
        setattr(_evaluate(target.value, frame), target.attr, value)
    elif kind is gast.Tuple or kind is gast.List:
        targets = target.elts
        if any(type(t) is gast.Starred for t in targets):
            raise _Unsupported(target)
        for part, item in zip(targets, _unpacked(value, len(targets))):
            _store(part, item, frame)
    else:
        raise _Unsupported(target)


def _unpacked(value: Any, count: int) -> list:
    """``value``'s ``count`` items, as ``a, b = value`` takes them (an error unless exactly
    ``count``; only one item past them is asked for)."""
    items = list(itertools.islice(iter(value), count + 1))
    if len(items) != count:
        raise ValueError(f"expected {count} values to unpack, got another number")
    return items


def _evaluate(node: Any, frame: _Frame) -> Any:
    kind = type(node)
    if kind is _NAME_NODE:  # a local most often: looked up here, without a call
        value = frame.locals.get(node.id, _MISSING)
        return value if value is not _MISSING else _name(node, frame)
    if kind is _CONSTANT_NODE:
        return node.value
    return _EXPRESSIONS[kind](node, frame)


_MISSING = object()


def _name(node: gast.Name, frame: _Frame) -> Any:
    name = node.id
    value = frame.locals.get(name, _MISSING)
    if value is not _MISSING:
        return value
    if name in frame.local_names:
        raise UnboundLocalError(f"cannot access local variable {name!r}")
    value = frame.globals.get(name, _MISSING)
    if value is not _MISSING:
        return value
    value = frame.builtins.get(name, _MISSING)
    if value is not _MISSING:
        return value
    raise NameError(f"name {name!r} is not defined")


def _values(nodes: list, frame: _Frame) -> list:
    values = []
    local = frame.locals.get
    for node in nodes:
        kind = type(node)
        if kind is _NAME_NODE:  # a local most often: looked up here, without a call
            value = local(node.id, _MISSING)
            values.append(value if value is not _MISSING else _name(node, frame))
        elif kind is _CONSTANT_NODE:
            values.append(node.value)
        elif kind is gast.Starred:
            values.extend(_evaluate(node.value, frame))
        else:
            values.append(_EXPRESSIONS[kind](node, frame))
    return values


def _call(node: gast.Call, frame: _Frame) -> Any:
    func = node.func
    function = _name(func, frame) if type(func) is _NAME_NODE else _evaluate(func, frame)
    arguments = _values(node.args, frame)
    keywords = None
    if node.keywords:
        keywords = {k.arg: _evaluate(k.value, frame) for k in node.keywords}  # no ``**``
    site = frame.sites.get(id(node))
    if site is not None:
        return frame.observer.call(site, function, arguments, keywords)
    if keywords is None:
        return function(*arguments)
    return function(*arguments, **keywords)


def _binary(node: gast.BinOp, frame: _Frame) -> Any:
    left, right = node.left, node.right  # names and literals most often: without a call
    kind = type(left)
    if kind is _NAME_NODE:
        left = frame.locals.get(left.id, _MISSING)
        if left is _MISSING:
            left = _name(node.left, frame)
    elif kind is _CONSTANT_NODE:
        left = left.value
    else:
        left = _EXPRESSIONS[kind](left, frame)
    kind = type(right)
    if kind is _NAME_NODE:
        right = frame.locals.get(right.id, _MISSING)
        if right is _MISSING:
            right = _name(node.right, frame)
    elif kind is _CONSTANT_NODE:
        right = right.value
    else:
        right = _EXPRESSIONS[kind](right, frame)
    site = frame.sites.get(id(node))
    if site is not None:
        return frame.observer.arithmetic(site, _BINARY[type(node.op)], left, right)
    return _BINARY[type(node.op)](left, right)


def _unary(node: gast.UnaryOp, frame: _Frame) -> Any:
    return _UNARY[type(node.op)](_evaluate(node.operand, frame))


def _attribute(node: gast.Attribute, frame: _Frame) -> Any:
    return getattr(_evaluate(node.value, frame), node.attr)


def _subscript(node: gast.Subscript, frame: _Frame) -> Any:
    value = _evaluate(node.value, frame)
    return value[_evaluate(node.slice, frame)]


def _slice(node: gast.Slice, frame: _Frame) -> slice:
    lower = None if node.lower is None else _evaluate(node.lower, frame)
    upper = None if node.upper is None else _evaluate(node.upper, frame)
    step = None if node.step is None else _evaluate(node.step, frame)
    return slice(lower, upper, step)


def _tuple(node: gast.Tuple, frame: _Frame) -> tuple:
    return tuple(_values(node.elts, frame))


def _list(node: gast.List, frame: _Frame) -> list:
    return _values(node.elts, frame)


def _dict(node: gast.Dict, frame: _Frame) -> dict:
    result: dict = {}
    for key, value in zip(node.keys, node.values):  # no ``**``: keys, then values, in order
        key_value = _evaluate(key, frame)
        result[key_value] = _evaluate(value, frame)
    return result


def _named(node: gast.NamedExpr, frame: _Frame) -> Any:
    value = _evaluate(node.value, frame)  # ``(t3 := None)``: a name (``interpretable``)
    frame.locals[node.target.id] = value
    return value


def _bool_op(node: gast.BoolOp, frame: _Frame) -> Any:
    is_and = type(node.op) is gast.And
    value = None
    for operand in node.values:
        value = _evaluate(operand, frame)
        if bool(value) is not is_and:
            return value
    return value


def _compare(node: gast.Compare, frame: _Frame) -> Any:
    left = _evaluate(node.left, frame)
    result: Any = True
    for index, (op, comparator) in enumerate(zip(node.ops, node.comparators)):
        right = _evaluate(comparator, frame)
        result = _COMPARISONS[type(op)](left, right)
        if index < len(node.ops) - 1 and not result:
            return result
        left = right
    return result


def _if_expression(node: gast.IfExp, frame: _Frame) -> Any:
    if _evaluate(node.test, frame):
        return _evaluate(node.body, frame)
    return _evaluate(node.orelse, frame)


_NAME_NODE, _CONSTANT_NODE = gast.Name, gast.Constant
_CALL_NODE, _BINOP_NODE = gast.Call, gast.BinOp
_ASSIGN, _EXPR, _RETURN, _IF = gast.Assign, gast.Expr, gast.Return, gast.If

_BINARY = BINARY_OPERATORS  # the function each node applies, as the compiled probe would
_IN_PLACE: dict[type, Callable[[Any, Any], Any]] = {
    gast.Add: operator.iadd,
    gast.Sub: operator.isub,
    gast.Mult: operator.imul,
    gast.Div: operator.itruediv,
    gast.FloorDiv: operator.ifloordiv,
    gast.Mod: operator.imod,
    gast.Pow: operator.ipow,
    gast.MatMult: operator.imatmul,
    gast.LShift: operator.ilshift,
    gast.RShift: operator.irshift,
    gast.BitOr: operator.ior,
    gast.BitXor: operator.ixor,
    gast.BitAnd: operator.iand,
}
_UNARY = UNARY_OPERATORS
_COMPARISONS = COMPARISON_OPERATORS
_EXPRESSIONS: dict[type, Callable[[Any, _Frame], Any]] = {
    gast.Name: _name,
    gast.Call: _call,
    gast.BinOp: _binary,
    gast.UnaryOp: _unary,
    gast.Attribute: _attribute,
    gast.Subscript: _subscript,
    gast.Slice: _slice,
    gast.Tuple: _tuple,
    gast.List: _list,
    gast.Dict: _dict,
    gast.BoolOp: _bool_op,
    gast.Compare: _compare,
    gast.IfExp: _if_expression,
    gast.NamedExpr: _named,  # as ``releases.py`` lets go of an array at its last read
}
_STATEMENTS: dict[type, Callable[[Any, _Frame], None]] = {
    gast.AugAssign: _aug_assign,
    gast.Delete: _delete,
    gast.Pass: _pass,
}

_DELETED = (gast.Name, gast.Subscript, gast.Attribute)
# builtins that read their caller's frame: called from the walk, they would read its own
FRAME_READERS = frozenset(
    {"locals", "vars", "globals", "dir", "eval", "exec", "super", "breakpoint", "__import__"}
)

# the kinds of nodes whose fields decide whether the walk knows them (``interpretable``)
CHECKED = frozenset(
    {
        gast.FunctionDef,
        gast.Starred,
        gast.keyword,
        gast.Dict,
        gast.AugAssign,
        gast.Delete,
        gast.NamedExpr,
    }
)

# every kind of node the walk knows, as found in a tree (operators, contexts, keywords …)
INTERPRETED = frozenset(
    {
        gast.FunctionDef,  # the probe's own, whose body is walked (functions inside are not)
        gast.arguments,
        gast.Assign,
        gast.Expr,
        gast.Return,
        gast.If,
        gast.keyword,
        gast.Starred,
        *_EXPRESSIONS,
        *_STATEMENTS,
        *_BINARY,
        *_UNARY,
        *_COMPARISONS,
        gast.And,
        gast.Or,
        gast.Load,
        gast.Store,
        gast.Del,
        gast.Param,
        gast.Constant,  # among parameters' defaults (else not walked by ``raw_facts``)
    }
)
