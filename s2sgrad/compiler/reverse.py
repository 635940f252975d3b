"""Reverse mode: the forward sweep and the backward sweep of a normalised function.

The forward sweep is the primal code, with calls to other user functions replaced by
calls to their own generated VJPs, and with a value pushed on a stack just before a
statement overwrites it, when the backward sweep will need it again. The backward sweep
visits the active statements in reverse and, for each, inlines the derivative rule of
what it computes, then pops what the statement overwrote. Branches are replayed with
the same test; loops run their ``range`` backwards (or, for ``while`` loops and loops
that ``break``, as many times as the forward sweep counted). The first contribution to
a cotangent is assigned, later ones are added.
"""

from __future__ import annotations

import functools
import operator
import types
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gast
import numpy as np

from s2sgrad import numpy_signatures, runtime
from s2sgrad.compiler.annotations import (
    KEEP_NAME,
    RANGE_LOOP,
    REPLAY,
    SAVE_INIT,
    STACK,
    SYNCED,
    annotate,
    annotation,
)
from s2sgrad.compiler.frontend import NOT_FOUND, ParsedFunction, parse_function
from s2sgrad.compiler.inline import Namespace, inline_rule
from s2sgrad.compiler.operations import (
    Operation,
    classify,
    index_expression,
    keeps_arguments_inside,
    refuse_differentiated_keywords,
)
from s2sgrad.compiler.passes.activity import Activity
from s2sgrad.compiler.passes.aliases import fresh_result, refuse_mutating_calls
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.steps import Operations, Pullback, Step, StepKind
from s2sgrad.compiler.syntax import (
    COMMENT_MARK,
    add_rule_names,
    assign,
    attribute,
    call,
    clone,
    comment,
    constant,
    item_target_base,
    load,
    method_receiver,
    names_modified,
    names_read,
    names_written,
    nested_statements,
    store,
    string_statement,
    walk,
)
from s2sgrad.errors import (
    NonDifferentiableError,
    S2SGradError,
    UnsupportedError,
    iterator_error,
)
from s2sgrad.rules import get_rule

__all__ = ["ReverseSweeps", "reverse_sweeps"]


@dataclass
class ReverseSweeps:
    """The pieces the pipeline assembles into a gradient or VJP function."""

    forward: list[gast.stmt]
    backward: list[gast.stmt]
    output: gast.expr  # the returned value(s) as atoms
    output_cotangent: str  # name the backward sweep reads the output's cotangent from
    adjoints: dict[str, str | None]  # wrt parameter → its cotangent's name (None: no path)


# (function, its differentiated parameters, the call, those of them given containers)
CalleeVJP = Callable[[Any, tuple[str, ...], gast.AST, frozenset], Any]


def reverse_sweeps(
    parsed: ParsedFunction,
    body: list[gast.stmt],
    wrt: list[str],
    activity: Activity,
    names: NameGenerator,
    namespace: Namespace,
    local_names: set[str],
    callee_vjp: CalleeVJP,
    containers: set[str] = frozenset(),
    aux: bool = False,
    dynamic: bool = True,
) -> ReverseSweeps:
    """Build the forward and backward sweeps of ``body`` differentiated wrt ``wrt``.

    ``callee_vjp(function, active_parameters, call_node, containers)`` returns the compiled
    VJP of a user function called with those parameters active (``containers``: those
    given a list, tuple or dict): ``f_vjp(*args)`` returns ``(value, saved)`` and
    ``f_vjp.backward(saved, g)`` the cotangents.
    """
    sweeps = _Reverse(
        parsed, wrt, activity, names, namespace, local_names, callee_vjp, containers, aux
    )
    sweeps.dynamic = dynamic
    return sweeps.run(body)


@dataclass
class _Save:
    """A value the forward sweep may push before overwriting it, and restore later."""

    key: int
    target: str  # the variable whose value is overwritten
    index: gast.expr | None = None  # for y[index] = v: the element(s) overwritten
    kind: str = "assign"  # assign | item | append | pop
    used: bool = False


