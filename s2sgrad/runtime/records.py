"""Objects the differentiated function makes, whose attributes are the values it was given.

A record class is one whose construction only stores what it is given: a dataclass whose
``__init__`` the decorator wrote (no ``__post_init__``), a ``NamedTuple`` or
``collections.namedtuple``, ``types.SimpleNamespace``, and a plain class of the user's
whose ``__init__`` is nothing but ``self.name = parameter`` (or a constant) stores. Calling
one is differentiated like packing a tuple: each attribute's cotangent goes back to the
argument stored there (``record_vjp``), and the tangent of the object is its attributes'
tangents by name (``record_jvp``). The object's attributes are then read by the rules of
``getattr`` (``runtime/objects.py``) and its methods differentiated with the object as
their first argument (``method_vjp``), as for a dataclass given as an argument.

Anything else a constructor may do (compute, call, check, store elsewhere) is not followed:
such classes are no records, and their calls stay refused.

Example::

    record_fields(Affine)  # (('w', ('w',)), ('shift', ('shift',))), stored as given
    value, pullback = record_vjp(Affine, (w, 0.1), {})
    pullback(CotangentDict({"w": g}))  # (g, None)

The last ``len(named)`` arguments of a call are those passed by name
(``SimpleNamespace(w=w)``, generated code's ``keywords_at_the_end``).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
import types
from typing import Any

from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.registry import complex_ready, jvp_rule, vjp_rule
from s2sgrad.running import running_origin
from s2sgrad.runtime.attribute_stores import stores_plainly
from s2sgrad.runtime.core import CotangentDict, CotangentList, add_cotangents, zeros_like_value

# what generated code calls (runtime.__all__); the rest is dispatch's and the compiler's
__all__ = [
    "with_attribute",
    "without_attribute",
    "attribute_part",
    "attribute_only",
]

# per parameter of the constructor (in order), the attributes its value is stored in
Fields = tuple[tuple[str, tuple[str, ...]], ...]


def record_fields(cls: Any) -> Fields | None:
    """For a record class (see the module), each parameter of its constructor with the
    attributes that hold its value; None for any other class or object.

    Example::

        record_fields(types.SimpleNamespace)  # () (its keywords are its attributes)
    """
    if not isinstance(cls, type):
        return None
    try:
        return _fields(cls, _class_state(cls))
    except TypeError:  # unhashable class (a metaclass defining __eq__): no record
        return None


def _class_state(cls: type) -> tuple[int, ...]:
    """What the answer for ``cls`` depends on, by identity: every member of it and of its
    bases, so that a method assigned to the class later is read again (freshness)."""
    return tuple(id(member) for base in cls.__mro__[:-1] for member in vars(base).values())


@functools.lru_cache(maxsize=256)
def _fields(cls: type, state: tuple[int, ...]) -> Fields | None:
    if cls is types.SimpleNamespace:
        return ()
    if type(cls) is not type and not _is_named_tuple(cls):
        return None  # a metaclass may make the call do anything
    if not _methods_keep_no_state(cls) or not _no_protocols(cls):
        return None
    if _is_named_tuple(cls):
        return tuple((name, (name,)) for name in _field_names(cls))
    if cls.__new__ is not object.__new__ or not _plain_attribute_access(cls):
        return None
    if any("__slots__" in vars(base) for base in cls.__mro__[:-1]):
        return None  # its attributes live in slot descriptors, not in the object's dict
    if dataclasses.is_dataclass(cls):
        return _dataclass_fields(cls)
    return _stored_parameters(cls)


# methods that change what a container holds (self.seen.append(v) changes the object too)
_MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "sort",
        "fill",
        "resize",
        "put",
        "itemset",
        "popitem",
        "reverse",
        "__setitem__",
    }
)


def _methods_keep_no_state(cls: type) -> bool:
    """Whether no method of ``cls`` (but ``__init__``) may change the object: none stores
    on, deletes from or changes in place an attribute of its first parameter, nor uses
    that parameter but as the base of an attribute (``helper(self)`` might change it,
    ``return self`` would make a second name for it). A derivative takes an object's attributes
    for the values it was made from: a method storing ``self.last = v`` would leave later
    reads with no derivative (forward mode) or refused as the code runs, after steps that
    mode "auto" could not take back; such classes stay refused when transforming."""
    for base in cls.__mro__[:-1]:
        for name, member in vars(base).items():
            if name == "__init__":
                continue  # what __init__ stores is read by _stored_parameters
            for function in _functions_of(member):
                # namedtuple's own (_make, _replace) and a dataclass's __replace__ (Python
                # 3.13: a new object from the fields) keep no state
                if function.__module__ in ("collections", "dataclasses"):
                    continue
                if not _keeps_no_state(function, name):
                    return False
    return True


# dunder methods Python or NumPy may call on a record without naming them whose results
# carry no derivative a sweep would miss: text (repr, str, format), a hash, construction,
# a call (differentiated as the class's __call__), and what only classes or copies use
_QUIET_METHODS = frozenset(
    {
        "__init__",
        "__new__",
        "__repr__",
        "__str__",
        "__format__",
        "__hash__",
        "__call__",
        "__replace__",
        "__class_getitem__",
        "__init_subclass__",
        "__getnewargs__",
    }
)
# comparisons: a derivative takes their results for booleans, so only those the dataclass
# decorator writes (which compare tuples of fields) are known to be
_COMPARISONS = frozenset({"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"})
# the class's own bookkeeping, which no instance operation reads as a value
_CLASS_DATA = frozenset(
    {
        "__module__",
        "__qualname__",
        "__doc__",
        "__dict__",
        "__weakref__",
        "__annotations__",
        "__dataclass_fields__",
        "__dataclass_params__",
        "__match_args__",
        "__firstlineno__",
        "__static_attributes__",
        "__orig_bases__",
        "__parameters__",
        "__slots__",  # refused for all but named tuples by _fields
        "__slotnames__",  # the slots copy and pickle found, cached on the class by copyreg
        "__abstractmethods__",
        "__type_params__",
    }
)


# what Python hands back as the method returns it, not as a bool or an int: a class's own
# answer may be a value computed from its attributes
_ANSWERS = frozenset(
    {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}
    | {"__round__", "__trunc__", "__floor__", "__ceil__"}
)


def defines_value_protocols(cls: Any) -> bool:
    """Whether the class ``cls`` (or a base of the user's) answers a comparison,
    ``round`` or ``math.floor`` with a method whose source the user wrote: its result, which
    a derivative takes for a flag or an integer, may be a value computed from attributes.

    Example::

        defines_value_protocols(Affine)  # False: no comparison of its own
    """
    if not isinstance(cls, type):
        return False
    for base in cls.__mro__[:-1]:
        for name in _ANSWERS & set(vars(base)):
            member = vars(base)[name]
            if isinstance(member, types.FunctionType) and _written_by_the_user(member):
                return True
    return False


def _no_protocols(cls: type) -> bool:
    """Whether ``cls`` and its bases define nothing NumPy or Python would call on an
    object without its attribute being named: no ``__array__``, ``__array_ufunc__``,
    ``__iter__``, ``__getitem__``, ``__len__``, ``__float__``, arithmetic, ``__copy__``,
    ``__reduce__`` ... (only ``_QUIET_METHODS``, and the comparisons, ``__setattr__`` and
    ``__delattr__`` the dataclass decorator writes), and no property or other descriptor.
    Such a class computes where the sweeps see only an object passed on (``np.asarray(
    Holder(x))`` reads ``__array__``), so it is no record: refused when transforming, and
    mode "auto" tapes it, which records what those methods compute.

    Example::

        _no_protocols(Holder)  # False: Holder defines __array__
    """
    named_tuple = _is_named_tuple(cls)
    fields = set(_field_names(cls)) if named_tuple else set()
    for base in cls.__mro__[:-1]:
        if base is tuple and named_tuple:
            continue  # the tuple a named tuple is: differentiated as one
        if base.__module__ == "builtins":
            return False  # a subclass of a builtin type: its methods are C code
        for name, member in vars(base).items():
            if name in _CLASS_DATA or name in fields:
                continue
            if name.startswith("__") and name.endswith("__"):
                if name == "__hash__" and member is None:
                    continue  # unhashable, as a dataclass with eq=True is
                if name in _QUIET_METHODS:
                    continue
                generated = (  # by the dataclass decorator: a function with no source
                    dataclasses.is_dataclass(base)
                    and isinstance(member, types.FunctionType)
                    and not _written_by_the_user(member)
                )
                if generated and name in _COMPARISONS:
                    continue  # comparing tuples of fields
                if generated and name in ("__setattr__", "__delattr__"):
                    continue  # a frozen dataclass's, which only refuse
                return False
            if isinstance(member, (types.FunctionType, staticmethod, classmethod)):
                continue  # a method: _methods_keep_no_state reads it
            if hasattr(type(member), "__get__"):
                return False  # a property or another descriptor computes what is read
    return True


def _functions_of(member: Any) -> list[Any]:
    if isinstance(member, (staticmethod, classmethod)):
        member = member.__func__
    if isinstance(member, property):
        return [f for f in (member.fget, member.fset, member.fdel) if f is not None]
    return [member] if isinstance(member, types.FunctionType) else []


def _keeps_no_state(function: types.FunctionType, name: str) -> bool:
    try:
        source = textwrap.dedent(inspect.getsource(function))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        # the methods dataclasses and namedtuple write (__eq__, _replace ...) have no
        # source and change nothing; any other without source is not known to
        return name.startswith("_")
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        definition = None
    own = function.__code__.co_name
    its_own = (definition is not None and definition.name == own) or (
        own == "<lambda>" and "lambda" in source
    )
    if not its_own:  # lines of other code: Python 3.13 keeps the text of 'python -c' under
        # the name '<string>' that namedtuple's __new__ (a lambda made by eval) has too
        return name.startswith("_")
    if definition is None:
        return False  # a lambda stored as a method, say
    parameters = [*definition.args.posonlyargs, *definition.args.args]
    if not parameters:
        return True
    receiver = parameters[0].arg
    for node in ast.walk(definition):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        if any(_rooted_at(t, receiver) and not isinstance(t, ast.Name) for t in targets):
            return False  # self.h = v, self.items[0] = v, del self.h
        if isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in _MUTATORS
                and _rooted_at(func.value, receiver)
                and not isinstance(func.value, ast.Name)
            ):
                return False  # self.seen.append(v)
    # the object itself appears only as the base of an attribute (self.w, self.f(x)):
    # not handed on (helper(self), setattr(self, ...)), returned or kept (return self)
    dotted = {
        id(node.value)
        for node in ast.walk(definition)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
    }
    return not any(
        isinstance(node, ast.Name) and node.id == receiver and id(node) not in dotted
        for node in ast.walk(definition)
        if node is not definition.args
    )


def _rooted_at(node: ast.AST, receiver: str) -> bool:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return isinstance(node, ast.Name) and node.id == receiver


def _is_named_tuple(cls: type) -> bool:
    return (
        issubclass(cls, tuple)
        and cls.__bases__ == (tuple,)
        and isinstance(getattr(cls, "_fields", None), tuple)
        and all(isinstance(name, str) for name in _field_names(cls))
    )


def _field_names(cls: type) -> tuple[str, ...]:
    """A named tuple's fields, in order."""
    return tuple(getattr(cls, "_fields", ()))


def _plain_attribute_access(cls: type) -> bool:
    """No ``__setattr__``, ``__getattribute__`` or ``__getattr__`` of the user's: what is
    stored is what is read back (a frozen dataclass's ``__setattr__`` only refuses)."""
    frozen = dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    for base in cls.__mro__[:-1]:
        if "__getattribute__" in vars(base) or "__getattr__" in vars(base):
            return False
        if "__setattr__" in vars(base) and not frozen:
            return False
    return True


def _dataclass_fields(cls: type) -> Fields | None:
    if hasattr(cls, "__post_init__") or not cls.__dataclass_params__.init:  # type: ignore[attr-defined]
        return None
    if _written_by_the_user(vars(cls).get("__init__")):
        return _stored_parameters(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    names = list(inspect.signature(cls).parameters)
    if names != [f.name for f in fields]:  # an InitVar, say: not stored
        return None
    if not all(stores_plainly(cls, f.name) for f in fields):
        return None
    return tuple((f.name, (f.name,)) for f in fields)


def _written_by_the_user(function: Any) -> bool:
    try:
        inspect.getsource(function)
    except (OSError, TypeError):
        return False  # the dataclass decorator's own __init__ has no source file
    return True


def _stored_parameters(cls: type) -> Fields | None:
    """The parameters of a plain class's ``__init__`` whose body only stores them (or
    constants) as attributes of ``self``; None for any other ``__init__``."""
    init = getattr(cls, "__init__", None)  # the class's own or a base's
    if not isinstance(init, types.FunctionType):
        return None  # object.__init__ (no attributes) or one written in C
    try:
        source = textwrap.dedent(inspect.getsource(init))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef) or definition.decorator_list:
        return None
    arguments = definition.args
    if arguments.vararg or arguments.kwarg or arguments.posonlyargs or arguments.kwonlyargs:
        return None
    if not arguments.args:
        return None
    receiver = arguments.args[0].arg
    parameters = [a.arg for a in arguments.args[1:]]
    stored: dict[str, list[str]] = {p: [] for p in parameters}
    attributes: set[str] = set()
    body = definition.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    for statement in body:
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Attribute)
            and isinstance(statement.targets[0].value, ast.Name)
            and statement.targets[0].value.id == receiver
        ):
            return None
        attribute = statement.targets[0].attr
        if attribute in attributes or not stores_plainly(cls, attribute):
            return None
        attributes.add(attribute)
        value = statement.value
        if isinstance(value, ast.Name) and value.id in stored:
            stored[value.id].append(attribute)
        elif not isinstance(value, ast.Constant):
            return None
    return tuple((p, tuple(stored[p])) for p in parameters)


