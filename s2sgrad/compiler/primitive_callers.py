"""A Python function calling a library function that has a derivative rule, so that a
transform given the library function itself (``sg.vjp(np.linalg.norm, x)``,
``sg.grad(scipy.special.logsumexp)``) differentiates it by its rule.

Such a function has no source (a ufunc, a C function), or its source is the library's own,
which is not what its rule differentiates (and may not be readable: a decorated SciPy
function's lines do not compile to the code that runs). The caller's source is kept in
``linecache``, where the transformer reads it as it reads a user's function.

Example::

    caller = primitive_caller(np.linalg.norm)
    # def norm(x, ord=None, axis=None, keepdims=False):
    #     return primitive(x, ord, axis, keepdims)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.compiler.written_callers import defined, spelled_parameters
from s2sgrad.numpy_signatures import signature
from s2sgrad.rules.registry import get_rule

__all__ = ["primitive_caller", "differentiated_by_its_rule"]

_NO_VALUE = getattr(np, "_NoValue", None)  # NumPy's default of a parameter left unset
_numbers = itertools.count()
_CALLERS: dict[int, tuple[Any, Callable]] = {}  # id(primitive) -> (primitive, its caller)


def differentiated_by_its_rule(function: Any) -> bool:
    """Whether ``function`` is a library function with a derivative rule of s2sgrad's own
    (not a user's ``@sg.derivative``, whose function is differentiated as it was before).

    Example::

        differentiated_by_its_rule(np.sin)  # True
    """
    if getattr(function, "__s2sgrad_generated__", None) is not None:
        return False
    rule = get_rule(function)
    return (
        rule is not None
        and rule.custom is None
        and rule.custom_jvp is None
        and (rule.vjp is not None or rule.jvp is not None)
    )


def primitive_caller(primitive: Any) -> Callable:
    """A function of any arguments returning ``primitive`` of them, one per primitive.

    Example::

        primitive_caller(np.sin)(0.0)  # 0.0
    """
    known = _CALLERS.get(id(primitive))
    if known is not None and known[0] is primitive:
        return known[1]
    name = _identifier(getattr(primitive, "__name__", "primitive"))
    filename = f"<s2sgrad call of {name} {next(_numbers)}>"
    namespace: dict[str, Any] = {"primitive": primitive}
    parameters, arguments = _parameters(primitive, namespace)
    source = f"def {name}({', '.join(parameters)}):\n    return primitive({', '.join(arguments)})\n"
    caller = defined(source, filename, name, namespace)
    _CALLERS[id(primitive)] = (primitive, caller)
    return caller


def _parameters(primitive: Any, namespace: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The caller's parameters, ``primitive``'s own (so ``wrt="x"`` names them), and the
    arguments it passes: every parameter up to the first NumPy leaves unset unless given
    (``keepdims=<no value>``, which the caller leaves unset too), or a ufunc's inputs; any
    number of them (``*args, **kwargs``) where the signature is not known."""
    try:
        signature_parameters = list(signature(primitive).parameters.values())
    except (TypeError, ValueError):
        return ["*args", "**kwargs"], ["*args", "**kwargs"]
    if isinstance(primitive, np.ufunc):  # its inputs only: the next position is out=
        signature_parameters = signature_parameters[: primitive.nin]
    kept = []
    for parameter in signature_parameters:
        name = parameter.name
        if not name.isidentifier() or name == "primitive" or name.startswith("default_"):
            return ["*args", "**kwargs"], ["*args", "**kwargs"]
        if _NO_VALUE is not None and parameter.default is _NO_VALUE:
            break
        kept.append(parameter)
    return spelled_parameters(kept, namespace, "default_")


def _identifier(name: str) -> str:
    spelled = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    if not spelled or spelled[0].isdigit() or spelled == "primitive":
        spelled = "call_" + spelled
    return spelled
