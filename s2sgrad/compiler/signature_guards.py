"""The hot path of a transformed function: one generated function per signature that
tells, faster than building the signature, that a call has the signature its code was
made for and that the names the code reads still hold what they held, and then calls it.

A transformed function looks its code up by the signature of the arrays it is given
(``(shape, dtype, class)`` of each). Building that key and hashing it costs about a
microsecond for six arrays; the generated call compares each argument against the
signature directly (``type(a0) is C0 and a0.dtype is D0 and a0.shape == S0 ...``) in
less than half of that, checks the freshness entries (``freshness.py``) in the same
expression, and calls the code, in one frame. A number's part of the signature
(``specialize/criterion.py``) is its class for a float (``type(a1) is float``), its
class and value for an integer, a boolean, a string or None (an integer may set a
shape). When any test fails it returns :data:`MISSING`, and the call goes the usual way:
it runs the code exactly when the key would equal the signature and the entries hold.

Example::

    call = guarded_call(((((2,), np.dtype("float64"), np.ndarray)),), np.sum, [])
    call(np.ones(2))  # 2.0
    call(np.ones(3))  # MISSING
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from s2sgrad.compiler.freshness import MISSING, Entry

__all__ = ["MISSING", "guarded_call"]

_BY_CLASS = (float, complex)  # signature part: the class alone
_BY_VALUE = (int, bool, str)  # signature part: (class, value)


def guarded_call(key: tuple, function: Callable, entries: list[Entry]) -> Callable | None:
    """A function of the call's positional arguments that returns ``function(*args)``
    when their signature is ``key`` (one part per argument: ``(shape, dtype, class)`` of
    an array, ``float`` or ``complex`` for such a number, ``(class, value)`` for an
    integer, a boolean, a string or None) and every entry of ``entries`` still holds
    what it held; :data:`MISSING` otherwise. None for a key with a part of another form.

    Example::

        guarded_call(((((2,), np.dtype("float64"), np.ndarray)),), np.sum, [])(np.ones(2))
    """
    namespace: dict = {"M": MISSING, "F": function, "ENTRIES": entries, "COUNT": len(entries)}
    tests = ["not rest"]  # more arguments than the signature's
    parameters = []
    for index, part in enumerate(key):
        test = _test(f"a{index}", index, part, namespace)
        if test is None:
            return None
        parameters.append(f"a{index}")
        tests.append(test)
    for index, entry in enumerate(entries):  # Assumptions.hold, inlined
        namespace[f"H{index}"], namespace[f"N{index}"] = entry.holder, entry.name
        namespace[f"E{index}"] = entry
        tests.append(f"H{index}.get(N{index}, M) is E{index}.expected")
    tests.append("len(ENTRIES) == COUNT")  # none added since
    signature = ", ".join([f"{p}=M" for p in parameters] + ["*rest"])  # fewer: M fails
    source = (
        f"def guarded({signature}):\n"
        f"    if {' and '.join(tests)}:\n"
        f"        return F({', '.join(parameters)})\n"
        "    return M\n"
    )
    exec(compile(source, "<s2sgrad signature guard>", "exec"), namespace)  # noqa: S102
    return namespace["guarded"]


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
