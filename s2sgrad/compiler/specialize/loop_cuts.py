"""A long loop probed on a few iterations: once the state its body starts from repeats,
every later iteration sees what the last one saw, so the probe may stop it early.

Specialised code's shapes follow the shapes, dtypes and integer values of what it reads
(``criterion.py``). A loop ``for _ in t1:`` whose body, at the start of an iteration, reads
values that look exactly as they did at the start of the previous ``STABLE`` iterations is
at a fixed point: each later iteration starts from that state again, so its probed calls
record nothing new. The probe then stops the loop (the iterable is cut to the iterations
run) and runs on, so the code after the loop, the backward sweep included, records what it
would after the whole loop, and the call itself then runs in the specialised code.

The backward sweep's loop over the cut iterations (``for _ in reversed(t1):``) pops the
values of the forward iterations, last first. Its own state must reach a fixed point while
it still pops iterations of the forward's fixed point, else the iterations left out could
have recorded more: then the cut is *inconclusive* and the whole probe runs again, uncut.

A loop is only cut when running a part of the function twice changes nothing a user sees:
every call pure, nothing stored into a container or attribute, no function defined inside,
the loop's iterable and variable read nowhere else. Example::

    cuts = LoopCuts.for_probe(probed, is_pure)   # None when no loop may be cut
    function = compile(cuts.instrumented, {**namespace, CUTS: cuts})
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.syntax import assign, attribute, call, clone, constant, load, names_read, walk

__all__ = ["ARITHMETIC_PROBES", "CUTS", "PROBE", "LoopCuts"]

CUTS = "__s2sgrad_cuts__"
PROBE = "__s2sgrad_probe__"  # the probe's names (``probe.py``)
# its arithmetic, ``__s2sgrad_mul__(site, left, right)``: by name, three arguments (quicker
# to compile than the probe's own call)
ARITHMETIC_PROBES = {
    "+": "__s2sgrad_add__",
    "-": "__s2sgrad_sub__",
    "*": "__s2sgrad_mul__",
    "/": "__s2sgrad_div__",
}
_ARITHMETIC_PROBE_NAMES = frozenset(ARITHMETIC_PROBES.values())
LONG = 64  # a loop of fewer iterations runs whole: cutting it saves little
STABLE = 4  # iterations from one state before the loop is cut
PATIENCE = 32  # iterations without a fixed point after which the loop runs uncut
_STACK = re.compile(r"stack(_\d+)?$")
_MISSING = object()


class _Unknown(Exception):
    """A value whose look the state cannot describe: the loop is not cut."""


class LoopCuts:
    """The probe's loop wrappers (``__s2sgrad_cuts__.forward(k, t1, names)`` …) and what
    they did: ``cut`` when a loop stopped early, ``inconclusive`` when that left the probe
    short of what the whole run records."""

    def __init__(self, instrumented: gast.FunctionDef):
        self.instrumented = instrumented
        self.cut = False
        self.inconclusive = False
        # loop → (the iterations it ran, how many from its fixed point, whether it saves)
        self._prefixes: dict[int, tuple[range, int, bool]] = {}
        self._unwatched: dict[int, tuple[range, int, bool]] = {}  # by id of the iterations
        self._watched: dict[int, tuple[range, int, bool]] = {}

    @classmethod
    def for_probe(
        cls, probed: gast.FunctionDef, is_pure: Callable[[gast.Call], bool]
    ) -> LoopCuts | None:
        """A copy of ``probed`` whose long loops may be cut, or None when none may."""
        if not any(type(s) is gast.For for body in _top_level_bodies(probed) for s in body):
            return None
        stack = _stack_name(probed)
        if not _runs_twice_unseen(probed, stack, is_pure):
            return None
        copy = clone(probed)
        reads = _reads_by_name(copy)
        stores = _stores_by_name(copy)
        reversed_reads = {id(_reversed_name(n.iter)) for n in walk(copy) if type(n) is gast.For} - {
            id(None)
        }
        count = 0
        for body in _top_level_bodies(copy):
            index = 0
            while index < len(body):
                loop = body[index]
                index += 1
                if not _may_cut(loop, reads, stores, reversed_reads):
                    continue
                sequence = loop.iter.id
                state = sorted(set().union(*(names_read(s) for s in loop.body)) - {stack})
                pushes = any(
                    type(n) is gast.Call and _is_stack_call(n, stack)
                    for s in loop.body
                    for n in walk(s)
                )
                loop.iter = call(
                    attribute(load(CUTS), "forward"),
                    [constant(count), load(sequence), constant(tuple(state)), constant(pushes)],
                )
                cut = call(attribute(load(CUTS), "prefix"), [constant(count), load(sequence)])
                body.insert(index, assign(sequence, cut))
                index += 1
                count += 1
        if not count:
            return None
        for node in walk(copy):
            if type(node) is gast.For and _reversed_name(node.iter) is not None:
                state = sorted(set().union(*(names_read(s) for s in node.body)) - {stack})
                node.iter = call(
                    attribute(load(CUTS), "backward"),
                    [_reversed_name(node.iter), constant(tuple(state))],
                )
        return cls(copy)

    # run time ------------------------------------------------------------------------------
    def forward(self, loop: int, sequence: Any, names: tuple, pushes: bool) -> Iterable:
        """The iterations of a forward loop: all of them, or those up to its fixed point
        (``pushes``: the loop saves values, which a watched backward loop must pop)."""
        self._prefixes.pop(loop, None)
        if type(sequence) is not range or len(sequence) < LONG:
            return sequence
        return self._cutting(loop, sequence, names, pushes)

    def finished(self) -> None:
        """After the probe: a cut whose saves no watched backward loop popped is
        inconclusive (the code that popped them was not checked)."""
        if any(pushes for _, _, pushes in self._unwatched.values()):
            self.inconclusive = True

    def _cutting(self, loop: int, sequence: range, names: tuple, pushes: bool) -> Iterator:
        previous, stable = None, 0
        for index, item in enumerate(sequence):
            if index > PATIENCE + STABLE and stable == 0:
                yield from sequence[index:]
                return
            try:
                state = _state(sys._getframe(1).f_locals, names)
            except _Unknown:
                yield from sequence[index:]
                return
            stable = stable + 1 if state == previous else 0
            previous = state
            if stable >= STABLE:
                self._prefixes[loop] = (sequence[:index], STABLE, pushes)
                self.cut = True
                return
            yield item

    def prefix(self, loop: int, sequence: Any) -> Any:
        """The iterations the loop ran, when it was cut (what its backward sweep reverses)."""
        cut = self._prefixes.get(loop)
        if cut is None:
            return sequence
        prefix = cut[0]
        self._unwatched[id(prefix)] = cut
        return prefix

    def backward(self, sequence: Any, names: tuple) -> Iterable:
        """``reversed(sequence)``, watched when ``sequence`` is a cut loop's iterations."""
        cut = self._unwatched.pop(id(sequence), None)
        if cut is None:
            if id(sequence) in self._watched:  # a second loop over the cut iterations
                self.inconclusive = True
            return reversed(sequence)
        self._watched[id(sequence)] = cut
        return self._watching(sequence, names, cut[1])

    def _watching(self, sequence: range, names: tuple, stable: int) -> Iterator:
        previous: Any = _MISSING
        settled = False
        count = 0
        for item in reversed(sequence):
            settled = settled or self._repeats(previous, names, count, stable)
            previous = self._state_here(names)
            count += 1
            yield item
        settled = settled or self._repeats(previous, names, count, stable)
        if not settled:
            self.inconclusive = True

    def _repeats(self, previous: Any, names: tuple, count: int, stable: int) -> bool:
        if not 1 <= count <= stable or previous is _MISSING:
            return False
        return self._state_here(names, 3) == previous

    @staticmethod
    def _state_here(names: tuple, depth: int = 2) -> Any:
        """The state in the frame of the generated code, ``depth`` frames up."""
        try:
            return _state(sys._getframe(depth).f_locals, names)
        except _Unknown:
            return _MISSING


