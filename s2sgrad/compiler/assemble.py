"""The three shapes of a reverse-mode derivative, put together from the two sweeps.

* ``grad``: ``df(*args) -> gradients`` (the forward sweep, the seed, the backward sweep);
* ``value_and_grad``: ``df(*args) -> (value, gradients)``;
* ``vjp``: two plain functions, ``f_vjp(*args) -> (value, saved)`` and
  ``f_vjp.backward(saved, g) -> cotangents``, which calls between user functions use.

And the pieces a JVP's signature shares with them (defaults, the tangents of ``*args``).
"""

from __future__ import annotations

import inspect
from collections.abc import Set as AbstractSet

import gast

from s2sgrad import numpy_signatures, runtime
from s2sgrad.compiler.annotations import KEEP_APART, annotate
from s2sgrad.compiler.codegen import unique_name
from s2sgrad.compiler.finishing import tidy
from s2sgrad.compiler.inline import Namespace, _is_literal
from s2sgrad.compiler.optimize.views import views_of_updated_arrays
from s2sgrad.compiler.purity import purity
from s2sgrad.compiler.reverse import ReverseSweeps
from s2sgrad.compiler.reverse.shape_saves import read_only_for_shape
from s2sgrad.compiler.syntax import (
    MUTATING_METHODS,
    arguments,
    assign,
    call,
    clone,
    constant,
    load,
    names_modified,
    names_read,
    names_written,
    parameter_names,
    store,
    walk,
)

__all__ = ["assemble", "entry_tangents", "signature_with_defaults", "wrt_base"]


# assembly --------------------------------------------------------------------------------
def assemble(request, parsed, node, sweeps: ReverseSweeps, names, namespace):
    """The reverse-mode function of ``request.kind`` from the two sweeps: one gast function,
    or for a VJP the pair (forward function, backward function).

    Example::

        df = assemble(request, parsed, node, sweeps, names, namespace)  # def df(x): ...
    """
    helper = lambda name: load(namespace.bind(name, getattr(runtime, name)))  # noqa: E731
    output = sweeps.output
    differentiated = (
        output.elts[0] if request.has_aux and isinstance(output, gast.Tuple) else output
    )
    cotangents = [
        load(adjoint) if (adjoint := sweeps.adjoints[wrt_base(w)]) else constant(None)
        for w in request.wrt
    ]
    if request.kind == "vjp":
        return _assemble_vjp(request, parsed, node, sweeps, names, namespace, cotangents)
    else:
        body = list(sweeps.forward)
        if request.kind == "value_and_grad" or request.has_aux:
            output = _kept_before_backward(output, sweeps.backward, body, names, helper)
        if any(sweeps.adjoints.values()):
            seed = assign(
                sweeps.output_cotangent, call(helper("seed_cotangent"), [clone(differentiated)])
            )
            annotate(seed, KEEP_APART)  # the seed reads best on a line of its own
            body.append(seed)
        else:
            body.append(gast.Expr(value=call(helper("seed_cotangent"), [clone(differentiated)])))
        body.extend(sweeps.backward)
        gradients = [
            entry(call(helper("as_gradient"), [c, load(wrt_base(w))]), w)
            for c, w in zip(cotangents, request.wrt)
        ]
        gradient = (
            gradients[0] if len(gradients) == 1 else gast.Tuple(elts=gradients, ctx=gast.Load())
        )
        if request.kind == "value_and_grad":
            gradient = gast.Tuple(elts=[clone(output), gradient], ctx=gast.Load())
        elif request.has_aux and isinstance(output, gast.Tuple):
            gradient = gast.Tuple(elts=[gradient, clone(output.elts[1])], ctx=gast.Load())
        body.append(gast.Return(value=gradient))
        name = names.claim(("d" if request.kind == "grad" else "value_and_d") + node.name)
    generated = gast.FunctionDef(
        name=name,
        args=signature_with_defaults(parsed, node, namespace),
        body=body,
        decorator_list=[],
        returns=None,
        type_comment=None,
        type_params=[],
    )
    return generated


