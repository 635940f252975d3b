"""Give every ``for`` loop one shape: ``for i in range(...)`` with explicit element reads.

``for row in X`` becomes ``for i in range(len(X)): row = X[i]``; ``enumerate``, ``zip``
and ``reversed`` become index arithmetic the same way. The reverse sweep can then run any
loop backwards by running its ``range`` backwards, storing nothing per iteration for the
loop variable. Comprehensions that build lists become loops that append.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import itertools
from collections import Counter
from dataclasses import dataclass

import gast

from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import (
    SCOPES,
    assign,
    attribute,
    call,
    clone,
    clone_rewriting,
    constant,
    load,
    located,
    names_modified,
    names_read,
    names_written,
    nested_statements,
    store,
    walk,
)

__all__ = ["normalise_loops"]


def normalise_loops(node: gast.FunctionDef, names: NameGenerator, resolve) -> dict[str, str]:
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
    """
    _inline_local_functions(node, names)
    _inline_local_partials(node, names, resolve)
    uses = Counter(n.id for n in walk(node) if type(n) is gast.Name)
    loops = _Loops(names, resolve, uses)
    loops.local_functions = {  # what each local function reads when it is called
        n.name if type(n) is gast.FunctionDef else n.targets[0].id: names_read(n)
        for n in walk(node)
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
    if _inline_local_functions(node, names):  # map(f, xs) is now a loop calling f plainly
        node.body = loops.block(node.body)  # the loops the inlined statements hold
    return {name: helper for helper, name in loops.helpers.items()}


def _inline_local_functions(node: gast.FunctionDef, names: NameGenerator) -> bool:
    """``square = lambda v: v * w`` (or a nested ``def``), bound once and only ever called
    plainly, is inlined at its calls: ``square(a)`` becomes ``a * w``, and a ``def`` of
    several statements becomes its statements (its variables renamed, each ``return`` an
    assignment of the call's value) before the statement that calls it. Python reads ``w``
    when the call runs, and so does the inlined code; the values it captures are then
    differentiated like any other. A function called by another local function is inlined
    into it first, when it reads none of that function's own variables. Returns whether
    any function was inlined.
    """
    if not any(type(n) in (gast.Lambda, gast.FunctionDef) and n is not node for n in walk(node)):
        return False
    _forward_aliases(node)
    done: set[int] = set()
    while _inline_one_function(node, names, done):
        pass
    return bool(done)


def _forward_aliases(node: gast.FunctionDef) -> None:
    """``net = t1`` (as desugaring writes ``net, loss = lambda x: ..., other``), of a local
    function bound once, both in the function's own block: later reads of ``net`` read
    ``t1``, so the function's only uses are calls."""
    statements = list(nested_statements(node.body))
    bindings = Counter(n for s in statements for n in names_written(s))
    functions = {
        s.name if isinstance(s, gast.FunctionDef) else s.targets[0].id
        for s in node.body
        if isinstance(s, gast.FunctionDef)
        or (
            isinstance(s, gast.Assign)
            and isinstance(s.value, gast.Lambda)
            and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name)
        )
    }
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
        node.body = node.body[:index] + [gast.Pass()] + node.body[index + 1 :]


def _inline_one_function(node: gast.FunctionDef, names: NameGenerator, done: set) -> bool:
    """Inline the first local function not yet inlined whose uses are all plain calls."""
    statements = list(nested_statements(node.body))
    for name, binding, signature, body in _local_functions(statements):
        if id(binding) in done:
            continue
        if isinstance(body, list):
            free = _free_names(body, signature.all)
        else:
            free = names_read(body) - set(signature.all)
        calls = _plain_calls(statements, name, signature, free | {name})
        every = [n for n in walk(node) if type(n) is gast.Name and n.id == name]
        if calls is None or len(calls) != sum(type(n.ctx) is gast.Load for n in every):
            continue  # used some other way somewhere (an except clause, a with header ...)
        kept = signature.keep_defaults(names, binding)
        for statement, call_node in calls:
            if isinstance(body, list):
                prefix, result = _inlined_statements(body, signature, call_node, names, statement)
                inlined = load(result)
            else:
                prefix, inlined = _inlined_expression(body, signature, call_node, names, statement)
            statement.s2s_before = [*getattr(statement, "s2s_before", []), *prefix]
            call_node.s2s_inlined = inlined
        done.add(id(binding))
        node.body = _replace_inlined(node.body, binding, kept)
        return True
    return False


