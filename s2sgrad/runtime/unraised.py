"""The ``try`` statement of the user's function, on the path where its body raises nothing.

Generated code runs a ``try`` body as the body of ``with nothing_raised(ValueError,
where="model.py:12"):``, the ``else`` and ``finally`` clauses after it
(``passes/try_statements.py``): the derivative is that of the path where no handler runs.
Should the body raise what a handler of the user's catches, the path taken is another
one, and this block refuses it with the user's file and line (mode "auto" then
differentiates the whole function on the tape, which follows the handler). An exception
no handler catches goes on as it is, as in the user's function.

Example::

    with nothing_raised(ValueError, where="model.py:12"):
        y = np.log(x)
"""

from __future__ import annotations

from typing import Any, Literal

from s2sgrad.errors import S2SGradError, UnsupportedError
from s2sgrad.rules.registry import nondifferentiable

__all__ = ["nothing_raised", "body_reached"]


class nothing_raised:  # noqa: N801 (named like the other context managers users write)
    """A block whose exceptions of ``caught`` (the classes a ``try``'s handlers name;
    ``BaseException`` for a bare ``except:``) are refused: a handler would have run."""

    __slots__ = ("caught", "where")

    def __init__(self, *caught: Any, where: str = "<unknown location>") -> None:
        self.caught = caught
        self.where = where

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> Literal[False]:
        if error is None or isinstance(error, S2SGradError):
            return False
        if not isinstance(error, Exception):  # KeyboardInterrupt, SystemExit: as they are
            return False
        if not any(_catches(c, error) for c in self.caught):
            return False  # no handler of the user's catches it: it goes on
        refusal = UnsupportedError(
            f"{self.where}: the 'try' body raised {type(error).__name__}, which a handler "
            "catches; source transformation differentiates only the path on which the "
            "body raises nothing, so use mode='auto' or mode='tape' to follow the handler"
        )
        refusal.whole_function_on_tape = True  # mode "auto": the tape runs the handler
        raise refusal from error


def _catches(caught: Any, error: BaseException) -> bool:
    """Whether ``except caught:`` catches ``error`` (a class or a tuple of classes)."""
    try:
        return isinstance(error, caught)
    except TypeError:  # not a class: Python's own except would fail too
        return False


def body_reached(*values: Any) -> None:
    """The last statement of a ``try`` body run as ``nothing_raised``'s block: it reads
    what the body bound, so that no statement of the body that may raise is dropped as
    unread (``purity.py`` counts it an effect), and the body is known to end here.

    Example::

        body_reached(y, z)
    """
    return None


nondifferentiable(body_reached)
