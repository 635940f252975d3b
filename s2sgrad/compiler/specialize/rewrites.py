"""What a call amounts to once the probe saw its arguments: the specialisers.

Each is declared with :func:`specialises` beside its body, which records it on the rule of
the helper or NumPy function it rewrites (``get_rule(runtime.unbroadcast).specialiser``);
the probe looks there. A specialiser takes the call's node, what each argument and the
result looked like (``Seen``), and the namespace of the code (to which it may add a name),
and returns the replacing expression, or None to leave the call as it is.

Example::

    @specialises(runtime.unbroadcast)
    def _unbroadcast(node, args, result, namespace):
        ...  # g, or g.sum(axis=0), for the shapes seen
"""

from __future__ import annotations

from collections.abc import Callable

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.annotations import SCATTER, UNCOVERED, annotate
from s2sgrad.compiler.specialize.broadcasts import resolve
from s2sgrad.compiler.specialize.index_scatter import note_array_index
from s2sgrad.compiler.specialize.seen import Seen
from s2sgrad.compiler.syntax import attribute, call, constant, load
from s2sgrad.rules.registry import declare_specialiser, specialisers_by_id

__all__ = ["KEYWORD_SITES", "has_axes", "specialises", "specialisers", "numpy_name"]


def specialises(*targets) -> Callable[[Callable], Callable]:
    """Declare the decorated function the specialiser of calls of ``targets``."""

    def declare(specialiser: Callable) -> Callable:
        for target in targets:
            declare_specialiser(target, specialiser)
        return specialiser

    return declare


def specialisers() -> dict[int, Callable]:
    """The declared specialisers, by ``id`` of the function whose calls they rewrite."""
    return {**specialisers_by_id(), **_UNREGISTERED}


# specialisers ----------------------------------------------------------------------------
def numpy_name(namespace: dict) -> str:
    """The name the code calls NumPy by (``np`` bound in ``namespace`` if none)."""
    for name, value in namespace.items():
        if value is np:
            return name
    namespace["np"] = np
    return "np"


@specialises(runtime.as_gradient)
def _as_gradient(node, args, result, namespace):
    """The gradient array is already fresh, of the right shape and dtype: return it."""
    return node.args[0] if result.kind == "unchanged" else None


_COMPLEX_CHARS = frozenset("FDG")


@specialises(runtime.unbroadcast)
def _unbroadcast(node, args, result, namespace):
    g, x = args
    if g.kind not in ("array", "scalar") or x.shape is None:
        return None
    if g.dtype in _COMPLEX_CHARS and x.dtype not in _COMPLEX_CHARS:
        return None  # unbroadcast also keeps the real part (docs/complex.md)
    if g.shape == x.shape and (x.kind in ("array", "scalar") or g.kind == "scalar"):
        return node.args[0]
    if x.kind == "float" and g.kind == "array" and g.shape:  # everything sums into a number
        return call(attribute(load(numpy_name(namespace)), "sum"), [node.args[0]])
    if x.kind not in ("array",):
        return None
    extra = len(g.shape) - len(x.shape)
    if extra < 0:
        return None
    leading = tuple(range(extra))
    inner = tuple(i for i, n in enumerate(x.shape) if n == 1 and g.shape[extra + i] != 1)
    value = node.args[0]
    if leading:
        value = call(attribute(value, "sum"), [], {"axis": _axis(leading)})
    if inner:
        value = call(
            attribute(value, "sum"), [], {"axis": _axis(inner), "keepdims": constant(True)}
        )
    return value


def _axis(axes: tuple) -> gast.expr:
    if len(axes) == 1:
        return constant(axes[0])
    return gast.Tuple(elts=[constant(a) for a in axes], ctx=gast.Load())


def _transposed(node: gast.expr) -> gast.expr:
    return attribute(node, "T")


def _matmul(left, right):
    return gast.BinOp(left=left, op=gast.MatMult(), right=right)


def _ranks(a: Seen, b: Seen) -> tuple[int, int] | None:
    if a.kind == b.kind == "array" and a.shape is not None and b.shape is not None:
        return len(a.shape), len(b.shape)
    return None


def _stacked(args) -> int:
    """The rank of ``a`` in ``a @ b`` when ``a`` is a stack of matrices (rank 3 and more)
    and ``b`` one matrix, with ``g`` of the product's shape; else 0."""
    g, a, b = args
    if not (g.kind == a.kind == b.kind == "array") or len(b.shape) != 2:
        return 0
    if len(a.shape) < 3 or g.shape != a.shape[:-1] + b.shape[1:]:
        return 0
    return len(a.shape)


