"""Inline the helpers whose results the transformer could not follow as calls.

Three kinds, all by copying the helper's body into the caller, its variables renamed apart:

- A helper that returns a function it makes (``def flat(p): return p.ravel(), (lambda v:
  v.reshape(p.shape))``), called at the top level of the differentiated function: the
  caller then defines that function itself, reading the helper's variables, and
  :mod:`.inline_locals` inlines it where it is called, like any nested ``def``.
- A generator function whose values are read whole (``for v in gen(x):``, a comprehension
  over it, ``sum(gen(x))``): its body runs before the statement, each ``yield e`` an
  ``items.append(e)``, and the statement reads the list. This is sound when nothing the
  generator reads changes while it is read, and it is read to its end: what is checked.
- A helper given a function the caller defines, a nested ``def`` or a lambda (``y =
  rk4(rhs, y, t, h)``, ``y = euler(lambda v: -k * v, y, h)``, at any depth of the caller's
  blocks): in the copy, the helper's calls of that parameter call the caller's function by
  its own name, which :mod:`.inline_locals` inlines in turn. A lambda written in the call
  is bound to a new name before the statement first.

A lambda called where it is made (``(lambda v: v * w)(x)``) is named first, so that it is
inlined like any other. What does not qualify is left as it is, for the checks that
refuse it.
"""

from __future__ import annotations

import inspect
import types

import gast

from s2sgrad.compiler.frontend import parse_function
from s2sgrad.compiler.node_kinds import of_kind
from s2sgrad.compiler.passes.local_functions import defined_function
from s2sgrad.compiler.passes.lowered_order import first_reordered_call, may_have_effects
from s2sgrad.compiler.passes.mutation import mutated_parameters
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import (
    COMPREHENSIONS,
    SCOPES,
    assign,
    attribute,
    call,
    clone,
    load,
    names_modified,
    names_read,
    names_read_in_all,
    names_written,
    names_written_in_all,
    parameter_names,
    replace_node,
    walk,
)

__all__ = ["inline_helper_bodies"]

_ROUNDS = 8  # helpers inlined into helpers inlined: a recursive generator stops here
_CONSUMERS = ("sum", "list", "tuple", "sorted", "min", "max")  # builtins that read all


def inline_helper_bodies(
    node: gast.FunctionDef, parsed, names: NameGenerator, nodes: list[gast.AST] | None = None
) -> set[str]:
    """Inline, in place, the calls of helpers returning functions and of generators that
    ``node`` reads whole; returns the names of the helpers inlined (the generated code
    depends on them). ``nodes``: ``walk(node)``, when the caller has it.

    Example::

        # v, unf = flat(x)   becomes
        # p = x; v, unf = p.ravel(), (lambda v: v.reshape(p.shape))
    """
    calls = list(of_kind(walk(node) if nodes is None else nodes, gast.Call))
    if not calls:  # a cheap look first: most functions call no helper and no lambda
        return set()
    if any(type(c.func) is gast.Lambda for c in calls):
        _name_called_lambdas(node.body, names)
    elif all(type(c.func) is not gast.Name for c in calls):
        return set()  # every call is of a method or attribute (np.sin): no helper's
    inliner = _Inliner(node, parsed, names)
    if not any(inliner.calls_plain_function(c) for c in calls):
        return inliner.inlined  # what could be inlined is found in no round either
    for _ in range(_ROUNDS):
        changed = inliner.closures(node.body)
        changed = inliner.generators(node.body) or changed
        changed = inliner.function_arguments(node.body) or changed
        if not changed:
            break
    return inliner.inlined


