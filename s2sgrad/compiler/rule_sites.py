"""A rule's template copied for one call site of the rule (see :mod:`inline`).

Its local variables renamed, its parameters replaced by copies of the call's arguments,
its global names bound in the generated namespace, builtins kept: the copy
``clone_rewriting`` with that substitution of names makes, built by code compiled for the
template (:mod:`template_builders`) once it has been copied often (by a walk before).

Example::

    copy = Site(renames, bound, rule.__globals__, namespace).instantiate(template)
"""

from __future__ import annotations

from typing import Any

import gast

from s2sgrad.compiler.namespace import Namespace
from s2sgrad.compiler.syntax import SCOPES, clone, clone_rewriting, node_fields
from s2sgrad.compiler.template_builders import plain_size, template_builder

__all__ = ["Site", "clone_atom", "bound_name"]


class Site:
    """A rule's template copied for one call site: its local variables renamed, its
    parameters replaced by copies of the call's arguments, its global names bound in the
    generated namespace (builtins kept). What ``clone_rewriting`` with a substitution of
    names does, without a callback per node: rules are inlined at every primitive of a
    function, so this is the compiler's most frequent copy."""

    def __init__(self, renames: dict, bound: dict, globals_: dict, namespace: Namespace):
        self.renames = renames
        self.bound = bound
        self.globals = globals_
        self.namespace = namespace

    def instantiate(self, node: gast.AST) -> gast.AST:
        build = template_builder(node)
        if build is not None:
            return build(self.name)
        if type(node) in SCOPES:  # a lambda rule: its own body is substituted
            return clone_rewriting(node, self.substitute, kinds=(gast.Name,))
        return self.copy(node)

    def name(self, node: gast.Name) -> gast.AST:
        """The copy of a name of the template: a copy of the argument bound to it, or the
        name renamed, bound in the namespace, or kept (a builtin)."""
        name = node.id
        if name in self.bound and name not in self.renames:
            return clone_atom(self.bound[name])
        if name in self.renames or name in self.globals:
            new = clone_atom(node)
            new.id = (
                self.renames[name]
                if name in self.renames
                else self.namespace.bind(name, self.globals[name])
            )
            return new
        return clone_atom(node)

    def substitute(self, node: gast.AST) -> gast.AST:
        if type(node) is not gast.Name:
            return node
        if node.id in self.renames:
            node.id = self.renames[node.id]
        elif node.id in self.bound:
            return clone(self.bound[node.id])
        elif node.id in self.globals:
            node.id = self.namespace.bind(node.id, self.globals[node.id])
        return node  # a builtin

    def copy(self, node: gast.AST) -> gast.AST:
        kind: Any = type(node)
        if kind is gast.Name:
            return self.name(node)
        if kind in SCOPES or kind is gast.Constant:
            return clone(node)  # a nested function is copied as it is
        state = node.__dict__
        if len(state) > plain_size(kind):  # attributes a pass attached
            return clone_rewriting(node, self.substitute, kinds=(gast.Name,))
        new = kind.__new__(kind)
        state = new.__dict__ = state.copy()
        copy = self.copy
        for field in node_fields(kind):
            value = state.get(field)
            if type(value) is list:
                state[field] = [copy(v) if isinstance(v, gast.AST) else v for v in value]
            elif isinstance(value, gast.AST):
                state[field] = copy(value)
        return new


_USED: dict[int, gast.AST] = {}  # the templates copied once (by id, kept: ids stay unique)


def _used_before(template: gast.AST) -> bool:
    """Whether ``template`` was copied before: its builder is compiled from the second copy
    on (compiling costs a few copies; most templates of a small function are used once)."""
    if _USED.get(id(template)) is template:
        return True
    _USED[id(template)] = template
    return False


def clone_atom(node: gast.AST) -> gast.AST:
    """``clone(node)``, faster for a plain name or literal (nothing below it to copy)."""
    kind: Any = type(node)
    state = node.__dict__
    size = _ATOM_SIZES.get(kind)
    if (
        size is not None
        and len(state) <= size
        and (kind is gast.Constant or state.get("annotation") is None)
    ):
        new = kind.__new__(kind)
        new.__dict__ = state.copy()
        return new
    return clone(node)


_ATOM_SIZES = {kind: plain_size(kind) for kind in (gast.Name, gast.Constant)}


def bound_name(node: gast.Name, namespace: Namespace, obj: Any) -> gast.Name:
    """A copy of the rule's global name ``node``, named as ``namespace`` binds ``obj``."""
    new = clone_atom(node)
    new.id = namespace.bind(node.id, obj)
    return new
