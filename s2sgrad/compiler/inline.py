"""Inline a derivative rule's body into generated code, with the call site's names.

A rule ``def _sin(g, ans, x): return g * np.cos(x)`` used at ``y = np.sin(t1)`` with
cotangent ``dy`` becomes the expression ``dy * np.cos(t1)``. Parameters are replaced by
the call's arguments (or the parameter's default), the rule's local variables get fresh
names, ``if`` statements whose tests are constant after substitution are folded, and the
free names of the rule (``np``, runtime helpers) are bound in the generated namespace.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gast

from s2sgrad.compiler.frontend import read_definition
from s2sgrad.compiler.namespace import Namespace
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.python_ast import to_gast
from s2sgrad.compiler.rule_sites import Site, bound_name, clone_atom
from s2sgrad.compiler.syntax import (
    BINARY_OPERATORS,
    COMPARISON_OPERATORS,
    UNARY_OPERATORS,
    assign,
    clone,
    clone_rewriting,
    constant,
    names_read,
    names_written,
    walk,
)
from s2sgrad.compiler.template_builders import template_copier
from s2sgrad.compiler.unbroadcast_templates import stripped_template

__all__ = ["Inlined", "inline_rule", "rule_plan", "has_plan", "Namespace", "is_literal_node"]


@dataclass
class Inlined:
    """Statements to emit, then one expression (or None) per positional argument."""

    statements: list[gast.stmt]
    entries: list[gast.expr | None]


@dataclass
class _ParsedRule:
    positional: list[inspect.Parameter]
    varargs: str | None
    keyword_only: list[inspect.Parameter]
    body: list[gast.stmt]
    globals: dict
    written: frozenset[str]  # the rule's local variables
    first: str  # the name of the cotangent (or tangent) parameter
    ans: str  # the name of the primal output parameter
    tested: frozenset[str]  # names an ``if`` of the body tests: literals there fold it
    has_if: bool


@functools.cache
def _parse_rule(rule) -> _ParsedRule | None:
    code = getattr(rule, "__code__", None)
    if code is None:
        return None  # a builtin or a callable object: called, not inlined
    parsed = _read_rule(rule)
    if parsed is None:
        return None
    body, written = parsed
    first, ans, *parameters = parameters_of(rule)
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), None)
    keyword_only = [p for p in parameters if p.kind == p.KEYWORD_ONLY]
    tests = [n.test for s in body for n in walk(s) if type(n) is gast.If]
    return _ParsedRule(
        positional,
        varargs,
        keyword_only,
        body,
        rule.__globals__,
        written,
        first.name,
        ans.name,
        frozenset().union(*map(names_read, tests)),
        bool(tests),
    )


def parameters_of(rule) -> list[inspect.Parameter]:
    """The parameters of a plain function, read from its code (``inspect.signature`` is
    slower, and would follow ``__wrapped__`` away from the code that is inlined)."""
    code = rule.__code__
    names = code.co_varnames
    Parameter = inspect.Parameter
    count, keyword_count = code.co_argcount, code.co_kwonlyargcount
    defaults = rule.__defaults__ or ()
    keyword_defaults = rule.__kwdefaults__ or {}
    parameters = []
    for index, name in enumerate(names[:count]):
        kind = (
            Parameter.POSITIONAL_ONLY
            if index < code.co_posonlyargcount
            else Parameter.POSITIONAL_OR_KEYWORD
        )
        default_index = index - (count - len(defaults))
        default = defaults[default_index] if default_index >= 0 else Parameter.empty
        parameters.append(Parameter(name, kind, default=default))
    if code.co_flags & inspect.CO_VARARGS:
        parameters.append(Parameter(names[count + keyword_count], Parameter.VAR_POSITIONAL))
    for name in names[count : count + keyword_count]:
        default = keyword_defaults.get(name, Parameter.empty)
        parameters.append(Parameter(name, Parameter.KEYWORD_ONLY, default=default))
    return parameters


def _read_rule(rule) -> tuple[list[gast.stmt], frozenset[str]] | None:
    """A rule's body (without its docstring) parsed, and the names it assigns."""
    try:
        lines, _, tree = read_definition(rule)
        tree = tree if tree is not None else ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef):
        return None
    statements = definition.body
    if (
        statements
        and isinstance(statements[0], ast.Expr)
        and isinstance(statements[0].value, ast.Constant)
    ):
        statements = statements[1:]  # the docstring
    # the rule file's line numbers mean nothing where the body is inlined
    body = [to_gast(statement, locations=False) for statement in statements]
    return body, frozenset().union(*(names_written(s) for s in body))


