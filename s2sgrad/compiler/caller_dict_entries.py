"""Entries a function stores into a dict its caller gives it (``bn_param['running_mean'] =
m``, running statistics): each entry gets a variable, the dict gets the plain value.

``d['k'] = expr`` becomes ``d_k = expr; store_entry(d, 'k', d_k)``, and a later read of
``d['k']`` reads ``d_k``, so the derivative flows from the store to its readers as through
any variable, while the caller's dict is left holding the values the function itself
would leave there (``store_entry`` is a primitive without derivative)::

    def f(x, stats):                          def f(x, stats):
        stats['m'] = 0.9 * stats['m'] + x  →      stats_m = 0.9 * stats['m'] + x
        return np.sum(stats['m'] ** 2)            store_entry(stats, 'm', stats_m)
                                                  return np.sum(stats_m ** 2)

Only a parameter not differentiated, used solely through entries under string keys, is
rewritten, and only when every read that may follow a store can read its variable: a read
after the first store needs a store of its key in an earlier statement of the body itself
(so one has run); a loop or a branch that both stores and reads, an alias, a call given
the dict, ``d.get`` or ``d[i]`` after a store leave the function as it is (refused by
:mod:`.caller_dicts`).
"""

from __future__ import annotations

import types

import gast

from s2sgrad import runtime
from s2sgrad.compiler.frontend import NOT_FOUND
from s2sgrad.compiler.passes.dict_entries import entry_target
from s2sgrad.compiler.passes.mutation import changed_in_place
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import assign, call, clone, load, located, walk

__all__ = ["name_caller_dict_entries", "rewritable_dict_parameters"]


def name_caller_dict_entries(
    node: gast.FunctionDef, parsed, names: NameGenerator, differentiated: tuple[str, ...]
) -> dict:
    """Rewrite, in place, the entry stores of ``node``'s dict parameters not in
    ``differentiated`` (see the module's example); return the helpers the new code calls,
    by name (empty when nothing changed). ``store_entry`` is also given the other
    parameters, and refuses a dict one of them holds too (read there as a constant).

    Example::

        name_caller_dict_entries(node, parsed, names, ("x",))  # {'store_entry': ...}
    """
    parameters = rewritable_dict_parameters(node, parsed, differentiated)
    if not parameters:
        return {}
    helper = names.claim("store_entry")
    arguments = node.args
    every = [a.id for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    every += [a.id for a in (arguments.vararg, arguments.kwarg) if a is not None]
    for parameter in sorted(parameters):
        others = gast.Tuple(elts=[load(p) for p in every if p != parameter], ctx=gast.Load())
        variables: dict[str, str] = {}
        stored: set[str] = set()
        body = []
        for statement in node.body:
            _read_variables(statement, parameter, stored, variables)
            body.extend(_named_stores(statement, parameter, (names, variables, helper, others)))
            key = _stored_key(statement, parameter)
            if key is not None:
                stored.add(key)
        node.body = body
    return {helper: runtime.store_entry}


def rewritable_dict_parameters(
    node: gast.FunctionDef, parsed, differentiated: tuple[str, ...] | frozenset = ()
) -> set[str]:
    """The parameters of ``node`` (not in ``differentiated``) whose entry stores
    :func:`name_caller_dict_entries` rewrites: none when the function changes another
    value in place (which an entry's variable could share), or reads a container or an
    object from outside (which could hold the dict).

    Example::

        rewritable_dict_parameters(parsed.node, parsed, ("x",))  # {'bn_param'}
    """
    arguments = node.args
    plain = {a.id for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
    candidates = plain - set(differentiated)
    if not candidates:
        return set()
    stored = set()
    for statement in walk(node):
        if type(statement) is gast.Assign and len(statement.targets) == 1:
            target = statement.targets[0]
            if type(target) is gast.Subscript and type(target.value) is gast.Name:
                name = target.value.id
                if name in candidates and _stored_key(statement, name) is not None:
                    stored.add(name)
    stored = {p for p in stored if _every_use_is_followed(node, p)}
    if not stored:
        return stored
    if changed_in_place(node, parsed.resolve, arrays_only=True) - stored or _writes_in_place(
        node, stored
    ):
        return set()
    if any(_may_hold_a_dict(parsed.resolve(part)) for part in _free_names(node)):
        return set()
    return stored


# methods and functions that change an array they are given in place
_CHANGING = frozenset(
    {"fill", "sort", "put", "itemset", "resize", "partition", "copyto", "at", "place"}
    | {"putmask", "fill_diagonal", "shuffle", "setflags", "setfield", "byteswap"}
)


def _writes_in_place(node: gast.FunctionDef, parameters: set[str]) -> bool:
    """Whether ``node`` may change a value in place but by its entry stores: an item or
    slice write, ``y op= v``, ``out=``, ``y.fill(0)``. A stored value the function later
    changes is seen changed in the caller's dict; the entry's variable, sharing it, would
    then be refused by the transformer, which the tape could have followed."""
    ours = {
        id(s.targets[0]) for s in walk(node) for p in parameters if _stored_key(s, p) is not None
    }
    for part in walk(node):
        kind = type(part)
        if kind is gast.AugAssign:
            return True
        stored = kind in (gast.Subscript, gast.Attribute) and type(part.ctx) is not gast.Load
        if stored and id(part) not in ours:
            return True
        if kind is gast.Call:
            if any(k.arg == "out" for k in part.keywords):
                return True
            function = part.func
            if type(function) is gast.Attribute and function.attr in _CHANGING:
                return True
    return False


def _free_names(node: gast.FunctionDef) -> list[gast.Name]:
    bound = {n.id for n in walk(node) if type(n) is gast.Name and type(n.ctx) is not gast.Load}
    bound |= {a.id for a in walk(node.args) if type(a) is gast.Name}
    return [
        n
        for n in walk(node)
        if type(n) is gast.Name and type(n.ctx) is gast.Load and n.id not in bound
    ]


def _may_hold_a_dict(value) -> bool:
    """Whether a value read from outside may hold a dict: a container, or an object with
    attributes of its own (not a module, class, function nor number)."""
    if isinstance(value, (dict, list, tuple, set)):
        return True
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)):
        return False
    return value is not NOT_FOUND and hasattr(value, "__dict__") and bool(vars(value))