class _Reverse:
    def __init__(
        self, parsed, wrt, activity, names, namespace, local_names, callee_vjp, containers, aux
    ):
        self.parsed = parsed
        self.wrt = wrt
        self.activity = activity
        self.names = names
        self.namespace = namespace
        self.local_names = local_names
        self.callee_vjp = callee_vjp
        self.containers = set(containers)
        self.aux = aux
        self.adjoint_names: dict[str, str] = {}
        self.defined: set[str] = set()
        self.owned: set[str] = set()  # cotangents known to be private, writable buffers
        self.np = namespace.bind("np", np)
        self.saves: dict[int, _Save] = {}
        # id of a backward if or loop → (it, the forward statement it replays)
        self.replays: dict[int, tuple[gast.stmt, gast.stmt]] = {}
        self.stack = None
        self.operations = Operations(parsed, local_names)  # each statement classified once
        self.counters: set[str] = set()  # variables of the enclosing `for … in range` loops
        self.parameters = _parameters(parsed.node)
        self.user_names = names_written(parsed.node) | self.parameters
        self.rules_applied: list[str] = []  # for the statement whose adjoint is being built

    # names ------------------------------------------------------------------------------
    def adjoint(self, variable: str) -> str:
        if variable not in self.adjoint_names:
            self.adjoint_names[variable] = self.names.adjoint(variable)
        return self.adjoint_names[variable]

    def helper(self, name: str) -> gast.Name:
        return load(self.namespace.bind(name, getattr(runtime, name)))

    def active(self, name: str) -> bool:
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

    # driver -----------------------------------------------------------------------------
    def run(self, body: list[gast.stmt]) -> ReverseSweeps:
        *statements, final = body
        if not isinstance(final, gast.Return) or final.value is None:
            raise UnsupportedError(
                f"{self.parsed.location(final)}: the function must end with a 'return' of "
                "the value to differentiate"
            )
        self.writes = _write_counts(statements)
        self.in_loops = _names_written_in_loops(statements)
        self.mutated = _mutated_names(statements)
        self.lists = _list_names(statements)
        self.integers = _integer_names(statements)
        self.structured = _maybe_structured(
            statements, self.containers | self.lists, self.parameters, self.operations
        )
        self.entries_read = _entries_read(body)
        self.check_mutations(statements)
        steps: list[Step] = []
        forward = self.forward_block(statements, in_loop=False, steps=steps)
        output = final.value
        single = isinstance(output, gast.Name) and self.active(output.id)
        out_name = self.adjoint(output.id) if single else self.names.claim("dout")
        seed = self.seed_output(output, out_name, final)
        backward = seed + self.backward_block(steps, later_reads=names_read(final))
        self.check_restores_mirror_saves(forward, backward)
        # what the backward sweep reads matters for saves and for values set in blocks
        read_back = self.mark_used_saves(backward)
        forward, backward = self.place_saves(forward, backward)
        retargeted = {
            id(step.statement): step.target for top in steps for step in top.walk() if step.calls
        }
        forward = _unnested(forward, retargeted, self.names)
        forward = self.initial_values(statements, read_back) + forward
        adjoints = {w: (self.adjoint_names[w] if w in self.defined else None) for w in self.wrt}
        return ReverseSweeps(forward, backward, output, out_name, adjoints)

    def seed_output(self, output, out_name, final) -> list[gast.stmt]:
        if isinstance(output, gast.Tuple):
            elements = output.elts[:1] if self.aux else output.elts
            block: list[gast.stmt] = []
            for index, element in enumerate(elements):
                if isinstance(element, gast.Name) and self.active(element.id):
                    source = load(out_name)
                    if not self.aux:
                        source = gast.Subscript(
                            value=source, slice=constant(index), ctx=gast.Load()
                        )
                    block.extend(self.contribute(element.id, source, final))
            return block
        if isinstance(output, gast.Name) and self.active(output.id):
            self.adjoint_names[output.id] = out_name
            self.defined.add(output.id)
        return []

    # checks -----------------------------------------------------------------------------
    def check_mutations(self, statements: list[gast.stmt]) -> None:
        """In-place updates must target arrays or lists the function created itself."""
        fresh = _fresh_names(statements, self.parsed, self.local_names)
        dicts = {
            s.targets[0].id
            for s in nested_statements(statements)
            if isinstance(s, gast.Assign)
            and isinstance(s.targets[0], gast.Name)
            and isinstance(s.value, gast.Dict)
        }
        refuse_mutating_calls(statements, self.parsed, self.parameters, self.activity)
        for statement in nested_statements(statements):
            base = _mutated_base(statement)
            if base is None:
                continue
            if base in self.parameters:
                error = UnsupportedError(
                    f"{self.parsed.location(statement)}: this changes the argument '{base}' in "
                    f"place, and inputs are never mutated; copy it first ('{base} = "
                    f"{base}.copy()') and update the copy"
                )
                error.tape_cannot_either = True
                raise error
            if base in dicts and (base in self.activity.varied or self.active(base)):
                raise UnsupportedError(  # the tape can: auto falls back to it
                    f"{self.parsed.location(statement)}: writing entries of the dict "
                    f"'{base}' that hold values being differentiated is not transformed by "
                    "source; build the dict in one expression ({k: ... for k in ...} or "
                    "dict(zip(...))), or use mode='tape'"
                )
            if base not in fresh and (base in self.activity.varied or self.active(base)):
                error = UnsupportedError(
                    f"{self.parsed.location(statement)}: '{base}' is updated in place but "
                    "may share memory with another array (a view such as y[0], or an alias); "
                    "update the array it comes from (y[0, 1] = ...), or make it a new array "
                    "first (np.zeros, np.copy, x.copy(), a list)"
                )
                error.tape_cannot_either = True
                raise error

    # forward ----------------------------------------------------------------------------
    def forward_block(self, statements, in_loop: bool, steps: list[Step]) -> list[gast.stmt]:
        result: list[gast.stmt] = []
        for statement in statements:
            result.extend(self.forward_statement(statement, in_loop, steps))
        return result

    def forward_statement(
        self, statement: gast.stmt, in_loop: bool, steps: list[Step]
    ) -> list[gast.stmt]:
        if isinstance(statement, gast.If):
            step = Step(statement, StepKind.BRANCH)
            statement.body = self.forward_block(statement.body, in_loop, step.body) or [gast.Pass()]
            statement.orelse = self.forward_block(statement.orelse, in_loop, step.orelse)
            steps.append(step)
            return [statement]
        if isinstance(statement, (gast.For, gast.While)):
            return self.forward_loop(statement, in_loop, steps)
        if isinstance(statement, gast.Assign):
            return self.forward_assign(statement, in_loop, steps)
        if isinstance(statement, gast.Expr):
            return self.forward_expression(statement, steps)
        plain = (gast.Pass, gast.Break, gast.Continue, gast.Assert)
        if not isinstance(statement, plain) and names_written(statement) & self.activity.active:
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: '{type(statement).__name__.lower()}' "
                "statements that compute differentiated values cannot be transformed; "
                "use mode='tape'"
            )
        steps.append(Step(statement, StepKind.OTHER))
        return [statement]

    def forward_assign(
        self, statement: gast.Assign, in_loop: bool, steps: list[Step]
    ) -> list[gast.stmt]:
        target = statement.targets[0]
        if isinstance(target, gast.Attribute) or (
            isinstance(target, gast.Subscript) and not isinstance(target.value, gast.Name)
        ):
            # what is stored may be read back through the object; storing into a
            # differentiated array (t.flat = v) changes it in place
            if self.is_varied_expression(statement.value) or (
                names_read(target) & self.activity.varied
            ):
                raise UnsupportedError(
                    f"{self.parsed.location(statement)}: storing a differentiated value in an "
                    "attribute or a nested container cannot be transformed; keep it in a "
                    "variable, or use mode='tape'"
                )
            steps.append(Step(statement, StepKind.STORE, target=target))
            return [statement]
        if isinstance(target, gast.Subscript):
            step = Step(statement, StepKind.ITEM_WRITE, target=target)
            steps.append(step)
            # a constant array is saved too: the backward sweep may read it (z = x * t;
            # t[:] = 0.5 leaves dz's rule reading t), and unread saves are dropped
            save = self.new_save(step, target.value.id, "item", index=clone(target.slice))
            return [self.save_marker(save), statement]
        step = Step(statement, StepKind.ASSIGN, target=target)
        targets = _target_names(target)
        if any(self.active(t) for t in targets):
            step.operation = self.operations.of(statement)
            self.forward_pullback(step)
        steps.append(step)
        result: list[gast.stmt] = []
        if step.calls and in_loop:  # each iteration's pullback is needed later
            self.in_loops.add(step.extra)
            targets = [*targets, step.extra]
        for name in targets:
            if self.overwritten(name):
                result.append(self.save_marker(self.new_save(step, name, "assign")))
        operation = self.operations.of(statement)
        if operation.kind == "list pop" and len(targets) == 1:
            owner = operation.args[0].id
            if self.active(owner) or owner in self.activity.varied:  # the list changes
                # saved last, so restored first: the popped value goes back before the
                # variable it was popped into gets its earlier value back
                popped = load(targets[0])
                result.append(self.save_marker(self.new_save(step, owner, "pop", popped)))
        result.append(step.statement)
        return result

    def forward_pullback(self, step: Step) -> None:
        """Decide how ``step``'s value is pulled back, refusing what cannot be; a call is
        rewritten to call a derivative (``forward_call``, ``forward_dynamic``)."""
        operation, statement = step.operation, step.statement
        if _has_starred(operation) and operation.kind in ("call", "primitive"):
            # f(x, *rest): which parameters the arguments fill is known when it runs
            operation.callee = statement.value.func
            self.forward_dynamic(step, spread=True)
        elif operation.kind == "call":
            try:
                self.forward_call(step)
            except S2SGradError as error:
                if not self.dynamic or _not_at_run_time(error):
                    raise
                self.forward_dynamic(step)
        elif operation.kind == "unknown" and operation.callee is not None:
            self.forward_dynamic(step)
        elif operation.kind in ("copy", "pack"):
            step.pullback = Pullback.ROUTED
        elif operation.kind == "primitive" and operation.differentiable:
            step.pullback = Pullback.RULE
        else:
            refuse_operation(operation, self.parsed.location(statement))

    def forward_expression(self, statement: gast.Expr, steps: list[Step]) -> list[gast.stmt]:
        value = statement.value
        refuse_calls_kept_for_effect(statement, self.parsed, self.local_names, self.activity)
        step = Step(statement, StepKind.EXPRESSION)
        steps.append(step)
        if method_receiver(value, "append") is not None:
            owner = value.func.value.id
            if self.active(owner) or owner in self.activity.varied:
                return [self.save_marker(self.new_save(step, owner, "append")), statement]
            return [statement]
        if method_receiver(value, "pop") is not None and self.active(value.func.value.id):
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: a list of differentiated values is popped "
                "without keeping the value; write 'value = items.pop()' instead"
            )
        return [statement]

    def forward_loop(self, loop, in_loop: bool, steps: list[Step]) -> list[gast.stmt]:
        prefix: list[gast.stmt] = []
        step = Step(loop, StepKind.LOOP)
        increment = None
        if isinstance(loop, gast.While) or _breaks(loop.body):
            counter = self.names.fresh("iterations")
            if in_loop:
                self.in_loops.add(counter)
            step.counter = counter
            start = assign(counter, constant(0), like=loop)
            increment = assign(
                counter, gast.BinOp(left=load(counter), op=gast.Add(), right=constant(1))
            )
            prefix.extend(self.forward_assign(start, False, steps))
        elif not annotation(loop, RANGE_LOOP, False) and self.loop_is_active(loop):
            raise UnsupportedError(
                f"{self.parsed.location(loop)}: this loop iterates over something the "
                "transformer cannot replay backwards; iterate over range(...), an array, "
                "a list, enumerate or zip, or use mode='tape'"
            )
        body = self.forward_block(loop.body, in_loop=True, steps=step.body)
        if increment is not None:
            body.insert(0, increment)
            step.body.insert(0, Step(increment, StepKind.COUNTER))
        loop.body = body or [gast.Pass()]
        if loop.orelse:
            raise UnsupportedError(
                f"{self.parsed.location(loop)}: 'else' clauses on loops are not supported; "
                "use a flag variable instead"
            )
        steps.append(step)
        return [*prefix, loop]

    def loop_is_active(self, loop) -> bool:
        """Whether the loop sets a differentiated value: its variable, a name, a list it
        appends to or an array it writes into."""
        changed = set().union(*(names_written(s) for s in loop.body)) | _mutated_names(loop.body)
        if isinstance(loop, gast.For):
            changed |= names_written(loop.target)
        return bool(changed & self.activity.active)

    def overwritten(self, name: str) -> bool:
        return self.writes[name] > 1 or name in self.in_loops or name in self.parameters

    # saving values ------------------------------------------------------------------------
    def new_save(self, step: Step, target: str, kind: str, index=None) -> _Save:
        save = _Save(key=len(self.saves), target=target, index=index, kind=kind)
        self.saves[save.key] = save
        step.saves.append(save)
        return save

    def save_marker(self, save: _Save) -> gast.stmt:
        marker = gast.Expr(value=constant(f"__s2s_push__:{save.key}"))
        return marker

    def restore_marker(self, save: _Save) -> gast.stmt:
        return gast.Expr(value=constant(f"__s2s_pop__:{save.key}"))

    def initial_values(self, statements, read_back: set[str]) -> list[gast.stmt]:
        """``v = None`` for values only some branches compute that the backward sweep reads.

        The backward sweep may make a zero cotangent for ``v`` on a path where ``v`` was
        never assigned; starting it at None (a zero) keeps that path well defined.
        """
        inside = set()
        for statement in statements:
            if isinstance(statement, (gast.If, gast.For, gast.While)):
                inside |= names_written(statement)
        if not inside:
            return []
        top_level = {n for s in statements if isinstance(s, gast.Assign) for n in names_written(s)}
        for loop in nested_statements(statements):  # the backward loop sets its own counter
            inside -= _range_targets(loop)
        pushed = {s.target for s in self.saves.values() if s.used and s.kind == "assign"}
        names = sorted((inside & read_back) - top_level - self.parameters - pushed)
        return [assign(name, constant(None)) for name in names]

    def check_restores_mirror_saves(self, forward, backward) -> None:
        """Every save must be restored where the backward sweep replays the place it was
        made, in the opposite order: the stack is then right on every path. A gradient
        from a stack out of step would be wrong, so a mismatch is refused (and in
        mode='auto' the tape takes over)."""
        saves = _marker_tree(forward, "__s2s_push__:", id)
        restores = _marker_tree(backward, "__s2s_pop__:", self.replayed)
        if _reversed_tree(saves) != restores:
            raise UnsupportedError(
                f"{self.parsed.location()}: internal error: the backward sweep would not "
                "restore the values the forward sweep saves in the same order; use "
                "mode='tape', and please report this function"
            )

    def replayed(self, statement) -> int | None:
        """The id of the forward statement a backward ``if`` or loop replays, else None."""
        pair = self.replays.get(id(statement))
        return id(pair[1]) if pair is not None and pair[0] is statement else None

    def mark_used_saves(self, backward) -> set[str]:
        """Mark the saves whose values the backward sweep reads; return the names it reads.

        A replay (a backward ``if`` or loop) that would do nothing, since it holds no code
        and none of its restores is needed, goes (``expand_markers``), so what its test or
        range reads does not count; restoring one value can make another one needed.
        """
        adjoints = set(self.adjoint_names.values())
        while True:
            read, indices = self.kept_reads(backward)
            needed = (read | indices) - adjoints
            newly = [s for s in self.saves.values() if not s.used and s.target in needed]
            if not newly:
                return read
            for save in newly:
                save.used = True

    def kept_reads(self, statements) -> tuple[set[str], set[str]]:
        """The names ``statements`` read outside restores and replays that do nothing, and
        the names the restores needed so far read (their indices)."""
        read: set[str] = set()
        indices: set[str] = set()
        for statement in statements:
            key = _marker_key(statement, "__s2s_pop__:")
            if key is not None:
                save = self.saves[key]
                if save.used and save.index is not None:
                    indices |= names_read(save.index)
                continue
            if not annotation(statement, REPLAY, False):
                read |= names_read(statement)
                continue
            if not self.replay_kept(statement):
                continue
            header = statement.test if isinstance(statement, gast.If) else statement.iter
            read |= names_read(header)
            for inner in (statement.body, statement.orelse):
                inner_read, inner_indices = self.kept_reads(inner)
                read |= inner_read
                indices |= inner_indices
        return read, indices

    def replay_kept(self, replay) -> bool:
        """Whether a backward ``if`` or loop does something: code, or a needed restore."""
        for statement in replay.body + replay.orelse:
            key = _marker_key(statement, "__s2s_pop__:")
            if key is not None:
                if self.saves[key].used:
                    return True
            elif annotation(statement, REPLAY, False):
                if self.replay_kept(statement):
                    return True
            elif _has_code([statement]):
                return True
        return False

    def place_saves(self, forward, backward):
        """Turn the markers of the saves ``mark_used_saves`` found needed into pushes and
        pops, and drop the others."""
        prologue = []
        if any(s.used for s in self.saves.values()):
            self.stack = self.names.claim("stack")
            creation = assign(self.stack, gast.List(elts=[], ctx=gast.Load()))
            annotate(creation, STACK)  # lets the optimizer drop saves nobody reads
            prologue.append(creation)
            pushed = {
                s.target
                for s in self.saves.values()
                if s.used and s.kind == "assign" and s.target not in self.parameters
            }
            for name in sorted(pushed):
                initial = assign(name, constant(None))
                annotate(initial, SAVE_INIT)  # only there so the first push has a value
                prologue.append(initial)
        forward = self.expand_markers(forward, "__s2s_push__:", self.push_code)
        backward = self.expand_markers(backward, "__s2s_pop__:", self.pop_code)
        return prologue + forward, backward

    def expand_markers(self, statements, prefix, code):
        result = []
        for statement in statements:
            key = _marker_key(statement, prefix)
            if key is not None:
                save = self.saves[key]
                generated = code(save) if save.used else None
                if generated is not None:
                    result.append(generated)
                continue
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                    expanded = self.expand_markers(inner, prefix, code)
                    if field == "body":
                        expanded = expanded or [gast.Pass()]
                    setattr(statement, field, expanded)
            if annotation(statement, REPLAY, False) and not _has_code(
                statement.body + statement.orelse
            ):
                continue  # nothing to differentiate, and none of its restores is needed
            result.append(statement)
        return _without_orphan_comments(result)

    def push_code(self, save: _Save) -> gast.stmt | None:
        stack = load(self.stack)
        if save.kind == "item":
            value: gast.expr = call(
                self.helper("snapshot"),
                [gast.Subscript(value=load(save.target), slice=clone(save.index), ctx=gast.Load())],
            )
        elif save.kind in ("append", "pop"):
            return None  # the list itself records what the backward sweep undoes
        else:
            value = load(save.target)
        return gast.Expr(value=call(attribute(stack, "append"), [value]))

    def pop_code(self, save: _Save) -> gast.stmt:
        popped = call(attribute(load(self.stack), "pop"))
        if save.kind == "item":
            target = gast.Subscript(
                value=load(save.target), slice=clone(save.index), ctx=gast.Store()
            )
            return gast.Assign(targets=[target], value=popped, type_comment=None)
        if save.kind == "append":
            return gast.Expr(value=call(attribute(load(save.target), "pop")))
        if save.kind == "pop":  # v = L.pop(): put v back
            return gast.Expr(
                value=call(attribute(load(save.target), "append"), [clone(save.index)])
            )
        return assign(save.target, popped)

    # backward: blocks ---------------------------------------------------------------------
    def backward_block(self, steps: list[Step], later_reads: set[str]) -> list[gast.stmt]:
        blocks: list[list[gast.stmt]] = []
        reads_after = set(later_reads)
        after_sets = []
        for step in reversed(steps):
            after_sets.append(set(reads_after))
            reads_after |= names_read(step.statement)
        rules: list[list[str]] = []
        for step, after in zip(reversed(steps), after_sets):
            outer_rules, self.rules_applied = self.rules_applied, []
            block, early = self.backward_step(step, after)
            block_rules, self.rules_applied = self.rules_applied, outer_rules
            for save in reversed(step.saves):  # last pushed first
                if save not in early:
                    block.append(self.restore_marker(save))
            if block:
                blocks.append(block)
                rules.append(block_rules)
        return self.with_comments(blocks, rules)

    def with_comments(
        self, blocks: list[list[gast.stmt]], rules: list[list[str]]
    ) -> list[gast.stmt]:
        """The blocks, each group of one source line under a ``# grad of:`` comment that
        also names the rules applied (shown in unoptimised code, see optimize.py)."""
        result: list[gast.stmt] = []
        last_line, last_comment = None, None
        for block, block_rules in zip(blocks, rules):
            first = block[0]
            line = getattr(first, "lineno", None)
            if line is not None and line != last_line and not _is_marker(first):
                text = self.parsed.source_line(first)
                last_comment = None
                if text:
                    last_comment = comment(f"grad of: {text}")
                    result.append(last_comment)
                last_line = line
            if block_rules and last_comment is not None:
                add_rule_names(last_comment, block_rules)
            result.extend(block)
        return result

    def backward_step(self, step: Step, later_reads: set[str]) -> tuple[list[gast.stmt], list]:
        """The adjoint block of ``step``, and the saves it restored itself (early)."""
        if step.kind is StepKind.ASSIGN:
            return self.backward_assign(step)
        if step.kind is StepKind.BRANCH:
            return self.backward_if(step, later_reads), []
        if step.kind is StepKind.LOOP:
            return self.backward_loop(step, later_reads), []
        if step.kind is StepKind.EXPRESSION:
            return self.backward_expression(step.statement), []
        if step.kind is StepKind.ITEM_WRITE:
            return self.backward_item_assignment(step.statement), []
        return [], []  # a constant stored out of sight (forward_assign refuses the rest)

    def backward_if(self, step: Step, later_reads) -> list[gast.stmt]:
        statement = step.statement
        entry_defined, entry_owned = set(self.defined), set(self.owned)
        body = self.backward_block(step.body, later_reads)
        body_defined, body_owned = self.defined, self.owned
        self.defined, self.owned = set(entry_defined), set(entry_owned)
        orelse = self.backward_block(step.orelse, later_reads)
        else_defined, else_owned = self.defined, self.owned
        union = body_defined | else_defined
        body += self.zeros_for(union - body_defined)
        orelse += self.zeros_for(union - else_defined)
        self.defined = union
        self.owned = (body_owned | (union - body_defined)) & (else_owned | (union - else_defined))
        self.owned = {n for n in self.owned if n in {self.adjoint(v) for v in union}}
        replay = gast.If(test=clone(statement.test), body=body or [gast.Pass()], orelse=orelse)
        return [self.replaying(statement, replay)]

    def zeros_for(self, variables) -> list[gast.stmt]:
        result = []
        for variable in sorted(variables):
            name = self.adjoint(variable)
            result.append(assign(name, call(self.helper("zeros_like_value"), [load(variable)])))
            self.owned.add(name)
        return result

    def replaying(self, statement, block: gast.stmt) -> gast.stmt:
        """``block``, the backward sweep's ``if`` or loop for ``statement``, marked as such.

        It has the same arms as ``statement`` whatever they hold, so that every restore
        runs on the path, and as often as, the forward sweep saved the value; only once
        the restores are placed (``expand_markers``) and the code tidied (``optimize``)
        does a replay whose arms are all empty go.
        """
        annotate(block, REPLAY)
        self.replays[id(block)] = (block, statement)
        return gast.copy_location(block, statement)

    def backward_loop(self, step: Step, later_reads) -> list[gast.stmt]:
        loop = step.statement
        written = set().union(*(names_written(s) for s in loop.body))
        read = set().union(*(names_read(s) for s in loop.body))
        modified = set().union(*(names_modified(s) for s in loop.body))
        if not (modified & self.activity.active):  # only values it overwrote to restore
            body = self.backward_block(step.body, later_reads | read)
            return [self.reversed_loop(step, body)]
        local = _iteration_local(loop.body, frozenset(later_reads)) - self.defined
        carried = {v for v in (read - local) | (written & self.defined) if self.active(v)}
        carried |= {v for v in written & later_reads if self.active(v) and v in self.defined}
        before = self.zeros_for(carried - self.defined)
        indexed = _indexed_by_counters(loop.body, self.counters | _range_targets(loop))
        for variable in sorted(carried & (self.mutated | indexed)):
            name = self.adjoint(variable)
            if name not in self.owned:
                before.append(assign(name, call(self.helper("owned"), [load(name)])))
                self.owned.add(name)
        self.defined |= carried
        outside = set(self.defined)
        reads_inside = later_reads | read
        counters = self.counters
        self.counters = counters | _range_targets(loop)
        body = self.backward_block(step.body, reads_inside)
        self.counters = counters
        body += self.zeros_for(carried - self.defined)
        self.defined = outside
        return [*before, self.reversed_loop(step, body)]

    def reversed_loop(self, step: Step, body: list[gast.stmt]) -> gast.For:
        """The backward sweep's loop over the loop's iterations, last first."""
        loop, counter = step.statement, step.counter
        if isinstance(loop, gast.While):
            header = gast.For(
                target=store(self.names.claim("_")),
                iter=call(load("range"), [load(counter)]),
                body=body or [gast.Pass()],
                orelse=[],
                type_comment=None,
            )
        else:
            sequence: gast.expr = clone(loop.iter)
            if counter is not None:
                sequence = gast.Subscript(
                    value=sequence,
                    slice=gast.Slice(lower=None, upper=load(counter), step=None),
                    ctx=gast.Load(),
                )
            header = gast.For(
                target=clone(loop.target),
                iter=call(load("reversed"), [sequence]),
                body=body or [gast.Pass()],
                orelse=[],
                type_comment=None,
            )
        return self.replaying(loop, header)

    # backward: statements -----------------------------------------------------------------
    def contribute(self, variable: str, value: gast.expr, like: gast.AST) -> list[gast.stmt]:
        name = self.adjoint(variable)
        if variable not in self.defined:
            self.defined.add(variable)
            self.owned.discard(name)
            if isinstance(value, gast.Name):
                self.owned.discard(value.id)
            first = assign(name, value, like=like)
            annotate(first, KEEP_NAME, variable in self.user_names)  # d<variable> stays visible
            return [first]
        if variable in self.structured:  # + of two cotangents must stay differentiable
            total = call(self.helper("add_cotangents"), [load(name), value])
        else:
            total = gast.BinOp(left=load(name), op=gast.Add(), right=value)
            self.owned.add(name)
        return [assign(name, total, like=like)]

    def backward_assign(self, step: Step) -> tuple[list[gast.stmt], list]:
        """The adjoint of ``y = value`` (or ``a, b = value``), and the saves it restored
        before the rule reads them (``y = f(y)``)."""
        statement, target = step.statement, step.target
        targets = _target_names(target)
        popped_from = _popped_list(statement)
        if popped_from is not None and self.active(popped_from) and len(targets) == 1:
            return self.backward_list_pop(statement, targets[0], popped_from), []
        if not any(t in self.defined and self.active(t) for t in targets):
            for t in targets:
                self.defined.discard(t)
            return [], []
        if not isinstance(target, gast.Name):  # a, b = v (A-normal form): v's structure
            return self.backward_unpacking(step, target, targets), []
        cotangent: gast.expr = load(self.adjoint(target.id))
        answer: gast.expr = clone(target)
        answer.ctx = gast.Load()
        block: list[gast.stmt] = []
        for t in targets:
            self.defined.discard(t)  # earlier values of t have cotangents of their own
            self.owned.discard(self.adjoint(t))
        early: list = []
        if _reads(statement.value, target.id):  # y = f(y)
            saved = self.names.fresh("g")
            block.append(assign(saved, cotangent, like=statement))
            cotangent = load(saved)
            if not step.calls:  # the rule needs the old y, and maybe the new one as ans
                new_value = self.names.fresh(f"{target.id}_new")
                block.append(assign(new_value, answer, like=statement))
                answer = load(new_value)
                early = step.saves  # all of them, so that they still come off in order
                if not all(s.kind == "assign" and s.target == target.id for s in early):
                    early = []
                for save in reversed(early):  # the old value back before the rule reads it
                    block.append(self.restore_marker(save))
        block.extend(self.pullback(step, cotangent, answer))
        return block, early

    def pullback(self, step: Step, cotangent: gast.expr, answer: gast.expr) -> list[gast.stmt]:
        """Send ``cotangent``, of the value ``answer`` that ``step`` computed, back to what
        the value was computed from, the way the forward sweep decided."""
        statement, operation = step.statement, step.operation
        if step.pullback in (Pullback.GENERATED, Pullback.CUSTOM):
            return self.backward_call(step, cotangent)
        if step.pullback is Pullback.DISPATCH:
            return self.backward_dynamic(step, cotangent)
        if step.pullback is Pullback.RULE:
            return self.backward_primitive(statement, operation, cotangent, answer)
        if step.pullback is not Pullback.ROUTED:
            return []
        if operation.kind == "copy":
            return self.contribute(operation.args[0].id, cotangent, statement)
        block: list[gast.stmt] = []  # a literal: each entry gets its part
        read = self.entries_read.get(step.target.id)
        for index, element in enumerate(operation.args):
            key = index if operation.keys is None else operation.keys[index]
            if read is not None and key not in read:
                continue  # an entry nobody reads: no cotangent flows into it
            if self.is_active_expression(element):  # a name, or a literal of them
                if operation.keys is None:
                    part = gast.Subscript(value=cotangent, slice=constant(index), ctx=gast.Load())
                else:  # a dict's cotangent may lack entries nothing flowed into
                    key = constant(operation.keys[index])
                    part = call(self.helper("dict_entry"), [cotangent, key, clone(element)])
                block.extend(self.distribute(element, part, statement))
        return block

    def backward_unpacking(self, step: Step, target, targets: list[str]) -> list[gast.stmt]:
        """``a, *rest = v``: ``dv = unpack_cotangent((da, drest), v, star=1)``, an array for
        an array, a list for a list or tuple."""
        statement = step.statement
        parts = gast.Tuple(elts=[self.tuple_entry(t, step) for t in targets], ctx=gast.Load())
        for t in targets:
            self.defined.discard(t)  # earlier values of t have cotangents of their own
            self.owned.discard(self.adjoint(t))
        value = statement.value
        if not (isinstance(value, gast.Name) and self.active(value.id)):
            return []
        arguments = [parts, load(value.id)]
        star = _star_position(target)
        keywords = {} if star is None else {"star": constant(star)}
        cotangent = call(self.helper("unpack_cotangent"), arguments, keywords)
        return self.contribute(value.id, cotangent, statement)

    def backward_list_pop(self, statement, target: str, owner: str) -> list[gast.stmt]:
        """``v = items.pop()``: dv goes back on d(items), zeros if nothing flowed into v.

        Always pushing keeps the cotangent list as long as the list it mirrors.
        """
        if target in self.defined:
            cotangent: gast.expr = load(self.adjoint(target))
        else:
            cotangent = call(self.helper("zeros_like_value"), [load(target)])
        self.defined.discard(target)
        block = self.ensure_owned(owner)
        append = call(attribute(load(self.adjoint(owner)), "append"), [cotangent])
        block.append(gast.Expr(value=append))
        return [_locate_all(s, statement) for s in block]

    def tuple_entry(self, variable: str, step: Step) -> gast.expr:
        if variable in self.defined:
            return load(self.adjoint(variable))
        if step.calls:
            return call(self.helper("zeros_like_value"), [load(variable)])
        source = step.statement.value
        if isinstance(source, gast.Name) and source.id in self.parameters:
            # the cotangent leaves the function: its caller reads every entry
            return call(self.helper("zeros_like_value"), [load(variable)])
        return constant(None)

    def ensure_defined(self, variable: str) -> list[gast.stmt]:
        if variable in self.defined:
            return []
        self.defined.add(variable)
        return self.zeros_for([variable])

    def ensure_owned(self, variable: str) -> list[gast.stmt]:
        block = self.ensure_defined(variable)
        name = self.adjoint(variable)
        if name not in self.owned:
            block.append(assign(name, call(self.helper("owned"), [load(name)])))
            self.owned.add(name)
        return block

    def backward_item_assignment(self, statement: gast.Assign) -> list[gast.stmt]:
        """``y[index] = v``: v receives dy[index] (where an index repeats an element, only
        at its last write, the one NumPy keeps); dy[index] is then zero."""
        target = statement.targets[0]
        base = target.value.id
        if base not in self.defined or not self.active(base):
            return []
        index = index_expression(clone(target.slice))
        self.numpy_names(index)
        adjoint = self.adjoint(base)
        block: list[gast.stmt] = []
        value = statement.value
        if base in self.lists or _basic_index(target.slice, self.counters | self.integers):
            part = gast.Subscript(value=load(adjoint), slice=clone(target.slice), ctx=gast.Load())
            part = call(self.helper("snapshot"), [part])  # the buffer is zeroed in place next
        else:  # an integer array may write an element twice: only the last write counts
            part = call(self.helper("assigned_cotangent"), [load(adjoint), index])
        later: list[gast.stmt] = []
        if isinstance(value, gast.Name) and self.active(value.id):
            if value.id == base:  # y[i] = y: the old y gets dy[i] after dy[i] is zeroed
                kept = self.names.fresh("g")
                block.append(assign(kept, part))
                part = load(kept)
            contribution = call(self.helper("unbroadcast"), [part, load(value.id)])
            added = self.contribute(value.id, contribution, statement)
            (later if value.id == base else block).extend(added)
        block.extend(self.ensure_owned(base))
        zero = gast.Subscript(value=load(adjoint), slice=clone(target.slice), ctx=gast.Store())
        nothing: gast.expr = constant(0.0)
        if base in self.lists:  # a list element is replaced by zeros of its own shape
            element = gast.Subscript(value=load(base), slice=clone(target.slice), ctx=gast.Load())
            nothing = call(self.helper("zeros_like_value"), [element])
        block.append(gast.Assign(targets=[zero], value=nothing, type_comment=None))
        block.extend(later)
        return [_locate_all(s, statement) for s in block]

    def backward_expression(self, statement: gast.Expr) -> list[gast.stmt]:
        value = statement.value
        if not method_receiver(value, "append") is not None:
            return []
        owner = value.func.value.id
        element = value.args[0] if value.args else None
        if owner not in self.defined or not self.active(owner):
            return []
        popped = call(attribute(load(self.adjoint(owner)), "pop"))
        block = self.ensure_owned(owner)
        if isinstance(element, gast.Name) and self.active(element.id):
            block.extend(self.contribute(element.id, popped, statement))
        else:
            block.append(gast.Expr(value=popped))
        return [_locate_all(s, statement) for s in block]

    def backward_primitive(self, statement, operation, cotangent, answer) -> list[gast.stmt]:
        rule = operation.rule
        if rule is None or rule.vjp is None:
            raise NonDifferentiableError(
                f"{self.parsed.location(statement)}: {_describe(operation.primitive)} has no "
                "derivative rule; register one with @s2sgrad.derivative(of=...), or wrap "
                "the value in s2sgrad.stop_gradient if it needs none"
            )
        args = [self.numpy_names(a) for a in operation.args]
        in_place = self.accumulate_item(statement, operation, cotangent)
        if in_place is not None:
            return in_place
        wanted = {
            i
            for i, a in enumerate(args)
            if self.is_active_expression(a) and not isinstance(a, gast.Constant)
        }
        refuse_differentiated_keywords(
            operation, self.is_active_expression, self.parsed.location(statement)
        )
        if not wanted:
            return []
        inlined = None
        if rule.inline_vjp:
            inlined = inline_rule(
                rule.vjp,
                cotangent,
                answer,
                args,
                operation.keywords,
                wanted,
                self.names,
                self.namespace,
            )
        self.rules_applied.append(rule_label(rule.vjp if inlined is not None else None, operation))
        block: list[gast.stmt] = []
        if inlined is None:
            primitive_name = self.namespace.bind(
                _primitive_name(operation.primitive), operation.primitive
            )
            result = self.names.fresh("cotangents")
            arguments = [load(primitive_name), cotangent, answer, *args]
            rule_call = call(self.helper("vjp_call"), arguments, operation.keywords)
            block.append(assign(result, rule_call, like=statement))
            entries = [
                gast.Subscript(value=load(result), slice=constant(i), ctx=gast.Load())
                for i in range(len(args))
            ]
        else:
            block.extend(_locate_all(s, statement) for s in inlined.statements)
            entries = inlined.entries
        for index in sorted(wanted):
            entry = entries[index] if index < len(entries) else None
            if entry is not None:
                block.extend(self.distribute(args[index], entry, statement))
        return block

    def accumulate_item(self, statement, operation, cotangent) -> list[gast.stmt] | None:
        """``v = x[i]`` in a loop: ``dx[i] += dv`` into x's private cotangent buffer.

        Only for indices that cannot repeat an element (integers, loop counters, slices),
        and only where the buffer is known to be private: then each iteration costs the
        size of ``x[i]``, not of ``x``.
        """
        if operation.primitive is not operator.getitem:
            return None
        base, index = statement.value.value, statement.value.slice
        if not isinstance(base, gast.Name) or not self.active(base.id):
            return None
        name = self.adjoint(base.id)
        if base.id not in self.defined or name not in self.owned:
            return None
        if not _basic_index(index, self.counters):
            return None
        place = gast.Subscript(value=load(name), slice=clone(index), ctx=gast.Store())
        if base.id in self.structured:  # an entry of a list's cotangent is replaced
            if isinstance(index, gast.Slice):
                return None
            current = gast.Subscript(value=load(name), slice=clone(index), ctx=gast.Load())
            total = call(self.helper("add_cotangents"), [current, cotangent])
            update: gast.stmt = gast.Assign(targets=[place], value=total, type_comment=None)
        else:
            update = gast.AugAssign(target=place, op=gast.Add(), value=cotangent)
        return [_locate_all(update, statement)]

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

    # calls to user functions --------------------------------------------------------------
    def forward_call(self, step: Step) -> None:
        """``y = f(x)`` becomes ``y, y_saved = f_vjp(x)``: the callee's own derivative."""
        statement, operation = step.statement, step.operation
        function = operation.primitive
        active = self.active_parameters(function, operation, statement)
        bound = self.bind(function, operation, statement)
        containers = frozenset(
            name
            for name in active
            if isinstance(bound.arguments.get(name), _Placeholder)
            and isinstance(bound.arguments[name].node, gast.Name)
            and bound.arguments[name].node.id in self.containers
        )
        vjp_function = self.callee_vjp(function, active, statement, containers)
        vjp_name = self.namespace.bind(vjp_function.__name__, vjp_function)
        targets = _target_names(statement.targets[0])
        stem = f"{targets[0]}_saved" if len(targets) == 1 else "saved"
        saved = self.names.claim(stem)
        self.retarget(statement, saved)
        statement.value = call(load(vjp_name), operation.args, operation.keywords)
        rule = get_rule(function)
        custom = rule is not None and rule.custom is not None
        step.pullback = Pullback.CUSTOM if custom else Pullback.GENERATED
        step.extra, step.active, step.derivative = saved, active, vjp_name

    def forward_dynamic(self, step: Step, spread: bool = False) -> None:
        """A call resolved at run time: ``y, y_pullback = dynamic_vjp(f, *args)``.

        ``spread``: a call with starred arguments, which mode='s2s' (``self.dynamic``
        false) differentiates with ``transformed_vjp``, never with the tape.
        """
        statement, operation = step.statement, step.operation
        callee = operation.callee
        captures = any(n in self.activity.varied for n in names_read(callee))
        if captures and isinstance(callee, gast.Attribute) and callee.attr in _DICT_VIEWS:
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: .{callee.attr}() of a dict of "
                "differentiated values can only be looped over ('for k, v in "
                "d.items():'); read entries by key (d[k]) elsewhere, or use mode='tape'"
            )
        if any(n in self.activity.varied for n in names_read(operation.callee)):
            raise not_at_run_time(
                UnsupportedError(
                    f"{self.parsed.location(statement)}: {operation.description} is a "
                    "function that captures differentiated values, which the transformer "
                    "cannot follow; pass those values to it as arguments, or use mode='tape'"
                )
            )
        for name, value in operation.keywords.items():
            if self.is_active_expression(value):
                raise UnsupportedError(
                    f"{self.parsed.location(statement)}: pass differentiated values to "
                    f"{operation.description} positionally, not as "
                    + (f"'{name}='" if name is not None else "**keywords")
                )
        stores = _stores_on_itself(self.parsed.resolve(operation.callee))
        if stores is not None:  # nor can the tape for this call alone: the caller may read it
            raise not_at_run_time(
                UnsupportedError(
                    f"{self.parsed.location(statement)}: {stores}: state kept on an object "
                    "cannot carry a derivative from this call to a later read of it, so "
                    "source transformation cannot differentiate the calls; use mode='tape'"
                )
            )
        if keeps_arguments_inside(operation.primitive):
            raise not_at_run_time(
                UnsupportedError(
                    f"{self.parsed.location(statement)}: {operation.description}(...) keeps "
                    "differentiated values inside an object, which the transformer cannot "
                    "follow; call the function with them directly (g(x, d), or map(partial("
                    "g, x), items) passed straight to sum/list/a loop), or use mode='tape'"
                )
            )
        targets = _target_names(statement.targets[0])
        stem = f"{targets[0]}_pullback" if len(targets) == 1 else "pullback"
        pullback = self.names.claim(stem)
        self.retarget(statement, pullback)
        dispatch = "dynamic_vjp" if self.dynamic else "transformed_vjp"  # s2s: no tape
        statement.value = call(
            self.helper(dispatch), [clone(operation.callee), *operation.args], operation.keywords
        )
        step.pullback, step.extra = Pullback.DISPATCH, pullback

    def retarget(self, statement: gast.Assign, extra: str) -> None:
        """``y = f(x)`` becomes ``y, extra = ...`` (see :func:`_unnested` for tuples)."""
        original = statement.targets[0]
        target = gast.Tuple(elts=[clone(original), store(extra)], ctx=gast.Store())
        for node in walk(target):
            if isinstance(node, gast.Name):
                node.ctx = gast.Store()
        statement.targets = [target]

    def backward_dynamic(self, step: Step, cotangent) -> list[gast.stmt]:
        statement, pullback, args = step.statement, step.extra, step.operation.args
        holder = self.names.fresh("cotangents")
        block = [assign(holder, call(load(pullback), [cotangent]), like=statement)]
        position: gast.expr = constant(0)  # where the argument's cotangents start
        for argument in args:
            if isinstance(argument, gast.Starred):  # *v: len(v) cotangents, one v's worth
                value = argument.value
                end = gast.BinOp(left=position, op=gast.Add(), right=call(load("len"), [value]))
                if self.is_active_expression(value):
                    parts = gast.Subscript(
                        value=load(holder),
                        slice=gast.Slice(lower=clone(position), upper=clone(end), step=None),
                        ctx=gast.Load(),
                    )
                    part = call(self.helper("unpack_cotangent"), [parts, clone(value)])
                    block.extend(self.distribute(value, part, statement))
                position = end
                continue
            if self.is_active_expression(argument):
                part = gast.Subscript(value=load(holder), slice=clone(position), ctx=gast.Load())
                block.extend(self.distribute(argument, part, statement))
            position = _plus_one(position)
        return block

    def active_parameters(self, function, operation: Operation, node) -> tuple[str, ...]:
        bound = self.bind(function, operation, node)
        active = []
        for name, value in bound.arguments.items():
            values = value.values() if isinstance(value, dict) else value
            values = values if isinstance(value, (tuple, dict)) else [value]
            if any(
                isinstance(v, _Placeholder) and self.is_active_expression(v.node) for v in values
            ):
                active.append(name)
        return tuple(active)

    def bind(self, function, operation, node):
        placeholders = [_Placeholder(a) for a in operation.args]
        keywords = {k: _Placeholder(v) for k, v in operation.keywords.items()}
        try:
            return numpy_signatures.signature(function).bind(*placeholders, **keywords)
        except TypeError as error:
            raise UnsupportedError(f"{self.parsed.location(node)}: {error}") from None

    def backward_call(self, step: Step, cotangent) -> list[gast.stmt]:
        statement, operation = step.statement, step.operation
        saved, active, vjp_name = step.extra, step.active, step.derivative
        bound = self.bind(operation.primitive, operation, statement)
        block: list[gast.stmt] = []
        results = [
            self.names.claim("d" + _argument_stem(bound.arguments[name], name)) for name in active
        ]
        if len(results) == 1:
            target: gast.expr = store(results[0])
        else:
            target = gast.Tuple(elts=[store(r) for r in results], ctx=gast.Store())
        backward = call(attribute(load(vjp_name), "backward"), [load(saved), cotangent])
        block.append(assign(target, backward, like=statement))
        for name, result in zip(active, results):
            value = bound.arguments[name]
            if isinstance(value, _Placeholder):
                block.extend(self.distribute(value.node, load(result), statement))
            elif isinstance(value, tuple):  # *args: the pullback returns a tuple for them
                for index, item in enumerate(value):
                    part = gast.Subscript(
                        value=load(result), slice=constant(index), ctx=gast.Load()
                    )
                    block.extend(self.distribute(item.node, part, statement))
        return block

    def numpy_names(self, node: gast.expr) -> gast.expr:
        """Rewrite the ``np`` of ``np.s_[...]`` index expressions to this module's name."""
        if self.np != "np":
            for child in walk(node):
                if isinstance(child, gast.Attribute) and child.attr == "s_":
                    child.value = load(self.np)
        return node


