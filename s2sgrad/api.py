"""The function transforms: ``grad``, ``value_and_grad`` and ``vjp``.

Each transform resolves ``wrt`` to parameter names once, then on every call picks the
generated function for the arguments' structure (cached) and calls it. ``mode`` says
which engine differentiates: ``"s2s"`` (source transformation only), ``"tape"`` (the
runtime tape only) or ``"auto"`` (source transformation, falling back to the tape with
one warning where the source cannot be transformed).
"""

from __future__ import annotations

import functools
import inspect
import numbers
import operator
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad import numpy_signatures
from s2sgrad.compiler.freshness import MISSING, Assumptions
from s2sgrad.compiler.pipeline import call_specialised, derivative
from s2sgrad.compiler.specialize import signature
from s2sgrad.errors import FallbackWarning, S2SGradError, warn_at_caller, where
from s2sgrad.runtime import as_gradient, is_foreign_array
from s2sgrad.tracing import tracing

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacobian", "jacfwd", "hessian", "hvp"]

MODES = ("auto", "s2s", "tape")


def grad(
    f: Callable | None = None,
    wrt: int | str | tuple = 0,
    *,
    has_aux: bool = False,
    mode: str = "auto",
) -> Callable:
    """The gradient of ``f``'s single-element output wrt the argument(s) ``wrt``.

    ``wrt`` is an argument index, a parameter name, or a tuple of them (a tuple gives a
    tuple of gradients). Works as a decorator, bare or with arguments.

    Example::

        def f(x):
            return np.sum(np.sin(x) ** 2)

        sg.grad(f)(np.ones(3))  # array([0.909..., 0.909..., 0.909...])
    """
    if f is None:
        return functools.partial(grad, wrt=wrt, has_aux=has_aux, mode=mode)
    return _Transform(f, wrt, has_aux, mode, "grad")


def value_and_grad(
    f: Callable | None = None,
    wrt: int | str | tuple = 0,
    *,
    has_aux: bool = False,
    mode: str = "auto",
) -> Callable:
    """Like :func:`grad`, but returns ``(value, gradient)`` from one evaluation.

    Example::

        value, gradient = sg.value_and_grad(lambda x: x ** 3)(2.0)  # (8.0, 12.0)
    """
    if f is None:
        return functools.partial(value_and_grad, wrt=wrt, has_aux=has_aux, mode=mode)
    return _Transform(f, wrt, has_aux, mode, "value_and_grad")


def vjp(f: Callable, *primals: Any, mode: str = "auto") -> tuple[Any, Callable]:
    """``(f(*primals), pullback)``; ``pullback(cotangent)`` gives one cotangent per primal.

    Primals that are integers or booleans are not differentiated; their entry is ``None``.

    Example::

        out, pullback = sg.vjp(lambda x: np.sin(x), np.zeros(2))
        pullback(np.ones(2))  # (array([1., 1.]),)
    """
    _check_mode(mode)
    function, primals = _bind_self(f, primals)
    parameters = _positional_parameters(function)
    if len(primals) > len(parameters) and _vararg(function) is None:
        raise TypeError(f"{_name(f)} takes {len(parameters)} positional arguments")
    for name, primal in zip(parameters, primals):
        _refuse_not_understood(name, primal, f)
    differentiable = [i for i, p in enumerate(primals) if _is_differentiable(p)]
    offset = 1 if isinstance(f, types.MethodType) else 0  # the bound self
    wrt = tuple(_positional_name(function, i) for i in differentiable)
    engine_out, raw_pullback = _vjp_engine(function, primals, wrt, mode)

    def pullback(cotangent: Any) -> tuple:
        _refuse_not_understood("the cotangent", cotangent, f)
        raw = raw_pullback(cotangent)
        raw = raw if len(wrt) != 1 else (raw,)
        result: list[Any] = [None] * len(primals)
        for index, value in zip(differentiable, raw):
            result[index] = as_gradient(value, primals[index])
        return tuple(result[offset:])

    return engine_out, pullback


