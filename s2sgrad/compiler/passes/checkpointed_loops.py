"""Checkpointed loops: the body of ``for t in sg.checkpointed(range(n), snapshots=k):``
becomes a step function, and the loop a call of ``run_checkpointed``.

::

    for t in sg.checkpointed(range(n), snapshots=k):
        h = np.tanh(W @ h + x[t])

becomes (``loss_loop_step`` is the body, made a function of the loop state and the values
the body reads, returning the state)::

    h, = run_checkpointed(loss_loop_step, (h,), (W, x), range(n), k)

The loop state (*carried*) is every variable the body assigns that is bound before the
loop; what the body only reads (weights, data) is passed unchanged, so that its cotangents
add up step by step. The derivative of ``run_checkpointed`` (``s2sgrad/controls.py``)
reverses the loop with the Revolve schedule, differentiating the step function on the
engine that called. The step function is compiled at the user's lines, and the frontend
parses it from the syntax tree made here (``parsed_step``), so refusals inside the body
name the user's lines. In forward mode the marker is dropped: forward mode keeps nothing.

What the rewrite cannot carry is refused with the loop's line: ``break``, ``continue``,
``return`` or ``yield`` in the body, ``global``/``nonlocal``, an ``else:`` block, a loop
target other than one name, an iterable other than ``range(...)``, writes into arrays or
attributes the body did not create, and a variable first assigned in the body and read
after the loop.
"""

from __future__ import annotations

import ast
import builtins
import os
import textwrap
import types
import weakref
from typing import Any, cast

import gast

from s2sgrad.compiler.codegen import to_source
from s2sgrad.compiler.frontend import ParsedFunction, parse_function
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.python_ast import to_python_ast
from s2sgrad.compiler.syntax import (
    MUTATING_METHODS,
    arguments,
    call,
    clone,
    constant,
    load,
    located,
    names_read,
    names_written,
    nested_statements,
    parameter_names,
    store,
    walk,
)
from s2sgrad.errors import S2SGradError, UnsupportedError
from s2sgrad.runtime import hooks
from s2sgrad.runtime.revolve import checkpointed, run_checkpointed

__all__ = [
    "rewrite_checkpointed_loops",
    "mark_differentiated_reads",
    "parsed_step",
    "primal_for_tape",
]

_STEP_PARSED = "__s2sgrad_parsed__"


def rewrite_checkpointed_loops(
    node: gast.FunctionDef, parsed: ParsedFunction, names: NameGenerator, kind: str, s2s: bool
) -> dict[str, Any]:
    """Rewrite the checkpointed loops of ``node`` in place; return the names the new code
    reads (``run_checkpointed`` and each step function) with their objects.

    ``kind`` is the derivative's (``"jvp"`` drops the marker); ``s2s``: the step functions
    are differentiated by source transformation only (mode="s2s").

    Example::

        rewrite_checkpointed_loops(node, parsed, names, "grad", False)  # {'run_checkpointed': ...}
    """
    bound: dict[str, Any] = {}
    helper = None  # the name the code calls run_checkpointed by
    for block, index, loop in _marked_loops(node.body, parsed):
        iterable, snapshots = _marker_arguments(loop, parsed)
        if kind == "jvp":
            loop.iter = iterable
            continue
        _refuse_what_cannot_be_carried(loop, iterable, parsed)
        carried, read = _state(node, loop, parsed)
        if not carried:  # the loop changes no variable of the function: a plain loop
            loop.iter = iterable
            continue
        step_name = names.claim(f"{node.name}_loop_step")
        helper = helper or names.claim("run_checkpointed")
        step = _step_function(step_name, loop, carried, read, parsed)
        step.s2s_only = s2s
        bound[step_name] = step
        block[index : index + 1] = _loop_call(
            loop, helper, step_name, carried, read, iterable, snapshots
        )
    if helper is not None:
        bound[helper] = run_checkpointed
    return bound


