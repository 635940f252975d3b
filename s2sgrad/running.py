"""What any layer may ask about generated code while it runs: where it came from, and
whether a trace is watching it.

``codegen`` records, for each file of generated code, the user's ``file:line`` it was made
from (:data:`ORIGINS`); the runtime's error messages, the frontend (code generated from
generated code) and ``trace`` read it. :func:`tracing` is set by ``sg.trace`` and read by
the transforms and the pipeline. Both sit here, below every layer, so that none of them
has to import the compiler or the public layer to ask.

Example::

    raise ValueError(f"{running_origin()}: ...")  # called from generated code
"""

from __future__ import annotations

import contextvars
import functools
import linecache
import os
import re
import sys
import types
from array import array
from types import FrameType

__all__ = [
    "ORIGINS",
    "POSITIONS",
    "origin_of",
    "running_origin",
    "statement_origin",
    "name_the_origin",
    "note_generated_origin",
    "is_float_arithmetic_error",
    "code_of",
    "function_origin",
    "tracing",
    "TRACING",
]

ORIGINS: dict[str, str] = {}  # generated file name → the user's file:line it came from
# generated file name → at each of its lines (index 0: the header), the line, counted from
# the first line of the user's function (1), of the statement it was generated from; 0
# where that is not known
POSITIONS: dict[str, array] = {}

# set by ``s2sgrad.tracing.trace`` while it runs a transform
TRACING = contextvars.ContextVar("s2sgrad_tracing", default=False)


def origin_of(filename: str) -> str | None:
    """The user's ``file:line`` that the generated file ``filename`` was made from, followed
    back through code generated from generated code; None for a file not generated.

    Example::

        origin_of("/tmp/s2sgrad-x/dloss_0.py")  # "model.py:12"
    """
    origin = ORIGINS.get(filename)
    while origin is not None and origin.rsplit(":", 1)[0] in ORIGINS:
        origin = ORIGINS[origin.rsplit(":", 1)[0]]
    return origin


