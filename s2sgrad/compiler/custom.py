"""The derivative of a function with a user's derivative (``@derivative(of=f)``,
``custom_gradient``, ``checkpoint``): a call of it, not a transformation of its body."""

from __future__ import annotations

import inspect
from typing import Any

import gast

from s2sgrad import numpy_signatures, runtime
from s2sgrad.compiler.codegen import GeneratedFunction, compile_function, unique_name
from s2sgrad.errors import UnsupportedError, no_forward_derivative, where

__all__ = ["build_custom", "build_custom_jvp", "positions"]


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
    name, origin, parameters = _described(function, has_aux)
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

    signature = _signature_with_defaults(parameters, namespace)
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


def build_custom_jvp(function: Any, wrt: tuple[str, ...], has_jvp: bool) -> GeneratedFunction:
    """The forward-mode derivative of a function with a user's derivative: a call of its
    ``jvp=`` companion (refused, naming the function, where it has none).

    For ``square`` differentiated wrt ``x`` this writes::

        def square_custom_jvp(x, *, dx=None):
            return square_jvp(x, dx=dx)
    """
    name, origin, parameters = _described(function, has_aux=False)
    if not has_jvp:
        raise no_forward_derivative(function, origin)
    call = runtime.custom_jvp_call(function, positions(function, wrt))
    namespace: dict[str, Any] = {f"{name}_jvp": call}
    signature = _signature_with_defaults(parameters, namespace)
    tangents = [f"{t}=None" for t in call.tangent_names.values()]
    arguments = [p.name for p in parameters] + [f"{t}={t}" for t in call.tangent_names.values()]
    source = (
        f"def {unique_name(f'{name}_custom_jvp')}({', '.join([*signature, '*', *tangents])}):\n"
        f"    return {name}_jvp({', '.join(arguments)})\n"
    )
    generated = compile_function(gast.parse(source).body[0], namespace, origin)
    generated.tangent_names = dict(call.tangent_names)
    generated.shapes_follow_arguments = False
    return generated


def _described(function: Any, has_aux: bool) -> tuple[str, str, list]:
    """``function``'s name (an identifier), ``file:line`` and parameters, refusing what a
    call of its custom derivative cannot take."""
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
    return name, origin, parameters


def _signature_with_defaults(parameters: list, namespace: dict[str, Any]) -> list[str]:
    """The parameters as written in a generated ``def``, defaults bound in ``namespace``."""
    signature = []
    for p in parameters:
        if p.default is inspect.Parameter.empty:
            signature.append(p.name)
        else:
            namespace[f"{p.name}_default"] = p.default
            signature.append(f"{p.name}={p.name}_default")
    return signature


def positions(function, names: tuple[str, ...]) -> tuple[int, ...]:
    """The positions of the parameters ``names`` among ``function``'s parameters.

    Example::

        positions(lambda x, y: x * y, ("y",))  # (1,)
    """
    parameters = list(numpy_signatures.signature(function).parameters)
    return tuple(parameters.index(name) for name in names)
