"""Structure the jumps: one ``return`` at the end, ``break``/``continue`` as branches.

The reverse sweep replays the forward sweep's path backwards, and a path is easy to
replay when every statement either runs or is skipped by an ``if``:

* statements after ``if c: return/break/continue`` move into the ``else`` branch;
* a ``return v`` before the end becomes ``result = v`` (inside a loop also
  ``returned = True`` and ``break``), and what follows the loop runs under
  ``if not returned``; the function ends with ``return result``;
* a ``break``/``continue`` nested deeper sets a flag that guards the rest of the body.

Once a loop's body is structured, its jumps wait for the end of the iteration: a
``continue`` goes (what follows it is guarded already) and a ``break`` sets a flag that
``if broke: break`` at the end of the body reads. So every iteration runs the body to its
end, and the values the forward sweep pushes there (a guard's test among them) are pushed
on every iteration the backward sweep replays. Loops still stop early; the reverse sweep
counts the iterations that ran.
"""

from __future__ import annotations

import functools

import gast

from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import assign, constant, load

__all__ = ["structure_jumps"]


def structure_jumps(node: gast.FunctionDef, names: NameGenerator) -> None:
    """Rewrite ``node``'s body so that it has exactly one ``return``, at the end.

    Example::

        # if c: return a      becomes      if c: result = a
        # return b                         else: result = b
        #                                  return result
    """
    lowering = _Jumps(names)
    if _only_final_return(node.body):
        *body, final = node.body
        node.body = [*lowering.block(body, loop=None), final]
        return
    body = lowering.block(node.body, loop=None)
    prologue = [assign(lowering.result, constant(None))]
    if lowering.returned_flag_used:
        prologue.append(assign(lowering.returned, constant(False)))
    node.body = [*prologue, *body, gast.Return(value=load(lowering.result))]


def _only_final_return(body: list[gast.stmt]) -> bool:
    returns = _returns(body)
    return len(returns) == 1 and isinstance(body[-1], gast.Return) and returns[0] is body[-1]


def _returns(body: list[gast.stmt]) -> list[gast.Return]:
    """The ``return`` statements in ``body`` and its blocks, not in nested functions.

    A ``return`` is a statement, so only lists of statements (and of ``except`` and
    ``case`` clauses, which hold statements) are searched, never expressions.
    """
    found = []
    stack = list(body)
    while stack:
        node = stack.pop()
        if type(node) is gast.Return:
            found.append(node)
        elif not isinstance(node, _SCOPES):
            for value in node.__dict__.values():
                if type(value) is list and value and isinstance(value[0], _HOLDS_STATEMENTS):
                    stack.extend(value)
    return found


_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)
_HOLDS_STATEMENTS = (gast.stmt, gast.excepthandler, gast.match_case)


