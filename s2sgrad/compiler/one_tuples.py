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
import linecache
from collections.abc import Callable
from typing import Any

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
    parameters, arguments = [], []
    keyword_only = False
    for parameter in signature:
        name, kind = parameter.name, parameter.kind
        if kind is parameter.VAR_POSITIONAL:
            parameters.append(f"*{name}")
            arguments.append(f"*{name}")
            keyword_only = True
            continue
        if kind is parameter.VAR_KEYWORD:
            parameters.append(f"**{name}")
            arguments.append(f"**{name}")
            continue
        if kind is parameter.KEYWORD_ONLY and not keyword_only:
            parameters.append("*")
            keyword_only = True
        spelled = name
        if parameter.default is not parameter.empty:
            default = f"{callee}_default_{len(namespace)}"
            namespace[default] = parameter.default
            spelled = f"{name}={default}"
        parameters.append(spelled)
        arguments.append(f"{name}={name}" if kind is parameter.KEYWORD_ONLY else name)
    positional_only = [p for p in signature if p.kind is p.POSITIONAL_ONLY]
    if positional_only:
        parameters.insert(len(positional_only), "/")
    name = generated.__name__
    filename = f"<s2sgrad one-tuple result of {name} {next(_numbers)}>"
    call = f"{callee}({', '.join(arguments)})"
    source = f"def {name}({', '.join(parameters)}):\n" + result.format(call)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our own source)
    return namespace[name]
