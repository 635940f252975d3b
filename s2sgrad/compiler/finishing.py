"""From raw derivative code to the code that runs: one ordered list of passes, run once.

The sweeps and assembly write *raw* code. It is finished in one of two ways, by the same
list of passes run in order by one loop (:func:`finish`):

* *generic* code (any shapes; what is differentiated again, and what ``source`` shows
  before a call) runs only the passes that do not need the arguments: common calls
  (``optimize/common.py``: a pure call repeated on the same operands is computed once)
  and the optimiser;
* code *specialised* to the shapes of a call runs all of them::

    instrument ─► probe ─► specialise sites ─► strip broadcast definitions ─► scatter sums
      ─► Python numbers ─► numbers computed again, not saved ─► common calls ─► optimise
      ─► reuse quotients ─► drop saves only shape queries read ─► uniform cotangents as numbers
      ─► strip broadcasts ─► fold constants ─► new axes by indexing ─► accumulate in place
      ─► items written once are assigned ─► arithmetic writes into new arrays
      ─► numbers: common factors out
      ─► backward loops iterate saved lists
      ─► math errors run the generic code

The first seven are the probe's (``compiler/specialize/``): if one fails, the call runs the
generic code instead (so do the ones that accumulate in place, write arithmetic into new
arrays and take common factors out of code on numbers, for the same reason). Stripping
broadcasts again, and folding after it, are for what the optimiser brought together (a
broadcast next to a full array).

Example::

    node = finish(clone(raw), Finishing(is_pure))  # the generic code
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gast

from s2sgrad.compiler.annotations import ARRAY_INDEX, NEW_AXES, SCATTER
from s2sgrad.compiler.codegen import GeneratedFunction, compile_ast, compile_function
from s2sgrad.compiler.free_names import depending
from s2sgrad.compiler.optimize import drop_unneeded_saves, fold_constants, optimize
from s2sgrad.compiler.optimize.common import eliminate_common_calls
from s2sgrad.compiler.optimize.facts import FactsCache
from s2sgrad.compiler.optimize.quotients import reuse_quotients
from s2sgrad.compiler.optimize.simple_statements import without_blocks
from s2sgrad.compiler.optimize.stack_loops import iterate_saved_stacks
from s2sgrad.compiler.purity import purity_of
from s2sgrad.compiler.specialize import probe, signature
from s2sgrad.compiler.specialize.broadcasts import (
    holds_broadcast_calls,
    strip_broadcast_definitions,
    strip_broadcasts_in,
)
from s2sgrad.compiler.specialize.exact_divisors import divide_exactly
from s2sgrad.compiler.specialize.fresh_arrays import update_fresh_arrays
from s2sgrad.compiler.specialize.in_place import accumulate_in_place
from s2sgrad.compiler.specialize.index_scatter import write_array_scatters
from s2sgrad.compiler.specialize.new_axes import index_new_axes
from s2sgrad.compiler.specialize.number_flow import simplify_number_flow
from s2sgrad.compiler.specialize.probe import Probing
from s2sgrad.compiler.specialize.rewrites import numpy_name
from s2sgrad.compiler.specialize.scalar_factors import cotangent_names, take_out_common_factors
from s2sgrad.compiler.specialize.scalar_saves import recompute_cheap_saves
from s2sgrad.compiler.specialize.scalars import falling_back, scalar_arguments, scalar_code
from s2sgrad.compiler.specialize.scatter import scatter_sums
from s2sgrad.compiler.specialize.single_writes import assign_single_writes
from s2sgrad.compiler.specialize.uniform import uniform_cotangents

__all__ = [
    "Finishing",
    "PASSES",
    "ProbeFailed",
    "finish",
    "specialised",
    "tidy",
    "without_garbage_collection",
]


@dataclass
class Finishing:
    """What the passes share while finishing one function: which calls are pure, and,
    when specialising, the probe's state."""

    is_pure: Callable[[gast.Call], bool]
    probing: Probing | None = None
    broadcasts_removed: bool = False  # by the last stripping, so folding has work again
    scalar: bool = False  # code on Python numbers (``specialize/scalars.py``)
    cotangents: frozenset = frozenset()  # its names computed from the seed
    numbers: frozenset = frozenset()  # uniform cotangents that hold a number now
    # the facts of the body's statements a pass walked them for, true of them until a
    # pass that does not keep them (``Pass.keeps_facts``): the optimiser starts from them
    facts: FactsCache | None = None
    # false once the optimiser's facts found no broadcast_to or expand_dims call left: the
    # passes after it make none, so the second stripping has nothing to strip
    broadcast_calls: bool = True