def is_record_instance(value: Any) -> bool:
    """Whether ``value`` is an object of a record class other than a named tuple (which
    is differentiated as the tuple it is).

    Example::

        is_record_instance(Affine(w, 0.1))  # True
    """
    cls = type(value)
    return not isinstance(value, tuple) and record_fields(cls) is not None


def _bound(fields: Fields, count: int, named: tuple[str, ...]) -> list[tuple[str, ...]]:
    """For each of the ``count`` positional arguments of a record class's call, the last
    ``len(named)`` of them passed by those names, the attributes it is stored in."""
    by_name = dict(fields)
    leading = count - len(named)
    held = [fields[i][1] if i < len(fields) else () for i in range(leading)]
    # a SimpleNamespace's keywords are its attributes
    return held + [by_name.get(name, (name,) if not fields else ()) for name in named]


def record_cotangents(cls: type, g: Any, count: int, named: tuple[str, ...] = ()) -> tuple:
    """The cotangent of each of the ``count`` positional arguments of a call of ``cls``, a
    record class (the last ``len(named)`` passed by those names), given ``g``, the
    cotangent of the object made (by attribute name, a list for a named tuple, an object
    of the class, or None).

    Example::

        record_cotangents(Affine, CotangentDict({"w": g}), 2)  # (g, None)
    """
    fields = record_fields(cls)
    assert fields is not None
    if g is None:
        return tuple(None for _ in range(count))
    if _is_named_tuple(cls) and isinstance(g, (list, tuple)) and not isinstance(g, cls):
        parts = dict(zip(_field_names(cls), g))
    elif isinstance(g, dict):
        parts = dict(g)
    elif isinstance(g, (int, float)) and g == 0:
        return tuple(None for _ in range(count))
    else:  # an object of the class (a gradient rebuilt as one)
        parts = {name: getattr(g, name, None) for _, held in fields for name in held}
    result = []
    for held in _bound(fields, count, named):
        total = None
        for name in held:
            total = add_cotangents(total, parts.get(name))
        result.append(total)
    return tuple(result)


