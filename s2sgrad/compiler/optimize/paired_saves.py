"""Saves a helper's backward function never reads, dropped from both of its functions.

A helper's VJP is two functions: the forward one returns ``(value, saved)``, the backward
one unpacks ``saved`` and pops the stacks in it. Finished apart, neither knows what the
other does with a stack or a saved value, so :func:`drop_unneeded_saves` leaves them be.
Once both are specialised to one signature, they are read together here: a stack push
whose restored value the backward function never reads goes from both (``t14`` below),
and so does a saved value the backward function rebinds before any read (``out``)::

    def f_vjp(x, w):                         def f_vjp_backward(saved, g):
        stack = []                               out, stack, t14, x = saved
        ...                                      stack_ = list(stack)
        for i in t8:                             for i in reversed(t8):
            stack.append(shape_only(t14))            out = stack_.pop()
            t14 = x[i] @ w                           dout = unbroadcast(g, out)
            stack.append(shape_only(out))            t14 = stack_.pop()
            out = out + t14                          ...
        return (out, (shape_only(out), stack, shape_only(t14), x))

becomes a forward function that pushes ``shape_only(out)`` alone and saves ``(stack, x)``.

Example::

    forward_body, backward_body = drop_paired_saves(forward, backward, is_pure)
"""

from __future__ import annotations

from collections.abc import Callable

import gast

from s2sgrad.compiler.annotations import SAVE_INIT, annotation
from s2sgrad.compiler.optimize.optimizer import optimize
from s2sgrad.compiler.optimize.saves import (
    Restores,
    popped_name,
    pushed_name,
    pushed_stacks,
    walk_with_loops,
    without_saves,
)
from s2sgrad.compiler.syntax import method_receiver, names_read, walk

__all__ = ["drop_paired_saves", "returned_pair", "saved_pair"]


def drop_paired_saves(
    forward: gast.FunctionDef, backward: gast.FunctionDef, is_pure: Callable[[gast.Call], bool]
) -> bool:
    """Drop, in place, the stack entries and saved values of a VJP's forward function
    that its backward function never reads; say whether anything changed.

    Nothing changes unless the two have the plain shape assembly gives them: the forward
    function ends ``return (value, (e1, e2, ...))`` and the backward function starts
    ``n1, n2, ... = saved``.

    Example::

        if drop_paired_saves(forward_node, backward_node, is_pure):
            ...  # compile both again
    """
    pair = saved_pair(forward, backward)
    if pair is None:
        return False
    entries, names = pair
    stacks = pushed_stacks(forward.body)  # the other entries have no push to drop
    changed = False
    for position, entry in enumerate(entries):
        if (
            type(entry) is gast.Name
            and entry.id in stacks
            and _drop_unread_pushes(forward, backward, entry.id, names[position])
        ):
            changed = True
    if changed:
        backward.body = optimize(backward.body, is_pure)
    live = _exposed(backward.body[1:], set())
    kept = [i for i, name in enumerate(names) if name in live]
    if len(kept) == len(names):
        return changed
    if not kept:
        return changed  # an empty saved tuple would need another unpacking: leave it
    forward_return, unpack = forward.body[-1], backward.body[0]
    forward_return.value.elts[1].elts = [entries[i] for i in kept]
    unpack.targets[0].elts = [unpack.targets[0].elts[i] for i in kept]
    forward.body = optimize(forward.body, is_pure)
    backward.body = optimize(backward.body, is_pure)
    return True


def returned_pair(forward: gast.FunctionDef) -> gast.Return | None:
    """The forward function's last statement, ``return (value, (saved, ...))``, as assembly
    writes it; None if it is not that."""
    if not forward.body:
        return None
    last = forward.body[-1]
    if (
        type(last) is gast.Return
        and type(last.value) is gast.Tuple
        and len(last.value.elts) == 2
        and type(last.value.elts[1]) is gast.Tuple
    ):
        return last
    return None


def saved_pair(forward, backward) -> tuple[list[gast.expr], list[str]] | None:
    """The forward function's saved expressions and the names the backward function
    unpacks them into, position by position; None if either is not as assembly writes it."""
    if not backward.body or not backward.args.args:
        return None
    last, first = returned_pair(forward), backward.body[0]
    if last is None:
        return None
    saved_parameter = backward.args.args[0].id
    if not (
        type(first) is gast.Assign
        and len(first.targets) == 1
        and type(first.targets[0]) is gast.Tuple
        and type(first.value) is gast.Name
        and first.value.id == saved_parameter
        and all(type(t) is gast.Name for t in first.targets[0].elts)
    ):
        return None
    entries = last.value.elts[1].elts
    names = [t.id for t in first.targets[0].elts]
    if len(entries) != len(names) or len(set(names)) != len(names):
        return None
    if saved_parameter in names_read(gast.Module(body=backward.body[1:], type_ignores=[])):
        return None
    return entries, names


