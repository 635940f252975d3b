"""The backward pass over a recording (see :mod:`s2sgrad.tape.recording`).

It walks a recording in reverse and calls each rule's VJP. Usually it calls the rules on
the plain arrays (as fast as NumPy allows); when a recording tape tracks the values involved
(a gradient of a gradient) it calls them on the tape values themselves, so the NumPy calls
inside the rules are recorded in turn.

Example::

    Backward(tape._entries, [x], tape._tracks).run([(y, 1.0)])  # [dy/dx]
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.rules.registry import differentiated_keyword, get_rule, per_argument
from s2sgrad.running import is_float_arithmetic_error
from s2sgrad.runtime.core import CotangentDict
from s2sgrad.tape.recording import RECORDING, is_traced
from s2sgrad.tape.specialize import specialized
from s2sgrad.tape.values import DICTS, ENTRYWISE_HELPERS, SEQUENCES, TapeValue, apply
from s2sgrad.tape.writes import versions_apart

__all__ = ["Backward", "traced_rule"]


_TRACED_RULES: dict[Callable, Callable] = {}


def traced_rule(function: Callable) -> Callable:
    """``function`` (a rule) with the runtime helpers it calls recorded as primitives.

    Run on tape values, a rule's NumPy calls are recorded by themselves; but a runtime helper
    (``index_cotangent``, ``unbroadcast``, …) may write into a fresh array, which a tape value
    cannot do. Each helper has rules of its own, so the copy of the rule returned here calls
    them through :func:`s2sgrad.tape.apply`, which records the helper's rule instead.

    Example::

        traced_rule(get_rule(operator.getitem).vjp)(g, ans, x, index)
    """
    traced = _TRACED_RULES.get(function)
    if traced is None:
        traced = _TRACED_RULES[function] = _reroute_helpers(function)
    return traced


def _reroute_helpers(function: Callable) -> Callable:
    namespace = getattr(function, "__globals__", None)
    if namespace is None:
        return function
    helpers = {
        name: _as_primitive(apply, value)
        for name, value in namespace.items()
        if isinstance(value, types.FunctionType) and get_rule(value) is not None
    }
    if not helpers:
        return function
    rerouted = types.FunctionType(
        function.__code__,
        {**namespace, **helpers},
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    rerouted.__kwdefaults__ = function.__kwdefaults__
    return rerouted


def _as_primitive(apply: Callable, helper: Callable) -> Callable:
    entrywise = helper.__name__ in ENTRYWISE_HELPERS

    def call(*args, **kwargs):
        if entrywise and len(args) == 2 and type(args[0]) in SEQUENCES:
            g, x = args
            if isinstance(x, (list, tuple)) and len(x) == len(g):  # each entry recorded
                return type(g)(u if u is None else call(u, v) for u, v in zip(g, x))
        if entrywise and len(args) == 2 and type(args[0]) in DICTS:
            g, x = args
            if isinstance(x, dict):  # an entry x lacks (a sparse cotangent's) gets nothing
                return type(g)(
                    (k, u if u is None else call(u, x[k])) for k, u in g.items() if k in x
                )
        return apply(helper, *args, **kwargs)

    return call


def _is_named_tuple(a: Any) -> bool:
    return isinstance(a, tuple) and hasattr(a, "_fields")


def _children(a: Any):
    """The elements of a list, tuple, named tuple or dict argument; None for other values."""
    t = type(a)
    if t in SEQUENCES or _is_named_tuple(a):
        return a
    return a.values() if t in DICTS else None


class Backward:
    """One tape's recording, prepared to pull cotangents from its targets back to ``sources``.

    ``tracked(x)`` says whether the tape tracks the tape value or Variable ``x``; only
    sources it tracks receive cotangents. ``run`` may be called many times (one row of a
    Jacobian per call).

    Example::

        backward = Backward(tape._entries, sources, tape._tracks)
        backward.run([(y, 1.0)])  # [dy/dsource for each source, or None]
    """

    def __init__(self, entries: list, sources: list, tracked) -> None:
        self.tape_value = TapeValue
        entries, sources = versions_apart(entries, sources, self.tape_value)
        self.sources = sources
        self.source_ids = {id(s) for s in sources if s is not None and tracked(s)}
        self.entries = self._relevant(list(entries))

    def _relevant(self, entries: list) -> list:
        """The entries that depend on a source, in order, as ``(vjp, args, kwargs, out)``.

        Each rule is specialised to the arguments that lead back to a source; fills
        ``self.reach`` with the ids of every value that depends on a source.
        """
        reach = set(self.source_ids)
        kept = []
        for rule, args, kwargs, out in entries:
            needed = tuple(
                id(a) in reach or (_children(a) is not None and self._touches(a, reach))
                for a in args
            )
            if any(needed):
                told = differentiated_keyword(rule.vjp, needed)  # see rules.registry
                if told:
                    kwargs = {**(kwargs or {}), **told}
                kept.append((specialized(rule.vjp, needed), args, kwargs, out))
                self._add_outputs(out, reach)
        self.reach = reach
        return kept

    def _touches(self, args, reach) -> bool:
        for a in _children(args):
            if id(a) in reach:
                return True
            if _children(a) is not None and self._touches(a, reach):
                return True
        return False

    def _add_outputs(self, out, reach) -> None:
        if isinstance(out, self.tape_value):
            reach.add(id(out))
        elif isinstance(out, (list, tuple)):
            for o in out:
                self._add_outputs(o, reach)
        elif isinstance(out, dict):
            for o in out.values():
                self._add_outputs(o, reach)

    def run(self, seeds: list) -> list:
        """Cotangents of the sources (``None`` where unconnected) for ``(target, seed)`` pairs."""
        grads: dict[int, Any] = {}
        for target, seed in seeds:
            if id(target) in self.reach and seed is not None:
                self._add(grads, id(target), seed)
        if not grads:
            return [None] * len(self.sources)
        traced = self._traced(seeds)
        tape_value = self.tape_value
        for vjp, args, kwargs, out in reversed(self.entries):
            g = self._take(grads, out)
            if g is None:
                continue
            if traced:
                vjp = traced_rule(vjp)
                result = vjp(g, out, *args, **kwargs) if kwargs else vjp(g, out, *args)
            else:
                raw_args = [a._value if type(a) is tape_value else self._raw(a) for a in args]
                ans = self._raw(out)
                try:
                    result = vjp(g, ans, *raw_args, **kwargs) if kwargs else vjp(g, ans, *raw_args)
                except (ArithmeticError, ValueError) as error:
                    result = _with_numpy_floats(error, vjp, g, ans, raw_args, kwargs)
            for arg, cotangent in zip(args, per_argument(result, len(args))):
                if cotangent is not None:
                    self._accumulate(grads, arg, cotangent)
        return [None if s is None else grads.get(id(s)) for s in self.sources]

    def _traced(self, seeds: list) -> bool:
        """Whether a recording tape tracks anything here: then the rules run on tape values."""
        if not RECORDING:
            return False
        if any(is_traced(seed) for _, seed in seeds):
            return True
        return any(self._any_traced(out) for _, _, _, out in self.entries)

    def _any_traced(self, out) -> bool:
        if isinstance(out, (list, tuple)):
            return any(self._any_traced(o) for o in out)
        if isinstance(out, dict):
            return any(self._any_traced(o) for o in out.values())
        return is_traced(out)

    def _take(self, grads, out):
        """The cotangent of an entry's output, or ``None``.

        For several outputs, a tuple (a list for a list) with ``None`` for unused ones.
        """
        if isinstance(out, self.tape_value):
            return self._pop(grads, id(out))
        if isinstance(out, dict):
            parts = {k: self._take(grads, o) for k, o in out.items()}
            return None if all(p is None for p in parts.values()) else parts
        if isinstance(out, (list, tuple)):
            parts = [self._take(grads, o) for o in out]
            if all(p is None for p in parts):
                return None
            return parts if isinstance(out, list) else tuple(parts)
        return None

    def _pop(self, grads, key):
        # A source's cotangent is read at the end; everything else is done with here.
        return grads.get(key) if key in self.source_ids else grads.pop(key, None)

    def _accumulate(self, grads, arg, cotangent) -> None:
        if type(arg) in SEQUENCES or _is_named_tuple(arg):  # a cotangent per element
            for a, c in zip(arg, cotangent):
                if c is not None:
                    self._accumulate(grads, a, c)
        elif type(arg) in DICTS and isinstance(cotangent, dict):  # sparse: missing is zero
            for key, a in arg.items():
                if cotangent.get(key) is not None:
                    self._accumulate(grads, a, cotangent[key])
        elif id(arg) in self.reach:
            self._add(grads, id(arg), cotangent)

    def _raw(self, x: Any) -> Any:
        """The plain value behind a recorded argument or output (containers element-wise)."""
        if isinstance(x, self.tape_value):
            return x._value
        if type(x) in SEQUENCES:
            return type(x)(self._raw(a) for a in x)
        if isinstance(x, tuple):  # a named tuple of outputs (eigh, slogdet, …)
            return type(x)(*(self._raw(a) for a in x))
        if isinstance(x, dict):
            raw = {k: self._raw(v) for k, v in x.items()}
            return CotangentDict(raw) if type(x) is CotangentDict else raw
        return x

    @staticmethod
    def _add(grads, key, cotangent) -> None:
        old = grads.get(key)
        grads[key] = cotangent if old is None else old + cotangent


def _with_numpy_floats(error: Exception, vjp: Callable, g: Any, ans: Any, args: list, kwargs):
    """A rule's cotangents where Python's float arithmetic raised (``g / (2 * ans)`` of
    ``math.sqrt(0.0)``): computed again with NumPy floats, which give inf or nan as they
    do for ``np.sqrt``. Any other error is raised again."""
    floats = [g, ans, *args]
    if not is_float_arithmetic_error(error) or not any(type(v) is float for v in floats):
        raise error
    g, ans, *args = (np.float64(v) if type(v) is float else v for v in floats)
    return vjp(g, ans, *args, **(kwargs or {}))