def _vjp_engine(function, primals, wrt, mode):
    if mode != "tape":
        try:
            generated = derivative(
                function,
                wrt,
                "vjp",
                containers=_containers(primals, function),
                dynamic=mode == "auto",
            )
            forward = generated.function
            value, saved = forward(*primals)
            return value, functools.partial(forward.backward, saved)
        except S2SGradError as error:
            if not _may_fall_back(mode, error):
                raise
            _warn_fallback(function, error)
    from s2sgrad.tape import tape_vjp

    indices = tuple(_position_of(function, w) for w in wrt)
    out, pullback = tape_vjp(function, tuple(primals), {}, indices)

    def raw_pullback(cotangent):
        values = pullback(cotangent)
        return values if len(values) != 1 else values[0]

    return out, raw_pullback


class _Transform:
    """The callable ``grad``/``value_and_grad`` return."""

    def __init__(self, f, wrt, has_aux, mode, kind):
        _check_mode(mode)
        self.f = f
        self.function = f.__func__ if isinstance(f, types.MethodType) else f
        self.kind = kind
        self.has_aux = has_aux
        self.mode = mode
        self.single = not isinstance(wrt, (tuple, list))
        self.parameters = _positional_parameters(self.function)
        self.all_parameters = list(numpy_signatures.signature(self.function).parameters)
        shift = 1 if isinstance(f, types.MethodType) else 0
        self.wrt = tuple(self._parameter(w, shift) for w in ((wrt,) if self.single else wrt))
        self.indices = [_position_of(self.function, w) for w in self.wrt]
        self.generated: dict[tuple, Any] = {}  # argument signature → compiled function
        self.fast: dict[tuple, Any] = {}  # (shape, dtype) of each array argument → function
        self.latest = None  # the GeneratedFunction that ran last (for sg.source)
        self.assumptions = Assumptions()  # what the generated code above depends on
        self.use_tape = mode == "tape"
        self.bound_self = f.__self__ if isinstance(f, types.MethodType) else None
        self.wrap_single = not self.single and len(self.wrt) == 1 and kind == "grad"
        functools.update_wrapper(self, f, updated=())

    def generic_function(self, containers: frozenset = frozenset()):
        """The generated code of this transform for any shapes (for differentiating it again).

        ``containers`` names the parameters that hold dicts, lists or tuples.
        """
        if self.mode == "tape":
            from s2sgrad.errors import UnsupportedError

            raise UnsupportedError(
                f"{_name(self.f)} is differentiated with mode='tape'; its derivative is "
                "differentiated on the tape too"
            )
        return derivative(
            self.function,
            self.wrt,
            self.kind,
            self.has_aux,
            frozenset(containers) & set(self.wrt),
            dynamic=self.mode == "auto",
        ).function

    def _parameter(self, wrt, shift) -> str:
        if isinstance(wrt, str):
            if wrt not in self.all_parameters:
                raise ValueError(f"{_name(self.f)} has no parameter named {wrt!r}")
            return wrt
        if isinstance(wrt, (int, np.integer)) and not isinstance(wrt, bool):
            index = int(wrt) + shift
            if 0 <= index < len(self.parameters) or (index >= 0 and _vararg(self.function)):
                return _positional_name(self.function, index)
            raise ValueError(
                f"wrt={wrt} is out of range: {_name(self.f)} has "
                f"{len(self.parameters) - shift} positional parameters"
            )
        raise TypeError(f"wrt must be an argument index or a parameter name, not {wrt!r}")

    def __call__(self, *args, **kwargs):
        if not (kwargs or self.use_tape or self.bound_self is not None):
            try:  # the hot path: floating arrays of shapes seen before
                function = self.fast[tuple(map(_SHAPE_AND_DTYPE, args))]
            except (KeyError, AttributeError, TypeError):
                pass
            else:  # stored keys come from floating arrays, and the key holds the dtype
                for entry in self.assumptions.entries:  # Assumptions.hold, inlined
                    if entry.holder.get(entry.name, MISSING) is not entry.expected:
                        break  # a name f reads holds something else now
                else:
                    return function(*args)
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if self.bound_self is not None:
            args = (self.bound_self, *args)
        if not self.use_tape and not self.assumptions.current():
            self._forget()
        if not self.use_tape:
            key = signature(args, kwargs)
            function = self.generated.get(key)
            if function is not None:
                return function(*args, **kwargs)
        values = self._wrt_values(args, kwargs)
        for name, value in zip(self.wrt, values):
            _check_differentiable(name, value, self.f)
        _refuse_unknown_constants(self.f, self.all_parameters, args, kwargs)
        containers = frozenset(n for n, v in zip(self.wrt, values) if _is_container(v))
        if not self.use_tape:
            from s2sgrad.compiler.pipeline import without_garbage_collection

            with without_garbage_collection():
                generated = self._transform(containers)
                if generated is not None:
                    return self._first_call(key, generated, args, kwargs)
        return self._tape_call(args, kwargs, values)

    def _transform(self, containers):
        try:
            return derivative(
                self.function,
                self.wrt,
                self.kind,
                self.has_aux,
                containers,
                dynamic=self.mode == "auto",
            )
        except S2SGradError as error:
            if not _may_fall_back(self.mode, error):
                raise
            _warn_fallback(self.function, error)
            self.use_tape = True
            return None

    def _forget(self) -> None:
        """Drop generated code that a rebound name made stale; the next call builds anew."""
        self.generated.clear()
        self.fast.clear()
        self.assumptions = Assumptions()
        self.latest = None

    def _first_call(self, key, generated, args, kwargs):
        """Call a new signature's code once, specialising it to these shapes if safe."""
        result, generated = call_specialised(generated, args, kwargs, key)
        if tracing():  # the generic code ran, for its lines; the next call specialises
            return self._shape_result(result)
        self.assumptions.include(generated.assumptions)
        self.latest = generated
        function = generated.function
        if self.wrap_single:
            function = _one_tuple(function)
        self.generated[key] = function
        if self.bound_self is None and not kwargs and all(map(_is_float_array, args)):
            self.fast[tuple(map(_SHAPE_AND_DTYPE, args))] = function
        return self._shape_result(result)

    def _shape_result(self, result):
        if self.single or len(self.wrt) != 1:
            return result
        if self.kind == "value_and_grad":
            return result[0], (result[1],)
        return (result,)

    def _wrt_values(self, args, kwargs):
        values = []
        for name, index in zip(self.wrt, self.indices):
            if index is not None and index < len(args):
                values.append(args[index])
            elif name in kwargs:
                values.append(kwargs[name])
            else:
                parameter = numpy_signatures.signature(self.function).parameters.get(name)
                default = inspect.Parameter.empty if parameter is None else parameter.default
                if default is inspect.Parameter.empty:
                    raise TypeError(f"{_name(self.f)}() missing required argument {name!r}")
                values.append(default)
        return values

    def _tape_call(self, args, kwargs, values):
        from s2sgrad.tape import tape_vjp
        from s2sgrad.tape.in_place import refuse_value_class_patterns

        refuse_value_class_patterns(self.function)  # tape_vjp sees only the adapter below

        target = self.function
        if self.has_aux:
            target = _first_of(self.function)
        numpy_signatures.signature(self.function).bind(*args, **kwargs)  # the call's own TypeError
        if all(i is not None and i < len(args) for i in self.indices):  # all passed by position
            out, pullback = tape_vjp(target, tuple(args), kwargs, tuple(self.indices))
        else:
            call = _calling_with(target, self.function, args, kwargs, self.wrt, self.indices)
            out, pullback = tape_vjp(call, tuple(values), {}, tuple(range(len(values))))
        from s2sgrad.runtime import seed_cotangent

        cotangents = pullback(seed_cotangent(out))
        gradients = cotangents[0] if self.single else tuple(cotangents)
        if self.has_aux:
            aux = target.aux
            value = (out, aux)
        else:
            value = out
        if self.kind == "value_and_grad":
            return value, gradients
        return (gradients, aux) if self.has_aux else gradients


