"""A clear refusal for a library that checks the type of the arrays it is given.

SciPy's ``array_namespace`` (``scipy.integrate.cumulative_trapezoid``, say) raises
``TypeError: TapeValue is not a supported array type`` when handed a value being
differentiated; that names s2sgrad's class, not the library function or what to do.
(An ndarray attribute a tape value lacks is ``TapeValue.__getattr__``'s refusal.) A
compiled routine without a rule may fail with a ``ValueError`` instead (``lfilter``'s C
code before it had one: "could not convert b, a, and x to a common type", on the object
array a tape value makes).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from s2sgrad.errors import NonDifferentiableError, where
from s2sgrad.naming import library_entry
from s2sgrad.running import origin_of, running_origin
from s2sgrad.tape.values import TapeValue

__all__ = ["type_check_refusal", "array_protocol_refusal", "library_value_refusal"]


def type_check_refusal(error: TypeError) -> NonDifferentiableError | None:
    """The refusal to raise for a library's or a builtin's ``error`` about a tape value,
    else None.

    Example::

        except TypeError as error:
            raise type_check_refusal(error) or error
    """
    if "TapeValue" not in str(error):
        return None
    frames = _frames(error.__traceback__)
    entry = next((library_entry(f) for f in reversed(frames) if library_entry(f)), None)
    if entry is None:
        return _builtin_refusal(error, frames)
    target, frame = entry
    return NonDifferentiableError(
        f"{where(frame.f_code.co_filename, frame.f_lineno)}: {target} does not accept a value "
        "being differentiated, which the tape cannot follow. Register a derivative with "
        f"@s2sgrad.derivative(of={target}), or wrap its input in s2sgrad.stop_gradient(...) "
        "if no derivative should flow through this call."
    )


def array_protocol_refusal(error: ValueError) -> NonDifferentiableError | None:
    """The refusal to raise when an object's ``__array__`` handed NumPy a tape value
    (``np.asarray(wrapper)`` of an object holding a value being differentiated): NumPy's
    ``ValueError`` says only that the method did not produce an array. Else None.

    Example::

        except ValueError as error:
            raise array_protocol_refusal(error) or error
    """
    if "__array__ method not producing an array" not in str(error):
        return None
    location = _users_line(_frames(error.__traceback__))
    return NonDifferentiableError(
        f"{location}: an object's __array__ method returned a value being differentiated, "
        "which NumPy makes a plain array of, dropping its derivative on the tape; compute "
        "with the value itself (not the object holding it), or use mode='s2s'."
    )


def library_value_refusal(error: ValueError) -> NonDifferentiableError | None:
    """The refusal to raise when an installed library's code, given a value being
    differentiated, fails with a ``ValueError`` (a compiled routine that cannot take the
    object array a tape value becomes), else None: the library's frames must hold a tape
    value, so a library's own complaint about plain arrays passes unchanged.

    Example::

        except ValueError as error:
            raise library_value_refusal(error) or error
    """
    frames = _frames(error.__traceback__)
    entry = None
    for frame in reversed(frames):
        entry = library_entry(frame)
        if entry is not None:
            break
    if entry is None or not _holds_a_tape_value(frames, entry[1]):
        return None
    target, frame = entry
    return NonDifferentiableError(
        f"{where(frame.f_code.co_filename, frame.f_lineno)}: {target} failed on a value being "
        f"differentiated ({error}), which the tape cannot follow. Register a derivative with "
        f"@s2sgrad.derivative(of={target}), or wrap its input in s2sgrad.stop_gradient(...) "
        "if no derivative should flow through this call."
    )


def _holds_a_tape_value(frames: list, caller: Any) -> bool:
    """Whether a frame the library ran below ``caller`` has a tape value among its local
    variables (directly, in a list or tuple, or in an object array)."""
    below = frames[frames.index(caller) + 1 :] if caller in frames else frames
    for frame in below:
        for value in frame.f_locals.values():
            items = value if isinstance(value, (list, tuple)) else (value,)
            for item in items:
                if isinstance(item, TapeValue) or _object_array_of_tape_values(item):
                    return True
    return False


def _object_array_of_tape_values(item: Any) -> bool:
    return (
        isinstance(item, np.ndarray)
        and item.dtype.kind == "O"
        and any(isinstance(v, TapeValue) for v in item.flat[:8])
    )


def _builtin_refusal(error: TypeError, frames: list) -> NonDifferentiableError:
    """A builtin or a compiled extension (``memoryview(x)``) refusing a
    tape value: at the innermost line of the user's code that ran, or, where s2sgrad's own
    code made the call (a call dispatched from generated code), the user's line that ran
    it."""
    location = _users_line(frames)
    said = str(error).replace("'TapeValue'", "a value being differentiated")
    said = said.replace("TapeValue", "value being differentiated")
    return NonDifferentiableError(
        f"{location}: a value being differentiated is given where Python or a compiled "
        f"library wants a plain number or array ({said}), which the tape cannot follow. "
        "Compute with NumPy functions instead, or wrap the value in "
        "s2sgrad.stop_gradient(...) if no derivative should flow through it."
    )


def _users_line(frames: list) -> str:
    """``file:line`` of the innermost of ``frames`` in the user's code; where s2sgrad's own
    or generated code is innermost (a call dispatched from generated code), the user's
    function whose generated code runs."""
    own = os.path.dirname(os.path.dirname(__file__))
    users = [f for f in frames if not f.f_code.co_filename.startswith(own)]
    if users and origin_of(users[-1].f_code.co_filename) is None:
        return where(users[-1].f_code.co_filename, users[-1].f_lineno)
    return running_origin()


def _frames(traceback: Any) -> list:
    frames = []
    while traceback is not None:
        frames.append(traceback.tb_frame)
        traceback = traceback.tb_next
    return frames
