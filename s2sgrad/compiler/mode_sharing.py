"""One build for mode "s2s" and mode "auto" where the two would write the same code.

The modes ask the pipeline for a derivative with ``dynamic`` False ("s2s") or True
("auto"), two entries of the cache. The flag changes the generated code in exactly these
places, each of which leaves a mark in the code's namespace:

* a call resolved when it runs, in either sweep (and a callee whose derivative was refused
  while transforming, or a recursive call, which becomes one): the dispatch helper bound
  is ``transformed_vjp``/``transformed_method_vjp``/``transformed_jvp``/
  ``transformed_method_jvp`` in mode "s2s", ``dynamic_vjp``/``method_vjp``/``dynamic_jvp``/
  ``method_jvp`` in mode "auto" (``DISPATCH_HELPERS``);
* a checkpointed loop: its step function carries ``s2s_only`` and ``run_checkpointed`` is
  bound;
* the derivative of a user function it calls (or of a rule's stand-in), built with the same
  flag: bound as that derivative's compiled function, looked at in turn.

Code whose namespace holds none of these (its callees' neither) is what the other mode
would build, so a request of one mode takes the other's current code for the same function
and options (``built_for_the_other_mode``) and its specialisations with it, which the
transforms of both then share (a test checked in mode "s2s", then "auto"; ``sg.hvp`` of
a function whose gradient ran in the other mode). Freshness is unchanged: the code is
taken only while its assumptions hold, and every call checks them as before.

Example::

    sg.grad(f, mode="s2s")(x); sg.grad(f, mode="auto")(x)  # one build of f's gradient
"""

from __future__ import annotations

import functools
import types
from typing import Any

from s2sgrad import runtime
from s2sgrad.compiler.cache import CACHE
from s2sgrad.compiler.codegen import GeneratedFunction, generated_of
from s2sgrad.runtime.revolve import run_checkpointed

__all__ = ["DISPATCH_HELPERS", "built_for_the_other_mode", "same_in_either_mode"]

# the run-time dispatch the sweeps choose by mode (reverse/calls.py, forward/calls.py)
DISPATCH_HELPERS = (
    runtime.dynamic_vjp,
    runtime.transformed_vjp,
    runtime.method_vjp,
    runtime.transformed_method_vjp,
    runtime.dynamic_jvp,
    runtime.transformed_jvp,
    runtime.method_jvp,
    runtime.transformed_method_jvp,
)
_MODE_MARKS = frozenset(map(id, (*DISPATCH_HELPERS, run_checkpointed)))


def built_for_the_other_mode(
    function: Any, options: tuple, containers: frozenset
) -> GeneratedFunction | None:
    """The current generic derivative of ``function`` that the cache holds for
    ``options`` ``(wrt, kind, has_aux, dynamic)`` with ``dynamic`` the other way, if
    its code is the same in either mode; else None.

    Example::

        built_for_the_other_mode(f, (("x",), "grad", False, True), frozenset())
    """
    wrt, kind, has_aux, dynamic = options
    entry = CACHE.find(function, (wrt, kind, has_aux, not dynamic))
    generated = None if entry is None else entry.generic.get(containers)
    if generated is None or not generated.assumptions.current():
        return None
    return generated if same_in_either_mode(generated) else None


def same_in_either_mode(generated: GeneratedFunction) -> bool:
    """Whether ``generated`` (a generic derivative) is the code the pipeline builds with
    ``dynamic`` either way: nothing bound in its namespace depends on it (module docstring).
    Found once per code.

    Example::

        same_in_either_mode(derivative(f, ("x",)))  # False if f calls a method of its argument
    """
    found = generated.__dict__.get("_same_in_either_mode")
    if found is None:
        found = generated.__dict__["_same_in_either_mode"] = _free_of_mode_marks(generated, set())
    return found


def _free_of_mode_marks(generated: GeneratedFunction, seen: set[int]) -> bool:
    if id(generated) in seen:
        return True  # looked at already, higher up
    seen.add(id(generated))
    known = generated.__dict__.get("_same_in_either_mode")
    if known is not None:
        return known
    namespaces = [generated.given_namespace]
    if generated.companion is not None:
        namespaces.append(generated.companion.given_namespace)
    return all(_holds_no_mark(value, seen) for ns in namespaces for value in list(ns.values()))


def _holds_no_mark(value: Any, seen: set[int], depth: int = 0) -> bool:
    if id(value) in _MODE_MARKS:
        return False
    if isinstance(value, GeneratedFunction):
        return _free_of_mode_marks(value, seen)
    if isinstance(value, functools.partial):
        held = [value.func, *value.args, *value.keywords.values()]
        return depth < 2 and all(_holds_no_mark(v, seen, depth + 1) for v in held)
    if not isinstance(value, types.FunctionType):  # a module, an array, a user's object
        return True
    if "s2s_only" in value.__dict__:  # a checkpointed loop's step
        return False
    inner = generated_of(value)
    if inner is not None:  # a callee's derivative, built with the same flag
        return _free_of_mode_marks(inner, seen)
    if value.__closure__ and (value.__module__ or "").startswith("s2sgrad."):
        # a runtime wrapper (a custom rule's caller): what it holds is looked at too
        if depth >= 2:
            return False  # wrappers of wrappers are not looked into, so not shared
        held = []
        for cell in value.__closure__:
            try:
                held.append(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
        return all(_holds_no_mark(v, seen, depth + 1) for v in held)
    return True
