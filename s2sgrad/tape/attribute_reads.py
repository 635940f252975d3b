"""A clear refusal for code that reads an array attribute the tape's values lack.

Also for a library that checks its arguments' types (SciPy's ``array_namespace``).

Library code (SciPy's ``expm`` calling its Cython ``bandwidth``, which reads ``.flags``)
or the user's own code may read an attribute of a value being differentiated that a
:class:`~s2sgrad.tape.values.TapeValue` does not have; Python's ``AttributeError`` about
``TapeValue`` would name s2sgrad's class, not what to do.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from s2sgrad.errors import NonDifferentiableError, where
from s2sgrad.naming import library_entry
from s2sgrad.tape.values import TapeValue

__all__ = ["attribute_refusal"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NUMPY = os.path.dirname(np.__file__) + os.sep


def attribute_refusal(error: Exception) -> NonDifferentiableError | None:
    """The refusal to raise for ``error`` (an ``AttributeError`` about a tape value, or a
    library's ``TypeError`` refusing one), or None when it is about something else.

    Example::

        except AttributeError as error:
            raise attribute_refusal(error) or error
    """
    frames = _frames(error.__traceback__)
    entry = next((library_entry(f) for f in reversed(frames) if _is_installed(f)), None)
    if isinstance(error, TypeError):  # a library checking the type of its arrays
        if entry is None or "TapeValue" not in str(error):
            return None
        reads = "does not accept"
    elif isinstance(getattr(error, "obj", None), TapeValue):
        reads = f"reads .{getattr(error, 'name', '?')} of"
    else:
        return None
    if entry is not None:
        target, frame = entry
        return NonDifferentiableError(
            f"{where(frame.f_code.co_filename, frame.f_lineno)}: {target} {reads} "
            "a value being differentiated, which the tape cannot follow. "
            f"Register a derivative with @s2sgrad.derivative(of={target}), or wrap its input "
            "in s2sgrad.stop_gradient(...) if no derivative should flow through this call."
        )
    users = [f for f in frames if not f.f_code.co_filename.startswith((_PACKAGE, _NUMPY))]
    frame = users[-1] if users else None
    filename, line = (frame.f_code.co_filename, frame.f_lineno) if frame else (None, None)
    return NonDifferentiableError(
        f"{where(filename, line)}: .{getattr(error, 'name', '?')} of a value being "
        "differentiated is not recorded by the tape; compute it with NumPy functions of "
        "the value, or use mode='s2s'."
    )


def _frames(traceback: Any) -> list:
    frames = []
    while traceback is not None:
        frames.append(traceback.tb_frame)
        traceback = traceback.tb_next
    return frames


def _is_installed(frame: Any) -> bool:
    return library_entry(frame) is not None and not frame.f_code.co_filename.startswith(_PACKAGE)
