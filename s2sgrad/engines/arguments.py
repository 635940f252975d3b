"""The arguments of a transformed function: what may be differentiated, and which
parameter each argument is.

Every transform (``api``), the Jacobians (``batching``) and the custom derivatives
(``controls``) check their arguments here before either engine runs. Argument types form
a closed list: what is differentiated must be a float, a NumPy floating scalar or an exact
float ``np.ndarray``, alone or in dicts, lists, tuples and named tuples (:func:`leaf_kind`);
arrays and numbers of types s2sgrad does not understand are refused even as constants.
``wrt`` names an argument by its parameter, or ``"args[1]"`` for one that ``*args`` takes.

Example::

    check_differentiable("x", np.arange(3), f)  # TypeError: ... holds an integer value ...
"""

from __future__ import annotations

import functools
import inspect
import numbers
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from s2sgrad import numpy_signatures
from s2sgrad.errors import UnsupportedError, aux_pair_required
from s2sgrad.numpy_signatures import positional_parameters
from s2sgrad.pytrees import registered_node
from s2sgrad.rules.registry import get_rule
from s2sgrad.running import function_origin
from s2sgrad.runtime import is_dask_array, is_foreign_array, require_aux_pair, zeros_like_value
from s2sgrad.runtime.answering_objects import answers_arithmetic, answers_itself
from s2sgrad.runtime.deep_copies import refuse_custom_deep_copies
from s2sgrad.runtime.lazy_arrays import teach_dask
from s2sgrad.runtime.object_gradients import is_instance_object
from s2sgrad.tape import is_tape_value, value_of

__all__ = [
    "call_method_of",
    "bind_self",
    "bound_arguments",
    "calling_with",
    "check_differentiable",
    "containers_of",
    "first_of",
    "is_container",
    "is_differentiable",
    "leaf_kind",
    "leaves",
    "name_of",
    "ParameterLayout",
    "position_of",
    "positional_name",
    "refuse_answering_arguments",
    "refuse_arithmetic_objects",
    "refuse_array_attribute_names",
    "refuse_complex_for_real",
    "refuse_not_understood",
    "refuse_unknown_constants",
    "require_complex_ready",
    "zeros_for",
]


def calling_with(target, function, args, kwargs, wrt, indices):
    """``target(*args, **kwargs)`` as a function of the ``wrt`` arguments alone, passed
    positionally (the tape watches positional arguments); the others stay as given.

    ``indices`` are the positions of the ``wrt`` arguments (None: keyword-only).
    """
    parameters = list(numpy_signatures.signature(function).parameters.values())

    def call(*values):
        positional, keywords = list(args), dict(kwargs)
        for name, index, value in zip(wrt, indices, values):
            if index is None or (index >= len(positional) and name in kwargs):
                keywords[name] = value
            elif index < len(positional):
                positional[index] = value
            elif parameters[index].kind is inspect.Parameter.POSITIONAL_ONLY:
                while len(positional) < index:  # the defaults of those before it
                    positional.append(parameters[len(positional)].default)
                positional.append(value)
            else:
                keywords[name] = value
        return target(*positional, **keywords)

    return call


def positional_name(function: Callable, index: int) -> str:
    """The name ``wrt`` uses for positional argument ``index``: its parameter's name, or
    ``"args[2]"`` for one that ``*args`` takes (not an identifier, so no parameter's).

    Example::

        positional_name(lambda x, *args: x, 3)  # 'args[2]'
    """
    return ParameterLayout.of(function).name(index)


