"""Guards that tell, faster than building the signature, that a call has the signature
its code was made for.

The hot path of a transformed function looks its code up by the signature of the arrays
it is given (``(shape, dtype, class)`` of each). Building that key and hashing it costs
about a microsecond for six arrays; a generated guard compares each argument against the
signature directly (``type(a0) is C0 and a0.dtype is D0 and a0.shape == S0 ...``), in
less than half of that. A number's part of the signature (``specialize/criterion.py``)
is its class for a float (``type(a1) is float``), its class and value for an integer, a
boolean, a string or None (an integer may set a shape). A guard that says no only sends
the call down the usual path: it says yes exactly when the key would equal the signature.

Example::

    guard = signature_guard(((((2,), np.dtype("float64"), np.ndarray)),))
    guard(np.zeros(2))  # True
    signature_guard((float, (int, 3)))(1.5, 3)  # True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["signature_guard"]

_BY_CLASS = (float, complex)  # signature part: the class alone
_BY_VALUE = (int, bool, str)  # signature part: (class, value)


def signature_guard(key: tuple) -> Callable[..., bool] | None:
    """A function of the call's positional arguments that is true when their signature
    is ``key`` (one part per argument: ``(shape, dtype, class)`` of an array, ``float``
    or ``complex`` for such a number, ``(class, value)`` for an integer, a boolean, a
    string or None); None for a key with a part of another form.

    Example::

        signature_guard(((((2,), np.dtype("float64"), np.ndarray)),))(np.ones(2))  # True
    """
    namespace: dict = {}
    tests = []
    parameters = []
    for index, part in enumerate(key):
        test = _test(f"a{index}", index, part, namespace)
        if test is None:
            return None
        parameters.append(f"a{index}")
        tests.append(test)
    body = " and ".join(tests) if tests else "True"
    source = f"def guard({', '.join(parameters)}):\n    return {body}\n"
    exec(compile(source, "<s2sgrad signature guard>", "exec"), namespace)  # noqa: S102
    return namespace["guard"]


def _test(argument: str, index: int, part, namespace: dict) -> str | None:
    """The test that ``argument``'s part of the signature is ``part``, or None."""
    if part in _BY_CLASS:
        namespace[f"C{index}"] = part
        return f"type({argument}) is C{index}"
    if type(part) is not tuple:
        return None
    if len(part) == 2 and part == (type(None), None):
        return f"{argument} is None"
    if len(part) == 2 and part[0] in _BY_VALUE and type(part[1]) is part[0]:
        namespace[f"C{index}"], namespace[f"V{index}"] = part
        return f"type({argument}) is C{index} and {argument} == V{index}"
    if len(part) != 3:
        return None
    shape, dtype, cls = part
    if type(shape) is not tuple or not isinstance(dtype, np.dtype) or not isinstance(cls, type):
        return None
    namespace[f"S{index}"], namespace[f"D{index}"], namespace[f"C{index}"] = part
    return (
        f"type({argument}) is C{index} and {argument}.dtype is D{index} "
        f"and {argument}.shape == S{index}"
    )