def mark_differentiated_reads(
    node: gast.FunctionDef, parsed: ParsedFunction, varied, nodes: list[gast.AST] | None = None
) -> bool:
    """Tell each ``run_checkpointed`` call which values the body reads are differentiated
    (``varied``: the names that depend on a differentiated argument), so that the loop's
    derivative gives no cotangent to the data it reads (``x[t]`` would cost an array the
    size of ``x`` at each step). ``nodes``: ``walk(node)``, when the caller has it.
    Returns whether it marked any call.

    Example::

        mark_differentiated_reads(node, parsed, {"W", "h"})
        # run_checkpointed(step, (h,), (W, x), range(n), k, differentiated=(True, False))
    """
    marked = False
    for call_node in walk(node) if nodes is None else nodes:
        if not (isinstance(call_node, gast.Call) and len(call_node.args) == 5):
            continue
        if parsed.resolve(call_node.func) is not run_checkpointed:
            continue
        read = call_node.args[2]
        if not isinstance(read, gast.Tuple) or call_node.keywords:
            continue
        marks = [not isinstance(e, gast.Name) or e.id in varied for e in read.elts]
        tuple_of_marks = gast.Tuple(elts=[constant(m) for m in marks], ctx=gast.Load())
        call_node.keywords = [gast.keyword(arg="differentiated", value=tuple_of_marks)]
        marked = True
    return marked


def parsed_step(function: Any) -> ParsedFunction | None:
    """The parsed function a checkpointed loop's step function was made from (a fresh
    copy), or None for any other function.

    Example::

        parsed_step(step)  # ParsedFunction(node=def loss_loop_step(h, W, t): ...)
    """
    make = getattr(function, _STEP_PARSED, None)
    return make() if make is not None else None


# finding the loops --------------------------------------------------------------------------


def _marked_loops(body: list[gast.stmt], parsed: ParsedFunction):
    """``(block, index, loop)`` of each outermost checkpointed loop, last first (so that
    replacing one keeps the indices of the others)."""
    found: list = []
    _find_marked(body, parsed, found)  # no recursive closure: it would leave a cycle
    return reversed(found)


def _find_marked(block: list[gast.stmt], parsed: ParsedFunction, found: list) -> None:
    for index, statement in enumerate(block):
        if _is_marked(statement, parsed):
            found.append((block, index, statement))
            continue
        if not isinstance(statement, (gast.FunctionDef, gast.ClassDef)):
            for inner in _inner_blocks(statement):
                _find_marked(inner, parsed, found)


def _inner_blocks(statement: gast.stmt) -> list[list[gast.stmt]]:
    blocks = [getattr(statement, field, None) for field in ("body", "orelse", "finalbody")]
    blocks += [h.body for h in getattr(statement, "handlers", None) or ()]
    blocks += [c.body for c in getattr(statement, "cases", None) or ()]
    return [block for block in blocks if isinstance(block, list)]


def _is_marked(statement: gast.stmt, parsed: ParsedFunction) -> bool:
    if not isinstance(statement, (gast.For, gast.AsyncFor)):
        return False
    marker = statement.iter
    return isinstance(marker, gast.Call) and parsed.resolve(marker.func) is checkpointed


def _marker_arguments(loop: gast.For, parsed: ParsedFunction) -> tuple[gast.expr, gast.expr]:
    """The iterable and the ``snapshots`` expression of ``checkpointed(...)``."""
    marker = loop.iter
    given = dict(zip(("iterable", "snapshots"), marker.args))
    for keyword in marker.keywords:
        if keyword.arg is None or keyword.arg in given:
            given = {}
            break
        given[keyword.arg] = keyword.value
    starred = any(isinstance(a, gast.Starred) for a in marker.args)
    if (
        starred
        or "iterable" not in given
        or len(marker.args) > 2
        or set(given)
        - {
            "iterable",
            "snapshots",
        }
    ):
        raise _refusal(
            loop, parsed, "its checkpointed(...) call", "write checkpointed(range(n), snapshots=k)"
        )
    return given["iterable"], given.get("snapshots", constant(None))