class _Placeholder:
    def __init__(self, node):
        self.node = node


# helpers ----------------------------------------------------------------------------------
def refuse_calls_kept_for_effect(statement: gast.Expr, parsed, local_names, activity) -> None:
    """``obj.store(x)``, its result unused, with ``x`` differentiated: the call can only
    matter by what it changes (an attribute, a container), which neither sweep follows.
    Refused unless the callee is known to change nothing: a function with a derivative
    rule, ``print``, or a Python function of the user's that stores no attribute and
    changes no argument (calls that change arguments are refused on their own)."""
    value = statement.value
    if not isinstance(value, gast.Call) or method_receiver(value, "append") is not None:
        return
    arguments = [*value.args, *(k.value for k in value.keywords)]
    differentiated = [
        n.id for a in arguments for n in walk(a) if type(n) is gast.Name and n.id in activity.varied
    ]
    if not differentiated:
        return
    operation = classify(value, parsed, local_names)
    target = operation.primitive
    if operation.kind == "primitive" or target is print:
        return
    if operation.kind == "call" and not _stores_attributes(target):
        return
    raise UnsupportedError(
        f"{parsed.location(statement)}: the result of {operation.description or 'this call'}"
        f" is not used, so it can only matter by what it changes or stores, and neither "
        f"sweep follows a differentiated value ('{differentiated[0]}') there; return the "
        "value and use it, or use mode='tape'"
    )


