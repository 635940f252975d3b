"""Helpers specialised with their caller: the derivative of a user function that the code
calls (``conv2d_vjp(x, w)`` and ``conv2d_vjp.backward(saved, g)``) is specialised to the
one signature the probe saw it called with, as the caller is to its own.

While the probe runs, each generated VJP the code calls is a :class:`CalleeProbe`: its
first call specialises the callee (``finishing.specialised``, handed over as
``Probing.specialise``), and so does the first call of its backward function. When every
call saw the same signature, the specialised code calls a :class:`SpecialisedCallee`:
the specialised pair for that signature, and the generic pair for any other (an integer
argument computed from values could change it), told apart by the saved value the forward
function returned.

Example::

    wrapped = callee_probes(namespace, specialise)   # the probe's namespace
    namespace.update(specialised_callees(wrapped))   # the specialised code's
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.compiler.codegen import GeneratedFunction, generated_of
from s2sgrad.compiler.optimize import optimize
from s2sgrad.compiler.optimize.paired_saves import drop_paired_saves
from s2sgrad.compiler.purity import purity_of
from s2sgrad.compiler.specialize.criterion import signature
from s2sgrad.compiler.specialize.primal_forward import primal_forward
from s2sgrad.compiler.specialize.seen import observed
from s2sgrad.compiler.specialize.shape_constants import constant_shapes
from s2sgrad.compiler.specialize.single_writes import assign_single_writes
from s2sgrad.compiler.syntax import clone

__all__ = ["CalleeProbe", "SpecialisedCallee", "callee_probes", "specialised_callees"]


class _Saved:
    """What a specialised forward function saved, marked as its (``__slots__``: cheap)."""

    __slots__ = ("saved",)

    def __init__(self, saved):
        self.saved = saved


class CalleeProbe:
    """A callee's generated VJP while the probe runs: specialises it on its first call and
    records whether every later call had the same signature."""

    def __init__(self, function, specialise: Callable):
        self.generic = function
        self.generated = generated_of(function)
        self.specialise = specialise
        self.key = None
        self.cotangent = None  # what the backward function's cotangent looked like
        self.forward = self.backward_code = None  # GeneratedFunctions, once specialised
        self.forward_node = self.backward_node = None  # their trees (compiling drops them)
        self.mixed = False  # called with two signatures: stays generic

    def __call__(self, *args, **kwargs):
        key = signature(args, kwargs)
        if self.key is None:
            self.key = key
            (value, saved), self.forward = self.specialise(self.generated, args, kwargs)
            if self.forward is self.generated:  # its probe failed: generic
                self.mixed = True
            else:
                self.forward_node = self.forward.node
            return value, _Saved(saved)
        if key != self.key or self.mixed:
            self.mixed = True
            return self.generic(*args, **kwargs)
        value, saved = self.forward.function(*args, **kwargs)
        return value, _Saved(saved)

    def backward(self, saved, g):
        if type(saved) is not _Saved:
            return self.generic.backward(saved, g)
        seen = observed(g)
        if self.backward_code is None and not self.mixed:
            self.cotangent = seen
            companion = self.generated.companion
            result, self.backward_code = self.specialise(companion, (saved.saved, g), {})
            if self.backward_code is self.generated.companion:
                self.mixed = True
            else:
                self.backward_node = self.backward_code.node
            return result
        if self.mixed or observed(_like(g, self.cotangent)) != self.cotangent:
            self.mixed = True
            return self.generic.backward(saved.saved, g)
        return self.backward_code.function(saved.saved, _like(g, self.cotangent))

    def specialised(self) -> SpecialisedCallee | None:
        """What the specialised caller calls instead, or None to keep the generic pair."""
        if self.mixed or self.forward is None or self.backward_code is None:
            return None
        self._drop_paired_saves()
        self.forward.companion = self.backward_code
        self.forward.__dict__.pop("function", None)  # compiled anew with its backward
        return SpecialisedCallee(
            self.key, self.forward.function, self.cotangent, self.generic, self.forward
        )

    def _drop_paired_saves(self) -> None:
        """Read the specialised pair together: what the backward function never reads
        the forward function no longer saves (``optimize/paired_saves.py``)."""
        if self.forward_node is None or self.backward_node is None:
            return
        forward, backward = clone(self.forward_node), clone(self.backward_node)
        namespace = self.forward.given_namespace
        is_pure = purity_of(namespace)
        changed = drop_paired_saves(forward, backward, is_pure)
        if self.key is not None and constant_shapes(forward, backward, self.key, namespace):
            forward.body = optimize(forward.body, is_pure)
            backward.body = optimize(backward.body, is_pure)
            changed = True
        primal = self.generated.primal
        if primal is not None and primal_forward(forward, primal, namespace, is_pure):
            changed = True
        if changed:
            assign_single_writes(backward)  # its loops run over literal ranges now
            _use_node(self.forward, forward)
            _use_node(self.backward_code, backward)


def _use_node(generated: GeneratedFunction, node) -> None:
    """``generated`` made to compile ``node`` (its code, source and names so far forgotten)."""
    generated.raw_node = node
    for derived in ("node", "source", "filename", "namespace", "function"):
        generated.__dict__.pop(derived, None)


class SpecialisedCallee:
    """A callee's VJP specialised to one signature, generic for the others.

    Called as the generated pair is: ``value, saved = f_vjp(*args)`` and
    ``f_vjp.backward(saved, g)``.
    """

    __slots__ = ("key", "fast", "fast_backward", "cotangent", "generic", "__s2sgrad_generated__")

    def __init__(self, key, fast, cotangent, generic, generated):
        self.key = key
        self.fast = fast
        self.fast_backward = fast.backward
        self.cotangent = cotangent
        self.generic = generic
        self.__s2sgrad_generated__ = generated  # what ``sg.source`` lists

    def __call__(self, *args, **kwargs):
        if signature(args, kwargs) != self.key:
            return self.generic(*args, **kwargs)
        value, saved = self.fast(*args, **kwargs)
        return value, _Saved(saved)

    def backward(self, saved, g):
        if type(saved) is not _Saved:
            return self.generic.backward(saved, g)
        g = _like(g, self.cotangent)
        if observed(g) != self.cotangent:
            return self.generic.backward(saved.saved, g)
        return self.fast_backward(saved.saved, g)


def _like(g, seen: tuple):
    """``g`` as the kind of value the probe saw: a specialised caller passes ``1.0`` where
    its probe passed ``seed_cotangent``'s NumPy 1.0 (the same number)."""
    if type(g) is float and seen[1] == () and seen[2] == "d":
        return np.float64(g) if seen[0] == "scalar" else np.array(g)
    return g


def callee_probes(namespace: dict, specialise: Callable | None) -> dict[str, CalleeProbe]:
    """A :class:`CalleeProbe` for each generated VJP in ``namespace`` that may be
    specialised to its arguments' shapes, by name."""
    if specialise is None:
        return {}
    probes = {}
    for name, value in namespace.items():
        generated = generated_of(value) if callable(value) else None
        if (
            generated is not None
            and generated.companion is not None
            and generated.shapes_follow_arguments
            and generated.companion.shapes_follow_arguments
            and hasattr(value, "backward")
        ):
            probes[name] = CalleeProbe(value, specialise)
    return probes


def specialised_callees(probes: dict[str, CalleeProbe]) -> dict[str, Any]:
    """What the specialised code calls instead of each callee the probe saw one way."""
    found = {name: probe.specialised() for name, probe in probes.items()}
    return {name: callee for name, callee in found.items() if callee is not None}