@specialises(runtime.matmul_cotangent_a)
def _matmul_cotangent_a(node, args, result, namespace):
    g_node, a_node, b_node = node.args
    ranks = _ranks(args[1], args[2])
    if ranks == (2, 2) or _stacked(args):
        return _matmul(g_node, _transposed(b_node))  # g @ b.T
    if ranks == (1, 2):
        return _matmul(b_node, g_node)  # b @ g
    if ranks == (2, 1):
        return call(attribute(load(numpy_name(namespace)), "outer"), [g_node, b_node])
    return None


@specialises(runtime.matmul_cotangent_b)
def _matmul_cotangent_b(node, args, result, namespace):
    g_node, a_node, b_node = node.args
    ranks = _ranks(args[1], args[2])
    if ranks == (2, 2):
        return _matmul(_transposed(a_node), g_node)  # a.T @ g
    stacked = _stacked(args)
    if stacked:  # the sum of a[i].T @ g[i] over the stack
        batch = gast.Tuple(elts=[constant(k) for k in range(stacked - 1)], ctx=gast.Load())
        axes = gast.Tuple(elts=[batch, batch], ctx=gast.Load())
        tensordot = attribute(load(numpy_name(namespace)), "tensordot")
        return call(tensordot, [a_node, g_node], {"axes": axes})
    if ranks == (2, 1):
        return _matmul(g_node, a_node)  # g @ a
    if ranks == (1, 2):
        return call(attribute(load(numpy_name(namespace)), "outer"), [a_node, g_node])
    return None


def _vjp_call(node, args, result, namespace):
    """``vjp_call(np.einsum, g, ans, "nchw,kc->nkhw", a, b)``: one einsum per operand,
    ``np.einsum("nkhw,kc->nchw", g, b)``, where each letter of the operand appears once in
    it and also in ``g`` or another operand, and no axis was stretched (else the rule)."""
    primitive, spec = node.args[0], node.args[3] if len(node.args) > 3 else None
    if resolve(primitive, namespace) is not np.einsum or not isinstance(spec, gast.Constant):
        return None
    if not isinstance(spec.value, str) or "..." in spec.value or "->" not in spec.value:
        return None
    inputs, output = spec.value.replace(" ", "").split("->")
    terms = inputs.split(",")
    operands = args[4:]
    if len(terms) != len(operands) or any(o.kind != "array" for o in operands + args[1:2]):
        return None
    sizes: dict[str, int] = {}
    for term, operand in zip([output, *terms], [args[1], *operands]):
        if len(term) != len(operand.shape) or len(set(term)) != len(term):
            return None
        for letter, size in zip(term, operand.shape):
            if sizes.setdefault(letter, size) != size:
                return None  # a stretched axis: the rule sums it back
    npn = numpy_name(namespace)
    entries: list[gast.expr] = [constant(None)]
    for k, term in enumerate(terms):
        others = [output] + [t for j, t in enumerate(terms) if j != k]
        if not set(term) <= set("".join(others)):
            return None  # a letter summed in this operand alone
        arrays = [node.args[1]] + [a for j, a in enumerate(node.args[4:]) if j != k]
        cotangent_spec = constant(",".join(others) + "->" + term)
        entries.append(call(attribute(load(npn), "einsum"), [cotangent_spec, *arrays]))
    return gast.Tuple(elts=entries, ctx=gast.Load())


# specialisers of helpers that must have no rule (``vjp_call`` is differentiated as it runs)
_UNREGISTERED = {id(runtime.vjp_call): _vjp_call}


@specialises(runtime.seed_cotangent)
def _seed(node, args, result, namespace):
    (out,) = args
    if out.kind == "float" or (out.kind in ("scalar", "array") and out.dtype == "d"):
        # an output of shape (1, 1) has a seed of that shape, whose methods and shape the
        # code may read (the probe saw an array there): only a seed without axes is 1.0
        return constant(1.0) if not out.shape else None
    return None


@specialises(np.broadcast_to)
def _broadcast_to(node, args, result, namespace):
    g, shape = args
    if g.kind in ("array", "scalar", "float") and shape.kind == "tuple" and g.shape == shape.value:
        return node.args[0]
    return None


@specialises(runtime.zeros_like_value)
def _zeros_like_value(node, args, result, namespace):
    """Zeros of a float64 array's shape: ``np.zeros(shape)``, without the helper's questions
    about what kind of value it was given."""
    (x,) = args
    if x.kind == "array" and result.kind == "array" and x.dtype == result.dtype == "d":
        shape = gast.Tuple(elts=[constant(n) for n in result.shape], ctx=gast.Load())
        return call(attribute(load(numpy_name(namespace)), "zeros"), [shape])
    return None