def _stores_attributes(function) -> bool:
    """Whether ``function``'s source assigns to an attribute (``self.v = x``)."""
    from s2sgrad.compiler.frontend import parse_function

    function = getattr(function, "__func__", function)
    try:
        node = parse_function(function).node
    except Exception:  # no source: it may do anything
        return True
    return any(
        type(n) in (gast.Assign, gast.AugAssign)
        and any(
            type(t) is gast.Attribute for t in getattr(n, "targets", [getattr(n, "target", None)])
        )
        for n in walk(node)
    )


def _stores_on_itself(obj: Any) -> str | None:
    """``"Cell.__call__ stores self.h"`` when calling ``obj`` (a bound method, or an object
    whose class defines ``__call__`` in Python) assigns to an attribute of the object; else
    None. What a call stores there, a later call or read may use in the same computation."""
    if isinstance(obj, types.MethodType):
        function, owner = obj.__func__, obj.__self__
    elif obj is not NOT_FOUND and not isinstance(obj, (type, types.FunctionType)):
        calls = (vars(k)["__call__"] for k in type(obj).__mro__ if "__call__" in vars(k))
        function, owner = next(calls, None), obj
    else:
        return None
    if not isinstance(function, types.FunctionType) or isinstance(owner, types.ModuleType):
        return None
    stored = _attributes_stored_on_first_parameter(function)
    if not stored:
        return None
    return f"{function.__qualname__} stores self.{stored}"


