"""Which calls generated code may move or drop: those without side effects (NumPy's,
``math``'s, s2sgrad's runtime helpers, a few builtins, array methods that change nothing).

Example::

    is_pure = purity_of({"np": numpy})
    is_pure(parse_expression("np.sin(x)"))  # True
"""

from __future__ import annotations

import gast
import numpy as np

from s2sgrad.compiler.frontend import NOT_FOUND
from s2sgrad.compiler.inline import Namespace
from s2sgrad.rules import get_rule
from s2sgrad.runtime import states_left

__all__ = ["purity", "purity_of"]

_IMPURE_METHODS = {"sort", "fill", "resize", "put", "itemset", "setfield", "partition", "setflags"}


def purity(namespace: Namespace):
    """The purity test of the code whose global names ``namespace`` binds."""
    return purity_of(namespace.objects)


def purity_of(objects: dict):
    """A test of whether a call, in code whose globals are ``objects``, may be moved or
    dropped: it has no side effect.

    Example::

        purity_of({"np": numpy})(parse_expression("np.sin(x)"))  # True
    """

    def is_pure(node: gast.Call) -> bool:
        func = node.func
        if isinstance(func, gast.Name):
            obj = objects.get(func.id, NOT_FOUND)
            if obj is NOT_FOUND:
                return func.id.endswith("pullback") or func.id in _PURE_BUILTINS
            return _pure_object(obj)
        if isinstance(func, gast.Attribute):
            chain = []
            base = func
            while isinstance(base, gast.Attribute):
                chain.append(base.attr)
                base = base.value
            if not isinstance(base, gast.Name):  # a method of a value computed here
                return len(chain) == 1 and _pure_method(func.attr)
            obj = objects.get(base.id, NOT_FOUND)
            if obj is NOT_FOUND:  # a method on a local value
                return _pure_method(func.attr)
            for attr in reversed(chain):
                obj = getattr(obj, attr, NOT_FOUND)
            return obj is not NOT_FOUND and _pure_object(obj)
        return False

    return is_pure


def _pure_method(name: str) -> bool:
    """An array method that changes nothing (``sum``, ``max``, ``T``; not ``sort``)."""
    return name not in _IMPURE_METHODS and hasattr(np.ndarray, name)


# hooks may print; the final states are noted before and written back after restores;
# body_reached keeps what a try body computes, which may raise (passes/try_statements.py)
_RUNTIME_EFFECTS = {"with_derivative", "body_reached", *states_left.__all__}
_PURE_BUILTINS = {"len", "range", "abs", "float", "int", "max", "min", "sum", "tuple", "list"}


def _pure_object(obj) -> bool:
    if obj is np.random or (getattr(obj, "__module__", None) or "").startswith("numpy.random"):
        return False  # a draw (rng.normal(): numpy.random._generator's) advances a generator
    module = getattr(obj, "__module__", None) or ""
    if isinstance(obj, np.ufunc) or module.startswith("numpy") or module == "math":
        return True
    if module.startswith("s2sgrad.runtime") or module == "s2sgrad.controls":
        return getattr(obj, "__name__", "") not in _RUNTIME_EFFECTS
    return get_rule(obj) is not None and module.startswith("numpy")