_SHAPE_AND_DTYPE = operator.attrgetter("shape", "dtype")


def _is_float_array(value) -> bool:
    return type(value) is np.ndarray and value.dtype.kind == "f"


def _one_tuple(function):
    """``grad(f, wrt=(0,))`` returns a 1-tuple around the generated gradient."""

    def gradient(*args, **kwargs):
        return (function(*args, **kwargs),)

    return gradient


def _register_transforms_as_constructors() -> None:
    """Calling ``grad(f)`` inside differentiated code makes a function, not a value."""
    from s2sgrad.rules.registry import nondifferentiable

    nondifferentiable(grad, value_and_grad, jacobian, jacfwd, hessian)


def _calling_with(target, function, args, kwargs, wrt, indices):
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


def _vararg(function) -> str | None:
    """The name of ``function``'s ``*args`` parameter, if it has one."""
    try:
        parameters = numpy_signatures.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    return next((p.name for p in parameters if p.kind is p.VAR_POSITIONAL), None)


def _positional_name(function, index: int) -> str:
    """The name ``wrt`` uses for positional argument ``index``: its parameter's name, or
    ``"args[2]"`` for one that ``*args`` takes (not an identifier, so no parameter's)."""
    parameters = _positional_parameters(function)
    if index < len(parameters):
        return parameters[index]
    return f"{_vararg(function)}[{index - len(parameters)}]"


