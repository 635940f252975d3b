"""The cotangents of the backward sweep: their names, which exist yet, which are private.

The first contribution to a variable's cotangent is assigned, later ones are added
(``add_cotangents`` for values that may be containers); a cotangent updated in place
(``dx[i] += g``) is first made a private, writable buffer (``owned``).
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.annotations import KEEP_NAME
from s2sgrad.compiler.reverse.context import Context
from s2sgrad.compiler.reverse.nodes import added, name_load
from s2sgrad.compiler.syntax import assign, call, clone, constant, load, store

__all__ = ["Cotangents"]


class Cotangents:
    """Which cotangents the backward sweep has defined so far, at the point it is writing.

    ``defined``: variables whose cotangent exists; ``owned``: cotangent names known to be
    private, writable buffers; ``counters``: the variables of the enclosing ``for … in
    range`` loops (an index made of them cannot repeat an element).

    Example::

        cotangents.contribute("x", load("g"), statement)  # [dx = g], then [dx = dx + g]
    """

    def __init__(self, context: Context):
        self.context = context
        self.names = context.names
        self.helper = context.helper
        self.active = context.active
        self.is_active_expression = context.is_active_expression
        self.adjoint_names: dict[str, str] = {}
        self.defined: set[str] = set()
        self.owned: set[str] = set()
        self.counters: set[str] = set()

    def adjoint(self, variable: str) -> str:
        name = self.adjoint_names.get(variable)
        if name is None:
            name = self.adjoint_names[variable] = self.names.adjoint(variable)
        return name

    def contribute(self, variable: str, value: gast.expr, like: gast.AST) -> list[gast.stmt]:
        name = self.adjoint(variable)
        if variable not in self.defined:
            self.defined.add(variable)
            self.owned.discard(name)
            if isinstance(value, gast.Name):
                self.owned.discard(value.id)
            first = _assign_at(name, value, like)
            # d<variable> stays visible (annotate's KEEP_NAME, set without its check)
            first.__dict__[KEEP_NAME] = variable in self.context.user_names
            return [first]
        if variable in self.context.structured:  # + of two cotangents must stay differentiable
            total: gast.expr = call(self.helper("add_cotangents"), [name_load(name), value])
        else:
            total = added(name_load(name), value)
            self.owned.add(name)
        return [_assign_at(name, total, like)]

    def distribute(self, argument: gast.expr, value: gast.expr, like) -> list[gast.stmt]:
        """Send ``value`` to the cotangents of the active names inside ``argument``."""
        if isinstance(argument, gast.Name):
            return self.contribute(argument.id, value, like) if self.active(argument.id) else []
        if isinstance(argument, (gast.Tuple, gast.List)):
            block = []
            if not isinstance(value, (gast.Tuple, gast.List, gast.Name)):
                holder = self.names.fresh("parts")
                block.append(assign(holder, value, like=like))
                value = load(holder)
            for index, element in enumerate(argument.elts):
                if not self.is_active_expression(element):
                    continue
                if isinstance(value, (gast.Tuple, gast.List)):
                    part = value.elts[index]
                else:
                    part = gast.Subscript(
                        value=clone(value), slice=constant(index), ctx=gast.Load()
                    )
                block.extend(self.distribute(element, part, like))
            return block
        return []

    def zeros_for(self, variables) -> list[gast.stmt]:
        result = []
        for variable in sorted(variables):
            name = self.adjoint(variable)
            result.append(assign(name, call(self.helper("zeros_like_value"), [load(variable)])))
            self.owned.add(name)
        return result

    def ensure_defined(self, variable: str) -> list[gast.stmt]:
        if variable in self.defined:
            return []
        self.defined.add(variable)
        return self.zeros_for([variable])

    def ensure_owned(self, variable: str) -> list[gast.stmt]:
        block = self.ensure_defined(variable)
        name = self.adjoint(variable)
        if name not in self.owned:
            block.append(assign(name, self.owned_copy(variable)))
            self.owned.add(name)
        return block

    def owned_copy(self, variable: str) -> gast.expr:
        """``owned(d<variable>)``; for a list the function makes, ``owned_items(...)``,
        which splits a rule's array cotangent into entries (``np.mean(losses)``)."""
        name = load(self.adjoint(variable))
        return call(
            self.helper("owned_items" if variable in self.context.lists else "owned"), [name]
        )


_STORE = store("_").ctx  # the context syntax.store gives every name


def _assign_at(name: str, value: gast.expr, like: gast.AST | None) -> gast.Assign:
    """``assign(name, value, like=like)``, made without the generic constructor and walk:
    every cotangent of a function is assigned here."""
    target = gast.Name.__new__(gast.Name)
    target.__dict__ = {"id": name, "ctx": _STORE, "annotation": None, "type_comment": None}
    node = gast.Assign.__new__(gast.Assign)
    line = getattr(like, "lineno", None)
    if line is None:
        node.__dict__ = {"targets": [target], "value": value, "type_comment": None}
        return node
    node.__dict__ = {
        "targets": [target],
        "value": value,
        "type_comment": None,
        "lineno": line,
        "col_offset": getattr(like, "col_offset", 0),
        "end_lineno": getattr(like, "end_lineno", line),
        "end_col_offset": getattr(like, "end_col_offset", 0),
    }
    return node
