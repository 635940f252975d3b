"""State kept on objects: where a read or a call could see a differentiated value that an
earlier statement of the same computation stored on an object.

The forward sweep stores plain values on objects (a batch norm's running mean) and
``note_stored`` keeps the generated code from reading one back as a constant. Where the
source shows such a read-back, it is refused here, before any code runs, so that
``mode="auto"`` can give the whole function to the tape: a read of an attribute this
function stores a differentiated value in, a read of an attribute a global object's
methods store, and a second call of an object whose call stores on itself.

Example::

    StoredState(parsed, statements, varied).refuse_read(statement)
"""

from __future__ import annotations

import functools
import types
from collections import Counter
from collections.abc import Iterable
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.effects import is_library_function, not_at_run_time, stores_on_itself
from s2sgrad.compiler.frontend import NOT_FOUND, parse_function
from s2sgrad.compiler.reverse.facts import target_names, writes_nothing
from s2sgrad.compiler.syntax import names_read, walk
from s2sgrad.errors import S2SGradError, UnsupportedError
from s2sgrad.runtime.object_gradients import is_instance_object

__all__ = ["StoredState"]


class StoredState:
    """What a function stores on objects, and the reads and calls that would see it.

    Example::

        state = StoredState(parsed, statements, activity.varied)
        state.refuse_read(statement)  # BOX.h read where BOX.h = <differentiated> is stored
    """

    def __init__(self, parsed, statements: list[gast.stmt], varied: set[str]):
        self.parsed = parsed
        self.varied = varied
        self.order: dict[int, tuple[int, tuple[int, ...]]] = {}  # statement → (place, loops)
        self.first_store: dict[tuple[str, str], int] = {}
        self.loop_stores: dict[int, set[tuple[str, str]]] = {}
        self.calls: Counter = Counter()  # id(object) → how many statements call it
        self.objects: set[str] = set()  # names bound to a new object of a user's class
        self.callees: dict[int, tuple[gast.Call, Any]] = {}  # id(call) → (call, its object)
        self.instances: dict[str, Any] = {}  # name → the object it names, if one of a class
        self.survey(statements, ())

    def survey(self, statements: list[gast.stmt], loops: tuple[int, ...]) -> None:
        for statement in statements:
            self.order[id(statement)] = (len(self.order), loops)
            if isinstance(statement, (gast.For, gast.While)):
                self.loop_stores[id(statement)] = set()
                self.survey(statement.body, (*loops, id(statement)))
                continue
            if isinstance(statement, gast.If):
                self.survey(statement.body, loops)
                self.survey(statement.orelse, loops)
                continue
            if not isinstance(statement, gast.Assign):
                continue
            target = statement.targets[0]
            if (
                isinstance(target, gast.Attribute)
                and isinstance(target.value, gast.Name)
                and names_read(statement.value) & self.varied
            ):
                pair = (target.value.id, target.attr)
                self.first_store.setdefault(pair, len(self.order) - 1)
                for loop in loops:
                    self.loop_stores[loop].add(pair)
            value, made = statement.value, None
            for part in _calls_in(value):  # the value itself among them, if a call
                function = self.parsed.resolve(part.func)
                self.calls[id(function)] += 1
                if part is value:
                    made = function
                    self.callees[id(value)] = (value, function)
            if isinstance(made, type) and made.__module__.split(".")[0] not in _LIBRARIES:
                self.objects.update(target_names(target))

    def stored_before(self, statement: gast.stmt, pair: tuple[str, str]) -> bool:
        """Whether ``pair`` may hold a value this function stored when ``statement`` runs."""
        if pair not in self.first_store or id(statement) not in self.order:
            return False
        place, loops = self.order[id(statement)]
        in_loop = any(pair in self.loop_stores[loop] for loop in loops)
        return place > self.first_store[pair] or in_loop

    def refuse_read(self, statement: gast.Assign) -> None:
        """Refuse reading ``obj.name`` where this function stored a differentiated value in
        ``obj.name`` before, or ``obj`` is a global object whose methods store ``.name``;
        and calling ``obj`` or a method of it then (``layer.w = w; y = layer(x)``), which
        the generated code would refuse only as it runs, after the steps before it ran."""
        for value in _attributes_in(statement.value):
            if isinstance(value.value, gast.Name):
                self.refuse_attribute(statement, value)
        if self.first_store:
            self.refuse_call_of_holder(statement)

    def refuse_call_of_holder(self, statement: gast.Assign) -> None:
        for part in _calls_in(statement.value):
            func = part.func
            holder = func.value if isinstance(func, gast.Attribute) else func
            if not isinstance(holder, gast.Name):
                continue
            stored = [
                pair
                for pair in self.first_store
                if pair[0] == holder.id and self.stored_before(statement, pair)
            ]
            if stored:
                owner, name = stored[0]
                raise UnsupportedError(
                    f"{self.parsed.location(statement)}: calls {owner} after a value being "
                    f"differentiated was stored in {owner}.{name}; the call may read it back, "
                    "and a derivative is not carried through an object's attributes: pass "
                    "the value as an argument instead, or use mode='tape'"
                )

    def refuse_attribute(self, statement: gast.Assign, value: gast.Attribute) -> None:
        pair = (value.value.id, value.attr)
        if self.stored_before(statement, pair):
            where = f"{pair[0]}.{pair[1]}"
        else:
            owner = self.instance(value.value.id)
            if owner is NOT_FOUND:
                return
            if value.attr not in _stored_by_methods(type(owner)):  # type: ignore[arg-type]
                return
            where = f"{pair[0]}.{pair[1]}, which a method of {type(owner).__qualname__} stores,"
        raise UnsupportedError(
            f"{self.parsed.location(statement)}: reads {where} where a value being "
            "differentiated may have been stored in this same computation; a derivative is "
            "not carried through an object's attributes: return the value and pass it on, "
            "or use mode='tape'"
        )

    def instance(self, name: str) -> Any:
        """The object of a class (not a module, class, function, number or array) that
        ``name`` names outside the function, else NOT_FOUND; asked once per name."""
        owner = self.instances.get(name, _UNASKED)
        if owner is _UNASKED:
            owner = self.parsed.resolve_name(name)
            if owner is not NOT_FOUND and not is_instance_object(owner):
                owner = NOT_FOUND
            self.instances[name] = owner
        return owner

    def callee(self, call: gast.Call) -> Any:
        """``parsed.resolve(call.func)``, as :meth:`survey` found it for a statement's value."""
        known = self.callees.get(id(call))
        if known is not None and known[0] is call:
            return known[1]
        return self.parsed.resolve(call.func)

    def refuse_opaque_call(self, statement: gast.stmt) -> None:
        """Refuse a call the sweeps keep as it is (nothing it is given is differentiated)
        of code other than a library's, after this function stored a differentiated value
        on an object: the called code may read it back (``layer.W = W; y = layer(x)``,
        a helper reading a global object's attribute), as a constant."""
        stored = [pair for pair in self.first_store if self.stored_before(statement, pair)]
        if not stored:
            return
        objects = {owner for owner, _ in stored}
        if self.opaque_calls(statement.value, objects):
            owner, name = stored[0]
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: '{self.parsed.source_line(statement)}' "
                f"calls code other than NumPy's after a value being differentiated was "
                f"stored in {owner}.{name}; that code may read it back, and a derivative is "
                "not carried through an object's attributes: pass the value as an argument "
                "instead, or use mode='tape'"
            )

    def opaque_calls(self, value: gast.expr, owners: Iterable[str] = ()) -> list[gast.Call]:
        """The calls in ``value`` of code other than a library's (see :meth:`library_call`);
        ``owners`` hold values stored from differentiated ones."""
        objects = self.objects.union(owners)
        return [part for part in _calls_in(value) if not self.library_call(part, objects)]

    def library_call(self, part: gast.Call, objects: set[str]) -> bool:
        """Whether ``part`` calls NumPy, ``math``, a builtin or a method of an array, a
        list or a dict (``t.sum()``, ``rows.append(r)`` of a variable that holds no object
        of a class)."""
        func = part.func
        if (
            isinstance(func, gast.Attribute)
            and isinstance(func.value, gast.Name)
            and func.value.id not in objects
            and self.parsed.resolve(func.value) is NOT_FOUND
            and any(hasattr(kind, func.attr) for kind in (np.ndarray, list, dict))
        ):
            return True
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
            owner = self.parsed.resolve(func.value)  # history.append(...) of a global log
            if type(owner) in (list, dict) and hasattr(type(owner), func.attr):
                return True
        if not is_library_function(self.parsed.resolve(func)):
            return False
        given = [*part.args, *(keyword.value for keyword in part.keywords)]
        return not any(self.given_code(argument) for argument in given)  # map(helper, xs)

    def given_code(self, argument: gast.expr) -> bool:
        """Whether ``argument`` names a function (or an object) other than a library's."""
        if isinstance(argument, gast.Lambda):
            return True
        if not isinstance(argument, (gast.Name, gast.Attribute)):
            return False
        value = self.parsed.resolve(argument)
        if value is NOT_FOUND:
            return False
        return callable(value) and not isinstance(value, type) and not is_library_function(value)

    def refuse_repeated_call(self, statement: gast.Assign, in_loop: bool) -> None:
        """Refuse a second call (or a call in a loop) of an object whose call stores on
        itself: the later call may read what the earlier one stored."""
        value = statement.value
        if not isinstance(value, gast.Call):
            return
        callee = self.callee(value)
        if callee is NOT_FOUND or not (in_loop or self.calls[id(callee)] > 1):
            return
        stores = stores_on_itself(callee)
        if stores is not None:
            raise not_at_run_time(
                UnsupportedError(
                    f"{self.parsed.location(statement)}: {stores} and is called more than "
                    "once here; a later call may read what an earlier one stored from values "
                    "being differentiated, which an object's attributes do not carry a "
                    "derivative through; pass the state along as values, or use mode='tape'"
                )
            )