def _position_of(function, name: str) -> int | None:
    """The position of the argument ``wrt`` names (None for a keyword-only parameter)."""
    parameters = _positional_parameters(function)
    if name in parameters:
        return parameters.index(name)
    vararg = _vararg(function)
    if vararg is not None and name.startswith(f"{vararg}[") and name.endswith("]"):
        return len(parameters) + int(name[len(vararg) + 1 : -1])
    return None


def _first_of(function):
    def first(*args, **kwargs):
        out, aux = function(*args, **kwargs)
        first.aux = aux
        return out

    return first


def _bind_self(f, primals):
    if isinstance(f, types.MethodType):
        return f.__func__, (f.__self__, *primals)
    return f, primals


def _positional_parameters(function) -> list[str]:
    try:
        signature = numpy_signatures.signature(function)
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]


def _is_container(value) -> bool:
    return isinstance(value, (dict, list, tuple))


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _is_differentiable(value) -> bool:
    return all(_leaf_kind(leaf) == "float" for leaf in _leaves(value))


def _leaf_kind(value) -> str:
    """``"float"`` for what s2sgrad differentiates: Python floats, NumPy floating scalars
    and exact ``np.ndarray``s of a floating dtype (or tape values holding them).

    Otherwise ``"int"``, ``"bool"``, ``"complex"``; ``"unknown"`` for an array or number
    of a type s2sgrad does not understand (an ndarray subclass such as ``np.matrix`` or a
    masked array, a duck array, an object array, a ``Fraction``); ``"other"`` for values
    that are not numbers (strings, functions, ``None``, objects).
    """
    from s2sgrad.tape import is_tape_value, value_of

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
    if isinstance(value, complex):
        return "complex"
    if isinstance(value, numbers.Number) or is_foreign_array(value) or hasattr(value, "dtype"):
        return "unknown"
    return "other"


_DTYPE_KINDS = {"f": "float", "c": "complex", "b": "bool", "i": "int", "u": "int"}


def _check_differentiable(name, value, f) -> None:
    """Refuse to differentiate wrt ``value`` unless every leaf of it is a float."""
    for leaf in _leaves(value):
        kind = _leaf_kind(leaf)
        if kind != "float":
            raise TypeError(_not_differentiable_message(name, leaf, kind, f))


def _refuse_not_understood(name, value, f, kinds=("complex", "unknown")) -> None:
    """Refuse complex numbers and arrays or numbers of types s2sgrad does not understand
    (integers, booleans and non-numbers are left alone: they are not differentiated)."""
    for leaf in _leaves(value):
        kind = _leaf_kind(leaf)
        if kind in kinds:
            raise TypeError(_not_differentiable_message(name, leaf, kind, f))


def _refuse_unknown_constants(f, parameters, args, kwargs) -> None:
    """Arrays of types s2sgrad does not understand give wrong derivatives as constants too
    (``x * m`` is a matrix product for an ``np.matrix`` m, a masked array hides elements;
    ``abs(x * z)`` with a complex ``z`` had a wrong derivative)."""
    for index, value in enumerate(args):
        name = parameters[index] if index < len(parameters) else f"argument {index}"
        _refuse_not_understood(name, value, f)
    for name, value in kwargs.items():
        _refuse_not_understood(name, value, f)


