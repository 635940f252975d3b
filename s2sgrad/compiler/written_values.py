"""Whether the value an item write ``y[i] = v`` stores is one value, not a list or tuple of
values, which the tape asks before it takes a plain array over (see
:func:`s2sgrad.compiler.tape_facts.plain_writes_by_line`).

NumPy converts a list's items one by one as it stores them, so the tape, asked to convert
the one item it records, cannot tell ``y[0] = [k, 1.0]`` (or ``y[0] = pair(k)`` of a helper
returning that list) from ``y[0] = k``. What the expression ``v`` tells is used: a display
is a list; a name, an attribute or an item of a list is looked up again in the running
frame (reading it has no effect); arithmetic gives one value unless ``+`` or ``*`` may join
or repeat sequences; a NumPy function known to return one array does. A call of anything
else (a helper of the user's) may return a list, so the write is not taken over: the tape
then refuses it, naming the line.

Example::

    check = one_value_check(value_node, parsed.resolve)
    check(frame.f_globals, frame.f_locals)  # False for y[0] = row, row = [k, 1.0]
"""

from __future__ import annotations

import ast
import builtins
import inspect
import numbers
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.frontend import parse_function
from s2sgrad.compiler.syntax import names_written, nested_statements
from s2sgrad.errors import S2SGradError
from s2sgrad.tape.in_place import SLICE
from s2sgrad.tape.values import TapeValue

__all__ = ["one_value_check"]

# the helpers the compiled check calls, by the names it calls them
_ONE = "__s2sgrad_one_value"
_ITEM = "__s2sgrad_item_of"
_ARRAY = "__s2sgrad_is_array"
_RETURNS = "__s2sgrad_returns_one_value"

# NumPy (and SciPy) functions that return one array or number whatever their arguments,
# by module (SciPy's only when the user's code has imported it)
# fmt: off
_ONE_ARRAY_FUNCTIONS = {
    "numpy": frozenset({
        "sum", "mean", "prod", "max", "min", "amax", "amin", "var", "std", "average",
        "median", "nansum", "nanmean", "ptp", "quantile", "percentile", "dot", "vdot",
        "matmul", "tensordot", "outer", "inner", "einsum", "cross", "kron", "trace", "clip",
        "cumsum", "cumprod", "diff", "asarray", "array", "copy", "ascontiguousarray",
        "stack", "concatenate", "hstack", "vstack", "dstack", "column_stack", "block",
        "append", "insert", "delete", "zeros", "ones", "full", "empty", "zeros_like",
        "ones_like", "full_like", "empty_like", "eye", "identity", "tri", "tril", "triu",
        "diag", "diagonal", "diagflat", "reshape", "ravel", "transpose", "swapaxes",
        "moveaxis", "squeeze", "expand_dims", "broadcast_to", "roll", "flip", "fliplr",
        "flipud", "rot90", "sort", "argsort", "argmax", "argmin", "take", "take_along_axis",
        "tile", "repeat", "pad", "interp", "linspace", "logspace", "arange", "polyval",
        "convolve", "correlate", "select", "piecewise", "choose", "searchsorted",
        "count_nonzero", "all", "any", "real", "imag", "angle", "around", "round",
        "nan_to_num", "sinc", "cov", "corrcoef", "vander", "resize", "bincount",
        "trapezoid", "trapz"
    }),
    "numpy.linalg": frozenset({
        "norm", "solve", "inv", "det", "cholesky", "pinv", "matrix_power", "eigvalsh",
        "eigvals", "multi_dot"
    }),
    "numpy.fft": frozenset({
        "fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
        "fftshift", "ifftshift"
    }),
    "scipy.linalg": frozenset({
        "solve", "solve_triangular", "cho_solve", "lu_solve", "solve_banded", "expm", "inv",
        "det", "sqrtm", "logm", "block_diag", "toeplitz", "circulant"
    }),
    "scipy.special": frozenset({
        "logsumexp", "softmax", "log_softmax"
    }),
}
# fmt: on
# builtins whose result is a number (or an array) and never a sequence
_ONE_VALUE_BUILTINS = frozenset({"abs", "float", "int", "round", "pow", "len"})
# array methods that lists, tuples and dicts do not have, whose result is an array
_ARRAY_ONLY_METHODS = frozenset(
    {
        "sum", "mean", "prod", "max", "min", "var", "std", "dot", "reshape", "ravel",
        "flatten", "transpose", "astype", "clip", "cumsum", "cumprod", "squeeze", "round",
        "conj", "trace", "diagonal", "take", "repeat", "swapaxes", "any", "all", "ptp",
    }
)  # fmt: skip
# array methods whose result is a sequence
_SEQUENCE_METHODS = frozenset({"tolist", "nonzero"})
# expression nodes an index without calls is made of
_INDEX = (
    gast.Name,
    gast.Constant,
    gast.Attribute,
    gast.Subscript,
    gast.Slice,
    gast.Tuple,
    gast.BinOp,
    gast.UnaryOp,
    gast.Compare,
    gast.expr_context,
    gast.operator,
    gast.unaryop,
    gast.cmpop,
)