@dataclass(frozen=True)
class Pass:
    """One named step: ``run(node, finishing)`` returns the node to carry on with."""

    name: str
    run: Callable[[Any, Finishing], Any]
    specialising: bool = False  # needs the arguments: runs only when specialising
    probing: bool = False  # part of the probe: its failure leaves the generic code to run
    # leaves ``Finishing.facts`` true of the code: it changes nothing, or forgets (or drops
    # the facts) where it changes something; after any other pass (which may start from
    # them) they are dropped
    keeps_facts: bool = False


class ProbeFailed(Exception):
    """A probing pass failed (the user's code raised, or the probe could not be built)."""


def _instrument(node, finishing):
    return probe.instrument(node, finishing.probing)


def _probe(node, finishing):
    return probe.run(node, finishing.probing)


def _specialise_sites(node, finishing):
    return probe.specialise_sites(node, finishing.probing)


def _strip_broadcast_definitions(node, finishing):
    if finishing.probing.broadcast_free:  # else no use of a broadcast is marked restored
        finishing.facts = strip_broadcast_definitions(node)
    return node


def _scatter_sums(node, finishing):
    if SCATTER in finishing.probing.noted:  # else no index cotangent is marked
        facts = finishing.facts
        scatter_sums(node, finishing.probing.namespace, facts)  # forgets what it changes
        # its buffers are written in place, but are new arrays: no view of one is made
        if facts is not None and not facts.views_unchanged(node.body):
            finishing.facts = None
    return node


def _common_calls(node, finishing):
    node.body = eliminate_common_calls(node.body, finishing.is_pure, finishing.facts)
    # it puts new statements in the place of those it changes, changing none in place, and
    # forgets the loops and branches whose blocks changed: the others' records stay true
    # (the new ones, unknown to the cache, are walked when asked for), and so do the arrays
    # written in place and their views: the copy b = a it writes links two names neither
    # of which shares memory with an array written in place
    return node


def _optimise(node, finishing):
    facts = finishing.facts
    if facts is None and finishing.probing is not None:  # kept past the optimiser: see below
        facts = FactsCache()
        facts.prime(node.body)
    node.body = optimize(node.body, finishing.is_pure, facts)
    if facts is not None and finishing.probing is not None:  # true of the optimised body
        finishing.broadcast_calls = holds_broadcast_calls(node, facts)
    # its records are true of the optimised body, for the quotients' optimisation; the
    # arrays written in place and their views are checked again there
    finishing.facts = facts
    return node


def _reuse_quotients(node, finishing):
    facts = finishing.facts if without_blocks(node.body) else None  # else forgets too little
    if reuse_quotients(node.body, finishing.is_pure, facts):  # what it exposed folds further
        if facts is not None and not (facts.enabled and facts.views_unchanged(node.body)):
            facts = None
        node.body = optimize(node.body, finishing.is_pure, facts)
    return node


def _uniform_cotangents(node, finishing):
    namespace = finishing.probing.namespace
    numbers = uniform_cotangents(node, namespace)
    finishing.numbers = frozenset(numbers)
    if numbers:  # numbers fold further; then branches and loops on them are one statement
        node.body = optimize(node.body, finishing.is_pure)
        if simplify_number_flow(node, numbers, namespace):
            node.body = optimize(node.body, finishing.is_pure)
    return node


def _drop_unneeded_saves(node, finishing):
    body = drop_unneeded_saves(node.body)  # the shape queries that read them are gone
    if body is not node.body:  # the temporaries pushed may fold into one statement now
        body = optimize(body, finishing.is_pure)
    node.body = body
    return node