class _Inliner:
    def __init__(self, node: gast.FunctionDef, parsed, names: NameGenerator):
        self.parsed = parsed
        self.names = names
        self.local = names_written(node) | parameter_names(node)
        self.inlined: set[str] = set()
        # the caller's own functions: its nested defs and the names it binds to lambdas
        self.functions = {
            name
            for statement in node.body
            for n in _own_nodes(statement)
            if (name := defined_function(n)) is not None
        }

    def calls_plain_function(self, value: gast.Call) -> bool:
        """Whether ``value`` calls a Python function by a free name (what :meth:`helper`
        looks for, before its other questions)."""
        if type(value.func) is not gast.Name or value.func.id in self.local:
            return False
        return isinstance(self.parsed.resolve(value.func), types.FunctionType)

    def helper(self, value: gast.expr, generator: bool, makes_functions: bool = False):
        """The plain function ``value`` calls by a free name, when it is a generator
        function (``generator``) or not, with the source parsed; else None. With
        ``makes_functions``, only one whose code holds a function's (a ``def`` or lambda),
        a look before the source is parsed."""
        if not (isinstance(value, gast.Call) and isinstance(value.func, gast.Name)):
            return None
        if value.func.id in self.local:
            return None
        function = self.parsed.resolve(value.func)
        if not isinstance(function, types.FunctionType):
            return None
        if inspect.isgeneratorfunction(function) is not generator:
            return None
        if makes_functions and not any(
            isinstance(c, types.CodeType) for c in function.__code__.co_consts
        ):
            return None
        if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
            return None
        if getattr(function, "__wrapped__", None) is not None or mutated_parameters(function):
            return None
        try:
            return function, parse_function(function)
        except Exception:  # no source: the call is checked as it is
            return None

    # -- helpers that return functions --------------------------------------------------

    def closures(self, block: list[gast.stmt]) -> bool:
        """Inline each top-level ``target = helper(...)`` whose helper returns a function
        it makes (top-level only: run once, the names it binds are bound once)."""
        changed = False
        position = 0
        while position < len(block):
            statement = block[position]
            body = None
            if isinstance(statement, gast.Assign) and len(statement.targets) == 1:
                found = self.helper(statement.value, generator=False, makes_functions=True)
                if found is not None:
                    body = self.closure_body(statement, found[1])
            if body is None:
                position += 1
                continue
            block[position : position + 1] = body
            changed = True
            position += len(body)
        return changed

    def closure_body(self, statement: gast.Assign, callee) -> list | None:
        body = _without_docstring(callee.node.body)
        if not body or not isinstance(body[-1], gast.Return) or body[-1].value is None:
            return None
        if any(isinstance(n, gast.Return) for s in body[:-1] for n in _own_nodes(s)):
            return None
        if not _makes_function(body, body[-1].value):
            return None
        copied = self.copy(statement, statement.value, callee, body)
        if copied is None:
            return None
        *statements, last = copied
        statements.append(assign(statement.targets[0], last.value, like=statement))
        return _located(statements, statement)

    # -- generators read whole ------------------------------------------------------------

    def generators(self, block: list[gast.stmt]) -> bool:
        """Materialise the generators the statements of ``block`` (and of its inner
        blocks) read whole."""

        def prefix(statement: gast.stmt) -> tuple[list, None]:
            made = (self.materialised(statement, site) for site in _read_whole(statement))
            return [s for statements in made if statements is not None for s in statements], None

        return _rewrite_blocks(block, prefix)

    def materialised(self, statement: gast.stmt, site) -> list | None:
        """The statements computing the list of what the generator call ``site`` (a
        ``(holder, field, index)`` place) yields, the call replaced by the list's name."""
        holder, field, index = site
        value = getattr(holder, field) if index is None else getattr(holder, field)[index]
        found = self.helper(value, generator=True)
        if found is None:
            return None
        callee = found[1]
        reads = names_read(value) | _free_reads(callee.node)  # its arguments, its globals
        if isinstance(statement, gast.For):  # the body runs between the values
            changes = set().union(*(names_modified(s) for s in statement.body))
            if _leaves_early(statement.body) or changes & reads:
                return None
        elif names_modified(statement) & reads:
            return None
        body = _without_docstring(callee.node.body)
        if first_reordered_call(
            statement, value, self.parsed.resolve, may_have_effects(body, self.parsed.resolve)
        ):
            return None  # it would run before what the statement runs first
        if body and isinstance(body[-1], gast.Return) and body[-1].value is None:
            body = body[:-1]
        if any(isinstance(n, gast.Return) for s in body for n in _own_nodes(s)):
            return None
        items = self.names.fresh("yielded")
        appended = _yields_appended(body, items)
        if appended is None:
            return None
        copied = self.copy(statement, value, callee, appended)
        if copied is None:
            return None
        made = [assign(items, gast.List(elts=[], ctx=gast.Load()), like=statement), *copied]
        if index is None:
            setattr(holder, field, load(items))
        else:
            getattr(holder, field)[index] = load(items)
        self.local.add(items)
        return _located(made, statement)

    # -- helpers given a function the caller defines -------------------------------------

    def function_arguments(self, block: list[gast.stmt]) -> bool:
        """Inline each ``target = helper(...)`` and ``return helper(...)`` of ``block`` (and
        of its inner blocks) that passes the helper one of the caller's own functions."""

        def inlined(statement: gast.stmt) -> tuple[list, list | None]:
            made = self.given_function(statement)
            if made is not None:
                return [], made
            return self.given_inside(statement) or [], None

        return _rewrite_blocks(block, inlined)

    def given_inside(self, statement: gast.stmt) -> list | None:
        """For a call giving a helper one of the caller's functions inside the value of
        ``statement`` (``loss = np.sum(apply_twice(square, x))``): the inlined helper
        bound to a new name, which replaces the call. Only where moving the call before the
        rest of the statement changes nothing: it runs whenever the statement does (not
        under a condition, a lambda or a comprehension), and no other call of the statement
        runs before it."""
        if not isinstance(statement, (gast.Assign, gast.AugAssign, gast.Return, gast.Expr)):
            return None
        if statement.value is None:
            return None
        whole = statement.value if isinstance(statement, (gast.Assign, gast.Return)) else None
        nodes = walk(statement.value)
        candidates = [
            n for n in nodes if type(n) is gast.Call and n is not whole and self.gives_function(n)
        ]
        if not candidates or any(type(n) is gast.Dict for n in nodes):
            return None  # a dict's keys and values run interleaved, not in field order
        conditional = {
            id(inner)
            for n in nodes
            if type(n) in (gast.IfExp, gast.BoolOp, *SCOPES, *COMPREHENSIONS)
            for inner in walk(n)
            if inner is not n
        }
        for candidate in candidates:
            if id(candidate) in conditional:
                continue
            if _calls_before(statement.value, candidate):
                continue
            name = self.names.fresh("helped")
            made = self.given_function(assign(name, candidate, like=statement))
            if made is None:
                continue
            replace_node(statement, candidate, load(name))
            self.local.add(name)
            return made
        return None

    def gives_function(self, value: gast.Call) -> bool:
        """Whether the call passes a lambda, or a name of one of the caller's functions (a
        cheap look, before the callee is resolved and its source parsed)."""
        arguments = [*value.args, *(k.value for k in value.keywords)]
        return any(
            type(a) is gast.Lambda or (type(a) is gast.Name and a.id in self.functions)
            for a in arguments
        )

    def given_function(self, statement: gast.stmt) -> list | None:
        """The statements replacing ``statement`` when it calls a helper with one of the
        caller's functions (a lambda in the call named first), else None."""
        single = isinstance(statement, gast.Assign) and len(statement.targets) == 1
        if not (single or isinstance(statement, gast.Return)):
            return None
        value = statement.value
        if not (isinstance(value, gast.Call) and self.gives_function(value)):
            return None
        found = self.helper(value, generator=False)
        if found is None:
            return None
        call_node = clone(value)
        lambdas = [
            a
            for a in [*call_node.args, *(k.value for k in call_node.keywords)]
            if isinstance(a, gast.Lambda)
            and not (a.args.defaults or a.args.kw_defaults)
            and not any(type(n) in COMPREHENSIONS for n in walk(a))
        ]
        body = _without_docstring(found[1].node.body)
        if not body or not isinstance(body[-1], gast.Return) or body[-1].value is None:
            return None
        nodes = [n for s in body[:-1] for n in _own_nodes(s)]
        if any(isinstance(n, gast.Return) for n in nodes):
            return None
        if any(isinstance(n, (*_NOT_COPIED, *SCOPES)) for n in [*nodes, *walk(body[-1])]):
            return None
        named = []
        for holder, field, index in [
            *((call_node, "args", i) for i in range(len(call_node.args))),
            *((k, "value", None) for k in call_node.keywords),
        ]:
            argument = getattr(holder, field) if index is None else getattr(holder, field)[index]
            if not any(argument is a for a in lambdas):
                continue
            name = self.names.fresh("given")
            named.append(assign(name, argument, like=statement))
            if index is None:
                setattr(holder, field, load(name))
            else:
                getattr(holder, field)[index] = load(name)
            self.functions.add(name)
            self.local.add(name)
        copied = self.copy(statement, call_node, found[1], body, by_name=self.functions)
        if copied is None:
            return None
        *statements, last = copied
        if isinstance(statement, gast.Return):
            statements.append(gast.Return(value=last.value))
        else:
            statements.append(assign(statement.targets[0], last.value, like=statement))
        return _located([*named, *statements], statement)

    # -- the copy of a helper's body --------------------------------------------------------

    def copy(self, statement, call_node, callee, body, by_name=frozenset()) -> list | None:
        """``body`` (a helper's statements) with its parameters bound to the call's
        arguments and its variables renamed apart; None when the call does not fill the
        parameters plainly, or the helper reads a free name the caller sees otherwise. A
        parameter given a name of ``by_name`` (one of the caller's functions) that the body
        does not rebind becomes that name itself."""
        bound = _bind(callee.node, call_node)
        if bound is None:
            return None
        written = set().union(*(names_written(s) for s in body))
        own = set(bound) | written
        for name in _free(body, own):
            if name in self.local or callee.resolve_name(name) is not self.parsed.resolve_name(
                name
            ):
                return None
        given = {
            p: a.id
            for p, a in bound.items()
            if isinstance(a, gast.Name) and a.id in by_name and p not in written
        }
        renames = {name: given.get(name) or self.names.claim(name) for name in sorted(own)}
        prologue = [
            assign(renames[p], clone(a), like=statement) for p, a in bound.items() if p not in given
        ]
        copied = [_renamed(clone(s), renames) for s in body]
        self.local |= set(renames.values())
        self.inlined.add(call_node.func.id)
        return prologue + copied