def inline_rule(
    rule,
    first: gast.expr,
    ans: gast.expr,
    args: list[gast.expr],
    keywords: dict[str, gast.expr],
    wanted: set[int],
    names: NameGenerator,
    namespace: Namespace,
    differentiated: tuple[bool, ...] | None = None,
    planned: bool = True,
) -> Inlined | None:
    """Inline ``rule(first, ans, *args, **keywords)``; ``None`` when it cannot be inlined.

    Only the entries of the rule's result at the ``wanted`` argument positions are given
    (the others are None). A rule with a keyword-only ``differentiated`` parameter is told
    which arguments are differentiated (``differentiated``, or else ``wanted``).

    Example::

        inlined = inline_rule(_sin, load("dy"), load("y"), [load("t1")], {}, {0}, names, space)
        inlined.entries[0]  # dy * np.cos(t1)
    """
    parsed = _parse_rule(rule)
    if parsed is None:
        return None
    for argument in args:
        if type(argument) is gast.Starred:
            return None
    if not keywords and planned:  # planned=False: the general path (tests compare them)
        plan = _plan(rule, parsed, len(args))
        if plan is not None:
            return plan.inline(first, ans, args, wanted, namespace)
    return _inline_bound(
        rule, parsed, first, ans, args, keywords, wanted, names, namespace, differentiated
    )


def _inline_bound(
    rule, parsed, first, ans, args, keywords, wanted, names, namespace, differentiated
) -> Inlined | None:
    """:func:`inline_rule`'s general path: the rule's parameters bound to the call's
    arguments, its ``if``s on literals folded, its local variables renamed."""
    bound = _bind_rule(parsed, args, keywords, wanted, differentiated)
    if bound is None:
        return None
    bound[parsed.first] = first
    bound[parsed.ans] = ans

    literals = _literal_bindings(bound, parsed.written, parsed.tested) if parsed.tested else ()
    template = _folded_template(rule, parsed, literals)
    if template is None:
        return None
    shape = _template_shape(template)
    if shape is None:
        return None
    statements, value = shape
    renames = {name: names.claim(name) for name in parsed.written}
    prologue = [
        assign(renames[name], clone(value)) for name, value in bound.items() if name in renames
    ]
    instantiate = Site(renames, bound, parsed.globals, namespace).instantiate
    statements = [instantiate(statement) for statement in statements]
    if type(value) is gast.Tuple:
        # only the entries the caller asked for are copied; the rest are never read
        entries = [instantiate(e) if i in wanted else None for i, e in enumerate(value.elts)]
    else:
        entries = [instantiate(value)]
    entries += [None] * (len(args) - len(entries))
    entries = [
        None if (e is None or (isinstance(e, gast.Constant) and e.value is None)) else e
        for e in entries
    ]
    return Inlined(prologue + statements, entries[: max(len(args), 1)])


