"""Inline the local functions and partials a body only calls, at their calls.

``square = lambda v: v * w`` bound once and only called becomes, at ``square(a)``, the
expression ``a * w``; a ``def`` of several statements becomes its statements (variables
renamed apart, parameters assigned the arguments) before the calling statement; ``h =
partial(g, a)`` makes ``h(b)`` the call ``g(t, b)`` with ``a`` kept in ``t`` where ``h`` was
bound. Which functions qualify is :mod:`.local_functions`' job.
"""

from __future__ import annotations

import functools
from collections import Counter

import gast

from s2sgrad.compiler.node_kinds import kinds_of, of_kind
from s2sgrad.compiler.passes.local_functions import (
    RESULT,
    Signature,
    defined_function,
    free_names,
    local_functions,
    plain_calls,
)
from s2sgrad.compiler.passes.lowered_order import first_reordered_call, may_have_effects
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import (
    assign,
    call,
    clone,
    clone_rewriting,
    load,
    names_read,
    names_written,
    nested_statements,
    walk,
)

__all__ = ["inline_local_functions", "inline_local_partials"]


def inline_local_functions(
    node: gast.FunctionDef,
    names: NameGenerator,
    nodes: list[gast.AST] | None = None,
    resolve=None,
) -> bool:
    """``square = lambda v: v * w`` (or a nested ``def``), bound once and only ever called
    plainly, is inlined at its calls: ``square(a)`` becomes ``a * w``, and a ``def`` of
    several statements becomes its statements (its variables renamed, each ``return`` an
    assignment of the call's value) before the statement that calls it. Python reads ``w``
    when the call runs, and so does the inlined code; the values it captures are then
    differentiated like any other. A function called by another local function is inlined
    into it first, when it reads none of that function's own variables. A function of
    several statements, whose statements run before the calling one, is not inlined where
    the calling statement runs something first that may draw or change state (or the
    function may): ``resolve`` tells which calls may (``lowered_order``). Returns whether
    any function was inlined. ``nodes``: ``walk(node)``, when the caller has it.

    Example::

        inline_local_functions(node, names)  # square(a) -> a * w
    """
    found = walk(node) if nodes is None else nodes
    if gast.Lambda not in kinds_of(found) and all(
        n is node for n in of_kind(found, gast.FunctionDef)
    ):  # no lambda, and no def but the function's own
        return False
    # a def's own local functions first (innermost first): inlined there, the def may
    # then be inlined here
    inner = any(
        [inline_local_functions(d, names, None, resolve) for d in _nested_definitions(node)]
    )
    _forward_aliases(node)
    done: set[int] = set()
    while _inline_one_function(node, names, done, resolve):
        pass
    return bool(done) or inner


def _nested_definitions(node: gast.FunctionDef) -> list[gast.FunctionDef]:
    """The defs in ``node``'s body (not in theirs) that define functions of their own."""
    defined = [s for s in nested_statements(node.body) if isinstance(s, gast.FunctionDef)]
    return [
        d
        for d in defined
        if any(isinstance(n, (gast.FunctionDef, gast.Lambda)) for s in d.body for n in walk(s))
    ]


def _forward_aliases(node: gast.FunctionDef) -> None:
    """``net = t1`` (as desugaring writes ``net, loss = lambda x: ..., other``), of a local
    function bound once, both in the function's own block: later reads of ``net`` read
    ``t1``, so the function's only uses are calls."""
    statements = list(nested_statements(node.body))
    bindings = Counter(n for s in statements for n in names_written(s))
    functions = {name for s in node.body if (name := defined_function(s)) is not None}
    forwarded = set()
    for index, statement in enumerate(node.body):
        if not (
            isinstance(statement, gast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], gast.Name)
            and isinstance(statement.value, gast.Name)
            and statement.value.id in functions
            and bindings[statement.value.id] == 1
            and bindings[statement.targets[0].id] == 1
        ):
            continue
        alias, original = statement.targets[0].id, statement.value.id
        earlier = node.body[:index]
        if any(type(n) is gast.Name and n.id == alias for s in earlier for n in walk(s)):
            continue  # read before it is bound
        reads = [
            n
            for later in node.body[index + 1 :]
            for n in walk(later)
            if type(n) is gast.Name and n.id == alias
        ]
        if any(type(n.ctx) is not gast.Load for n in reads):
            continue  # a nested function's own variable of that name
        for n in reads:
            n.id = original
        forwarded.add(id(statement))
    node.body = [s for s in node.body if id(s) not in forwarded] or [gast.Pass()]


