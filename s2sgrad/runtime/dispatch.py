"""Calls whose target is only known at run time: differentiate them when they happen.

Generated code calls ``dynamic_vjp(f, *args)`` for a method on an object, an element of a
list of layers, a function passed in as an argument, a recursive call, or a function
without source. It picks, in order: a registered rule for ``f``, ``f``'s own generated
derivative (transformed on first use and cached), or the runtime tape.
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import dataclasses
import functools
import inspect
import types
import weakref
from typing import Any

import numpy as np

from s2sgrad.errors import (
    FallbackWarning,
    NonDifferentiableError,
    S2SGradError,
    UnsupportedError,
    no_forward_derivative,
    warn_at_caller,
)
from s2sgrad.naming import library_name
from s2sgrad.numpy_signatures import positional_parameters, vararg_name
from s2sgrad.pytrees import registered_node
from s2sgrad.rules.registry import (
    get_rule,
    keywords_without_derivative,
    per_argument,
    rule_function,
)
from s2sgrad.running import running_origin
from s2sgrad.runtime import hooks
from s2sgrad.runtime.callables import holds_values, plain_callable
from s2sgrad.runtime.container_subclasses import refuse_overriding_container
from s2sgrad.runtime.core import (
    CotangentDict,
    add_cotangents,
    as_gradient,
    is_inexact,
    jvp_call,
    jvp_entry,
    primals_in_position,
    vjp_call,
    zeros_like_value,
)
from s2sgrad.runtime.custom_cotangents import check_cotangent_shapes, cotangent_tuple
from s2sgrad.runtime.dict_entries import copied_dict, dict_of_pairs
from s2sgrad.runtime.folds import fold_jvp, fold_pullback_with_tangent, fold_vjp, is_fold
from s2sgrad.runtime.forward_pullbacks import PullbackWithTangent
from s2sgrad.runtime.keyword_arguments import KeywordsAtTheEnd, by_position, picked
from s2sgrad.runtime.logging_callees import refuse_a_logging_callee
from s2sgrad.runtime.objects import refuse_stored_state
from s2sgrad.runtime.own_transforms import is_public_transform, own_transform_refusal
from s2sgrad.runtime.partials import is_partial, partial_call
from s2sgrad.runtime.records import (
    is_record_instance,
    record_cotangents,
    record_fields,
    record_jvp,
    record_vjp,
)

__all__ = [
    "dynamic_vjp",
    "transformed_vjp",
    "dynamic_jvp",
    "transformed_jvp",
    "method_vjp",
    "transformed_method_vjp",
    "method_jvp",
    "transformed_method_jvp",
]

_TAPE_ONLY: dict[Any, str] = {}  # functions the transformer could not handle, and why


def transformed_vjp(function: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """Like :func:`dynamic_vjp`, but never uses the tape (``mode="s2s"``).

    Raises ``UnsupportedError`` when the function can only be differentiated on the tape.

    Example::

        value, pullback = transformed_vjp(activation, x)
    """
    return _dispatch(function, args, kwargs, tape=False)


def dynamic_vjp(function: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``(function(*args, **kwargs), pullback)``; ``pullback(g)`` returns one cotangent per
    positional argument (zeros for floating arguments nothing flowed into, ``None`` for the
    rest).

    Example::

        value, pullback = dynamic_vjp(layer.forward, x)
        (dx,) = pullback(np.ones_like(value))
    """
    result = _dispatch(function, args, kwargs, tape=True)
    refuse_overriding_container(result[0])  # the code reads its items as a plain list's
    return result