class _Plan:
    """How a rule whose body is one ``return`` is inlined at a call of ``count`` arguments
    without keywords: each entry of the returned value built by code compiled for it
    (:func:`template_copier`, after a few copies made by a walk), which copies the call's
    arguments in place of the parameters, the parameters' literal defaults, and binds the
    rule's global names in the generated namespace. What the general path of
    :func:`inline_rule` makes, without binding, folding and renaming anew at every call."""

    def __init__(
        self,
        entries: list,
        count: int,
        is_tuple: bool,
        parts: list | None = None,
        copier: Callable | None = None,
        sources: dict | None = None,
        rule_globals: dict | None = None,
    ):
        self.entries = entries  # one builder per entry of the returned value
        self.count = count
        self.tuple = is_tuple  # the rule returns a tuple of entries (else one value)
        self.parts = parts  # the template of each entry, and what makes its builder
        self.copier = copier
        self.sources = sources or {}  # a parameter's name → its argument's index, or default
        self.globals = rule_globals or {}
        self.stripped: dict[tuple, _Plan | None] = {}  # without_unbroadcasts's, made once

    def without_unbroadcasts(self, positions: frozenset[int], unbroadcast: Any) -> _Plan | None:
        """This plan for a call whose arguments at ``positions`` are one name and the others
        literals, with the template's ``unbroadcast(v, <that name>)`` calls (``unbroadcast``
        the helper) replaced by ``v``: the entries ``reverse/rules.without_unbroadcasts``
        makes of this plan's. None where that cannot be told from the template alone."""
        key = (positions, id(unbroadcast))
        if key in self.stripped:
            return self.stripped[key]
        plan = self.stripped[key] = self._without_unbroadcasts(positions, unbroadcast)
        return plan

    def _without_unbroadcasts(self, positions, unbroadcast) -> _Plan | None:
        if self.parts is None or self.copier is None:
            return None
        unsure = []

        def source(node: gast.expr) -> Any:
            """What the copy holds for the template's name ``node``: its argument's
            index, _GLOBAL, or _CONSTANT (a default); other names make the plan unsure."""
            found = self.sources.get(node.id, _NO_SOURCE)
            if type(found) is int:
                return found
            if found is not _NO_SOURCE:
                return _CONSTANT
            if node.id in self.globals:
                return _GLOBAL
            unsure.append(node)  # a builtin: copied as it is
            return None

        def strips(call: gast.Call) -> bool:
            func = call.func
            if type(func) is not gast.Name:
                return False
            called = source(func)
            if called is _CONSTANT:
                return False
            if called is not _GLOBAL:  # a parameter called, or a builtin
                unsure.append(func)
                return False
            if self.globals[func.id] is not unbroadcast or len(call.args) != 2 or call.keywords:
                return False
            second = call.args[1]
            if type(second) is not gast.Name:
                return False  # no name where it is copied
            read = source(second)
            if read is _CONSTANT or read is _GLOBAL:
                return False  # not the call site's name (a default, a bound global)
            if type(read) is not int or read < 2:  # the cotangent, the answer, a builtin
                unsure.append(second)
                return False
            return read - 2 in positions

        parts = []
        changed = False
        for part in self.parts:
            found = stripped_template(part, strips)
            if found is None or unsure:
                return None
            new, any_stripped = found
            if _is_none(new) and not _is_none(part):
                return None  # inline reads a literal None as no entry, the walk does not
            parts.append(new)
            changed = changed or any_stripped
        if not changed:
            return self  # nothing to drop: the entries are this plan's
        builders = [self.copier(part) for part in parts]
        if any(b is None for b in builders):
            return None
        return _Plan(builders, self.count, self.tuple)

    def inline(self, first, ans, args, wanted, namespace: Namespace) -> Inlined:
        values = [first, ans, *args]
        builders = self.entries
        if len(builders) == 1 and not self.tuple:
            made = [builders[0](values, namespace)]
        else:
            made = [
                build(values, namespace) if i in wanted else None
                for i, build in enumerate(builders)
            ]
        count = max(self.count, 1)  # one entry per argument, or the one value
        entries: list[gast.expr | None] = []
        for e in made[:count]:  # a literal None: no cotangent for that argument
            entries.append(None if type(e) is gast.Constant and e.value is None else e)
        entries += [None] * (count - len(entries))
        return Inlined([], entries)


_PLANS: dict[tuple, _Plan | None] = {}


def has_plan(rule, count: int) -> bool:
    """Whether ``rule`` called with ``count`` positional arguments and no keywords is
    inlined by a plan made once (a rule whose body is one ``return``).

    Example::

        has_plan(get_rule(np.sin).vjp, 1)  # True: return g * np.cos(x)
    """
    parsed = _parse_rule(rule)
    return parsed is not None and _plan(rule, parsed, count) is not None


def rule_plan(rule, count: int) -> _Plan | None:
    """The plan :func:`inline_rule` inlines ``rule`` by at a call of ``count`` positional
    arguments without keywords or starred ones, or None where it takes its general path
    or cannot inline the rule.

    Example::

        rule_plan(get_rule(np.sin).vjp, 1).inline(load("dy"), load("y"), [load("t1")], {0}, space)
    """
    parsed = _parse_rule(rule)
    return None if parsed is None else _plan(rule, parsed, count)


def _plan(rule, parsed: _ParsedRule, count: int) -> _Plan | None:
    """The :class:`_Plan` of ``rule`` for ``count`` positional arguments, or None where
    the general path is needed (a default to refuse, ``differentiated``, local variables,
    tests to fold, statements before the ``return``)."""
    key = (rule, count)
    if key in _PLANS:
        return _PLANS[key]
    _PLANS[key] = plan = _make_plan(rule, parsed, count)
    return plan


_NO_SOURCE = object()  # a name that no parameter of the rule binds