_LIBRARIES = ("builtins", "numpy", "collections", "types")
_UNASKED = object()  # a name not looked up yet


def _calls_in(value: gast.expr) -> list[gast.Call]:
    """The calls anywhere in ``value`` (one walk, none for a name, a literal or an operator
    or call applied to them, where :func:`writes_nothing` sees all there is)."""
    if writes_nothing(value):
        return [value] if type(value) is gast.Call else []
    return [part for part in walk(value) if isinstance(part, gast.Call)]


def _attributes_in(value: gast.expr) -> list[gast.Attribute]:
    """The attribute nodes anywhere in ``value``; for the values :func:`writes_nothing`
    sees through, only a called method's (``np.sin``)."""
    if writes_nothing(value):
        func = value.func if type(value) is gast.Call else None
        return [func] if type(func) is gast.Attribute else []
    return [part for part in walk(value) if isinstance(part, gast.Attribute)]


@functools.lru_cache(maxsize=256)
def _stored_by_methods(cls: type) -> frozenset[str]:
    """The attributes the methods of ``cls`` (other than ``__init__``) store on ``self``."""
    stored: set[str] = set()
    for klass in cls.__mro__:
        for name, method in vars(klass).items():
            if name != "__init__" and isinstance(method, types.FunctionType):
                stored |= _stored_on_first_parameter(method)
    return frozenset(stored)


def _stored_on_first_parameter(function: Any) -> set[str]:
    try:
        node = parse_function(function).node
    except S2SGradError:
        return set()
    parameters = node.args.posonlyargs + node.args.args
    if not parameters:
        return set()
    owner = parameters[0].id
    return {
        part.attr
        for part in walk(node)
        if isinstance(part, gast.Attribute)
        and isinstance(part.ctx, gast.Store)
        and isinstance(part.value, gast.Name)
        and part.value.id == owner
    }
