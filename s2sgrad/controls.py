"""Derivative controls: say what a derivative should be, watch it, and trade memory for time.

Every control is an entry in the rule registry, so the source transformer and the tape
honour it alike:

* :func:`stop_gradient` (alias :func:`without_derivative`) is declared non-differentiable;
* :func:`with_derivative` has a VJP rule (called at run time with the hook as an argument);
* :func:`checkpointed` marks a loop; the transformer makes it a call of
  ``s2sgrad.runtime.run_checkpointed``, whose custom derivative is registered here;
* :func:`derivative`, :func:`custom_gradient` and :func:`checkpoint` register a custom
  derivative ``df(*args) -> (value, pullback)`` for a function
  (:func:`s2sgrad.rules.registry.custom_derivative`). Generated code calls it through
  ``s2sgrad.runtime.custom_vjp``; the tape calls it when a recording tape tracks an
  argument and records the pullback (``s2sgrad.tape.values.call_custom``).

Example::

    @sg.custom_gradient
    def clip_gradient(x):
        return x, lambda g: np.clip(g, -1.0, 1.0)

    sg.grad(lambda x: clip_gradient(x) * 5.0)(3.0)  # 1.0: the cotangent 5.0, clipped
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import types
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from s2sgrad import numpy_signatures
from s2sgrad.api import jvp, vjp
from s2sgrad.compiler.pipeline import clear_cache
from s2sgrad.compiler.pipeline import derivative as _generated_derivative
from s2sgrad.errors import FallbackWarning, UnsupportedError, warn_at_caller
from s2sgrad.numpy_signatures import positional_parameters
from s2sgrad.rules.registry import (
    Rule,
    custom_derivative,
    forget_custom_derivative,
    get_rule,
    jvp_rule,
    nondifferentiable,
)
from s2sgrad.rules.registry import vjp_rule as _vjp_rule
from s2sgrad.running import running_origin
from s2sgrad.runtime.core import CotangentList, add_cotangents, unbroadcast, zeros_like_value
from s2sgrad.runtime.custom_cotangents import check_hook_cotangent
from s2sgrad.runtime.custom_stores import checked_derivative, checked_jvp, note_call
from s2sgrad.runtime.dispatch import backward_hooks_apply
from s2sgrad.runtime.kept_states import kept_states_of
from s2sgrad.runtime.replays import (
    changed_on_recomputing,
    fingerprint,
    random_sources,
    random_states,
    set_random_states,
    stores_while_checkpointed,
)
from s2sgrad.runtime.revolve import (
    CheckpointedLoop,
    Replay,
    check_snapshots,
    checkpointed,
    run_checkpointed,
)
from s2sgrad.tape import tape_vjp
from s2sgrad.tape.custom import called_by_tape
from s2sgrad.tape.rerouting import reroute, unroute
from s2sgrad.tape.structures import flatten
from s2sgrad.tape.values import (
    apply_rule,
    call_custom,
    is_recorded,
    is_tape_value,
    user_location,
    value_of,
)

__all__ = [
    "stop_gradient",
    "without_derivative",
    "derivative",
    "forget_derivative",
    "custom_gradient",
    "with_derivative",
    "checkpoint",
    "Checkpointed",
    "checkpointed",
]

F = TypeVar("F", bound=Callable)


# stop_gradient ---------------------------------------------------------------------------


def stop_gradient(x: Any) -> Any:
    """The value of ``x``, through which no derivative flows.

    The transformer treats the result as a constant (no derivative code is written for
    what depends only on it); on the tape it is the plain value. Containers are handled
    leaf by leaf.

    Example::

        def f(x):
            return x * stop_gradient(x)   # derivative: stop_gradient(x), not 2 * x

        sg.grad(f)(3.0)  # 3.0
    """
    return value_of(x)


#: Swift's name for :func:`stop_gradient` (the same function).
without_derivative = stop_gradient

nondifferentiable(stop_gradient)


# with_derivative --------------------------------------------------------------------------


def with_derivative(x: Any, hook: Callable[[Any], Any]) -> Any:
    """The value of ``x``; in the backward pass ``hook(g)`` sees the cotangent ``g`` of ``x``.

    If ``hook`` returns something other than ``None``, that replaces the cotangent which
    flows on to what ``x`` was computed from.

    Example::

        def f(x):
            a = with_derivative(np.sin(x), lambda g: print("d/da:", g))
            b = np.log(with_derivative(x, lambda g: 0.5))   # d/dx through log: now 0.5
            return a + b

        sg.grad(f)(30.0)  # prints "d/da: 1.0"; returns cos(30) + 0.5
    """
    _require_hook(hook)
    if is_recorded((x,)):
        return apply_rule(with_derivative, _value, (x, hook))
    return x


def _value(x: Any, hook: Any) -> Any:
    return x


def _require_hook(hook: Any) -> None:
    """Refuse a hook that is no function (``with_derivative(x, "log")``) where it is given,
    not as Python's TypeError from inside the backward pass."""
    if not callable(hook):
        raise UnsupportedError(
            f"{running_origin(user_location())}: with_derivative(x, hook) is given "
            f"{type(hook).__name__} {str(hook)[:40]!r} as its hook; give it a function of "
            "the cotangent (lambda g: ...), which returns a replacement or None"
        )