def _stored_key(statement: gast.AST, parameter: str) -> str | None:
    """``'k'`` for ``parameter['k'] = value`` (one target)."""
    target = entry_target(statement, parameter)
    if target is not None and type(target.slice) is gast.Constant:
        key = target.slice.value
        return key if type(key) is str else None
    return None


def _every_use_is_followed(node: gast.FunctionDef, parameter: str) -> bool:
    """Whether every read of an entry of ``parameter`` either follows a store of its key
    by an earlier statement of the body (it then reads the variable), or cannot follow any
    store of its key (it reads the caller's value); other reads (``d[i]``, ``d.get``) must
    precede every store."""
    if _inside_nested_scope(node, parameter):
        return False  # a function defined here may read the dict after a store
    surely: set[str] = set()  # stored by an earlier statement of the body itself
    maybe: set[str] = set()  # stored by an earlier statement, or in one of its blocks
    for statement in node.body:
        uses = _uses(statement, parameter)
        if uses is None:
            return False
        key = _stored_key(statement, parameter)
        here = {k for kind, k in uses if kind == "store" and k is not None}
        # in a statement of the body, the value is computed before its entry is stored
        before = set() if key is not None else here
        for kind, read in uses:
            if kind == "store" or read in surely:
                continue
            if kind != "entry" and (maybe or before):
                return False
            if read in maybe or read in before:
                return False
        maybe |= here
        if key is not None:
            surely.add(key)
    return True