@dataclass
class _Signature:
    """A local function's parameters: the named ones, ``*star``, and the defaults."""

    named: list[str]
    star: str | None = None
    defaults: dict[str, gast.expr] = dataclasses.field(default_factory=dict)

    @property
    def all(self) -> list[str]:
        return self.named + ([self.star] if self.star else [])

    def keep_defaults(self, names: NameGenerator, binding: gast.stmt) -> list[gast.stmt]:
        """Python computes defaults where the function is made: what is not a literal is
        kept in a variable there (the statements, to put in the function's place)."""
        kept = []
        for parameter, value in list(self.defaults.items()):
            if not isinstance(value, gast.Constant):
                temporary = names.fresh(f"{parameter}_default")
                kept.append(assign(temporary, value, like=binding))
                self.defaults[parameter] = load(temporary)
        return kept


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


def _bound_arguments(signature: _Signature, call_node: gast.Call):
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


def _inlined_statements(body, signature, call_node, names, statement):
    """A copy of a function's body (its returns already assignments of ``_RESULT``) with
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
    return prefix + copied, renames[_RESULT]


_RESULT = "__result__"  # the variable a function's returns assign, before renaming


def _free_names(body: list[gast.stmt], parameters) -> set[str]:
    local = set(parameters).union(*(names_written(s) for s in body))
    return set().union(*(names_read(s) for s in body)) - local


def _single_exit(body: list[gast.stmt]) -> list[gast.stmt] | None:
    """``body`` with each ``return v`` made ``__result__ = v`` and what follows it moved
    into the other arm of the ``if`` it is in; None when a ``return`` sits in a loop,
    ``with`` or ``try``, or in an ``if`` arm that does not always return."""
    converted = _exits(body)
    if converted is None:
        return None
    statements, returns = converted
    if not returns:
        statements.append(assign(_RESULT, constant(None), like=body[-1] if body else None))
    return statements


def _exits(body: list[gast.stmt]) -> tuple[list[gast.stmt], bool] | None:
    result: list[gast.stmt] = []
    for index, statement in enumerate(body):
        if isinstance(statement, gast.Return):
            value = statement.value if statement.value is not None else constant(None)
            result.append(assign(_RESULT, value, like=statement))
            return result, True
        if not any(isinstance(n, gast.Return) for n in walk(statement)):
            result.append(statement)
            continue
        if not isinstance(statement, gast.If):
            return None
        arms = _exits(statement.body), _exits(statement.orelse)
        if arms[0] is None or arms[1] is None:
            return None
        (then, then_returns), (orelse, orelse_returns) = arms
        rest = body[index + 1 :]
        if not (then_returns or orelse_returns):
            return None  # a return nested deeper, in an arm that may fall through
        if not (then_returns and orelse_returns):
            after = _exits(rest)
            if after is None or not after[1]:
                if after is None:
                    return None
                after = (after[0] + [assign(_RESULT, constant(None), like=statement)], True)
            if then_returns:
                orelse = orelse + after[0]
            else:
                then = then + after[0]
        statement.body, statement.orelse = then or [gast.Pass()], orelse
        result.append(statement)
        return result, True
    return result, False


def _inline_local_partials(node: gast.FunctionDef, names: NameGenerator, resolve) -> None:
    """``h = partial(g, a)``, bound once and only ever called plainly: ``a`` is kept in a
    temporary where ``h`` is bound (partial reads it then), and ``h(b)`` becomes
    ``g(temporary, b)``, a call the transformer follows."""
    statements = list(nested_statements(node.body))
    candidates = [
        s
        for s in statements
        if type(s) is gast.Assign
        and type(s.value) is gast.Call
        and resolve(s.value.func) is functools.partial
    ]
    if not candidates:
        return
    bindings = Counter(n for s in statements for n in names_written(s))
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
        calls = _plain_calls(statements, name, None)
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
        for _, call_node in calls:
            arguments = [clone(h) for h in held[: len(fixed)]] + list(call_node.args)
            inlined = call(clone(function), arguments, {k: clone(v) for k, v in keywords.items()})
            call_node.s2s_inlined = inlined
        node.body = _replace_inlined(node.body, binding, kept)


def _local_functions(statements):
    """``(name, binding statement, signature, body)`` of each function the body defines
    once, as a lambda or a ``def``: ``body`` is the returned expression of a lambda or of a
    ``def`` whose body is one ``return``, else the ``def``'s statements with one exit."""
    bindings = Counter(n for s in statements for n in names_written(s))
    for statement in statements:
        if isinstance(statement, gast.Assign) and isinstance(statement.value, gast.Lambda):
            target = statement.targets[0]
            if len(statement.targets) != 1 or not isinstance(target, gast.Name):
                continue
            name, arguments, body = target.id, statement.value.args, statement.value.body
        elif isinstance(statement, gast.FunctionDef) and not statement.decorator_list:
            only = statement.body[0] if len(statement.body) == 1 else None
            if isinstance(only, gast.Return) and only.value is not None:
                name, arguments, body = statement.name, statement.args, only.value
            else:
                name, arguments, body = statement.name, statement.args, _body_to_inline(statement)
                if body is None:
                    continue
        else:
            continue
        plain = not (arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs)
        if isinstance(body, list):
            nested = False  # checked by _body_to_inline
            recursive = any(type(n) is gast.Name and n.id == name for s in body for n in walk(s))
        else:
            inner = (*_COMPREHENSIONS, gast.Lambda, gast.NamedExpr)
            nested = any(type(n) in inner for n in walk(body))
            recursive = any(type(n) is gast.Name and n.id == name for n in walk(body))
        if plain and not nested and not recursive and bindings[name] == 1:
            named = [a.id for a in arguments.args]
            star = arguments.vararg.id if arguments.vararg is not None else None
            defaults = dict(zip(named[len(named) - len(arguments.defaults) :], arguments.defaults))
            yield name, statement, _Signature(named, star, defaults), body


