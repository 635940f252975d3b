"""Which parameters a Python function may change in place, and refusing such calls.

``mutated_parameters(halve)`` reads ``halve``'s source (and transitively the functions it
calls): ``a[:] *= 0.5`` changes its parameter ``a``. The caller uses it to inline such
helpers (``inline.inline_updating_helpers``) or to refuse a call that changes an array
neither engine could follow (:func:`refuse_mutating_calls`).
"""

from __future__ import annotations

import sysconfig
import types
import weakref
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.block_walks import (
    header_nodes,
    names_read_by_all,
    names_written_by_all,
    statement_blocks,
)
from s2sgrad.compiler.frontend import ParsedFunction, parse_function
from s2sgrad.compiler.node_kinds import of_kind
from s2sgrad.compiler.passes.sharing import (
    Layout,
    Sharing,
    base_of,
    container_names,
    makes_container,
    resolved_target,
    sources_of,
    updated_name,
    with_local_functions,
)
from s2sgrad.compiler.plain_values import calls_in, plain_calls
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
    "changed_by",
    "changed_in_place",
    "mutated_parameters",
    "calls_that_mutate",
    "refuse_mutating_calls",
    "is_users_code",
]

_LIBRARY_DIRECTORIES = tuple(
    {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
)

# code object -> the parameters whose arrays the function may change in place
_MUTATIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MUTATING: set = set()


def mutated_parameters(
    function: types.FunctionType, parsed: ParsedFunction | None = None
) -> frozenset[str]:
    """The parameters of ``function`` whose values it may change in place (``a[i] = v``,
    ``a += v``, ``a.append(v)``, ``out=a``), itself or through the functions it calls with
    them, read from its source (nothing when there is none); ``parsed``, when the caller
    has it, is ``parse_function(function)``'s result, before any pass changed its tree.

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
        if parsed is None:  # else the caller parsed it, and has not changed the tree yet
            parsed = parse_function(function)
    except Exception:  # no source, or source the transformer cannot read
        summary: frozenset[str] = frozenset()
    else:
        local = _nested_def_changes(parsed.node, parsed.resolve)
        summary = changed_in_place(parsed.node, parsed.resolve, local) & parameter_names(
            parsed.node
        )
    finally:
        _MUTATING.discard(code)
    _MUTATIONS[code] = summary
    return summary


def _nested_def_changes(node: gast.FunctionDef, resolve) -> dict | None:
    """``{name: (its parameters, what it changes)}`` of the ``def``s nested in ``node``, so
    that a call of one (``inner(a)``, writing ``v[0] = ...`` into its parameter) counts as
    the change it makes (:func:`changed_in_place`'s ``local``); None without any."""
    nested = [s for s in nested_statements(node.body) if type(s) is gast.FunctionDef]
    if not nested:
        return None
    local: dict[str, tuple[list[str], frozenset[str]]] = {}
    for _ in range(2):  # a nested def that calls another, defined after it
        for definition in nested:
            changes = changed_in_place(definition, resolve, local)
            local[definition.name] = ([a.id for a in definition.args.args], changes)
    return local


def changed_in_place(
    definition: gast.FunctionDef,
    resolve,
    local=None,
    arrays_only: bool = False,
    nodes: list[gast.AST] | None = None,
) -> frozenset[str]:
    """The names from outside ``definition`` (its parameters, and the free names a nested
    ``def`` reads from the function around it) whose values it may change in place,
    itself or through the functions it calls; ``local`` maps the name of a nested ``def``
    of the same function to ``(its parameters, what it changes)``. With ``arrays_only``,
    only what the function itself writes into arrays, as it runs: item writes, ``out=``,
    ``np.add.at`` and the like; not ``x op= v`` (which rebinds a number), list and dict
    methods, calls of helpers, nor what a lambda or nested ``def`` does when it is called.

    Example::

        # def halve(): a[:] *= 0.5      (a nested def, a read from around it)
        changed_in_place(halve_node, resolve)  # frozenset({'a'})

    ``nodes``: ``walk(definition)``, when the caller has it: with ``arrays_only``, when no
    call among them writes into an array, no statement is walked for its calls.
    """
    statements = list(nested_statements(definition.body))
    # a closure may return a view; nothing here changes the code
    resolve = with_local_functions(statements, resolve, unchanged=True)
    parameters = parameter_names(definition)
    changed = set()
    by_calls: dict[int, set[str]] = {}  # id(statement) → what the calls in it change
    if arrays_only and nodes is not None and not _any_array_writing_call(nodes, resolve):
        by_calls = _NOTHING_INSIDE  # what the calls of each statement change: nothing
    else:
        for statement in reversed(statements):  # a block's statements before the one around
            by_calls[id(statement)] = _changed_by_calls(
                statement, resolve, local, arrays_only, by_calls
            )
    layout = own = None  # made at the first change: most functions change nothing
    for index, statement in enumerate(statements):
        if arrays_only and _rebinds(statement):
            continue
        calls = by_calls[id(statement)]
        if statement_blocks(statement):  # its blocks' statements are judged one by one
            calls = _changed_by_calls(statement, resolve, local, arrays_only, _NOTHING_INSIDE)
        names = _changed_by(statement, calls)
        if not names:
            continue
        if layout is None or own is None:
            layout = Layout(definition.body, statements)
            own = _own_containers(statements) - parameters
        for name in names - own:
            if _entry_change(statement, name) and _fresh_container_at(layout, statement, name):
                continue  # traj.append(x) while traj = [...]: the new list changes, not x
            if layout.made_since(statement, name, index, resolve) is None:
                changed.add(name)  # else an array made anew before: not an argument
    if not changed:
        return frozenset()
    sharing = Sharing(statements, resolve, container_names(statements), parameters)
    outside = parameters | (names_read_by_all(statements) - names_written_by_all(statements))
    return frozenset(set().union(*map(sharing.of, changed)) & outside)


class _NothingInside(dict):
    """What the statements of a block change, as nothing: a compound statement's header alone."""

    def __missing__(self, key: int) -> frozenset[str]:
        return frozenset()


_NOTHING_INSIDE = _NothingInside()
_LIST_AND_DICT_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "reverse", "update", "setdefault"}
)