def _kept_before_backward(output, backward, body, names, helper):
    """``output``, or a name bound to it at the end of the forward sweep when the backward
    sweep changes what it reads (restoring a variable the loop overwrote, ``y = stack.pop()``,
    or an array's items): the value returned is the function's, not the restored one."""
    rebound, in_place = set(), set()
    for statement in backward:
        for sub in walk(statement):
            if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Store):
                rebound.add(sub.id)
            elif isinstance(sub, gast.Subscript) and isinstance(sub.ctx, gast.Store):
                in_place |= names_read(sub.value)
    read = names_read(output)
    if not read & (rebound | in_place):
        return output
    parts = output.elts if isinstance(output, gast.Tuple) else [output]
    kept = []
    for part in parts:
        if not names_read(part) & (rebound | in_place):
            kept.append(part)
            continue
        name = names.fresh("value")
        value = (
            call(helper("snapshot"), [clone(part)]) if names_read(part) & in_place else clone(part)
        )
        body.append(assign(name, value))
        kept.append(load(name))
    return gast.Tuple(elts=kept, ctx=gast.Load()) if isinstance(output, gast.Tuple) else kept[0]


def _assemble_vjp(request, parsed, node, sweeps, names, namespace, cotangents):
    """Two plain functions, no closures, so that both can be differentiated again.

    ``f_vjp(*args) -> (value, saved)`` runs the forward sweep and returns what the
    backward sweep reads; ``f_vjp_backward(saved, g)`` returns the cotangents.
    """
    helper = lambda name: load(namespace.bind(name, getattr(runtime, name)))  # noqa: E731
    is_pure = purity(namespace)
    backward = list(sweeps.backward)
    raw = [
        entry(call(helper("as_gradient"), [c, load(wrt_base(w))]), w)
        if wrt_base(w) != w
        else c
        if isinstance(c, gast.Name)
        else call(helper("zeros_like_structure"), [load(w)])
        for c, w in zip(cotangents, request.wrt)
    ]
    returned = raw[0] if len(raw) == 1 else gast.Tuple(elts=raw, ctx=gast.Load())
    backward.append(gast.Return(value=returned))
    backward = _views_rebuilt(sweeps.forward, node, backward, names, helper) + backward
    backward = _unread_views_dropped(tidy(backward, is_pure), helper)
    known = {n for s in sweeps.forward for n in names_written(s)} | parameter_names(node)
    read_back = _read_before_bound(backward)
    saved = sorted((read_back - {sweeps.output_cotangent}) & known)
    saved_name = names.claim("saved")
    unpack = assign(gast.Tuple(elts=[store(n) for n in saved], ctx=gast.Store()), load(saved_name))
    always = parameter_names(node) | {
        n for s in sweeps.forward if isinstance(s, gast.Assign) for n in names_written(s)
    }
    sometimes = [n for n in saved if n not in always]  # saved as None where not computed
    unset = {*sometimes, *_set_to_none(sweeps.forward)}
    copies = _private_copies(backward, set(saved), names, helper, unset)
    body = [unpack, *copies, *backward]
    name = names.claim(unique_name(f"{node.name}_vjp"))
    backward_function = gast.FunctionDef(
        name=names.claim(unique_name(f"{name}_backward")),
        args=arguments([saved_name, sweeps.output_cotangent]),
        body=body,
        decorator_list=[],
        returns=None,
        type_comment=None,
        type_params=[],
    )
    # a value the backward function reads only for its shape need not stay alive
    for_shape = read_only_for_shape(backward, helper("unbroadcast").id)
    keep = gast.Tuple(
        elts=[call(helper("shape_only"), [load(n)]) if n in for_shape else load(n) for n in saved],
        ctx=gast.Load(),
    )
    result = gast.Tuple(elts=[clone(sweeps.output), keep], ctx=gast.Load())
    # a value only some branches compute is saved as None when they do not run
    maybe_unset = [assign(n, constant(None)) for n in sometimes]
    forward_function = gast.FunctionDef(
        name=name,
        args=signature_with_defaults(parsed, node, namespace),
        body=[*maybe_unset, *sweeps.forward, gast.Return(value=result)],
        decorator_list=[],
        returns=None,
        type_comment=None,
        type_params=[],
    )
    return forward_function, backward_function


def _read_before_bound(statements, bound: frozenset = frozenset()) -> set[str]:
    """Names ``statements`` read, leaving out the reads inside a ``for`` loop of the name
    it binds (``dkernel[i]`` in ``for i in reversed(t5)``): the loop sets them first."""
    read: set[str] = set()
    for statement in statements:
        if type(statement) is gast.For:
            read |= names_read(statement.iter) - bound
            inner = bound | names_written(statement.target)
            read |= _read_before_bound(statement.body, inner)
            read |= _read_before_bound(statement.orelse, bound)
        elif type(statement) in (gast.If, gast.While):
            read |= names_read(statement.test) - bound
            read |= _read_before_bound(statement.body, bound)
            read |= _read_before_bound(statement.orelse, bound)
        else:
            read |= names_read(statement) - bound
    return read