def _strip_broadcasts(node, finishing):
    # else no arithmetic is marked to strip, or no call is left to strip from it
    if finishing.probing.broadcast_free and finishing.broadcast_calls:
        finishing.broadcasts_removed = strip_broadcasts_in(node)
    return node


def _fold_constants(node, finishing):
    if finishing.broadcasts_removed:  # else the optimiser left nothing to fold
        fold_constants(node.body)
    return node


def _exact_divisors(node, finishing):
    if finishing.probing.divides:  # else the code has no division to rewrite
        divide_exactly(node, finishing.probing, finishing.facts)  # forgets what it changes
    return node


def _scalar_code(node, finishing):
    probing = finishing.probing
    if scalar_arguments(probing.args, probing.kwargs):
        finishing.facts = None
        finishing.cotangents = cotangent_names(node, probing.namespace)  # before the seed goes
        finishing.scalar = scalar_code(node, probing.namespace)
    return node


def _recompute_cheap_saves(node, finishing):
    if finishing.scalar:
        finishing.facts = None
        recompute_cheap_saves(node, finishing.probing.namespace)
    return node


def _array_scatters(node, finishing):
    probing = finishing.probing
    if ARRAY_INDEX in probing.noted:  # else no index cotangent of arrays is marked
        npn = numpy_name(probing.namespace)
        if write_array_scatters(node, npn, probing.namespace, finishing.is_pure):
            node.body = optimize(node.body, finishing.is_pure)  # what only x read is dead
    return node


def _index_new_axes(node, finishing):
    if NEW_AXES in finishing.probing.noted:  # else no expand_dims call is noted
        index_new_axes(node, finishing.numbers)
    return node


def _in_place(node, finishing):
    accumulate_in_place(node, finishing.probing.namespace)
    return node


def _single_writes(node, finishing):
    assign_single_writes(node)
    return node


def _fresh_arrays(node, finishing):
    probing = finishing.probing
    update_fresh_arrays(node, probing.namespace, probing.args, probing.kwargs)
    return node


def _common_factors(node, finishing):
    if finishing.scalar:
        take_out_common_factors(node, finishing.cotangents)
    return node


def _iterate_saved_stacks(node, finishing):
    iterate_saved_stacks(node.body)
    return node


def _falling_back(node, finishing):
    if finishing.scalar:
        falling_back(node, finishing.probing.namespace, finishing.probing.generic.function)
    return node


PASSES = (
    Pass("instrument the probe", _instrument, specialising=True, probing=True),
    Pass("run the probe", _probe, specialising=True, probing=True),
    Pass("specialise the probed sites", _specialise_sites, specialising=True, probing=True),
    Pass(
        "strip broadcast definitions",
        _strip_broadcast_definitions,
        specialising=True,
        probing=True,
        keeps_facts=True,
    ),
    Pass(
        "one buffer for index cotangents",
        _scatter_sums,
        specialising=True,
        probing=True,
        keeps_facts=True,
    ),
    Pass(
        "divisors that are powers of two",
        _exact_divisors,
        specialising=True,
        probing=True,
        keeps_facts=True,
    ),
    Pass(
        "numbers as Python numbers", _scalar_code, specialising=True, probing=True, keeps_facts=True
    ),
    Pass(
        "numbers computed again, not saved",
        _recompute_cheap_saves,
        specialising=True,
        probing=True,
        keeps_facts=True,
    ),
    Pass("compute each pure call once", _common_calls, keeps_facts=True),
    Pass("optimise", _optimise, keeps_facts=True),
    Pass("reuse quotients the forward computed", _reuse_quotients, specialising=True),
    Pass("drop saves only shape queries read", _drop_unneeded_saves, specialising=True),
    Pass("uniform cotangents as numbers", _uniform_cotangents, specialising=True),
    Pass("strip broadcasts folding brought together", _strip_broadcasts, specialising=True),
    Pass("fold constants the stripping exposed", _fold_constants, specialising=True),
    Pass(
        "index cotangents of arrays: zeros and a write",
        _array_scatters,
        specialising=True,
        probing=True,
    ),
    Pass("new axes by indexing", _index_new_axes, specialising=True),
    Pass("accumulate in place", _in_place, specialising=True, probing=True),
    Pass("items written once are assigned", _single_writes, specialising=True),
    Pass("arithmetic writes into new arrays", _fresh_arrays, specialising=True, probing=True),
    Pass("numbers: common factors out", _common_factors, specialising=True, probing=True),
    Pass("backward loops iterate saved lists", _iterate_saved_stacks, specialising=True),
    Pass("math errors run the generic code", _falling_back, specialising=True),
)


