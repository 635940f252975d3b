"""What each statement reads and writes, computed in one walk and kept until it changes.

The optimiser asks the same questions about the same statements many times over its
fixed-point iterations, while only a few statements change between two questions. A
:class:`FactsCache` answers from one walk per version of a statement. What keeps it right:
whatever changes a statement calls :meth:`FactsCache.forget` for it, and
:func:`rename_reads` and :func:`replace_reads` do so for every statement they walk through
(the statement rewritten and those nested in it), and a loop or branch is forgotten
once its blocks are optimised.

Example::

    cache = FactsCache()
    facts = cache.of(parse("y = a + b").body[0])
    facts.reads, facts.writes  # ({'a', 'b'}, {'y'})
"""

from __future__ import annotations

import gast

from s2sgrad.syntax import (
    COMMENT_MARK,
    MUTATING_METHODS,
    SCOPES,
    clone,
    names_written,
    node_fields,
    string_statement,
)

__all__ = [
    "Facts",
    "FactsCache",
    "rename_reads",
    "replace_reads",
    "simple_assignment",
]

# scopes in which a folded value could be read later than where it was written
_OWN_SCOPE = (gast.Lambda, gast.ListComp, gast.GeneratorExp, gast.SetComp)


def _push_children(node, stack: list) -> None:
    state = node.__dict__
    for field in node_fields(type(node)):
        value = state.get(field)
        if type(value) is list:
            stack += value
        elif value is not None:
            stack.append(value)


class Facts:
    """One statement's names, as of the walk that made this record.

    ``loads``, ``stores`` and ``others`` list every ``Name`` by context (``others`` holds
    ``Del`` and ``Param``), with repeats, nested functions included; ``reads``,
    ``writes`` and ``modified`` are what :func:`s2sgrad.syntax.names_read`,
    ``names_written`` and ``names_modified`` return for the statement. ``trail``, when
    given, receives every node walked that could be changed in place.
    """

    __slots__ = (
        "statement",
        "loads",
        "stores",
        "others",
        "reads",
        "writes",
        "modified",
        "assigned",
        "comment",
        "own_scope",
        "folded",
        "pure_value",
        "value_size",
    )

    def __init__(self, statement: gast.stmt, trail: list | None = None):
        self.statement = statement
        loads: list[str] = []
        stores: list[str] = []
        others: list[str] = []
        modified: set[str] = set()
        has_scope = own_scope = foldable = False
        Name, Load, Store, Constant = gast.Name, gast.Load, gast.Store, gast.Constant
        stack = [statement]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            kind = type(node)
            if kind is gast.BinOp:
                left, right = type(node.left), type(node.right)
                foldable = foldable or left is Constant or right is Constant
                # c * x + c * x, which may become (2 * c) * x
                foldable = foldable or (left is right and type(node.op) is gast.Add)
            elif kind is gast.UnaryOp:
                foldable = foldable or type(node.op) is gast.USub
            elif kind is gast.Subscript or kind is gast.Attribute:
                if kind is gast.Subscript and type(node.value) is gast.Tuple:
                    foldable = True
                if type(node.ctx) is Store:
                    base = node.value
                    while isinstance(base, (gast.Subscript, gast.Attribute)):
                        base = base.value
                    if isinstance(base, Name):
                        modified.add(base.id)
            elif kind is gast.Call:
                func = node.func
                if (
                    isinstance(func, gast.Attribute)
                    and isinstance(func.value, Name)
                    and func.attr in MUTATING_METHODS
                ):
                    modified.add(func.value.id)
            elif kind is gast.Compare:
                foldable = foldable or type(node.left) is Constant
            elif kind in SCOPES:
                has_scope = has_scope or node is not statement
                own_scope = own_scope or kind is gast.Lambda
            elif kind in _OWN_SCOPE:
                own_scope = True
            plan = node_fields(kind)
            if not plan:
                continue  # a literal in a list, or a node without children
            if trail is not None:
                trail.append(node)
            state = node.__dict__
            for field in plan:
                value = state.get(field)
                for child in value if type(value) is list else (value,):
                    # names and literals are handled here rather than pushed: most nodes are
                    kind = type(child)
                    if kind is Name:
                        ctx = type(child.ctx)
                        (loads if ctx is Load else stores if ctx is Store else others).append(
                            child.id
                        )
                        if trail is not None:
                            trail.append(child)
                        if child.annotation is not None:
                            push(child.annotation)
                    elif kind is not Constant and child is not None:
                        push(child)
        self.loads, self.stores, self.others = loads, stores, others
        self.reads = set(loads)
        # stores inside nested functions are not the statement's own: walk again to tell
        writes = names_written(statement) if has_scope else set(stores)
        if isinstance(statement, (gast.FunctionDef, gast.ClassDef)) and not has_scope:
            writes.add(statement.name)
        self.writes = writes
        self.modified = modified | writes
        self.assigned = simple_assignment(statement)
        self.comment = _is_comment(statement)
        self.own_scope = own_scope
        # The constant folder has nothing to do in this version: set when it found nothing,
        # and from the start when nothing it simplifies is there (a negation, arithmetic
        # with a literal, a sum of two alike terms, a tuple indexed, a literal compared).
        self.folded = not foldable
        self.pure_value = None  # whether the assigned value is free of side effects
        self.value_size = None  # how many nodes the assigned value has