# NumPy functions whose method twin takes the same arguments after the array's
_METHOD_TWINS = {np.sum: "sum", np.max: "max", np.min: "min", np.mean: "mean", np.prod: "prod"}
KEYWORD_SITES = frozenset(map(id, [*_METHOD_TWINS, np.transpose]))  # probed with keywords too


@specialises(*_METHOD_TWINS)
def _method_twin(node, args, result, namespace):
    """``np.max(s, axis=1, keepdims=True)`` on an array is ``s.max(axis=1, keepdims=True)``:
    the same reduction without NumPy's dispatch in Python (1 to 4 µs a call)."""
    if not node.args or not has_axes(args[0]) or any(k.arg is None for k in node.keywords):
        return None
    method = attribute(node.args[0], _METHOD_TWINS[resolve(node.func, namespace)])
    return call(method, node.args[1:], {k.arg: k.value for k in node.keywords})


@specialises(np.transpose)
def _transpose(node, args, result, namespace):
    """``np.transpose(a)`` on an array is ``a.T``."""
    if len(node.args) != 1 or node.keywords or not has_axes(args[0]):
        return None
    return attribute(node.args[0], "T")


@specialises(np.reshape)
def _reshape(node, args, result, namespace):
    """``np.reshape(a, shape)`` on an array is ``a.reshape(shape)``: the same view or copy
    without NumPy's dispatch in Python (about 2 µs a call)."""
    if len(node.args) != 2 or node.keywords or not has_axes(args[0]) or result.kind != "array":
        return None
    return call(attribute(node.args[0], "reshape"), [node.args[1]])


def has_axes(value) -> bool:
    """An array of one axis or more: a method may be called on it. A 0-d array may be the
    seed of a gradient, which specialising turns into the float 1.0 (no methods)."""
    return value.kind == "array" and len(value.shape) > 0


@specialises(np.shape)
def _shape(node, args, result, namespace):
    if result.kind == "tuple":
        return gast.Tuple(elts=[constant(n) for n in result.value], ctx=gast.Load())
    return None


@specialises(np.size, np.ndim)
def _number(node, args, result, namespace):
    return constant(result.value) if result.kind == "int" else None


@specialises(runtime.index_cotangent)
def _index_cotangent(node, args, result, namespace):
    g, x, index = args
    if x.kind == "array" and index.kind in ("basic index", "int") and result.kind == "array":
        annotate(node, SCATTER, result.dtype == x.dtype)  # may become an in-place add
        if index.kind == "basic index":
            annotate(node, UNCOVERED, _uncovered(index.value, x.shape))
    else:
        note_array_index(node, args, result)  # integer arrays: index_scatter.py
    return None


@specialises(runtime.assigned_cotangent)
def _assigned_cotangent(node, args, result, namespace):
    """A basic index writes each element once: the cotangent is ``snapshot(g[index])``."""
    g, index = args
    if not has_axes(g) or index.kind not in ("basic index", "int"):
        return None
    part = gast.Subscript(value=node.args[0], slice=node.args[1], ctx=gast.Load())
    return call(load(_helper_name(namespace, runtime.snapshot)), [part])


def _helper_name(namespace: dict, helper) -> str:
    for name, value in namespace.items():
        if value is helper:
            return name
    name = f"_{helper.__name__}"
    namespace[name] = helper
    return name


def _uncovered(index: tuple, shape: tuple) -> list[gast.expr] | None:
    """The slices of an array of ``shape`` that ``a[index] = v`` leaves untouched, as
    subscripts (``[:1]``, ``[-1:]``); None unless ``index`` is one contiguous slice of the
    first axis (``1:``, ``:-1``, ``2:5, :``).

    Example::

        _uncovered((("slice", None, -1, None),), (10,))  # the subscript -1:
    """
    first, *rest = index
    if not shape or not (isinstance(first, tuple) and first[3] in (None, 1)):
        return None
    if any(part not in (("slice", None, None, None), Ellipsis) for part in rest):
        return None
    length = shape[0]
    start, stop, _ = slice(first[1], first[2]).indices(length)
    if stop <= start:
        return None
    parts = []
    if start > 0:
        parts.append(gast.Slice(lower=None, upper=constant(start), step=None))
    if stop < length:
        parts.append(gast.Slice(lower=_integer(stop - length), upper=None, step=None))
    return parts


def _integer(value: int) -> gast.expr:
    if value < 0:
        return gast.UnaryOp(op=gast.USub(), operand=constant(-value))
    return constant(value)