def _inline_one_function(node: gast.FunctionDef, names: NameGenerator, done: set, resolve) -> bool:
    """Inline the first local function not yet inlined whose uses are all plain calls."""
    statements = list(nested_statements(node.body))
    for name, binding, signature, body in local_functions(statements):
        if id(binding) in done:
            continue
        if isinstance(body, list):
            free = free_names(body, signature.all)
        else:
            free = names_read(body) - set(signature.all)
        calls = plain_calls(statements, name, signature, free | {name})
        every = [n for n in walk(node) if type(n) is gast.Name and n.id == name]
        if calls is None or len(calls) != sum(type(n.ctx) is gast.Load for n in every):
            continue  # used some other way somewhere (an except clause, a with header ...)
        if isinstance(body, list):  # its statements would run before the calling one
            effects = any(_effects_of_call(body, signature, c, resolve) for _, c in calls)

            def own(call: gast.Call, name=name, effects=effects) -> bool:  # as plain as it
                return not effects and type(call.func) is gast.Name and call.func.id == name

            if any(first_reordered_call(s, c, resolve, effects, own) for s, c in calls):
                done.add(id(binding))  # left a def: refused if it computes derivatives
                continue
        kept = signature.keep_defaults(names, binding)
        replacements = _Replacements()
        for statement, call_node in calls:
            if isinstance(body, list):
                prefix, result = _inlined_statements(body, signature, call_node, names, statement)
                inlined = load(result)
            else:
                prefix, inlined = _inlined_expression(body, signature, call_node, names, statement)
            replacements.put_before(statement, prefix)
            replacements.replace(call_node, inlined)
        done.add(id(binding))
        node.body = _replace_inlined(node.body, binding, replacements, kept)
        return True
    return False


def inline_local_partials(node: gast.FunctionDef, names: NameGenerator, resolve) -> bool:
    """``h = partial(g, a)``, bound once and only ever called plainly: ``a`` is kept in a
    temporary where ``h`` is bound (partial reads it then), and ``h(b)`` becomes
    ``g(temporary, b)``, a call the transformer follows. Returns whether any was.

    Example::

        inline_local_partials(node, names, parsed.resolve)  # h(b) -> g(bound, b)
    """
    statements = list(nested_statements(node.body))
    candidates = [
        s
        for s in statements
        if type(s) is gast.Assign
        and type(s.value) is gast.Call
        and resolve(s.value.func) is functools.partial
    ]
    if not candidates:
        return False
    bindings = Counter(n for s in statements for n in names_written(s))
    changed = False
    for binding in candidates:
        if not (
            isinstance(binding, gast.Assign)
            and len(binding.targets) == 1
            and isinstance(binding.targets[0], gast.Name)
            and bindings[binding.targets[0].id] == 1
            and isinstance(binding.value, gast.Call)
            and resolve(binding.value.func) is functools.partial
            and binding.value.args
            and isinstance(binding.value.args[0], (gast.Name, gast.Attribute))
            and not any(isinstance(a, gast.Starred) for a in binding.value.args)
            and all(k.arg is not None for k in binding.value.keywords)
        ):
            continue
        name = binding.targets[0].id
        calls = plain_calls(statements, name, None)
        every = [n for n in walk(node) if type(n) is gast.Name and n.id == name]
        if calls is None or len(calls) != sum(type(n.ctx) is gast.Load for n in every):
            continue
        function, *fixed = binding.value.args
        kept = []
        for value in [*fixed, *(k.value for k in binding.value.keywords)]:
            temporary = names.fresh("bound")
            kept.append(assign(temporary, value, like=binding))
        held = [load(k.targets[0].id) for k in kept]
        keywords = {k.arg: h for k, h in zip(binding.value.keywords, held[len(fixed) :])}
        replacements = _Replacements()
        for _, call_node in calls:
            arguments = [clone(h) for h in held[: len(fixed)]] + list(call_node.args)
            inlined = call(clone(function), arguments, {k: clone(v) for k, v in keywords.items()})
            replacements.replace(call_node, inlined)
        node.body = _replace_inlined(node.body, binding, replacements, kept)
        changed = True
    return changed


