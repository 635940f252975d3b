"""``trace``: run generated derivative code and print every value as it is computed.

The printout is the evaluation trace of an AD textbook, made from the real code: each line
of the generated function that runs, followed by the values it assigned, with the
``# grad of:`` comment of the user's statement whose derivative the lines compute. Only
generated code is traced (the user's own functions and NumPy run at full speed), and the
trace follows calls from one generated function into another (the VJPs of helpers).
"""

from __future__ import annotations

import functools
import linecache
import sys
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

from s2sgrad.running import ORIGINS, TRACING, tracing

__all__ = ["trace", "tracing"]

_GRAD_OF = "# grad of:"


def trace(transformed: Callable, file: TextIO | None = None) -> Callable:
    """``transformed``, but printing each line of generated code it runs and what it assigned.

    Example::

        dloss = sg.trace(sg.grad(loss))
        dloss(w, x, y)
        #   dloss(w, x, y)
        #     3 | t1 = x @ w             t1 = [0.1 0.2 0.3]
        #       # grad of: return np.mean((t1 - y) ** 2)
        #     6 | dt1 = 2 * (t1 - y) / 3  dt1 = [-0.4  0.1  0.2]
        #     ...
    """

    @functools.wraps(transformed)
    def traced(*args: Any, **kwargs: Any) -> Any:
        printer = _Printer(file or sys.stdout)
        previous = sys.gettrace()
        token = TRACING.set(True)
        sys.settrace(printer.global_event)
        try:
            return transformed(*args, **kwargs)
        finally:
            sys.settrace(previous)
            TRACING.reset(token)
            printer.finish()

    return traced


class _Printer:
    """Prints the lines of generated frames and the names each line assigned."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.depth = 0
        self.frames: dict[int, tuple[int | None, dict[str, Any], str | None]] = {}
        self.any_generated = False

    def global_event(self, frame: Any, event: str, arg: Any) -> Any:
        code = frame.f_code
        if event != "call" or code.co_filename not in ORIGINS or code.co_name == "<module>":
            return None
        self.any_generated = True
        self.frames[id(frame)] = (None, dict(frame.f_locals), None)
        return self.local_event

    def local_event(self, frame: Any, event: str, arg: Any) -> Any:
        line, before, section = self.frames[id(frame)]
        if event == "line" and frame.f_lineno == frame.f_code.co_firstlineno:
            # a signature guard's tests (compiler/guard_hosts.py): the frame shows from
            # its first line of code on, not at all when the guard sends the call the
            # usual way (which shows the code that runs)
            return self.local_event
        if line is not None:
            self._assigned(before, frame.f_locals)
        elif event == "line":
            self._write(f"{frame.f_code.co_name}({', '.join(_arguments(frame))})")
            self.depth += 1
        if event == "line":
            section = self._line(frame, section)
            self.frames[id(frame)] = (frame.f_lineno, dict(frame.f_locals), section)
        elif event == "return":
            if line is not None:
                self.depth -= 1
                self._write(f"returns {_brief(arg)}")
            del self.frames[id(frame)]
        return self.local_event

    def _line(self, frame: Any, section: str | None) -> str | None:
        filename, number = frame.f_code.co_filename, frame.f_lineno
        comment = _comment_above(filename, number)
        if comment is not None and comment != section:
            self._write(comment)
            section = comment
        self._write(f"{number:>4} | {linecache.getline(filename, number).strip()}")
        return section

    def _assigned(self, before: dict[str, Any], after: dict[str, Any]) -> None:
        for name, value in after.items():
            if name not in before or before[name] is not value:
                self._write(f"       {name} = {_brief(value)}")

    def _write(self, text: str) -> None:
        print("  " * self.depth + text, file=self.stream)

    def finish(self) -> None:
        if not self.any_generated:
            self._write("(no generated code ran: this transform used the tape)")


def _arguments(frame: Any) -> list[str]:
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    return list(code.co_varnames[:count])


def _comment_above(filename: str, number: int) -> str | None:
    """The nearest ``# grad of:`` comment above line ``number``, within its block."""
    for above in range(number - 1, 0, -1):
        text = linecache.getline(filename, above).strip()
        if text.startswith(_GRAD_OF):
            return text
        if text.startswith("def "):
            return None
    return None


def _brief(value: Any) -> str:
    if isinstance(value, np.ndarray):
        if value.ndim == 0 and value.dtype.kind == "f":
            return f"{float(value):.6g}"
        if value.size <= 6:
            return np.array2string(value, precision=4, separator=" ").replace("\n", "")
        return f"array of shape {value.shape}, first {_brief(value.ravel()[:3])[:-1]} ...]"
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_brief(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, list):
        return f"list of {len(value)}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
