"""The exceptions s2sgrad raises; every message names the user's file and line."""

from __future__ import annotations

import sys
import types
import warnings

__all__ = [
    "KEYWORD_ONLY_ADVICE",
    "S2SGradError",
    "UnsupportedError",
    "NonDifferentiableError",
    "ImmutableValueError",
    "AuxOutputError",
    "aux_pair_required",
    "USE_S2S",
    "after_s2s_refused",
    "S2SGradWarning",
    "FallbackWarning",
    "warn_at_caller",
    "where",
    "no_forward_derivative",
    "iterator_error",
    "generator_error",
]


class S2SGradError(Exception):
    """Base class of every error s2sgrad raises about the user's code."""

    tape_cannot_either: bool = False  # mode="auto" raises it instead of using the tape
    not_at_run_time: bool = False  # raised only when transforming, not by generated code
    internal: bool = False  # a bug of s2sgrad's, reported as a refusal
    # raised by code s2sgrad generated (differentiated again, or run on the tape), after the
    # user's own code was understood: mode="auto" may have the tape record the user's code
    in_generated_code: bool = False
    # raised as generated code runs, by a call the tape took over that the rest of the
    # function cannot follow: mode="auto" differentiates the whole function on the tape
    whole_function_on_tape: bool = False
    # a call of a function whose derivative is being built (recursion): the caller's sweep
    # dispatches it when it runs, by which time that derivative exists
    recursive_call: bool = False


class UnsupportedError(S2SGradError):
    """A construct the source transformer cannot differentiate."""


class NonDifferentiableError(S2SGradError):
    """A call with no derivative rule and no source to transform."""


class ImmutableValueError(NonDifferentiableError, TypeError):
    """An in-place change of a tape value (``t.sort()``, ``t[i] = v``), which the tape cannot
    record: a ``TypeError``, as TensorFlow raises for tensors, and a refusal of the user's
    code like the tape's other refusals of in-place writes."""


class CotangentShapeError(S2SGradError, ValueError):
    """A user's derivative whose pullback returns a cotangent that does not fit its
    argument's shape: a ``ValueError``, in every mode alike."""

    tape_cannot_either = True  # mode="auto" raises it rather than falling back to the tape


class AuxOutputError(S2SGradError, TypeError):
    """A function differentiated with ``has_aux=True`` that does not return a pair
    ``(output, aux)``: a ``TypeError``, as a wrong call is, in every mode alike."""

    tape_cannot_either = True  # mode="auto" raises it rather than falling back to the tape


def aux_pair_required(who: str) -> str:
    """The start of every :class:`AuxOutputError`'s message; ``who`` is ``file:line: name``.

    Example::

        aux_pair_required("model.py:3: loss")  # "model.py:3: loss is differentiated ..."
    """
    return f"{who} is differentiated with has_aux=True, so it must return a pair (output, aux)"


# the tape's advice in a refusal of code the source transformer handles
USE_S2S = "differentiate the function by source transformation (mode='s2s'), which handles it"
_TRY_S2S = ", or differentiate with mode='s2s'"  # the tape's shorter advice


def after_s2s_refused(tape_error: S2SGradError, s2s_error: BaseException) -> S2SGradError:
    """``tape_error``, raised by the tape in mode "auto" after the source transformer refused
    the function with ``s2s_error``: its advice to use the source transformer is dropped
    (it was tried) and the transformer's own reason is added, so that the user sees what
    each engine needs. The same exception, its message changed.

    Example::

        after_s2s_refused(NonDifferentiableError("f.py:3: ..., or " + USE_S2S + "."), refusal)
    """
    message = str(tape_error)
    for advice in (f", or {USE_S2S}", f"{USE_S2S}, ", f" {USE_S2S}", _TRY_S2S):
        message = message.replace(advice, "")
    tape_error.args = (
        f"{message} (The source transformer, tried first, refused it as well: {s2s_error})",
    )
    return tape_error


class S2SGradWarning(UserWarning):
    """Base class of every warning s2sgrad gives about the user's code."""


class FallbackWarning(S2SGradWarning):
    """mode="auto" differentiates a function with the tape, since it cannot transform it."""


# frames of these modules are not the user's: s2sgrad itself (its generated code runs in a
# module named "s2sgrad.generated"), NumPy, and the standard library's wrappers
_NOT_THE_CALLER = ("s2sgrad", "numpy", "functools", "contextlib")


def warn_at_caller(message: str, category: type[Warning] = S2SGradWarning) -> None:
    """Warn, attributing the warning to the innermost frame outside s2sgrad and NumPy
    (the user's call), so it shows the user's file:line and their filters apply.

    Example::

        warn_at_caller("differentiating f with the tape", FallbackWarning)
    """
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if module.split(".", 1)[0] not in _NOT_THE_CALLER:
            break
        frame = frame.f_back
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    warnings.warn_explicit(
        message,
        category,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=frame.f_globals.get("__name__"),
        registry=frame.f_globals.setdefault("__warningregistry__", {}),
    )


KEYWORD_ONLY_ADVICE = (
    "such an argument cannot be passed by position: compute with the value outside the call "
    "instead (a factor or a term: multiply or add it to the result), or wrap it in "
    "s2sgrad.stop_gradient(...) if it needs no derivative"
)


def where(filename: str | None, line: int | None) -> str:
    """Format a location the way tracebacks do, for the start of an error message.

    Example::

        where("model.py", 12)  # 'model.py:12'
    """
    if not filename:
        return "<unknown location>"
    return f"{filename}:{line}" if line else filename


def no_forward_derivative(function, location: str | None = None) -> NonDifferentiableError:
    """The error for forward mode meeting a custom derivative that has no ``jvp=``.

    Example::

        raise no_forward_derivative(softplus, "model.py:12")
    """
    name = getattr(function, "__qualname__", function)
    start = f"{location}: " if location else ""
    return NonDifferentiableError(
        f"{start}{name} has a custom derivative for reverse mode only; give "
        "@s2sgrad.derivative a jvp= companion to use it in forward mode"
    )


def iterator_error(location: str, description: str) -> UnsupportedError:
    """The error for an iterator (``map``, ``zip``, ``iter``…) of values being differentiated,
    kept or read bit by bit: it is used up once read, so the backward sweep cannot read it
    again.

    Example::

        raise iterator_error("model.py:12", "map(...)")
    """
    return UnsupportedError(
        f"{location}: {description} makes an iterator, which is used up as it is read and "
        "cannot be read again backwards; build a list instead ([f(v) for v in xs], "
        "list(zip(xs, ys))), or read it whole where it is made (sum(map(f, xs))), "
        "or use mode='tape'"
    )


def asynchronous_error(location: str, name: str) -> UnsupportedError:
    """The error for differentiating an ``async def`` function: calling it returns a
    coroutine, computed only when awaited; neither engine can follow it.

    Example::

        raise asynchronous_error("model.py:12", "fetch_and_score")
    """
    error = UnsupportedError(
        f"{location}: async functions cannot be differentiated: calling {name} returns a "
        "coroutine, computed only when awaited; differentiate a plain function that it "
        "awaits, or make it a plain def"
    )
    error.tape_cannot_either = True
    return error


def generator_error(location: str, name: str) -> UnsupportedError:
    """The error for differentiating a generator function (one that ``yield``s): the tape
    cannot follow it either.

    Example::

        raise generator_error("model.py:12", "layers")
    """
    error = UnsupportedError(
        f"{location}: generator functions cannot be differentiated: {name} yields its "
        "values one at a time, to be computed only when they are read; return them "
        "instead (a list, or np.stack of them)"
    )
    error.tape_cannot_either = True
    return error
