"""The function transforms: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``jacobian``,
``jacfwd``, ``hessian`` and ``hvp``.

``grad`` and ``value_and_grad`` resolve ``wrt`` to parameter names once, then on every call
pick the generated function for the arguments' structure (cached) and call it. ``mode``
says which engine differentiates: ``"s2s"`` (source transformation only), ``"tape"`` (the
runtime tape only) or ``"auto"`` (source transformation, falling back to the tape with one
warning where the source cannot be transformed); the choice, and the checks of the
arguments, are :mod:`s2sgrad.engines`. ``vjp`` and ``jvp`` are its products; ``jacobian``
and ``jacfwd`` build whole Jacobians from batches of them (:mod:`s2sgrad.batching`);
``hessian`` and ``hvp`` are forward mode over the gradient.

Example::

    import s2sgrad as sg

    sg.grad(lambda x: np.sum(x ** 2))(np.ones(3))  # array([2., 2., 2.])
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import operator
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from s2sgrad import numpy_signatures
from s2sgrad.batching import forward_jacobian, reverse_jacobian
from s2sgrad.compiler.cache import CACHE
from s2sgrad.compiler.caller_dicts import refuse_writes_into_caller_dicts
from s2sgrad.compiler.codegen import GeneratedFunction, generated_of
from s2sgrad.compiler.freshness import MISSING
from s2sgrad.compiler.listing import listing
from s2sgrad.compiler.one_tuples import one_tuple_caller
from s2sgrad.compiler.pipeline import call_specialised, derivative, without_garbage_collection
from s2sgrad.compiler.signature_guards import guarded_call
from s2sgrad.compiler.specialize import signature
from s2sgrad.display import NotebookDisplay
from s2sgrad.engines import products as engines
from s2sgrad.engines.arguments import (
    ParameterLayout,
    bound_arguments,
    call_method_of,
    calling_with,
    check_differentiable,
    first_of,
    is_container,
    located_name,
    name_of,
    refuse_arithmetic_objects,
    refuse_array_attribute_names,
    refuse_unknown_constants,
    require_complex_ready,
)
from s2sgrad.engines.products import check_mode, may_fall_back, on_the_tape, warn_fallback
from s2sgrad.errors import S2SGradError, UnsupportedError, after_s2s_refused
from s2sgrad.numpy_signatures import positional_parameters
from s2sgrad.pytrees import tree_leaves
from s2sgrad.rules.registry import get_rule, makes_functions, nondifferentiable
from s2sgrad.running import name_the_origin, note_generated_origin
from s2sgrad.runtime import as_gradient, owned_argument, seed_cotangent
from s2sgrad.runtime.kept_states import KeptStates
from s2sgrad.runtime.object_gradients import is_object_node
from s2sgrad.runtime.objects import forget_all_stored
from s2sgrad.runtime.replays import RANDOM_GENERATORS, StatesAndDraws, random_sources
from s2sgrad.tape import is_tape_value, tape_vjp
from s2sgrad.tape.in_place import refuse_value_class_patterns
from s2sgrad.tape.values import user_location
from s2sgrad.tape.vjp import plain_leaves

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
    check_mode(mode)
    _refuse_cyclic_arguments(primals)
    _readable_signature(f, "vjp")
    called = _partial_call(f, primals, mode)
    if called is None:
        return engines.vjp(f, *primals, mode=mode)
    function, arguments, first = called
    out, pullback = engines.vjp(function, *arguments, mode=mode)

    def of_the_partial(cotangent: Any) -> tuple:
        return pullback(cotangent)[first : first + len(primals)]

    return out, of_the_partial


def _readable_signature(f: Callable, kind: str) -> inspect.Signature | None:
    """``f``'s signature; for a builtin that has none (``max``, ``min``) a refusal naming
    the user's line, where the transforms would fail on the parameters they cannot read.
    None for a function made by ``sg.vmap`` without one (of a ufunc, on NumPy 1.26): what
    differentiates it says what it can (the tape runs it, source transformation refuses it
    with advice of its own).

    Example::

        _readable_signature(max, "grad")  # UnsupportedError: ... ('lambda xs: max(xs)')
    """
    try:
        return numpy_signatures.signature(f)
    except (TypeError, ValueError):
        if getattr(f, "__s2sgrad_vmapped__", False):
            return None
        name = name_of(f)
        raise UnsupportedError(
            f"{user_location()}: {kind} cannot read the parameters of {name}, a builtin "
            f"without a signature; differentiate a function of yours that calls it "
            f"('lambda xs: {name}(xs)')"
        ) from None


def _partial_call(f: Callable, primals: tuple, mode: str) -> tuple | None:
    """``(function, arguments, first)`` for a ``functools.partial`` of a Python function
    (mode "s2s" or "auto") whose bound arguments and keywords all fill positional
    parameters: the call of ``function`` with every argument in position, the primals
    from ``first`` on; None for anything else (the tape takes partials as they are)."""
    if mode == "tape" or not _is_partial(f):
        return None
    function, bound, keywords = bound_arguments(f)
    try:
        arguments = inspect.signature(function).bind(*bound, *primals, **keywords)
    except (TypeError, ValueError):
        return None
    arguments.apply_defaults()
    if arguments.kwargs:  # keyword-only parameters: no position to give them
        return None
    return function, tuple(arguments.args), len(bound)


def _partial_tangents(arguments: tuple, first: int, tangents) -> tuple:
    """``tangents`` in the positions of the primals among ``arguments``, None elsewhere
    (the partial's own arguments, held constant)."""
    after = len(arguments) - first - len(tangents)
    return (None,) * first + tuple(tangents) + (None,) * after


class _Transform(NotebookDisplay):
    """The callable ``grad``/``value_and_grad`` return.

    It pickles by reference (the function and the options, never generated code), so
    ``multiprocessing`` can send it to workers, and a notebook shows its generated code.
    """

    def __init__(self, f, wrt, has_aux, mode, kind):
        check_mode(mode)
        if not callable(f):
            raise TypeError(
                f"{user_location()}: {kind} needs a function to differentiate, not "
                f"{type(f).__name__} {f!r:.60}"
            )
        f = call_method_of(f)
        self.f = f
        self.function, bound, _ = bound_arguments(f)
        self.binds = self.function is not f  # a bound method, a functools.partial
        self.kind = kind
        self.has_aux = has_aux
        self.mode = mode
        self.single = not isinstance(wrt, (tuple, list))
        self.given_wrt = wrt  # as given: positions, names, or positions in *args
        signature = _readable_signature(self.function, kind)  # its own parameters
        if signature is None:  # sg.vmap's, of a ufunc on NumPy 1.26: as NumPy says
            signature = numpy_signatures.signature(self.function)
        self.call_signature = signature
        self.all_parameters = list(self.call_signature.parameters)
        # read once: each wrt's name and position come from it (not a signature each)
        self.layout = ParameterLayout(signature.parameters.values())
        self.parameters = self.layout.positional
        shift = len(bound)
        self.wrt = tuple(self._parameter(w, shift) for w in ((wrt,) if self.single else wrt))
        self.indices = [self.layout.position(w) for w in self.wrt]
        self.code = None  # the compiler's cache entry holding this transform's code
        self.calls = None  # its table of code by signature (self.code.calls, read per call)
        self._guards = {}  # signature → (its code, the token, its guard or None); see _guard
        self._kept: tuple | None = None  # (code token, KeptStates, generators): _kept_states
        self.use_tape = mode == "tape"
        self.tape_function = self.function  # what the tape differentiates
        self.s2s_refusal: S2SGradError | None = None  # why mode "auto" took the tape
        self.bound_self = f.__self__ if isinstance(f, types.MethodType) else None
        self.wrap_single = not self.single and len(self.wrt) == 1  # wrt=(0,): 1-tuples
        self.one_tuple = self.wrap_single and kind == "grad" and not has_aux  # (gradient,)
        functools.update_wrapper(self, f, updated=())

    def __reduce__(self):
        return (_Transform, (self.f, self.given_wrt, self.has_aux, self.mode, self.kind))

    def __repr__(self) -> str:
        names = ", ".join(self.wrt)
        return f"<s2sgrad {self.kind} of {name_of(self.f)} wrt {names} (mode={self.mode!r})>"

    def _listing(self) -> str | None:
        """The generated code that ran last, else the generic code; ``None`` on the tape."""
        if self.use_tape:
            return None
        try:
            return listing(self.generated_code())
        except S2SGradError:
            return None

    def generated_code(self, latest: bool = True) -> GeneratedFunction:
        """The code that ran last, specialised to its shapes (``latest``), else the generic
        code, which works for any shapes (for ``sg.source``, ``sg.show`` and notebooks)."""
        if latest and self.latest is not None:
            return self.latest
        return derivative(self.function, self.wrt, self.kind, self.has_aux, frozenset())

    @property
    def latest(self):
        """The generated code made last for a call's shapes (for sg.source), or None."""
        return None if self.code is None else self.code.latest

    def generic_function(self, containers: frozenset = frozenset()):
        """The generated code of this transform for any shapes (for differentiating it again).

        ``containers`` names the parameters that hold dicts, lists or tuples.
        """
        if self.mode == "tape":
            raise UnsupportedError(
                f"{name_of(self.f)} is differentiated with mode='tape'; its derivative is "
                "differentiated on the tape too"
            )
        if self.binds and not isinstance(self.f, types.MethodType):
            raise UnsupportedError(
                f"{located_name(self.f)}: the derivative of a functools.partial is "
                "differentiated again here, and its generated code takes the arguments the "
                "partial binds; differentiate the function the partial wraps and pass them "
                "(sg.grad(sg.grad(f), wrt=0)(x, a)), or use mode='tape'"
            )
        function = derivative(
            self.function,
            self.wrt,
            self.kind,
            self.has_aux,
            frozenset(containers) & set(self.wrt),
            dynamic=self.mode == "auto",
        ).function
        if self.wrap_single:  # wrt=(0,): the 1-tuple this transform returns, there too
            return one_tuple_caller(function, self.kind, self.has_aux)
        return function

    def unbound(self) -> _Transform:
        """For a transform of a bound method, the same transform of its function, which
        takes ``self`` first (as the generated code does): what differentiating this
        transform again calls, with the bound object among the primals."""
        wrt = self.wrt[0] if self.single else tuple(self.wrt)
        return _Transform(self.function, wrt, self.has_aux, self.mode, self.kind)

    def _parameter(self, wrt, shift) -> str:
        if isinstance(wrt, str):
            if wrt not in self.all_parameters:
                raise ValueError(
                    f"{located_name(self.f)} has no parameter named {wrt!r}; its parameters "
                    f"are {', '.join(self.all_parameters)}"
                )
            return wrt
        if isinstance(wrt, (int, np.integer)) and not isinstance(wrt, bool):
            index = int(wrt) + shift if wrt >= 0 else self._from_the_end(int(wrt), shift)
            if 0 <= index < len(self.parameters) or (index >= 0 and self.layout.star):
                return self.layout.name(index)
            raise ValueError(
                f"{located_name(self.f)}: wrt={wrt} is out of range: it has "
                f"{len(self.parameters) - shift} positional parameters"
            )
        raise TypeError(
            f"{located_name(self.f)}: wrt must be an argument index or a parameter name, "
            f"not {wrt!r}"
        )

    def _from_the_end(self, wrt: int, shift: int) -> int:
        """The position of ``wrt=-k``, counted from the last positional parameter, as in
        ``jax.grad(f, argnums=-1)``: only where every call passes them all (no ``*args``, no
        defaults), so that the last parameter is the last argument."""
        star = self.layout.star
        defaults = [
            p
            for p in self.call_signature.parameters.values()
            if p.name in self.parameters and p.default is not p.empty
        ]
        if star or defaults:
            raise ValueError(
                f"{located_name(self.f)}: wrt={wrt} counts from the last argument, which "
                f"{'*args' if star else 'a default value'} leaves unknown "
                "until the call: give the argument's position from the start, or its name"
            )
        index = len(self.parameters) + wrt
        return index if index >= shift else -1  # -1: out of range, before the first argument

    # ``g(*args)`` calls ``g._entry(*args)`` without a frame of its own: the guard of the
    # signature this transform ran last (made in ``_guard``), which runs its code or, when
    # a test fails, calls ``_call_unguarded``; that method itself while there is none
    __call__ = property(operator.attrgetter("_entry"))

    def _call_unguarded(self, *args, **kwargs):
        try:
            return self._call_checked(args, kwargs)
        except BaseException as error:
            self._failed(error)
            raise

    _entry: Callable[..., Any] = _call_unguarded  # a transform's own: its guard (``_guard``)
    # signature → (its code, self.code's token, the guarded call of it, or None): the
    # guards made so far, one of which is ``_entry``
    _guards: dict[tuple, tuple]

    def _failed(self, error: BaseException) -> None:
        """What a call that raised stored on objects is no longer its computation's; a
        refusal names the user's file and line."""
        forget_all_stored()
        if isinstance(error, S2SGradError):
            name_the_origin(error, self.function)
        elif isinstance(error, Exception):
            note_generated_origin(error)

    def _guard(self, key: tuple, function: Callable, entries: list) -> None:
        """Make ``function`` (``calls[key]`` of ``self.code``, which depends on
        ``entries``) what the next call runs after the tests of the signature guard of
        ``key`` (compiler/signature_guards.py), before any other lookup."""
        kept = self._guards.get(key)
        if kept is None or kept[0] is not function or kept[1] is not self.code.token:
            guarded = self._guarded(key, function, entries)
            kept = self._guards[key] = (function, self.code.token, guarded)
        if kept[2] is not None:
            self._entry = kept[2]

    def _guarded(self, key: tuple, function: Callable, entries: list) -> Callable | None:
        """The guarded call of ``function`` for signature ``key`` (None if the signature
        has no guard): it shapes the result, and a call it refuses takes the usual way."""
        if self.one_tuple:
            shaped: Callable | str | None = "one_tuple"
        else:
            shaped = self._shape_result if self.wrap_single else None
        code = self.code
        return guarded_call(
            key,
            function,
            entries,
            miss=self._call_unguarded,
            failed=self._failed,
            result=shaped,
            current=(code, "token", code.token),
        )

    def _forget_guards(self) -> None:
        """Calls take the usual way until a call finds code for its signature again."""
        self.__dict__.pop("_entry", None)
        self._guards.clear()

    def _call_checked(self, args, kwargs):
        if not (kwargs or self.use_tape or self.binds):
            calls = self.calls
            first = calls is None  # this transform's first call: another's code, if any
            try:  # the hot path: arrays of shapes seen before (their signature)
                key = tuple(map(_SHAPE_AND_DTYPE, args))
                function, entries, _ = (self._shared_calls() if first else calls)[key]
            except (KeyError, AttributeError, TypeError):
                pass
            else:  # the key is the signature: shape, dtype and class of each array
                for entry in entries:  # Assumptions.hold, inlined
                    if entry.holder.get(entry.name, MISSING) is not entry.expected:
                        break  # a name f reads holds something else now
                    if entry.arrays and entry.reshaped():
                        break  # an array it holds changed shape in place
                else:
                    if not first:  # a transform called once (sg.grad(f)(x)) makes no guard
                        self._guard(key, function, entries)
                    else:  # what sg.source shows: this call's code, another's transform made
                        self.code.latest = generated_of(function) or self.code.latest
                    return (
                        self._shape_result(function(*args)) if self.wrap_single else function(*args)
                    )
        return self._call(args, kwargs)

    def _shared_calls(self) -> dict:
        """The code by signature that the cache holds for this transform's function and
        options, made by another transform of them (``sg.grad(f)(x)`` in a loop makes a
        new transform each time): what its first call would find there after the checks
        of a new signature, which a call of a signature in the table has passed. Taken
        as this transform's own (``_first_call`` takes it so); empty when there is none."""
        if callable(getattr(self.function, "generic_function", None)):
            return {}  # a transform's transform: its code is of the code generated for it
        options = (self.wrt, self.kind, self.has_aux, self.mode == "auto")
        code = CACHE.find(self.function, options)
        if code is None:
            return {}
        self.code, self.calls = code, code.calls
        return code.calls

    def _call(self, args, kwargs):
        _refuse_cyclic_arguments(args, kwargs)
        kept = self._kept_states(args, kwargs)
        start = None if kept is None else kept.note()
        try:
            return self._call_engine(args, kwargs)
        except S2SGradError as error:
            if self.mode != "auto":
                raise
            forget_all_stored()  # what the refused run stored on objects is no one's now
            if getattr(error, "whole_function_on_tape", False):  # a call the tape took over
                warn_fallback(self.function, error)
                self._switch_to_the_tape()
                if kept is not None:  # the tape's run starts where the refused run started
                    kept.set(start)
                return self._call_engine(args, kwargs)
            if not (  # its generated code, run on the tape, was refused
                getattr(error, "in_generated_code", False)
                and any(is_tape_value(leaf) for leaf in tree_leaves((args, kwargs)))
            ):
                raise
            warn_fallback(self.function, error)
            if kept is not None:
                kept.set(start)
            return self.on_the_tape()(*args, **kwargs)

    def _kept_states(self, args, kwargs) -> KeptStates | StatesAndDraws | None:
        """In mode "auto", before generated code runs: the state the function keeps (a
        counter in a dict, a model's attributes) and the random generators it can reach,
        which a run refused part way changed and the tape's run must start from as they
        were (it then draws what the refused run drew, once in all, as a plain call would).
        Walked once per code the transform runs; a generator passed as an argument is
        looked for at each call."""
        if self.mode != "auto" or self.use_tape:
            return None
        token = None if self.code is None else self.code.token
        made = self._kept
        if made is None or made[0] is not token:
            made = self._kept = (token, KeptStates(self.f), random_sources(self.f))
        values = (*args, *kwargs.values())
        kept = made[1].with_arguments(values)
        sources = made[2] + [v for v in values if isinstance(v, RANDOM_GENERATORS)]
        return StatesAndDraws(kept, self.f, sources=sources) if sources else kept

    def _call_engine(self, args, kwargs):
        if self.binds:  # read at each call: a partial's keywords may have changed
            _, bound, keywords = bound_arguments(self.f)
            args = (*bound, *args)
            kwargs = {**keywords, **kwargs} if keywords else kwargs
        if not self.use_tape:
            key = signature(args, kwargs)
            found = None if self.calls is None else self.calls.get(key)
            if found is not None and found[2].current():  # else built anew below
                if not kwargs and not self.binds:  # numbers, say: guarded next time
                    self._guard(key, found[0], found[1])
                result = found[0](*args, **kwargs)
                return self._shape_result(result) if self.wrap_single else result
        self._refuse_mismatched_call(args, kwargs)
        values = self._wrt_values(args, kwargs)
        for name, value in zip(self.wrt, values):
            check_differentiable(name, value, self.f)
        refuse_unknown_constants(self.f, self.all_parameters, args, kwargs)
        containers = frozenset(n for n, v in zip(self.wrt, values) if is_container(v))
        if not self.use_tape:
            with without_garbage_collection():
                generated = self._transform(containers, (args, kwargs))
                if generated is not None:
                    return self._first_call(key, generated, args, kwargs)
        try:
            return self._tape_call(args, kwargs, values)
        except S2SGradError as error:
            if self.s2s_refusal is None:
                raise
            after_s2s_refused(error, self.s2s_refusal)
            raise

    def _transform(self, containers, arguments=()):
        try:
            self._refuse_a_library_method()
            for name, value in zip(self.wrt, self._wrt_values(*arguments) if arguments else ()):
                refuse_array_attribute_names(name, value, self.f)
            if arguments:
                refuse_writes_into_caller_dicts(self.function, *arguments, self.wrt)
                refuse_arithmetic_objects(self.function, *arguments)
            generated = derivative(
                self.function,
                self.wrt,
                self.kind,
                self.has_aux,
                containers,
                dynamic=self.mode == "auto",
            )
            require_complex_ready(generated, arguments, self.f)
            return generated
        except S2SGradError as error:
            if not may_fall_back(self.mode, error, self.function):
                raise
            warn_fallback(self.function, error)
            self._switch_to_the_tape()
            self.tape_function = on_the_tape(self.function, error)
            self.s2s_refusal = error
            return None

    def _refuse_a_library_method(self) -> None:
        """A library's method with a rule (``sg.grad(stats.norm.logpdf)``) is refused as
        ``sg.grad(np.sin)`` is: its rule serves calls of it, and its source is the library's."""
        library = self.bound_self is not None and get_rule(self.f) is not None
        if library and get_rule(self.function) is None:
            raise UnsupportedError(
                f"{name_of(self.f)} has a derivative rule but no source of yours to "
                "transform; differentiate a function of yours that calls it ('def f(x): "
                "return stats.norm.logpdf(x)'), or use mode='auto' or mode='tape'"
            )

    def on_the_tape(self) -> _Transform:
        """This transform computed by the tape alone (its function's own transforms too):
        what the tape differentiates when generated code is refused.

        Example::

            sg.grad(f).on_the_tape()(x)  # as sg.grad(f, mode="tape")(x)
        """
        function = self.f
        twin = getattr(function, "on_the_tape", None)
        if callable(twin):
            function = twin()
        return _Transform(function, self.given_wrt, self.has_aux, "tape", self.kind)

    def _first_call(self, key, generated, args, kwargs):
        """Call a new signature's code once, specialising it to these shapes if safe."""
        result, ran = call_specialised(generated, args, kwargs, key)  # kept in the cache
        if generated.cached_in is not self.code:
            self._forget_guards()  # of another cache entry's code
        self.code = generated.cached_in
        self.calls = None if self.code is None else self.code.calls
        if self.code is not None:  # what sg.source shows: code another transform made too
            self.code.latest = ran
        return self._shape_result(result)

    def _switch_to_the_tape(self) -> None:
        """From now on the tape differentiates every call (generated code is refused)."""
        self.use_tape = True
        self._forget_guards()

    def _shape_result(self, result):
        if self.single or len(self.wrt) != 1:
            return result
        if self.kind == "value_and_grad":
            return result[0], (result[1],)
        if self.has_aux:  # (gradient, aux)
            return (result[0],), result[1]
        return (result,)

    def _refuse_mismatched_call(self, args, kwargs) -> None:
        """Arguments the user's function cannot take, said of it (the generated code would
        say it of ``df``, a name the user never wrote)."""
        try:
            self.call_signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{located_name(self.f)}(): {error}") from None

    def _wrt_values(self, args, kwargs):
        values = []
        for name, index in zip(self.wrt, self.indices):
            if index is not None and index < len(args):
                values.append(args[index])
            elif name in kwargs:
                values.append(kwargs[name])
            else:
                parameter = self.call_signature.parameters.get(name)
                default = inspect.Parameter.empty if parameter is None else parameter.default
                if default is inspect.Parameter.empty:
                    raise TypeError(f"{name_of(self.f)}() missing required argument {name!r}")
                values.append(default)
        return values

    def _tape_call(self, args, kwargs, values):
        refuse_value_class_patterns(self.function)  # tape_vjp sees only the adapter below

        target = self.tape_function
        if self.has_aux:
            target = first_of(target)
        self.call_signature.bind(*args, **kwargs)  # the call's own TypeError
        args, kwargs = _own_arrays(args), dict(zip(kwargs, _own_arrays(kwargs.values())))
        if all(i is not None and i < len(args) for i in self.indices):  # all passed by position
            out, pullback = tape_vjp(target, tuple(args), kwargs, tuple(self.indices))
        else:
            call = calling_with(target, self.function, args, kwargs, self.wrt, self.indices)
            out, pullback = tape_vjp(call, tuple(values), {}, tuple(range(len(values))))
        cotangents = pullback(seed_cotangent(out, origin=located_name(self.f)))
        gradients = cotangents[0] if self.single else tuple(cotangents)
        if self.has_aux:
            aux = plain_leaves(target.aux)  # the tape's values stay inside s2sgrad
            value = (out, aux)
        else:
            value = out
        if self.kind == "value_and_grad":
            return value, gradients
        return (gradients, aux) if self.has_aux else gradients


def _own_arrays(values) -> tuple:
    """``values`` with each NumPy array a private copy (read-only where it is): the tape runs
    the function on them, and an array it is given but does not differentiate (a buffer it
    fills) is a plain array, which the function's writes would change for the caller; the
    generated code copies an argument it writes into (``owned_argument``) just so. Lists and
    dicts stay the caller's (running statistics kept in a dict of state).

    Example::

        _own_arrays((x, 2.0))  # (a copy of x, 2.0)
    """
    return tuple(owned_argument(v) if type(v) is np.ndarray else v for v in values)


# the signature of arrays (compiler/specialize/criterion.py): a Dask array differs by class
_SHAPE_AND_DTYPE = operator.attrgetter("shape", "dtype", "__class__")


def _register_transforms_as_constructors() -> None:
    """Calling ``grad(f)`` inside differentiated code makes a function, not a value."""
    nondifferentiable(grad, value_and_grad, jacobian, jacfwd, hessian)
    makes_functions(grad, value_and_grad, jacobian, jacfwd, hessian)


# forward mode and derivative matrices ---------------------------------------------------
def jvp(f: Callable, primals: tuple | list, tangents: tuple | list, *, mode: str = "auto"):
    """``(f(*primals), J·tangents)``: a Jacobian-vector product by forward mode.

    Example::

        value, tangent = sg.jvp(lambda x: np.sin(x), (np.zeros(2),), (np.ones(2),))  # cos(0) = 1
    """
    check_mode(mode)
    if mode == "s2s":  # the tape (mode "auto" falls back to it) runs the builtin as it is
        _readable_signature(f, "jvp")
    given = isinstance(primals, (tuple, list)) and isinstance(tangents, (tuple, list))
    if given:
        _refuse_cyclic_arguments(tuple(primals))
    called = _partial_call(f, tuple(primals), mode) if given else None
    if called is None or len(primals) != len(tangents):
        return engines.jvp(f, primals, tangents, mode=mode)
    function, arguments, first = called
    return engines.jvp(
        function, arguments, _partial_tangents(arguments, first, tangents), mode=mode
    )


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
    check_mode(mode)
    _readable_signature(f, "jacobian")
    if _is_partial(f):
        return _of_partial(jacobian, f, wrt, mode)

    def jacobian_function(*args, **kwargs):
        _refuse_cyclic_arguments(args, kwargs)
        with _named_at(f):
            return _per_argument(reverse_jacobian, f, args, kwargs, wrt, mode)

    jacobian_function.__s2sgrad_matrix__ = "sg.jacobian"  # type: ignore[attr-defined]
    return functools.update_wrapper(jacobian_function, f, updated=())


def jacfwd(f: Callable, wrt: int | str | tuple = 0, *, mode: str = "auto") -> Callable:
    """The same Jacobian as :func:`jacobian`, built from input directions (forward mode).

    The columns of an argument leaf come from one forward pass over a batch of tangents
    where the generated code allows it, else from one forward pass per element.

    Example::

        sg.jacfwd(lambda x: x ** 2)(np.arange(3.0))  # diag([0, 2, 4])
    """
    check_mode(mode)
    if mode == "s2s":  # the tape (mode "auto" falls back to it) runs the builtin as it is
        _readable_signature(f, "jacfwd")
    if _is_partial(f):
        return _of_partial(jacfwd, f, wrt, mode)

    def jacobian_function(*args, **kwargs):
        _refuse_cyclic_arguments(args, kwargs)
        with _named_at(f):
            return _per_argument(forward_jacobian, f, args, kwargs, wrt, mode)

    jacobian_function.__s2sgrad_matrix__ = "sg.jacfwd"  # type: ignore[attr-defined]
    return functools.update_wrapper(jacobian_function, f, updated=())


def hessian(f: Callable, wrt: int | str | tuple = 0, *, mode: str = "auto") -> Callable:
    """The Hessian of a scalar ``f`` wrt one argument (forward over reverse), of shape
    ``arg.shape + arg.shape``. A tuple ``wrt`` gives the blocks ``H[i][j]``, the second
    derivatives wrt arguments ``wrt[i]`` and ``wrt[j]``, of shape
    ``arg_i.shape + arg_j.shape`` (JAX's layout).

    Example::

        sg.hessian(lambda x: np.sum(x ** 3))(np.ones(2))  # diag([6, 6])
        sg.hessian(lambda x, y: x**2 * y, wrt=(0, 1))(1.0, 2.0)  # blocks ((4, 2), (2, 0))
    """
    check_mode(mode)
    if _is_partial(f):
        return _of_partial(hessian, f, wrt, mode)
    jacobian_of_gradient = jacfwd(grad(f, wrt=wrt, mode=mode), wrt=wrt, mode=mode)
    if not isinstance(wrt, (tuple, list)):
        return jacobian_of_gradient
    count = len(wrt)

    @functools.wraps(f)
    def blocks(*args, **kwargs):
        _refuse_cyclic_arguments(args, kwargs)
        by_argument = jacobian_of_gradient(*args, **kwargs)  # [j][i]: d grad_i / d arg_j
        return tuple(tuple(by_argument[j][i] for j in range(count)) for i in range(count))

    return blocks


def hvp(f: Callable, primals: tuple | list, vectors: tuple | list, *, mode: str = "auto"):
    """Hessian-vector products of a scalar ``f`` without forming the Hessian.

    Returns one product per primal (forward mode over the reverse-mode gradient).

    Example::

        sg.hvp(lambda x: np.sum(x ** 3), (np.ones(2),), (np.ones(2),))  # (array([6., 6.]),)
    """
    check_mode(mode)
    for what, given in (("primals", primals), ("vectors", vectors)):
        if not isinstance(given, (tuple, list)):
            raise TypeError(
                f"hvp takes its {what} as a tuple with one entry per argument, as in "
                f"sg.hvp(f, (x,), (v,)); got {type(given).__name__}"
            )
    primals = tuple(primals)
    _refuse_cyclic_arguments(primals)
    called = _partial_call(f, primals, mode)
    if called is not None and len(primals) == len(vectors):
        function, arguments, first = called
        count = len(primals)
        wrt = first if count == 1 else tuple(range(first, first + count))
        tangents = _partial_tangents(arguments, first, vectors)
        _, found = jvp(grad(function, wrt=wrt, mode=mode), arguments, tangents, mode=mode)
        found = (found,) if count == 1 else found
        return tuple(as_gradient(p, x) for p, x in zip(found, primals))
    if len(primals) == 1:
        _, product = jvp(grad(f, wrt=0, mode=mode), primals, tuple(vectors), mode=mode)
        return (as_gradient(product, primals[0]),)
    gradient = grad(f, wrt=tuple(range(len(primals))), mode=mode)
    _, products = jvp(gradient, primals, tuple(vectors), mode=mode)
    # each product has its primal's structure: a float for a float (the tape's forward pass
    # over its gradient of np.clip(h, 0.0, None) gives a 0-d array)
    return tuple(as_gradient(p, x) for p, x in zip(products, primals))


def _refuse_cyclic_arguments(args: tuple, kwargs: dict | None = None) -> None:
    """Raise ``UnsupportedError`` if an argument is a list, tuple or dict that holds itself
    (``c = []; c.append(c)``): every description of an argument's structure (its shapes,
    its leaves) would never end.

    Example::

        _refuse_cyclic_arguments((np.ones(2), [1.0, 2.0]))  # no cycle: returns
    """
    for position, value in [*enumerate(args), *(kwargs or {}).items()]:
        if not isinstance(value, (list, tuple, dict)):
            continue
        on_path, finished = {id(value)}, set()
        walking = [(value, _held_in(value))]  # depth first, each container once
        while walking:
            container, held = walking[-1]
            for item in held:
                if not isinstance(item, (list, tuple, dict)) or id(item) in finished:
                    continue
                if id(item) in on_path:
                    raise UnsupportedError(
                        f"{user_location()}: argument {position!r} holds itself (a list, "
                        "tuple or dict inside which it appears again), so s2sgrad cannot "
                        "describe its structure; pass the values it holds without the cycle"
                    )
                on_path.add(id(item))
                walking.append((item, _held_in(item)))
                break
            else:
                walking.pop()
                on_path.discard(id(container))
                finished.add(id(container))


def _held_in(container: list | tuple | dict) -> Iterator:
    return iter(container.values() if isinstance(container, dict) else container)


def _is_partial(f: Callable) -> bool:
    """Whether ``f`` is a ``functools.partial`` of a Python function of the user's."""
    return isinstance(f, functools.partial) and bound_arguments(f)[0] is not f


def _of_partial(transform: Callable, f: Callable, wrt, mode: str) -> Callable:
    """``transform(f, wrt)`` of a partial, made as the transform of the function it wraps
    called with the partial's arguments, so that a derivative of it is differentiated
    again by source transformation (the gradient's code takes the bound arguments too)."""
    function, bound, _ = bound_arguments(f)
    shift = len(bound)
    moved = tuple(
        int(w) + shift if isinstance(w, (int, np.integer)) and not isinstance(w, bool) else w
        for w in _as_tuple(wrt)
    )
    single = not isinstance(wrt, (tuple, list))
    inner = transform(function, wrt=moved[0] if single else moved, mode=mode)

    def of_the_partial(*args, **kwargs):
        _, bound, keywords = bound_arguments(f)  # as it is now: its keywords may change
        return inner(*bound, *args, **{**keywords, **kwargs})

    return functools.update_wrapper(of_the_partial, function, updated=())


def _as_tuple(wrt) -> tuple:
    return tuple(wrt) if isinstance(wrt, (tuple, list)) else (wrt,)


@contextlib.contextmanager
def _named_at(f: Callable):
    """A refusal raised inside names the user's file and line (``f``'s, failing better);
    another exception raised in generated code gets a note saying where it came from."""
    try:
        yield
    except S2SGradError as error:
        name_the_origin(error, f)
        raise
    except Exception as error:  # the user's function raising in generated code
        note_generated_origin(error)
        raise


def _per_argument(matrix, f, args, kwargs, wrt, mode):
    """``matrix(f, args, kwargs, index, mode)`` for one ``wrt``, a tuple of them for a tuple."""
    for w in wrt if isinstance(wrt, (tuple, list)) else (wrt,):
        index = _argument_index(f, w)
        if index < len(args) and any(map(is_object_node, _nodes(args[index]))):
            raise TypeError(
                f"{name_of(f)}: a Jacobian or Hessian with respect to a dataclass or another "
                "object is not supported; use sg.grad or sg.hvp, or pass its arrays as "
                "arguments (sg.tree_flatten gives them)"
            )
    if isinstance(wrt, (tuple, list)):
        return tuple(matrix(f, args, kwargs, _argument_index(f, w), mode) for w in wrt)
    return matrix(f, args, kwargs, _argument_index(f, wrt), mode)


def _nodes(value):
    """``value`` and every dict, list and tuple entry inside it."""
    yield value
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _nodes(item)


def _argument_index(f, wrt) -> int:
    """The position among the arguments a caller passes (a bound ``self`` not counted)."""
    if isinstance(wrt, str):
        if isinstance(f, types.MethodType):
            return positional_parameters(f.__func__).index(wrt) - 1
        return positional_parameters(f).index(wrt)
    return int(wrt)


_register_transforms_as_constructors()
