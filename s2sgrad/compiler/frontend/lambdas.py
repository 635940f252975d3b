"""Find the lambda a code object was compiled from in its source lines.

Several lambdas may share a line (``pair = (lambda x: x**3, lambda x: np.sin(x))``): the
columns of the code's positions tell which (on Python 3.10, which has none, the one that
compiles to the code), and a line cut in the middle of a call is parsed as a fragment.
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.syntax import walk
from s2sgrad.errors import UnsupportedError, where

__all__ = ["lambda_node"]


def lambda_node(
    source, code, filename, first_line, indent, runs_as_code
) -> tuple[gast.FunctionDef, gast.Lambda]:
    """Find the lambda whose code object is ``code`` in its source lines: the function made
    of it, and the lambda itself.

    ``indent`` is how much indentation dedenting removed, to compare columns.
    """
    module, shift = _parse_fragment(source)
    if module is None:
        raise UnsupportedError(
            f"{where(filename, first_line)}: could not isolate the lambda's source; "
            "define it with 'def' instead"
        )
    params = list(code.co_varnames[: code.co_argcount])
    line = code.co_firstlineno - first_line + 1
    candidates = [
        node
        for node in walk(module)
        if isinstance(node, gast.Lambda)
        and node.lineno == line
        and [a.id for a in node.args.args] == params
    ]
    if len(candidates) > 1 and hasattr(code, "co_positions"):
        # several lambdas on one line: match the columns of `code`
        columns = {pos[2] for pos in code.co_positions() if pos[2] is not None}
        candidates = [c for c in candidates if c.body.col_offset + indent + shift in columns] or (
            candidates[:1]
        )
    elif len(candidates) > 1:  # Python 3.10 has no columns: the one that compiles to `code`
        candidates = [c for c in candidates if runs_as_code(c)] or candidates[:1]
    if not candidates:
        raise UnsupportedError(
            f"{where(filename, code.co_firstlineno)}: could not find the lambda in its source "
            "line; define it with 'def' instead"
        )
    lam = candidates[0]
    ret = gast.Return(value=lam.body)
    gast.copy_location(ret, lam.body)
    node = gast.FunctionDef(
        name="lambda_",
        args=lam.args,
        body=[ret],
        decorator_list=[],
        returns=None,
        type_comment=None,
        type_params=[],
    )
    return gast.copy_location(node, lam), lam


def _parse_fragment(source: str) -> tuple[gast.Module | None, int]:
    """Parse a source fragment that may be cut mid-expression (lambdas inside calls, or in
    a list or dict whose first line is above): the module, and how far its columns sit
    left of the fragment's."""
    lines = source.splitlines()
    for end in range(len(lines), 0, -1):
        text = "\n".join(lines[:end])
        for attempt in (text, text.rstrip().rstrip(",") + ")"):
            try:
                return gast.parse(attempt), 0
            except SyntaxError:
                continue
        stripped = text.lstrip()
        for opener, closer in _ENCLOSINGS:
            shift = len(text) - len(stripped) - len(opener)  # the opener replaces the indent
            try:
                return gast.parse(opener + stripped + closer), shift
            except SyntaxError:
                continue
    return None, 0


# what a fragment cut from a display or a call may need around it: an entry of a tuple,
# list or dict (``"name": lambda x: ...,``), or a keyword argument (``key=lambda x: ...,``)
_ENCLOSINGS = (
    ("(", "\n)"),
    ("[", "\n]"),
    ("{", "\n}"),
    ("f(", "\n)"),
    ("(", ""),
    ("[", ""),
    ("{", ""),
)