@functools.lru_cache(maxsize=256)
def _attributes_stored_on_first_parameter(function: types.FunctionType) -> str | None:
    try:
        node = parse_function(function).node
    except S2SGradError:
        return None
    parameters = node.args.posonlyargs + node.args.args
    if not parameters:
        return None
    owner = parameters[0].id
    for part in walk(node):
        if (
            type(part) is gast.Attribute
            and type(part.ctx) is gast.Store
            and type(part.value) is gast.Name
            and part.value.id == owner
        ):
            return part.attr
    return None


def rule_label(rule_function: Any, operation: Operation) -> str:
    """How a ``# grad of:`` comment names the rule applied to ``operation``: the inlined
    rule's function and module, or the primitive whose rule the generated code calls."""
    if rule_function is None:
        return f"{_describe(operation.primitive)} (rule called)"
    module = getattr(rule_function, "__module__", "") or ""
    return f"{rule_function.__qualname__} in {module}"


def not_at_run_time(error: S2SGradError) -> S2SGradError:
    """Mark ``error`` as one that dispatching the call at run time would not avoid: the
    callee would be given a function or object whose differentiated values it cannot see,
    and would take them for constants."""
    error.not_at_run_time = True
    return error


def _not_at_run_time(error: S2SGradError) -> bool:
    return getattr(error, "not_at_run_time", False) or getattr(error, "tape_cannot_either", False)


