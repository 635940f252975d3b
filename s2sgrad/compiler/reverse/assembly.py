"""Putting reverse mode together: the forward sweep, the backward sweep, the saves between.

:func:`reverse_sweeps` studies the body (``facts``), runs the forward sweep, which records
a step per statement, seeds the output's cotangent, runs the backward sweep over the
steps in reverse, keeps the saves the backward sweep reads, and hands the pipeline the
pieces of the derivative function (:class:`ReverseSweeps`).
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

import gast

from s2sgrad.compiler.frontend import ParsedFunction
from s2sgrad.compiler.inline import Namespace
from s2sgrad.compiler.optimize.views import arrays_updated_in_place, views_of_updated_arrays
from s2sgrad.compiler.passes.activity import Activity
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.reverse.adjoints import Adjoints
from s2sgrad.compiler.reverse.backward_sweep import BackwardSweep
from s2sgrad.compiler.reverse.calls import CalleeVJP, Calls, unnested
from s2sgrad.compiler.reverse.context import Context
from s2sgrad.compiler.reverse.cotangents import Cotangents
from s2sgrad.compiler.reverse.forward_sweep import ForwardSweep
from s2sgrad.compiler.reverse.recompute import recompute_in_loops
from s2sgrad.compiler.reverse.rules import RuleAdjoints
from s2sgrad.compiler.reverse.saves import Saves
from s2sgrad.compiler.reverse.shape_saves import read_for_shape_only
from s2sgrad.compiler.steps import CALLS, Step
from s2sgrad.compiler.syntax import (
    constant,
    load,
    names_changed_in_place,
    names_read,
    nested_statements,
)
from s2sgrad.errors import UnsupportedError

__all__ = ["ReverseSweeps", "reverse_sweeps"]


@dataclass
class ReverseSweeps:
    """The pieces the pipeline assembles into a gradient or VJP function."""

    forward: list[gast.stmt]
    backward: list[gast.stmt]
    output: gast.expr  # the returned value(s) as atoms
    output_cotangent: str  # name the backward sweep reads the output's cotangent from
    adjoints: dict[str, str | None]  # wrt parameter → its cotangent's name (None: no path)


def reverse_sweeps(
    parsed: ParsedFunction,
    body: list[gast.stmt],
    wrt: list[str],
    activity: Activity,
    names: NameGenerator,
    namespace: Namespace,
    local_names: set[str],
    callee_vjp: CalleeVJP,
    containers: Set[str] = frozenset(),
    aux: bool = False,
    dynamic: bool = True,
    classified: dict[int, tuple] | None = None,
) -> ReverseSweeps:
    """Build the forward and backward sweeps of ``body`` differentiated wrt ``wrt``.

    ``callee_vjp(function, active_parameters, call_node, containers)`` returns the compiled
    VJP of a user function called with those parameters active (``containers``: those
    given a list, tuple or dict): ``f_vjp(*args)`` returns ``(value, saved)`` and
    ``f_vjp.backward(saved, g)`` the cotangents. ``classified``: the operations of values
    the activity analysis classified (``{id(value): (value, operation)}``), not changed
    since, which the sweeps take instead of classifying the values again.

    Example::

        sweeps = reverse_sweeps(parsed, body, ["x"], activity, names, namespace, local_names,
                                callee_vjp)
        sweeps.forward, sweeps.backward  # the statements of f_vjp and of f_vjp.backward
    """
    context = Context(
        parsed, wrt, activity, names, namespace, local_names, containers, aux, dynamic, classified
    )
    *statements, final = body
    if not isinstance(final, gast.Return) or final.value is None:
        raise UnsupportedError(
            f"{parsed.location(final)}: the function must end with a 'return' of "
            "the value to differentiate"
        )
    context.study(statements, body)
    cotangents, saves = Cotangents(context), Saves(context)
    calls = Calls(context, cotangents, callee_vjp)
    forward_sweep = ForwardSweep(context, saves, calls)
    forward_sweep.check_mutations(statements)
    steps: list[Step] = []
    forward = forward_sweep.forward_block(statements, in_loop=False, steps=steps)
    output = final.value
    single = isinstance(output, gast.Name) and context.active(output.id)
    out_name = cotangents.adjoint(output.id) if single else names.claim("dout")
    seed = _seed_output(context, cotangents, output, out_name, final)
    adjoints = Adjoints(context, cotangents, saves, calls, RuleAdjoints(context, cotangents))
    backward_sweep = BackwardSweep(context, cotangents, saves, adjoints)
    backward = seed + backward_sweep.backward_block(steps, later_reads=names_read(final))
    # what the backward sweep reads matters for saves and for values set in blocks
    read_back: set[str] = set()
    views: dict = {}
    if saves.saves:
        saves.check_restores_mirror_saves(forward, backward)
        views = views_of_updated_arrays(forward)
        reads: dict = {}  # what each backward statement reads, for the two passes below
        adjoint_names = set(cotangents.adjoint_names.values())
        read_back = saves.mark_used_saves(backward, adjoint_names, views, reads)
        # what the function returns is read before the backward sweep (assemble.py keeps
        # it when the backward changes it); only the gradients, read after, name parameters
        saves.drop_last_restores(backward, context.parameters, reads)
    elif any(isinstance(s, _BLOCKS) for s in statements):  # initial_values reads it
        # nothing saved: no marker to check, no save to mark or drop, no view to follow
        read_back, _ = saves.kept_reads(backward)
    read_back -= recompute_in_loops(saves, forward, backward)
    saves.shape_only = _read_for_shape_only(context, saves, forward, backward, views)
    forward, backward = saves.place_saves(forward, backward)
    retargeted = _retargeted(steps)
    forward = unnested(forward, retargeted, names)
    forward = saves.initial_values(statements, read_back) + forward
    gradients = {w: (cotangents.adjoint_names[w] if w in cotangents.defined else None) for w in wrt}
    return ReverseSweeps(forward, backward, output, out_name, gradients)


_BLOCKS = (gast.If, gast.For, gast.While)  # the statements initial_values looks into
_CALLING = tuple(CALLS)  # Step.calls's derivatives, compared without hashing an Enum


def _retargeted(steps: list[Step]) -> dict[int, gast.expr | None]:
    """The target of each statement (by id) whose step calls a derivative, nested ones too."""
    found = {}
    for top in steps:
        for step in top.walk() if top.body or top.orelse else (top,):
            if step.derivative in _CALLING:
                found[id(step.statement)] = step.target
    return found


def _read_for_shape_only(context, saves, forward, backward, views) -> set[str]:
    """The saved variables whose restored values the backward sweep reads only for their
    shapes (not an index a restore reads, nor a view of an array updated in place)."""
    if not any(s.used and s.kind == "assign" for s in saves.saves.values()):
        return set()
    found = read_for_shape_only(backward, context.helper("unbroadcast").id, saves.restored)
    if found:
        _, indices = saves.kept_reads(backward)
        # an array updated in place must be saved itself; a view of one read only for its
        # shape (t5 = out[t - 1] before out[t] = v) is pushed as a stand-in like any value,
        # so no save shares memory with an array the loop changes
        found -= indices | (set(views) & arrays_updated_in_place(forward))
        # an array the backward sweep restores items of must be the array itself
        found -= {s.target for s in saves.saves.values() if s.used and s.index is not None}
        inner = nested_statements(backward)
        found -= {n for s in inner for n in names_changed_in_place(s)}
    return found


def _seed_output(context, cotangents, output, out_name, final) -> list[gast.stmt]:
    """The output's cotangent given to what the function returns (``dout[i]`` to each
    entry of a returned tuple; with ``aux``, all of it to the first)."""
    if isinstance(output, gast.Tuple):
        elements = output.elts[:1] if context.aux else output.elts
        block: list[gast.stmt] = []
        for index, element in enumerate(elements):
            if isinstance(element, gast.Name) and context.active(element.id):
                source = load(out_name)
                if not context.aux:
                    source = gast.Subscript(value=source, slice=constant(index), ctx=gast.Load())
                block.extend(cotangents.contribute(element.id, source, final))
        return block
    if isinstance(output, gast.Name) and context.active(output.id):
        cotangents.adjoint_names[output.id] = out_name
        cotangents.defined.add(output.id)
    return []
