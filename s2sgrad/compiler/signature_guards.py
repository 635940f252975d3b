"""The hot path of a transformed function: per signature, the generated code with tests at
its top that tell, faster than building the signature, that a call has the signature the
code was made for and that the names the code reads still hold what they held.

A transformed function looks its code up by the signature of the arrays it is given
(``(shape, dtype, class)`` of each). Building that key and hashing it costs about a
microsecond for six arrays; the guard compares each argument against the signature
directly (``type(a0) is C0 and a0.dtype is D0 and a0.shape == S0 ...``; an ndarray of
one dimension or none by ``ndim`` and ``len``, which build no tuple) in less than half
of that, and checks the freshness entries (``freshness.py``) in the same expression. A
number's part of the signature (``specialize/criterion.py``) is its class for a float
(``type(a1) is float``), its class and value for an integer, a boolean, a string or None
(an integer may set a shape). When any test fails it returns :data:`MISSING`, or calls
the transform's usual way with the call's own arguments (``miss``): it runs the code
exactly when the key would equal the signature and the entries hold. A transform calls
its guard directly (``api._Transform.__call__`` reads it), so the guard also shapes the
result and reports an exception of the code (``result``, ``failed``).

Generated code takes the tests at its top (``guard_hosts.py``: the code compiled again,
its lines where they were), so that a call is one frame; anything else is called by a
guard function of its own.

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

from s2sgrad.compiler.freshness import MISSING, Entry, _Attributes, _Cell
from s2sgrad.compiler.guard_hosts import ABSENT, guard_host

__all__ = ["MISSING", "guarded_call"]

_BY_CLASS = (float, complex)  # signature part: the class alone
_BY_VALUE = (int, bool, str)  # signature part: (class, value)

Constant = Callable[[str, Any], str]  # (base name, value) -> the name the guard reads it by


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

    Generated code is compiled again with the tests at its top (``guard_hosts.py``), one
    frame for both; anything else is called by a guard function of its own.

    Example::

        guarded_call(((((2,), np.dtype("float64"), np.ndarray)),), np.sum, [])(np.ones(2))
    """
    host = guard_host(function, len(key))
    if host is None:
        name, parameters = _own_name, [f"a{index}" for index in range(len(key))]
    else:
        name, parameters = host.name, host.parameters
    constants: dict[str, Any] = {}

    def constant(base: str, value: Any) -> str:
        constants[name(base)] = value
        return name(base)

    rest, kw = name("rest"), name("kw")
    tests = [f"not {rest} and not {kw}"]  # more arguments than the signature's, or by name
    for index, (parameter, part) in enumerate(zip(parameters, key)):
        test = _test(parameter, index, part, constant)
        if test is None:
            return None
        tests.append(test)
    for index, entry in enumerate(entries):  # Assumptions.hold, inlined
        tests.append(_entry_test(index, entry, constant))
    count = f"{constant('len', len)}({constant('ENTRIES', entries)}) == {len(entries)}"
    tests.append(count)  # none added since
    if current is not None:
        holder, attribute, token = current
        tests.append(f"{constant('HOLDER', holder)}.{attribute} is {constant('TOKEN', token)}")
    otherwise = constant("M", MISSING)
    if miss is not None:
        # positional-only parameters: an argument passed by name is in ``kw``, whatever
        # its name; one not given is absent, which fails every test (and is not the
        # call's: those not given are trailing ones)
        given = f"{constant('given', _given)}(({''.join(p + ', ' for p in parameters)}))"
        otherwise = f"{constant('MISS', miss)}(*{given}, *{rest}, **{kw})"
    shape = result if result == "one_tuple" or result is None else constant("SHAPE", result)
    reported = None if failed is None else constant("FAILED", failed)
    test = " and ".join(tests)
    if host is not None:
        return host.compile(test, otherwise, constants, failed=reported, shape=shape)
    return _calling_guard(parameters, test, otherwise, constants, function, reported, shape)


def _own_name(base: str) -> str:
    return base


def _given(values: tuple) -> list:
    """The arguments a call gave, of a guard's parameters (those not given are absent)."""
    return [value for value in values if value is not ABSENT]