def record_vjp(
    cls: type, args: tuple, kwargs: dict, named: tuple[str, ...] = ()
) -> tuple[Any, Any]:
    """``(cls(*args, **kwargs), pullback)`` of a record class, the last ``len(named)`` of
    ``args`` passed by those names; ``pullback(g)`` gives one cotangent per entry of
    ``args`` (``None`` where nothing flows).

    Example::

        value, pullback = record_vjp(Pair, (a, b), {})
        pullback(CotangentDict({"first": g}))  # (g, None)
    """
    value = _made(cls, args, kwargs, named)
    return value, lambda g: record_cotangents(cls, g, len(args), named)


def _made(cls: type, args: tuple, kwargs: dict, named: tuple[str, ...]) -> Any:
    leading = len(args) - len(named)
    if cls is types.SimpleNamespace and leading:
        _refuse_namespace_of_a_mapping()
    return cls(*args[:leading], **dict(zip(named, args[leading:])), **kwargs)


def _refuse_namespace_of_a_mapping() -> None:
    """``SimpleNamespace(mapping)`` (Python 3.13 on) stores the entries of the mapping it is
    given, which the rules, following arguments to attributes by name, do not see."""
    error = UnsupportedError(
        f"{running_origin('the differentiated function')}: types.SimpleNamespace given a "
        "mapping (or pairs) stores its entries as attributes, which the transformer does "
        "not follow; pass the attributes by keyword (SimpleNamespace(w=x)), or use "
        "mode='auto' or mode='tape'"
    )
    error.whole_function_on_tape = True  # mode="auto": the tape follows the namespace
    raise error


