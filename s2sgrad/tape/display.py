"""A tape's recording as text: the operations in the order they ran, as a lecture draws a tape.

Each recorded operation is one line, ``v3 = multiply(v1, v2)``, with the shape of its result.
Values the tape tracks are named ``v1``, ``v2``, … in the order they first appear (a
Variable by its own name, when it has one); constants the operation also used are shown by
value when small and by shape otherwise.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np

from s2sgrad.tape.values import TapeValue
from s2sgrad.tape.variables import Variable

__all__ = ["describe_recording"]


def describe_recording(entries: list, title: str) -> str:
    """The recorded operations, one line each, under ``title``.

    Example::

        describe_recording(tape._entries, "GradientTape")
        # GradientTape: 2 operations
        #   v2 = multiply(v1, v1)    # shape (3,)
        #   v3 = sum(v2)             # shape ()
    """
    names: dict[int, str] = {}
    counter = itertools.count(1)
    lines = [f"{title}: {len(entries)} operation{'s' if len(entries) != 1 else ''}"]
    rows = []
    for rule, args, kwargs, out in entries:
        operands = [_operand(a, names, counter) for a in args]
        operands += [f"{k}={_constant(v)}" for k, v in (kwargs or {}).items()]
        results = out if isinstance(out, (tuple, list)) else (out,)
        targets = ", ".join(_new_name(r, names, counter) for r in results)
        call = f"{targets} = {_expression(_rule_name(rule), operands, args)}"
        rows.append((call, ", ".join(_shape(r) for r in results)))
    width = max((len(call) for call, _ in rows), default=0)
    lines += [f"  {call.ljust(width)}  # shape {shape}" for call, shape in rows]
    return "\n".join(lines)


_INFIX = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "pow": "**",
    "matmul": "@", "mod": "%",
}  # fmt: skip


def _expression(name: str, operands: list[str], args: tuple) -> str:
    if name in _INFIX and len(operands) == 2:
        return f"{operands[0]} {_INFIX[name]} {operands[1]}"
    if name == "neg" and len(operands) == 1:
        return f"-{operands[0]}"
    if name == "getitem" and len(operands) == 2:
        return f"{operands[0]}[{_index(args[1])}]"
    return f"{name}({', '.join(operands)})"


def _index(index: Any) -> str:
    parts = index if isinstance(index, tuple) else (index,)
    return ", ".join(_slice(p) if isinstance(p, slice) else _constant(p) for p in parts)


def _slice(part: slice) -> str:
    text = ":".join("" if v is None else str(v) for v in (part.start, part.stop, part.step))
    return text[:-1] if part.step is None else text


def _rule_name(rule: Any) -> str:
    primitive = rule.primitive
    name = primitive if isinstance(primitive, str) else None
    name = name or getattr(primitive, "__name__", None) or type(primitive).__name__
    return {"identity": "read"}.get(name, name)


def _operand(value: Any, names: dict[int, str], counter: Iterator[int]) -> str:
    if isinstance(value, TapeValue):
        return names.get(id(value)) or _new_name(value, names, counter)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_operand(v, names, counter) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if callable(value) and not isinstance(value, np.ndarray):
        return getattr(value, "__name__", type(value).__name__)
    return _constant(value)


def _new_name(value: Any, names: dict[int, str], counter: Iterator[int]) -> str:
    if not isinstance(value, TapeValue):
        return "_"
    name = value.name if isinstance(value, Variable) and value.name else f"v{next(counter)}"
    names[id(value)] = name
    return name


def _constant(value: Any) -> str:
    array = np.asarray(value) if not isinstance(value, (str, type(None), slice)) else None
    if array is None or array.dtype == object:
        return repr(value)
    if array.size <= 4:
        return np.array2string(array, precision=4, separator=", ") if array.ndim else repr(value)
    return f"<array {array.shape}>"


def _shape(value: Any) -> str:
    return str(np.shape(value._value)) if isinstance(value, TapeValue) else "-"