def position_of(function: Callable, name: str) -> int | None:
    """The position of the argument ``wrt`` names (None for a keyword-only parameter).

    Example::

        position_of(lambda x, *args: x, "args[2]")  # 3
    """
    return ParameterLayout.of(function).position(name)


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class ParameterLayout:
    """A callable's positional parameters and the name of its ``*args``, read from its
    signature once: what the names and positions of ``wrt`` are resolved against (a
    transform reads its function's signature once, not once per argument it names).

    Example::

        layout = ParameterLayout.of(lambda x, *args: x)
        layout.name(3), layout.position("args[2]")  # ('args[2]', 3)
    """

    __slots__ = ("positional", "star")

    def __init__(self, parameters: Iterator[inspect.Parameter] | tuple = ()):
        parameters = tuple(parameters)
        self.positional: list[str] = [p.name for p in parameters if p.kind in _POSITIONAL]
        star = (p.name for p in parameters if p.kind is inspect.Parameter.VAR_POSITIONAL)
        self.star: str | None = next(star, None)

    @classmethod
    def of(cls, function: Callable) -> ParameterLayout:
        """The layout of ``function``'s signature (no parameters where it has none to read,
        as :func:`positional_parameters` and :func:`vararg_name` say)."""
        try:
            return cls(numpy_signatures.parameters(function))
        except (TypeError, ValueError):
            return cls()

    def name(self, index: int) -> str:
        """The name ``wrt`` uses for positional argument ``index``."""
        if index < len(self.positional):
            return self.positional[index]
        return f"{self.star}[{index - len(self.positional)}]"

    def position(self, name: str) -> int | None:
        """The position of the argument ``name`` (as ``wrt`` names it), or None."""
        if name in self.positional:
            return self.positional.index(name)
        star = self.star
        if star is not None and name.startswith(f"{star}[") and name.endswith("]"):
            return len(self.positional) + int(name[len(star) + 1 : -1])
        return None


def first_of(function: Callable) -> Callable:
    """``function`` returning ``(out, aux)``, as a function returning ``out`` that keeps
    the last ``aux`` as its attribute ``aux`` (``has_aux=True`` on the tape).

    Example::

        first = first_of(lambda x: (x * 2, "note"))
        first(1.0)  # 2.0, and first.aux == "note"
    """

    def first(*args, **kwargs):
        result = function(*args, **kwargs)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):  # message made only then
            require_aux_pair(result, aux_pair_required(located_name(function)))
        out, aux = result
        first.aux = aux
        return out

    return first


def bound_arguments(f: Any) -> tuple[Any, tuple, dict]:
    """The Python function under a bound method or a ``functools.partial`` of one, with
    the arguments bound before those of a call and the keywords bound; ``(f, (), {})`` for
    anything else (a library function's partial is differentiated by its rule).

    Example::

        bound_arguments(functools.partial(loss, data=X))  # (loss, (), {'data': X})
        bound_arguments(model.loss)  # (Model.loss, (model,), {})
    """
    if isinstance(f, types.MethodType):
        return f.__func__, (f.__self__,), {}
    if isinstance(f, functools.partial):
        function, args, keywords = bound_arguments(f.func)
        if isinstance(function, types.FunctionType):
            return function, (*args, *f.args), {**keywords, **f.keywords}
    return f, (), {}


def call_method_of(f: Callable) -> Callable:
    """An instance of the user's class with a ``__call__`` of Python code as that bound
    method, whose source the transformer reads; anything else (a function, a library's
    callable, an object with a derivative rule of its own) as it is.

    Example::

        call_method_of(model)  # model.__call__, a bound method
    """
    if type(f) is types.FunctionType:  # the common case, without a static lookup
        return f
    method = inspect.getattr_static(type(f), "__call__", None)
    if (
        isinstance(method, types.FunctionType)
        and not type(f).__module__.startswith("s2sgrad")
        and get_rule(f) is None
    ):
        return types.MethodType(method, f)
    return f


def bind_self(f: Callable, primals: tuple) -> tuple[Callable, tuple]:
    """A bound method as its function and ``self`` followed by the primals.

    Example::

        bind_self(layer.forward, (x,))  # (Layer.forward, (layer, x))
    """
    f = call_method_of(f)
    if isinstance(f, types.MethodType):
        return f.__func__, (f.__self__, *primals)
    bound_self, unbound = getattr(f, "bound_self", None), getattr(f, "unbound", None)
    if bound_self is not None and callable(unbound):
        return unbound(), (bound_self, *primals)  # grad(model.loss): its code takes self
    return f, primals


def is_container(value: Any) -> bool:
    """Whether ``value`` is a dict, list or tuple (differentiated entry by entry).

    Example::

        is_container({"w": w})  # True
    """
    return isinstance(value, (dict, list, tuple))


def leaves(value: Any) -> Iterator[Any]:
    """The values inside dicts, lists, tuples, dataclasses and objects of registered
    pytree classes, recursively.

    Example::

        list(leaves({"a": [1.0, 2.0]}))  # [1.0, 2.0]
    """
    if isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from leaves(v)
    elif (node := registered_node(value)) is not None:  # a dataclass, a registered class
        for v in node[0]:
            yield from leaves(v)
    else:
        yield value


