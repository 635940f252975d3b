"""``c < x``, ``round(c)``: checked, where it runs, that no operand is an object whose
class answers the comparison (or ``round``, ``math.floor`` ...) with code of the user's.

The sweeps take a comparison's result for a flag and ``round``'s for an integer, with no
derivative. An object whose class writes ``__lt__`` (or ``__round__``) may return a value
computed from a differentiated one (``return other * self.scale``), which Python hands back
as it is: taken for a constant, its derivative was lost, silently. An object made in the
function is refused when transforming (``ForwardSweep.refuse_answered_by_objects``); one
given as a parameter, or made by a class given as one, is known only as the code runs.

Example::

    answered_plainly(np.ones(2), 1.0)  # None: NumPy's and Python's own comparisons
    answered_plainly(Scaled(2.0), x)  # UnsupportedError naming the user's line
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.registry import nondifferentiable
from s2sgrad.running import running_origin
from s2sgrad.runtime.core import ARRAY_PROTOCOLS
from s2sgrad.runtime.records import defines_value_protocols

__all__ = ["answered_plainly"]  # what generated code calls; the tests of classes are imported

# classes whose comparisons and rounding are Python's or NumPy's own: nothing to look up
_PLAIN: dict[type, bool] = {
    kind: False
    for kind in (float, int, bool, complex, str, type(None), tuple, list, np.ndarray)
    + (np.float64, np.float32, np.int64, np.int32, np.bool_, np.complex128)
}


def answers_itself(kind: type) -> bool:
    """Whether objects of class ``kind`` answer a comparison or ``round`` with code of the
    user's (looked up once per class).

    Example::

        answers_itself(float)  # False
    """
    found = _PLAIN.get(kind)
    if found is None:
        found = (
            not kind.__module__.startswith(("s2sgrad.", "numpy"))
            # an array of another library (Dask) compares entry by entry, as NumPy does
            and not any(hasattr(kind, protocol) for protocol in ARRAY_PROTOCOLS)
            and defines_value_protocols(kind)
        )
        _PLAIN[kind] = found
    return found


_ARITHMETIC = frozenset(
    f"__{r}{name}__"
    for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul")
    for r in ("", "r")
)
_ARITHMETIC_FOUND: dict[type, bool] = dict.fromkeys(_PLAIN, False)


def answers_arithmetic(kind: type) -> bool:
    """Whether objects of class ``kind`` (not an array's, a number's or s2sgrad's) do
    arithmetic with methods written in Python (``__radd__`` returning ``other * self.s``):
    ``x + c`` is then theirs to answer, not NumPy's ``add`` (looked up once per class).

    Example::

        answers_arithmetic(np.ndarray)  # False
    """
    found = _ARITHMETIC_FOUND.get(kind)
    if found is None:
        found = (
            not (
                kind.__module__.startswith(("s2sgrad.", "numpy"))
                or issubclass(kind, (np.ndarray, np.generic))
                # an array of another library taking part in NumPy's dispatch (Dask): its own
                # refusals and rules (runtime.core.is_foreign_array)
                or any(hasattr(kind, protocol) for protocol in ARRAY_PROTOCOLS)
            )
            and any(
                isinstance(vars(base).get(name), types.FunctionType)
                for base in kind.__mro__[:-1]
                for name in _ARITHMETIC
            )
        )
        _ARITHMETIC_FOUND[kind] = found
    return found


def answered_plainly(*operands: Any) -> None:
    """Nothing when each of ``operands`` compares and rounds as Python or NumPy does (a
    number, an array, an object whose class writes no comparison of its own); else
    ``UnsupportedError`` at the user's line, the whole function to be taped in mode="auto".

    Generated code calls it before a comparison (or ``round``, ``math.floor`` ...) that
    reads a differentiated value and a name whose class is known only as the code runs.

    Example::

        answered_plainly(np.float64(2.0), 3)  # None
    """
    for operand in operands:
        kind = type(operand)
        if not answers_itself(kind):
            continue
        error = UnsupportedError(
            f"{running_origin('the differentiated function')}: an object of class "
            f"'{kind.__qualname__}' is compared or rounded with values being differentiated, "
            "and its class answers that with code of its own, whose result source "
            "transformation takes for a constant; compare the values it holds, or use "
            "mode='tape'"
        )
        error.whole_function_on_tape = True  # mode="auto": the tape calls the method itself
        raise error


nondifferentiable(answered_plainly)
