"""What Python evaluates before a comprehension that is lowered out of its statement.

A comprehension, ``map(...)``, ``functools.reduce(...)`` or ``dict(zip(...))`` inside a
statement becomes a loop before the statement (:mod:`.comprehensions`), so it runs before
everything else the statement evaluates. Python runs what comes before it in the statement
first: ``y = rng.normal() * x + sum([rng.normal() * v for v in xs])`` draws the first
number before the list's. The two orders compute the same unless one side may change what
the other sees: a draw, ``next``, a helper of the user's that changes state (anything
:func:`~s2sgrad.compiler.passes.chained_middles.repeatable` does not call repeatable). Such
a statement is refused, naming it; written as two statements it is differentiated. A part
on a side of a conditional expression or of ``and``/``or`` that Python may not run becomes
``if`` statements first (:func:`conditionals_first`), so that it runs only when Python
runs it; the passes that inline bodies before a statement ask :func:`first_reordered_call`.

Example::

    refuse_reordered_effects(statement, loops.moves_out, parsed.resolve, parsed.location)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

import gast

from s2sgrad.compiler.passes.chained_middles import repeatable
from s2sgrad.compiler.syntax import COMPREHENSIONS, assign, load, located, replace_node, walk
from s2sgrad.errors import UnsupportedError

__all__ = [
    "conditionals_first",
    "first_reordered_call",
    "may_have_effects",
    "refuse_reordered_effects",
]


def refuse_reordered_effects(
    statement: gast.stmt,
    lowered: Callable[[gast.AST], bool],
    resolve,
    locate: Callable[[gast.AST], str] | None,
) -> None:
    """Refuse ``statement`` when a call Python evaluates before a part that ``lowered``
    moves out of it (a comprehension, ``map``, ``reduce``) may change what that part
    computes, or the part may change what the call computes."""
    before: list[gast.Call] = []
    for node in _in_python_order(statement, lowered):
        if not lowered(node):
            if type(node) is gast.Call:
                before.append(node)
            continue
        if not before:
            continue
        effects_inside = may_have_effects([node], resolve)
        for call in before:
            if effects_inside or not repeatable(call, resolve):
                where = f"{locate(statement)}: " if locate is not None else ""
                raise UnsupportedError(
                    f"{where}this statement calls {gast.unparse(call.func)}(...) before the "
                    "comprehension (or map, reduce) in it, and one of them may change what "
                    "the other computes (it draws random numbers, advances an iterator or "
                    "changes state); source transformation computes the comprehension first. "
                    "Compute the comprehension in a statement of its own before this one"
                )


# what they call (their function arguments) is looked at instead of them
_STRUCTURAL = frozenset(
    [zip, enumerate, reversed, map, filter, iter, sorted, list, tuple, dict, range]
    + [functools.partial, functools.reduce]
)
_APPLYING = (map, filter, functools.reduce, functools.partial)  # their first argument


def conditionals_first(
    statement: gast.stmt, moves_out: Callable[[gast.AST], bool], names, resolve, locate
) -> list[gast.stmt]:
    """``if`` statements computing, before ``statement``, each conditional expression or
    ``and``/``or`` of it whose lazily evaluated part holds something lowered out of the
    statement (``noise = np.stack([...]) if train else 0.0``): lowered from the statement,
    that part would run whether or not Python runs it. Each is replaced in the statement
    by the name it assigns. Refused where what the statement runs before it may change
    what it computes, or the other way round (``first_reordered_call``).

    Example::

        # y = x * (np.stack([f(w) for w in ws]) if ws else 1.0)   becomes
        # if ws: chosen = np.stack([f(w) for w in ws])
        # else: chosen = 1.0
        # y = x * chosen
    """
    made: list[gast.stmt] = []
    while True:
        found = next(
            (n for n in _in_python_order(statement, moves_out) if _lazy_part_moves(n, moves_out)),
            None,
        )
        if found is None:
            return made
        effects = may_have_effects([found], resolve)
        order = list(_in_python_order(statement, lambda n, f=found: n is f or moves_out(n)))
        earlier = [n for n in order[: order.index(found)] if moves_out(n)]  # moved too, later
        crossed = bool(earlier) and (effects or may_have_effects(earlier, resolve))
        if crossed or first_reordered_call(statement, found, resolve, effects) is not None:
            where = f"{locate(statement)}: " if locate is not None else ""
            raise UnsupportedError(
                f"{where}a comprehension (or map, reduce) on one side of a conditional "
                "expression or and/or is computed before this statement, where what the "
                "statement runs first may change it (a draw, an iterator, a change of "
                "state); write the condition as an if statement before this one"
            )
        name = names.fresh("chosen")
        made.extend(located(s, statement) for s in _as_statements(found, name))
        replace_node(statement, found, load(name))


def _lazy_part_moves(node: gast.AST, moves_out) -> bool:
    if type(node) is gast.IfExp:
        lazy = [node.body, node.orelse]
    elif type(node) is gast.BoolOp:
        lazy = node.values[1:]
    else:
        return False
    return any(moves_out(n) for part in lazy for n in walk(part))


def _as_statements(node: gast.expr, name: str) -> list[gast.stmt]:
    """``name = node`` as ``if`` statements evaluating each part only when Python does."""
    if type(node) is gast.IfExp:
        branch = gast.If(
            test=node.test,
            body=[assign(name, node.body, like=node)],
            orelse=[assign(name, node.orelse, like=node)],
        )
        return [branch]
    first, *rest = node.values  # a and b: b when a is true; a or b: b when a is false
    inner: list[gast.stmt] = []
    for value in reversed(rest):
        test: gast.expr = load(name)
        if type(node.op) is gast.Or:
            test = gast.UnaryOp(op=gast.Not(), operand=test)
        inner = [gast.If(test=test, body=[assign(name, value, like=node), *inner], orelse=[])]
    return [assign(name, first, like=node), *inner]


def first_reordered_call(
    statement: gast.stmt,
    moved: gast.AST,
    resolve,
    effects_inside: bool,
    plain: Callable[[gast.Call], bool] = lambda call: False,
) -> gast.Call | None:
    """The first call Python runs before ``moved`` in ``statement`` that running ``moved``
    before the statement would put after it, where that changes what is computed (the
    call may draw or change state, or ``effects_inside`` says ``moved`` may); else None.
    ``plain(call)``: calls the caller knows change nothing (a local function's own).

    Example::

        first_reordered_call(statement, generator_call, resolve, True)  # rng.normal() ...
    """
    before: list[gast.Call] = []
    for node in _in_python_order(statement, lambda n: n is moved):
        if node is moved:
            changing = (c for c in before if not plain(c) and not repeatable(c, resolve))
            return before[0] if effects_inside and before else next(changing, None)
        if type(node) is gast.Call:
            before.append(node)
    return None


def may_have_effects(nodes: list[gast.AST], resolve) -> bool:
    """Whether running ``nodes`` (a comprehension, ``map``, ``reduce``, a body of
    statements ...) may draw, advance an iterator or change state: a call in them, or a
    function they apply, not repeatable.

    Example::

        may_have_effects([parse_expression("[rng.normal() for _ in xs]")], resolve)  # True
    """
    for call in (n for node in nodes for n in walk(node) if type(n) is gast.Call):
        named = type(call.func) in (gast.Name, gast.Attribute) and resolve is not None
        target = resolve(call.func) if named else None
        if not any(target is s for s in _STRUCTURAL):
            if not repeatable(call, resolve):
                return True
            continue
        applied = [k.value for k in call.keywords if k.arg == "key"]
        if call.args and any(target is f for f in _APPLYING):
            applied.append(call.args[0])
        for function in applied:  # a lambda's own calls are walked
            plain = type(function) in (gast.Name, gast.Attribute)
            if plain and not repeatable(gast.Call(func=function, args=[], keywords=[]), resolve):
                return True
    return False


def _in_python_order(statement: gast.stmt, lowered) -> Iterator[gast.AST]:
    """The nodes of ``statement``'s header, each after the nodes it evaluates first, in
    the order Python evaluates them; a lowered part, a comprehension or a lambda is one
    node (what runs inside it runs when it does)."""
    if type(statement) is gast.Assign:
        roots = [statement.value, *statement.targets]
    elif type(statement) is gast.For:
        roots = [statement.iter]
    elif type(statement) in (gast.AugAssign, gast.AnnAssign):
        roots = [statement.target, statement.value]
    else:
        roots = [
            value
            for field, value in gast.iter_fields(statement)
            if field not in ("body", "orelse", "finalbody", "handlers")
        ]
    for root in roots:
        for node in root if isinstance(root, list) else [root]:
            if isinstance(node, gast.AST):
                yield from _post_order(node, lowered)


def _post_order(node: gast.AST, lowered) -> Iterator[gast.AST]:
    if type(node) in COMPREHENSIONS or type(node) is gast.Lambda or lowered(node):
        yield node
        return
    if type(node) is gast.Dict:  # key, value, key, value ...
        children: list = [c for pair in zip(node.keys, node.values) for c in pair]
    else:
        children = [value for _, value in gast.iter_fields(node)]
    for child in children:
        for item in child if isinstance(child, list) else [child]:
            if isinstance(item, gast.AST):
                yield from _post_order(item, lowered)
    yield node
