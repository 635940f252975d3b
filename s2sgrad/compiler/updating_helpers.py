"""Inline the calls of the user's helpers that change arrays in place, or refuse them.

``halve(y)``, with ``def halve(a): a[:] *= 0.5`` at module level or nested in the function
being differentiated, becomes ``y[:] *= 0.5`` in the caller: the helper's body, its own
variables renamed apart, the caller's name for each argument it changes. The update is then
checked for sharing and differentiated like any other. A nested ``def`` (or lambda) may
also change arrays of the function around it that it reads (``def bump(): a[0] += 1.0``);
its body, inlined where it is called, changes them there, as Python would.

A module-level helper that cannot be inlined is left for :mod:`.passes.mutation`'s refusal.
A nested one that cannot be inlined (called inside an expression, passed as a value, given a
view rather than a variable) is refused here: once the later passes inlined it as an
ordinary local function, its parameters would become copies of the names of the caller,
and the update would be lost.
"""

from __future__ import annotations

import dataclasses
import types
from collections import Counter
from dataclasses import dataclass

import gast

from s2sgrad import runtime
from s2sgrad.compiler.frontend import parse_function
from s2sgrad.compiler.inline import is_literal_node
from s2sgrad.compiler.passes.mutation import changed_in_place, mutated_parameters
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import (
    assign,
    call,
    clone,
    clone_rewriting,
    constant,
    load,
    names_read,
    names_written,
    nested_statements,
    parameter_names,
    walk,
)
from s2sgrad.errors import UnsupportedError

__all__ = ["inline_updating_helpers"]


@dataclass
class _Callee:
    """A helper to inline: its definition, its name, the parameters it changes in place,
    and whether its free names mean what they mean in the caller (a nested def's do)."""

    definition: gast.FunctionDef
    name: str
    changes: frozenset[str]
    local: bool
    binding: gast.stmt | None = None
    # its variables no other code of the function uses: the first copy inlined keeps them
    # (so that a refusal names them as the user wrote them)
    keep: set[str] = dataclasses.field(default_factory=set)


def inline_updating_helpers(node: gast.FunctionDef, parsed, names: NameGenerator) -> set[str]:
    """Inline, in place, each statement-level call of a helper of the user's that changes an
    array argument in place (``halve(y)`` with ``a[:] *= 0.5`` inside), or, for a nested
    ``def``, an array of ``node`` it reads: its body, with the caller's own name for that
    argument, becomes part of the caller, where the update is differentiated like any other.
    Returns the names of the module-level helpers inlined (the generated code depends on
    them). A nested helper that changes arrays and cannot be inlined is refused.

    Example::

        inline_updating_helpers(node, parsed, names)  # {'halve'}: y[:] = y[:] * 0.5
    """
    local_defs = _local_updating_defs(node, parsed)
    _names_to_keep(node, local_defs)
    local: set[str] | None = None  # the names bound here, found at the first helper's call
    inlined: set[str] = set()
    for _ in range(8):  # helpers that call helpers that change their arguments
        found = False
        for block in _blocks(node):
            position = 0
            while position < len(block):
                statement = block[position]
                if _statement_call(statement) is None:
                    position += 1
                    continue
                if local is None:
                    local = names_written(node) | parameter_names(node)
                body, name = _inline_statement(statement, parsed, names, local, local_defs)
                if body is None:
                    position += 1
                    continue
                block[position : position + 1] = body
                local |= set().union(*map(names_written, body))
                if name not in local_defs:
                    inlined.add(name)
                found = True
                position += len(body)
        if not found:
            break
    _drop_local_definitions(node, parsed, local_defs)
    return inlined


def _blocks(node: gast.FunctionDef) -> list[list[gast.stmt]]:
    return [node.body] + [
        getattr(s, f)
        for s in nested_statements(node.body)
        for f in ("body", "orelse")
        if isinstance(s, (gast.If, gast.For, gast.While)) and isinstance(getattr(s, f), list)
    ]


def _inline_statement(statement, parsed, names, local, local_defs):
    """``(statements instead, helper's name)`` for a call of a helper that changes arrays,
    ``(None, None)`` for any other statement."""
    call_node = _statement_call(statement)
    if call_node is None:
        return None, None
    name = call_node.func.id
    if name in local_defs:
        body = _inlined_call(statement, call_node, local_defs[name], parsed, names, local)
        if body is None:
            raise _refusal(parsed, statement, local_defs[name], "called this way")
        return body, name
    helper = parsed.resolve(call_node.func)
    if name in local or not isinstance(helper, types.FunctionType):
        return None, None
    changes = mutated_parameters(helper)
    if not changes or helper.__closure__:
        return None, None
    try:
        definition = parse_function(helper)
    except Exception:  # no source: the call is refused where it is checked
        return None, None
    callee = _Callee(definition.node, helper.__name__, changes, local=False)
    free = _free_names(definition.node)
    if any(n in local or definition.resolve_name(n) is not parsed.resolve_name(n) for n in free):
        return None, None  # the helper's free names must mean the same in the caller
    return _inlined_call(statement, call_node, callee, parsed, names, local), name