# what the rewrite cannot carry ----------------------------------------------------------------


def _refusal(loop: gast.AST, parsed: ParsedFunction, what: str, instead: str) -> UnsupportedError:
    return UnsupportedError(
        f"{parsed.location(loop)}: a checkpointed loop cannot be differentiated with {what} "
        f"({parsed.source_line(loop)!r}); {instead}"
    )


def _refuse_what_cannot_be_carried(loop: gast.For, iterable: gast.expr, parsed) -> None:
    if isinstance(loop, gast.AsyncFor) or loop.orelse:
        raise _refusal(loop, parsed, "an else: block", "move it after the loop")
    if not isinstance(loop.target, gast.Name):
        raise _refusal(loop, parsed, "a loop target other than one name", "unpack inside the body")
    if not (isinstance(iterable, gast.Call) and parsed.resolve(iterable.func) is builtins.range):
        raise _refusal(
            loop,
            parsed,
            "an iterable other than range(...)",
            "loop over range(len(items)) and index the items in the body",
        )
    for statement in _loop_level(loop.body):
        kind = type(statement)
        if kind in (gast.Break, gast.Continue, gast.Return):
            word = {gast.Break: "break", gast.Continue: "continue", gast.Return: "return"}[kind]
            raise _refusal(
                statement,
                parsed,
                f"'{word}' in its body",
                "run a fixed number of steps (keep the state unchanged in the steps that "
                "would be skipped), or use a plain loop",
            )
        if kind in (gast.Global, gast.Nonlocal):
            raise _refusal(statement, parsed, "global or nonlocal names", "pass values in")
    for expression in walk(gast.Module(body=loop.body, type_ignores=[])):
        if isinstance(expression, (gast.Yield, gast.YieldFrom, gast.Await)):
            raise _refusal(loop, parsed, "yield or await in its body", "use a plain loop")
    _refuse_outer_writes(loop, parsed)


def _loop_level(body: list[gast.stmt]):
    """The statements of ``body`` whose ``break``/``continue`` would leave this loop."""
    for statement in body:
        yield statement
        if isinstance(statement, (gast.FunctionDef, gast.ClassDef)):
            continue
        if isinstance(statement, (gast.For, gast.While)):
            yield from (s for s in nested_statements(statement.body) if type(s) is gast.Return)
            yield from _loop_level(statement.orelse)
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                yield from _loop_level(inner)
        for handler in getattr(statement, "handlers", None) or ():
            yield from _loop_level(handler.body)


def _refuse_outer_writes(loop: gast.For, parsed: ParsedFunction) -> None:
    """An item or attribute written into a value the body did not make would be written
    once per recomputation, and its derivative would not reach the loop's state."""
    made = {loop.target.id}
    for statement in loop.body:
        made |= names_written(statement)
    for node in walk(gast.Module(body=loop.body, type_ignores=[])):
        base = None
        if isinstance(node, (gast.Subscript, gast.Attribute)) and isinstance(node.ctx, gast.Store):
            base = node.value
        elif (
            isinstance(node, gast.Call)
            and isinstance(node.func, gast.Attribute)
            and node.func.attr in MUTATING_METHODS
        ):
            base = node.func.value  # items.append(h)
        if base is not None:
            while isinstance(base, (gast.Subscript, gast.Attribute)):
                base = base.value
            if not isinstance(base, gast.Name) or base.id not in made:
                raise _refusal(
                    loop,
                    parsed,
                    "a write into an array or object made before the loop",
                    "build the values in the loop state instead (e.g. h = h + ..., or "
                    "collect them in a list assigned in the body)",
                )


# the loop state -------------------------------------------------------------------------------