def is_differentiable(value: Any) -> bool:
    """Whether every leaf of ``value`` is a float or complex value s2sgrad differentiates
    (:func:`leaf_kind`).

    Example::

        is_differentiable([1.0, np.ones(2)])  # True
    """
    return all(
        leaf_kind(leaf) in _DIFFERENTIATED
        for leaf in leaves(value)
        if leaf is not None or value is None  # an empty entry (no bias), as for grad
    )


_DIFFERENTIATED = ("float", "complex")  # complex numbers: docs/complex.md


def leaf_kind(value) -> str:
    """``"float"`` for what s2sgrad differentiates: Python floats, NumPy floating scalars
    and exact ``np.ndarray``s of a floating dtype (or tape values holding them).

    Otherwise ``"int"``, ``"bool"``, ``"complex"``; ``"unknown"`` for an array or number
    of a type s2sgrad does not understand (an ndarray subclass such as ``np.matrix`` or a
    masked array, a duck array, an object array, a ``Fraction``); ``"other"`` for values
    that are not numbers (strings, functions, ``None``, objects).
    """
    while is_tape_value(value):
        value = value_of(value)
    batching = sys.modules.get("s2sgrad.batching.values")  # none made unless imported
    if batching is not None and isinstance(value, batching.BatchedValue):
        value = value.array  # a batch of seeds in a Jacobian: the batch holds their dtype
    kind = type(value)
    if kind is float:
        return "float"
    if kind is bool:
        return "bool"
    if isinstance(value, int):
        return "int"
    if kind is np.ndarray or isinstance(value, np.generic):
        return _DTYPE_KINDS.get(value.dtype.kind, "unknown")
    if is_dask_array(value):  # generated code runs on it lazily; the tape refuses it
        teach_dask()
        return _DTYPE_KINDS.get(value.dtype.kind, "unknown")
    if isinstance(value, complex):
        return "complex"
    if isinstance(value, numbers.Number) or is_foreign_array(value) or hasattr(value, "dtype"):
        return "unknown"
    return "other"


_DTYPE_KINDS = {"f": "float", "c": "complex", "b": "bool", "i": "int", "u": "int"}


def check_differentiable(name, value, f) -> None:
    """Refuse to differentiate wrt ``value`` unless every leaf of it is a float or complex."""
    for leaf in leaves(value):
        if leaf is None and value is not None:  # an empty entry (no bias): no gradient there
            continue
        kind = leaf_kind(leaf)
        if kind not in _DIFFERENTIATED:
            message = _not_differentiable_message(name, leaf, kind, f)
            place = _place_of(value, leaf, name)
            if place is not None and kind in ("bool", "int", "other"):  # a setting in a dict
                message = (
                    f"{located_name(f)}: cannot differentiate with respect to {name!r}: "
                    f"{place} holds {_kind_phrase(leaf, kind)} ({leaf!r:.40}), which has no "
                    f"derivative; pass the settings that are not parameters as another "
                    f"argument, or choose with wrt= the arguments that hold only floats and "
                    f"arrays"
                )
            elif any(True for _ in _structures(value)) and not is_instance_object(leaf):
                message += (
                    "; a dataclass field that is not a parameter can be marked "
                    'dataclasses.field(metadata={"static": True})'
                )
            raise TypeError(message)


def _place_of(value: Any, leaf: Any, name: str) -> str | None:
    """Where ``leaf`` sits in the dict, list or tuple ``value`` (``params['layers'][0]
    ['act']``), or None when ``value`` is not one (or holds it deeper in an object)."""
    if value is leaf or not isinstance(value, (dict, list, tuple)):
        return None
    entries = value.items() if isinstance(value, dict) else enumerate(value)
    for key, entry in entries:
        if entry is leaf:
            return f"{name}[{key!r}]"
        inner = _place_of(entry, leaf, f"{name}[{key!r}]")
        if inner is not None:
            return inner
    return None


def refuse_tangent_of_integer(name: str, primal: Any, tangent: Any, f: Callable) -> None:
    """Refuse a tangent that is not zero for an integer or boolean primal, which forward
    mode does not differentiate: the tangent would be dropped (a JVP of 0, or None).

    Example::

        refuse_tangent_of_integer("n", 3, 1.0, f)  # TypeError: pass 3.0 to differentiate
    """
    kind = leaf_kind(primal)
    if kind not in ("int", "bool"):
        return
    if not isinstance(tangent, (int, float, complex, np.ndarray, np.generic)):
        return  # a container, a batched tangent: left to the engines
    if not np.any(np.asarray(tangent) != 0):
        return
    raise TypeError(
        f"{located_name(f)}: jvp: {name!r} is {_kind_phrase(primal, kind)} ({primal!r:.40}), "
        "which has no derivative, but its tangent is not zero and would be dropped; pass a "
        "float primal (3.0, or x.astype(float)) to differentiate along it, or give it a "
        "tangent of zeros"
    )