def _rewrite_blocks(block: list[gast.stmt], rewrite) -> bool:
    """Rewrite each statement of ``block`` and of its inner blocks (theirs first), in
    place: ``rewrite(statement)`` gives the statements to put before it and what replaces
    it (None: itself), none of which is looked at again. True if any changed."""
    changed = False
    position = 0
    while position < len(block):
        statement = block[position]
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, SCOPES):
                changed = _rewrite_blocks(inner, rewrite) or changed
        before, replacement = rewrite(statement)
        made = [*before, *(replacement if replacement is not None else [statement])]
        block[position : position + 1] = made
        changed = changed or bool(before) or replacement is not None
        position += len(made)
    return changed


def _name_called_lambdas(block: list[gast.stmt], names: NameGenerator) -> None:
    """``(lambda v: v * w)(x)`` as ``f = lambda v: v * w`` before the statement and
    ``f(x)`` in it, a local function :mod:`.inline_locals` inlines (not inside another
    lambda or a comprehension, whose variables the lambda may read)."""

    def hoisted(statement: gast.stmt) -> tuple[list, None]:
        made: list[gast.stmt] = []
        if not isinstance(statement, (gast.Assign, gast.Expr, gast.Return, gast.AugAssign)):
            return made, None
        scoped = {
            id(inner)
            for n in walk(statement)
            if type(n) in (*COMPREHENSIONS, gast.Lambda)
            for inner in walk(n)
            if inner is not n
        }
        for n in walk(statement):
            if (
                type(n) is gast.Call
                and type(n.func) is gast.Lambda
                and id(n) not in scoped
                and not (n.func.args.defaults or n.func.args.kw_defaults)
            ):
                name = names.fresh("called")
                made.append(assign(name, n.func, like=statement))
                n.func = load(name)
        return made, None

    _rewrite_blocks(block, hoisted)