def _state(node: gast.FunctionDef, loop: gast.For, parsed) -> tuple[list[str], list[str]]:
    """The variables the loop carries (the body assigns them, and they are bound before it),
    and those the body only reads (locals of the function, and its closure variables)."""
    target = loop.target.id
    written = set().union(*(names_written(s) for s in loop.body)) - {target}
    read = set().union(*(names_read(s) for s in loop.body)) - written - {target}
    before = _bound_before(node, loop)
    outside = _read_outside(node, loop)
    for name in sorted(written - before):
        if name in outside:
            raise _refusal(
                loop,
                parsed,
                f"'{name}' first assigned in its body and read after it",
                f"assign {name} before the loop",
            )
    if target in outside:  # after the loop it would keep the value it had before
        raise _refusal(
            loop,
            parsed,
            f"its loop variable '{target}' also read outside it",
            "give the loop variable a name of its own",
        )
    local = parameter_names(node)
    for statement in node.body:
        local |= names_written(statement)
    closure = {name for name in read if name in parsed.closure and name not in local}
    return sorted(written & before), sorted((read & local) | closure)


def _bound_before(node: gast.FunctionDef, loop: gast.For) -> set[str]:
    """The names that may be bound when ``loop`` starts: parameters, names assigned by the
    statements before it in every enclosing block, and whatever enclosing loops assign."""
    bound = parameter_names(node)
    _bind_up_to(node.body, loop, bound)
    return bound


def _bind_up_to(block: list[gast.stmt], loop: gast.For, bound: set[str]) -> bool:
    """Add to ``bound`` what ``block`` binds before ``loop``; whether ``loop`` is in it."""
    for statement in block:
        if statement is loop:
            return True
        if not isinstance(statement, (gast.FunctionDef, gast.ClassDef)):
            for inner in _inner_blocks(statement):
                if _bind_up_to(inner, loop, bound):
                    if isinstance(statement, (gast.For, gast.While)):
                        bound |= names_written(statement)  # from an earlier iteration
                    return True
        bound |= names_written(statement)
    return False


def _read_outside(node: gast.FunctionDef, loop: gast.For) -> set[str]:
    """Every name read in the function outside the loop's body."""
    inside = {id(n) for n in walk(gast.Module(body=loop.body, type_ignores=[]))}
    return {
        n.id
        for n in walk(node)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and id(n) not in inside
    }


# the step function and the call ----------------------------------------------------------------


def _step_definition(name: str, loop: gast.For, carried, read) -> gast.FunctionDef:
    parameters = [*carried, *read, loop.target.id]
    returned = gast.Return(value=gast.Tuple(elts=[load(n) for n in carried], ctx=gast.Load()))
    definition = gast.FunctionDef(
        name=name,
        args=arguments(parameters),
        body=[*clone(loop.body), located(returned, loop)],
        decorator_list=[],
        returns=None,
        type_comment=None,
        type_params=[],
    )
    return located(definition, loop)


def _step_function(name: str, loop: gast.For, carried, read, parsed: ParsedFunction):
    """The loop body as a function at the user's lines, reading the user's globals live."""
    definition = _step_definition(name, loop, carried, read)
    module = ast.Module(body=[cast(ast.stmt, to_python_ast(clone(definition)))], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, parsed.line_offset)
    code = compile(module, parsed.filename, "exec", dont_inherit=True)
    step_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    step = types.FunctionType(step_code, parsed.globals, name)
    step.__qualname__ = f"{parsed.function.__qualname__}.<loop body, line {_line(loop, parsed)}>"

    step_ref = weakref.ref(step)  # held by the step itself: no cycle

    def parse_again() -> ParsedFunction:
        return ParsedFunction(
            function=step_ref(),
            node=clone(definition),
            filename=parsed.filename,
            line_offset=parsed.line_offset,
            globals=parsed.globals,
            closure={},
        )

    setattr(step, _STEP_PARSED, parse_again)
    step.__dict__["checkpointed_loop_listing"] = _listing(definition, loop, carried, parsed)
    return step