# what may be cut -----------------------------------------------------------------------------
def _stack_name(node: gast.FunctionDef) -> str | None:
    """The save stack's name: the generated code creates it first (``stack = []``)."""
    if not node.body:
        return None
    first: Any = node.body[0]
    if (
        type(first) is gast.Assign
        and len(first.targets) == 1
        and type(first.targets[0]) is gast.Name
        and _STACK.match(first.targets[0].id)
        and type(first.value) is gast.List
        and not first.value.elts
    ):
        return first.targets[0].id
    return None


def _runs_twice_unseen(node: gast.FunctionDef, stack: str | None, is_pure) -> bool:
    """Whether running a part of ``node`` once more is unseen: pure calls only, nothing
    stored in a container or attribute or in place (``+=``), no function defined inside,
    no exception caught."""
    for child in walk(node):
        kind = type(child)
        if kind is gast.Call:
            allowed = _is_pure(child, is_pure) or _is_reversed(child)
            if not (allowed or _is_stack_call(child, stack)):
                return False
        elif kind in (gast.Subscript, gast.Attribute):
            if type(child.ctx) is not gast.Load:
                return False
        elif kind in _UNSEEN_REFUSED or (kind is gast.FunctionDef and child is not node):
            return False
    return True


_UNSEEN_REFUSED = (
    gast.AugAssign,  # may change an argument's array in place
    gast.Lambda,
    gast.Global,
    gast.Nonlocal,
    gast.Try,
    gast.Yield,
    gast.YieldFrom,
    gast.Await,
    gast.ClassDef,
    gast.ListComp,
    gast.SetComp,
    gast.DictComp,
    gast.GeneratorExp,
)