def _parameters(node: gast.FunctionDef) -> set[str]:
    args = node.args
    return {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}


def _target_names(target: gast.expr) -> list[str]:
    """The names a target binds: one, or (A-normal form) a flat tuple of them, one maybe
    starred."""
    if isinstance(target, gast.Name):
        return [target.id]
    if not isinstance(target, (gast.Tuple, gast.List)):  # an attribute or an item
        return []
    elements = [e.value if isinstance(e, gast.Starred) else e for e in target.elts]
    return [e.id for e in elements if isinstance(e, gast.Name)]


def refuse_operation(operation: Operation, location: str) -> None:
    """Raise the error for a differentiated value computed by what has no derivative
    (a custom derivative differentiated again, an iterator, a library function without a
    rule, what the transformer cannot see through); other operations pass."""
    if operation.kind == "higher-order custom":
        error = NonDifferentiableError(
            f"{location}: this derivative uses a custom derivative "
            f"({operation.description}), whose pullback cannot be differentiated again; "
            "derivatives of higher order need the function itself, without "
            "@s2sgrad.derivative"
        )
        error.tape_cannot_either = True
        raise error
    if operation.kind == "iterator":
        raise iterator_error(location, operation.description)
    if operation.kind == "no rule":
        error = NonDifferentiableError(
            f"{location}: {operation.description} has no derivative rule; "
            + (
                operation.advice
                or "give it one with @s2sgrad.derivative(of=...), or wrap the "
                "value in s2sgrad.stop_gradient if it needs none"
            )
        )
        error.tape_cannot_either = bool(operation.advice)  # the advice is the fix
        raise error
    if operation.kind == "unknown":
        raise UnsupportedError(
            f"{location}: cannot differentiate through {operation.description}; register a "
            "rule with @s2sgrad.derivative, or use mode='tape'"
        )