def finish(node: gast.AST, finishing: Finishing) -> gast.AST:
    """Run :data:`PASSES` on ``node`` in order (the specialising ones only when
    ``finishing.probing`` is set); raise :class:`ProbeFailed` if a probing pass fails.

    Example::

        specialised = finish(raw, Finishing(is_pure, Probing(namespace, args, {}, compile)))
    """
    specialising = finishing.probing is not None
    for step in PASSES:
        if step.specialising and not specialising:
            continue
        if not step.probing:
            node = step.run(node, finishing)
        else:
            try:
                node = step.run(node, finishing)
            except Exception as error:
                raise ProbeFailed(step.name) from error
        if not step.keeps_facts:
            finishing.facts = None
    return node


def tidy(body: list[gast.stmt], is_pure: Callable[[gast.Call], bool]) -> list[gast.stmt]:
    """``body`` finished as generic code (a VJP's backward function, which assembly must
    see optimised to know what the forward function saves for it).

    Example::

        backward = tidy(backward, is_pure)
    """
    return finish(gast.Module(body=body, type_ignores=[]), Finishing(is_pure)).body


def specialised(generated: GeneratedFunction, args: tuple, kwargs: dict):
    """Run ``generated`` once on ``args`` while specialising it to their shapes.

    Returns ``(result, specialised GeneratedFunction)``; the result is what
    ``generated.function(*args, **kwargs)`` returns (when the probe fails, that is what
    runs, and the generic code is returned as the code that ran).

    Example::

        value, fast = specialised(derivative(f, ("x",)), (x,), {})
    """

    def compile_probe(node, namespace):
        if generated.defines_functions:
            # functions defined inside need readable source to be differentiated in turn
            return compile_function(node, namespace, generated.origin).function
        return compile_ast(node, namespace, generated.origin)

    namespace = dict(generated.given_namespace)
    namespace.update((name, entry.expected) for name, entry in generated.live.items())
    is_pure = purity_of(namespace)
    probing = Probing(
        namespace,
        args,
        kwargs,
        compile_probe,
        specialise=specialised,
        generic=generated,
        is_pure=None if generated.defines_functions else is_pure,
    )
    try:
        with without_garbage_collection():
            node = finish(generated.raw_node, Finishing(is_pure, probing))
    except ProbeFailed:
        failed = True
    else:
        failed = False
    if failed:  # the same error again, outside the handler, with readable source lines
        return generated.function(*args, **kwargs), generated
    fast = compile_function(node, namespace, generated.origin)
    fast.specialised_for = signature(args, kwargs)
    fast = depending(fast, generated.live, generated.assumptions)
    if probing.cut:  # the probe stopped a long loop early: the call runs here
        return fast.function(*args, **kwargs), fast
    return probing.result, fast


@contextlib.contextmanager
def without_garbage_collection():
    """Building code allocates many short-lived tree nodes and no cycles worth collecting;
    pausing the cyclic collector meanwhile saves most of its cost in a large process.

    What outlives the pause is mostly long-lived (the raw tree kept for other signatures,
    the compiled code): it is filed with the oldest objects, not left young, where the
    first collection after the pause would walk it all at once (a tenth of a second for a
    2,000-statement function) and the next older one again. Any cycle left among it is
    still found, by the next full collection. Only when nothing is frozen already: a
    program that froze objects (before forking, say) keeps them frozen, and so does
    Python 3.12, which starts with some frozen."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                _file_with_the_oldest()
            gc.enable()


def _file_with_the_oldest() -> None:
    """Move every object the collector tracks into its oldest generation, without a walk:
    freezing moves them all aside, and unfreezing puts them back there."""
    gc.freeze()
    gc.unfreeze()
