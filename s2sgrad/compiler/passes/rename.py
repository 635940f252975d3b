"""Give each value of a variable assigned again in straight-line code its own name.

``x = np.sin(x)`` at the top level becomes ``x_1 = np.sin(x)`` (and later reads of ``x``
read ``x_1``), so the backward sweep can still read every earlier value without saving
it anywhere. Variables assigned inside loops or branches keep their names: the reverse
transformer saves their overwritten values on a stack instead.
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import names_written, walk

__all__ = ["rename_reassignments"]


def rename_reassignments(node: gast.FunctionDef, names: NameGenerator) -> None:
    """Rename top-level reassignments of ``node`` in place.

    Example::

        # def f(x): x = x * 2; return x   becomes   def f(x): x_1 = x * 2; return x_1
    """
    in_blocks: set[str] = set()
    for statement in node.body:
        if not isinstance(statement, gast.Assign):
            in_blocks |= names_written(statement)
    defined = {a.id for a in node.args.args + node.args.kwonlyargs}
    if node.args.vararg:
        defined.add(node.args.vararg.id)
    if node.args.kwarg:
        defined.add(node.args.kwarg.id)
    current: dict[str, str] = {}
    for statement in node.body:
        _rename_reads(statement, current)
        if not isinstance(statement, gast.Assign):
            continue
        written = statement.targets[0]
        for target in (
            [written]
            if type(written) is gast.Name and written.annotation is None
            else walk(written)
        ):
            if not (isinstance(target, gast.Name) and isinstance(target.ctx, gast.Store)):
                continue
            original = target.id
            if original in defined and original not in in_blocks:
                target.id = names.version(original)
                current[original] = target.id
            defined.add(original)


def _rename_reads(statement: gast.stmt, current: dict[str, str]) -> None:
    if not current:
        return
    for child in walk(statement):
        if isinstance(child, gast.Name) and isinstance(child.ctx, gast.Load):
            child.id = current.get(child.id, child.id)