def _has_starred(operation: Operation) -> bool:
    return any(isinstance(a, gast.Starred) for a in operation.args)


def _plus_one(position: gast.expr) -> gast.expr:
    if isinstance(position, gast.Constant):
        return constant(position.value + 1)
    return gast.BinOp(left=position, op=gast.Add(), right=constant(1))


def _star_position(target: gast.expr) -> int | None:
    for position, element in enumerate(getattr(target, "elts", ())):
        if isinstance(element, gast.Starred):
            return position
    return None


def _unnested(statements: list[gast.stmt], retargeted: dict, names) -> list[gast.stmt]:
    """``(a, b), saved = f_vjp(x)`` → ``value, saved = f_vjp(x)``; ``a, b = value``: code
    that is differentiated again then unpacks one level at a time."""
    result = []
    for statement in statements:
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                setattr(statement, field, _unnested(inner, retargeted, names))
        original = retargeted.get(id(statement))
        if isinstance(statement, gast.Assign) and isinstance(original, gast.Tuple):
            value = names.fresh("value")
            statement.targets[0].elts[0] = store(value)
            result.append(statement)
            result.append(assign(clone(original), load(value), like=statement))
            continue
        result.append(statement)
    return result


def _names_written_in_loops(statements) -> set[str]:
    result = set()
    for statement in nested_statements(statements):
        if isinstance(statement, (gast.For, gast.While)):
            for inner in statement.body:
                result |= names_written(inner)
            result |= names_written(statement.target) if isinstance(statement, gast.For) else set()
    return result


def _mutated_base(statement) -> str | None:
    if isinstance(statement, gast.Assign):
        return item_target_base(statement)
    if isinstance(statement, gast.Expr):
        return method_receiver(statement.value, "append") or method_receiver(statement.value, "pop")
    return None


def _mutated_names(statements) -> set[str]:
    return {b for s in nested_statements(statements) if (b := _mutated_base(s)) is not None}


def _fresh_names(statements, parsed, local_names) -> set[str]:
    """Names every assignment of which creates a new array or list, or passes on the value
    of another such name (``t = new; u = t``: buffers swapped between time steps)."""
    verdict: dict[str, bool] = {}
    copies: dict[str, set[str]] = {}
    for statement in nested_statements(statements):
        if not (isinstance(statement, gast.Assign) and isinstance(statement.targets[0], gast.Name)):
            continue
        name, value = statement.targets[0].id, statement.value
        if annotation(statement, SYNCED):
            verdict.setdefault(name, True)  # an entry of a list of new arrays, stored back
            continue
        if isinstance(value, gast.Name):
            copies.setdefault(name, set()).add(value.id)
            verdict.setdefault(name, True)
            continue
        verdict[name] = verdict.get(name, True) and _creates_new(value, parsed, local_names)
    fresh = {n for n, made in verdict.items() if made}
    changed = True
    while changed:  # a copy of a name that is not always new is not always new
        spoiled = {n for n in fresh if not copies.get(n, set()) <= fresh}
        fresh -= spoiled
        changed = bool(spoiled)
    return fresh


def _creates_new(value: gast.expr, parsed, local_names) -> bool:
    if isinstance(value, (gast.List, gast.BinOp, gast.UnaryOp)):
        return True
    if isinstance(value, gast.Call):
        func = value.func
        if isinstance(func, gast.Attribute) and func.attr == "copy":
            return True
        if isinstance(func, gast.Name) and func.id == "list":
            return True
        target = (
            parsed.resolve(func)
            if not (
                isinstance(func, gast.Attribute)
                and isinstance(func.value, gast.Name)
                and func.value.id in local_names
            )
            else None
        )
        name = getattr(target, "__name__", "")
        module = getattr(target, "__module__", "") or ""
        if module.startswith("s2sgrad.runtime"):  # generated code differentiated again
            return name in ("owned", "zeros_like_value", "zeros_like_structure", "snapshot")
        return fresh_result(target, value)
    return False


def _list_names(statements) -> set[str]:
    """Variables that hold Python lists or tuples made here, or copies of them (their
    cotangents are lists too)."""
    result = set()
    copies = []
    for statement in nested_statements(statements):
        if isinstance(statement, gast.Assign) and isinstance(statement.targets[0], gast.Name):
            value = statement.value
            is_list = isinstance(value, gast.List) or (
                isinstance(value, gast.Call)
                and isinstance(value.func, gast.Name)
                and value.func.id in ("list", "tuple")
            )
            if is_list:
                result.add(statement.targets[0].id)
            elif isinstance(value, gast.Name):
                copies.append((statement.targets[0].id, value.id))
    grown = True
    while grown:
        grown = False
        for copy, source in copies:
            if source in result and copy not in result:
                result.add(copy)
                grown = True
    return result


_DICT_VIEWS = ("items", "values", "keys")
_STRUCTURED_RESULTS = frozenset(
    map(id, (runtime.for_items, runtime.concatenated, list, tuple, runtime.dict_keys))
)


def _maybe_structured(statements, known: set[str], parameters, operations) -> set[str]:
    """Variables that may hold lists, tuples or dicts (``known`` do): their cotangents are
    added with ``add_cotangents`` (``+`` on them is not differentiable again), never
    updated in place. Too many is safe: ``add_cotangents`` of arrays is ``+``.

    Besides ``known``: literals, slices and entries of such variables, what ``for_items``,
    ``list``, ``tuple`` and ``concatenated`` return (``for_items`` of an array argument
    aside), every unpacked value, and starred targets.
    """
    result = set(known)
    assignments = [
        s
        for s in nested_statements(statements)
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], (gast.Name, gast.Tuple))
    ]
    arrays = parameters - known  # the other differentiated arguments
    changed = True
    while changed:
        changed = False
        for statement in assignments:
            target, value = statement.targets[0], statement.value
            if isinstance(target, gast.Tuple):  # the value, and a starred name (a list)
                found = {value.id} if isinstance(value, gast.Name) else set()
                found |= {e.value.id for e in target.elts if isinstance(e, gast.Starred)}
            elif _structured_value(statement, result, arrays, operations):
                found = {target.id}
            else:
                found = set()
            if found - result:
                result |= found
                changed = True
    return result


def _structured_value(statement, structured, arrays, operations) -> bool:
    value = statement.value
    if isinstance(value, (gast.List, gast.Tuple, gast.Dict)):
        return True
    if isinstance(value, gast.Name):
        return value.id in structured
    if isinstance(value, gast.Subscript):
        return isinstance(value.value, gast.Name) and value.value.id in structured
    if isinstance(value, gast.Call):
        operation = operations.of(statement)
        if id(operation.primitive) not in _STRUCTURED_RESULTS:
            return False
        argument = operation.args[0] if operation.args else None
        over_array = isinstance(argument, gast.Name) and argument.id in arrays
        return not (operation.primitive is runtime.for_items and over_array)
    return False


def _entries_read(body: list[gast.stmt]) -> dict[str, set]:
    """For each name read only as ``name[literal]`` (a tuple, list or dict built here, say),
    the literals; names read any other way (passed on, iterated, updated) are left out."""
    nodes = [n for statement in body for n in walk(statement)]
    entries = {}
    for node in nodes:
        if (
            type(node) is gast.Subscript
            and type(node.ctx) is gast.Load
            and type(node.value) is gast.Name
            and type(node.slice) is gast.Constant
            and type(node.slice.value) in (int, str)
            and (type(node.slice.value) is str or node.slice.value >= 0)
        ):
            entries[id(node.value)] = node.slice.value
    read: dict[str, set] = {}
    other_uses = set()
    for node in nodes:
        if type(node) is gast.Name and type(node.ctx) is not gast.Store:
            if id(node) in entries:
                read.setdefault(node.id, set()).add(entries[id(node)])
            else:
                other_uses.add(node.id)
    return {name: keys for name, keys in read.items() if name not in other_uses}