def _make_plan(rule, parsed: _ParsedRule, count: int) -> _Plan | None:
    if parsed.varargs is not None or count > len(parsed.positional):
        return None
    parameters = parsed.positional + parsed.keyword_only
    if parsed.written or parsed.tested or any(p.name == "differentiated" for p in parameters):
        return None
    sources: dict[str, Any] = {parsed.first: 0, parsed.ans: 1}  # name → index or default
    for index, parameter in enumerate(parameters):
        if index < count:  # the positional parameters come first
            sources[parameter.name] = index + 2
            continue
        if parameter.default is inspect.Parameter.empty or not _is_literal(parameter.default):
            return None
        sources[parameter.name] = constant(parameter.default)
    template = _folded_template(rule, parsed, ())
    shape = _template_shape(template) if template is not None else None
    if shape is None or shape[0]:
        return None
    value = shape[1]

    def leaf(node: gast.Name, refer) -> str:
        source = sources.get(node.id, _NO_SOURCE)
        if type(source) is int:
            return f"atom(A[{source}])"
        if source is not _NO_SOURCE:
            return f"atom({refer(source)})"
        if node.id in parsed.globals:
            return f"bound({refer(node)}, N, {refer(parsed.globals[node.id])})"
        return f"atom({refer(node)})"  # a builtin

    def walked_leaf(node: gast.Name, A: list, N: Namespace) -> gast.AST:  # what leaf's text does
        source = sources.get(node.id, _NO_SOURCE)
        if type(source) is int:
            return clone_atom(A[source])
        if source is not _NO_SOURCE:
            return clone_atom(source)
        if node.id in parsed.globals:
            return bound_name(node, N, parsed.globals[node.id])
        return clone_atom(node)

    helpers = {"atom": clone_atom, "bound": bound_name}
    parts = value.elts if type(value) is gast.Tuple else [value]

    def copier(part: gast.expr) -> Callable | None:
        return template_copier(part, leaf, "A, N", walked_leaf, helpers)

    builders = [copier(part) for part in parts]
    if any(b is None for b in builders):
        return None
    return _Plan(
        builders, count, type(value) is gast.Tuple, list(parts), copier, sources, parsed.globals
    )


_GLOBAL, _CONSTANT = object(), object()  # what a template's name is copied as, but a name


def _is_none(node: gast.AST) -> bool:
    return type(node) is gast.Constant and node.value is None


_SHAPES: dict[int, tuple[list[gast.stmt], tuple | None]] = {}


def _template_shape(template: list[gast.stmt]) -> tuple[list[gast.stmt], gast.expr] | None:
    """The statements of a folded template before its ``return``, and the returned value;
    None for a starred tuple (``return (*parts,)``). Kept per template (which never
    changes: ``_TEMPLATES`` holds it)."""
    known = _SHAPES.get(id(template))
    if known is not None and known[0] is template:
        return known[1]
    *statements, final = template
    value = final.value
    shape: tuple | None = (statements, value)
    if isinstance(value, gast.Tuple) and any(isinstance(e, gast.Starred) for e in value.elts):
        shape = None
    _SHAPES[id(template)] = (template, shape)
    return shape


def _bind_rule(
    parsed: _ParsedRule,
    args: list[gast.expr],
    keywords: dict[str, gast.expr],
    wanted: set[int],
    differentiated: tuple[bool, ...] | None,
) -> dict[str, gast.expr] | None:
    """The rule's parameters (after the cotangent and ``ans``) → the call's arguments, or
    their literal defaults; None when the call does not fit the rule plainly."""
    bound: dict[str, gast.expr] = {}
    if len(args) > len(parsed.positional) and parsed.varargs is None:
        return None
    for parameter, argument in zip(parsed.positional, args):
        bound[parameter.name] = argument
    if parsed.varargs is not None:
        extra = args[len(parsed.positional) :]
        bound[parsed.varargs] = gast.Tuple(elts=list(extra), ctx=gast.Load())
    by_name = {p.name: p for p in parsed.positional + parsed.keyword_only}
    for key, value in keywords.items():
        if key not in by_name or key in bound:
            return None  # a keyword the rule does not know: calling it raises a clear error
        bound[key] = value
    if "differentiated" in by_name and "differentiated" not in keywords:
        if differentiated is None:
            differentiated = tuple(i in wanted for i in range(len(args)))
        bound["differentiated"] = constant(differentiated)
    for parameter in parsed.positional + parsed.keyword_only:
        if parameter.name in bound:
            continue
        if parameter.default is inspect.Parameter.empty or not _is_literal(parameter.default):
            return None
        bound[parameter.name] = constant(parameter.default)
    return bound


def _literal_bindings(
    bound: dict[str, gast.expr], written: frozenset[str], tested: frozenset[str]
) -> tuple:
    """``(name, repr(value), node)`` for parameters bound to literals (``axis=-1``) that an
    ``if`` of the rule tests; other parameters are substituted where the rule is inlined."""
    found = []
    for name, node in bound.items():
        if name in written or name not in tested:
            continue
        try:
            value = _literal_value(node)
        except _NotLiteral:
            continue
        found.append((name, repr(value), node))
    return tuple(found)


