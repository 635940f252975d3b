"""``with`` blocks that change only how floating-point trouble is reported or values are
printed (``with np.errstate(divide="ignore"):``): the sweeps differentiate their body as if
it stood outside them, and keep the block around the body's own statements.

Such a context manager changes no value the body computes and no flow of control (NumPy
warns, raises or stays silent, as the block says, in the forward computation as in the
user's function). The derivative's own statements run outside the block: the block's
setting applies to the user's computation, not to its derivative.

Example::

    is_transparent_with(statement, parsed)  # True for `with np.errstate(all="ignore"):`
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.timing_contexts import only_reports

__all__ = ["is_transparent_with"]

# nothing_raised: a ``try`` body on the path where no handler runs (passes/try_statements)
_TRANSPARENT = (
    np.errstate,
    np.printoptions,
    warnings.catch_warnings,
    contextlib.nullcontext,
    runtime.nothing_raised,
)


def is_transparent_with(statement: gast.stmt, parsed: Any) -> bool:
    """Whether ``statement`` is a ``with`` of context managers that change only warnings,
    floating-point error handling or printing, none bound to a name with ``as``."""
    if type(statement) is not gast.With:
        return False
    for item in statement.items:
        made = item.context_expr
        if item.optional_vars is not None or not isinstance(made, gast.Call):
            return False
        maker = parsed.resolve(made.func)
        if not any(maker is known for known in _TRANSPARENT) and not only_reports(maker):
            return False  # a timer of the user's only reports (timing_contexts.py)
    return True