# statements a nested def's body may hold to be inlined: what it defines or declares is not
# (a function of its own, a class, global or nonlocal names), nor what suspends it
_NOT_INLINED = (
    gast.FunctionDef,
    gast.AsyncFunctionDef,
    gast.ClassDef,
    gast.Lambda,
    gast.Global,
    gast.Nonlocal,
    gast.Yield,
    gast.YieldFrom,
    gast.Await,
    gast.NamedExpr,
    gast.Try,
    gast.With,
    gast.Match,
)


def _body_to_inline(definition: gast.FunctionDef) -> list[gast.stmt] | None:
    """A nested def's statements with one exit (see ``_single_exit``), or None when they
    hold something that is not inlined, or a comprehension whose variable the body also
    reads outside it (renaming the body's variables apart would rename both)."""
    body = [clone(s) for s in definition.body]
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant):
        body = body[1:]  # the docstring
    if not body:
        return None
    nodes = [n for s in body for n in walk(s)]
    if any(isinstance(n, _NOT_INLINED) for n in nodes):
        return None
    inside = set()
    for n in nodes:
        if type(n) in _COMPREHENSIONS:
            for generator in n.generators:
                inside |= {t.id for t in walk(generator.target) if type(t) is gast.Name}
    bare = [_without_comprehensions(s) for s in body]
    written = set().union(*(names_written(s) for s in bare))
    used = {n.id for s in bare for n in walk(s) if type(n) is gast.Name}
    if (inside - written) & used:
        return None
    return _single_exit(body)