def _entry_change(statement: gast.stmt, name: str) -> bool:
    """Whether ``statement`` changes ``name``'s list or dict itself, not an array it holds:
    ``name.append(v)`` (another list or dict method alike) or ``name[i] = v``."""
    if type(statement) is gast.Expr and type(statement.value) is gast.Call:
        func = statement.value.func
        return (
            type(func) is gast.Attribute
            and func.attr in _LIST_AND_DICT_METHODS
            and type(func.value) is gast.Name
            and func.value.id == name
        )
    if type(statement) is gast.Assign and len(statement.targets) == 1:
        target = statement.targets[0]
        return (
            type(target) is gast.Subscript
            and type(target.value) is gast.Name
            and target.value.id == name
        )
    return False


def _fresh_container_at(layout: Layout, statement: gast.stmt, name: str) -> bool:
    """Whether ``name`` surely holds a list or dict made here when ``statement`` runs: its
    last binding before it (in its block or one around it) is ``name = [...]`` (``list(...)``,
    ``{...}``, a comprehension), and no loop around ``statement`` binds ``name`` again."""
    block = layout.block_of[id(statement)]
    current = statement
    while True:
        at = next(i for i, s in enumerate(block) if s is current)
        for earlier in reversed(block[:at]):
            if name in names_written(earlier):
                return name in _made_containers(earlier)
        if id(block) not in layout.owner:
            return False
        current, block = layout.owner[id(block)]
        if isinstance(current, (gast.For, gast.While)):
            inside = nested_statements([current])
            if any(name in names_written(s) for s in inside if s is not current):
                return False
            if isinstance(current, gast.For) and name in names_written(current.target):
                return False


def _rebinds(statement: gast.stmt) -> bool:
    """``x op= v``, with nothing else in it that could change an array in place."""
    if type(statement) is not gast.AugAssign or type(statement.target) is not gast.Name:
        return False
    return not any(type(n) is gast.Call for n in walk(statement.value))