@_vjp_rule(with_derivative, inline=False)
def _with_derivative_vjp(g, ans, x, hook):
    if not backward_hooks_apply():  # the tape's forward mode: no backward pass
        return g, None
    _require_hook(hook)
    replacement = hook(g)
    if replacement is None:
        return g, None
    check_hook_cotangent(hook, replacement, g)
    if np.shape(replacement) != np.shape(g):  # a number for an array: the tape needs its shape
        if np.ndim(replacement) > np.ndim(g):
            replacement = unbroadcast(replacement, g)
        replacement = np.broadcast_to(replacement, np.shape(g))
    return replacement, None


@jvp_rule(with_derivative)
def _with_derivative_jvp(t, ans, x, hook):
    return t, None


# custom derivatives -------------------------------------------------------------------------


def derivative(*, of: Callable, jvp: Callable | None = None) -> Callable[[F], F]:
    """Register the decorated ``df(*args) -> (value, pullback)`` as the derivative of ``of``.

    Wherever ``of`` is called in differentiated code (by either engine), ``df`` runs
    instead: it computes the value once, and ``pullback(g)`` returns the cotangents of
    ``of``'s arguments (one value for one argument, else a tuple; ``None`` for an argument
    with none). ``of`` may be a user function or a library function (a NumPy ufunc or
    function, or any Python function). ``jvp(primals, tangents) -> (value, tangent)``
    optionally serves forward mode. Returns ``df`` unchanged.

    For a Python function ``of``, the tape needs to see its calls: ``of``'s code is
    replaced by a small dispatcher that calls the original code unless a recording tape
    tracks an argument (``inspect.signature`` and ``inspect.getsource`` still describe the
    original). Callables the tape cannot see into (builtins such as ``math.exp``, callable
    objects, bound methods) get their custom derivative in transformed code only.

    Example::

        def my_exp(x):
            return np.exp(x)

        @derivative(of=my_exp)
        def my_exp_derivative(x):
            y = my_exp(x)
            return y, lambda g: g * y

        sg.grad(lambda x: my_exp(x) * 2.0)(3.0)  # 40.17…
    """
    if not callable(of):
        raise TypeError(f"derivative(of=...) needs a function, not {of!r}")

    def register(df: F) -> F:
        # a number `of` stores around it, computed by df, would carry no derivative
        checked_jvp_ = None if jvp is None else checked_jvp(of, jvp)
        custom_derivative(of, checked_derivative(of, df), checked_jvp_)
        if isinstance(of, types.FunctionType):
            _dispatch_calls(of)
        _forget_generated_code()  # code generated before used the old derivative
        return df

    return register