def _integer_names(statements) -> set[str]:
    """Variables that only ever hold Python integers: ``range`` loop counters, and integer
    arithmetic of them and of literals (``t = i + 1``) that is their only binding."""
    bindings: dict[str, list] = {}
    for statement in nested_statements(statements):
        kind = type(statement)
        if kind is gast.Assign and len(statement.targets) == 1:
            if type(statement.targets[0]) is gast.Name:
                bindings.setdefault(statement.targets[0].id, []).append(statement.value)
        elif kind is gast.For and _range_targets(statement) and type(statement.target) is gast.Name:
            bindings.setdefault(statement.target.id, []).append(None)  # None: a counter
    stores = Counter(
        n.id
        for statement in statements
        for n in walk(statement)
        if type(n) is gast.Name and type(n.ctx) is gast.Store
    )
    candidates = {n: values for n, values in bindings.items() if stores[n] == len(values)}
    found: set[str] = set()
    while True:
        more = {
            n
            for n, values in candidates.items()
            if n not in found and all(v is None or _integer_arithmetic(v, found) for v in values)
        }
        if not more:
            return found
        found |= more


def _integer_arithmetic(node: gast.expr, integers: set[str]) -> bool:
    kind = type(node)
    if kind is gast.Constant:
        return type(node.value) is int
    if kind is gast.Name:
        return node.id in integers
    if kind is gast.UnaryOp and type(node.op) in (gast.USub, gast.UAdd):
        return _integer_arithmetic(node.operand, integers)
    if kind is gast.BinOp and type(node.op) in (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv):
        return all(_integer_arithmetic(side, integers) for side in (node.left, node.right))
    return False


def _range_targets(loop) -> set[str]:
    if isinstance(loop, gast.For) and annotation(loop, RANGE_LOOP, False):
        return set(names_written(loop.target))
    return set()


def _basic_index(index: gast.expr, counters: set[str]) -> bool:
    """An index made of integer literals, loop counters, slices, None and ``...`` only."""
    if isinstance(index, gast.Tuple):
        return all(_basic_index(e, counters) for e in index.elts)
    if isinstance(index, gast.Slice):
        return all(
            p is None or _basic_index(p, counters) for p in (index.lower, index.upper, index.step)
        )
    if isinstance(index, gast.Constant):
        return type(index.value) is int or index.value is None or index.value is Ellipsis
    if isinstance(index, gast.UnaryOp) and isinstance(index.operand, gast.Constant):
        return type(index.operand.value) is int
    return isinstance(index, gast.Name) and index.id in counters


def _indexed_by_counters(body, counters: set[str]) -> set[str]:
    """Arrays a loop body reads at basic indices (candidates for in-place accumulation)."""
    found = set()
    for node in nested_statements(body):
        if (
            isinstance(node, gast.Assign)
            and isinstance(node.value, gast.Subscript)
            and isinstance(node.value.value, gast.Name)
            and _basic_index(node.value.slice, counters)
        ):
            found.add(node.value.value.id)
    return found


def _argument_stem(value, parameter: str) -> str:
    """Name a callee's cotangent after the caller's argument when it is a plain name."""
    node = getattr(value, "node", None)
    return node.id if isinstance(node, gast.Name) else parameter


def _popped_list(statement) -> str | None:
    """The list ``v = items.pop()`` pops from, or None."""
    value = statement.value
    if method_receiver(value, "pop") is not None and not value.args:
        return value.func.value.id
    return None


def _iteration_local(body: list[gast.stmt], read_elsewhere: frozenset = frozenset()) -> set[str]:
    """Variables one pass over ``body`` assigns before it reads them, used nowhere else.

    Inside an ``if``, a variable is local to a branch when that branch assigns it before
    reading it and nothing outside the branch reads it.
    """
    seen_reads: set[str] = set()
    local: set[str] = set()
    for index, statement in enumerate(body):
        if isinstance(statement, gast.Assign) and isinstance(
            statement.targets[0], (gast.Name, gast.Tuple)
        ):
            seen_reads |= names_read(statement.value)
            for name in names_written(statement.targets[0]):
                if name not in seen_reads and name not in read_elsewhere:
                    local.add(name)
        elif isinstance(statement, gast.If):
            rest = body[:index] + body[index + 1 :]
            outside = set(read_elsewhere).union(*(names_read(s) for s in rest))
            for branch, other in (
                (statement.body, statement.orelse),
                (statement.orelse, statement.body),
            ):
                elsewhere = frozenset(
                    outside.union(*(names_read(s) for s in other)) | names_read(statement.test)
                )
                local |= _iteration_local(branch, elsewhere) - seen_reads
            seen_reads |= names_read(statement)
        else:
            seen_reads |= names_read(statement)
            seen_reads |= names_written(statement)  # conditional writes are not definite
    return local


def _write_counts(statements) -> Counter:
    """How many times a path through ``statements`` may bind each name: two bindings in
    one arm of a branch overwrite as much as two side by side (``parts = []`` twice in an
    ``if`` lost the first list, whose items the backward sweep reads); the two arms of a
    branch count as one path each."""
    counts: Counter = Counter()
    for statement in statements:
        if isinstance(statement, gast.If):
            counts.update(names_written(statement.test))
            counts.update(_write_counts(statement.body) | _write_counts(statement.orelse))
        elif isinstance(statement, (gast.For, gast.While)):
            header = statement.target if isinstance(statement, gast.For) else statement.test
            counts.update(names_written(header))
            counts.update(_write_counts(statement.body))
            counts.update(_write_counts(statement.orelse))
        else:
            counts.update(names_written(statement))
    return counts


def _breaks(body) -> bool:
    for statement in body:
        if isinstance(statement, gast.Break):
            return True
        if isinstance(statement, (gast.For, gast.While, gast.FunctionDef)):
            continue
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and _breaks(inner):
                return True
    return False


def _reads(node: gast.AST, name: str) -> bool:
    return any(isinstance(n, gast.Name) and n.id == name for n in walk(node))


def _marker_key(statement, prefix: str) -> int | None:
    text = string_statement(statement)
    if text is not None and text.startswith(prefix):
        return int(text[len(prefix) :])
    return None


def _marker_tree(statements, prefix: str, origin: Callable) -> list:
    """The keys of the markers in ``statements`` in order and, in their place, for each
    statement holding some, ``(origin(statement), [(field, its tree), ...])``."""
    tree: list = []
    for statement in statements:
        key = _marker_key(statement, prefix)
        if key is not None:
            tree.append(key)
            continue
        if isinstance(statement, gast.FunctionDef):
            continue
        arms = []
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                inner_tree = _marker_tree(inner, prefix, origin)
                if inner_tree:
                    arms.append((field, inner_tree))
        if arms:
            tree.append((origin(statement), arms))
    return tree


def _reversed_tree(tree: list) -> list:
    """``tree`` in the order the backward sweep must restore it."""
    return [
        item if isinstance(item, int) else (item[0], [(f, _reversed_tree(t)) for f, t in item[1]])
        for item in reversed(tree)
    ]


def _without_orphan_comments(statements: list[gast.stmt]) -> list[gast.stmt]:
    """``statements`` without the ``# grad of:`` comments whose code went."""
    kept = []
    for index, statement in enumerate(statements):
        if _is_comment(statement):
            following = statements[index + 1] if index + 1 < len(statements) else None
            if following is None or _is_comment(following):
                continue
        kept.append(statement)
    return kept


def _is_comment(statement) -> bool:
    text = string_statement(statement)
    return text is not None and text.startswith(COMMENT_MARK)


def _is_marker(statement) -> bool:
    text = string_statement(statement)
    return text is not None and text.startswith(("__s2s_pop__:", "__s2s_push__:"))


def _has_code(statements) -> bool:
    """Whether ``statements`` do anything: not only ``pass``, comments and markers."""
    return any(not isinstance(s, gast.Pass) and string_statement(s) is None for s in statements)


def _locate_all(statement: gast.stmt, like: gast.AST) -> gast.stmt:
    if getattr(like, "lineno", None) is None:
        return statement
    for node in walk(statement):
        if "lineno" in getattr(node, "_attributes", ()):
            node.lineno = like.lineno
            node.col_offset = 0
            node.end_lineno = like.lineno
            node.end_col_offset = 0
    return statement


def _describe(primitive) -> str:
    name = getattr(primitive, "__qualname__", None) or getattr(primitive, "__name__", None)
    module = getattr(primitive, "__module__", None)
    if name and module == "_operator":
        return f"the operator {name}"
    return f"{module}.{name}" if name and module else repr(primitive)


def _primitive_name(primitive) -> str:
    name = getattr(primitive, "__name__", None) or "primitive"
    return name if name.isidentifier() else "primitive"