def _local_updating_defs(node: gast.FunctionDef, parsed) -> dict[str, _Callee]:
    """The nested ``def``s and lambdas of ``node`` that change in place a parameter or an
    array of ``node`` they read, by name; refuses one bound more than once or decorated."""
    statements = list(nested_statements(node.body))
    definitions: dict[str, list] = {}
    for statement in statements:
        definition = _as_definition(statement)
        if definition is not None:
            definitions.setdefault(definition.name, []).append((statement, definition))
    if not definitions:
        return {}
    bindings = Counter(n for s in statements for n in names_written(s))
    summaries: dict[str, tuple[list[str], frozenset[str]]] = {}
    for _ in range(2):  # a nested def that calls another, defined after it
        for name, found in definitions.items():
            changes = frozenset().union(
                *(changed_in_place(d, parsed.resolve, summaries) for _, d in found)
            )
            summaries[name] = ([a.id for a in found[0][1].args.args], changes)
    updating = {}
    for name, found in definitions.items():
        changes = summaries[name][1]
        if not changes:
            continue
        statement, definition = found[0]
        callee = _Callee(definition, name, changes & parameter_names(definition), local=True)
        if len(found) > 1 or bindings[name] > 1 or getattr(statement, "decorator_list", None):
            raise _refusal(parsed, statement, callee, "bound more than once or decorated")
        callee.binding = statement
        updating[name] = callee
    return updating


def _names_to_keep(node: gast.FunctionDef, local_defs: dict[str, _Callee]) -> None:
    """Set each nested helper's ``keep``: its variables that nothing else in ``node`` names."""
    if not local_defs:
        return
    inside = {id(n) for c in local_defs.values() for n in walk(c.binding)}
    outside = {n.id for n in walk(node) if type(n) is gast.Name and id(n) not in inside}
    for callee in local_defs.values():
        own = set().union(*map(names_written, _body(callee.definition)))
        callee.keep = own - parameter_names(callee.definition) - outside


def _as_definition(statement: gast.stmt) -> gast.FunctionDef | None:
    """A nested ``def``, or ``name = lambda ...: value`` as the ``def`` it stands for."""
    if isinstance(statement, gast.FunctionDef):
        return statement
    if (
        isinstance(statement, gast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], gast.Name)
        and isinstance(statement.value, gast.Lambda)
    ):
        definition = gast.FunctionDef(
            name=statement.targets[0].id,
            args=statement.value.args,
            body=[gast.Return(value=statement.value.body)],
            decorator_list=[],
            returns=None,
            type_comment=None,
            type_params=[],
        )
        return gast.copy_location(definition, statement)
    return None


def _drop_local_definitions(node: gast.FunctionDef, parsed, local_defs) -> None:
    """Remove the nested helpers inlined at every call; refuse one still used otherwise
    (inside an expression, passed as a value, called where it was not inlined)."""
    if not local_defs:
        return
    bindings = {id(c.binding) for c in local_defs.values()}
    for block in [node.body] + [
        getattr(s, f)
        for s in nested_statements(node.body)
        for f in ("body", "orelse", "finalbody")
        if isinstance(getattr(s, f, None), list) and not isinstance(s, gast.FunctionDef)
    ]:
        block[:] = [s for s in block if id(s) not in bindings] or [gast.Pass()]
    for current in walk(node):
        used = type(current) is gast.Name and type(current.ctx) is gast.Load
        if used and current.id in local_defs:
            callee = local_defs[current.id]
            raise _refusal(parsed, current, callee, "used other than as a statement")


def _refusal(parsed, at: gast.AST, callee: _Callee, how: str) -> UnsupportedError:
    changed = ", ".join(f"'{n}'" for n in sorted(callee.changes)) or "an array it reads"
    error = UnsupportedError(
        f"{parsed.location(at)}: the nested function {callee.name} changes {changed} in "
        f"place, and is {how}, so the change cannot be followed; call it as a statement "
        f"of its own with a variable for each array it changes ({callee.name}(a)), or have "
        f"it return new arrays instead (a = a * s rather than a[:] *= s)"
    )
    # the tape runs the helper as written, following the change (a dict of memoised terms,
    # an array halved inside an expression) or refusing it where NumPy's meaning would differ
    return error


def _statement_call(statement: gast.stmt) -> gast.Call | None:
    """The call of ``helper(...)`` or ``target = helper(...)`` at statement level."""
    if isinstance(statement, gast.Expr) or (
        isinstance(statement, gast.Assign) and len(statement.targets) == 1
    ):
        value = statement.value
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Name):
            return value
    return None


_NOT_INLINED = (
    gast.FunctionDef,
    gast.AsyncFunctionDef,
    gast.ClassDef,
    gast.Lambda,
    gast.Yield,
    gast.YieldFrom,
    gast.Await,
    gast.Global,
    gast.Nonlocal,
    gast.Try,
    gast.With,
    gast.Match,
    gast.NamedExpr,
)