def _not_differentiable_message(name, leaf, kind, f) -> str:
    shown = name if name.startswith("the ") else repr(name)  # "the tangent of 'x'"
    start = f"{_located_name(f)}: cannot differentiate with respect to {shown}, which holds"
    if kind in ("unknown", "complex"):
        start = f"{_located_name(f)}: cannot differentiate with {shown} holding"
    if not name.isidentifier():
        name = "x"
    if kind in ("bool", "int", "other"):
        what = {"bool": "a boolean", "int": "an integer"}.get(kind, f"a {type(leaf).__name__}")
        return (
            f"{start} {what} value ({leaf!r:.40}); pass a float (e.g. {name}=3.0 or "
            "np.asarray(x, dtype=float))"
        )
    if kind == "complex":
        return (
            f"{start} a complex value ({leaf!r:.40}); complex numbers are not supported yet: "
            "pass the real and imaginary parts as two float arguments (np.real(z), "
            "np.imag(z)) and write the computation with real arithmetic"
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


def _located_name(f) -> str:
    """``file:line: name`` of the user's function, as far as it is known."""
    function = getattr(f, "__func__", f)
    function = getattr(function, "function", function)  # a transform: the function inside
    code = getattr(function, "__code__", None)
    if code is None:
        return _name(f)
    return f"{where(code.co_filename, code.co_firstlineno)}: {_name(f)}"


def _containers(primals, function) -> frozenset:
    names = _positional_parameters(function)
    return frozenset(n for n, v in zip(names, primals) if _is_container(v))


_warned: set = set()


def _may_fall_back(mode: str, error: Exception) -> bool:
    """Whether the tape may take over after the source transformer's ``error``: not in
    mode "s2s", and not for code the tape would get wrong as well."""
    return mode != "s2s" and not getattr(error, "tape_cannot_either", False)


def _warn_fallback(function, error: Exception) -> None:
    if isinstance(function, _Transform):  # its function fell back: one warning says it
        function = function.function
    key = getattr(function, "__code__", function)
    if key in _warned:
        return
    _warned.add(key)
    warn_at_caller(
        f"{error} -- differentiating {_name(function)} with the tape instead "
        "(pass mode='tape' to silence this, or mode='s2s' to make it an error)",
        FallbackWarning,
    )


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")


def _name(f) -> str:
    return getattr(f, "__qualname__", None) or repr(f)


# forward mode and derivative matrices ---------------------------------------------------
def jvp(f: Callable, primals: tuple | list, tangents: tuple | list, *, mode: str = "auto"):
    """``(f(*primals), J·tangents)``: a Jacobian-vector product by forward mode.

    Example::

        value, tangent = sg.jvp(lambda x: np.sin(x), (np.zeros(2),), (np.ones(2),))  # cos(0) = 1
    """
    _check_mode(mode)
    for what, given in (("primals", primals), ("tangents", tangents)):
        if not isinstance(given, (tuple, list)):
            raise TypeError(
                f"jvp takes its {what} as a tuple with one entry per argument, as in "
                f"sg.jvp(f, (x,), (v,)); got {type(given).__name__}"
            )
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError("jvp needs one tangent per primal")
    function, primals = _bind_self(f, primals)
    offset = len(primals) - len(tangents)
    tangents = (None,) * offset + tangents
    parameters = _positional_parameters(function)
    for name, primal, tangent in zip(parameters, primals, tangents):
        if tangent is not None:
            _refuse_not_understood(name, primal, f)
            _refuse_not_understood(f"the tangent of {name!r}", tangent, f)
    _refuse_unknown_constants(f, parameters, primals, {})
    positions = tuple(
        i for i, p in enumerate(primals) if _is_differentiable(p) and tangents[i] is not None
    )
    if mode != "tape":
        try:
            generated = derivative(
                function,
                tuple(_positional_name(function, i) for i in positions),
                "jvp",
                containers=_containers(primals, function),
                dynamic=mode == "auto",
            )
            keywords = _tangent_keywords(generated.tangent_names, function, primals, tangents)
            return _shaped_like_output(*call_specialised(generated, primals, keywords)[0])
        except S2SGradError as error:
            if not _may_fall_back(mode, error):
                raise
            _warn_fallback(function, error)
    from s2sgrad.runtime.dispatch import _tape_jvp

    return _shaped_like_output(*_tape_jvp(function, primals, tangents, positions, {}))


def _tangent_keywords(tangent_names, function, primals, tangents) -> dict:
    """The generated JVP's tangent parameters, by keyword: one per argument differentiated
    (an entry of ``*args`` too)."""
    keywords = {}
    for index, (primal, tangent) in enumerate(zip(primals, tangents)):
        name = _positional_name(function, index)
        if name in tangent_names and tangent is not None and _is_differentiable(primal):
            keywords[tangent_names[name]] = tangent
    return keywords


def _shaped_like_output(out, tangent):
    """A container output's tangent as the same containers (lists, not the CotangentLists
    generated code adds entry by entry)."""
    if isinstance(out, (dict, list, tuple)):
        from s2sgrad.runtime import as_gradient

        tangent = as_gradient(tangent, out)
    return out, tangent


def jacobian(f: Callable, wrt: int | str | tuple = 0, *, mode: str = "auto") -> Callable:
    """The Jacobian of ``f`` wrt one argument, shape ``out.shape + arg.shape`` (reverse mode);
    a tuple ``wrt`` gives a tuple of Jacobians, one per argument it names.

    For containers (a dict of parameters, say) the result nests: for each leaf of the
    output, the argument's structure with arrays of shape ``out_leaf.shape + leaf.shape``.
    The rows of an output leaf come from one backward pass over a batch of cotangents
    where the generated code allows it, else from one backward pass per element.

    Example::

        sg.jacobian(lambda x: np.sin(x))(np.zeros(3))  # the 3x3 identity
    """
    _check_mode(mode)

    def jacobian_function(*args, **kwargs):
        from s2sgrad.batching import reverse_jacobian

        return _per_argument(reverse_jacobian, f, args, kwargs, wrt, mode)

    return functools.update_wrapper(jacobian_function, f, updated=())


def jacfwd(f: Callable, wrt: int | str | tuple = 0, *, mode: str = "auto") -> Callable:
    """The same Jacobian as :func:`jacobian`, built from input directions (forward mode).

    The columns of an argument leaf come from one forward pass over a batch of tangents
    where the generated code allows it, else from one forward pass per element.

    Example::

        sg.jacfwd(lambda x: x ** 2)(np.arange(3.0))  # diag([0, 2, 4])
    """
    _check_mode(mode)

    def jacobian_function(*args, **kwargs):
        from s2sgrad.batching import forward_jacobian

        return _per_argument(forward_jacobian, f, args, kwargs, wrt, mode)

    return functools.update_wrapper(jacobian_function, f, updated=())


def hessian(f: Callable, wrt: int | str | tuple = 0, *, mode: str = "auto") -> Callable:
    """The Hessian of a scalar ``f`` wrt one argument (forward over reverse).

    Example::

        sg.hessian(lambda x: np.sum(x ** 3))(np.ones(2))  # diag([6, 6])
    """
    return jacfwd(grad(f, wrt=wrt, mode=mode), wrt=wrt, mode=mode)


def hvp(f: Callable, primals: tuple | list, vectors: tuple | list, *, mode: str = "auto"):
    """Hessian-vector products of a scalar ``f`` without forming the Hessian.

    Returns one product per primal (forward mode over the reverse-mode gradient).

    Example::

        sg.hvp(lambda x: np.sum(x ** 3), (np.ones(2),), (np.ones(2),))  # (array([6., 6.]),)
    """
    primals = tuple(primals)
    if len(primals) == 1:
        _, product = jvp(grad(f, wrt=0, mode=mode), primals, tuple(vectors), mode=mode)
        return (product,)
    gradient = grad(f, wrt=tuple(range(len(primals))), mode=mode)
    _, products = jvp(gradient, primals, tuple(vectors), mode=mode)
    return tuple(products)


def _per_argument(matrix, f, args, kwargs, wrt, mode):
    """``matrix(f, args, kwargs, index, mode)`` for one ``wrt``, a tuple of them for a tuple."""
    if isinstance(wrt, (tuple, list)):
        return tuple(matrix(f, args, kwargs, _argument_index(f, w), mode) for w in wrt)
    return matrix(f, args, kwargs, _argument_index(f, wrt), mode)


def _argument_index(f, wrt) -> int:
    """The position among the arguments a caller passes (a bound ``self`` not counted)."""
    if isinstance(wrt, str):
        if isinstance(f, types.MethodType):
            return _positional_parameters(f.__func__).index(wrt) - 1
        return _positional_parameters(f).index(wrt)
    return int(wrt)


def _zeros_like(value):
    from s2sgrad.runtime import zeros_like_value

    return zeros_like_value(value) if _is_differentiable(value) else None


_register_transforms_as_constructors()