def one_value_check(value: gast.expr, resolve: Callable[[gast.expr], Any]) -> Any:
    """How to tell whether ``value``, stored by an item write, is one value: True when its
    expression says so, False when it may be a sequence whatever the frame holds, else a
    function of the running frame's ``(globals, locals)`` answering it there.

    Example::

        one_value_check(parse_expr("row"), resolve)(globals(), {"row": [1.0]})  # False
    """
    found = _Checks(resolve).check(value)
    if isinstance(found, bool):
        return found
    code = compile(ast.fix_missing_locations(ast.Expression(found)), "<s2sgrad write>", "eval")

    def holds_one_value(globals_: dict, locals_: dict) -> bool:
        scope = {
            **locals_,
            SLICE: slice,
            _ONE: _is_one_value,
            _ITEM: _item_of,
            _ARRAY: _is_array,
            _RETURNS: _returns_one_value,
        }
        try:
            return bool(eval(code, globals_, scope))  # noqa: S307 (lookups of the user's names)
        except Exception:  # a lookup the frame cannot answer: not known to be one value
            return False

    return holds_one_value


class _Checks:
    def __init__(self, resolve: Callable[[gast.expr], Any]) -> None:
        self.resolve = resolve
        self.in_frame = True  # whether the answer may be asked of the running frame

    def check(self, node: gast.expr) -> bool | ast.expr:
        """True, False, or an expression (in Python's ``ast``) computing the answer."""
        kind = type(node)
        if kind is gast.Constant:
            return isinstance(node.value, (numbers.Number, type(None)))
        if kind in (gast.Name, gast.Attribute, gast.Subscript):
            looked_up = self.lookup(node)
            if looked_up is not None:
                return _call(_ONE, looked_up)
            # np.take(...)[..., 0]: an item of one array (or number) is one value
            return self.check(node.value) if kind is gast.Subscript else False
        if kind in (gast.UnaryOp, gast.Compare):  # -seq raises; a comparison is a bool
            return True
        if kind is gast.BinOp:
            left, right = self.check(node.left), self.check(node.right)
            if type(node.op) is gast.Add:  # seq + seq joins; one value + anything does not
                return _either(left, right)
            if type(node.op) is gast.Mult:  # 2 * seq repeats it; an array * seq is an array
                return _either(
                    _both(left, right), _either(self.array(node.left), self.array(node.right))
                )
            return True  # -, /, **, @ ... of a sequence raise or give an array
        if kind is gast.IfExp:
            return _both(self.check(node.body), self.check(node.orelse))
        if kind is gast.BoolOp:  # a or b is one of them
            answer: bool | ast.expr = True
            for item in node.values:
                answer = _both(answer, self.check(item))
            return answer
        if kind is gast.Call:
            return self.check_call(node)
        return False  # a display, a comprehension, a lambda ...

    def check_call(self, node: gast.Call) -> bool | ast.expr:
        try:
            function = self.resolve(node.func)
        except Exception:
            function = None
        function = _unwrapped(function)
        if isinstance(function, np.ufunc):
            return function.nout == 1
        if function is np.where:
            return len(node.args) == 3  # np.where(c) is a tuple of index arrays
        if _returns_one_array(function) or _is_runtime_helper(function):
            return True
        name = getattr(function, "__name__", None)
        if name is not None and getattr(builtins, name, None) is function:
            if name == "sum":  # 0 + seq raises: sum(items) without a start is no sequence
                return len(node.args) == 1 and not node.keywords
            if name in ("max", "min") and len(node.args) >= 2:  # one of the values given
                answer: bool | ast.expr = True
                for argument in node.args:
                    answer = _both(answer, self.check(argument))
                return answer
            return name in _ONE_VALUE_BUILTINS
        if isinstance(function, types.FunctionType):  # a helper of the user's: what it
            # returns, asked of the function the name holds when the write runs
            looked_up = self.lookup(node.func) if self.in_frame else None
            return False if looked_up is None else _call(_RETURNS, looked_up)
        func = node.func
        if type(func) is not gast.Attribute or func.attr in _SEQUENCE_METHODS:
            return False  # a helper of the user's may return a list
        receiver = self.lookup(func.value)  # x.sum(), x.reshape(...) of an array x
        if receiver is not None:
            return _call(_ARRAY, receiver)
        # (a * k).sum(): a method no list, tuple or dict has, of what an expression makes
        return func.attr in _ARRAY_ONLY_METHODS

    def array(self, node: gast.expr) -> bool | ast.expr:
        """Whether ``node`` is an array (or a tape value), asked in the frame for a lookup."""
        looked_up = self.lookup(node)
        return False if looked_up is None else _call(_ARRAY, looked_up)

    def lookup(self, node: gast.expr) -> ast.expr | None:
        """``node`` as an expression to evaluate again in the frame (an item of a list,
        tuple or dict taken, of anything else answered by ``_item_of``), or None when it is
        not a lookup without calls."""
        if not _is_lookup(node):
            return None
        return _Lookups().visit(gast.gast_to_ast(node))


