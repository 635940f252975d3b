"""A clear refusal for a library that checks the type of the arrays it is given.

SciPy's ``array_namespace`` (``scipy.integrate.cumulative_trapezoid``, say) raises
``TypeError: TapeValue is not a supported array type`` when handed a value being
differentiated; that names s2sgrad's class, not the library function or what to do.
(An ndarray attribute a tape value lacks is ``TapeValue.__getattr__``'s refusal.)
"""

from __future__ import annotations

from typing import Any

from s2sgrad.errors import NonDifferentiableError, where
from s2sgrad.naming import library_entry

__all__ = ["type_check_refusal"]


def type_check_refusal(error: TypeError) -> NonDifferentiableError | None:
    """The refusal to raise for a library's ``error`` about a tape value, else None.

    Example::

        except TypeError as error:
            raise type_check_refusal(error) or error
    """
    if "TapeValue" not in str(error):
        return None
    frames = _frames(error.__traceback__)
    entry = next((library_entry(f) for f in reversed(frames) if library_entry(f)), None)
    if entry is None:
        return None
    target, frame = entry
    return NonDifferentiableError(
        f"{where(frame.f_code.co_filename, frame.f_lineno)}: {target} does not accept a value "
        "being differentiated, which the tape cannot follow. Register a derivative with "
        f"@s2sgrad.derivative(of={target}), or wrap its input in s2sgrad.stop_gradient(...) "
        "if no derivative should flow through this call."
    )


def _frames(traceback: Any) -> list:
    frames = []
    while traceback is not None:
        frames.append(traceback.tb_frame)
        traceback = traceback.tb_next
    return frames