def _inlined_expression(body, signature, call_node, names, statement):
    """The returned expression of a one-line function, with the call's arguments in it
    (those ``*a`` takes as the tuple ``(x, y)``, whose ``a[0]`` and ``*a`` are read)."""
    prefix = []
    renames = {}
    for parameter, argument in _bound_arguments(signature, call_node):
        if parameter == signature.star:  # *a: its entries one by one
            elements = []
            for element in argument.elts:
                if not isinstance(element, (gast.Name, gast.Constant)):
                    temporary = names.fresh("arg")
                    prefix.append(assign(temporary, element, like=statement))
                    element = load(temporary)
                elements.append(element)
            renames[parameter] = gast.Tuple(elts=elements, ctx=gast.Load())
            continue
        if not isinstance(argument, (gast.Name, gast.Constant)):
            temporary = names.fresh(parameter)
            prefix.append(assign(temporary, argument, like=statement))
            argument = load(temporary)
        renames[parameter] = argument
    return prefix, _read_tuples(_substituted(clone(body), renames))


def _effects_of_call(body, signature: Signature, call_node: gast.Call, resolve) -> bool:
    """Whether ``body`` run for ``call_node`` may draw or change state (``lowered_order``):
    a parameter it calls (and never binds) counts as the function the call gives it."""
    written = set().union(*(names_written(s) for s in body))
    given = {p: a for p, a in _bound_arguments(signature, call_node) if p not in written}
    copies = [clone(statement) for statement in body]
    for node in (n for copy in copies for n in walk(copy)):
        if type(node) is gast.Call and type(node.func) is gast.Name and node.func.id in given:
            node.func = clone(given[node.func.id])
    return may_have_effects(copies, resolve)


def _bound_arguments(signature: Signature, call_node: gast.Call):
    """``(parameter, argument)`` pairs in the order Python evaluates the arguments
    (positional ones, then keywords), ``*a`` bound to the tuple of the rest, and then the
    defaults of the parameters the call does not give."""
    named = signature.named
    pairs = list(zip(named, call_node.args))
    if signature.star is not None:
        rest = gast.Tuple(elts=list(call_node.args[len(named) :]), ctx=gast.Load())
        pairs.append((signature.star, rest))
    pairs += [(k.arg, k.value) for k in call_node.keywords]
    given = {parameter for parameter, _ in pairs}
    pairs += [(p, clone(v)) for p, v in signature.defaults.items() if p not in given]
    return pairs


def _read_tuples(node: gast.expr) -> gast.expr:
    """``(x, y)[0]`` as ``x``, and ``f(*(x, y))`` as ``f(x, y)``."""

    def simplify(current):
        if (
            type(current) is gast.Subscript
            and type(current.value) is gast.Tuple
            and type(current.slice) is gast.Constant
            and type(current.slice.value) is int
            and -len(current.value.elts) <= current.slice.value < len(current.value.elts)
            and _only_atoms_dropped(current.value.elts, current.slice.value)
        ):
            return current.value.elts[current.slice.value]
        if type(current) is gast.Call:
            arguments = []
            for argument in current.args:
                if type(argument) is gast.Starred and type(argument.value) is gast.Tuple:
                    arguments.extend(argument.value.elts)
                else:
                    arguments.append(argument)
            current.args = arguments
        return current

    return clone_rewriting(node, simplify, kinds=(gast.Subscript, gast.Call))