# a helper's code -> whether every value it returns is surely one value
_HELPER_RETURNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NOT_PLAIN = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _returns_one_value(function: Any) -> bool:
    """Whether each ``return`` of the user's ``function`` surely gives one value (an array or
    a number, never a list or tuple), by its expression alone: NumPy calls, arithmetic no
    sequence takes part in, and locals bound only (``h = ...``) to such values. False for
    a generator, a function without source, or anything the expressions do not tell.

    Example::

        _returns_one_value(cell)  # True for: h = np.tanh(v * w); return h * 2.0 - v
    """
    if not isinstance(function, types.FunctionType):
        return False
    code = function.__code__
    known = _HELPER_RETURNS.get(code)
    if known is None:
        known = not (code.co_flags & _NOT_PLAIN) and _read_returns(function)
        _HELPER_RETURNS[code] = known
    return known


def _read_returns(function: types.FunctionType) -> bool:
    try:
        parsed = parse_function(function)
    except S2SGradError:
        return False
    bindings: dict[str, list] = {}
    returned = []
    for statement in nested_statements(parsed.node.body):
        if type(statement) is gast.Return:
            returned.append(statement.value)
        elif (
            type(statement) is gast.Assign
            and len(statement.targets) == 1
            and type(statement.targets[0]) is gast.Name
        ):
            bindings.setdefault(statement.targets[0].id, []).append(statement.value)
        else:
            for name in names_written(statement) if hasattr(statement, "targets") else ():
                bindings[name] = [None]  # bound otherwise: not known to be one value
            for node in gast.walk(statement):
                if type(node) is gast.Name and type(node.ctx) is gast.Store:
                    bindings[node.id] = [None]  # loop targets, with ... as, x += ...
    checks = _HelperChecks(parsed.resolve, bindings)
    return bool(returned) and all(v is not None and checks.check(v) is True for v in returned)