def _views_rebuilt(forward, node, backward, names, helper) -> list[gast.stmt]:
    """Private copies of the arrays the backward sweep restores in place that the forward
    sweep took views of (``t4 = acc[:2]`` before ``acc[:2] *= s``), the views rebuilt over
    the copies, as the first statement of the backward sweep; ``[]`` when there are none.

    In one function the restoring of ``acc`` changes ``t4`` too, which the backward sweep
    relies on where it reads ``t4`` after that; the copy that lets a pullback run twice must
    keep that sharing. (A view read before only sees the final values, which the original
    keeps.) The names are renamed in ``backward``, and bound together by
    :func:`owned_together`, which the optimiser knows (``optimize/views.py``): a read of
    ``t4_`` stays before ``acc_``'s restoring.
    """
    known = {n for s in forward for n in names_written(s)} | parameter_names(node)
    sharing = views_of_updated_arrays(forward)
    restored: set[str] = set()
    wanted: set[str] = set()  # views read once their array may be restored
    for statement in backward:
        restored |= (names_modified(statement) - names_written(statement)) & known
        wanted |= {v for r in restored for v in sharing.get(r, ())} & names_read(statement)
    views = sorted(wanted & known - restored)
    if not views:
        return []
    changed = sorted(restored)  # a stack among them may hold views too
    renames = {name: names.claim(f"{name}_") for name in [*changed, *views]}
    _rename(backward, renames)
    targets = gast.Tuple(elts=[store(renames[n]) for n in renames], ctx=gast.Store())
    groups = [gast.Tuple(elts=list(map(load, g)), ctx=gast.Load()) for g in (changed, views)]
    return [assign(targets, call(helper("owned_together"), groups))]


def _unread_views_dropped(backward, helper) -> list[gast.stmt]:
    """``backward`` without the views :func:`_views_rebuilt` rebuilt that the optimised code
    no longer reads (so the forward sweep need not save them); with none left, the copies
    are plain ``owned`` ones."""
    for index, statement in enumerate(backward):
        if not _is_rebuilding(statement):
            continue
        changed, views = statement.value.args
        targets = statement.targets[0].elts
        read = set().union(*(names_read(s) for s in backward[index + 1 :]))
        kept = [i for i, t in enumerate(targets[len(changed.elts) :]) if t.id in read]
        if kept:
            views.elts = [views.elts[i] for i in kept]
            targets[len(changed.elts) :] = [targets[len(changed.elts) + i] for i in kept]
            return backward
        copies = [assign(t.id, call(helper("owned"), [c])) for t, c in zip(targets, changed.elts)]
        return [*backward[:index], *copies, *backward[index + 1 :]]
    return backward


def _is_rebuilding(statement) -> bool:
    return (
        isinstance(statement, gast.Assign)
        and isinstance(statement.value, gast.Call)
        and isinstance(statement.value.func, gast.Name)
        and statement.value.func.id.startswith("owned_together")
    )


def _private_copies(
    backward, saved: set[str], names, helper, unset: AbstractSet[str] = frozenset()
) -> list[gast.stmt]:
    """Copy what the backward sweep restores in place, so it can be called again.

    When no saved array is written into (only a stack is popped, and names rebound), the
    stack's list is copied and nothing else: a name rebound in the backward function does
    not change the saved tuple it was unpacked from. A list in ``unset`` (saved as None
    when the branch that builds it did not run) is copied only when it is there.
    """
    changed = set()
    for statement in backward:
        changed |= names_modified(statement)
    changed &= saved
    lists = _popped_only(backward, saved)
    if lists is not None:
        copied = sorted(lists & changed)
        renames = {name: names.claim(f"{name}_") for name in copied}
        _rename(backward, renames)
        return [assign(new, _list_copy(old, old in unset)) for old, new in renames.items()]
    renames = {name: names.claim(f"{name}_") for name in sorted(changed)}
    _rename(backward, renames)
    return [assign(new, call(helper("owned"), [load(old)])) for old, new in renames.items()]


def _set_to_none(forward) -> set[str]:
    """The names ``forward`` sets to None before the branches that may set them."""
    return {
        s.targets[0].id
        for s in forward
        if type(s) is gast.Assign
        and type(s.targets[0]) is gast.Name
        and type(s.value) is gast.Constant
        and s.value.value is None
    }