def _calling_guard(
    parameters: list[str],
    test: str,
    otherwise: str,
    constants: dict[str, Any],
    function: Callable,
    failed: str | None,
    shape: str | None,
) -> Callable:
    """The guard as a function of its own, ``guarded``, which calls ``function``."""
    namespace = {"absent": ABSENT, "F": function, **constants}
    value = f"F({', '.join(parameters)})"
    if shape == "one_tuple":
        value = f"({value},)"
    elif shape is not None:
        value = f"{shape}({value})"
    run = [f"return {value}"]
    if failed is not None:
        run = ["try:", f"    return {value}", "except BaseException as error:"]
        run += [f"    {failed}(error)", "    raise"]
    signature = [*(f"{p}=absent" for p in parameters), *["/"] * bool(parameters), "*rest, **kw"]
    lines = [f"def guarded({', '.join(signature)}):"]
    lines += ["    ok = False", "    try:", f"        if {test}: ok = True"]
    lines += ["    except Exception:", "        pass"]
    lines += ["    if ok:", *[f"        {line}" for line in run]]
    lines.append(f"    return {otherwise}")
    source = "\n".join(lines) + "\n"
    exec(compile(source, "<s2sgrad signature guard>", "exec"), namespace)  # noqa: S102
    return namespace["guarded"]


def _test(argument: str, index: int, part, constant: Constant) -> str | None:
    """The test that ``argument``'s part of the signature is ``part``, or None."""
    if part in _BY_CLASS:
        return f"{constant('type', type)}({argument}) is {constant(f'C{index}', part)}"
    if type(part) is not tuple:
        return None
    if len(part) == 2 and part == (type(None), None):
        return f"{argument} is None"
    if len(part) == 2 and part[0] in _BY_VALUE and type(part[1]) is part[0]:
        cls, value = constant(f"C{index}", part[0]), constant(f"V{index}", part[1])
        return f"{constant('type', type)}({argument}) is {cls} and {argument} == {value}"
    if len(part) != 3:
        return None
    shape, dtype, cls = part
    if type(shape) is not tuple or not isinstance(dtype, np.dtype) or not isinstance(cls, type):
        return None
    class_test = f"{constant('type', type)}({argument}) is {constant(f'C{index}', cls)}"
    dtype_test = f"{argument}.dtype is {constant(f'D{index}', dtype)}"
    shape_test = _shape_test(argument, index, shape, cls, constant)
    return f"{class_test} and {dtype_test} and {shape_test}"


def _shape_test(argument: str, index: int, shape: tuple, cls: type, constant: Constant) -> str:
    """The test that ``argument`` (of class ``cls``) has the shape ``shape``.

    ``a.shape == S`` builds a tuple; an array of class ndarray itself (not a subclass,
    which may redefine ``ndim`` or ``len``) of no dimension or one is tested as exactly,
    and faster, by its ``ndim`` and its ``len`` (the first length). (For two dimensions,
    adding ``size``, the product of the two, costs more than the tuple.)
    """
    if cls is np.ndarray and len(shape) <= 1 and all(type(n) is int for n in shape):
        lengths = [f"{constant('len', len)}({argument}) == {n}" for n in shape]
        return " and ".join([f"{argument}.ndim == {len(shape)}", *lengths])
    return f"{argument}.shape == {constant(f'S{index}', shape)}"


def _entry_test(index: int, entry: Entry, constant: Constant) -> str:
    """The test that ``entry``'s name holds what it held (``Entry.holder.get``, inlined).

    A function's ``__code__`` (``_Attributes``, holding the function weakly) is read from
    the function itself, which the guard holds, as long as it does (the guard of a
    transform lives no longer than the transform).
    """
    expected = f"{constant(f'E{index}', entry)}.expected"
    holder = entry.holder
    if type(holder) is _Attributes and entry.name == "__code__":
        owner = holder.owner()
        if type(owner) is types.FunctionType:  # it has a __code__, always
            return f"{constant(f'O{index}', owner)}.__code__ is {expected}"
    if entry.expected is not MISSING and type(holder) is dict:
        # a subscript costs a third less than ``get``; a name deleted since raises
        # KeyError, which fails the guard (``guard_hosts._tested``)
        test = f"{constant(f'H{index}', holder)}[{constant(f'N{index}', entry.name)}] is {expected}"
    elif entry.expected is not MISSING and type(holder) is _Cell:
        # the cell itself, not ``_Cell.get`` (a Python method); an emptied cell raises
        test = f"{constant(f'H{index}', holder.cell)}.cell_contents is {expected}"
    else:
        get = f"{constant(f'H{index}', holder)}.get"
        test = f"{get}({constant(f'N{index}', entry.name)}, {constant('M', MISSING)}) is {expected}"
    # an array held changed shape or dtype in place (``Entry.reshaped``): a value of the same
    # kind taken over has these shapes too, and a dtype of another identity takes the usual way
    if not entry.arrays:
        return test
    if not isinstance(entry.expected, np.ndarray):  # arrays in a tuple
        return f"{test} and not {constant(f'E{index}', entry)}.reshaped()"
    ((_, shape, dtype),) = entry.arrays
    shape_name, dtype_name = constant(f"S{index}", shape), constant(f"D{index}", dtype)
    return f"{test} and {expected}.shape == {shape_name} and {expected}.dtype is {dtype_name}"