def running_origin(default: str = "<unknown location>") -> str:
    """The user's ``file:line`` of the statement whose generated code is running now (the
    innermost generated frame on the stack; the function's ``def`` line where the statement
    is not known), followed back through code generated from generated code; ``default``
    when no generated code is running.

    Example::

        raise ValueError(f"{running_origin()}: ...")  # called from generated code
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename in ORIGINS:
            statement = statement_origin(filename, frame.f_lineno)
            return statement or origin_of(filename) or default
        frame = frame.f_back
    return default


def statement_origin(filename: str, line: int) -> str | None:
    """The user's ``file:line`` of the statement that line ``line`` of the generated file
    ``filename`` was generated from, followed back through code generated from generated
    code (a derivative's derivative, which then says so: ``model.py:15 (in its derivative,
    /tmp/.../dloss_0.py:9)``); None where a step of the way is not known.

    Example::

        statement_origin("/tmp/s2sgrad-x/dloss_0.py", 7)  # "model.py:15"
    """
    derivative = None  # the line of the derivative that was differentiated again
    for _ in range(8):  # generated code is differentiated again a few times at most
        origin = ORIGINS.get(filename)
        positions = POSITIONS.get(filename)
        if origin is None or positions is None or not 0 < line <= len(positions):
            return None
        position = positions[line - 1]
        again = IN_A_DERIVATIVE in origin  # "model.py:12 (in its derivative, dloss.py:1)"
        if again:
            origin = origin.partition(IN_A_DERIVATIVE)[2].rstrip(")")
        source, _, first = origin.rpartition(":")
        if not position or not first.isdigit():
            return None
        line = int(first) + position - 1
        if again and derivative is None:
            derivative = f"{source}:{line}"
        if source not in ORIGINS:
            if derivative is None:
                return f"{source}:{line}"
            return f"{source}:{line}{IN_A_DERIVATIVE}{derivative})"
        filename = source
    return None


#: what a location in code s2sgrad generated reads as, after the user's file:line
IN_A_DERIVATIVE = " (in its derivative, "
_LOCATED = re.compile(r"^\S+:\d+")  # "file.py:12: ..." or "<stdin>:3 (in its derivative...)"


def name_the_origin(error: BaseException, function: object = None) -> None:
    """Start ``error``'s message with the user's ``file:line`` of the statement whose
    generated code raised it (the innermost generated frame of its traceback; the
    function's ``def`` line where the statement is not known), unless the
    message names a location already: a refusal the runtime raises as generated code runs
    (a list's cotangent of the wrong length) then says where it comes from. Without
    generated code (a rule refusing on the tape), ``function``'s own ``file:line``.

    Example::

        name_the_origin(error)  # "model.py:12: the cotangent of a list ..."
    """
    message = error.args[0] if error.args and isinstance(error.args[0], str) else None
    if message is None or _LOCATED.match(message):
        return
    origin = None
    trace = error.__traceback__
    while trace is not None:
        filename = trace.tb_frame.f_code.co_filename
        if filename in ORIGINS:
            statement = statement_origin(filename, trace.tb_lineno)
            origin = statement or origin_of(filename) or origin
        trace = trace.tb_next
    if origin is None:
        origin = function_origin(function)
    if origin is None:
        return
    error.args = (f"{origin}: {message}", *error.args[1:])


def note_generated_origin(error: BaseException) -> None:
    """Add a note to an exception that is not s2sgrad's own (an ``IndexError`` of NumPy)
    raised in generated code: which user function it was generated from and the generated
    line that raised, since the traceback shows only generated code. Python 3.11+ shows
    notes; the exception itself (its type and message) is left as it is.

    Example::

        note_generated_origin(error)  # "... derivative of the function at model.py:12 ..."
    """
    add_note = getattr(error, "add_note", None)
    if add_note is None or getattr(error, "_s2sgrad_noted", False):
        return
    origin = line = generated = None
    generated_line = 0
    trace = error.__traceback__
    while trace is not None:
        filename = trace.tb_frame.f_code.co_filename
        found = origin_of(filename)
        if found is not None:
            origin = found
            generated, generated_line = filename, trace.tb_lineno
            line = linecache.getline(filename, generated_line).strip()
        trace = trace.tb_next
    if origin is None:
        return
    error._s2sgrad_noted = True  # type: ignore[attr-defined]
    raised = f"s2sgrad: raised in the code generated from the function at {origin}, at '{line}'"
    statement = _statement_generated_from(generated, generated_line)
    if statement is not None:
        raised += f", generated from {statement}"
    if is_float_arithmetic_error(error):
        add_note(
            f"{raised}. Python's float arithmetic raises where NumPy gives inf or nan: if "
            "the function itself runs with these arguments, its derivative is infinite or "
            "undefined here (as sqrt's is at 0). Differentiate at another point, or compute "
            "with NumPy (np.sqrt, np.float64 arguments) to get NumPy's inf or nan"
        )
    else:
        add_note(
            f"{raised}; if that function raises it too when called with these arguments, "
            "the error is in it, else please report it as a bug of s2sgrad"
        )


def _statement_generated_from(filename: str | None, line: int) -> str | None:
    """``file:line: text`` of the user's statement that line ``line`` of the generated file
    ``filename`` was generated from (:func:`statement_origin`), when it is known; else
    None."""
    origin = statement_origin(filename, line) if filename is not None else None
    if origin is None:
        return None
    user_file, _, number = origin.partition(IN_A_DERIVATIVE)[0].rpartition(":")
    text = linecache.getline(user_file, int(number)).strip()
    return f"{origin}: {text}" if text else None


def is_float_arithmetic_error(error: BaseException) -> bool:
    """Python's float arithmetic failing at a point NumPy would answer with inf or nan:
    ``0.0 ** -0.5``, ``1.0 / 0.0``, ``math.log(0.0)``, ``math.exp(1000.0)``."""
    if isinstance(error, (ZeroDivisionError, OverflowError)):
        return True
    return type(error) is ValueError and str(error) == "math domain error"


def code_of(function: object) -> types.CodeType | None:
    """The code a function or a bound method runs (None for anything else).

    Example::

        code_of(model.loss).co_firstlineno  # the line of `def loss(self, x):`
    """
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    return code if isinstance(code, types.CodeType) else None


def is_own_code(code: types.CodeType) -> bool:
    """Whether ``code`` is s2sgrad's own (a file of this package), not the user's.

    Example::

        assert is_own_code(is_own_code.__code__)
    """
    return code.co_filename.startswith(_OWN_DIRECTORY)


_OWN_DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


def function_origin(function: object) -> str | None:
    """The ``file:line`` where ``function`` (or the function a transform wraps) is defined,
    or None.

    Example::

        function_origin(loss)  # "model.py:12"
    """
    while isinstance(function, functools.partial):
        function = function.func
    function = getattr(function, "__func__", function)
    function = getattr(function, "function", function)  # a transform: the function inside
    function = getattr(function, "__wrapped__", function)
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    here = f"{code.co_filename}:{code.co_firstlineno}"
    origin = origin_of(code.co_filename)  # a function defined in generated code
    return here if origin is None else f"{origin} (in its derivative, {here})"


def tracing() -> bool:
    """Whether a ``sg.trace`` is running: the generic code then runs on a first call, in
    place of the specialisation probe (which has no source lines to show), and nothing is
    specialised or cached for later calls.

    Example::

        tracing()  # False, outside sg.trace
    """
    return TRACING.get()
