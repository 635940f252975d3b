"""The hot path of a transformed function: one generated function per signature that
tells, faster than building the signature, that a call has the signature its code was
made for and that the names the code reads still hold what they held, and then calls it.

A transformed function looks its code up by the signature of the arrays it is given
(``(shape, dtype, class)`` of each). Building that key and hashing it costs about a
microsecond for six arrays; the generated call compares each argument against the
signature directly (``type(a0) is C0 and a0.dtype is D0 and a0.shape == S0 ...``; an
ndarray of one dimension or none by ``ndim`` and ``len``, which build no tuple) in less
than half of that, checks the freshness entries (``freshness.py``) in the same
expression, and calls the code, in one frame. A number's part of the signature
(``specialize/criterion.py``) is its class for a float (``type(a1) is float``), its
class and value for an integer, a boolean, a string or None (an integer may set a
shape). When any test fails it returns :data:`MISSING`, or calls the transform's usual
way with the call's own arguments (``miss``): it runs the code exactly when the key
would equal the signature and the entries hold. A transform calls its guard directly
(``api._Transform.__call__`` reads it), so the guard also shapes the result and reports
an exception of the code (``result``, ``failed``).

Example::

    call = guarded_call(((((2,), np.dtype("float64"), np.ndarray)),), np.sum, [])
    call(np.ones(2))  # 2.0
    call(np.ones(3))  # MISSING
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.compiler.freshness import MISSING, Entry, _Attributes

__all__ = ["MISSING", "guarded_call"]

_BY_CLASS = (float, complex)  # signature part: the class alone
_BY_VALUE = (int, bool, str)  # signature part: (class, value)


def guarded_call(
    key: tuple,
    function: Callable,
    entries: list[Entry],
    *,
    miss: Callable | None = None,
    failed: Callable[[BaseException], Any] | None = None,
    result: Callable | str | None = None,
    current: tuple[Any, str, Any] | None = None,
) -> Callable | None:
    """A function of the call's arguments that returns ``function(*args)`` when they are
    positional only, their signature is ``key`` (one part per argument: ``(shape, dtype,
    class)`` of an array, ``float`` or ``complex`` for such a number, ``(class, value)``
    for an integer, a boolean, a string or None) and every entry of ``entries`` still
    holds what it held; else ``miss(*args, **kwargs)`` (:data:`MISSING` without ``miss``).
    None for a key with a part of another form.

    ``failed`` is told of an exception of ``function`` before it propagates; ``result``
    shapes what ``function`` returns (``"one_tuple"``: ``(value,)``; a function: its
    value); ``current``, ``(holder, attribute, token)``, is a further test:
    ``getattr(holder, attribute) is token`` (the code is still the one kept).

    Example::

        guarded_call(((((2,), np.dtype("float64"), np.ndarray)),), np.sum, [])(np.ones(2))
    """
    namespace: dict = {"M": MISSING, "A": _ABSENT, "F": function}
    namespace.update(ENTRIES=entries, COUNT=len(entries), MISS=miss, FAILED=failed)
    tests = ["not rest and not kw"]  # more arguments than the signature's, or by name
    parameters = []
    for index, part in enumerate(key):
        test = _test(f"a{index}", index, part, namespace)
        if test is None:
            return None
        parameters.append(f"a{index}")
        tests.append(test)
    for index, entry in enumerate(entries):  # Assumptions.hold, inlined
        tests.append(_entry_test(index, entry, namespace))
    tests.append("len(ENTRIES) == COUNT")  # none added since
    if current is not None:
        namespace["HOLDER"], attribute, namespace["TOKEN"] = current
        tests.append(f"HOLDER.{attribute} is TOKEN")
    arguments = ", ".join(parameters)
    value = f"F({arguments})"
    if result == "one_tuple":
        value = f"({value},)"
    elif result is not None:
        namespace["SHAPE"] = result
        value = f"SHAPE({value})"
    run = [f"return {value}"]
    if failed is not None:
        run = ["try:", f"    return {value}", "except BaseException as error:"]
        run += ["    FAILED(error)", "    raise"]
    # positional-only parameters: an argument passed by name is in ``kw``, whatever its
    # name; one not given is A, which fails every test (and is not the call's: those not
    # given are trailing ones)
    given = [f"*[a for a in ({arguments},) if a is not A]"] if parameters else []
    otherwise = "M" if miss is None else f"MISS({', '.join([*given, '*rest', '**kw'])})"
    signature = ", ".join([f"{p}=A" for p in parameters] + ["/"] * bool(parameters))
    lines = [
        f"def guarded({', '.join([signature, '*rest, **kw'] if parameters else ['*rest, **kw'])}):"
    ]
    lines += [f"    if {' and '.join(tests)}:", *[f"        {line}" for line in run]]
    lines.append(f"    return {otherwise}")
    source = "\n".join(lines) + "\n"
    exec(compile(source, "<s2sgrad signature guard>", "exec"), namespace)  # noqa: S102
    return namespace["guarded"]


class _Absent:
    """A positional argument the call did not give (its guard's parameter default)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"


_ABSENT = _Absent()


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
    namespace[f"D{index}"], namespace[f"C{index}"] = dtype, cls
    return f"type({argument}) is C{index} and {argument}.dtype is D{index} and " + _shape_test(
        argument, index, shape, cls, namespace
    )


def _shape_test(argument: str, index: int, shape: tuple, cls: type, namespace: dict) -> str:
    """The test that ``argument`` (of class ``cls``) has the shape ``shape``.

    ``a.shape == S`` builds a tuple; an array of class ndarray itself (not a subclass,
    which may redefine ``ndim`` or ``len``) of no dimension or one is tested as exactly,
    and faster, by its ``ndim`` and its ``len`` (the first length). (For two dimensions,
    adding ``size``, the product of the two, costs more than the tuple.)
    """
    if cls is np.ndarray and len(shape) <= 1 and all(type(n) is int for n in shape):
        lengths = [f"len({argument}) == {n}" for n in shape]
        return " and ".join([f"{argument}.ndim == {len(shape)}", *lengths])
    namespace[f"S{index}"] = shape
    return f"{argument}.shape == S{index}"


def _entry_test(index: int, entry: Entry, namespace: dict) -> str:
    """The test that ``entry``'s name holds what it held (``Entry.holder.get``, inlined).

    A function's ``__code__`` (``_Attributes``, holding the function weakly) is read from
    the function itself, which the guard holds, as long as it does (the guard of a
    transform lives no longer than the transform).
    """
    namespace[f"E{index}"] = entry
    holder = entry.holder
    if type(holder) is _Attributes and entry.name == "__code__":
        owner = holder.owner()
        if type(owner) is types.FunctionType:  # it has a __code__, always
            namespace[f"O{index}"] = owner
            return f"O{index}.__code__ is E{index}.expected"
    namespace[f"H{index}"], namespace[f"N{index}"] = holder, entry.name
    return f"H{index}.get(N{index}, M) is E{index}.expected"