def _without_comprehensions(statement: gast.stmt) -> gast.stmt:
    def drop(node):
        return constant(None) if type(node) in _COMPREHENSIONS else node

    return clone_rewriting(statement, drop, kinds=_COMPREHENSIONS)


def _plain_calls(statements, name: str, signature, free: set[str] = frozenset()):
    """The ``name(...)`` calls, with their statements, when every use of ``name`` is such a
    call (that fills the parameters of ``signature`` by position or keyword; any number of
    positional arguments when None) in a plain statement, outside any lambda,
    comprehension or short-circuit operator; else None.

    Calls inside another nested ``def`` count when it binds none of the ``free`` names
    (those the called function reads from the enclosing function, and its own name)."""
    found = _calls_and_uses(statements, name, signature, free)
    if found is None:
        return None
    calls, uses = found
    return calls if calls and len(calls) == uses else None


def _fills(signature: _Signature | None, node: gast.Call) -> bool:
    """Whether the call gives each parameter one value (or leaves it its default),
    without ``*`` or ``**``."""
    if any(isinstance(a, gast.Starred) for a in node.args):
        return False
    if signature is None:
        return not node.keywords
    named = signature.named
    if len(node.args) > len(named) and signature.star is None:
        return False
    keys = [k.arg for k in node.keywords]
    filled = named[: len(node.args)]
    if None in keys or len(set(keys)) != len(keys) or set(keys) & set(filled):
        return False
    given = set(filled) | set(keys)
    return set(keys) <= set(named) and set(named) - given <= set(signature.defaults)


def _calls_and_uses(statements, name: str, signature, free: set[str]):
    calls = []
    uses = 0
    for statement in statements:
        if isinstance(statement, gast.FunctionDef):
            if not any(type(n) is gast.Name and n.id == name for n in walk(statement)):
                continue
            arguments = statement.args
            own = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
            bound = {p.id for p in own} | {
                a.id for a in (arguments.vararg, arguments.kwarg) if a is not None
            }
            bound |= set().union(*(names_written(s) for s in statement.body))
            if statement.decorator_list or not free or bound & free:
                return None  # read inside a nested function that could see another value
            if any(type(n) is gast.Name and n.id == name for n in walk(arguments)):
                return None  # in a default
            body = list(nested_statements(statement.body))
            inner = _calls_and_uses(body, name, signature, free)
            if inner is None:
                return None
            calls += inner[0]
            uses += inner[1]
            continue
        own = statement
        if isinstance(statement, (gast.For, gast.While, gast.If, gast.With, gast.Try)):
            own = [getattr(statement, f, None) for f in ("iter", "test", "target")]
            own = gast.Tuple(elts=[o for o in own if isinstance(o, gast.AST)], ctx=gast.Load())
        nodes = walk(own)
        read = [n for n in nodes if type(n) is gast.Name and n.id == name]
        read = [n for n in read if type(n.ctx) is gast.Load]
        uses += len(read)
        if not isinstance(statement, (gast.Assign, gast.Expr, gast.Return)):
            if read:
                return None
            continue
        guarded = {
            id(inner)
            for n in nodes
            if type(n) in (*_COMPREHENSIONS, gast.Lambda, gast.IfExp, gast.BoolOp)
            for inner in walk(n)
        }
        for n in _in_evaluation_order(own):
            if (
                type(n) is gast.Call
                and type(n.func) is gast.Name
                and n.func.id == name
                and id(n) not in guarded
                and _fills(signature, n)
            ):
                calls.append((statement, n))
    return calls, uses


def _in_evaluation_order(node: gast.AST) -> list[gast.AST]:
    """The nodes below ``node`` with each one after its children, left to right (so the
    calls in a call's arguments come before it)."""
    found = []
    for child in gast.iter_child_nodes(node):
        if not isinstance(child, SCOPES):
            found.extend(_in_evaluation_order(child))
    found.append(node)
    return found


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