def forget_derivative(*, of: Callable) -> bool:
    """Undo every ``@derivative(of=...)`` registered for ``of``: from the next call on, both
    engines differentiate ``of`` as they did before (by its rule, or its source). Returns
    whether ``of`` had a custom derivative.

    Example::

        sg.forget_derivative(of=my_exp)  # True
    """
    forgotten = forget_custom_derivative(of)
    if isinstance(of, types.FunctionType):
        unroute(of, _DISPATCH_PARAMETER)  # its own code again, which its source describes
    if forgotten:
        _forget_generated_code()  # code generated since used the custom derivative
    return forgotten


def custom_gradient(f: Callable) -> Callable:
    """Make ``f``, which returns ``(value, grad_fn)``, a function with derivative ``grad_fn``.

    Calling the result returns just the value; differentiating through it calls
    ``grad_fn(g)``, which returns the cotangents of the arguments (one value for one
    argument, else a tuple).

    Example::

        @custom_gradient
        def clip_gradient(y):
            def grad_fn(g):
                return g * 0.5 / max(np.linalg.norm(g), 0.5)   # clip_by_norm(g, 0.5)
            return y, grad_fn

        sg.grad(lambda v: clip_gradient(v * v))(2.0)  # 2.0 (not 4.0)
    """

    def value_only(*args: Any, **kwargs: Any) -> Any:
        if is_recorded(_captured(f)):  # grad_fn would take what f reads for constants
            error = UnsupportedError(
                f"{user_location()}: {getattr(f, '__qualname__', f)} (made with "
                "@custom_gradient) reads a value being differentiated from its enclosing "
                "function, and its grad_fn gives cotangents of its arguments only; pass that "
                "value as an argument, and return its cotangent from grad_fn too"
            )
            error.tape_cannot_either = True
            raise error
        return f(*args, **kwargs)[0]

    derivative_of = checked_derivative(f, f, runs_of=True)  # its stores, as a derivative's
    return _custom_function(f, value_only, derivative_of, captured=lambda: _captured(f))


def checkpoint(f: F) -> F:
    """``f``, but differentiated code does not keep its intermediates: they are recomputed.

    Calling the result calls ``f``. In differentiated code, the forward pass computes
    ``f(*args)`` without recording anything inside it, and the backward pass runs ``f``
    again (with ``s2sgrad.vjp``) when it reaches the call, so only ``f``'s arguments are
    kept in between. Works on functions and on layer objects (any callable; the result of
    checkpointing an object is a :class:`Checkpointed` wrapper).

    Example::

        @checkpoint
        def block(w, x):
            return np.tanh(x @ w)

        def loss(w, x):
            for _ in range(50):
                x = block(w, x)          # 50 blocks; one block's intermediates at a time
            return np.sum(x)
    """
    if isinstance(f, (types.FunctionType, types.MethodType)):
        checkpointed = _custom_function(
            f, f, _recomputing_derivative(f), _forward_derivative(f), lambda: _captured(f)
        )
        return cast(F, checkpointed)
    return cast(F, Checkpointed(f))