def _own_containers(statements: list[gast.stmt]) -> set[str]:
    """Names every binding of which makes a new list or dict: changing one (``items.append(
    x)``, ``items[0] = x``) changes no argument, even when it holds one."""
    made = container_names(statements).union(*map(_made_containers, statements))
    if not made:
        return made
    for statement in statements:
        for name in names_written(statement) & made:
            if name in _made_containers(statement):
                continue
            fresh = type(statement) is gast.Assign and type(statement.targets[0]) is gast.Name
            if fresh and not makes_container(statement.value):
                made.discard(name)
            elif not fresh and updated_name(statement) != name:
                made.discard(name)  # bound by a loop, an unpacking ...
    return made


def _made_containers(statement: gast.stmt) -> set[str]:
    """The names ``statement`` binds to new lists or dicts: ``xs = []``, and each name
    unpacked from one in ``xs, ys = [], {}``."""
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return set()
    target, value = statement.targets[0], statement.value
    if type(target) is gast.Name:
        return {target.id} if makes_container(value) else set()
    pairs = type(target) is gast.Tuple and type(value) is gast.Tuple
    if not pairs or len(target.elts) != len(value.elts):
        return set()
    return {
        name.id
        for name, part in zip(target.elts, value.elts)
        if type(name) is gast.Name and makes_container(part)
    }


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
            base = base_of(argument)
            if type(base) is gast.Name:
                found.append((function, parameter, base.id))
    return found


def changed_by(statement: gast.stmt, resolve) -> set[str]:
    """The names whose values ``statement`` may change in place: by an item write or
    ``x op= v``, by ``out=``, by NumPy's writing functions, by a mutating method, or by a
    call of a Python function that changes its argument (in its blocks too).

    Example::

        changed_by(parse_statement("np.copyto(t, v)"), resolve)  # {'t'}
    """
    by_calls: dict[int, set[str]] = {}
    for inner in reversed(list(nested_statements([statement]))):
        by_calls[id(inner)] = _changed_by_calls(inner, resolve, None, False, by_calls)
    return _changed_by(statement, by_calls[id(statement)])


def _any_array_writing_call(nodes: list[gast.AST], resolve) -> bool:
    """Whether a call among ``nodes`` may write into an array (what
    :func:`_changed_by_calls` looks at with ``arrays_only``): one given ``out=``, or one
    :func:`_written_by_numpy` finds a target of."""
    for node in of_kind(nodes, gast.Call):
        if any(keyword.arg == "out" for keyword in node.keywords):
            return True
        if _written_by_numpy(node, resolve):
            return True
    return False


def _changed_by(statement: gast.stmt, by_calls: set[str]) -> set[str]:
    """The names whose values ``statement`` changes in place, given ``by_calls``, what the
    calls in it change (:func:`_changed_by_calls`)."""
    changed = set(by_calls)
    updated = updated_name(statement)
    if updated is not None:
        changed.add(updated)
    if type(statement) is gast.AugAssign and type(base_of(statement.target)) is gast.Name:
        changed.add(base_of(statement.target).id)  # a[i] += v
    if type(statement) is gast.Assign:  # a[0], a[1] = a[1], a[0]: items among the targets
        changed |= _items_in_unpacked_targets(statement.targets)
    return changed


def _items_in_unpacked_targets(targets: list[gast.expr]) -> set[str]:
    """The names whose items a tuple or list of targets writes (``a[i], b = ...``)."""
    found = set()
    for target in targets:
        if type(target) not in (gast.Tuple, gast.List):
            continue
        for part in target.elts:
            part = part.value if type(part) is gast.Starred else part
            if type(part) is gast.Subscript and type(base_of(part)) is gast.Name:
                found.add(base_of(part).id)
            elif type(part) in (gast.Tuple, gast.List):
                found |= _items_in_unpacked_targets([part])
    return found