class _HelperChecks(_Checks):
    """:class:`_Checks` of an expression a helper returns, answered without its frame: a
    local bound only by ``name = value`` to values that surely are one value is one."""

    def __init__(self, resolve: Callable[[gast.expr], Any], bindings: dict):
        super().__init__(resolve)
        self.in_frame = False  # (a helper it calls: not known to be one value)
        self.bindings = bindings
        self.reading: set[str] = set()

    def check(self, node: gast.expr) -> bool | ast.expr:
        if type(node) is gast.Name:
            return self.local_is_one_value(node.id)
        found = super().check(node)
        return found if isinstance(found, bool) else False

    def array(self, node: gast.expr) -> bool | ast.expr:
        return False

    def local_is_one_value(self, name: str) -> bool:
        values = self.bindings.get(name)
        if not values or name in self.reading:  # a parameter, a global, or bound in a cycle
            return False
        self.reading.add(name)
        try:
            return all(v is not None and self.check(v) is True for v in values)
        finally:
            self.reading.discard(name)


def _is_lookup(node: gast.expr) -> bool:
    """``a``, ``a.b``, ``a[i + 1, :]``: names, attributes and items with indices without calls."""
    if type(node) is gast.Name:
        return True
    if type(node) is gast.Attribute:
        return _is_lookup(node.value)
    if type(node) is gast.Subscript:
        pure = all(isinstance(n, _INDEX) for n in gast.walk(node.slice))
        return pure and _is_lookup(node.value)
    return False


class _Lookups(ast.NodeTransformer):
    """``a[i][j]`` as ``_item_of(_item_of(a, i), j)``, slices as ``slice(...)`` calls."""

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        base = self.visit(node.value)
        index = self.visit(node.slice)
        return _call(_ITEM, base, index)

    def visit_Slice(self, node: ast.Slice) -> ast.expr:
        parts = [self.visit(p) if p is not None else ast.Constant(None) for p in
                 (node.lower, node.upper, node.step)]  # fmt: skip
        return _call(SLICE, *parts)


class _AnArrayItem:
    """What ``_item_of`` gives for an item of an array: one value, not looked up again (an
    item of a tape value would be recorded)."""


_ARRAY_ITEM = _AnArrayItem()


def _returns_one_array(function: Any) -> bool:
    name = getattr(function, "__name__", None)
    return any(
        name in names and _unwrapped(getattr(sys.modules.get(module), name, None)) is function
        for module, names in _ONE_ARRAY_FUNCTIONS.items()
    )


def _is_runtime_helper(function: Any) -> bool:
    """A helper of s2sgrad's runtime that generated code calls (``add_cotangents``), whose
    cotangent entry is one value (a second one NumPy converted would be refused)."""
    module = getattr(function, "__module__", None) or ""
    return module.startswith("s2sgrad.runtime") and callable(function)


def _unwrapped(function: Any) -> Any:
    """NumPy's function itself, while the tape runs its wrapper of it in its place."""
    return function.__wrapped__ if _is_tapes_wrapper(function) else function


def _is_tapes_wrapper(function: Any) -> bool:
    made_by = (getattr(function, "__module__", None) or "", type(function).__module__)
    return hasattr(function, "__wrapped__") and any(m.startswith("s2sgrad.") for m in made_by)


def _item_of(base: Any, index: Any) -> Any:
    if _is_array(base):
        return _ARRAY_ITEM
    if type(base) in (list, tuple, dict) or isinstance(base, tuple):  # a namedtuple too
        return base[index]
    raise LookupError("an item of an object: not looked up again")


def _is_array(value: Any) -> bool:
    if value is _ARRAY_ITEM or isinstance(value, TapeValue):
        return True
    return isinstance(value, np.ndarray) and value.dtype != object


def _is_one_value(value: Any) -> bool:
    if _is_array(value):
        return True
    return isinstance(value, (numbers.Number, np.generic))


def _call(name: str, *args: ast.expr) -> ast.expr:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _either(a: bool | ast.expr, b: bool | ast.expr) -> bool | ast.expr:
    if a is True or b is True:
        return True
    if a is False:
        return b
    if b is False:
        return a
    return ast.BoolOp(ast.Or(), [a, b])


def _both(a: bool | ast.expr, b: bool | ast.expr) -> bool | ast.expr:
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    return ast.BoolOp(ast.And(), [a, b])