def method_vjp(obj: Any, name: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``obj.name(*args)`` of an object being differentiated (a dataclass model's
    ``self.predict(x)``), and a pullback giving the cotangents of ``obj`` and the arguments:
    a method of the class is differentiated with ``obj`` as its first argument; a callable
    stored on the object (``self.activation``) is a constant, and ``obj`` gets ``None``.

    Example::

        value, pullback = method_vjp(model, "predict", x)
        dmodel, dx = pullback(g)
    """
    return _method_dispatch(obj, name, args, kwargs, tape=True)


def transformed_method_vjp(obj: Any, name: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """Like :func:`method_vjp`, but never uses the tape (``mode="s2s"``).

    Example::

        value, pullback = transformed_method_vjp(model, "predict", x)
    """
    return _method_dispatch(obj, name, args, kwargs, tape=False)


_REVERSE_DISPATCH = (dynamic_vjp, transformed_vjp, method_vjp, transformed_method_vjp)


def _method_dispatch(obj, name, args, kwargs, tape):
    if type(obj) is dict and name == "get" and not kwargs and 1 <= len(args) <= 2:
        return _dict_get(obj, *args)
    # a helper stored a differentiated value on obj (model.slope = theta[0] in a factory):
    # the method may read it, and the cotangent of obj it gives has nowhere to go
    try:
        refuse_stored_state(obj)
    except UnsupportedError as refusal:
        refusal.whole_function_on_tape = True  # mode="auto": the tape follows the attributes
        raise
    static = _static_or_class_method(obj, name)
    if static is not None:  # self.act(z) of a @staticmethod: the object is not an argument
        value, pullback = _dispatch(static, args, kwargs, tape)
        return value, lambda g: (zeros_like_value(obj), *pullback(g))
    function = getattr(type(obj), name, None)
    if isinstance(function, types.FunctionType) and name not in getattr(obj, "__dict__", {}):
        return _dispatch(function, (obj, *args), kwargs, tape)
    if _called_as_function(obj, name):  # f(x) of a function a differentiated value held
        value, pullback = _dispatch(plain_callable(obj), args, kwargs, tape)
        return value, lambda g: (None, *pullback(g))
    if name not in getattr(obj, "__dict__", {}):  # not a function the object holds
        error = UnsupportedError(
            f"{_user_origin()}: .{name}() of a {type(obj).__qualname__} being differentiated "
            "is not a method written in Python, so its derivative is unknown; give it a rule "
            "with @s2sgrad.derivative, or use mode='tape'"
        )
        # the tape runs the call as it is (super().predict(x) in a subclass's method)
        error.whole_function_on_tape = True
        raise error
    # a callable stored on the object is a constant only if it holds no values (a
    # closure over self would compute with the object's arrays, unseen)
    value, pullback = _dispatch(plain_callable(getattr(obj, name)), args, kwargs, tape)
    return value, lambda g: (zeros_like_value(obj), *pullback(g))


def method_jvp(obj: Any, name: str, tangents: tuple, *args: Any, **kwargs: Any):
    """Forward mode for ``obj.name(*args)`` of an object being differentiated (a model's
    ``model.loss(x)``): ``(value, tangent)``. ``tangents`` holds ``obj``'s tangent, then one
    per positional argument. A method of the class is differentiated with ``obj`` as its
    first argument, as :func:`method_vjp` does; a callable stored on the object is a
    constant.

    Example::

        value, tangent = method_jvp(model, "loss", (dmodel, dx), x)
    """
    return _method_dispatch_jvp(obj, name, tangents, args, kwargs, tape=True)


def transformed_method_jvp(obj: Any, name: str, tangents: tuple, *args: Any, **kwargs: Any):
    """Like :func:`method_jvp`, but never uses the tape (``mode="s2s"``).

    Example::

        value, tangent = transformed_method_jvp(model, "loss", (dmodel, dx), x)
    """
    return _method_dispatch_jvp(obj, name, tangents, args, kwargs, tape=False)


def _called_as_function(obj: Any, name: str) -> bool:
    """Whether ``obj.__call__(...)``, which generated code writes for ``obj(...)`` of a
    value being differentiated, is the call of a function (called as it is, if it holds
    no values; a pullback, forward mode over a gradient) rather than the Python
    ``__call__`` of an object differentiated through its attributes (a record made in
    the function, a dataclass or registered model)."""
    if name != "__call__":
        return False
    method = inspect.getattr_static(type(obj), name, None)
    if not isinstance(method, types.FunctionType) or _of_s2sgrad(type(obj)):
        return True  # s2sgrad's own callables (a PullbackWithTangent) are functions here
    return not (is_record_instance(obj) or registered_node(obj) is not None)


def _object_tangent(obj: Any, tangent: Any) -> Any:
    """The tangent (or cotangent) of an object a method is called on: ``None`` (nothing
    moving) as an empty one by attribute for an object made of the values it was given,
    whose attributes' tangents then read as zero (``attribute_entry``), as a dataclass's
    zero is (``zeros_like_value``)."""
    if tangent is None and is_record_instance(obj):
        return CotangentDict()
    return tangent


def _method_dispatch_jvp(obj, name, tangents, args, kwargs, tape):
    if type(obj) is dict and name == "get" and not kwargs and 1 <= len(args) <= 2:
        return _dict_get_jvp(obj, tangents, *args)
    tangents = (_object_tangent(obj, tangents[0]), *tangents[1:])
    static = _static_or_class_method(obj, name)
    if static is not None:  # the object is not an argument: its tangent is not given
        return _dispatch_jvp(static, tuple(tangents[1:]), args, kwargs, tape)
    if _called_as_function(obj, name):
        return _dispatch_jvp(plain_callable(obj), tuple(tangents[1:]), args, kwargs, tape)
    function = getattr(type(obj), name, None)
    own = getattr(obj, "__dict__", {})
    if type(obj) is not dict and isinstance(function, types.FunctionType) and name not in own:
        return _dispatch_jvp(function, tangents, (obj, *args), kwargs, tape)
    if type(obj) is dict or name not in own:  # a container's method, or one without source
        raise UnsupportedError(
            f"{_user_origin()}: forward mode (jvp, hvp, hessian) cannot follow .{name}() of "
            f"a {type(obj).__qualname__} being differentiated, which is not a method of "
            "its class written in Python; compute with NumPy functions instead, or use "
            "mode='auto' or mode='tape'"
        )
    return _dispatch_jvp(
        plain_callable(getattr(obj, name)), tuple(tangents[1:]), args, kwargs, tape
    )


def _static_or_class_method(obj: Any, name: str) -> Any:
    """``obj.name`` when the class defines ``name`` as a ``@staticmethod`` or
    ``@classmethod`` (and the object holds nothing of that name): a function called without
    ``obj``, which the class's ``getattr`` gives unwrapped, as if it were a method; else
    None."""
    if name in getattr(obj, "__dict__", {}):
        return None
    try:
        defined = inspect.getattr_static(type(obj), name)
    except AttributeError:
        return None
    if isinstance(defined, (staticmethod, classmethod)):
        return getattr(obj, name)
    return None


def _dict_get(obj: dict, key: Any, *default: Any) -> tuple[Any, Any]:
    """``obj.get(key[, default])`` of a dict being differentiated: the entry (whose cotangent
    goes to that entry of ``obj``) or, when there is none, the default (which gets it)."""
    if key in obj:
        value = obj[key]
        unused = tuple(zeros_like_value(d) if _differentiable(d) else None for d in default)
        return value, lambda g: (CotangentDict({key: g}), None, *unused)
    value = default[0] if default else None
    return value, lambda g: (CotangentDict(), None, *(g for _ in default))


def _dict_get_jvp(obj: dict, tangents: tuple, key: Any, *default: Any) -> tuple[Any, Any]:
    """Forward mode for ``obj.get(key[, default])`` of a dict being differentiated:
    ``(value, tangent)``, the entry with its tangent (the same entry of ``obj``'s tangent,
    which holds none for a constant dict) or, when there is none, the default with its
    own (``tangents`` is ``(dobj, dkey[, ddefault])``)."""
    if key in obj:
        value, entries = obj[key], tangents[0]
        if isinstance(entries, dict) and key in entries:
            return value, entries[key]
        return value, zeros_like_value(value)
    if not default:
        return None, None
    return default[0], tangents[2] if len(tangents) > 2 else zeros_like_value(default[0])


def _record_call(function: Any) -> tuple[type, tuple[str, ...]] | None:
    """``(class, names of the values passed last by name)`` for a call of a record class
    (``runtime/records.py``: an object made from the values it stores); else None."""
    if isinstance(function, KeywordsAtTheEnd):
        if record_fields(function.function) is not None:
            return function.function, function.names
        return None
    return (function, ()) if record_fields(function) is not None else None


def _record_pullback(cls: type, args: tuple, named: tuple[str, ...]):
    """The pullback of ``cls(...)``: each argument gets the cotangents of the attributes
    it is stored in (zeros for one that can carry a cotangent and gets none)."""
    every = tuple(range(len(args)))
    return _spread(
        lambda g: record_cotangents(cls, g, len(args), named), every, args, tuple_result=True
    )


def _dispatch(function: Any, args: tuple, kwargs: dict, tape: bool) -> tuple[Any, Any]:
    record = _record_call(function)
    if record is not None:  # Affine(w, 0.1): the object holds what it was given
        cls, named = record
        value, _ = record_vjp(cls, args, kwargs, named)
        return value, _record_pullback(cls, args, named)
    if is_partial(function):  # scaled = functools.partial(helper, k=3.0): helper's call
        target, full_args, full_kwargs, bound = partial_call(function, args, kwargs)
        value, pullback = _dispatch(target, full_args, full_kwargs, tape)
        return value, lambda g: tuple(pullback(g))[bound:]
    if isinstance(function, KeywordsAtTheEnd):
        try:
            target, bound_args, bound_kwargs, picks = by_position(function, args, kwargs)
        except UnsupportedError:
            if not tape:
                raise
            return _tape_call(function, args, kwargs)  # a value given by keyword only
        value, pullback = _dispatch(target, bound_args, bound_kwargs, tape)
        return value, lambda g: picked(pullback(g), picks)
    owner = getattr(function, "__self__", None)
    if type(owner) is dict and function == owner.get and not kwargs and 1 <= len(args) <= 2:
        value, pullback = _dict_get(owner, *args)  # the default being differentiated
        return value, lambda g: pullback(g)[1:]
    rule = get_rule(function)
    if rule is not None and rule.custom is not None:
        positions = tuple(i for i, a in enumerate(args) if _differentiable(a))
        value, pullback = rule.custom(*args, **kwargs)
        return value, _spread(_checked(rule.custom, pullback, args), positions, args, None)
    # a rule's None for a floating argument is a zero cotangent, as the docstring says: the
    # generated code adds what it returns (g = sg.stop_gradient; g(x) * x added None)
    every = tuple(range(len(args)))
    if rule is not None and rule.vjp is not None:
        _refuse_keywords_without_derivative(function, rule, kwargs)
        value = function(*args, **kwargs)
        pullback = lambda g: per_argument(rule.vjp(g, value, *args, **kwargs), len(args))  # noqa: E731
        return value, _spread(pullback, every, args, tuple_result=True)
    if rule is not None:  # declared non-differentiable
        value = function(*args, **kwargs)
        return value, _spread(lambda g: (None,) * len(args), every, args, tuple_result=True)
    if is_fold(function, args, kwargs):  # functools.reduce(f, items): call by call
        return fold_vjp(_dispatch, args, tape)
    if not tape and function in _REVERSE_DISPATCH:
        raise _no_derivative_over_dispatch("a derivative of the gradient")
    bound_self: tuple = ()
    target = function
    transform = function  # what the tape records instead of generated code it refuses
    generic = getattr(function, "generic_function", None)
    if callable(generic) and getattr(function, "mode", None) != "tape":
        try:
            target = function = generic()  # a transform: differentiate the code it generated
        except S2SGradError:
            if not tape:
                raise
            return _tape_call(function, args, kwargs)  # mode="auto" inside: the tape's turn
        if getattr(transform, "bound_self", None) is not None:  # grad(model.loss): its
            bound_self = (transform.bound_self,)  # generated code takes self first
    elif callable(generic) and not tape:  # made with mode="tape": it has no generated code
        raise UnsupportedError(
            f"{_user_origin()}: a derivative made with mode='tape' is called here, and has "
            "no source to transform; use mode='auto' or mode='tape' to differentiate it"
        )
    if isinstance(function, types.MethodType):
        bound_self, target = (function.__self__,), function.__func__
    elif not isinstance(function, types.FunctionType) and callable(function):
        call = type(function).__call__
        if isinstance(call, types.FunctionType):  # a layer object: differentiate its __call__
            bound_self, target = (function,), call
    if bound_self:  # a layer called again: it may read what it stored the first time
        refuse_stored_state(bound_self[0])
    full_args = bound_self + args
    positions = tuple(  # the object a method is called on is constant here: when it
        # holds differentiated values, the caller's transformer refuses the call
        i
        for i, a in enumerate(full_args)
        if i >= len(bound_self) and _differentiable(a)
    )
    if not positions:
        value = function(*args, **kwargs)
        return value, lambda g: tuple(None for _ in args)
    _refuse_library_code(target, function)
    vjp = _generated_vjp(target, full_args, positions, warn=tape, kwargs=kwargs)
    if vjp is not None:
        value, saved = vjp(*full_args, **kwargs)
        pullback = functools.partial(vjp.backward, saved)
        spread = _spread(pullback, positions, full_args, tuple_result=len(positions) > 1)
        return value, lambda g: spread(g)[len(bound_self) :]
    if not tape and not _is_builtin(target):  # list(xs), sorted(xs): the tape only copies
        name = (  # callable(generic): a transform made with mode="tape"
            "a derivative made with mode='tape'" if callable(generic) else _callable_name(target)
        )
        reason = _TAPE_ONLY.get((target, positions), f"{name} has no source to transform")
        if _is_users_class(target):
            reason = _not_a_record(name)
        located = reason.split(": ", 1)[0].rsplit(":", 1)[-1].isdigit()  # "file.py:12: ..."
        if is_public_transform(function) or is_public_transform(target):
            # sg.vmap, sg.jvp called by the user's code: name the user's call, not s2sgrad's
            shown = function if is_public_transform(function) else target
            reason = own_transform_refusal(shown, _user_origin())
            located = True
        elif _of_s2sgrad(target):
            # s2sgrad's other code called by the user's: name the user's call
            reason = (
                f"{_user_origin()}: source transformation cannot differentiate through "
                f"s2sgrad's own {getattr(target, '__qualname__', name)} ({reason})"
            )
            located = True
        where = "" if located else f"{_user_origin()}: "
        raise UnsupportedError(
            f"{where}{reason}; use mode='auto' or mode='tape' to differentiate it"
        )
    name = getattr(target, "__qualname__", type(target).__name__)
    refusal = (
        f"{_user_origin()}: {name}, differentiated on the tape as it was called, stored a "
        "value being differentiated on an object, which the rest of this function (source "
        "transformed) would read as a constant; use mode='tape' for the whole function"
    )
    _refuse_records_on_the_tape(target, full_args, positions)
    _refuse_lazy_calls_on_the_tape(target, name)
    try:
        value, pullback = hooks.tape_vjp(
            target, full_args, kwargs, positions, refuse_stored_state=refusal
        )
    except S2SGradError as error:  # the generated code of a transform, refused on the tape
        twin = getattr(transform, "on_the_tape", None)
        if not (getattr(error, "in_generated_code", False) and callable(twin)):
            raise
        return _tape_call(twin(), args, kwargs)  # the tape records the user's code instead
    _refuse_returned_closures(value, name)
    spread = _spread(pullback, positions, full_args, tuple_result=True)

    def taped_pullback(g):
        if isinstance(value, (str, bytes)):
            raise NonDifferentiableError(
                f"{_user_origin()}: {name} wrote a value being differentiated as text or "
                "bytes, which carry no derivative, yet their value reaches the result (as in "
                "float(str(x))); compute with the value itself, or wrap it in "
                "s2sgrad.stop_gradient if it should count as a constant"
            )
        if isinstance(g, dict) and not isinstance(value, dict):  # by attribute: see objects
            error = UnsupportedError(
                f"{_user_origin()}: an attribute is read of the object {name} returned, "
                "and the tape cannot send its derivative back through the call; use "
                "mode='tape' for the whole function"
            )
            error.whole_function_on_tape = True
            raise error
        return spread(g)[len(bound_self) :]

    return value, taped_pullback


def _refuse_keywords_without_derivative(function: Any, rule: Any, kwargs: dict) -> None:
    """Refuse a call resolved as the code runs (``fn(x, y, dtype=float)`` of an ``fn`` given
    as an argument) with a keyword its rule does not take: the rule, called with it, raised
    a TypeError from inside s2sgrad. The call written out is refused so when transforming."""
    unknown = keywords_without_derivative(rule, kwargs)
    if unknown:
        name = library_name(function) or getattr(function, "__qualname__", repr(function))
        raise NonDifferentiableError(
            f"{_user_origin()}: {name} has no derivative with the keyword {unknown[0]}=; "
            "compute it without that keyword (np.where(mask, x, 0) for a where= mask, say), "
            "or wrap the value in s2sgrad.stop_gradient(...) if it needs none"
        )


def _refuse_lazy_calls_on_the_tape(target: Any, name: str) -> None:
    """Refuse to tape, as one call, a generator function (or an ``async`` one) the generated
    code calls: what it yields is computed only as it is read, after the call was recorded.
    Mode "auto" tapes the whole function instead, where each value is recorded as it is
    read (``sum(squares(x))`` of a ``def squares(v): yield from (e**2 for e in v)``)."""
    function = getattr(target, "__func__", target)
    if not (
        inspect.isgeneratorfunction(function)
        or inspect.iscoroutinefunction(function)
        or inspect.isasyncgenfunction(function)
    ):
        return
    error = UnsupportedError(
        f"{_user_origin()}: {name} yields its values one at a time, computed only when they "
        "are read, which the code generated here cannot follow; return them instead (a list, "
        "or np.stack of them), or use mode='tape'"
    )
    error.whole_function_on_tape = True
    raise error


def _refuse_records_on_the_tape(target: Any, args: tuple, positions: tuple) -> None:
    """Refuse a call run on the tape that is given an object made of values being
    differentiated, a record (``runtime/records.py``): ``vars(p)``, ``sorted([p, q])``,
    ``object.__getattribute__(p, "w")``. The tape watches arrays and containers, not an
    object's attributes, so what the call reads of them would be constants. Mode "auto"
    tapes the whole function, where the attributes are the tape's own values."""
    found = next((r for i in positions for r in _records_in(args[i])), None)
    if found is None:
        return
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    error = UnsupportedError(
        f"{_user_origin()}: {name} is given a {type(found).__qualname__} holding values "
        "being differentiated, and would read its attributes without naming them, where no "
        "derivative follows; read them by name (p.w), or use mode='auto' or mode='tape'"
    )
    error.whole_function_on_tape = True
    raise error


def _records_in(value: Any, depth: int = 0):
    """The record objects (``runtime/records.py``) in ``value``, inside lists, tuples and
    dicts (a few levels deep)."""
    if is_record_instance(value):
        if registered_node(value) is None or not _all_state_in_fields(value):
            yield value  # (the tape watches a dataclass's fields: it rebuilds one of them)
    elif depth < 4 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _records_in(item, depth + 1)
    elif depth < 4 and isinstance(value, dict):
        for item in value.values():
            yield from _records_in(item, depth + 1)


def _refuse_returned_closures(value: Any, name: str) -> None:
    """Refuse a function (a closure over the arguments, say) that a call differentiated on
    the tape returns: the derivative of what it holds cannot come back through the call,
    so a later call of it would take those values for constants."""
    if not any(holds_values(f) and not _made_by_s2sgrad(f) for f in _callables_in(value)):
        return
    error = UnsupportedError(
        f"{_user_origin()}: {name}, differentiated on the tape as it was called, returned a "
        "function that holds values of its own (a closure), whose derivative cannot come "
        "back through the call; call the function that makes it by its name, or use "
        "mode='tape' for the whole function"
    )
    error.whole_function_on_tape = True
    raise error


def _is_users_class(target: Any) -> bool:
    """Whether ``target`` is a class of the user's (not a builtin's, NumPy's or s2sgrad's)."""
    module = getattr(target, "__module__", None) or ""
    return isinstance(target, type) and module.split(".")[0] not in (
        "builtins",
        "numpy",
        "s2sgrad",
        "collections",
        "types",
    )


def _not_a_record(name: str) -> str:
    """Why a class of the user's called with values being differentiated is refused."""
    return (
        f"{name}(...) makes an object holding values being differentiated, but its class "
        "does more than store what it is given (its __init__ or __post_init__ computes, or "
        "a method stores on the object or hands it on), which source transformation does "
        "not follow"
    )


def _of_s2sgrad(target: Any) -> bool:
    """Whether ``target`` is s2sgrad's own library code (``sg.vmap``, ``sg.jacobian``), not
    a class or function the generated code defines as the user's function did."""
    module = getattr(target, "__module__", None) or ""
    return module.startswith("s2sgrad.") and module != _GENERATED


def _callable_name(target: Any) -> str:
    """``target``'s qualified name; for a class or function the user's function defines
    (which the generated code defines again, under the derivative's name), its own name."""
    name = getattr(target, "__qualname__", type(target).__name__)
    if getattr(target, "__module__", None) == _GENERATED:
        return f"{name.rsplit('.', 1)[-1]} (defined inside the function being differentiated)"
    return name


_GENERATED = "s2sgrad.generated"  # the module name of generated code (codegen.py)


def _made_by_s2sgrad(function: Any) -> bool:
    """Whether ``function`` is s2sgrad's own or generated code's (a pullback, a
    checkpointed loop's step), which carries what it needs as arguments."""
    module = getattr(function, "__module__", None) or ""
    return (
        module.startswith("s2sgrad")
        or getattr(function, "__s2sgrad_generated__", None) is not None
        or getattr(function, _PULLBACK_MARK, False)
        or getattr(getattr(function, "__func__", None), "__s2sgrad_generated__", None) is not None
    )


def _tape_call(function: Any, args: tuple, kwargs: dict) -> tuple[Any, Any]:
    """``function(*args, **kwargs)`` and its pullback, all on the tape."""
    positions = tuple(i for i, a in enumerate(args) if _differentiable(a))
    _refuse_records_on_the_tape(function, args, positions)
    value, pullback = hooks.tape_vjp(function, args, kwargs, positions)
    return value, _spread(pullback, positions, args, tuple_result=True)


# packages whose functions s2sgrad differentiates only by their rules, never by their code
_RULE_ONLY_PACKAGES = frozenset({"numpy", "scipy"})


def _refuse_library_code(target: Any, function: Any) -> None:
    """Refuse a call of NumPy's or SciPy's code that has no rule (``np.vectorize(f)(x)``):
    its source is not the user's program, and the tape would fail inside it."""
    module = getattr(target, "__module__", None) or ""
    if module.split(".")[0] not in _RULE_ONLY_PACKAGES:
        return
    name = library_name(function) or library_name(type(function))  # np.vectorize(f) objects
    if name is None:
        name = getattr(function, "__qualname__", None) or type(function).__qualname__
        name = f"{name} (from {module})"
    raise NonDifferentiableError(
        f"{_user_origin()}: {name} has no derivative rule, so a value being "
        "differentiated cannot go through it; write the computation with NumPy array "
        "functions, or give it a rule with @s2sgrad.derivative(of=...)"
    )


def _is_builtin(function: Any) -> bool:
    name = getattr(function, "__name__", None)
    return name is not None and getattr(builtins, name, None) is function


def _generated_vjp(target, full_args, positions, warn, kwargs=None):
    key = (target, positions)
    if key in _TAPE_ONLY or not isinstance(target, types.FunctionType):
        return None
    try:
        names, vararg = positional_parameters(target), vararg_name(target)
        if positions[-1] >= len(names) and vararg is None:
            return None
        # an argument *args takes is differentiated as "args[1]"
        wrt = tuple(
            names[i] if i < len(names) else f"{vararg}[{i - len(names)}]" for i in positions
        )
        containers = frozenset(
            names[i]
            for i in positions
            if i < len(names) and isinstance(full_args[i], (dict, list, tuple))
        )
        derived = hooks.derivative(target, wrt, "vjp", containers=containers, dynamic=warn)
        refuse_a_logging_callee(target, _user_origin())
    except (S2SGradError, ValueError, TypeError) as error:
        _TAPE_ONLY[key] = str(error)
        if not warn or (getattr(target, "__module__", None) or "").startswith("s2sgrad."):
            return None  # s2sgrad's own code (a rule called, not inlined): no news to the user
        warn_at_caller(
            f"{error} -- differentiating {getattr(target, '__qualname__', target)} with the "
            "tape when it is called",
            FallbackWarning,
        )
        return None
    _refuse_updated_arguments(target, derived, full_args, kwargs or {})
    return derived.function


def _refuse_updated_arguments(
    target: Any, derived: Any, args: tuple, kwargs: dict, arrays_only: bool = False
) -> None:
    """Refuse a function called at run time that changes an argument in place: its
    derivative works on a copy, so the caller, transformed without knowing the call changes
    its array, would go on with the array as it was (a silently wrong derivative).
    ``arrays_only``: refuse only a change of an array (forward mode follows a list's)."""
    updated = sorted(
        name
        for name in getattr(derived, "updated_arguments", ())
        if _changeable(_argument_named(target, name, args, kwargs), arrays_only)
    )
    if not updated:
        return
    name = getattr(target, "__qualname__", type(target).__name__)
    error = UnsupportedError(
        f"{_user_origin()}: {name}, called here as a function known only when it runs (from "
        f"a list, an argument or an object), changes its argument {', '.join(updated)} in "
        "place, which the code around the call cannot follow; call it by its name, return "
        "the new array instead, or use mode='tape'"
    )
    error.whole_function_on_tape = True  # mode="auto": the tape follows the change
    raise error


def _argument_named(target: Any, name: str, args: tuple, kwargs: dict) -> Any:
    """The value ``target(*args, **kwargs)`` gives its parameter ``name`` (None if none)."""
    if name in kwargs:
        return kwargs[name]
    names = positional_parameters(target)
    return args[names.index(name)] if name in names and names.index(name) < len(args) else None


def _changeable(value: Any, arrays_only: bool) -> bool:
    """Whether ``value`` is an array (or, unless ``arrays_only``, a list, dict or set) a
    call may change in place, which its derivative does not: a number, a string or None
    ``x += v`` binds anew, and an object's attributes (a layer's state) the derivative
    changes as the call does."""
    if isinstance(value, hooks.TapeValue):  # an array on the tape (a derivative taped)
        return True
    if arrays_only:
        return isinstance(value, np.ndarray)
    return isinstance(value, (np.ndarray, list, dict, set))


def _checked(derivative, pullback, args):
    """``pullback``, its cotangents checked against the shapes of ``args``."""

    def checked(g):
        cotangents = pullback(g)
        given = cotangent_tuple(derivative, cotangents, args)
        check_cotangent_shapes(derivative, given, args)
        return cotangents

    return checked


def _spread(pullback, positions, args, tuple_result):
    """Turn a pullback over some arguments into one over every positional argument."""

    def spread(g):
        cotangents = pullback(g)
        if tuple_result is False or (tuple_result is None and not isinstance(cotangents, tuple)):
            cotangents = (cotangents,)
        cotangents = tuple(cotangents)
        if tuple_result is None:  # a user's pullback: one entry per argument
            cotangents = cotangents + (None,) * (len(args) - len(cotangents))
            chosen = dict(enumerate(cotangents))
        else:
            chosen = dict(zip(positions, cotangents))
        return tuple(
            (_object_tangent(a, zeros_like_value(a)) if chosen.get(i) is None else chosen[i])
            if _differentiable(a)
            else None
            for i, a in enumerate(args)
        )

    setattr(spread, _PULLBACK_MARK, True)
    return spread


def _differentiable(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if is_inexact(value):  # a float or complex number or array
        return True
    if isinstance(value, np.ndarray):
        return False
    if isinstance(value, (dict, list, tuple)):  # (index, value) pairs count, say
        items = value.values() if isinstance(value, dict) else value
        return any(_differentiable(v) for v in items)  # a cotangent for what can carry one
    node = registered_node(value)  # a dataclass, a registered pytree class
    if node is not None:
        return any(_differentiable(v) for v in node[0])
    if is_record_instance(value):  # an object made of the values it was given
        return any(_differentiable(v) for v in getattr(value, "__dict__", {}).values())
    return isinstance(value, hooks.TapeValue)


def transformed_jvp(function: Any, tangents: tuple, *args: Any, **kwargs: Any):
    """Like :func:`dynamic_jvp`, but never uses the tape (``mode="s2s"``).

    Example::

        value, tangent = transformed_jvp(layer, (dx,), x)
    """
    return _dispatch_jvp(function, tangents, args, kwargs, tape=False)


def dynamic_jvp(function: Any, tangents: tuple, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """Forward mode for a call resolved at run time: ``(value, tangent)``.

    ``tangents`` has one entry per positional argument (zeros for constants).

    Example::

        value, tangent = dynamic_jvp(layer, (dx,), x)
    """
    result = _dispatch_jvp(function, tangents, args, kwargs, tape=True)
    refuse_overriding_container(result[0])  # the code reads its items as a plain list's
    return result


# The pullbacks of calls dispatched at run time (``dynamic_vjp``'s) that a call in forward
# mode returned (the generated gradient saved one): each holds values being
# differentiated whose tangents are lost with it, so a later derivative calling it would
# miss how its result moves with them. That call is refused (mode="auto" then takes the
# whole function to the tape, which follows the values into the pullback). Pullbacks that
# carry what they need as arguments (a checkpointed loop's) are not marked.
_UNTRACKED: weakref.WeakSet = weakref.WeakSet()
_PULLBACK_MARK = "__s2sgrad_dispatched_pullback__"


def _note_untracked(value: Any, tangents: tuple) -> None:
    pullbacks = [leaf for leaf in _callables_in(value) if getattr(leaf, _PULLBACK_MARK, False)]
    if pullbacks and any(_moves(t) for t in tangents):  # else it holds no moving value
        for pullback in pullbacks:
            with contextlib.suppress(TypeError):  # not weakly referenced: not recognised
                _UNTRACKED.add(pullback)


def _callables_in(value: Any, depth: int = 0):
    node = registered_node(value) if depth < 8 and callable(value) else None
    if node is not None and _all_state_in_fields(value):
        # a callable dataclass (a model with __call__; its gradient, too, is one): what
        # it holds is its fields, whose derivative comes back through them
        for item in node[0]:
            yield from _callables_in(item, depth + 1)
    elif callable(value) and not isinstance(value, (type, np.ndarray)):
        yield value
    elif depth < 8 and isinstance(value, (tuple, list)):
        for item in value:
            yield from _callables_in(item, depth + 1)
    elif depth < 8 and isinstance(value, dict):
        for item in value.values():
            yield from _callables_in(item, depth + 1)


def _all_state_in_fields(value: Any) -> bool:
    """Whether everything a pytree node ``value`` holds is among its children: a registered
    class's flatten says so; a dataclass instance holds no attribute beyond its fields."""
    if not dataclasses.is_dataclass(value):
        return True
    fields = {field.name for field in dataclasses.fields(value)}
    return set(getattr(value, "__dict__", {})) <= fields


def _refuse_untracked(args: tuple, kwargs: dict) -> None:
    if not any(f in _UNTRACKED for f in _callables_in((args, kwargs))):
        return
    raise UnsupportedError(
        f"{_user_origin()}: forward mode (jvp, hvp, hessian) over this gradient calls a "
        "function that an earlier step made from the values being differentiated (a "
        "pullback of a call resolved at run time), and forward mode cannot follow those "
        "values into it; use mode='tape'"
    )


def _dispatch_jvp(function, tangents, args, kwargs, tape: bool):
    if _UNTRACKED:
        _refuse_untracked((function, *args), kwargs)
    value, tangent = _dispatch_jvp_of(function, tangents, args, kwargs, tape)
    _note_untracked(value, tangents)
    return value, tangent


def _moves(tangent: Any) -> bool:
    """Whether a tangent may be other than zero (a value being differentiated)."""
    if tangent is None:
        return False
    if isinstance(tangent, (tuple, list)):
        return any(_moves(t) for t in tangent)
    if isinstance(tangent, dict):
        return any(_moves(t) for t in tangent.values())
    try:
        return bool(np.any(tangent))
    except Exception:  # not a number: say it may move
        return True


def _dispatch_jvp_of(function, tangents, args, kwargs, tape: bool):
    record = _record_call(function)
    if record is not None:
        return record_jvp(record[0], tuple(tangents), args, kwargs, record[1])
    if function in _REVERSE_DISPATCH:
        return _forward_over_dispatch(function, tangents, args, kwargs, tape)
    if isinstance(function, PullbackWithTangent) and len(args) == 1 and not kwargs:
        return function.tangent_of_call(args[0], tangents[0])
    if is_partial(function):  # the bound arguments are constants of the call
        target, full_args, full_kwargs, _ = partial_call(function, args, kwargs)
        zeros = tuple(zeros_like_value(a) for a in function.args)
        return _dispatch_jvp_of(target, zeros + tuple(tangents), full_args, full_kwargs, tape)
    if isinstance(function, KeywordsAtTheEnd):
        try:
            target, bound_args, bound_kwargs, picks = by_position(function, args, kwargs)
        except UnsupportedError:
            if not tape:
                raise
            positions = tuple(i for i, a in enumerate(args) if _differentiable(a))
            return tape_jvp(function, args, tangents, positions, kwargs)
        moving = [zeros_like_value(a) for a in bound_args]
        for tangent, i in zip(tangents, picks):
            moving[i] = tangent
        return _dispatch_jvp(target, tuple(moving), bound_args, bound_kwargs, tape)
    if function is vjp_call:
        # A rule called, not inlined: differentiate the rule's own code, by source in
        # mode="s2s" (in mode="auto" the tape takes over where that fails)
        primitive, *rest = args
        value, tangent = _called_rule_jvp(primitive, tangents[1:], tuple(rest), kwargs, tape)
        count = len(rest) - 2  # the primitive's arguments, after g and ans
        if isinstance(value, tuple) and isinstance(tangent, list):
            tangent = tuple(tangent)  # the tangent of a tuple comes back as a list
        value, tangent = per_argument(value, count), per_argument(tangent, count)
        tangent = tuple(
            zeros_like_value(v) if t is None and v is not None else t
            for v, t in zip(value, tangent)
        )
        return value, tangent
    rule = get_rule(function)
    if rule is not None and rule.custom is not None:
        if rule.custom_jvp is None:
            raise no_forward_derivative(function)
        if kwargs:  # sg.checkpoint(f)(x, s=3.0): the jvp takes primals by position only
            # (given none, it would run with the default s, a silently wrong value)
            args = primals_in_position(function, args, kwargs)
            tangents = (*tangents, *(zeros_like_value(a) for a in args[len(tangents) :]))
        return rule.custom_jvp(args, tangents)
    if rule is not None and rule.jvp is not None:
        value = function(*args, **kwargs)
        total = None
        for index, (argument, tangent) in enumerate(zip(args, tangents)):
            if not _differentiable(argument):
                continue
            try:
                entries = per_argument(rule.jvp(tangent, value, *args, **kwargs), len(args))
            except S2SGradError:
                raise
            except (ValueError, TypeError, IndexError):  # an entry for another argument,
                # computed with this one's tangent (inlined code computes only its own)
                return _jvp_through_the_vjp_rule(function, args, tangents, kwargs)
            entry = entries[index]
            if entry is not None:  # a list of tangents (meshgrid's) adds entry by entry
                total = add_cotangents(total, entry)
        return value, zeros_like_value(value) if total is None else total
    if rule is not None:
        value = function(*args, **kwargs)
        return value, zeros_like_value(value)
    if is_fold(function, args, kwargs):  # functools.reduce(f, items): call by call
        return fold_jvp(_dispatch_jvp, tangents, args, tape)
    if function is dict and len(args) == 1 and not kwargs:  # {k: v - lr * g[k] for ...}
        return _dict_of_pairs_jvp(args[0], tangents[0])
    if _keys_of_a_dict(function, args):  # for k in sorted(params): the keys, constants
        value = function(*args, **kwargs)
        return value, zeros_like_value(value)
    bound_self: tuple = ()
    target = function
    if isinstance(function, types.MethodType):
        bound_self, target = (function.__self__,), function.__func__
    elif getattr(function, "bound_self", None) is not None and callable(
        getattr(function, "unbound", None)
    ):  # grad(model.loss): its generated code takes self first
        bound_self, target = (function.bound_self,), function.unbound()
    elif not isinstance(function, types.FunctionType) and callable(function):
        call = type(function).__call__
        if isinstance(call, types.FunctionType):  # a layer object: its __call__
            bound_self, target = (function,), call
    full_args = bound_self + args
    full_tangents = tuple(_object_tangent(a, zeros_like_value(a)) for a in bound_self)
    full_tangents += tuple(tangents)
    positions = tuple(  # the object a method is called on is constant here: when it
        # holds differentiated values, the caller's transformer refuses the call
        i
        for i, a in enumerate(full_args)
        if i >= len(bound_self) and _differentiable(a)
    )
    if not positions:
        value = function(*args, **kwargs)
        return value, zeros_like_value(value)
    _refuse_library_code(target, function)  # np.vectorize(f)(x): not NumPy's code's source
    if not tape and is_public_transform(function):  # sg.jvp inside: its code is no news
        raise UnsupportedError(
            f"{own_transform_refusal(function, _user_origin())}; use mode='auto' or "
            "mode='tape' to differentiate it"
        )
    try:
        names, vararg = positional_parameters(target), vararg_name(target)
        if positions[-1] >= len(names) and vararg is None:
            raise TypeError(f"{len(full_args)} arguments for {len(names)} parameters")
        # an argument *args takes is differentiated as "args[1]"
        names += [f"{vararg}[{i}]" for i in range(len(full_args) - len(names))]
        generated = hooks.derivative(target, tuple(names[i] for i in positions), "jvp")
        refuse_a_logging_callee(target, _user_origin())
    except (S2SGradError, ValueError, TypeError) as error:
        if not tape and not _is_builtin(target):  # sorted(xs): the tape only copies, as
            reason = str(error)  # reverse mode's call of it (``_dispatch``) does
            name = _callable_name(target)
            if not isinstance(error, S2SGradError):  # a builtin: no signature, no source
                reason = f"{name} has no source to transform ({reason})"
            if _is_users_class(target):
                reason = f"{_user_origin()}: {_not_a_record(name)}"
            if is_public_transform(function) or is_public_transform(target):
                # sg.vmap called by the user's code: name the user's call, as reverse mode
                shown = function if is_public_transform(function) else target
                reason = own_transform_refusal(shown, _user_origin())
            elif _of_s2sgrad(target):
                reason = (
                    f"{_user_origin()}: source transformation cannot differentiate through "
                    f"s2sgrad's own {name} ({reason})"
                )
            raise UnsupportedError(
                f"{reason}; use mode='auto' or mode='tape' to differentiate it"
            ) from None
        name = getattr(target, "__qualname__", type(target).__name__)
        refusal = (  # as in reverse mode (_dispatch): the tangent would stay behind
            f"{_user_origin()}: {name}, differentiated on the tape as it was called, stored "
            "a value being differentiated on an object, which the rest of this function "
            "(source transformed) would read as a constant; use mode='tape' for the whole "
            "function"
        )
        _refuse_records_on_the_tape(target, full_args, positions)
        _refuse_lazy_calls_on_the_tape(target, name)
        return tape_jvp(target, full_args, full_tangents, positions, kwargs, refusal)
    _refuse_updated_arguments(target, generated, full_args, kwargs, arrays_only=True)
    keywords = {generated.tangent_names[names[i]]: full_tangents[i] for i in positions}
    return generated.function(*full_args, **kwargs, **keywords)


def _forward_over_dispatch(dispatcher, tangents, args, kwargs, tape: bool):
    """Forward mode over ``dispatcher(function, *args)`` (a gradient calling a function
    resolved at run time): its value and pullback, and their tangents; the pullback carries
    the tangents of the values it was made from (:class:`PullbackWithTangent`), so that
    forward mode over its later call follows them."""
    if dispatcher in (method_vjp, transformed_method_vjp):
        obj, name, *rest = args
        if _called_as_function(obj, name):  # no cotangent for the function itself
            made = _pullback_with_tangent(
                plain_callable(obj), tuple(rest), tuple(tangents[2:]), kwargs, tape
            )
            if made is None:
                raise _no_derivative_over_dispatch(
                    "forward mode (jvp, hvp, hessian) over the gradient"
                )
            value, tangent, inner = made

            def call_tangent(g, dg):
                cotangents, moved = inner.tangent_of_call(g, dg)
                return (None, *cotangents), (None, *moved)

            pullback = PullbackWithTangent(lambda g: (None, *inner(g)), call_tangent)
            return (value, pullback), (tangent, None)
        function = getattr(type(obj), name, None)
        if (
            type(obj) is dict
            or not isinstance(function, types.FunctionType)
            or name in getattr(obj, "__dict__", {})
        ):
            raise _no_derivative_over_dispatch("forward mode (jvp, hvp, hessian) over the gradient")
        inner_args, inner_tangents = (
            (obj, *rest),
            (_object_tangent(obj, tangents[0]), *tangents[2:]),
        )
    else:
        function, *inner_args = args
        inner_tangents = tangents[1:]
        rule = get_rule(function)
        if rule is not None and rule.custom is None and rule.vjp is not None:
            _refuse_keywords_without_derivative(function, rule, kwargs)  # as _dispatch does
    made = _pullback_with_tangent(function, tuple(inner_args), tuple(inner_tangents), kwargs, tape)
    if made is None:
        raise _no_derivative_over_dispatch("forward mode (jvp, hvp, hessian) over the gradient")
    value, tangent, pullback = made
    return (value, pullback), (tangent, None)


def _pullback_with_tangent(function, args: tuple, tangents: tuple, kwargs: dict, tape: bool):
    """``(value, tangent, pullback)`` of ``function(*args, **kwargs)`` as :func:`_dispatch`
    differentiates it, the pullback a :class:`PullbackWithTangent`; ``None`` where the
    pullback's dependence on the arguments is not known (the tape's, a custom rule's)."""
    record = _record_call(function)
    if record is not None:  # linear in the cotangent, whatever the arguments
        value, tangent = record_jvp(record[0], tuple(tangents), args, kwargs, record[1])
        pullback = _record_pullback(record[0], args, record[1])
        return (
            value,
            tangent,
            PullbackWithTangent(pullback, lambda g, dg: (pullback(g), pullback(dg))),
        )
    if isinstance(function, KeywordsAtTheEnd):
        return _named_pullback_with_tangent(function, args, tangents, kwargs, tape)
    if is_partial(function):
        return _partial_pullback_with_tangent(function, args, tangents, kwargs, tape)
    rule = get_rule(function)
    if rule is not None and rule.custom is not None:
        return None
    if rule is not None and rule.vjp is not None:
        value, tangent = _dispatch_jvp(function, tangents, args, kwargs, tape)

        def rule_pullback(g):
            return per_argument(rule.vjp(g, value, *args, **kwargs), len(args))

        def rule_tangent_of_call(g, dg):
            primals, moving = (function, g, value, *args), (None, dg, tangent, *tangents)
            return _dispatch_jvp_of(vjp_call, moving, primals, kwargs, tape)

        return value, tangent, PullbackWithTangent(rule_pullback, rule_tangent_of_call)
    if rule is not None or _keys_of_a_dict(function, args):  # no derivative flows through
        value = function(*args, **kwargs)
        cotangents = tuple(zeros_like_value(a) if _differentiable(a) else None for a in args)
        return (
            value,
            zeros_like_value(value),
            PullbackWithTangent(lambda g: cotangents, lambda g, dg: (cotangents, cotangents)),
        )
    if is_fold(function, args, kwargs):
        return fold_pullback_with_tangent(_pullback_with_tangent, tangents, args, tape)
    if function in _REVERSE_DISPATCH or callable(getattr(function, "generic_function", None)):
        return None
    return _generated_pullback_with_tangent(function, args, tangents, kwargs, tape)


def _named_pullback_with_tangent(function, args, tangents, kwargs, tape: bool):
    """:func:`_pullback_with_tangent` of ``f(*args, w=y)``, ``y`` passed last."""
    target, bound_args, bound_kwargs, picks = by_position(function, args, kwargs)
    moving = [zeros_like_value(a) for a in bound_args]
    for tangent, i in zip(tangents, picks):
        moving[i] = tangent
    made = _pullback_with_tangent(target, bound_args, tuple(moving), bound_kwargs, tape)
    if made is None:
        return None
    value, tangent, pullback = made

    def named_tangent_of_call(g, dg):
        cotangents, moved = pullback.tangent_of_call(g, dg)
        return picked(cotangents, picks), picked(moved, picks)

    named = PullbackWithTangent(lambda g: picked(pullback(g), picks), named_tangent_of_call)
    return value, tangent, named


def _partial_pullback_with_tangent(function, args, tangents, kwargs, tape: bool):
    """:func:`_pullback_with_tangent` of a ``functools.partial``: its function's, the bound
    arguments constants (zero tangents, their cotangents dropped)."""
    target, full_args, full_kwargs, bound = partial_call(function, args, kwargs)
    zeros = tuple(zeros_like_value(a) for a in function.args)
    made = _pullback_with_tangent(target, full_args, zeros + tuple(tangents), full_kwargs, tape)
    if made is None:
        return None
    value, tangent, pullback = made

    def partial_tangent_of_call(g, dg):
        cotangents, moved = pullback.tangent_of_call(g, dg)
        return tuple(cotangents)[bound:], tuple(moved)[bound:]

    unbound = PullbackWithTangent(lambda g: tuple(pullback(g))[bound:], partial_tangent_of_call)
    return value, tangent, unbound


def _generated_pullback_with_tangent(function, args, tangents, kwargs, tape: bool):
    """:func:`_pullback_with_tangent` of a function with source: forward mode over its
    generated VJP, then over that VJP's backward pass when the pullback is called."""
    bound_self: tuple = ()
    target = function
    if isinstance(function, types.MethodType):
        bound_self, target = (function.__self__,), function.__func__
    elif not isinstance(function, types.FunctionType) and callable(function):
        call = type(function).__call__
        if isinstance(call, types.FunctionType):
            bound_self, target = (function,), call
    if not isinstance(target, types.FunctionType):
        return None
    if bound_self:
        refuse_stored_state(bound_self[0])
    full_args = bound_self + args
    positions = tuple(
        i for i, a in enumerate(full_args) if i >= len(bound_self) and _differentiable(a)
    )
    if not positions:
        value = function(*args, **kwargs)
        nothing = tuple(None for _ in args)
        return (
            value,
            zeros_like_value(value),
            PullbackWithTangent(lambda g: nothing, lambda g, dg: (nothing, nothing)),
        )
    _refuse_library_code(target, function)
    vjp = _generated_vjp(target, full_args, positions, warn=tape, kwargs=kwargs)
    if vjp is None:
        return None
    full_tangents = tuple(_object_tangent(a, zeros_like_value(a)) for a in bound_self)
    full_tangents += tuple(tangents)
    (value, saved), (tangent, saved_tangent) = _dispatch_jvp(
        vjp, full_tangents, full_args, kwargs, tape
    )

    def spread(cotangents):
        given = _spread(lambda _: cotangents, positions, full_args, len(positions) > 1)
        return given(None)[len(bound_self) :]

    def generated_pullback(g):
        return spread(vjp.backward(saved, g))

    def generated_tangent_of_call(g, dg):
        cotangents, moved = _dispatch_jvp(vjp.backward, (saved_tangent, dg), (saved, g), {}, tape)
        return spread(cotangents), spread(moved)

    pullback = PullbackWithTangent(generated_pullback, generated_tangent_of_call)
    return value, tangent, pullback


# builtins that read only a dict's keys when given one: sorted(d), list(d), reversed(d)
_KEYS_READERS = (sorted, list, tuple, set, frozenset, reversed, iter, len)


def _keys_of_a_dict(function: Any, args: tuple) -> bool:
    """Whether ``function(*args)`` reads only the keys of a dict (``sorted(params)``): no
    value being differentiated reaches its result (a key is hashable, never an array)."""
    return (
        len(args) == 1
        and type(args[0]) is dict
        and any(function is reader for reader in _KEYS_READERS)
    )


def _dict_of_pairs_jvp(items: Any, tangent: Any) -> tuple[dict, Any]:
    """``dict(items)`` (a dict comprehension's list of ``(key, value)`` pairs, or a dict)
    and its tangent, as ``copied_dict``'s rule gives it: each key with its value's tangent.

    Example::

        _dict_of_pairs_jvp([("w", x)], [(0.0, dx)])  # ({'w': x}, {'w': dx})
    """
    mapping = items if isinstance(items, dict) else list(items)
    value = dict(mapping)
    if tangent is None:
        return value, zeros_like_value(value)
    return value, copied_dict(tangent) if isinstance(mapping, dict) else dict_of_pairs(
        tangent, mapping
    )


def _called_rule_jvp(primitive, tangents, args, kwargs, tape: bool):
    """Forward mode over ``vjp_call(primitive, g, ans, *args)``: the JVP of the rule's code."""
    try:
        return _dispatch_jvp(rule_function(primitive, "vjp"), tangents, args, kwargs, tape=tape)
    except UnsupportedError as error:
        if tape:
            raise
        name = getattr(primitive, "__name__", None) or repr(primitive)
        raise UnsupportedError(
            f"{_user_origin()}: forward mode (jvp, hvp, hessian) over the gradient calls the "
            f"rule of {name} at run time, whose code source transformation cannot "
            f"differentiate: {error}"
        ) from None


def _no_derivative_over_dispatch(what: str):
    """A derivative of a reverse-mode call dispatched at run time would differentiate its
    pullback wrt the cotangent only, missing how the pullback depends on the arguments."""
    return UnsupportedError(
        f"{_user_origin()}: {what} of a call resolved at run time (a method, a function from "
        "a list or an argument) is not supported by source transformation; use mode='auto' "
        "or mode='tape', or call the function by its name"
    )


def _user_origin() -> str:
    """The user's file:line of the function whose generated code is running now."""
    return running_origin()


def _jvp_through_the_vjp_rule(function, args, tangents, kwargs):
    """``(value, J t)`` of a primitive whose JVP rule cannot be evaluated one argument at a
    time: the transpose of its VJP rule, recorded on the tape for this one call."""
    positions = tuple(
        i for i, (a, t) in enumerate(zip(args, tangents)) if t is not None and _differentiable(a)
    )
    return tape_jvp(function, args, tangents, positions, kwargs)


def tape_jvp(target, args, tangents, positions, kwargs, refuse_stored_state=None):
    """J v on the tape: the gradient, wrt the cotangent, of <pullback(cotangent), v>.

    The pullback runs with :func:`backward_hooks_apply` false: forward mode has no backward
    pass, so the hooks of ``sg.with_derivative`` leave its tangents alone (as the
    transformer's forward mode does). ``refuse_stored_state``: the refusal to raise if
    ``target`` stored a value being differentiated on an object, or returned an object
    holding one (a call from generated code, which would read it as a constant)."""

    value, pullback = hooks.tape_vjp(
        target, args, kwargs, positions, refuse_stored_state=refuse_stored_state
    )
    if isinstance(value, (bool, int)):  # a flag, a count, id(x): constant, zero tangent
        return value, zeros_like_value(value)
    if isinstance(value, (type, str, bytes, type(None))):  # type(x), text
        return value, None
    _refuse_returned_closures(value, getattr(target, "__qualname__", type(target).__name__))

    def paired(g):
        total = 0.0
        token = _FORWARD_PULLBACK.set(True)
        try:
            cotangents = pullback(g)
        finally:
            _FORWARD_PULLBACK.reset(token)
        for cotangent, i in zip(cotangents, positions):
            total = total + _inner(cotangent, tangents[i])
        return total

    zeros = as_gradient(None, value)  # of the output's structure (a dataclass's too)
    _, transpose = hooks.tape_vjp(paired, (zeros,), {}, (0,))
    return value, transpose(1.0)[0]


_FORWARD_PULLBACK = contextvars.ContextVar("forward_pullback", default=False)


def backward_hooks_apply() -> bool:
    """Whether a backward pass runs now for a gradient (so ``sg.with_derivative``'s hooks
    apply), not inside the tape's forward mode, which transposes a pullback.

    Example::

        backward_hooks_apply()  # True outside sg.jvp on the tape
    """
    return not _FORWARD_PULLBACK.get()


def _inner(cotangent, tangent):
    """The sum of elementwise products of two values of one structure (dicts, lists and
    tuples of arrays); a missing or ``None`` part counts as zero."""
    if cotangent is None or tangent is None:
        return 0.0
    if isinstance(cotangent, dict):
        return sum((_inner(value, tangent.get(key)) for key, value in cotangent.items()), 0.0)
    if isinstance(cotangent, (list, tuple)):
        return sum((_inner(c, t) for c, t in zip(cotangent, tangent)), 0.0)
    if isinstance(tangent, dict):  # a record's tangent by attribute (runtime/records.py)
        return sum((_inner(getattr(cotangent, k, None), t) for k, t in tangent.items()), 0.0)
    node = registered_node(cotangent)  # a dataclass: one of its class
    if node is not None:
        return sum((_inner(c, t) for c, t in zip(node[0], registered_node(tangent)[0])), 0.0)
    return np.sum(cotangent * tangent)


#: Calls of rules and of callees resolved at run time: differentiated when they run (see
#: ``_dispatch_jvp``), never by transforming their source, which the compiler refuses.
RUN_TIME_CALLS = frozenset(
    {
        vjp_call,
        jvp_call,
        jvp_entry,
        dynamic_vjp,
        transformed_vjp,
        method_vjp,
        transformed_method_vjp,
        dynamic_jvp,
        transformed_jvp,
    }
)
