"""Copies of a syntax tree template built by straight-line code compiled once per template.

Rule inlining copies a rule's body at every primitive of a function, substituting its
names (:mod:`s2sgrad.compiler.inline`). A recursive copy spends most of its time walking
the template; this compiles the walk away: each template gets a function that makes
every node of the copy in one expression, calling ``name(template_name)`` for each
``Name`` so that the caller decides what replaces it. The copy is what
``clone_rewriting(template, ...)`` with that substitution of names makes, node for node,
and names are asked for in the same order (fields in order, children first).

Compiling a template costs as much as a few dozen walked copies, and most templates of a
process's first function are copied once or twice: a template is copied by a walk that
makes the same nodes until it has been copied :data:`COMPILE_AFTER` times, and by its
compiled code from then on.

Example::

    build = template_builder(parse_expression("g * np.cos(x)"))
    copy = build(lambda name: clone(name))  # a plain copy of the template
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gast

from s2sgrad.compiler.syntax import SCOPES, clone, node_fields

__all__ = ["template_builder", "template_copier", "compile_template", "plain_size"]

Builder = Callable[[Callable[[gast.Name], gast.AST]], gast.AST]

COMPILE_AFTER = 32  # copies walked first: compiling costs about as much as 32 walks save

_BUILDERS: dict[int, tuple[gast.AST, Builder | None]] = {}


def template_builder(template: gast.AST) -> Builder | None:
    """A function ``build(name)`` that returns a fresh copy of ``template`` in which each
    ``Name`` outside nested functions is ``name(that Name of the template)``; None for a
    template it cannot build (a function or lambda at its root, attributes a pass
    attached to a node). Made once per template, which must not change afterwards."""
    known = _BUILDERS.get(id(template))
    if known is not None and known[0] is template:
        return known[1]
    builder = template_copier(
        template, lambda node, refer: f"name({refer(node)})", "name", _asked_name
    )
    _BUILDERS[id(template)] = (template, builder)  # the template kept: ids stay unique
    return builder


def _asked_name(node: gast.Name, name: Callable[[gast.Name], gast.AST]) -> gast.AST:
    return name(node)


def template_copier(
    template: gast.AST,
    leaf: Callable[[gast.Name, Callable[[Any], str]], str],
    parameters: str,
    walked_leaf: Callable[..., gast.AST],
    helpers: dict | None = None,
) -> Callable | None:
    """What :func:`compile_template` gives, compiled only once the template has been
    copied :data:`COMPILE_AFTER` times; until then each copy is made by walking the
    template, each ``Name`` becoming ``walked_leaf(name, *arguments)``, which must
    return what the text ``leaf`` gives evaluates to. None as for :func:`template_builder`.

    Example::

        copy = template_copier(tree, lambda node, refer: f"clone({refer(node)})", "",
                               lambda node: clone(node))
        copy()  # a copy of tree, made by a walk
    """
    if type(template) in SCOPES or not _buildable(template):
        return None
    compiled: Callable | None = None
    uses = 0

    def copy(*arguments: Any) -> gast.AST:
        nonlocal compiled, uses
        if compiled is not None:
            return compiled(*arguments)
        uses += 1
        if uses <= COMPILE_AFTER:
            return _walked_copy(template, walked_leaf, arguments)
        compiled = compile_template(template, leaf, parameters, helpers)
        assert compiled is not None  # buildable, as checked above
        return compiled(*arguments)

    return copy


def _buildable(node: gast.AST) -> bool:
    """Whether :func:`compile_template` can build ``node`` (a subtree of a template)."""
    kind: Any = type(node)
    if kind is gast.Name or kind in SCOPES or kind is gast.Constant:
        return True
    state = node.__dict__
    if len(state) > plain_size(kind):
        return False
    for field in node_fields(kind):
        value = state.get(field)
        if type(value) is list:
            for item in value:
                if isinstance(item, gast.AST) and not _buildable(item):
                    return False
        elif isinstance(value, gast.AST) and not _buildable(value):
            return False
    return True


def _walked_copy(node: gast.AST, leaf: Callable[..., gast.AST], arguments: tuple) -> gast.AST:
    """The copy the compiled code of a template makes, node for node, made by a walk
    (names asked for in the same order: fields in order, children first)."""
    kind: Any = type(node)
    if kind is gast.Name:
        return leaf(node, *arguments)
    if kind in SCOPES or kind is gast.Constant:
        return clone(node)
    new = kind.__new__(kind)
    state = new.__dict__ = node.__dict__.copy()
    for field in node_fields(kind):
        value = state.get(field)
        if type(value) is list:
            state[field] = [
                _walked_copy(v, leaf, arguments) if isinstance(v, gast.AST) else v for v in value
            ]
        elif isinstance(value, gast.AST):
            state[field] = _walked_copy(value, leaf, arguments)
    return new


def compile_template(
    template: gast.AST,
    leaf: Callable[[gast.Name, Callable[[Any], str]], str],
    parameters: str,
    helpers: dict | None = None,
) -> Callable | None:
    """A function of ``parameters`` (Python's parameter list, as text) that returns a fresh
    copy of ``template``, each ``Name`` outside nested functions made by the expression
    ``leaf(name, refer)`` returns, in which ``refer(value)`` names any object and
    ``helpers`` are the functions it may call. None as for :func:`template_builder`.

    Example::

        build = compile_template(tree, lambda node, refer: f"clone({refer(node)})", "")
    """
    if type(template) in SCOPES:
        return None
    constants: list = []  # what the generated code refers to: node classes, dicts, nodes

    def refer(value) -> str:
        constants.append(value)
        return f"K[{len(constants) - 1}]"

    def expression(node: gast.AST) -> str | None:
        kind: Any = type(node)
        if kind is gast.Name:
            return leaf(node, refer)
        if kind in SCOPES or kind is gast.Constant:
            return f"clone({refer(node)})"  # copied as it is (no name substituted inside)
        state = node.__dict__
        if len(state) > plain_size(kind):
            return None
        parts = []
        for field in node_fields(kind):
            value = state.get(field)
            if type(value) is list:
                items = []
                for item in value:
                    if isinstance(item, gast.AST):
                        text = expression(item)
                        if text is None:
                            return None
                        items.append(text)
                    else:
                        items.append(refer(item))
                parts.append(f"{field!r}: [{', '.join(items)}]")
            elif isinstance(value, gast.AST):
                text = expression(value)
                if text is None:
                    return None
                parts.append(f"{field!r}: {text}")
        return f"make({refer(kind)}, {{**{refer(state)}, {', '.join(parts)}}})"

    body = expression(template)
    if body is None:
        return None
    namespace = {**(helpers or {}), "K": constants, "make": _make, "clone": clone}
    source = f"def build({parameters}):\n    return {body}\n"
    exec(compile(source, "<template>", "exec"), namespace)
    build: Callable = namespace["build"]
    return build


def _make(kind: Any, state: dict) -> gast.AST:
    node = kind.__new__(kind)
    node.__dict__ = state
    return node


@functools.cache
def plain_size(kind: Any) -> int:
    """How many entries the ``__dict__`` of a node of ``kind`` has when nothing is attached."""
    return len(kind._fields) + len(kind._attributes)