def _without_docstring(body: list[gast.stmt]) -> list[gast.stmt]:
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant):
        return body[1:]
    return list(body)


def _own_nodes(node: gast.AST) -> list[gast.AST]:
    """The nodes of ``node`` outside the functions and lambdas defined in it (only the
    definition itself, when ``node`` is one)."""
    found = [node]
    if isinstance(node, SCOPES):
        return found
    for child in gast.iter_child_nodes(node):
        if not isinstance(child, SCOPES):
            found.extend(_own_nodes(child))
    return found


# what a copied helper body may not hold at its own level
_NOT_COPIED = (
    gast.ClassDef,
    gast.AsyncFunctionDef,
    gast.Global,
    gast.Nonlocal,
    gast.Yield,
    gast.YieldFrom,
    gast.Await,
    gast.Try,
    gast.With,
    gast.Match,
    gast.NamedExpr,
)


def _makes_function(body: list[gast.stmt], result: gast.expr) -> bool:
    """Whether the returned ``result`` holds a function the helper makes (a lambda, or a
    ``def`` or lambda bound to a name), and the body holds nothing that is not copied."""
    if any(isinstance(n, _NOT_COPIED) for s in body for n in _own_nodes(s)):
        return False
    made = {s.name for s in body if isinstance(s, gast.FunctionDef)} | {
        s.targets[0].id
        for s in body
        if isinstance(s, gast.Assign)
        and isinstance(s.value, gast.Lambda)
        and isinstance(s.targets[0], gast.Name)
    }
    return any(
        isinstance(n, gast.Lambda) or (type(n) is gast.Name and n.id in made) for n in walk(result)
    )


