"""``has_aux=True``: every ``return`` of the function gives a pair ``(output, aux)``.

A literal pair (``return loss, stats``) is what the transformer reads directly: the first
entry is differentiated and the second handed back. Any other return value (a name bound
to a pair, a call returning one) becomes ``t = value``, a check that ``t`` is a pair, and
``return t[0], t[1]``, so that the derivative reads the same form; a literal tuple of
another length is refused. Several returns are joined into one (``passes/jumps.py``) that
gives a name bound to a pair in each branch: :func:`pair_the_joined_return` splits that one
the same way.

Example::

    split_aux_returns(node, parsed, names)  # return pair -> t = pair; ...; return t[0], t[1]
"""

from __future__ import annotations

import gast

from s2sgrad import runtime
from s2sgrad.compiler.block_walks import statement_blocks
from s2sgrad.compiler.syntax import assign, call, constant, load
from s2sgrad.errors import AuxOutputError, aux_pair_required

__all__ = ["split_aux_returns", "pair_the_joined_return"]


def split_aux_returns(node: gast.FunctionDef, parsed, names) -> None:
    """Rewrite the returns of ``node`` (not those of functions inside it) as pairs."""
    checker: list[str] = []
    _split_in(node.body, node, parsed, names, checker)
    if checker:
        parsed.closure[checker[0]] = runtime.require_aux_pair


def pair_the_joined_return(node: gast.FunctionDef, parsed, names) -> None:
    """Split the one ``return`` jumps.py left at the end of ``node`` when it gives a name."""
    last = node.body[-1] if node.body else None
    if isinstance(last, gast.Return) and not isinstance(last.value, gast.Tuple):
        checker: list[str] = []
        node.body[-1:] = _pair_return(last, node, parsed, names, checker)
        parsed.closure[checker[0]] = runtime.require_aux_pair


def _split_in(body: list, function, parsed, names, checker: list[str]) -> None:
    position = 0
    while position < len(body):
        statement = body[position]
        if isinstance(statement, gast.Return):
            replacement = _pair_return(statement, function, parsed, names, checker)
            body[position : position + 1] = replacement
            position += len(replacement)
            continue
        for block in statement_blocks(statement):  # not a nested function's or class's
            _split_in(block, function, parsed, names, checker)
        for handler in getattr(statement, "handlers", ()):
            _split_in(handler.body, function, parsed, names, checker)
        for case in getattr(statement, "cases", ()):
            _split_in(case.body, function, parsed, names, checker)
        position += 1


def _pair_return(statement: gast.Return, function, parsed, names, checker) -> list:
    value = statement.value
    where = parsed.location(statement)
    if isinstance(value, gast.Tuple) and not any(isinstance(e, gast.Starred) for e in value.elts):
        if len(value.elts) != 2:
            raise AuxOutputError(
                f"{aux_pair_required(f'{where}: {function.name}')}, but this return gives "
                f"{len(value.elts)} values; put the extra ones in aux: return output, (a, b)"
            )
        return [statement]
    if not checker:
        checker.append(names.claim("require_aux_pair"))
    pair = names.fresh("pair")
    message = aux_pair_required(f"{where}: {function.name}")
    returned = value if value is not None else constant(None)
    entries = [gast.Subscript(value=load(pair), slice=constant(i), ctx=gast.Load()) for i in (0, 1)]
    check = gast.Expr(value=call(load(checker[0]), [load(pair), constant(message)]))
    paired = gast.Return(value=gast.Tuple(elts=entries, ctx=gast.Load()))
    return [
        assign(pair, returned, like=statement),
        gast.copy_location(check, statement),
        gast.copy_location(paired, statement),
    ]