def refuse_dropped_tangents(name: str, primal: Any, tangent: Any, f: Callable) -> None:
    """Refuse a tangent with entries that are not zero for a container that is not
    differentiated as a whole (``{"w": x, "n": 3}``), which forward mode would drop, entry
    by entry too; the refusal names the entry, as :func:`check_differentiable` does.

    Example::

        refuse_dropped_tangents("p", {"w": x, "n": 3}, {"w": v, "n": 0}, f)  # TypeError
    """
    if not isinstance(primal, (dict, list, tuple)) and registered_node(primal) is None:
        return
    if is_differentiable(primal):
        return
    numbers = (int, float, complex, np.ndarray, np.generic)
    if any(isinstance(t, numbers) and np.any(np.asarray(t) != 0) for t in leaves(tangent)):
        check_differentiable(name, primal, f)


def _kind_phrase(leaf: Any, kind: str) -> str:
    return {"bool": "a boolean", "int": "an integer"}.get(kind, f"a {type(leaf).__name__}")


def refuse_array_attribute_names(name: str, value: Any, f: Callable) -> None:
    """Refuse, for source transformation, a differentiated dataclass, named tuple or
    registered object with an attribute named like a NumPy array's (``.T``, ``.real``,
    ``.size``): the generated code reads ``p.T`` as an array's transpose.

    A class that answers a comparison or ``round`` with code of the user's is refused
    too: the generated code takes ``p < 1.0`` for a flag (see
    :mod:`s2sgrad.runtime.answering_objects`).

    Example::

        refuse_array_attribute_names("p", Stats(mean=m, T=t), f)  # UnsupportedError
    """
    for node in (*_structures(value), *leaves(value)):
        if answers_itself(type(node)):  # its __lt__ may answer with its differentiated values
            raise UnsupportedError(
                f"{located_name(f)}: {name!r} holds a {type(node).__qualname__}, whose class "
                "answers a comparison or round with code of its own, whose result source "
                "transformation takes for a constant; use mode='tape'"
            )
    for node in _structures(value):
        for attribute in _attribute_names(node):
            if isinstance(getattr(np.ndarray, attribute, None), types.GetSetDescriptorType):
                raise UnsupportedError(
                    f"{located_name(f)}: {name!r} holds a {type(node).__qualname__} with the "
                    f"attribute .{attribute}, which source transformation reads as a NumPy "
                    f"array's .{attribute}; rename the attribute, or use mode='tape'"
                )


def refuse_arithmetic_objects(f: Callable, args: Sequence[Any], kwargs: dict) -> None:
    """Refuse, for source transformation, an argument holding an object whose class does
    arithmetic with methods of its own (``__radd__`` returning ``other * self.s``): the
    generated code differentiates ``x + c`` as NumPy's ``add``, whatever ``c`` answers.
    Mode "auto" tapes the function, where the object's method computes on tape values.

    Example::

        refuse_arithmetic_objects(f, (x, Scaled(2.0)), {})  # UnsupportedError
    """
    parameters = positional_parameters(f)
    named = [*zip(parameters, args), *kwargs.items()]
    for index, value in enumerate(args[len(parameters) :], start=len(parameters)):
        named.append((f"argument {index}", value))
    for name, value in named:
        for leaf in _arithmetic_candidates(value):
            if answers_arithmetic(type(leaf)):
                error = UnsupportedError(
                    f"{located_name(f)}: {name!r} holds a {type(leaf).__qualname__}, whose "
                    "class does arithmetic with methods of its own, which source "
                    "transformation would differentiate as NumPy's; use mode='tape'"
                )
                raise error


def refuse_answering_arguments(f: Callable, args: Sequence[Any]) -> None:
    """Refuse, for forward mode over s2sgrad's own gradient (``sg.hvp``), an argument
    holding an object whose class answers a comparison or ``round`` with code of its own:
    the gradient differentiates every argument, and its code takes ``c > x`` for a flag
    where ``c`` is one of them (a parameter not differentiated is checked as the code runs).

    Example::

        refuse_answering_arguments(sg.grad(f), (x, Scaled(2.0)))  # UnsupportedError
    """
    for index, value in enumerate(args):
        for leaf in _arithmetic_candidates(value):
            if answers_itself(type(leaf)):
                raise UnsupportedError(
                    f"{located_name(f)}: argument {index} holds a {type(leaf).__qualname__}, "
                    "whose class answers a comparison or round with code of its own, whose "
                    "result source transformation takes for a constant; use mode='tape'"
                )