def _only_atoms_dropped(elements: list, index: int) -> bool:
    """Whether ``(a, b)[index]`` may be read as the one element: no element is starred
    (which moves the others), and those dropped are names or literals (a call there,
    ``(np.copyto(t, v), t)[1]``, must still run)."""
    kept = elements[index]
    return all(
        type(e) is not gast.Starred and (e is kept or type(e) in (gast.Name, gast.Constant))
        for e in elements
    )


def _inlined_statements(body, signature, call_node, names, statement):
    """A copy of a function's body (its returns already assignments of ``RESULT``) with
    every variable renamed apart, after its parameters bound to the call's arguments."""
    local = sorted(set(signature.all) | set().union(*(names_written(s) for s in body)))
    renames = {name: names.fresh(name.strip("_") or "v") for name in local}
    copied = [clone(s) for s in body]
    for current in walk(gast.Module(body=copied, type_ignores=[])):
        if type(current) is gast.Name and current.id in renames:
            current.id = renames[current.id]
    prefix = [
        assign(renames[parameter], argument, like=statement)
        for parameter, argument in _bound_arguments(signature, call_node)
    ]
    return prefix + copied, renames[RESULT]


def _substituted(body: gast.expr, renames: dict) -> gast.expr:
    if type(body) is gast.Name and body.id in renames:
        return clone(renames[body.id])
    for node in walk(body):
        for field, value in gast.iter_fields(node):
            if type(value) is gast.Name and value.id in renames:
                setattr(node, field, clone(renames[value.id]))
            elif isinstance(value, list):
                value[:] = [
                    clone(renames[v.id]) if type(v) is gast.Name and v.id in renames else v
                    for v in value
                ]
    return body


class _Replacements:
    """What one round of inlining changes, handed from where the calls are found to where
    they are replaced: the statements a calling statement needs before it, and the
    expression each inlined call becomes."""

    def __init__(self) -> None:
        self.before: dict[int, tuple[gast.stmt, list[gast.stmt]]] = {}
        self.values: dict[int, tuple[gast.Call, gast.expr]] = {}

    def put_before(self, statement: gast.stmt, prefix: list[gast.stmt]) -> None:
        self.before.setdefault(id(statement), (statement, []))[1].extend(prefix)

    def replace(self, call_node: gast.Call, value: gast.expr) -> None:
        self.values[id(call_node)] = (call_node, value)

    def take_before(self, statement: gast.stmt) -> list[gast.stmt]:
        held, prefix = self.before.pop(id(statement), (statement, []))
        return prefix if held is statement else []

    def value_of(self, node: gast.Call) -> gast.expr:
        held, value = self.values.get(id(node), (node, node))
        return value if held is node else node


class _Inliner(gast.NodeTransformer):
    def __init__(self, replacements: _Replacements):
        self.replacements = replacements

    def visit_Call(self, node):
        self.generic_visit(node)
        return self.replacements.value_of(node)


def _replace_inlined(
    block: list[gast.stmt], binding: gast.stmt, replacements: _Replacements, instead=()
) -> list[gast.stmt]:
    """``block`` with the binding replaced by ``instead``, and the inlined calls in place
    (their arguments first)."""
    result = []
    inliner = _Inliner(replacements)
    for statement in block:
        if statement is binding:
            result.extend(instead)
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list):  # a nested def's too: another may be inlined there
                setattr(statement, name, _replace_inlined(inner, binding, replacements, instead))
        result.extend(inliner.visit(s) for s in replacements.take_before(statement))
        result.append(inliner.visit(statement))
    return result
