"""The runtime helpers that generated code calls, recorded as primitives on the tape.

Any transform applies to any generated gradient: ``grad(grad(f), mode="tape")`` over an
s2s gradient runs the generated code on tape values. That code calls the helpers of
:mod:`s2sgrad.runtime` (``index_cotangent``, ``unbroadcast``, ``pack_like``, …), whose
bodies may write into a fresh array of zeros or read a plain number, which a tape value
cannot follow. Each of them has rules of its own, so while a tape records, each one's code
is replaced by a router (:mod:`s2sgrad.tape.rerouting`): given a value a recording tape
tracks, it computes the helper on plain values and records its rule, as for a NumPy
function; given anything else, it runs the helper's own code. When no tape records, the
helpers get their own code back, so generated code runs at full speed.

Example::

    install()    # done by GradientTape when the first tape starts recording
    uninstall()  # when the last one stops
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.rules.registry import get_rule
from s2sgrad.runtime.core import as_gradient
from s2sgrad.runtime.object_gradients import is_object_node
from s2sgrad.tape.rerouting import original_of, reroute
from s2sgrad.tape.values import (
    DICTS,
    ENTRYWISE_HELPERS,
    SEQUENCES,
    TapeValue,
    apply_rule,
    is_recorded,
    value_of,
)

__all__ = ["install", "uninstall", "routed_helpers"]

_ROUTE_PARAMETER = "__s2sgrad_runtime_route__"
# (helper, (code, defaults, kwdefaults) routed, (code, defaults, kwdefaults) its own)
_STATES: list[tuple[types.FunctionType, tuple, tuple]] = []


def routed_helpers() -> list[types.FunctionType]:
    """The runtime helpers recorded as primitives on the tape: those with a derivative
    rule, and those that make the zeros generated code adds cotangents into. (One without a
    derivative runs on tape values as a NumPy function would: its calls are recorded as
    non-differentiable.)

    Example::

        index_cotangent in routed_helpers()  # True
    """
    import s2sgrad.runtime as runtime

    helpers = []
    for name in runtime.__all__:
        helper = getattr(runtime, name)
        rule = get_rule(helper)
        if not isinstance(helper, types.FunctionType) or rule is None:
            continue
        if rule.differentiable or helper.__name__ in _BLANK_HELPERS:
            helpers.append(helper)
    return helpers


def install() -> None:
    """Give every helper of :func:`routed_helpers` its router (made the first time)."""
    if not _STATES:
        _route_all()
    for helper, routed, _ in _STATES:
        _set_state(helper, routed)


def uninstall() -> None:
    """Give every routed helper its own code back."""
    for helper, _, own in _STATES:
        _set_state(helper, own)


def _route_all() -> None:
    for helper in routed_helpers():
        if not reroute(helper, functools.partial(_router, helper), _ROUTE_PARAMETER):
            continue
        original = original_of(helper)
        own = (original.__code__, original.__defaults__, original.__kwdefaults__)
        _STATES.append((helper, _state(helper), own))


def _router(helper: Callable, original: Callable) -> Callable:
    blank = helper.__name__ in _BLANK_HELPERS
    entrywise = helper.__name__ in ENTRYWISE_HELPERS

    def route(args: tuple, kwargs: dict) -> Any:
        if not is_recorded(args, kwargs):
            return original(*args, **kwargs)
        if entrywise and args and type(args[0]) in _CONTAINER_TYPES:
            return original(*args, **kwargs)  # its code calls it on each entry: recorded
        if helper is as_gradient and len(args) == 2 and is_object_node(args[1]):
            # a dataclass's gradient, rebuilt by its code from each attribute's, each call
            # recorded (as one call, the object it returns would hold untracked values)
            return original(*args, **kwargs)
        if helper.__name__ in _MOVING_HELPERS:  # the tape values themselves, moved:
            return original(*args, **kwargs)  # as one call, an object would hold plain ones
        if blank:
            return _blank_values(original(*value_of(args), **value_of(kwargs)))
        return apply_rule(helper, original, args, kwargs)

    return route


_CONTAINER_TYPES = (*SEQUENCES, *DICTS)

# Helpers that only move values between an object and its cotangent by attribute
# (``runtime/records.py``): run on the tape values, which then keep their own records
# (``with_attribute`` recorded by its rule made an object holding untracked values, and
# the tape over an s2s gradient lost what flowed through the attribute stored)
_MOVING_HELPERS = frozenset(
    {"with_attribute", "without_attribute", "attribute_part", "attribute_only"}
)

# Helpers that make the zeros generated code then adds cotangents into, item by item
# (``dx = zeros_like_value(x)``, then ``dx[0] += dt``): for a value being differentiated,
# tape values tracked by no tape, so that the tape records those writes.
_BLANK_HELPERS = frozenset({"zeros_like_value", "zeros_like_structure"})


def _blank_values(zeros: Any) -> Any:
    if isinstance(zeros, np.ndarray):
        return TapeValue(zeros, ())
    if type(zeros) in SEQUENCES:  # generated code's containers too
        return type(zeros)(_blank_values(z) for z in zeros)
    if type(zeros) in DICTS:
        return type(zeros)((k, _blank_values(z)) for k, z in zeros.items())
    return zeros


def _state(function: types.FunctionType) -> tuple:
    return function.__code__, function.__defaults__, function.__kwdefaults__


def _set_state(function: types.FunctionType, state: tuple) -> None:
    function.__code__, function.__defaults__, function.__kwdefaults__ = state