def _is_pure(node: gast.Call, is_pure) -> bool:
    """``is_pure``, of the call a probe call makes (``__s2sgrad_probe__(site, f, *args)``;
    the arithmetic's are)."""
    func = node.func
    if type(func) is gast.Name and func.id in _ARITHMETIC_PROBE_NAMES:
        return True
    if type(func) is gast.Name and func.id == PROBE and len(node.args) >= 2:
        node = gast.Call(func=node.args[1], args=node.args[2:], keywords=[])
    return is_pure(node)


def _is_stack_call(node: gast.Call, stack: str | None) -> bool:
    func = node.func
    return (
        stack is not None
        and type(func) is gast.Attribute
        and type(func.value) is gast.Name
        and func.value.id == stack
        and (
            (func.attr == "append" and len(node.args) == 1)
            or (func.attr == "pop" and not node.args)
        )
        and not node.keywords
    )


def _is_reversed(node: gast.Call) -> bool:
    return type(node.func) is gast.Name and node.func.id == "reversed"


def _reversed_name(node: gast.expr) -> gast.Name | None:
    if (
        type(node) is gast.Call
        and _is_reversed(node)
        and len(node.args) == 1
        and not node.keywords
        and type(node.args[0]) is gast.Name
    ):
        return node.args[0]
    return None


def _reads_by_name(node: gast.FunctionDef) -> dict[str, list[gast.Name]]:
    reads: dict[str, list[gast.Name]] = {}
    for child in walk(node):
        if type(child) is gast.Name and type(child.ctx) is gast.Load:
            reads.setdefault(child.id, []).append(child)
    return reads


def _top_level_bodies(node: gast.FunctionDef) -> Iterator[list[gast.stmt]]:
    """The statement lists of ``node`` outside every loop."""
    pending = [node.body]
    while pending:
        body = pending.pop()
        yield body
        for statement in body:
            if type(statement) is gast.If:
                pending += [statement.body, statement.orelse]
            elif type(statement) is gast.With:
                pending.append(statement.body)


def _stores_by_name(node: gast.FunctionDef) -> dict[str, int]:
    stores: dict[str, int] = {}
    for child in walk(node):
        if type(child) is gast.Name and type(child.ctx) is not gast.Load:
            stores[child.id] = stores.get(child.id, 0) + 1
    return stores


def _may_cut(loop: gast.stmt, reads: dict, stores: dict, reversed_reads: set) -> bool:
    """A forward loop ``for v in s:`` whose ``s`` is assigned once at most and read only
    by it and by backward loops' ``reversed(s)``, and whose ``v`` is read nowhere."""
    if type(loop) is not gast.For or type(loop.iter) is not gast.Name or loop.orelse:
        return False
    if type(loop.target) is not gast.Name or reads.get(loop.target.id):
        return False
    sequence = loop.iter.id
    if stores.get(sequence, 0) > 1:
        return False
    return all(n is loop.iter or id(n) in reversed_reads for n in reads.get(sequence, ()))


# the state an iteration starts from ----------------------------------------------------------
def _state(frame_locals: dict, names: tuple) -> tuple:
    """How the values ``names`` hold look: shapes, dtypes, integers and structure."""
    return tuple([_look(frame_locals.get(n, _MISSING)) for n in names])


def _look(value: Any) -> Any:
    kind = type(value)
    if kind is np.ndarray:
        if value.ndim == 0 and value.dtype.kind in "iub":
            return ((), value.dtype.char, value.item())  # an integer may set a shape
        return (value.shape, value.dtype.char)
    if kind is float or kind is complex:
        return kind
    if kind is int or kind is bool or kind is str or value is None or value is _MISSING:
        return (kind, value)
    if isinstance(value, np.generic):
        return (kind, value.item()) if value.dtype.kind in "iub" else kind
    if kind is tuple or kind is list:
        return (kind, tuple([_look(v) for v in value]))
    if kind is dict:
        return (kind, tuple([(k, _look(v)) for k, v in value.items()]))
    if kind is range:
        return (kind, value.start, value.stop, value.step)
    raise _Unknown(kind)