def _list_copy(name: str, maybe_unset: bool) -> gast.expr:
    """``list(name)``, or ``None if name is None else list(name)``."""
    copied = call(load("list"), [load(name)])
    if not maybe_unset:
        return copied
    absent = gast.Compare(left=load(name), ops=[gast.Is()], comparators=[constant(None)])
    return gast.IfExp(test=absent, body=constant(None), orelse=copied)


def _rename(backward, renames: dict[str, str]) -> None:
    for node in walk(gast.Module(body=backward, type_ignores=[])):
        if isinstance(node, gast.Name) and node.id in renames:
            node.id = renames[node.id]


def _popped_only(backward, saved: set[str]) -> set[str] | None:
    """The saved lists the backward sweep only pops (``stack.pop()``), when nothing it
    reads from the saved values is changed in place otherwise; else None."""
    popped, lists, written = set(), set(), set()
    for node in walk(gast.Module(body=backward, type_ignores=[])):
        kind = type(node)
        if kind is gast.Assign and _is_pop(node.value):
            popped |= names_written(node)
        elif kind is gast.AugAssign and type(node.target) is gast.Name:
            written.add(node.target.id)  # x += v writes into an array
        elif kind in (gast.Subscript, gast.Attribute) and type(node.ctx) is not gast.Load:
            base = node.value
            while isinstance(base, (gast.Subscript, gast.Attribute)):
                base = base.value
            written.add(getattr(base, "id", None))
        elif kind is gast.Call and type(node.func) is gast.Attribute:
            if node.func.attr == "pop" and not node.args and type(node.func.value) is gast.Name:
                lists.add(node.func.value.id)
            elif type(node.func.value) is gast.Name and node.func.attr in MUTATING_METHODS:
                written.add(node.func.value.id)
    if None in written or written & (saved | popped | lists):
        return None
    return lists & saved


def _is_pop(value) -> bool:
    return (
        type(value) is gast.Call
        and type(value.func) is gast.Attribute
        and value.func.attr == "pop"
        and not value.args
    )


def entry_tangents(wrt, tangents: dict, names, namespace) -> tuple[dict, list]:
    """The tangent parameters of a JVP: one per entry of ``*args`` that ``wrt`` names
    (``"args[1]"``), from which the code builds the tangent of the tuple ``args``."""
    entries = [w for w in wrt if wrt_base(w) != w]
    if not entries:
        return dict(tangents), []
    tangents = dict(tangents)
    base = wrt_base(entries[0])
    whole = tangents.pop(base, None)
    given = {}
    for name in entries:
        index = int(name[len(base) + 1 : -1])
        tangents[name] = given[index] = names.claim(f"d{base}_{index}")
    if whole is None:
        return tangents, []
    table = gast.Dict(keys=[constant(i) for i in given], values=[load(p) for p in given.values()])
    helper = load(namespace.bind("star_tangents", runtime.star_tangents))
    return tangents, [assign(whole, call(helper, [load(base), table]))]


def wrt_base(name: str) -> str:
    """The parameter ``wrt`` differentiates: ``args`` for ``"args[1]"`` (what ``*args``
    takes at position 1), else ``name`` itself."""
    return name.partition("[")[0]


def entry(node: gast.expr, name: str) -> gast.expr:
    """``node[1]`` for ``"args[1]"``, else ``node``."""
    if wrt_base(name) == name:
        return node
    index = int(name[len(wrt_base(name)) + 1 : -1])
    return gast.Subscript(value=node, slice=constant(index), ctx=gast.Load())


def signature_with_defaults(parsed, node, namespace: Namespace) -> gast.arguments:
    """``node``'s parameters without annotations, with the defaults of the user's function
    (literals written out, other values bound in ``namespace`` as ``<name>_default``).

    Example::

        args = signature_with_defaults(parsed, node, namespace)  # (x, scale=2.0)
    """
    args = clone(node.args)
    for arg in args.posonlyargs + args.args + args.kwonlyargs:
        arg.annotation = None
    signature = numpy_signatures.signature(parsed.function)  # its own, as written
    defaults: list = []
    kw_defaults: list = []
    for parameter in signature.parameters.values():
        if parameter.default is inspect.Parameter.empty:
            if parameter.kind == parameter.KEYWORD_ONLY:
                kw_defaults.append(None)
            continue
        value = parameter.default
        if _is_literal(value):
            expression = constant(value)
        else:
            expression = load(namespace.bind(f"{parameter.name}_default", value))
        if parameter.kind == parameter.KEYWORD_ONLY:
            kw_defaults.append(expression)
        else:
            defaults.append(expression)
    args.defaults = defaults
    args.kw_defaults = kw_defaults
    return args