def _changed_by_calls(
    statement: gast.stmt, resolve, local, arrays_only: bool, by_calls: dict[int, set[str]]
) -> set[str]:
    """What the calls in ``statement`` change in place (``local``, ``arrays_only``: see
    :func:`changed_in_place`); ``by_calls`` holds it for the statements of its blocks."""
    changed: set[str] = set()
    blocks = statement_blocks(statement)
    for block in blocks:
        for inner in block:
            changed |= by_calls[id(inner)]
    # a statement without blocks: its nodes are its header's (in another order, which
    # the unions below of what each call writes into do not see)
    nodes = None if blocks else plain_calls(statement)  # its calls: all it looks at
    if nodes is None:
        nodes = walk(statement) if arrays_only and not blocks else header_nodes(statement)
    later = set()  # what lambdas and nested functions run when they are called
    if arrays_only:
        scopes = [n for n in nodes if type(n) in (gast.Lambda, gast.FunctionDef)]
        later = {id(inner) for n in scopes for inner in walk(n)}
    for node in nodes:
        if type(node) is not gast.Call or id(node) in later:
            continue
        func = node.func
        for keyword in node.keywords:
            if keyword.arg == "out":
                changed |= sources_of(keyword.value, resolve)
        changed |= _written_by_numpy(node, resolve)
        if arrays_only:
            continue
        if type(func) is gast.Attribute and func.attr in MUTATING_METHODS | {"fill", "sort"}:
            changed |= sources_of(func.value, resolve)
        for _, _, argument in _mutating_arguments(node, resolve):
            changed |= sources_of(argument, resolve)
        if local and type(func) is gast.Name and func.id in local:
            parameters, changes = local[func.id]
            changed |= _changed_by_local_call(node, parameters, changes, resolve)
    return changed


# NumPy functions that write into their first argument
_WRITING_FUNCTIONS = (
    np.copyto,
    np.put,
    np.place,
    np.putmask,
    np.fill_diagonal,
    np.put_along_axis,
    np.random.shuffle,
)


def _written_by_numpy(call: gast.Call, resolve) -> set[str]:
    """What a NumPy call writes into: the first argument of ``np.copyto``, ``np.add.at``
    and the like, the ``out`` arguments a ufunc is given by position."""
    target = resolved_target(call.func, resolve)
    if target is None or not call.args:
        return set()
    if any(target is f for f in _WRITING_FUNCTIONS) or (
        getattr(target, "__name__", None) == "at"
        and isinstance(getattr(target, "__self__", None), np.ufunc)
    ):
        return sources_of(call.args[0], resolve)
    if isinstance(target, np.ufunc) and len(call.args) > target.nin:
        return set().union(*(sources_of(a, resolve) for a in call.args[target.nin :]))
    return set()