class FactsCache:
    """:class:`Facts` per statement, as it is now: each record is kept until the statement
    is forgotten, and every rewrite forgets what it changes.

    With ``enabled`` false :meth:`of` walks the statement again every time (for bodies in
    which two statements share a node, so that changing one silently changes the other).
    """

    def __init__(self, enabled: bool = True):
        self.table: dict[int, Facts] = {}
        self.enabled = enabled

    def of(self, statement: gast.stmt) -> Facts:
        facts = self.table.get(id(statement))
        if facts is not None and facts.statement is statement:
            return facts
        facts = Facts(statement)
        if self.enabled:
            self.table[id(statement)] = facts
        return facts

    def prime(self, body: list[gast.stmt]) -> None:
        """Walk each statement of ``body``; turn :meth:`of`'s cache off if two share a node."""
        trail: list[gast.AST] = []
        for statement in body:
            self.table[id(statement)] = Facts(statement, trail)
        if len(set(map(id, trail))) != len(trail):
            self.enabled = False
            self.table.clear()

    def known(self, statement: gast.stmt) -> Facts | None:
        """The current record kept for ``statement``, if there is one (without making one)."""
        facts = self.table.get(id(statement))
        return facts if facts is not None and facts.statement is statement else None

    def forget(self, statement: gast.stmt) -> None:
        """``statement`` changed: :meth:`of` must walk it again."""
        self.table.pop(id(statement), None)


def _is_comment(statement) -> bool:
    text = string_statement(statement)
    return text is not None and text.startswith(COMMENT_MARK)


def simple_assignment(statement) -> str | None:
    """``name`` for the statement ``name = value``, else None."""
    if (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
    ):
        return statement.targets[0].id
    return None


def rename_reads(statement: gast.stmt, old: str, new: str, cache: FactsCache) -> None:
    """Make every read of ``old`` in ``statement`` a read of ``new`` (nested functions too)."""
    stack = [statement]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is gast.Name:
            if node.id == old and type(node.ctx) is gast.Load:
                node.id = new
            if node.annotation is None:
                continue
        elif isinstance(node, gast.stmt):
            cache.forget(node)
        if node_fields(type(node)):
            _push_children(node, stack)


def replace_reads(
    statement: gast.stmt, name: str, value: gast.expr, cache: FactsCache, move: bool = False
) -> None:
    """Replace every read of ``name`` in ``statement`` by a copy of ``value``.

    With ``move`` the first read gets ``value`` itself (for a value about to be dropped
    from where it was).

    Example::

        replace_reads(parse("y = t * t").body[0], "t", parse_expression("a + 1"), cache)
        # y = (a + 1) * (a + 1)
    """
    stack = [statement]
    while stack:
        node = stack.pop()
        if type(node) is gast.Name:
            continue  # like a NodeTransformer's visit_Name: annotations are left alone
        if isinstance(node, gast.stmt):
            cache.forget(node)
        state = node.__dict__
        for field in node_fields(type(node)):
            child = state.get(field)
            if type(child) is list:
                for position, item in enumerate(child):
                    if _is_read_of(item, name):
                        child[position] = value if move else clone(value)
                        move = False
                    elif isinstance(item, gast.AST):
                        stack.append(item)
            elif _is_read_of(child, name):
                setattr(node, field, value if move else clone(value))
                move = False
            elif isinstance(child, gast.AST):
                stack.append(child)


def _is_read_of(node, name: str) -> bool:
    return type(node) is gast.Name and node.id == name and isinstance(node.ctx, gast.Load)