def record_jvp(
    cls: type, tangents: tuple, args: tuple, kwargs: dict, named: tuple[str, ...] = ()
) -> tuple[Any, Any]:
    """``(cls(*args, **kwargs), tangent)``: the tangent of a record object is its
    attributes' tangents by name (a list, by field, for a named tuple).

    Example::

        record_jvp(Pair, (da, db), (a, b), {})  # (Pair(a, b), {'first': da, 'second': db})
    """
    value = _made(cls, args, kwargs, named)
    fields = record_fields(cls)
    assert fields is not None
    by_name: dict[str, Any] = {}
    for held, tangent in zip(_bound(fields, len(args), named), tangents):
        for name in held:
            by_name[name] = tangent
    if _is_named_tuple(cls):  # a field given no tangent (a default) is a constant
        return value, CotangentList(
            zeros_like_value(item) if by_name.get(name) is None else by_name[name]
            for name, item in zip(_field_names(cls), value)
        )
    return value, CotangentDict({k: t for k, t in by_name.items() if t is not None})


def with_attribute(obj: Any, name: str, value: Any) -> Any:
    """A copy of the record object ``obj`` whose attribute ``name`` holds ``value``: what
    generated code makes of ``obj.name = value`` when no other name, container or closure
    holds ``obj`` (``passes/record_stores.py``), so that the store is a value the sweeps
    follow, not a change they cannot see.

    Example::

        p = with_attribute(p, "first", v)  # p.first = v
    """
    if type(obj) is types.SimpleNamespace:
        new = types.SimpleNamespace(**vars(obj))
    else:
        new = object.__new__(type(obj))
        new.__dict__.update(obj.__dict__)
    setattr(new, name, value)
    return new