def _uses(statement: gast.AST, parameter: str) -> list[tuple[str, str | None]] | None:
    """Each use of ``parameter`` in ``statement``: ``("store", k)`` for ``d['k'] = v``,
    ``("entry", k)`` for a read of ``d['k']``, ``("item", None)`` for ``d[i]``, ``("get",
    None)`` for ``d.get(...)``; None when one is anything else (an alias, a call given the
    dict, ``del d[k]``, ``d[k] += v``, ``d`` bound anew)."""
    uses: list[tuple[str, str | None]] = []
    covered: set[int] = set()
    targets = {id(s.targets[0]) for s in walk(statement) if _stored_key(s, parameter) is not None}
    for part in walk(statement):
        if type(part) is gast.Subscript and _names(part.value, parameter):
            literal = type(part.slice) is gast.Constant and type(part.slice.value) is str
            if id(part) in targets:
                uses.append(("store", part.slice.value))
            elif type(part.ctx) is not gast.Load:
                return None
            else:
                uses.append(("entry", part.slice.value) if literal else ("item", None))
            covered.add(id(part.value))
        elif (
            type(part) is gast.Call
            and type(part.func) is gast.Attribute
            and part.func.attr == "get"
            and _names(part.func.value, parameter)
        ):
            uses.append(("get", None))
            covered.add(id(part.func.value))
    for part in walk(statement):
        if _names(part, parameter) and id(part) not in covered:
            return None
    return uses


def _names(node: gast.AST, parameter: str) -> bool:
    return type(node) is gast.Name and node.id == parameter


_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)


def _inside_nested_scope(node: gast.FunctionDef, parameter: str) -> bool:
    """Whether a function or lambda defined in ``node`` names ``parameter``."""
    return any(
        part is not node and type(part) in _SCOPES and any(_names(n, parameter) for n in walk(part))
        for part in walk(node)
    )


def _read_variables(statement: gast.stmt, parameter: str, stored: set[str], variables) -> None:
    """Replace, in place, each read ``parameter['k']`` in ``statement`` of a key in
    ``stored`` by its variable."""
    if not stored:
        return
    for part in walk(statement):
        for field, value in gast.iter_fields(part):
            if _reads(value, parameter, stored):
                setattr(part, field, load(variables[value.slice.value]))
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    if _reads(item, parameter, stored):
                        value[index] = load(variables[item.slice.value])


def _reads(node, parameter: str, stored: set[str]) -> bool:
    return (
        type(node) is gast.Subscript
        and type(node.ctx) is gast.Load
        and type(node.value) is gast.Name
        and node.value.id == parameter
        and type(node.slice) is gast.Constant
        and node.slice.value in stored
    )


def _named_stores(statement: gast.stmt, parameter: str, context) -> list:
    """``statement`` with each of its stores of an entry of ``parameter`` (its own, or in
    its blocks) split into a variable and ``store_entry``; ``context``: the name generator,
    the variables by key, the helper's name and the other parameters."""
    names, variables, helper, others = context
    key = _stored_key(statement, parameter)
    if key is not None:
        if key not in variables:
            variables[key] = names.fresh(f"{parameter}_{_spelled(key)}")
        variable = variables[key]
        named = assign(variable, statement.value, like=statement)
        keyed = gast.Constant(value=key, kind=None)
        arguments = [load(parameter), keyed, load(variable), clone(others)]
        stored = call(load(helper), arguments)
        return [named, located(gast.Expr(value=stored), statement)]
    for field in ("body", "orelse", "finalbody"):
        inner = getattr(statement, field, None)
        if isinstance(inner, list) and type(statement) not in (
            gast.FunctionDef,
            gast.AsyncFunctionDef,
            gast.ClassDef,
        ):
            rewritten: list = []
            for part in inner:
                rewritten.extend(_named_stores(part, parameter, context))
            setattr(statement, field, rewritten)
    for clause in (*getattr(statement, "handlers", ()), *getattr(statement, "cases", ())):
        rewritten = []
        for part in clause.body:  # an except clause, a case of a match
            rewritten.extend(_named_stores(part, parameter, context))
        clause.body = rewritten
    return [statement]


def _spelled(key: str) -> str:
    """``key`` as a part of a variable's name."""
    spelled = "".join(c if c.isalnum() or c == "_" else "_" for c in key)
    return spelled if spelled.isascii() else "entry"
