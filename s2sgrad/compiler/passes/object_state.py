"""Attributes stored on objects: each stored value gets a variable, and an object made in
the function keeps its attributes in variables.

``obj.h = 2.0 * x`` becomes ``obj_h = 2.0 * x; obj.h = obj_h``, so that the sweeps see a
name stored (``note_stored`` in reverse mode needs it). For an object the function makes
itself (``o = Layer()``, a class called) and uses only through its attributes, a read of
``o.h`` after ``o.h`` is first set unconditionally reads the variable instead; for any
other object (a layer's ``self``), so do the reads up to the first statement that calls
more than NumPy, ``math`` and builtins (code that could change the attribute). The value
flows to its reader like any other, and is differentiated::

    o = Obj()                 o = Obj()
    o.h = 2.0 * x      →      o_h = 2.0 * x; o.h = o_h
    return np.sum(o.h)        return np.sum(o_h)

Reads are replaced only where the attribute is stored plainly (``runtime.stores_plainly``:
no property setter, ``__setattr__`` or ``__getattribute__`` of the user's, which may store
or give back something else): checked here for a class the transformer knows (``Obj()``, a
global object), and as the code runs, before the store, for another (a method's ``self``).
"""

from __future__ import annotations

import gast

from s2sgrad import runtime
from s2sgrad.compiler.effects import is_library_function
from s2sgrad.compiler.frontend.parsed import NOT_FOUND
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.passes.record_stores import rebind_record_stores
from s2sgrad.compiler.syntax import (
    assign,
    call,
    constant,
    load,
    located,
    parameter_names,
    store,
    walk,
)
from s2sgrad.runtime.attribute_stores import stores_plainly

__all__ = ["name_stored_values"]


def name_stored_values(
    node: gast.FunctionDef, names: NameGenerator, resolve, location=None
) -> dict:
    """Rewrite the attribute stores of ``node``'s body in place (see the module's example);
    returns the helpers the code calls now, by name.

    ``resolve(expression)`` gives the object a name refers to (a class, for a constructor);
    ``location(node)`` the user's file:line of a statement, for the check made as it runs.
    """
    # p.w = v of a record object made here: p = with_attribute(p, 'w', v), a store no more
    rebound = rebind_record_stores(node, names, resolve)
    variables: dict[tuple[str, str], str] = {}
    node.body = _named_stores(node.body, names, variables)
    local = None  # found at the first store: most functions store no attribute
    bound: set[str] = set()  # the names the function binds, found with it
    helpers: dict = {}
    checks: list[tuple[int, gast.stmt]] = []
    for position, statement in enumerate(node.body):
        pair = _stored_pair(statement)
        if pair is None:
            continue
        if local is None:
            local = _local_objects(node, resolve)
            bound = parameter_names(node) | {
                n.id for n in walk(node) if type(n) is gast.Name and type(n.ctx) is gast.Store
            }
        known = local.get(pair[0]) if pair[0] in local else _class_of(pair[0], bound, resolve)
        if known is not None and not stores_plainly(known, pair[1]):
            continue  # a property's setter: the object's own code decides what o.h gives
        if known is None:
            checks.append((position, _plain_store_check(statement, pair, names, helpers, location)))
        for later in node.body[position + 1 :]:
            if pair[0] not in local and not _keeps_attributes(later, pair[0], resolve):
                break  # another object's code may change it from here on
            _read_variable(later, pair, variables[pair])
    for position, check in reversed(checks):
        node.body.insert(position, check)
    return {**helpers, **rebound}


def _class_of(name: str, bound: set[str], resolve) -> type | None:
    """The class of the object ``name`` holds when the transformer knows it (a global the
    function does not bind); None for one it does not (a parameter such as ``self``)."""
    if name in bound:
        return None
    value = resolve(load(name))
    return None if value is NOT_FOUND else type(value)


def _plain_store_check(statement, pair, names, helpers, location) -> gast.stmt:
    """``refuse_unless_stored_plainly(o, 'h', message)``, to run before ``o.h = ...``."""
    helper = next(iter(helpers), None) or names.claim("refuse_unless_stored_plainly")
    helpers[helper] = runtime.refuse_unless_stored_plainly
    where = location(statement) if location is not None else "<unknown location>"
    message = (
        f"{where}: '{pair[0]}.{pair[1]} = ...' stores through a property's setter or a "
        "__setattr__ of the object's class, which may store something else than the value "
        "assigned; source transformation reads the value back, so use mode='tape' (or store "
        "plainly)"
    )
    arguments = [load(pair[0]), constant(pair[1]), constant(message)]
    return located(gast.Expr(value=call(load(helper), arguments)), statement)