class _Inliner(gast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        return getattr(node, "s2s_inlined", node)


def _replace_inlined(block: list[gast.stmt], binding: gast.stmt, instead=()) -> list[gast.stmt]:
    """``block`` with the binding replaced by ``instead``, and the inlined calls in place
    (their arguments first)."""
    result = []
    for statement in block:
        if statement is binding:
            result.extend(instead)
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):  # a nested def's too: another may be inlined there
                setattr(statement, field, _replace_inlined(inner, binding, instead))
        result.extend(_Inliner().visit(s) for s in getattr(statement, "s2s_before", []))
        statement.s2s_before = []
        result.append(_Inliner().visit(statement))
    return result


class _Loops:
    def __init__(self, names: NameGenerator, resolve, uses: Counter):
        self.names = names
        self.resolve = resolve
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

    def lowers(self, node: gast.AST) -> bool:
        """Whether ``node`` is rewritten by :class:`_Comprehensions`."""
        if type(node) in _COMPREHENSIONS:
            return True
        if type(node) is not gast.Call:
            return False
        func = node.func  # names first: resolving every call would cost the first call
        if type(func) is gast.Name:
            return func.id == "map" and self.builtin_call(node, "map")
        return type(func) is gast.Call and self.is_partial(func)

    def block(self, statements: list[gast.stmt]) -> list[gast.stmt]:
        result: list[gast.stmt] = []
        for statement in statements:
            prefix: list[gast.stmt] = []
            if any(self.lowers(n) for n in walk(statement)):
                _Comprehensions(self, prefix, statement).visit(statement)
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

    def builtin_call(self, node: gast.expr, name: str) -> bool:
        return (
            isinstance(node, gast.Call)
            and isinstance(node.func, gast.Name)
            and node.func.id == name
            and self.is_builtin(name)
            and not node.keywords
        )

    def for_loop(self, loop: gast.For) -> list[gast.stmt]:
        loop.body = self.block(loop.body)
        loop.orelse = self.block(loop.orelse)
        iterator = loop.iter
        loop.s2s_range = False  # set once the loop runs over a plain range
        if self.builtin_call(iterator, "range") and isinstance(loop.target, gast.Name):
            loop.s2s_range = True
            return [loop]
        prefix: list[gast.stmt] = []
        iterator = loop.iter = self.listed(iterator, loop)
        if self.builtin_call(iterator, "zip") or self.builtin_call(iterator, "enumerate"):
            iterator.args = [self.listed(a, loop) for a in iterator.args]
            if any(self.is_iterator(a) for a in iterator.args):
                return [loop]  # zip(xs, count()): no len to loop by
        if self.is_iterator(iterator):
            return [loop]
        reads: list[tuple[gast.expr, gast.expr]] = []  # (target, sequence) pairs
        index_target: gast.expr | None = None
        backwards = False
        flipped: set[int] = set()  # zip arguments given as reversed(sequence)
        if _dict_view(iterator) is not None:
            return self.dict_loop(loop, *_dict_view(iterator))
        if self.builtin_call(iterator, "reversed") and len(iterator.args) == 1:
            backwards = True
            iterator = iterator.args[0]
        if self.builtin_call(iterator, "enumerate") and len(iterator.args) == 1:
            inner = iterator.args[0]
            if self.builtin_call(inner, "reversed") and len(inner.args) == 1 and not backwards:
                backwards = True  # enumerate(reversed(x)): counts up, runs over x downwards
                iterator = gast.Call(func=iterator.func, args=inner.args, keywords=[])
            if not (
                isinstance(loop.target, gast.Tuple)
                and len(loop.target.elts) == 2
                and _indexable(iterator.args[0])
            ):
                return [loop]
            index_target, element = loop.target.elts
            sequences = [self.items(iterator.args[0], prefix, loop)]
            targets = [element]
        elif self.builtin_call(iterator, "zip") and iterator.args:
            if not (
                isinstance(loop.target, gast.Tuple) and len(loop.target.elts) == len(iterator.args)
            ):
                return [loop]
            arguments = list(iterator.args)
            for position, argument in enumerate(arguments):
                if self.builtin_call(argument, "reversed") and len(argument.args) == 1:
                    arguments[position] = argument.args[0]
                    flipped.add(position)
            if not all(map(_indexable, arguments)):
                return [loop]
            sequences = [self.items(a, prefix, loop) for a in arguments]
            targets = list(loop.target.elts)
        elif self.builtin_call(iterator, "range"):
            return [loop]
        elif not _indexable(iterator):
            return [loop]  # e.g. a generator: only the tape can follow it
        else:
            sequences = [self.items(iterator, prefix, loop)]
            targets = [loop.target]
        length: gast.expr = call(load("len"), [load(sequences[0].id)])
        if len(sequences) > 1:
            length = call(load("min"), [call(load("len"), [load(s.id)]) for s in sequences])
        index = (
            index_target.id
            if isinstance(index_target, gast.Name) and not backwards
            else self.names.fresh("i")
        )
        for position, (target, sequence) in enumerate(zip(targets, sequences)):
            where: gast.expr = load(index)
            if position in flipped:  # reversed(s)[i] is s[len(s) - 1 - i]
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
            position: gast.expr = load(index)
            if backwards:  # enumerate(reversed(x)) counts up while the index counts down
                position = gast.BinOp(
                    left=gast.BinOp(left=clone(length), op=gast.Sub(), right=constant(1)),
                    op=gast.Sub(),
                    right=load(index),
                )
            header.insert(0, assign(clone(index_target), position, like=loop))
        loop.target = store(index)
        loop.iter = call(load("range"), bounds)
        loop.s2s_range = True
        loop.body = header + loop.body
        return [*prefix, loop]

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
        loop.s2s_range = True
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


