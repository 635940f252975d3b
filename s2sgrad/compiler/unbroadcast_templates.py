"""A rule's template without the ``unbroadcast`` calls a call site does not need.

``y = x * 2`` keeps x's shape, so the backward sweep drops ``unbroadcast(dy * 2, x)``'s
call (``reverse/rules.py``). Where the rule is inlined by a plan (``inline.py``), the
calls are dropped from the template once per rule and positions of that name, instead of
being built at every such statement and walked away: the copies are the same nodes.

Example::

    # _multiply's ``unbroadcast(g * x2, x1)`` with the name at position 0 (``x * 2``)
    stripped_template(part, strips)  # g * x2
"""

from __future__ import annotations

from collections.abc import Callable

import gast

from s2sgrad.compiler.syntax import SCOPES, child_fields, clone

__all__ = ["stripped_template"]


def stripped_template(
    template: gast.expr, strips: Callable[[gast.Call], bool]
) -> tuple[gast.expr, bool] | None:
    """A copy of ``template`` with each call that ``strips`` says yes of replaced by its
    first argument, as ``reverse/rules.without_unbroadcasts`` replaces them in a copy
    made of it (outside in, then inside what replaced them); and whether any was. None
    where a function or lambda is inside (its names are not the call site's)."""
    copy = clone(template)
    if any(isinstance(node, SCOPES) for node in gast.walk(copy)):
        return None
    changed = [False]
    return _stripped(copy, strips, changed), changed[0]


def _stripped(node: gast.AST, strips, changed: list[bool]) -> gast.AST:
    kind = type(node)
    if kind is gast.Name or kind is gast.Constant:
        return node
    if kind is gast.Call and strips(node):
        changed[0] = True
        return _stripped(node.args[0], strips, changed)
    for field in child_fields(kind):
        value = getattr(node, field, None)
        if isinstance(value, gast.AST):
            setattr(node, field, _stripped(value, strips, changed))
        elif isinstance(value, list):
            value[:] = [
                _stripped(v, strips, changed) if isinstance(v, gast.AST) else v for v in value
            ]
    return node
