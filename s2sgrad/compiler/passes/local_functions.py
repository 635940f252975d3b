"""Find the local functions a body can inline: bound once, only ever called plainly.

A lambda or nested ``def`` (``square = lambda v: v * w``) qualifies when it is bound once,
takes plain parameters, does not call itself, and every use of its name is a call that
fills its parameters, outside lambdas, comprehensions and short-circuit operators. A
``def`` of several statements qualifies when its body can be given one exit (each
``return`` an assignment of ``RESULT``). :mod:`.inline_locals` does the inlining.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Set
from dataclasses import dataclass

import gast

from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import (
    COMPREHENSIONS,
    SCOPES,
    assign,
    clone,
    clone_rewriting,
    constant,
    load,
    names_read,
    names_written,
    nested_statements,
    walk,
)

__all__ = [
    "RESULT",
    "Signature",
    "defined_function",
    "free_names",
    "local_functions",
    "plain_calls",
]


def defined_function(statement: gast.AST) -> str | None:
    """The name ``statement`` binds to a function it defines (``def f`` or ``f = lambda``),
    else None.

    Example::

        defined_function(gast.parse("f = lambda v: v * 2").body[0])  # 'f'
    """
    if isinstance(statement, gast.FunctionDef):
        return statement.name
    if (
        isinstance(statement, gast.Assign)
        and isinstance(statement.value, gast.Lambda)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], gast.Name)
    ):
        return statement.targets[0].id
    return None


def local_functions(statements):
    """``(name, binding statement, signature, body)`` of each function the body defines
    once, as a lambda or a ``def``: ``body`` is the returned expression of a lambda or of a
    ``def`` whose body is one ``return``, else the ``def``'s statements with one exit."""
    bindings = Counter(n for s in statements for n in _bound_by(s))
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
            inner = (*COMPREHENSIONS, gast.Lambda, gast.NamedExpr)
            nested = any(type(n) in inner for n in walk(body))
            recursive = any(type(n) is gast.Name and n.id == name for n in walk(body))
        if plain and not nested and not recursive and bindings[name] == 1:
            named = [a.id for a in arguments.args]
            star = arguments.vararg.id if arguments.vararg is not None else None
            defaults = dict(zip(named[len(named) - len(arguments.defaults) :], arguments.defaults))
            yield name, statement, Signature(named, star, defaults), body


def _bound_by(statement: gast.stmt) -> set[str]:
    """The names ``statement`` itself binds (a loop its target, not what its body binds:
    ``statements`` lists those statements too). A function bound once in a loop's body is
    made anew each time round, and reads what it captures when called, as the inlined
    body does."""
    if isinstance(statement, gast.For):
        return names_written(statement.target)
    if isinstance(statement, (gast.If, gast.While)):
        return set()
    if isinstance(statement, gast.With):
        return {
            n for i in statement.items if i.optional_vars for n in names_written(i.optional_vars)
        }
    if isinstance(statement, gast.Try):  # its handlers' statements are not listed
        return set().union(*(names_written(h) for h in statement.handlers))
    return names_written(statement)


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
        if type(n) in COMPREHENSIONS:
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
        return constant(None) if type(node) in COMPREHENSIONS else node

    return clone_rewriting(statement, drop, kinds=COMPREHENSIONS)


def plain_calls(statements, name: str, signature, free: Set[str] = frozenset()):
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


def _fills(signature: Signature | None, node: gast.Call) -> bool:
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


def _calls_and_uses(statements, name: str, signature, free: Set[str]):
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
            if type(n) in (*COMPREHENSIONS, gast.Lambda, gast.IfExp, gast.BoolOp)
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


@dataclass
class Signature:
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


RESULT = "__result__"  # the variable a function's returns assign, before renaming


def free_names(body: list[gast.stmt], parameters) -> set[str]:
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
        statements.append(assign(RESULT, constant(None), like=body[-1] if body else None))
    return statements


def _exits(body: list[gast.stmt], top: bool = True) -> tuple[list[gast.stmt], bool] | None:
    """``top``: ``body`` is the function's, which falling off the end returns None from;
    an ``if`` arm's falls through to what follows that ``if`` instead."""
    result: list[gast.stmt] = []
    for index, statement in enumerate(body):
        if isinstance(statement, gast.Return):
            value = statement.value if statement.value is not None else constant(None)
            result.append(assign(RESULT, value, like=statement))
            return result, True
        if not any(isinstance(n, gast.Return) for n in walk(statement)):
            result.append(statement)
            continue
        if not isinstance(statement, gast.If):
            return None
        arms = _exits(statement.body, top=False), _exits(statement.orelse, top=False)
        then_arm, orelse_arm = arms
        if then_arm is None or orelse_arm is None:
            return None
        (then, then_returns), (orelse, orelse_returns) = then_arm, orelse_arm
        rest = body[index + 1 :]
        if not (then_returns or orelse_returns):
            return None  # a return nested deeper, in an arm that may fall through
        if not (then_returns and orelse_returns):
            after = _exits(rest, top)
            if after is None or not after[1]:
                if after is None or not top:  # the arm falls through to what follows
                    return None
                after = (after[0] + [assign(RESULT, constant(None), like=statement)], True)
            if then_returns:
                orelse = orelse + after[0]
            else:
                then = then + after[0]
        statement.body, statement.orelse = then or [gast.Pass()], orelse
        result.append(statement)
        return result, True
    return result, False
