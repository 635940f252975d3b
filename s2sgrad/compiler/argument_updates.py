"""Functions that update their arguments in place: differentiated on a copy.

``def f(x): x[0] = x[0] * x[1]; return np.sum(x)`` means, differentiated, the function of
the values ``x`` holds at the call: the generated code starts with ``x = owned(x)`` (a
private copy, arrays inside lists and dicts included), and the updates after it are item
writes into an array the function made, which both sweeps follow. So no transform ever
changes the caller's array; calling ``f`` itself still does, as NumPy would.
"""

from __future__ import annotations

import gast

from s2sgrad import runtime
from s2sgrad.compiler.passes.mutation import changed_in_place
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import assign, call, load

__all__ = ["copy_updated_arguments"]


def copy_updated_arguments(
    node: gast.FunctionDef, parsed, names: NameGenerator, containers=frozenset()
) -> set[str]:
    """Bind each parameter of ``node`` that its body writes into (an item or slice write,
    ``out=``, ``np.add.at``; a helper doing so is inlined before) to a private copy first,
    in place; returns the parameters copied. ``x op= v`` alone rebinds ``x`` in the
    generated code, and needs no copy; list and dict methods, and what a lambda does when it
    is called (a hook appending to a list it was given), keep the caller's object.
    ``containers``: parameters that hold lists, tuples or dicts, left as they are (their
    updates are refused as before: an entry of a dict is no item of an array).

    Example::

        copy_updated_arguments(node, parsed, names)  # {'x'}: x = owned(x) prepended
    """
    arguments = node.args
    plain = [a.id for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    changed = changed_in_place(node, parsed.resolve, arrays_only=True)
    copied = [p for p in plain if p in changed and p not in containers]
    if not copied:
        return set()
    helper = names.claim("owned")
    parsed.closure[helper] = runtime.owned
    first = node.body[0] if node.body else None
    copies = [assign(p, call(load(helper), [load(p)]), like=first) for p in copied]
    node.body = copies + node.body
    return set(copied)