_TEMPLATES: dict[tuple, list[gast.stmt] | None] = {}


def _folded_template(rule, parsed: _ParsedRule, literals: tuple) -> list[gast.stmt] | None:
    """The rule's body with its literal parameters substituted and ``if``s on them folded.

    Cached per rule and literal values, so ``np.sum(x, axis=1)`` folds its rule once.
    ``None`` when the folded body is not statements followed by one final ``return``.
    """
    key = (rule, tuple((name, text) for name, text, _ in literals))
    if key in _TEMPLATES:
        return _TEMPLATES[key]
    nodes = {name: node for name, _, node in literals}

    def substitute(node: gast.AST) -> gast.AST:
        if type(node) is gast.Name and node.id in nodes:
            return clone(nodes[node.id])
        return node

    if nodes or parsed.has_if:
        body = _fold(
            parsed.body, lambda node: clone_rewriting(node, substitute, kinds=(gast.Name,))
        )
    else:  # nothing to substitute or fold: the parsed body serves (call sites copy it)
        body = parsed.body
    if (
        not body
        or not isinstance(body[-1], gast.Return)
        or any(isinstance(n, gast.Return) for s in body[:-1] for n in walk(s))
    ):
        body = None
    _TEMPLATES[key] = body
    return body


def _is_literal(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, tuple) and all(_is_literal(v) for v in value)


def _fold(
    statements: list[gast.stmt], copy: Callable[[Any], Any] | None = None
) -> list[gast.stmt] | None:
    """Fold ``if`` statements with constant tests; cut statements after a ``return``.

    With ``copy``, ``statements`` are left as they are and the statements kept are
    ``copy``'s copies of them (a branch folded away is never copied)."""
    result: list[gast.stmt] = []
    for statement in statements:
        if isinstance(statement, gast.If):
            verdict = constant_truth(statement.test if copy is None else copy(statement.test))
            if verdict is not None:
                branch = _fold(statement.body if verdict else statement.orelse, copy)
                if branch is None:
                    return None
                result.extend(branch)
                if branch and isinstance(branch[-1], gast.Return):
                    return result
                continue
            if copy is not None:
                statement = copy(statement)
            statement.body = _fold(statement.body) or [gast.Pass()]
            statement.orelse = _fold(statement.orelse) or []
        elif copy is not None:
            statement = copy(statement)
        result.append(statement)
        if isinstance(statement, gast.Return):
            return result
    return result


def constant_truth(test: gast.expr) -> bool | None:
    """The truth of an expression made only of literals, or None if it has names or calls.

    Example::

        constant_truth(parse_expression("None is None"))  # True
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # `-1 is None` warns, and is still foldable
            return bool(_literal_value(test))
    except _NotLiteral:
        return None
    except Exception:  # a literal expression that raises (1 / 0) is left to run time
        return None


class _NotLiteral(Exception):
    pass


# arithmetic a literal test may do (no powers or shifts: 10 ** 10 ** 10 would not finish)
_ARITHMETIC = {kind: BINARY_OPERATORS[kind] for kind in (gast.Add, gast.Sub, gast.Mult)}


def _literal_value(node: gast.expr):
    """The value of an expression of literals, comparisons and boolean logic."""
    kind = type(node)
    if kind is gast.Constant:
        return node.value
    if kind in (gast.Tuple, gast.List):
        values = [_literal_value(e) for e in node.elts]
        return tuple(values) if kind is gast.Tuple else values
    if kind is gast.UnaryOp and type(node.op) in UNARY_OPERATORS:
        return UNARY_OPERATORS[type(node.op)](_literal_value(node.operand))
    if kind is gast.BinOp and type(node.op) in _ARITHMETIC:
        return _ARITHMETIC[type(node.op)](_literal_value(node.left), _literal_value(node.right))
    if kind is gast.BoolOp:
        is_and = type(node.op) is gast.And
        for value_node in node.values:
            value = _literal_value(value_node)
            if bool(value) != is_and:
                return value
        return value
    if kind is gast.Compare:
        left = _literal_value(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = _literal_value(right_node)
            if not COMPARISON_OPERATORS[type(op)](left, right):
                return False
            left = right
        return True
    raise _NotLiteral


def is_literal_node(node: gast.expr) -> bool:
    """Whether ``node`` is an expression of literals (``2.0``, ``-1``, ``(1, 2)``)."""
    try:
        _literal_value(node)
    except _NotLiteral:
        return False
    return True