class Checkpointed:
    """A layer object whose activations are discarded and recomputed in the backward pass.

    Calls go to the wrapped layer; attributes are the layer's. Made by :func:`checkpoint`.

    Example::

        layer = Checkpointed(Conv2D(...))    # or checkpoint(Conv2D(...))
        y = layer(w, x)
    """

    def __init__(self, layer: Callable) -> None:
        if not callable(layer):
            raise TypeError(f"checkpoint needs a function or a callable layer, not {layer!r}")
        self.layer = layer
        self.__signature__ = _signature(layer)
        self.__name__ = getattr(layer, "__name__", type(layer).__name__)
        self.__qualname__ = getattr(layer, "__qualname__", type(layer).__qualname__)
        custom_derivative(self, _recomputing_derivative(layer), _forward_derivative(layer))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if is_recorded(args, kwargs) and not is_recorded(_captured(self.layer)):
            return call_custom(self, _rule_of(self), args, kwargs)
        return self.layer(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name == "layer":  # not set yet (copying, unpickling)
            raise AttributeError(name)
        return getattr(self.layer, name)

    def __repr__(self) -> str:
        return f"Checkpointed({self.layer!r})"


# checkpointed loops ---------------------------------------------------------------------------


def _checkpointed_loop(step, carried, read, iterable, snapshots=None, differentiated=None):
    """The custom derivative of ``run_checkpointed``: run the loop keeping at most
    ``snapshots`` snapshots of ``carried``; the pullback reverses it with Revolve."""
    check_snapshots(snapshots)
    items = iterable if isinstance(iterable, range) else list(iterable)  # a range costs nothing
    carried, read = tuple(carried), tuple(read)
    values = (*carried, *read)
    marked = (True,) * len(carried) + (
        (True,) * len(read) if differentiated is None else tuple(differentiated)
    )
    count, read_cotangents = len(carried), [None] * len(read)

    def advance(state: tuple, i: int) -> tuple:
        return tuple(step(*state, *read, items[i]))

    def taped(state: tuple, i: int) -> tuple:
        return step_vjp((*state, *read, items[i]))

    def backward(pullback: Callable, cotangent: tuple) -> tuple:
        cotangents = pullback(cotangent)
        for j, c in enumerate(cotangents[count:]):
            if c is not None:
                read_cotangents[j] = _accumulated(read_cotangents[j], c)
        return tuple(cotangents[:count])

    refusal = lambda: changed_on_recomputing(step)  # noqa: E731
    replay = Replay(random_sources(step, values), refusal, len(items))
    loop = CheckpointedLoop(advance, taped, backward, len(items), snapshots, replay=replay)
    final = loop.forward(carried)
    # a state entry may become floating in the loop (acc = 0, then acc = acc + w * t)
    step_vjp = _step_vjp(step, values, marked, (*final, *read))

    def pullback(g: Any) -> tuple:
        if not loop.stored:  # pulled back again: place the first snapshots again
            loop.forward(carried)
        read_cotangents[:] = [None] * len(read)
        state = loop.backward(_cotangent_parts(g, final))
        d_carried = CotangentList(_cotangent_parts(state, carried))
        d_read = CotangentList(  # none for the data the loop reads (not differentiated)
            c if c is not None or not marked[count + j] else zeros_like_value(read[j])
            for j, c in enumerate(read_cotangents)
        )
        return None, d_carried, d_read, None, None

    return final, pullback


def _accumulated(total: Any, cotangent: Any) -> Any:
    """``total + cotangent``, adding in place into an array of the loop's own."""
    if type(cotangent) is np.ndarray and cotangent.dtype.kind == "f":
        if total is None:
            return cotangent.copy()  # ours to add into: the step may have returned a view
        if type(total) is np.ndarray and total.shape == cotangent.shape:
            total += cotangent
            return total
    return cotangent if total is None else add_cotangents(total, cotangent)


def _checkpointed_loop_jvp(primals: tuple, tangents: tuple) -> tuple:
    """Forward mode of a checkpointed loop: the step's JVP at each step (nothing is kept)."""
    step, carried, read, iterable = primals[:4]
    d_carried = _cotangent_parts(tangents[1], carried)
    d_read = _cotangent_parts(tangents[2], read)
    carried, mode = tuple(carried), "s2s" if getattr(step, "s2s_only", False) else "auto"
    for t in iterable:
        carried, d_carried = jvp(
            step, (*carried, *read, t), (*d_carried, *d_read, zeros_like_value(t)), mode=mode
        )
        carried, d_carried = tuple(carried), _cotangent_parts(d_carried, carried)
    return carried, tuple(d_carried)


def _cotangent_parts(g: Any, values: tuple) -> tuple:
    """``g`` as one cotangent per entry of ``values`` (zeros where it has none)."""
    if g is None or (np.isscalar(g) and not isinstance(g, np.generic) and g == 0.0):
        g = [None] * len(values)
    parts = list(g)
    return tuple(zeros_like_value(v) if p is None else p for p, v in zip(parts, values))


def _is_floating(value: Any) -> bool:
    for leaf in flatten(value)[0]:
        if is_tape_value(leaf) or isinstance(leaf, (float, complex, np.inexact)):
            return True
        if isinstance(leaf, np.ndarray) and np.issubdtype(leaf.dtype, np.inexact):
            return True
    return False


def _step_vjp(step: Callable, values: tuple, marked: tuple, last: tuple) -> Callable:
    """``vjp(values) -> (new_state, pullback)`` of the loop's step on the engine that
    called, differentiated with respect to the ``values`` ``marked`` true that are floating
    before the first step or after the ``last``; ``pullback(g)`` returns one cotangent per
    value (``None`` for the others)."""
    varied = tuple(
        i
        for i, (v, w) in enumerate(zip(values, last))
        if marked[i] and (_is_floating(v) or _is_floating(w))
    )
    if not varied:  # nothing the loop reads or carries is differentiated
        return lambda args: (tuple(step(*args)), lambda g: [None] * len(args))
    on_tape = called_by_tape() or any(is_tape_value(leaf) for leaf in flatten(values)[0])
    if not on_tape:
        try:
            return _generated_step_vjp(step, values, varied)
        except UnsupportedError as error:
            if getattr(step, "s2s_only", False):
                raise
            warn_at_caller(
                f"{error} -- the checkpointed loop's body is differentiated with the tape",
                FallbackWarning,
            )
    return _tape_step_vjp(step, values, varied)


def _spread(cotangents: tuple, varied: tuple, count: int) -> list:
    spread = [None] * count
    for i, c in zip(varied, cotangents):
        spread[i] = c
    return spread


def _as_tuple(cotangents: Any, varied: tuple) -> tuple:
    return (cotangents,) if len(varied) == 1 else tuple(cotangents)


def _generated_step_vjp(step: Callable, values: tuple, varied: tuple) -> Callable:
    names = step.__code__.co_varnames[: step.__code__.co_argcount]
    containers = frozenset(names[i] for i in varied if isinstance(values[i], (tuple, list, dict)))
    dynamic = not getattr(step, "s2s_only", False)
    generated = _generated_derivative(
        step, tuple(names[i] for i in varied), "vjp", containers=containers, dynamic=dynamic
    )
    assert generated.companion is not None  # a VJP: the forward and the backward function
    forward, backward = generated.function, generated.companion.function
    count = len(names)

    def step_vjp(args: tuple) -> tuple:
        value, saved = forward(*args)
        return tuple(value), lambda g: _spread(
            _as_tuple(backward(saved, CotangentList(g)), varied), varied, count
        )

    return step_vjp


def _tape_step_vjp(step: Callable, values: tuple, varied: tuple) -> Callable:
    count = len(values) + 1

    def step_vjp(args: tuple) -> tuple:
        value, pullback = tape_vjp(step, args, {}, varied)
        return tuple(value), lambda g: _spread(tuple(pullback(tuple(g))), varied, count)

    return step_vjp


custom_derivative(run_checkpointed, _checkpointed_loop, _checkpointed_loop_jvp)


# how the controls work ---------------------------------------------------------------------


def _custom_function(
    f: Callable,
    plain: Callable,
    derivative_of: Callable,
    jvp: Callable | None = None,
    captured: Callable[[], tuple] = tuple,
) -> Callable:
    """A function that calls ``plain`` and whose registered derivative is ``derivative_of``
    (and ``jvp`` in forward mode). Where a recording tape tracks one of the values
    ``captured()`` returns (what ``plain`` reads besides its arguments), ``plain`` is called
    as it is, for the tape to record: the derivative, over the arguments alone, would take
    those values for constants.

    It has ``f``'s name, module, docstring and signature (so exports can import it by
    name and the transformer binds arguments to ``f``'s parameters), but no
    ``__wrapped__``: the transformer must not read ``f``'s source in its place.
    """

    def function(*args: Any, **kwargs: Any) -> Any:
        if is_recorded(args, kwargs) and not is_recorded(captured()):
            return call_custom(function, _rule_of(function), args, kwargs)
        return plain(*args, **kwargs)

    functools.update_wrapper(function, f)
    del function.__dict__["__wrapped__"]
    function.__dict__["__signature__"] = _signature(f)
    custom_derivative(function, derivative_of, jvp)
    return function


def _captured(f: Any) -> tuple:
    """What ``f`` reads besides its arguments that may hold values being differentiated:
    its closure's variables and defaults, and for a bound method or a layer object, the
    object's own attributes (``block = checkpoint(lambda v: np.sin(v) * w)`` reads ``w``).
    """
    if isinstance(f, types.MethodType):
        return (*_captured(f.__func__), *vars(f.__self__).values())
    if not isinstance(f, types.FunctionType):
        own = tuple(vars(f).values()) if hasattr(f, "__dict__") else ()
        call = next((vars(k)["__call__"] for k in type(f).__mro__ if "__call__" in vars(k)), None)
        return (*own, *(_captured(call) if isinstance(call, types.FunctionType) else ()))
    values = [*(f.__defaults__ or ()), *(f.__kwdefaults__ or {}).values()]
    for cell in f.__closure__ or ():
        with contextlib.suppress(ValueError):  # a cell not filled yet
            values.append(cell.cell_contents)
    return tuple(values)


def _rule_of(function: Callable) -> Rule:
    rule = get_rule(function)
    if rule is None:  # forgotten (s2sgrad.forget_custom_derivative) while in use
        raise ValueError(f"{function!r} has no derivative registered any more")
    return rule


def _recomputing_derivative(f: Callable) -> Callable:
    """The custom derivative of a checkpointed ``f``: compute plainly, recompute to pull back."""
    parameters = positional_parameters(f)
    function, bound = _unbound(f)

    def recomputing_derivative(*args: Any, **kwargs: Any):
        sources = random_sources(function, (*bound, *args, *kwargs.values()))
        before = random_states(sources)  # the run again draws the same random numbers
        kept = kept_states_of(f).with_arguments((*args, *kwargs.values()))
        state = kept.note()
        value = f(*args, **kwargs)
        if kept.stored_numbers(state, kept.note()):  # what this plain run computed
            raise stores_while_checkpointed(function)
        first = fingerprint(value, value_of)
        on_tape = called_by_tape() or any(is_tape_value(a) for a in args)
        if kwargs:  # s2sgrad.vjp takes positional primals
            args, kwargs = _as_positional(f, parameters, args, kwargs)
        # recompute on the engine that called; keyword-only arguments need the tape
        mode = "tape" if on_tape or kwargs else "auto"

        def pullback(g: Any) -> tuple:
            now = random_states(sources)
            set_random_states(sources, before)
            try:
                again, recomputed = _recomputed(function, (*bound, *args), kwargs, mode)
            finally:
                set_random_states(sources, now)
            if fingerprint(again, value_of) != first:
                raise changed_on_recomputing(function)
            return tuple(recomputed(g)[len(bound) :])

        return value, pullback

    return recomputing_derivative


def _forward_derivative(f: Any) -> Callable:
    """Forward mode of a checkpointed ``f``: its JVP (forward mode keeps no intermediates).
    A number ``f`` stores around it is refused, as in reverse mode: what ``jvp`` stores is
    a plain value, without its tangent, where the caller reads it back."""
    function = f if isinstance(f, (types.FunctionType, types.MethodType)) else f.__call__

    def forward_derivative(primals: tuple, tangents: tuple):
        return jvp(function, primals, tangents)

    return checked_jvp(f, forward_derivative, runs_of=True)


def _recomputed(function: Callable, args: tuple, kwargs: dict, mode: str) -> tuple:
    """Run ``function(*args, **kwargs)`` again, keeping what its pullback needs; return its
    value and the pullback (cotangents of the positional arguments)."""
    if mode == "tape":  # straight to the tape: its values may be recorded by an outer tape
        return tape_vjp(function, args, kwargs, tuple(range(len(args))))
    return vjp(function, *args, mode=mode)


def _unbound(f: Callable) -> tuple[Callable, tuple]:
    """A plain function behind ``f`` and the arguments bound before the caller's.

    ``layer`` becomes ``(type(layer).__call__, (layer,))``; a bound method ``obj.m`` becomes
    ``(type(obj).m, (obj,))``; a function stays itself.
    """
    if isinstance(f, types.FunctionType):
        return f, ()
    if isinstance(f, types.MethodType):
        return f.__func__, (f.__self__,)
    return type(f).__call__, (f,)


def _as_positional(
    f: Callable, parameters: list[str], args: tuple, kwargs: dict
) -> tuple[tuple, dict]:
    """``(args, kwargs)`` with every argument that can be passed positionally moved there."""
    bound = inspect.signature(f).bind(*args, **kwargs)
    bound.apply_defaults()
    positional = tuple(bound.arguments[name] for name in parameters if name in bound.arguments)
    return positional, {k: v for k, v in bound.arguments.items() if k not in parameters}


def _signature(f: Callable) -> inspect.Signature | None:
    try:
        return numpy_signatures.signature(f)
    except (TypeError, ValueError):
        return None


# letting the tape see calls of a Python function ------------------------------------------------

_DISPATCH_PARAMETER = "__s2sgrad_dispatch__"


def _dispatch_calls(f: types.FunctionType) -> None:
    """Replace ``f``'s code by a dispatcher (``tape/rerouting.py``), so every call of ``f``
    can reach the tape: it calls a copy of ``f`` with the original code, unless a recording
    tape tracks an argument: then it calls ``f``'s custom derivative and records its
    pullback. The registry is read at each call.
    """

    def dispatcher(original: types.FunctionType):
        def dispatch(args: tuple, kwargs: dict) -> Any:
            note_call(f)  # (its custom derivative refuses leaving out what f stores)
            if original.__closure__ and is_recorded(_captured(original)):
                _refuse_differentiated_closure(f)
            if is_recorded(args, kwargs):
                rule = get_rule(f)
                if rule is not None and rule.custom is not None:
                    return call_custom(f, rule, args, kwargs)
            return original(*args, **kwargs)

        return dispatch

    reroute(f, dispatcher, _DISPATCH_PARAMETER)


def _refuse_differentiated_closure(f: types.FunctionType) -> None:
    """Refuse a call of ``f``, which has a custom derivative and reads a value being
    differentiated from its enclosing function: the pullback gives cotangents of ``f``'s
    arguments only, so that value would be taken for a constant."""
    rule = get_rule(f)
    if rule is None or rule.custom is None:
        return
    error = UnsupportedError(
        f"{user_location()}: {f.__qualname__} has a custom derivative (@s2sgrad.derivative) "
        "and reads a value being differentiated from its enclosing function, whose "
        "cotangent its pullback cannot give; pass that value as an argument, and return its "
        "cotangent from the pullback too"
    )
    error.tape_cannot_either = True
    raise error


def _forget_generated_code() -> None:
    clear_cache()


def _dispatch_loop_calls() -> None:
    """On the tape, a call of ``run_checkpointed`` records its checkpointed derivative,
    which differentiates the read values the tape tracks (not the data the loop reads)."""

    def dispatcher(original: types.FunctionType):
        def dispatch(args: tuple, kwargs: dict) -> Any:
            if not is_recorded(args, kwargs):
                return original(*args, **kwargs)
            read = args[2] if len(args) > 2 else kwargs["read"]
            marks = {"differentiated": tuple(is_recorded((value,)) for value in read)}
            rule = get_rule(run_checkpointed)
            assert rule is not None  # registered below
            return call_custom(run_checkpointed, rule, args, kwargs | marks)

        return dispatch

    reroute(cast(types.FunctionType, run_checkpointed), dispatcher, _DISPATCH_PARAMETER)


_dispatch_loop_calls()