def without_attribute(g: Any, name: str) -> Any:
    """The cotangent (or tangent) of a record object by attribute, ``g``, without its entry
    for ``name`` (which went to the value stored there by :func:`with_attribute`).

    Example::

        without_attribute(CotangentDict({"w": 1.0, "b": 2.0}), "w")  # {'b': 2.0}
    """
    if g is None:
        return None
    if isinstance(g, dict):
        return CotangentDict({k: v for k, v in g.items() if k != name})
    if isinstance(g, (int, float)) and g == 0:
        return None
    parts = {k: v for k, v in vars(g).items() if k != name}  # an object of the class
    return CotangentDict(parts)


def attribute_part(g: Any, name: str) -> Any:
    """The entry of the cotangent (or tangent) by attribute ``g`` for ``name``; ``0.0``
    where it has none.

    Example::

        attribute_part(CotangentDict({"w": 1.0}), "w")  # 1.0
    """
    if g is None or (isinstance(g, (int, float)) and g == 0):
        return 0.0
    part = g.get(name) if isinstance(g, dict) else getattr(g, name, None)
    return 0.0 if part is None else part


def attribute_only(t: Any, name: str) -> CotangentDict:
    """A cotangent (or tangent) by attribute with ``t`` for ``name`` alone.

    Example::

        attribute_only(1.0, "w")  # {'w': 1.0}
    """
    return CotangentDict({name: t})


@vjp_rule(with_attribute)
def _with_attribute_vjp(g, ans, obj, name, value):
    return without_attribute(g, name), None, attribute_part(g, name)


@jvp_rule(with_attribute)
def _with_attribute_jvp(t, ans, obj, name, value):
    # called once per argument with that argument's tangent: the object's keeps its other
    # attributes, the value's is the tangent of the attribute stored
    return without_attribute(t, name), None, attribute_only(t, name)


@vjp_rule(without_attribute)
def _without_attribute_vjp(g, ans, g_in, name):
    return without_attribute(g, name), None


@jvp_rule(without_attribute)
def _without_attribute_jvp(t, ans, g_in, name):
    return without_attribute(t, name), None


@vjp_rule(attribute_part)
def _attribute_part_vjp(g, ans, g_in, name):
    return attribute_only(g, name), None


@jvp_rule(attribute_part)
def _attribute_part_jvp(t, ans, g_in, name):
    return attribute_part(t, name), None


@vjp_rule(attribute_only)
def _attribute_only_vjp(g, ans, t, name):
    return attribute_part(g, name), None


@jvp_rule(attribute_only)
def _attribute_only_jvp(t, ans, t_in, name):
    return attribute_only(t, name), None


# they move values and cotangents around: right for complex values too
complex_ready(with_attribute, without_attribute, attribute_part, attribute_only)
