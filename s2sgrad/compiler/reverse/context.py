"""What every part of reverse mode reads: the function, its activity, its names, the facts.

One :class:`Context` is made per function; the sweeps (``forward_sweep``,
``backward_sweep``) and the code they share (``saves``, ``cotangents``, ``calls``,
``adjoints``, ``rules``) read it and write no state into it, except the loop counters and
names the forward sweep adds (``in_loops``).
"""

from __future__ import annotations

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.frontend import ParsedFunction
from s2sgrad.compiler.inline import Namespace
from s2sgrad.compiler.passes.activity import Activity
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.reverse.facts import (
    entries_read,
    integer_names,
    list_names,
    maybe_structured,
    mutated_names,
    names_written_in_loops,
    write_counts,
)
from s2sgrad.compiler.reverse.nodes import name_load
from s2sgrad.compiler.reverse.numeric import numeric_names
from s2sgrad.compiler.steps import Operations
from s2sgrad.compiler.syntax import (
    names_written,
    nested_statements,
    parameter_names,
    walk,
)

__all__ = ["Context", "located"]


_LITERALS = (gast.Tuple, gast.List, gast.Dict)  # what operations.classify calls a PACK


class Context:
    """The function being differentiated and what is known about it.

    Example::

        context = Context(parsed, ["x"], activity, names, namespace, local_names)
        context.study(statements, body)
        context.active("t1")  # True: t1 depends on x and the output on t1
    """

    def __init__(
        self,
        parsed: ParsedFunction,
        wrt: list[str],
        activity: Activity,
        names: NameGenerator,
        namespace: Namespace,
        local_names: set[str],
        containers=frozenset(),
        aux: bool = False,
        dynamic: bool = True,
        classified: dict[int, tuple] | None = None,
    ):
        self.parsed = parsed
        self.wrt = wrt
        self.activity = activity
        # what ``active`` does, bound once: it is asked per name of every statement
        self.active = activity.is_active  # type: ignore[method-assign]
        self.names = names
        self.namespace = namespace
        self.local_names = local_names
        self.containers = set(containers)  # parameters that hold lists, tuples or dicts
        self.aux = aux  # the function returns (value, auxiliary data)
        self.dynamic = dynamic  # False (mode="s2s"): calls resolved at run time never use the tape
        self.np = namespace.bind("np", np)
        # each statement classified once, by the activity analysis where it was
        self.operations = Operations(parsed, local_names, classified)
        self.parameters = parameter_names(parsed.node, starred=False)  # what callers pass
        written = parsed.written  # kept when the parsed tree was left an outline
        self.user_names = self.parameters.union(
            names_written(parsed.node) if written is None else written
        )

    def study(self, statements: list[gast.stmt], body: list[gast.stmt]) -> None:
        """Read the facts the sweeps consult off ``statements`` (``body`` without its return)."""
        # every statement, nested ones too, listed once for the facts that read them all
        self.nested = nested = list(nested_statements(statements))
        self.writes = write_counts(statements)
        self.in_loops = names_written_in_loops(statements, nested)
        self.mutated = mutated_names(statements, nested)
        self.lists = list_names(statements, nested)
        # read only by the adjoints of item writes (y[i] = v) and of literals ((a, b))
        item_writes = literals = False
        self.stores_attributes = False  # obj.h = v anywhere: no record objects (see calls)
        for s in nested:  # one loop for all three
            if type(s) is gast.Assign:
                item_writes = item_writes or type(s.targets[0]) is gast.Subscript
                literals = literals or type(s.value) in _LITERALS
                self.stores_attributes |= type(s.targets[0]) is gast.Attribute
        self.integers = integer_names(statements, nested) if item_writes else set()
        self.structured = maybe_structured(
            statements, self.containers | self.lists, self.parameters, self.operations, nested
        )
        self.entries_read = entries_read(body) if literals else {}
        self.numeric = numeric_names(  # never a list or tuple: x * 2 scales, keeps x's shape
            statements,
            self.parameters,
            self.containers,
            self.parsed.resolve,
            self.user_names,
            nested,
        )

    def helper(self, name: str) -> gast.Name:
        """A runtime helper, bound in the generated module's namespace."""
        function = getattr(runtime, name)
        if self.namespace.objects.get(name) is function:  # bound so before: bind's answer
            return name_load(name)
        return name_load(self.namespace.bind(name, function))

    def active(self, name: str) -> bool:
        """Whether ``name`` is differentiated and useful to the output (``__init__``
        binds the activity's own test in its place)."""
        return self.activity.is_active(name)

    def is_active_expression(self, node: gast.expr) -> bool:
        return any(isinstance(n, gast.Name) and self.active(n.id) for n in walk(node))

    def is_varied_expression(self, node: gast.expr) -> bool:
        """Whether ``node`` depends on a differentiated argument (useful to the output or
        not: what reads it back from an attribute is out of sight)."""
        return any(
            isinstance(n, gast.Name) and (self.active(n.id) or n.id in self.activity.varied)
            for n in walk(node)
        )


def located(statement: gast.stmt, like: gast.AST) -> gast.stmt:
    """``statement`` with every node on ``like``'s line: generated code under the user's."""
    if getattr(like, "lineno", None) is None:
        return statement
    for node in walk(statement):
        if "lineno" in getattr(node, "_attributes", ()):
            node.lineno = like.lineno
            node.col_offset = 0
            node.end_lineno = like.lineno
            node.end_col_offset = 0
    return statement