def _yields_appended(body: list[gast.stmt], items: str) -> list[gast.stmt] | None:
    """``body`` with each ``yield e`` statement made ``items.append(e)``; None when a
    ``yield`` is used as a value, or the body holds what is not copied."""
    copied = [clone(s) for s in body]
    for statement in copied:
        for n in _own_nodes(statement):
            if isinstance(n, gast.Expr) and isinstance(n.value, gast.Yield):
                value = n.value.value if n.value.value is not None else gast.Constant(None, None)
                n.value = call(attribute(load(items), "append"), [value])
    for statement in copied:
        if any(isinstance(n, (*_NOT_COPIED, gast.FunctionDef)) for n in _own_nodes(statement)):
            return None
    return copied


def _free_reads(function: gast.FunctionDef) -> set[str]:
    """The names ``function``'s body reads that are neither its parameters nor its own
    variables (all it reads, when it declares a name global or nonlocal)."""
    reads = names_read_in_all(function.body)
    if any(type(n) in (gast.Global, gast.Nonlocal) for n in walk(function)):
        return reads
    return reads - names_written_in_all(function.body) - set(parameter_names(function))


def _read_whole(statement: gast.stmt):
    """The places ``(holder, field, index)`` in ``statement`` holding a call a loop or
    builtin reads to its end where the statement runs: a ``for`` loop's iterable (also
    inside ``enumerate``), a comprehension's first iterable, an argument of
    ``sum``/``list``/…; not under a condition, a lambda or a comprehension's element."""
    if isinstance(statement, gast.For):
        yield from _call_places(statement, "iter")
        return
    if not isinstance(statement, (gast.Assign, gast.Expr, gast.Return, gast.AugAssign)):
        return
    conditional = {
        id(inner)
        for n in walk(statement)
        if type(n) in (gast.IfExp, gast.BoolOp, *SCOPES)
        for inner in walk(n)
        if inner is not n or type(n) in SCOPES
    }
    for n in walk(statement):
        if id(n) in conditional:
            continue
        if type(n) in COMPREHENSIONS:
            yield from _call_places(n.generators[0], "iter")
        elif (
            type(n) is gast.Call
            and type(n.func) is gast.Name
            and n.func.id in _CONSUMERS
            and len(n.args) == 1
        ):
            yield from _call_places(n, "args", 0)