def _keeps_attributes(statement: gast.stmt, base: str, resolve) -> bool:
    """Whether ``statement`` certainly leaves ``base``'s attributes as they are, but for
    stores of its own: it calls only NumPy, ``math`` and builtins, and binds ``base`` to
    nothing new (so ``self.mean = m; return x - self.mean`` reads ``m``)."""
    for part in walk(statement):
        if isinstance(part, gast.Name) and isinstance(part.ctx, gast.Store) and part.id == base:
            return False
        if isinstance(part, gast.Call) and not is_library_function(resolve(part.func)):
            return False
    return True


def _named_stores(body: list[gast.stmt], names, variables) -> list[gast.stmt]:
    result: list[gast.stmt] = []
    for statement in body:
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                setattr(statement, field, _named_stores(inner, names, variables))
        if isinstance(statement, gast.Assign) and isinstance(
            statement.targets[0], (gast.Tuple, gast.List)
        ):  # y, o.h = pair(x): y, o_h = pair(x); o.h = o_h
            result.append(statement)
            result.extend(_unpacked_stores(statement.targets[0], names, variables, statement))
            continue
        pair = _stored_pair(statement)
        if pair is None:
            result.append(statement)
            continue
        if pair not in variables:
            variables[pair] = names.fresh(f"{pair[0]}_{pair[1]}")
        variable = variables[pair]
        result.append(assign(variable, statement.value, like=statement))
        statement.value = load(variable)
        result.append(statement)
    return result


def _unpacked_stores(target, names, variables, statement) -> list[gast.stmt]:
    """Replace the ``o.h`` elements of an unpacking target by variables, in place; return
    the stores of those variables that follow the unpacking."""
    stores: list[gast.stmt] = []
    for index, element in enumerate(target.elts):
        inner = element.value if isinstance(element, gast.Starred) else element
        if isinstance(inner, (gast.Tuple, gast.List)):
            stores.extend(_unpacked_stores(inner, names, variables, statement))
            continue
        if not (isinstance(inner, gast.Attribute) and isinstance(inner.value, gast.Name)):
            continue
        pair = (inner.value.id, inner.attr)
        if pair not in variables:
            variables[pair] = names.fresh(f"{pair[0]}_{pair[1]}")
        named = store(variables[pair])
        if isinstance(element, gast.Starred):
            element.value = named
        else:
            target.elts[index] = named
        inner.ctx = gast.Store()
        stores.append(
            located(
                gast.Assign(targets=[inner], value=load(variables[pair]), type_comment=None),
                statement,
            )
        )
    return stores


def _stored_pair(statement: gast.stmt) -> tuple[str, str] | None:
    """``("o", "h")`` for ``o.h = value``."""
    if not (isinstance(statement, gast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    if isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name):
        return target.value.id, target.attr
    return None


def _local_objects(node: gast.FunctionDef, resolve) -> dict[str, type]:
    """The names bound once, at the top, to a new object of a class (``o = Obj()``), that
    are only ever used through their attributes (not called, passed on, nor aliased), with
    their classes."""
    nodes = walk(node)  # the tree does not change here: one walk serves every question
    made: dict[str, int] = {}
    for statement in nodes:
        if isinstance(statement, gast.Name) and isinstance(statement.ctx, gast.Store):
            made[statement.id] = made.get(statement.id, 0) + 1
    candidates: dict[str, type] = {}
    for statement in node.body:
        if (
            isinstance(statement, gast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], gast.Name)
            and isinstance(statement.value, gast.Call)
            and isinstance(resolve(statement.value.func), type)
            and made.get(statement.targets[0].id) == 1
        ):
            candidates[statement.targets[0].id] = resolve(statement.value.func)
    for parameter in parameter_names(node):
        candidates.pop(parameter, None)
    through_attributes = set()
    calls = set()
    for part in nodes:
        if isinstance(part, gast.Attribute) and isinstance(part.value, gast.Name):
            through_attributes.add(id(part.value))
        if isinstance(part, gast.Call):
            calls.add(id(part.func))
    for part in nodes:
        if isinstance(part, gast.Attribute) and id(part) in calls:
            through_attributes.discard(id(part.value))  # o.method(): it may change o
    for part in nodes:
        if (
            isinstance(part, gast.Name)
            and isinstance(part.ctx, gast.Load)
            and id(part) not in through_attributes
        ):
            candidates.pop(part.id, None)
    return candidates


def _read_variable(statement: gast.stmt, pair: tuple[str, str], variable: str) -> None:
    """Replace every read of ``o.h`` in ``statement`` with ``variable``, in place."""
    for part in walk(statement):
        for field, value in gast.iter_fields(part):
            if _reads(value, pair):
                setattr(part, field, load(variable))
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    if _reads(item, pair):
                        value[index] = load(variable)


def _reads(node, pair: tuple[str, str]) -> bool:
    return (
        isinstance(node, gast.Attribute)
        and isinstance(node.ctx, gast.Load)
        and isinstance(node.value, gast.Name)
        and (node.value.id, node.attr) == pair
    )