def _arithmetic_candidates(value: Any) -> Iterator[Any]:
    """The leaves of ``value``, the structures holding them (a dataclass with its own
    ``__mul__``) and the attributes of the objects among them (``model.scale``)."""
    yield from _structures(value)
    for leaf in leaves(value):
        yield leaf
        if is_instance_object(leaf):
            yield from getattr(leaf, "__dict__", {}).values()


def _structures(value: Any) -> Iterator[Any]:
    """The dataclasses, named tuples and registered objects inside ``value``."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _structures(item)
        return
    if isinstance(value, (list, tuple)):
        if hasattr(type(value), "_fields"):
            yield value
        for item in value:
            yield from _structures(item)
        return
    node = registered_node(value)
    if node is not None:
        yield value
        for child in node[0]:
            yield from _structures(child)


def _attribute_names(node: Any) -> list[str]:
    fields = getattr(type(node), "_fields", None)
    if isinstance(node, tuple) and fields is not None:
        return list(fields)
    return list(getattr(node, "__dataclass_fields__", None) or vars(node))


def refuse_not_understood(name, value, f, kinds=("unknown",)) -> None:
    """Refuse arrays or numbers of types s2sgrad does not understand
    (integers, booleans and non-numbers are left alone: they are not differentiated)."""
    for leaf in leaves(value):
        kind = leaf_kind(leaf)
        if kind in kinds:
            raise TypeError(_not_differentiable_message(name, leaf, kind, f))


def refuse_complex_for_real(name, value, given, f) -> None:
    """A complex tangent of a real argument (or cotangent of a real output) has no meaning.

    Example::

        refuse_complex_for_real("the cotangent", 1.0, 1j, f)  # raises TypeError
    """
    if leaf_kind(given) == "complex" and leaf_kind(value) != "complex":
        raise TypeError(
            f"{located_name(f)}: {name} is complex, but the value it goes with is real; "
            "pass a real one (np.real of it), or make the value complex (docs/complex.md)"
        )


def refuse_mismatched_shape(name: str, value: Any, given: Any, f) -> None:
    """Refuse a tangent or cotangent (``given``) whose arrays do not have the shapes of the
    ``value`` it goes with, entry by entry (a dict's by key); a number stands for any shape
    (it broadcasts) and ``None`` for zeros. NumPy's own error, raised deep in generated
    code, would not say which was wrong.

    Example::

        refuse_mismatched_shape("the cotangent", np.ones(3), np.ones(4), f)  # ValueError
    """
    if given is None or value is None:
        return
    if isinstance(value, dict) and isinstance(given, dict):
        for key, entry in given.items():
            refuse_mismatched_shape(name, value.get(key), entry, f)
        return
    if isinstance(value, (list, tuple)) and isinstance(given, (list, tuple)):
        if len(value) != len(given):
            raise ValueError(
                f"{located_name(f)}: {name} has {len(given)} entries, but the value it goes "
                f"with has {len(value)}; give one for each, in the same structure"
            )
        for entry, given_entry in zip(value, given):
            refuse_mismatched_shape(name, entry, given_entry, f)
        return
    node, given_node = registered_node(value), registered_node(given)
    if node is not None and given_node is not None:  # a dataclass or a registered class
        refuse_mismatched_shape(name, list(node[0]), list(given_node[0]), f)
        return
    got_shape, shape = _shape_of(given), _shape_of(value)
    if got_shape and shape is not None and got_shape != shape:
        raise ValueError(
            f"{located_name(f)}: {name} has shape {got_shape}, but the value it goes "
            f"with has shape {_shape_of(value)}; give one of that shape"
        )


def _shape_of(value: Any) -> tuple | None:
    """The shape of an array (a tape value's or a Dask array's too), () for a number, None
    for what has none (a ragged list)."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return tuple(shape)
    try:
        return np.shape(value)
    except (ValueError, TypeError):
        return None


def require_complex_ready(generated, arguments, f) -> None:
    """Refuse generated code that is not complex-ready (s2sgrad.compiler.complex_values)
    when an argument holds a complex value: mode="auto" then uses the tape.

    Example::

        require_complex_ready(derivative(f, ("z",)), (z,), f)
    """
    if getattr(generated, "complex_ready", False):
        return
    if any(leaf_kind(leaf) == "complex" for leaf in leaves(arguments)):
        raise UnsupportedError(
            f"{located_name(f)}: called with a complex value, and a step of it has no rule "
            "known to be right for complex numbers (docs/complex.md); use mode='tape', or "
            "pass the real and imaginary parts as float arrays"
        )


def refuse_unknown_constants(f, parameters, args, kwargs) -> None:
    """Arrays of types s2sgrad does not understand give wrong derivatives as constants too
    (``x * m`` is a matrix product for an ``np.matrix`` m, a masked array hides elements;
    ``abs(x * z)`` with a complex ``z`` had a wrong derivative)."""
    for index, value in enumerate(args):
        name = parameters[index] if index < len(parameters) else f"argument {index}"
        refuse_not_understood(name, value, f)
    for name, value in kwargs.items():
        refuse_not_understood(name, value, f)
    refuse_custom_deep_copies(f, (*args, *kwargs.values()))  # a copy taken for new, shared


def _not_differentiable_message(name, leaf, kind, f) -> str:
    shown = name if name.startswith("the ") else repr(name)  # "the tangent of 'x'"
    start = f"{located_name(f)}: cannot differentiate with respect to {shown}, which holds"
    if kind == "unknown":
        start = f"{located_name(f)}: cannot differentiate with {shown} holding"
    if not name.isidentifier():
        name = "x"
    if kind == "other" and is_instance_object(leaf):
        cls = type(leaf).__qualname__
        return (
            f"{start} a {cls} object; s2sgrad differentiates an object through its "
            f"attributes when its class says which they are: make {cls} a dataclass, or "
            f"register it with s2sgrad.register_pytree({cls}, flatten, unflatten) "
            "(docs/models.md)"
        )
    if kind in ("bool", "int", "other"):
        what = _kind_phrase(leaf, kind)
        return (
            f"{start} {what} value ({leaf!r:.40}); pass a float (e.g. {name}=3.0 or "
            "np.asarray(x, dtype=float))"
        )
    kind_name = f"{type(leaf).__module__}.{type(leaf).__qualname__}"
    if isinstance(leaf, np.matrix):
        meaning = "whose * and ** are matrix products s2sgrad would not differentiate right"
        advice = f"pass np.asarray({name}) and write @ for matrix products"
    elif isinstance(leaf, np.ma.MaskedArray):
        meaning = "whose masked elements s2sgrad would not tell apart"
        advice = f"pass {name}.filled(...) or np.asarray({name}) and apply the mask with np.where"
    elif isinstance(leaf, np.ndarray):
        meaning = "an array type s2sgrad does not differentiate" + (
            f" (dtype {leaf.dtype})" if type(leaf) is np.ndarray else ""
        )
        advice = f"pass np.asarray({name}, dtype=float)"
    else:
        meaning = "a type s2sgrad does not understand: it differentiates floats and NumPy arrays"
        advice = f"pass np.asarray({name}, dtype=float)"
    return f"{start} a {kind_name} ({meaning}); {advice}"


def located_name(f: Any) -> str:
    """``file:line: name`` of the user's function, as far as it is known.

    Example::

        located_name(loss)  # 'model.py:12: loss'
    """
    origin = function_origin(f)
    return name_of(f) if origin is None else f"{origin}: {name_of(f)}"


def containers_of(primals: tuple, function: Callable) -> frozenset:
    """The names of the positional parameters given a dict, list or tuple.

    Example::

        def loss(params, x): ...
        containers_of(({"w": w}, x), loss)  # frozenset({'params'})
    """
    names = positional_parameters(function)
    return frozenset(n for n, v in zip(names, primals) if is_container(v))


def zeros_for(value: Any) -> Any:
    """Zeros like ``value`` if it is differentiated, else ``None`` (a tangent per argument).

    Example::

        zeros_for(3)  # None
    """
    return zeros_like_value(value) if is_differentiable(value) else None


def name_of(f: Any) -> str:
    """The name messages use for ``f``.

    Example::

        name_of(np.sin)  # 'sin'
    """
    if isinstance(f, functools.partial):
        return f"functools.partial({name_of(f.func)})"
    return getattr(f, "__qualname__", None) or repr(f)