def _free_names(definition: gast.FunctionDef) -> set[str]:
    body = _body(definition)
    return (
        set().union(*map(names_read, body))
        - names_written(definition)
        - parameter_names(definition)
    )


def _body(definition: gast.FunctionDef) -> list[gast.stmt]:
    body = list(definition.body)
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant):
        body = body[1:]  # the docstring
    return body


def _inlined_call(statement, call_node, callee: _Callee, parsed, names, local) -> list | None:
    """The statements that do what ``statement``, a call of ``callee``, does; None when the
    helper cannot be inlined as it is written."""
    if any(isinstance(a, gast.Starred) for a in call_node.args):
        return None
    if any(k.arg is None for k in call_node.keywords):
        return None
    definition = callee.definition
    body = _body(definition)
    returns = [n for s in body for n in walk(s) if isinstance(n, gast.Return)]
    if any(isinstance(n, _NOT_INLINED) for s in body for n in walk(s)):
        return None
    if returns and (len(returns) > 1 or body[-1] is not returns[0]):
        return None
    bound = _bind(definition, call_node)
    if bound is None:
        return None
    renames: dict[str, str] = {}
    prologue = []
    written = set().union(*map(names_written, body))
    for parameter, argument in bound.items():
        if parameter in callee.changes:
            if not isinstance(argument, gast.Name):
                return None  # only a name the caller holds can be updated in its place
            if parameter in written:
                if not _only_updated(body, parameter):
                    return None
                prologue.append(_array_guard(statement, callee, parameter, argument, parsed, names))
            renames[parameter] = argument.id
            continue
        fresh = names.claim(parameter)
        renames[parameter] = fresh
        prologue.append(assign(fresh, clone(argument)))
    for name in sorted(written - set(bound)):
        kept = name in callee.keep
        callee.keep.discard(name)
        renames[name] = name if kept else names.claim(name)

    def rename(current: gast.AST) -> gast.AST:
        if type(current) is gast.Name and current.id in renames:
            current.id = renames[current.id]
        return current

    inlined = prologue + [clone_rewriting(s, rename, kinds=(gast.Name,)) for s in body]
    result = (inlined.pop().value if returns else None) or constant(None)
    if isinstance(statement, gast.Assign):
        inlined.append(gast.Assign(targets=statement.targets, value=result, type_comment=None))
    elif not isinstance(result, (gast.Constant, gast.Name)):
        inlined.append(assign(names.claim(f"{callee.name}_result"), result))
    for inlined_statement in inlined:  # errors name the line of the call
        for child in walk(inlined_statement):
            if "lineno" in child._attributes:
                gast.copy_location(child, statement)
    return inlined or [gast.Pass()]


def _only_updated(body: list[gast.stmt], parameter: str) -> bool:
    """Whether every store of ``parameter`` in ``body`` is ``parameter op= v`` (in place for
    an array, a new binding for a number)."""
    for statement in body:
        for current in walk(statement):
            stored = type(current) is gast.Name and type(current.ctx) is gast.Store
            if stored and current.id == parameter:
                updates = [
                    s
                    for s in nested_statements(body)
                    if type(s) is gast.AugAssign and s.target is current
                ]
                if not updates:
                    return False
    return True


def _array_guard(statement, callee, parameter, argument, parsed, names) -> gast.stmt:
    """``refuse_unless_array(a, message)``: the helper's ``a op= v`` changes the caller's
    ``a`` in place when it holds an array, and only then is inlining it right."""
    guard = names.claim("refuse_unless_array")
    parsed.closure[guard] = runtime.refuse_unless_array
    message = (
        f"{parsed.location(statement)}: {callee.name} updates its parameter '{parameter}' "
        f"with '{parameter} op= ...', which changes the caller's '{argument.id}' only when "
        f"it holds an array (here it does not); have {callee.name} return the new value "
        f"({parameter} = {parameter} * s; return {parameter}) and assign it"
    )
    return gast.Expr(value=call(load(guard), [load(argument.id), constant(message)]))


def _bind(definition: gast.FunctionDef, call_node: gast.Call) -> dict[str, gast.expr] | None:
    """Parameter name → argument expression, with literal defaults; None when the call
    does not fit the signature plainly (``*args``, ``**kwargs``, a default that is not a
    literal)."""
    arguments = definition.args
    if arguments.vararg is not None or arguments.kwarg is not None or arguments.posonlyargs:
        return None
    positional = [a.id for a in arguments.args]
    if len(call_node.args) > len(positional):
        return None
    bound = dict(zip(positional, call_node.args))
    keyword_only = [a.id for a in arguments.kwonlyargs]
    for keyword in call_node.keywords:
        if keyword.arg in bound or keyword.arg not in positional + keyword_only:
            return None
        bound[keyword.arg] = keyword.value
    first_default = len(positional) - len(arguments.defaults)
    defaults = dict(zip(positional[first_default:], arguments.defaults))
    defaults.update(
        {a.id: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None}
    )
    for name in positional + keyword_only:
        if name in bound:
            continue
        default = defaults.get(name)
        if default is None or not is_literal_node(default):
            return None
        bound[name] = default
    return bound
