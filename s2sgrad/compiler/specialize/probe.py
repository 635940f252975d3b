"""The probe: a copy of the raw code in which each specialisable call, and the arithmetic
near a broadcast, records the shapes it sees when the copy runs once on the arguments.

Three passes (``compiler/finishing.py`` runs them in order): :func:`instrument` makes the
copy and finds its sites, :func:`run` runs it (its result is the call's result, so nothing
runs twice), and :func:`specialise_sites` rewrites each site by the specialiser its rule
declares (``specialize/rewrites.py``) for what it saw.

A probe that is walked, not compiled (``interpreted.py``), runs the copy as it is: the walk
finds each site by the id of its node and has the probe make and record it. A compiled
probe needs the sites in its code: each is a call of the probe
(``__s2sgrad_probe__(site, f, *args)``) until it is specialised.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gast

from s2sgrad import numpy_signatures, runtime
from s2sgrad.compiler.annotations import (
    ARRAY_INDEX,
    BROADCAST_FREE,
    NEW_AXES,
    SCATTER,
    annotation,
)
from s2sgrad.compiler.specialize.broadcasts import (
    ARITHMETIC,
    quiet_arithmetic,
    resolve,
    without_broadcasts,
)
from s2sgrad.compiler.specialize.callees import callee_probes, specialised_callees
from s2sgrad.compiler.specialize.criterion import index_parameters, integer_index
from s2sgrad.compiler.specialize.in_place import (
    accumulation_sums,
    mark_accumulation,
    note_sum,
)
from s2sgrad.compiler.specialize.interpreted import bound_names, interpretable, interpreted
from s2sgrad.compiler.specialize.last_reductions import last_reductions, place_reductions
from s2sgrad.compiler.specialize.loop_cuts import ARITHMETIC_PROBES, CUTS, PROBE, LoopCuts
from s2sgrad.compiler.specialize.probe_copy import copy_with_facts
from s2sgrad.compiler.specialize.releases import (
    STAND_IN,
    large_arguments,
    release_arrays,
    stand_in,
)
from s2sgrad.compiler.specialize.rewrites import KEYWORD_SITES, specialisers
from s2sgrad.compiler.specialize.seen import Seen, observed

__all__ = ["NotSpecialisable", "Probing", "instrument", "run", "specialise_sites"]

_PROBE = PROBE
_SYMBOL = observed("+")  # what an operation's symbol looks like to the probe
_NOTES = (
    NEW_AXES,
    SCATTER,
    ARRAY_INDEX,
)  # set on calls by their specialisers, read by later passes
_NOTED_KEYS = frozenset(_NOTES)


class NotSpecialisable(Exception):
    """The arguments of this call leave shapes to values: the generic code runs."""


class _Probe:
    def __init__(self):
        self.sites: dict[int, set] = {}
        self.site_of: dict[int, int] = {}  # site by id of its node, for the walk to record
        self.gradients: dict[int, int] = {}  # id of an as_gradient result → its site
        self.aliased: set[int] = set()
        # unbroadcast sites: how many visits summed (did not return g itself), what the
        # last of those saw, and whether the latest visit did (``last_reductions.py``)
        self.reductions: dict[int, int] = {}
        self.reduced: dict[int, tuple] = {}
        self.latest_reduced: dict[int, bool] = {}
        self._made: dict[tuple, Seen] = {}
        self._made_pairs: dict[tuple, tuple[tuple[Seen, ...], Seen]] = {}  # for ``seen``

    def __call__(self, site: int, function, *args, **kwargs):
        """``function(*args, **kwargs)``, recorded as the site ``site`` (a probe call)."""
        return self._record(site, function, args, function(*args, **kwargs))

    def call(self, site: int, function, arguments: list, keywords: dict | None):
        """``function(*arguments, **keywords)``, recorded as the probe call would record it
        (``interpreted.Observer``: the walk's sites)."""
        result = function(*arguments, **keywords) if keywords else function(*arguments)
        return self._record(site, function, arguments, result)

    def _record(self, site: int, function, args, result):
        # records are plain tuples, made Seen when read (see ``seen``)
        seen = observed(result)
        if function is runtime.as_gradient:
            if result is args[0] and seen[0] == "array":
                seen = ("unchanged", seen[1], seen[2], None)
            other = self.gradients.setdefault(id(result), site)
            if other != site:  # two gradients would be one array: keep the copies
                self.aliased |= {site, other}
        records = self.sites.get(site)
        if records is None:
            records = self.sites[site] = set()
        record = (tuple([observed(a) for a in args]), seen)
        records.add(record)
        if function is runtime.unbroadcast:
            reduced = result is not args[0]
            self.latest_reduced[site] = reduced
            if reduced:
                self.reductions[site] = self.reductions.get(site, 0) + 1
                self.reduced[site] = record
        return result

    def arithmetic(self, site: int, operation: Callable, left, right):
        """``operation(left, right)``, recorded as ``self(site, f, symbol, left, right)``
        would record it (a symbol looks like any other string: ``_SYMBOL``)."""
        result = operation(left, right)
        records = self.sites.get(site)
        if records is None:
            records = self.sites[site] = set()
        records.add(((_SYMBOL, observed(left), observed(right)), observed(result)))
        return result

    def reduced_last_only(self, site: int) -> tuple[tuple[Seen, ...], Seen] | None:
        """What an ``unbroadcast`` site saw on its one visit that summed, if that was its
        last visit and every other returned ``g`` itself; else None."""
        if self.reductions.get(site) != 1 or not self.latest_reduced.get(site):
            return None
        arguments, result = self.reduced[site]
        return tuple([self._seen(a) for a in arguments]), self._seen(result)

    def seen(self, site: int) -> tuple[tuple[Seen, ...], Seen] | None:
        """What the only run of ``site`` saw, as (arguments, result); None unless the site
        ran, always on values that looked alike, and may be specialised."""
        records = self.sites.get(site)
        if not records or len(records) != 1 or site in self.aliased:
            return None
        (record,) = records
        made = self._made_pairs.get(record)  # most sites saw what another one saw
        if made is None:
            arguments, result = record
            made = tuple([self._seen(a) for a in arguments]), self._seen(result)
            self._made_pairs[record] = made
        return made

    def _seen(self, record: tuple) -> Seen:
        """``Seen._make(record)``, made once for the records that are alike."""
        made = self._made.get(record)
        if made is None:
            made = self._made[record] = Seen._make(record)
        return made


@dataclass
class Probing:
    """What the probing passes share: the arguments of the call being specialised, the
    code's namespace (specialisers may add to it), how to compile the probe, and what the
    probe saw and returned."""

    namespace: dict
    args: tuple
    kwargs: dict
    compile_probe: Callable[[gast.FunctionDef, dict], Callable]
    probe: _Probe = field(default_factory=lambda: _Probe())
    # (node in the code, the site, target), inner first: the node is a probe call, or, in
    # a walked probe (``in_place``), the site itself (its second place is filled when it
    # is specialised, with the node as it was)
    sites: list = field(default_factory=list)
    result: Any = None
    # how a called helper's derivative is specialised (``finishing.specialised``), and the
    # helpers the probe called, by name (``callees.py``)
    specialise: Callable | None = None
    callees: dict = field(default_factory=dict)
    generic: Any = None  # the generic code, which scalar code falls back to (``scalars``)
    # which calls are pure: a probe may then stop a long loop at its fixed point
    # (``loop_cuts.py``), and ``cut`` says it did: ``result`` is not the call's
    is_pure: Callable[[gast.Call], bool] | None = None
    cut: bool = False
    # whether specialising marked any arithmetic whose broadcasts may go (``broadcasts.py``):
    # if none, the passes that strip them have nothing to do
    broadcast_free: bool = False
    indexing: set[str] | None = None  # the parameters that index arrays, once instrumented
    # which of the calls' annotations (_NOTES) the specialised code may hold: a pass that
    # reads one has nothing to do without it
    noted: set[str] = field(default_factory=set)
    # the names the probe binds, when it may be interpreted, not compiled: ``interpreted.py``
    bound: set[str] | None = None
    in_place: bool = False  # the sites are in the code as they were (the probe is walked)
    divides: bool = False  # whether the code divides anywhere (``exact_divisors.py``)


def instrument(node: gast.FunctionDef, probing: Probing) -> gast.FunctionDef:
    """A copy of ``node`` and its sites, each specialisable call and each arithmetic
    operation near a broadcast: found by the id of their node when the probe is walked
    (``Probing.in_place``), else each made a call of the probe
    (``__s2sgrad_probe__(site, f, *args)``)."""
    table = specialisers()
    sites = probing.sites
    namespace = probing.namespace
    copy, facts, operations = copy_with_facts(node)  # one walk, facts of the copy's nodes
    quiet = quiet_arithmetic(facts.assignments, facts.arithmetic, namespace)
    # d = d + e: may add in place (``in_place.py``); only a sum whose left side is its
    # target's name may be one, and most assignments are not
    sums = accumulation_sums(
        [
            assignment
            for assignment in facts.assignments
            if type(assignment.value) is _BINOP
            and type(assignment.value.op) is gast.Add
            and type(assignment.value.left) is _NAME
            and assignment.value.left.id == assignment.targets[0].id
        ]
    )
    probing.indexing = index_parameters(copy, facts.subscripts)
    # one union of every call's attributes (in C), not a scan of the calls per note
    probing.noted = set(_NOTES).intersection(set().union(*[c.__dict__ for c in facts.calls]))
    probing.divides = any(type(operation.op) is gast.Div for operation in facts.arithmetic)
    if interpretable(copy, facts):  # run by walking it, not compiled
        probing.bound = bound_names(copy, facts)
        probing.in_place = True
    site_of = probing.probe.site_of
    in_place = probing.in_place
    starred = gast.Starred in facts.kinds  # else no call has a starred argument
    site = 0
    for operation in operations:  # each after its operands: sites are numbered inner first
        kind: Any = type(operation)
        if kind is _BINOP:
            if type(operation.op) not in ARITHMETIC:
                continue
            summed = id(operation) in sums
            if not summed and id(operation) in quiet:
                continue
            target = None
        else:
            target = resolve(operation.func, namespace)
            if target is None or id(target) not in table:
                continue
            if operation.keywords and id(target) not in KEYWORD_SITES:
                continue
            if starred and any(type(a) is gast.Starred for a in operation.args):
                continue
        if in_place:  # the walk finds it, and the probe makes and records it
            if target is None and summed:
                mark_accumulation(operation)
            site_of[id(operation)] = site
            sites.append((operation, None, target))
            site += 1
            continue
        site_node = kind.__new__(kind)  # the operation, moved: the probe call takes its place
        site_node.__dict__ = operation.__dict__
        if target is None:  # arithmetic: __s2sgrad_add__(site, left, right)
            if summed:
                mark_accumulation(site_node)
            arithmetic = _load(ARITHMETIC_PROBES[ARITHMETIC[type(site_node.op)]])
            state = {
                "func": arithmetic,
                "args": [_constant(site), site_node.left, site_node.right],
                "keywords": [],
            }
        else:  # keywords for KEYWORD_SITES only
            arguments = [_constant(site), site_node.func, *site_node.args]
            state = {"func": _load(_PROBE), "args": arguments, "keywords": site_node.keywords}
        if kind is not _CALL:  # a call stays one: no change of class to check
            operation.__class__ = _CALL
        operation.__dict__ = state
        sites.append((operation, site_node, target))
        site += 1
    return copy


def run(probed: gast.FunctionDef, probing: Probing) -> gast.FunctionDef:
    """Run the probe once on the arguments; its result is the call's, unless the probe cut
    a long loop at its fixed point (``loop_cuts.py``): ``probing.cut`` then says that the
    call is still to run, in the specialised code. Raises
    :class:`NotSpecialisable` when a parameter indexes an array with other than integers
    (a mask: the shapes it sets are its values')."""
    probing.callees = callee_probes(probing.namespace, probing.specialise)
    cuts = None
    # a probe that may be interpreted has no loop (``interpreted.py``): nothing to cut
    if probing.bound is None and not probing.callees and probing.is_pure is not None:
        cuts = LoopCuts.for_probe(probed, probing.is_pure)
    function = _compiled(probed, probing, cuts)
    try:
        _run(function, probed, probing, cuts)
    finally:
        _let_go(function)
    return probed


def _run(function: Callable, probed: gast.FunctionDef, probing: Probing, cuts) -> None:
    indexing = probing.indexing
    if indexing is None:
        indexing = index_parameters(probed)
    if indexing:
        bound = numpy_signatures.signature(function).bind(*probing.args, **probing.kwargs)
        if not all(integer_index(bound.arguments.get(n)) for n in indexing):
            raise NotSpecialisable("a parameter indexes an array with other than integers")
    if cuts is None:
        probing.result = function(*probing.args, **probing.kwargs)
        return
    try:
        result = function(*probing.args, **probing.kwargs)
        cuts.finished()
    except Exception:
        if not cuts.cut:
            raise
        cuts.inconclusive = True
    if not cuts.cut:  # every loop ran whole: the result is the call's
        probing.result = result
        return
    if not cuts.inconclusive:
        probing.cut = True  # the call itself runs in the specialised code
        return
    probing.probe = _Probe()  # what the cut run saw is dropped: the whole probe runs
    whole = _compiled(probed, probing, None)
    try:
        probing.result = whole(*probing.args, **probing.kwargs)
    finally:
        _let_go(whole)


def _let_go(function: Callable) -> None:
    """Unbind the probe from its module, once run: else the two hold each other, and with
    them the probe's records (and, interpreted, its tree), left to the cyclic collector."""
    module = getattr(function, "__globals__", None)
    if module is not None and module.get(function.__name__) is function:
        del module[function.__name__]


def _compiled(probed: gast.FunctionDef, probing: Probing, cuts: LoopCuts | None):
    """The probe's function: ``probed`` (or its copy whose long loops may be cut) compiled
    to let go of the arrays it no longer needs (``releases.py``), then left as it was."""
    namespace = {
        **probing.namespace,
        **probing.callees,
        _PROBE: probing.probe,
        **{name: _arithmetic(probing.probe, symbol) for symbol, name in ARITHMETIC_PROBES.items()},
        STAND_IN: stand_in,
    }
    lean = probed
    if cuts is not None:
        namespace[CUTS] = cuts
        lean = cuts.instrumented
    restore = _unchanged
    if large_arguments(probing.args, probing.kwargs):
        restore = release_arrays(lean, namespace)
    if probing.bound is not None and cuts is None:  # restored once it has run
        return interpreted(
            lean, probing.bound, namespace, probing.compile_probe, restore, probing.probe
        )
    try:
        return probing.compile_probe(lean, namespace)
    finally:
        restore()


def _unchanged() -> None:
    pass


def specialise_sites(probed: gast.FunctionDef, probing: Probing) -> gast.FunctionDef:
    """Make each site (each probe call, turned back into its site) its specialisation to
    what the probe saw, in place: inner sites first, so an outer site's operands are final
    when it is rewritten."""
    table, probe, namespace = specialisers(), probing.probe, probing.namespace
    namespace.update(specialised_callees(probing.callees))
    # a walked probe has no loop: no site sums on a loop's last visit only
    hoisted = (
        {}
        if probing.cut or probing.in_place
        else last_reductions(probed, probing.sites, probe, namespace)
    )

    def specialise(site, site_node, target):
        if site in hoisted:
            return site_node.args[0]  # ``g`` itself but on the last visit: summed after
        seen = probe.seen(site)
        if seen is None:
            return site_node  # never ran, or saw several shapes: stay generic
        arg_info, result_info = seen
        if target is None:  # arithmetic: the arguments were (symbol, left, right)
            note_sum(site_node, arg_info[1], arg_info[2], result_info)
            stripped = without_broadcasts(site_node, arg_info[1], arg_info[2], result_info)
            probing.broadcast_free |= bool(annotation(stripped, BROADCAST_FREE, None))
            return stripped
        replacement = table[id(target)](site_node, arg_info, result_info, namespace)
        return site_node if replacement is None else replacement

    sites = probing.sites
    if probing.in_place:  # each site is where it was: it becomes its specialisation
        for site, (node, _, target) in enumerate(sites):
            kind: Any = type(node)
            site_node = kind.__new__(kind)  # the node as it was, for later passes to read
            site_node.__dict__ = node.__dict__
            sites[site] = (node, site_node, target)
            _become(node, specialise(site, site_node, target))
    else:
        for site, (probe_call, site_node, target) in enumerate(sites):
            if target is None:
                site_node.left, site_node.right = probe_call.args[1:]
            else:
                site_node.func, *site_node.args = probe_call.args[1:]
                site_node.keywords = probe_call.keywords
            _become(probe_call, specialise(site, site_node, target))
    # the notes the specialised sites hold: one union of their attributes (in C)
    probing.noted |= _NOTED_KEYS.intersection(set().union(*[s[0].__dict__ for s in sites]))
    place_reductions(probed, hoisted)
    return probed


def _become(node: gast.AST, replacement: gast.AST) -> None:
    """Make ``node`` the node ``replacement`` is, where it stands in its tree (no walk)."""
    if node.__class__ is not replacement.__class__:  # most sites stay what they were
        node.__class__ = replacement.__class__
    node.__dict__ = dict(replacement.__dict__)


# the probe's own nodes, made as gast's constructors make them (the same fields), quicker
def _load(name: str) -> gast.Name:
    node = _NAME.__new__(_NAME)
    node.__dict__ = {"id": name, "ctx": _LOAD, "annotation": None, "type_comment": None}
    return node


def _constant(value: Any) -> gast.Constant:
    node = _CONSTANT.__new__(_CONSTANT)
    node.__dict__ = {"value": value, "kind": None}
    return node


_NAME, _CONSTANT, _CALL, _BINOP = gast.Name, gast.Constant, gast.Call, gast.BinOp
_LOAD = gast.Load()

_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def _arithmetic(probe: _Probe, symbol: str) -> Callable:
    """The probe of one operation: it records (symbol, left, right) and the result."""
    operation = _OPERATORS[symbol]

    def probed(site, left, right):
        return probe.arithmetic(site, operation, left, right)

    return probed