def _changed_by_local_call(call: gast.Call, parameters, changes, resolve) -> set[str]:
    """What a call of a nested ``def`` (its ``parameters`` in order, and the parameters
    and free names it ``changes``) changes in place, in the caller's names."""
    if not changes:
        return set()
    if any(type(a) is gast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
        every = [*call.args, *(k.value for k in call.keywords)]
        found = set().union(*(sources_of(a, resolve) for a in every))
    else:
        given = list(zip(parameters, call.args)) + [(k.arg, k.value) for k in call.keywords]
        found = set().union(*(sources_of(a, resolve) for p, a in given if p in changes))
    return found | (set(changes) - set(parameters))


def is_users_code(function: types.FunctionType) -> bool:
    """Whether ``function`` is the user's code: not a primitive of the engines (a function
    with a rule), nor NumPy's, the standard library's or an installed package's.

    Example::

        is_users_code(np.linalg.norm)  # False
    """
    module = getattr(function, "__module__", None) or ""
    if module.split(".")[0] in ("s2sgrad", "numpy") or get_rule(function) is not None:
        return False  # primitives of the engines, and NumPy's own Python functions
    return not function.__code__.co_filename.startswith(_LIBRARY_DIRECTORIES)


def _mutating_arguments(call: gast.Call, resolve) -> list[tuple[Any, str, gast.expr]]:
    target = resolved_target(call.func, resolve)
    arguments = list(call.args)
    if isinstance(target, types.MethodType) and type(call.func) is gast.Attribute:
        target, arguments = target.__func__, [call.func.value, *arguments]
    if not isinstance(target, types.FunctionType) or not is_users_code(target):
        return []
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


def _objects_of_classes(statements, resolve) -> dict[str, type]:
    """The names bound (once) to a new object of a class of the user's (``layer =
    Layer(W)``), each with its class: their method calls (``layer.step()``) are read as
    calls of the class's functions with the object as ``self``."""
    nested = list(nested_statements(statements))
    made: dict[int, type] = {}  # by id of the statement ``name = Cls(...)``
    for statement in nested:
        if (
            type(statement) is gast.Assign
            and len(statement.targets) == 1
            and type(statement.value) is gast.Call
            and (type(statement.targets[0]) is gast.Name or names_written(statement))
        ):
            target = resolved_target(statement.value.func, resolve)
            if isinstance(target, type):  # its methods are looked at when called
                made[id(statement)] = target
    if not made:  # the common case: no object of a class made, no name's writes to count
        return {}
    bound: dict[str, list] = {}
    for statement in nested:
        for name in names_written(statement):
            bound.setdefault(name, []).append(made.get(id(statement)))
    return {n: kinds[0] for n, kinds in bound.items() if len(kinds) == 1 and kinds[0]}


def _changing_methods(call: gast.Call, objects: dict[str, type]) -> list[tuple[Any, str, str]]:
    """``(function, 'self', name)`` for ``name.method(...)`` of an object of ``objects``
    whose method changes ``self`` in place (``self.W -= lr * g``)."""
    func = call.func
    if type(func) is not gast.Attribute or type(func.value) is not gast.Name:
        return []
    cls = objects.get(func.value.id)
    function = getattr(cls, func.attr, None) if cls is not None else None
    if not isinstance(function, types.FunctionType) or not is_users_code(function):
        return []
    code = function.__code__
    first = code.co_varnames[:1]
    if not first or first[0] not in mutated_parameters(function):
        return []
    return [(function, first[0], func.value.id)]


def refuse_mutating_calls(statements, parsed, parameters: set[str], activity) -> None:
    """Refuse a call of a Python function that may change in place an array it is given
    (``halve(y)`` with ``a[:] *= 0.5`` inside), when the array is an input, is being
    differentiated, or is read by a derivative: neither engine sees the change."""
    calls = [n for s in statements for n in calls_in(s)]
    objects = _objects_of_classes(statements, parsed.resolve)
    if not any(_mutating_arguments(c, parsed.resolve) for c in calls) and not any(
        _changing_methods(c, objects) for c in calls
    ):
        return  # the common case: no call of a function that changes an argument
    read_by_derivatives = set()
    for statement in nested_statements(statements):
        if isinstance(statement, gast.Assign) and names_written(statement) & activity.active:
            read_by_derivatives |= names_read(statement.value)
    sharing: Sharing | None = None  # made at the first argument none of the above is

    def watched(name: str) -> bool:
        return (
            name in parameters
            or name in activity.varied
            or activity.is_active(name)
            or name in read_by_derivatives
        )

    for statement in nested_statements(statements):
        if isinstance(statement, (gast.If, gast.For, gast.While)):
            continue  # their blocks are looked at on their own
        changing = calls_that_mutate(statement, parsed.resolve)
        changing += [m for c in calls_in(statement) for m in _changing_methods(c, objects)]
        for function, parameter, name in changing:
            if not watched(name):
                # an object holding a differentiated array (layer = Layer(W)), changed by
                # its method (layer.step(), self.W -= ...): W changes with it
                if sharing is None:
                    flat = list(nested_statements(statements))
                    outside = parameters | {n for n in activity.varied if n not in parameters}
                    sharing = Sharing(flat, parsed.resolve, container_names(flat), outside)
                if not any(watched(other) for other in sharing.with_(name) - {name}):
                    continue
            callee = getattr(function, "__qualname__", "the function")
            code = function.__code__
            # the tape records a helper's update of an array the function made
            # (tape/helper_writes.py), and refuses one of an input as it happens; "may":
            # ``a, b = state; b += v`` changes nothing when state's entries are numbers
            engines = "the source transformer cannot"
            error = UnsupportedError(
                f"{parsed.location(statement)}: {callee} may change its argument "
                f"'{parameter}' in place ({where(code.co_filename, code.co_firstlineno)}), "
                f"here '{name}', and {engines} follow that change; have {callee} "
                f"leave '{parameter}' as it is and return new arrays instead (g = g * s "
                "rather than g[:] *= s)"
            )
            raise error
