"""The two engines behind the transforms: source transformation, or the tape.

``mode`` picks: ``"s2s"`` (source transformation only), ``"tape"`` (the runtime tape only) or
``"auto"`` (source transformation, falling back to the tape with one warning per function
where the source cannot be transformed). :func:`vjp` and :func:`jvp` are ``sg.vjp`` and
``sg.jvp``; :func:`vjp_engine` is the pullback both ``sg.vjp`` and the batched Jacobians
(``batching``) start from. ``grad`` and ``value_and_grad`` (``api._Transform``) keep
generated code per call signature on top of the same choice.

Example::

    value, pullback = vjp_engine(f, (x,), ("x",), "auto")
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

# registers the alias analysis with the tape, which asks it under the function transforms
import s2sgrad.compiler.tape_facts  # noqa: F401
from s2sgrad.compiler.caller_dicts import refuse_writes_into_caller_dicts
from s2sgrad.compiler.pipeline import call_specialised, derivative
from s2sgrad.engines.arguments import (
    bind_self,
    containers_of,
    is_differentiable,
    name_of,
    position_of,
    positional_name,
    refuse_answering_arguments,
    refuse_arithmetic_objects,
    refuse_array_attribute_names,
    refuse_complex_for_real,
    refuse_dropped_tangents,
    refuse_mismatched_shape,
    refuse_not_understood,
    refuse_tangent_of_integer,
    refuse_unknown_constants,
    require_complex_ready,
)
from s2sgrad.errors import FallbackWarning, S2SGradError, warn_at_caller
from s2sgrad.numpy_signatures import positional_parameters, vararg_name
from s2sgrad.running import name_the_origin
from s2sgrad.runtime import as_gradient, zeros_like_structure
from s2sgrad.runtime.deep_copies import refuse_custom_deep_copies
from s2sgrad.runtime.dispatch import tape_jvp
from s2sgrad.runtime.kept_states import kept_states_of
from s2sgrad.runtime.linalg import refuse_undefined_tangent, undefined_eigenvector_tangents
from s2sgrad.tape import tape_vjp
from s2sgrad.tape.values import user_location

__all__ = [
    "MODES",
    "check_mode",
    "may_fall_back",
    "on_the_tape",
    "warn_fallback",
    "vjp",
    "vjp_engine",
    "jvp",
]

MODES = ("auto", "s2s", "tape")

_warned: set = set()


def may_fall_back(mode: str, error: Exception, function: Any = None) -> bool:
    """Whether the tape may take over after the source transformer's ``error``: not in
    mode "s2s", and not for code the tape would get wrong as well, unless what was refused
    is the code ``function`` (a transform) generated, which :func:`on_the_tape` replaces.

    Example::

        may_fall_back("auto", UnsupportedError("..."))  # True
    """
    if mode == "s2s":
        return False
    if getattr(error, "in_generated_code", False) and callable(
        getattr(function, "on_the_tape", None)
    ):
        return True
    return not getattr(error, "tape_cannot_either", False)


def on_the_tape(function: Callable, error: Exception) -> Callable:
    """What the tape differentiates after ``error``: for a transform whose generated code
    the source transformer refused (``grad(f)`` under ``jvp``, a Hessian), the same transform
    computed on the tape, so that the tape records the user's code, never generated code;
    else ``function`` itself.

    Example::

        on_the_tape(sg.grad(f), error)  # sg.grad(f, mode="tape") when error is in its code
    """
    twin = getattr(function, "on_the_tape", None)
    if getattr(error, "in_generated_code", False) and callable(twin):
        return twin()
    return function


def warn_fallback(function: Callable, error: Exception) -> None:
    """Warn once per function that the tape differentiates it instead, and why.

    Example::

        warn_fallback(f, error)  # FallbackWarning: "... -- differentiating f with the tape ..."
    """
    if callable(getattr(function, "generic_function", None)):  # a transform: its function
        function = getattr(function, "function", function)  # fell back, and one warning says it
    key = getattr(function, "__code__", function)
    if key in _warned:
        return
    _warned.add(key)
    warn_at_caller(
        f"{error} -- differentiating {name_of(function)} with the tape instead "
        "(pass mode='tape' to silence this, or mode='s2s' to make it an error)",
        FallbackWarning,
    )


def check_mode(mode: str) -> None:
    """Raise ``ValueError`` unless ``mode`` is one of :data:`MODES`.

    Example::

        check_mode("s2s")  # fine; check_mode("fast") raises
    """
    if type(mode) is not str or mode not in MODES:  # an array's == would answer an array
        raise ValueError(f"{user_location()}: mode must be one of {MODES}, not {mode!r:.60}")


def vjp(f: Callable, *primals: Any, mode: str = "auto") -> tuple[Any, Callable]:
    """``sg.vjp``: ``(f(*primals), pullback)``, one cotangent per primal from the pullback.

    Example::

        out, pullback = vjp(lambda x: np.sin(x), np.zeros(2))
    """
    check_mode(mode)
    given = primals
    function, primals = bind_self(f, primals)
    parameters = positional_parameters(function)
    if len(primals) > len(parameters) and vararg_name(function) is None:
        raise TypeError(f"{name_of(f)} takes {len(parameters)} positional arguments")
    for name, primal in zip(parameters, primals):
        refuse_not_understood(name, primal, f)
    differentiable = [i for i, p in enumerate(primals) if is_differentiable(p)]
    offset = len(primals) - len(given)  # the bound self
    wrt = tuple(positional_name(function, i) for i in differentiable)
    engine_out, raw_pullback = vjp_engine(function, primals, wrt, mode)

    def pullback(cotangent: Any) -> tuple:
        if cotangent is None:  # no output used, as a None entry of a tuple's cotangent says
            cotangent = zeros_like_structure(engine_out)
        refuse_not_understood("the cotangent", cotangent, f)
        refuse_complex_for_real("the cotangent", engine_out, cotangent, f)
        refuse_mismatched_shape("the cotangent", engine_out, cotangent, f)
        try:
            raw = raw_pullback(cotangent)
        except S2SGradError as error:
            name_the_origin(error, f)
            raise
        raw = raw if len(wrt) != 1 else (raw,)
        result: list[Any] = [None] * len(primals)
        for index, value in zip(differentiable, raw):
            result[index] = as_gradient(value, primals[index])
        return tuple(result[offset:])

    return engine_out, pullback


def vjp_engine(function: Callable, primals: tuple, wrt: tuple, mode: str) -> tuple:
    """``(value, raw pullback)`` of ``function`` at ``primals`` wrt the parameters named
    ``wrt``, by the engine ``mode`` picks; the raw pullback returns one cotangent per
    ``wrt`` entry (the entry itself for one).

    Example::

        value, pullback = vjp_engine(f, (x, y), ("x",), "auto")
    """
    refuse_custom_deep_copies(function, primals)  # a copy taken for new, in both engines
    if mode != "tape":
        kept = kept_states_of(function).with_arguments(primals)  # put back if refused
        start = kept.note()
        try:
            for name, primal in zip(positional_parameters(function), primals):
                if name in wrt:
                    refuse_array_attribute_names(name, primal, function)
            refuse_arithmetic_objects(function, primals, {})
            generated = derivative(
                function,
                wrt,
                "vjp",
                containers=containers_of(primals, function),
                dynamic=mode == "auto",
            )
            require_complex_ready(generated, primals, function)
            forward = generated.function
            value, saved = forward(*primals)
            return value, functools.partial(forward.backward, saved)
        except S2SGradError as error:
            if not may_fall_back(mode, error, function):
                raise
            warn_fallback(function, error)
            kept.set(start)  # the tape runs the function once more
            function = on_the_tape(function, error)
    indices = tuple(position_of(function, w) for w in wrt)
    out, pullback = tape_vjp(function, tuple(primals), {}, indices)  # type: ignore[arg-type]  # positional

    def raw_pullback(cotangent):
        values = pullback(cotangent)
        return values if len(values) != 1 else values[0]

    return out, raw_pullback


def jvp(f: Callable, primals: tuple | list, tangents: tuple | list, *, mode: str = "auto"):
    """``sg.jvp``: ``(f(*primals), J·tangents)`` by forward mode.

    Example::

        value, tangent = jvp(lambda x: np.sin(x), (np.zeros(2),), (np.ones(2),))
    """
    check_mode(mode)
    for what, given in (("primals", primals), ("tangents", tangents)):
        if not isinstance(given, (tuple, list)):
            raise TypeError(
                f"jvp takes its {what} as a tuple with one entry per argument, as in "
                f"sg.jvp(f, (x,), (v,)); got {type(given).__name__}"
            )
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError("jvp needs one tangent per primal")
    function, primals = bind_self(f, primals)
    offset = len(primals) - len(tangents)
    tangents = (None,) * offset + tangents
    parameters = positional_parameters(function)
    for name, primal, tangent in zip(parameters, primals, tangents):
        if tangent is not None:
            refuse_not_understood(name, primal, f)
            refuse_not_understood(f"the tangent of {name!r}", tangent, f)
            refuse_complex_for_real(f"the tangent of {name!r}", primal, tangent, f)
            refuse_mismatched_shape(f"the tangent of {name!r}", primal, tangent, f)
            refuse_tangent_of_integer(name, primal, tangent, f)
            refuse_dropped_tangents(name, primal, tangent, f)
    refuse_unknown_constants(f, parameters, primals, {})
    positions = tuple(
        i for i, p in enumerate(primals) if is_differentiable(p) and tangents[i] is not None
    )
    if mode != "tape":
        kept = kept_states_of(function).with_arguments(primals)  # put back if refused
        start = kept.note()
        try:
            for i in positions:
                refuse_array_attribute_names(positional_name(function, i), primals[i], function)
            refuse_arithmetic_objects(function, primals, {})
            # sg.hvp: over a gradient of every argument (__class__, not type(): the tape reads
            # this code when sg.jvp runs inside a taped function, and refuses type() compared)
            if f.__class__.__module__ == "s2sgrad.api":
                refuse_answering_arguments(f, primals)
            differentiated = tuple(positional_name(function, i) for i in positions)
            refuse_writes_into_caller_dicts(function, primals, {}, differentiated)
            generated = derivative(
                function,
                differentiated,
                "jvp",
                containers=containers_of(primals, function),
                dynamic=mode == "auto",
            )
            require_complex_ready(generated, (primals, tangents), function)
            keywords = _tangent_keywords(generated.tangent_names, function, primals, tangents)
            before = undefined_eigenvector_tangents()
            result = _shaped_like_output(*call_specialised(generated, primals, keywords)[0])
            refuse_undefined_tangent(before, result[1])
            return result
        except S2SGradError as error:
            if not may_fall_back(mode, error, function):
                name_the_origin(error, f)
                raise
            warn_fallback(function, error)
            kept.set(start)  # the tape runs the function once more
            function = on_the_tape(function, error)
    try:
        return _shaped_like_output(*tape_jvp(function, primals, tangents, positions, {}))
    except S2SGradError as error:
        name_the_origin(error, f)
        raise


def _tangent_keywords(tangent_names, function, primals, tangents) -> dict:
    """The generated JVP's tangent parameters, by keyword: one per argument differentiated
    (an entry of ``*args`` too)."""
    keywords = {}
    for index, (primal, tangent) in enumerate(zip(primals, tangents)):
        name = positional_name(function, index)
        if name in tangent_names and tangent is not None and is_differentiable(primal):
            keywords[tangent_names[name]] = tangent
    return keywords


def _shaped_like_output(out, tangent):
    """A container output's tangent as the same containers (lists, not the CotangentLists
    generated code adds entry by entry); a number's tangent a number, as the tape gives
    (generated code, a rule's ``np.where``, may leave it a 0-d array)."""
    if isinstance(out, (dict, list, tuple)) or type(out) is float:
        tangent = as_gradient(tangent, out)
    elif type(tangent) is np.ndarray and tangent.ndim == 0 and not isinstance(out, np.ndarray):
        tangent = tangent.item() if isinstance(out, (int, float, complex)) else tangent[()]
    return out, tangent
