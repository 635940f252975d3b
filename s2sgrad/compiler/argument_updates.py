"""Functions that update their arguments in place: differentiated on a copy.

``def f(x): x[0] = x[0] * x[1]; return np.sum(x)`` means, differentiated, the function of
the values ``x`` holds at the call: the generated code starts with ``x = owned(x)`` (a
private copy, arrays inside lists and dicts included), and the updates after it are item
writes into an array the function made, which both sweeps follow. So no transform ever
changes the caller's array; calling ``f`` itself still does, as NumPy would.
"""

from __future__ import annotations

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.passes.mutation import changed_in_place
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import assign, call, load, walk
from s2sgrad.errors import UnsupportedError

__all__ = ["copy_updated_arguments"]


def copy_updated_arguments(
    node: gast.FunctionDef,
    parsed,
    names: NameGenerator,
    containers=frozenset(),
    nodes: list[gast.AST] | None = None,
    differentiated: tuple = (),
) -> set[str]:
    """Bind each parameter of ``node`` that its body writes into (an item or slice write,
    ``out=``, ``np.add.at``; a helper doing so is inlined before) to a private copy first,
    in place; returns the parameters copied. ``x op= v`` alone rebinds ``x`` in the
    generated code, and needs no copy; list and dict methods, and what a lambda does when it
    is called (a hook appending to a list it was given), keep the caller's object.
    ``containers``: parameters that hold lists, tuples or dicts, left as they are (their
    updates are refused as before: an entry of a dict is no item of an array).
    ``nodes``: ``walk(node)``, when the caller has it. ``differentiated``: the parameters
    differentiated, those of them not in ``containers`` holding arrays.

    Example::

        copy_updated_arguments(node, parsed, names)  # {'x'}: x = owned(x) prepended
    """
    arguments = node.args
    plain = [a.id for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    changed = changed_in_place(node, parsed.resolve, arrays_only=True, nodes=nodes)
    changed = changed | _filled_or_sorted(node, nodes, set(differentiated) - set(containers))
    _refuse_changed_defaults(node, parsed, changed)
    copied = [p for p in plain if p in changed and p not in containers]
    if copied:  # most functions change no argument: no walk for the keys they write under
        keyed = _written_under_text_keys(node, changed)
        copied = [p for p in copied if p not in keyed]
    if not copied:
        return set()
    helper = names.claim("owned_argument")
    parsed.closure[helper] = runtime.owned_argument
    first = node.body[0] if node.body else None
    copies = [assign(p, call(load(helper), [load(p)]), like=first) for p in copied]
    node.body = copies + node.body
    return set(copied)


def _filled_or_sorted(node: gast.FunctionDef, nodes: list[gast.AST] | None, arrays) -> set[str]:
    """The names ``t`` of the statements ``t.fill(v)`` and ``t.sort(...)`` (``t[1:].fill(v)``
    too) in ``node``: desugaring writes them as item writes into ``t`` (``method_writes``),
    which come after the arguments are copied, so a parameter among them is copied here.
    ``sort`` only of the names in ``arrays``: a list's ``sort`` is the list's, which the
    caller sees (a list has no ``fill``)."""
    found = set()
    for statement in nodes if nodes is not None else walk(node):
        if type(statement) is not gast.Expr or type(statement.value) is not gast.Call:
            continue
        method = statement.value.func
        if type(method) is not gast.Attribute or method.attr not in ("fill", "sort"):
            continue
        receiver = method.value
        if type(receiver) is gast.Subscript:
            receiver = receiver.value
        if type(receiver) is gast.Name and (method.attr == "fill" or receiver.id in arrays):
            found.add(receiver.id)
    return found


def _written_under_text_keys(node: gast.FunctionDef, changed) -> set[str]:
    """The parameters in ``changed`` written under a string key (``d['m'] = v``,
    ``d['m'][0] = v``): dicts, whose entries the caller sees change (running statistics
    kept in an argument), so left uncopied, as ``containers`` are."""
    keyed = set()
    for statement in walk(node):
        if type(statement) is gast.Assign:
            targets = statement.targets
        elif type(statement) is gast.AugAssign:
            targets = [statement.target]
        else:
            continue
        for target in targets:
            while type(target) is gast.Subscript and type(target.value) is gast.Subscript:
                target = target.value
            if (
                type(target) is gast.Subscript
                and type(target.value) is gast.Name
                and target.value.id in changed
                and type(target.slice) is gast.Constant
                and type(target.slice.value) is str
            ):
                keyed.add(target.value.id)
    return keyed


def _refuse_changed_defaults(node: gast.FunctionDef, parsed, changed) -> None:
    """Refuse a function that changes, in place, the array, list or dict a parameter has
    by default (``def f(x, buf=np.zeros(3)): buf += x``): the change persists from call to
    call, which NumPy follows and the differentiated copy would not."""
    defaults = _mutable_defaults(parsed.function)
    if not defaults:
        return
    updated = {
        s.target.id for s in walk(node) if type(s) is gast.AugAssign and type(s.target) is gast.Name
    }
    for name in sorted((set(changed) | updated) & defaults.keys()):
        value = defaults[name]
        kind = "array" if isinstance(value, np.ndarray) else type(value).__name__
        raise UnsupportedError(
            f"{parsed.location()}: {node.name} changes the {kind} its parameter '{name}' has "
            "by default in place, so each call sees what the calls before it left there, "
            "which source transformation does not follow; make the default None and a new "
            f"one inside ({name} = np.zeros(...) if {name} is None), or use mode='tape'"
        )


def _mutable_defaults(function) -> dict:
    """The parameters of ``function`` whose default is an array, a list or a dict, each
    with its default."""
    code = getattr(function, "__code__", None)
    if code is None:
        return {}
    positional = code.co_varnames[: code.co_argcount]
    defaults = function.__defaults__ or ()
    values = dict(zip(positional[len(positional) - len(defaults) :], defaults))
    values.update(function.__kwdefaults__ or {})
    return {k: v for k, v in values.items() if isinstance(v, (np.ndarray, list, dict))}
