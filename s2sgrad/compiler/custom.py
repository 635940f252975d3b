"""The derivative of a function with a user's derivative (``@derivative(of=f)``,
``custom_gradient``, ``checkpoint``): a call of it, not a transformation of its body."""

from __future__ import annotations

import inspect
from typing import Any

import gast

from s2sgrad import numpy_signatures, runtime
from s2sgrad.compiler.codegen import GeneratedFunction, compile_function, unique_name
from s2sgrad.errors import UnsupportedError, where

__all__ = ["build_custom", "positions"]


def build_custom(
    function: Any, wrt: tuple[str, ...], kind: str, has_aux: bool
) -> GeneratedFunction:
    """The derivative of a function with a user's derivative (``@derivative(of=f)``,
    ``custom_gradient``, ``checkpoint``): a call of it, not a transformation of its body.

    For ``square`` differentiated wrt ``x`` this writes::

        def dsquare(x):
            value, saved = square_vjp(x)
            dx = square_vjp.backward(saved, seed_cotangent(value))
            return as_gradient(dx, x)
    """
    name = getattr(function, "__name__", "custom")
    if not name.isidentifier():
        name = "custom"
    code = getattr(function, "__code__", None)
    origin = where(code.co_filename, code.co_firstlineno) if code else repr(function)
    if has_aux:
        raise UnsupportedError(
            f"{origin}: {name} has a custom derivative, which cannot return auxiliary "
            "values (has_aux=True); differentiate a function that calls it instead"
        )
    parameters = list(numpy_signatures.signature(function).parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters):
        raise UnsupportedError(
            f"{origin}: {name} has a custom derivative and *args, **kwargs or keyword-only "
            "parameters; differentiate a function that calls it, or use mode='tape'"
        )
    namespace = {
        f"{name}_vjp": runtime.custom_vjp(function, positions(function, wrt)),
        "seed_cotangent": runtime.seed_cotangent,
        "as_gradient": runtime.as_gradient,
    }

    def _compiled(function_name, parameters, body):
        source = f"def {function_name}({', '.join(parameters)}):\n" + "".join(
            f"    {line}\n" for line in body
        )
        return compile_function(gast.parse(source).body[0], namespace, origin)

    signature = []
    for p in parameters:
        if p.default is inspect.Parameter.empty:
            signature.append(p.name)
        else:
            namespace[f"{p.name}_default"] = p.default
            signature.append(f"{p.name}={p.name}_default")
    arguments = ", ".join(p.name for p in parameters)
    cotangents = ", ".join(f"d{w}" for w in wrt)
    gradients = ", ".join(f"as_gradient(d{w}, {w})" for w in wrt)
    if len(wrt) > 1:
        gradients = f"({gradients})"
    if kind == "vjp":
        function_name = unique_name(f"{name}_custom_vjp")
        generated = _compiled(function_name, signature, [f"return {name}_vjp({arguments})"])
        generated.companion = _compiled(
            f"{function_name}_backward", ["saved", "g"], [f"return {name}_vjp.backward(saved, g)"]
        )
        return generated
    returned = f"value, {gradients}" if kind == "value_and_grad" else gradients
    body = [
        f"value, saved = {name}_vjp({arguments})",
        f"{cotangents} = {name}_vjp.backward(saved, seed_cotangent(value))",
        f"return {returned}",
    ]
    function_name = ("d" if kind == "grad" else "value_and_d") + name
    return _compiled(function_name, signature, body)


def positions(function, names: tuple[str, ...]) -> tuple[int, ...]:
    """The positions of the parameters ``names`` among ``function``'s parameters.

    Example::

        positions(lambda x, y: x * y, ("y",))  # (1,)
    """
    parameters = list(numpy_signatures.signature(function).parameters)
    return tuple(parameters.index(name) for name in names)