def _call_places(holder, field: str, index: int | None = None):
    """``(holder, field, index)`` when it holds a call, and the place of the call inside
    the ``enumerate`` call it holds (not ``zip``'s: it stops at its shortest argument, and
    a generator that never ends is fine there)."""
    value = getattr(holder, field) if index is None else getattr(holder, field)[index]
    if not isinstance(value, gast.Call):
        return
    yield holder, field, index
    if isinstance(value.func, gast.Name) and value.func.id == "enumerate" and value.args:
        yield value, "args", 0


def _leaves_early(body: list[gast.stmt]) -> bool:
    """Whether a loop with this body can stop before its iterator ends."""
    for statement in body:
        for n in _own_nodes(statement):
            if isinstance(n, (gast.Return, gast.Raise)):
                return True
            if isinstance(n, gast.Break) and not _inside_inner_loop(statement, n):
                return True
    return False


def _inside_inner_loop(statement: gast.stmt, target: gast.AST) -> bool:
    for n in _own_nodes(statement):
        if isinstance(n, (gast.For, gast.While)) and any(
            inner is target for s in n.body + n.orelse for inner in _own_nodes(s)
        ):
            return True
    return False


def _bind(definition: gast.FunctionDef, call_node: gast.Call) -> dict[str, gast.expr] | None:
    """Parameter → argument expression, in the order Python evaluates them, defaults
    that are constants included; None for ``*``/``**`` on either side, or a default
    that is not a constant (computed where the helper was defined)."""
    arguments = definition.args
    if arguments.vararg or arguments.kwarg or arguments.posonlyargs or arguments.kwonlyargs:
        return None
    if any(isinstance(a, gast.Starred) for a in call_node.args):
        return None
    positional = [a.id for a in arguments.args]
    if len(call_node.args) > len(positional):
        return None
    bound = dict(zip(positional, call_node.args))
    for keyword in call_node.keywords:
        if keyword.arg is None or keyword.arg in bound or keyword.arg not in positional:
            return None
        bound[keyword.arg] = keyword.value
    first_default = len(positional) - len(arguments.defaults)
    defaults = dict(zip(positional[first_default:], arguments.defaults))
    for name in positional:
        if name not in bound:
            default = defaults.get(name)
            if not isinstance(default, gast.Constant):
                return None
            bound[name] = clone(default)
    return bound


def _free(body: list[gast.stmt], own: set[str]) -> set[str]:
    """The names ``body`` reads that neither it nor the functions it defines bind."""
    free: set[str] = set()
    for statement in body:
        free |= _free_in(statement, own)
    return free


def _free_in(node: gast.AST, bound: set[str]) -> set[str]:
    if type(node) is gast.Name:
        return {node.id} if type(node.ctx) is gast.Load and node.id not in bound else set()
    if not isinstance(node, SCOPES) or isinstance(node, gast.ClassDef):
        free: set[str] = set()
        for child in gast.iter_child_nodes(node):
            free |= _free_in(child, bound)
        return free
    free = set()
    for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
        free |= _free_in(default, bound)
    body = node.body if isinstance(node.body, list) else [node.body]
    inner = bound | parameter_names(node) | set().union(*(names_written(s) for s in body))
    for part in body:
        free |= _free_in(part, inner)
    return free


def _calls_before(root: gast.AST, target: gast.AST) -> list[gast.Call]:
    """The calls inside ``root`` that Python runs to their end before it starts ``target``
    (children are evaluated in the order of their fields)."""
    before: list[gast.Call] = []

    def encloses(node: gast.AST) -> bool:
        if node is target:
            return True
        if any(encloses(child) for child in gast.iter_child_nodes(node)):
            return True
        if type(node) is gast.Call:
            before.append(node)
        return False

    encloses(root)
    return before


def _renamed(node: gast.AST, renames: dict[str, str]) -> gast.AST:
    for n in walk(node):
        if type(n) is gast.Name and n.id in renames:
            n.id = renames[n.id]
        elif type(n) is gast.FunctionDef and n.name in renames:
            n.name = renames[n.name]
    return node


def _located(statements: list[gast.stmt], statement: gast.stmt) -> list[gast.stmt]:
    """Errors in the copied code name the line of the call."""
    for copied in statements:
        for child in walk(copied):
            if hasattr(child, "lineno"):
                gast.copy_location(child, statement)
    return statements
