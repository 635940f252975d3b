"""The generated code of ``grad(f, wrt=(0,))``, giving the 1-tuple the transform gives.

Generated code for one argument returns its gradient alone; the transform wraps it in a
tuple when ``wrt`` was a tuple (``api._Transform._shape_result``). A derivative of the
transform (``grad`` of a function that calls it, ``jvp``, ``vjp``) differentiates its
generated code, so it must see the same result: this writes a function with the generated
code's signature that calls it and shapes the result, kept in ``linecache`` for the
transformer to read, as a user's helper is.

Example::

    shaped = one_tuple_caller(generated.function, "grad", has_aux=False)
    # def dloss(x): return (generated(x),)
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from typing import Any

from s2sgrad.compiler.written_callers import defined, spelled_parameters

__all__ = ["one_tuple_caller"]

_numbers = itertools.count()

_RESULTS = {  # the generated code's result, shaped as the transform shapes it
    ("grad", False): "    return ({},)\n",
    ("grad", True): "    gradient, aux = {}\n    return (gradient,), aux\n",
    ("value_and_grad", False): "    value, gradient = {}\n    return value, (gradient,)\n",
    ("value_and_grad", True): "    value, gradient = {}\n    return value, (gradient,)\n",
}


def one_tuple_caller(generated: Callable, kind: str, has_aux: bool) -> Callable:
    """A function of ``generated``'s parameters returning its result with the gradient in a
    1-tuple (``kind``: ``"grad"`` or ``"value_and_grad"``); one per generated function.

    Example::

        one_tuple_caller(dloss, "grad", False)(x)  # (dloss(x),)
    """
    made = getattr(generated, "__s2sgrad_one_tuple__", None)
    if made is None:
        made = _written(generated, _RESULTS[(kind, has_aux)])
        generated.__s2sgrad_one_tuple__ = made  # type: ignore[attr-defined]
    return made


def _written(generated: Callable, result: str) -> Callable:
    signature = inspect.signature(generated).parameters.values()
    taken = {p.name for p in signature}
    callee = next(
        f"generated{'_' * i}" for i in itertools.count() if f"generated{'_' * i}" not in taken
    )
    namespace: dict[str, Any] = {callee: generated}
    parameters, arguments = spelled_parameters(signature, namespace, f"{callee}_default_")
    name = generated.__name__
    filename = f"<s2sgrad one-tuple result of {name} {next(_numbers)}>"
    call = f"{callee}({', '.join(arguments)})"
    source = f"def {name}({', '.join(parameters)}):\n" + result.format(call)
    return defined(source, filename, name, namespace)