def _listing(definition: gast.FunctionDef, loop: gast.For, carried, parsed) -> str:
    """The step function as ``sg.show`` prints it, under a comment that says what runs it."""
    place = f"{os.path.basename(parsed.filename)}:{_line(loop, parsed)}"
    note = textwrap.fill(
        f"the body of the checkpointed loop at {place}, a function of its state "
        f"({', '.join(carried)}) and of what it reads: run_checkpointed runs it once per "
        "step keeping at most `snapshots` copies of the state; its derivative runs steps "
        "again from the nearest copy (Revolve schedule) to differentiate them one at a "
        "time, last first",
        width=88,
        initial_indent="# ",
        subsequent_indent="# ",
    )
    return note + "\n" + to_source(clone(definition))


def _line(loop: gast.For, parsed: ParsedFunction) -> int:
    return parsed.line_offset + loop.lineno


def _loop_call(loop, helper: str, step: str, carried, read, iterable, snapshots) -> list:
    def pack(items: list[str]) -> gast.Tuple:
        return gast.Tuple(elts=[load(n) for n in items], ctx=gast.Load())

    value = call(helper, [load(step), pack(carried), pack(read), iterable, snapshots])
    targets = gast.Tuple(elts=[store(n) for n in carried], ctx=gast.Store())
    assignment = gast.Assign(targets=[targets], value=value, type_comment=None)
    return [located(assignment, loop)]


# the rewrite the tape runs ------------------------------------------------------------------------

_PRIMALS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def primal_for_tape(function: Any) -> Any:
    """``function`` with its checkpointed loops made calls of ``run_checkpointed`` (which the
    tape records as one operation whose derivative reverses the loop), or ``function``
    itself when it has none or its source cannot be read (then the loop runs plainly, which
    the tape differentiates right, keeping every step).

    Example::

        primal_for_tape(loss)(w, h)  # same value; on the tape, the loop is checkpointed
    """
    code = getattr(function, "__code__", None)
    if (
        code is None
        or not isinstance(function, types.FunctionType)
        or "checkpointed"
        not in (
            *code.co_names,
            *code.co_freevars,
        )
    ):
        return function
    kept = _PRIMALS.get(function)
    if kept is not None and kept[0] is code:
        return kept[1]
    try:
        parsed = parse_function(function)
    except S2SGradError:
        return function
    node = clone(parsed.node)
    names = NameGenerator({n.id for n in walk(node) if isinstance(n, gast.Name)} | {node.name})
    bound = rewrite_checkpointed_loops(node, parsed, names, "vjp", s2s=False)
    primal = _recompiled(function, parsed, node, bound) if bound else function
    _PRIMALS[function] = (code, primal)
    return primal


def _recompiled(function: types.FunctionType, parsed: ParsedFunction, node, bound: dict):
    """``node`` compiled as ``function`` with the names in ``bound`` added to its closure
    (its own closure cells are shared, so it reads them live)."""
    cells = dict(zip(function.__code__.co_freevars, function.__closure__ or ()))
    outer_names = [*cells, *bound]
    outer = cast(
        ast.FunctionDef, ast.parse(f"def __make__({', '.join(outer_names)}):\n    pass").body[0]
    )
    outer.body = [
        cast(ast.stmt, to_python_ast(node)),
        ast.Return(value=ast.Name(id=node.name, ctx=ast.Load())),
    ]
    module = ast.Module(body=[outer], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, parsed.line_offset)
    code = compile(module, parsed.filename, "exec", dont_inherit=True)
    maker = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in maker.co_consts if isinstance(c, types.CodeType))
    closure = tuple(
        cells[name] if name in cells else types.CellType(bound[name]) for name in inner.co_freevars
    )
    primal = types.FunctionType(
        inner, function.__globals__, function.__name__, function.__defaults__, closure
    )
    primal.__kwdefaults__ = function.__kwdefaults__
    primal.__qualname__ = function.__qualname__
    return primal


hooks.register_tape_primal(primal_for_tape)
