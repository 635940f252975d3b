"""A loop's ``unbroadcast`` that sums only on its last visit: summed once, after the loop.

The cotangent of an accumulator that starts as a broadcast (``out = bias`` then
``out = out + x[i] @ w[i]`` in a loop) is summed down to the start's shape on the last
pass of the backward loop only; on every other pass ``unbroadcast(g, out)`` hands back
``g`` itself, yet the forward loop pushes ``out``'s shape each pass for it. When the probe
saw exactly that (every visit but the last returned ``g``), the site becomes ``g`` and
the sum goes after the loop, specialised to what the last visit saw::

    for i in reversed(t8):                      for i in reversed(t8):
        out = stack_.pop()                          dout = g
        dout = unbroadcast(g, out)          ->      ...
        ...                                     dout = dout.sum(axis=(0, 1, 2))

and ``out``, read by nothing now, is no longer saved. Shapes follow the arguments in code
that is specialised, loops' lengths too, so every call with the signature visits the
site as the probe did.

Only a site that is the whole value of ``d = unbroadcast(g, x)``, in the body of a
``for`` loop nested only in ``for`` loops' bodies up to one that is a statement of the
function itself, with no jumps in it, and no other statement of these loops (their
headers included) touching ``d`` after the site's last visit.

Example::

    hoisted = last_reductions(probed, probing.sites, probe, namespace)
    ...  # each hoisted site specialised to its ``g``
    place_reductions(probed, hoisted)
"""

from __future__ import annotations

from typing import Any

import gast

from s2sgrad import runtime
from s2sgrad.compiler.specialize.rewrites import specialisers
from s2sgrad.compiler.syntax import assign, call, clone, load, walk

__all__ = ["last_reductions", "place_reductions"]

_JUMPS = (gast.Break, gast.Continue, gast.Return, gast.Yield, gast.YieldFrom, gast.Try)


def last_reductions(
    probed: gast.FunctionDef, sites: list, probe: Any, namespace: dict
) -> dict[int, tuple[gast.For, gast.stmt]]:
    """The ``unbroadcast`` sites that may become their ``g``, by site number: each with
    the top-level loop it is in and the statement that sums after that loop."""
    candidates = {}
    for site, (probe_call, _, target) in enumerate(sites):
        if target is runtime.unbroadcast and len(probe_call.args) == 4:
            seen = probe.reduced_last_only(site)
            if seen is not None:
                candidates[id(probe_call)] = (site, probe_call, seen)
    if not candidates:
        return {}
    specialiser = specialisers()[id(runtime.unbroadcast)]
    hoisted: dict[int, tuple[gast.For, gast.stmt]] = {}
    for loop in probed.body:
        if not _plain_loop(loop) or any(type(n) in _JUMPS for n in walk(loop)):
            continue
        for statement, outer_bodies, after in _sites_in(loop, [], candidates):
            site, probe_call, (arguments, result) = candidates[id(statement.value)]
            name = statement.targets[0].id
            if any(name in _names(s) for s in [*outer_bodies, *after]):
                continue
            summed = call(clone(probe_call.args[1]), [load(name), clone(probe_call.args[3])])
            value = specialiser(summed, arguments, result, namespace)
            if value is None or not all(
                n.id == name or n.id in namespace for n in walk(value) if type(n) is gast.Name
            ):
                continue
            hoisted[site] = (loop, assign(name, value, like=statement))
    return hoisted


def place_reductions(function: gast.FunctionDef, hoisted: dict) -> None:
    """Put each hoisted sum right after its loop, in site order."""
    after: dict[int, list[gast.stmt]] = {}
    for site in sorted(hoisted):
        loop, statement = hoisted[site]
        after.setdefault(id(loop), []).append(statement)
    if not after:
        return
    body = []
    for statement in function.body:
        body.append(statement)
        body.extend(after.get(id(statement), ()))
    function.body = body


def _plain_loop(statement) -> bool:
    return type(statement) is gast.For and not statement.orelse


def _sites_in(loop: gast.For, outer: list, candidates: dict):
    """``(statement, outer statements, statements after it)`` for each candidate site
    assigned in ``loop``'s body or that of a plain loop nested in it: the outer
    statements are every other statement of the enclosing loops' bodies, and their inner
    loops' headers, which may run after the site's last visit."""
    for index, statement in enumerate(loop.body):
        if (
            type(statement) is gast.Assign
            and len(statement.targets) == 1
            and type(statement.targets[0]) is gast.Name
            and id(statement.value) in candidates
        ):
            yield statement, outer, loop.body[index + 1 :]
        elif _plain_loop(statement):
            others = [s for s in loop.body if s is not statement]
            header = gast.Expr(
                value=gast.Tuple(elts=[statement.target, statement.iter], ctx=gast.Load())
            )
            yield from _sites_in(statement, [*outer, *others, header], candidates)


def _names(node) -> set[str]:
    return {n.id for n in walk(node) if type(n) is gast.Name}
