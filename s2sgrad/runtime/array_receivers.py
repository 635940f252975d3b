"""``r.dot(x)`` differentiated by the rule of ``np.ndarray.dot``: checked, where it runs,
to call NumPy's method.

The transformer reads a method call on a name as the array method of that name. Where
the receiver is not differentiated and a differentiated value fills a slot the array
method takes values in (``other`` of ``dot``, ``min``/``max`` of ``clip``), the call is
right for an array (``X.dot(w)``, the data times the weights) and wrong for an object of
the user's with a method of that name (``acc.dot(x)``), whose derivative the rule does not
give. Nothing tells the two apart before the code runs.

Example::

    array_receiver(np.ones(2), "dot")  # None: NumPy's own method
    array_receiver(Accumulator(), "dot")  # UnsupportedError naming the user's line
"""

from __future__ import annotations

from typing import Any

import numpy as np

from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.registry import nondifferentiable
from s2sgrad.running import running_origin
from s2sgrad.runtime.core import is_foreign_array

__all__ = ["array_receiver"]


def array_receiver(receiver: Any, method: str) -> None:
    """Nothing when ``receiver.<method>`` is NumPy's (an array, a NumPy scalar, a tape
    value or a batch of s2sgrad's, an array of another library dispatching to NumPy);
    else ``UnsupportedError`` at the user's line, the whole function to be taped in
    mode="auto".

    Example::

        array_receiver(np.float64(2.0), "clip")  # None
    """
    kind = type(receiver)
    found = getattr(kind, method, None)
    if found is None:  # no such method: the call raises Python's own error, as it would
        return
    if found is getattr(np.ndarray, method, None) or found is getattr(np.generic, method, None):
        return
    if kind.__module__.startswith("s2sgrad."):  # a tape value, a batch: NumPy's meaning
        return
    if is_foreign_array(receiver) and not isinstance(receiver, np.ndarray):
        return  # a Dask array: its method computes what NumPy's does
    error = UnsupportedError(
        f"{running_origin('the differentiated function')}: .{method}(...) is called on "
        f"an object of class '{kind.__qualname__}', whose own method '{method}' the "
        f"transformer took for NumPy's ndarray.{method}; call it through its class "
        f"({kind.__qualname__}.{method}(obj, ...)) so that its source is differentiated, "
        "or use mode='tape'"
    )
    error.whole_function_on_tape = True  # mode="auto": the tape calls the method itself
    raise error


nondifferentiable(array_receiver)