def _drop_unread_pushes(forward, backward, stack: str, unpacked: str) -> bool:
    """Drop the pushes onto the forward function's ``stack`` (saved as ``unpacked``) of
    values the backward function never reads once popped, and their pops."""
    pushed = _only_stack_uses(forward.body, stack, "append", extra_reads=1)  # + the return
    if pushed is None:
        return False
    popped_from = _popping_name(backward.body[1:], unpacked)
    popped = _only_stack_uses(backward.body[1:], popped_from, "pop", extra_reads=0)
    if popped_from != unpacked and _reads(backward.body[1:], unpacked) != 1:
        return False  # the saved stack is read other than to copy it
    if popped is None or sorted(pushed) != sorted(popped):
        return False  # every push must have its pop, name for name, or the two can drift
    saves = Restores(list(walk_with_loops(backward.body, ())))
    unread = {name for name in set(pushed) if not saves.read_after_restore(popped_from, name)}
    if not unread:
        return False
    forward.body = without_saves(forward.body, {(stack, name) for name in unread})
    still_pushed = {  # onto any stack
        name
        for statement, _ in walk_with_loops(forward.body, ())
        if type(statement) is gast.Expr
        and type(statement.value) is gast.Call
        and type(statement.value.func) is gast.Attribute
        and type(statement.value.func.value) is gast.Name
        and (name := pushed_name(statement, statement.value.func.value.id)) is not None
    }
    forward.body = [  # ``t14 = None``, there for the first push
        s
        for s in forward.body
        if not (annotation(s, SAVE_INIT, False) and s.targets[0].id not in still_pushed)
    ]
    backward.body = without_saves(backward.body, {(popped_from, name) for name in unread})
    return True


def _popping_name(body, unpacked: str) -> str:
    """The name the backward function pops the saved stack through: its private copy
    (``stack_ = list(stack)``) or the unpacked name itself."""
    for statement in body:
        if type(statement) is not gast.Assign:
            continue
        value = statement.value
        if (
            type(statement.targets[0]) is gast.Name
            and type(value) is gast.Call
            and type(value.func) is gast.Name
            and value.func.id == "list"
            and len(value.args) == 1
            and type(value.args[0]) is gast.Name
            and value.args[0].id == unpacked
        ):
            return statement.targets[0].id
    return unpacked


def _only_stack_uses(body, stack: str, method: str, extra_reads: int) -> list[str] | None:
    """The names ``body`` pushes onto (or pops from) ``stack``, one per statement, if the
    stack is used for nothing else (but ``extra_reads`` more reads); else None."""
    statements = [s for s, _ in walk_with_loops(body, ())]
    found = []
    for statement in statements:
        name = (
            pushed_name(statement, stack) if method == "append" else popped_name(statement, stack)
        )
        if name is not None:
            found.append(name)
    reads = _reads(body, stack)
    other_methods = sum(
        1
        for node in walk(gast.Module(body=body, type_ignores=[]))
        if type(node) is gast.Call
        and any(method_receiver(node, m) == stack for m in ("append", "pop") if m != method)
    )
    if other_methods or reads != len(found) + extra_reads:
        return None
    return found


def _reads(body, name: str) -> int:
    """How many times ``body`` reads ``name``."""
    return sum(
        1
        for node in walk(gast.Module(body=body, type_ignores=[]))
        if type(node) is gast.Name and node.id == name and type(node.ctx) is gast.Load
    )


def _exposed(body: list[gast.stmt], live_after: set[str]) -> set[str]:
    """The names ``body`` may read before it surely writes them, given the names read
    after it (conservative: only plain assignments count as sure writes)."""
    live = set(live_after)
    for statement in reversed(body):
        kind = type(statement)
        if kind is gast.If:
            live = (
                names_read(statement.test)
                | _exposed(statement.body, live)
                | _exposed(statement.orelse, live)
            )
        elif kind in (gast.For, gast.While):
            header = statement.iter if kind is gast.For else statement.test
            head = live | names_read(header) | _exposed(statement.orelse, live)
            body_in: set[str] = set()
            while True:  # a pass of the body may read what the one before it left
                again = _exposed(statement.body, head | body_in)
                if again <= body_in:
                    break
                body_in |= again
            live = head | body_in
        elif kind is gast.Assign and all(_plain_target(t) for t in statement.targets):
            live = (live - _targets(statement.targets)) | names_read(statement.value)
        else:  # ``d += e`` reads ``d`` too
            live = live | names_read(statement) | _augmented(statement)
    return live


def _augmented(statement) -> set[str]:
    if type(statement) is gast.AugAssign and type(statement.target) is gast.Name:
        return {statement.target.id}
    return set()


def _plain_target(target) -> bool:
    if type(target) is gast.Name:
        return True
    return type(target) in (gast.Tuple, gast.List) and all(
        type(t) is gast.Name for t in target.elts
    )


def _targets(targets) -> set[str]:
    names: set[str] = set()
    for target in targets:
        names |= {target.id} if type(target) is gast.Name else {t.id for t in target.elts}
    return names