def _indexable(node: gast.expr) -> bool:
    """Whether the loop runs over something with ``len`` and indexing (not a generator)."""
    if isinstance(
        node, (gast.Name, gast.Attribute, gast.Subscript, gast.List, gast.Tuple, gast.BinOp)
    ):
        return True
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name):
        return node.func.id in ("list", "tuple", "sorted")
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


_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


class _Comprehensions(gast.NodeTransformer):
    """``[e for v in xs]`` (and generator arguments) → a list built by a loop beforehand."""

    def __init__(self, loops: _Loops, prefix: list[gast.stmt], statement: gast.stmt):
        self.loops = loops
        self.prefix = prefix
        self.statement = statement

    def visit_FunctionDef(self, node):
        return node

    def visit_Lambda(self, node):
        return node

    def visit_For(self, node):  # only the header: the body's statements are lowered in it
        lazy = any(
            type(n) is gast.GeneratorExp or self.loops.builtin_call(n, "map")
            for n in walk(node.iter)
        )
        if lazy and self.loops.sees_changes(node.iter, node):
            return node  # made as the loop runs, from what it changes: left for the tape
        node.iter = self.visit(node.iter)
        return node

    def visit_If(self, node):
        node.test = self.visit(node.test)
        return node

    def visit_While(self, node):  # its test runs again each time round: left as it is
        return node

    def visit_With(self, node):
        node.items = [self.visit(item) for item in node.items]
        return node

    def visit_Try(self, node):
        return node

    def visit_ListComp(self, node):
        return self.lower(node)

    def visit_GeneratorExp(self, node):
        return self.lower(node)

    def visit_Call(self, node):
        self.generic_visit(node)
        loops = self.loops
        if loops.is_partial(node.func):  # partial(g, a, k=v)(b) is g(a, b, k=v)
            inner = node.func
            node.func = inner.args[0]
            node.args = [*inner.args[1:], *node.args]
            node.keywords = [*inner.keywords, *node.keywords]
            return node
        if not loops.builtin_call(node, "map") or len(node.args) < 2:
            return node
        if any(isinstance(a, gast.Starred) for a in node.args):
            return node
        if isinstance(self.statement, gast.Assign) and self.statement.value is node:
            return node  # m = map(...): a lazy iterator kept for later, left as it is
        function, *sequences = node.args
        items = [loops.names.fresh("item") for _ in sequences]
        element = self.applied(function, [load(i) for i in items])
        if element is None:
            return node
        if len(sequences) == 1:
            target: gast.expr = store(items[0])
            source = sequences[0]
        else:
            target = gast.Tuple(elts=[store(i) for i in items], ctx=gast.Store())
            source = call(load("zip"), sequences)
        generator = gast.comprehension(target=target, iter=source, ifs=[], is_async=0)
        return self.lower(gast.ListComp(elt=element, generators=[generator]))

    def applied(self, function: gast.expr, items: list[gast.expr]) -> gast.expr | None:
        """``function(*items)`` as an expression the transformer can follow: a lambda's
        body with its parameters replaced, ``g(a, *items)`` for ``partial(g, a)``."""
        if isinstance(function, gast.Lambda):
            arguments = function.args
            parameters = arguments.posonlyargs + arguments.args
            plain = not (
                arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.defaults
            )
            nested = any(type(n) in (*_COMPREHENSIONS, gast.Lambda) for n in walk(function.body))
            if not plain or nested or len(parameters) != len(items):
                return None
            replacements = {p.id: item.id for p, item in zip(parameters, items)}
            body = clone(function.body)
            for name in walk(body):
                if type(name) is gast.Name and name.id in replacements:
                    name.id = replacements[name.id]
            return body
        if self.loops.is_partial(function):
            fixed = [self.once(a) for a in function.args[1:]]
            keywords = {k.arg: self.once(k.value) for k in function.keywords}
            return call(self.once(function.args[0]), [*fixed, *items], keywords)
        return call(self.once(function), items)

    def once(self, node: gast.expr) -> gast.expr:
        """``node`` evaluated once, before the loop: a name for anything but names,
        constants and attribute chains on names."""
        base = node
        while isinstance(base, gast.Attribute):
            base = base.value
        if isinstance(base, (gast.Name, gast.Constant)):
            return node
        name = self.loops.names.fresh("t")
        self.prefix.append(assign(name, node, like=self.statement))
        return load(name)

    def lower(self, node):
        if len(node.generators) != 1 or node.generators[0].is_async:
            return node
        generator = node.generators[0]
        generator.iter = self.visit(generator.iter)  # computed once, before the loop
        self.keep_variables_apart(node)
        result = self.loops.names.fresh("items")
        append = gast.Expr(value=call(attribute(load(result), "append"), [node.elt]))
        body: list[gast.stmt] = [located(append, self.statement)]
        for condition in reversed(generator.ifs):
            body = [located(gast.If(test=condition, body=body, orelse=[]), self.statement)]
        loop = gast.For(
            target=generator.target,
            iter=generator.iter,
            body=body,
            orelse=[],
            type_comment=None,
        )
        located(loop, self.statement)
        self.prefix.append(assign(result, gast.List(elts=[], ctx=gast.Load()), like=self.statement))
        self.prefix.extend(self.loops.for_loop(loop))
        return load(result)

    def keep_variables_apart(self, node) -> None:
        """Rename the comprehension's variables that the function also uses elsewhere: in
        Python they are the comprehension's own, and the loop it becomes must not change
        (or read) the function's variable of that name."""
        inside = Counter(n.id for n in walk(node) if type(n) is gast.Name)
        generator = node.generators[0]
        for variable in {n.id for n in walk(generator.target) if type(n) is gast.Name}:
            if self.loops.uses[variable] > inside[variable]:
                new = self.loops.names.claim(variable)
                for part in (generator.target, node.elt, *generator.ifs):
                    for name in walk(part):
                        if type(name) is gast.Name and name.id == variable:
                            name.id = new