def _contains(statements: list[gast.stmt], kinds, through_loops: bool) -> bool:
    for statement in statements:
        if isinstance(statement, kinds):
            return True
        if isinstance(statement, (gast.For, gast.While)) and not through_loops:
            if _contains(statement.orelse, kinds, through_loops):
                return True
            continue
        if isinstance(statement, (gast.FunctionDef, gast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and _contains(inner, kinds, through_loops):
                return True
    return False


class _Jumps:
    def __init__(self, names: NameGenerator):
        self.names = names
        self.returned_flag_used = False
        # {id(if): (if, whether both its branches end in a jump)}, for ifs not yet
        # structured: their blocks change only when block() reaches them, so the answer
        # found while asking about the blocks around holds until then (asking again from
        # every level made 90 nested ifs cost 90² steps)
        self._jumping_ifs: dict[int, tuple[gast.If, bool]] = {}
        # {id(statement): (statement, {(kinds, through_loops): whether it holds one})},
        # for statements not yet structured, as above: nested ifs each asked whether they
        # may jump made 80 nested ifs cost 80² steps
        self._held: dict[int, tuple[gast.stmt, dict]] = {}

    @functools.cached_property
    def result(self) -> str:
        return self.names.claim("result")

    @functools.cached_property
    def returned(self) -> str:
        return self.names.claim("returned")

    def block(self, statements: list[gast.stmt], loop: dict | None) -> list[gast.stmt]:
        result: list[gast.stmt] = []
        for index, statement in enumerate(statements):
            if isinstance(statement, gast.Return):
                value = statement.value if statement.value is not None else constant(None)
                result.append(assign(self.result, value, like=statement))
                if loop is not None:
                    self.returned_flag_used = True
                    result.append(assign(self.returned, constant(True), like=statement))
                    result.append(gast.Break())
                return result
            if isinstance(statement, (gast.Break, gast.Continue)):
                result.append(statement)
                return result
            if isinstance(statement, gast.If):
                rest = statements[index + 1 :]  # copied here only: straight-line code has many
                jumps_in_body = self.always_jumps(statement.body)
                jumps_in_else = self.always_jumps(statement.orelse)
                # asked before the blocks are structured: a return becomes `result = v`
                may_jump = self.may_jump(statement, loop)
                self._jumping_ifs.pop(id(statement), None)  # its blocks change now
                self._held.pop(id(statement), None)
                if jumps_in_body and not jumps_in_else:
                    statement.orelse = statement.orelse + rest
                    rest = []
                elif jumps_in_else and not jumps_in_body:
                    statement.body = statement.body + rest
                    rest = []
                statement.body = self.block(statement.body, loop) or [gast.Pass()]
                statement.orelse = self.block(statement.orelse, loop)
                result.append(statement)
                if not rest:
                    return result
                if jumps_in_body and jumps_in_else:
                    return result  # what follows can never run
                if may_jump:
                    result.append(self.guard(statement, rest, loop))
                    return result
                continue
            if isinstance(statement, gast.With) and self.may_jump(statement, loop):
                # with np.errstate(...): return v — the return was kept, and with it the
                # user's value returned as the gradient (a continue, the rest of the body ran)
                rest = statements[index + 1 :]
                always = self.always_jumps(statement.body)
                may_jump = self.may_jump(statement, loop)
                self._held.pop(id(statement), None)
                statement.body = self.block(statement.body, loop) or [gast.Pass()]
                result.append(statement)
                if not rest or always:
                    return result
                if may_jump:
                    result.append(self.guard(statement, rest, loop))
                    return result
                continue
            if isinstance(statement, (gast.For, gast.While)):
                rest = statements[index + 1 :]
                body = statement.body
                returns_inside = any(self.holds(inner, gast.Return, True) for inner in body)
                self._held.pop(id(statement), None)
                inner_loop = {"flag": None}
                statement.body = self.block(statement.body, inner_loop) or [gast.Pass()]
                if inner_loop["flag"] is not None:
                    statement.body.insert(0, assign(inner_loop["flag"], constant(False)))
                self.defer_jumps(statement)
                statement.orelse = self.block(statement.orelse, loop)
                result.append(statement)
                if returns_inside:
                    self.returned_flag_used = True
                    if loop is not None:
                        leave = gast.If(test=load(self.returned), body=[gast.Break()], orelse=[])
                        result.append(leave)
                    if rest:
                        result.append(self.not_returned(self.block(rest, loop)))
                    return result
                continue
            result.append(statement)
        return result

    def always_jumps(self, statements: list[gast.stmt]) -> bool:
        """Whether ``statements`` end in a jump on every path."""
        if not statements:
            return False
        last = statements[-1]
        if isinstance(last, (gast.Return, gast.Break, gast.Continue)):
            return True
        if not isinstance(last, gast.If):
            return False
        known = self._jumping_ifs.get(id(last))
        if known is not None and known[0] is last:
            return known[1]
        verdict = self.always_jumps(last.body) and self.always_jumps(last.orelse)
        self._jumping_ifs[id(last)] = (last, verdict)
        return verdict

    def defer_jumps(self, loop: gast.For | gast.While) -> None:
        """Drop the ``continue``s of ``loop``'s structured body and move its ``break``s to
        the end of the body, behind a flag.

        Example::

            # for i in r:                 becomes      for i in r:
            #     if c: break                              broke = False
            #     else: a = g(a)                           if c: broke = True
            #                                              else: a = g(a)
            #                                              if broke: break
        """
        flag = self.names.claim("broke") if _contains(loop.body, gast.Break, False) else None
        loop.body = _without_jumps(loop.body, flag) or [gast.Pass()]
        if flag is not None:
            loop.body.insert(0, assign(flag, constant(False)))
            loop.body.append(gast.If(test=load(flag), body=[gast.Break()], orelse=[]))

    def may_jump(self, statement: gast.If | gast.With, loop: dict | None) -> bool:
        """Whether ``statement`` may leave the block: a ``return`` (in a loop inside it
        too), or in a loop a ``break`` or ``continue`` of that loop."""
        if self.holds(statement, gast.Return, through_loops=True):
            return True
        return loop is not None and self.holds(statement, (gast.Break, gast.Continue), False)

    def holds(self, statement: gast.stmt, kinds, through_loops: bool) -> bool:
        """Whether ``statement`` is or holds a statement of ``kinds`` (in the loops inside
        it too when ``through_loops``; never in nested functions or classes), for a
        statement not yet structured: answered once per statement."""
        if isinstance(statement, kinds):
            return True
        if isinstance(statement, (gast.FunctionDef, gast.ClassDef)):
            return False
        key = (kinds, through_loops)
        known = self._held.get(id(statement))
        if known is not None and known[0] is statement and key in known[1]:
            return known[1][key]
        if isinstance(statement, (gast.For, gast.While)) and not through_loops:
            fields: tuple[str, ...] = ("orelse",)
        else:
            fields = ("body", "orelse", "finalbody", "handlers")
        verdict = any(
            self.holds(inner, kinds, through_loops)
            for field in fields
            if isinstance(block := getattr(statement, field, None), list)
            for inner in block
        )
        if known is None or known[0] is not statement:
            known = self._held[id(statement)] = (statement, {})
        known[1][key] = verdict
        return verdict

    def guard(self, statement: gast.If, rest: list[gast.stmt], loop: dict | None) -> gast.stmt:
        """Run ``rest`` only when ``statement`` did not jump away."""
        if loop is None:  # only a return can leave a function-level block
            self.returned_flag_used = True
            self._flag_returns([statement], self.returned)
            return self.not_returned(self.block(rest, loop))
        if loop["flag"] is None:
            loop["flag"] = self.names.claim("jumped")
        flag = loop["flag"]
        self._flag_jumps([statement], flag)
        return gast.If(
            test=gast.UnaryOp(op=gast.Not(), operand=load(flag)),
            body=self.block(rest, loop) or [gast.Pass()],
            orelse=[],
        )

    def not_returned(self, tail: list[gast.stmt]) -> gast.stmt:
        return gast.If(
            test=gast.UnaryOp(op=gast.Not(), operand=load(self.returned)),
            body=tail or [gast.Pass()],
            orelse=[],
        )

    def _flag_returns(self, statements, flag) -> None:
        for statement in statements:
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if not isinstance(inner, list) or isinstance(statement, gast.FunctionDef):
                    continue
                for position, child in enumerate(list(inner)):
                    if _is_result_assignment(child, self.result):
                        inner.insert(position + 1, assign(flag, constant(True)))
                        break
                self._flag_returns(inner, flag)

    def _flag_jumps(self, statements, flag) -> None:
        for statement in statements:
            if isinstance(statement, (gast.For, gast.While, gast.FunctionDef)):
                continue
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if not isinstance(inner, list):
                    continue
                position = 0
                while position < len(inner):
                    child = inner[position]
                    if isinstance(child, (gast.Break, gast.Continue)):
                        inner.insert(position, assign(flag, constant(True)))
                        position += 1
                    position += 1
                self._flag_jumps(inner, flag)


def _without_jumps(statements: list[gast.stmt], flag: str | None) -> list[gast.stmt]:
    """``statements`` with each ``continue`` dropped and each ``break`` replaced by
    ``flag = True``, not looking into nested loops (their jumps are their own)."""
    result = []
    for statement in statements:
        if isinstance(statement, gast.Continue):
            continue
        if isinstance(statement, gast.Break):
            result.append(assign(flag, constant(True), like=statement))
            continue
        if isinstance(statement, (gast.If, gast.With)):
            statement.body = _without_jumps(statement.body, flag) or [gast.Pass()]
        if isinstance(statement, gast.If):
            statement.orelse = _without_jumps(statement.orelse, flag)
        result.append(statement)
    return result


def _is_result_assignment(statement: gast.stmt, result: str) -> bool:
    return (
        isinstance(statement, gast.Assign)
        and isinstance(statement.targets[0], gast.Name)
        and statement.targets[0].id == result
    )
