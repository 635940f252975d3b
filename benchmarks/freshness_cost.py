"""What the freshness checks of a transformed function cost per call (for run.py).

Each call of an s2sgrad gradient checks that the globals and closure variables its code
reads still hold what they held, in the guard of the call's signature
(s2sgrad/compiler/signature_guards.py). :func:`freshness_cost` times the gradient with
those checks and a copy of it without them, side by side.

Example::

    times = freshness_cost(sg.grad(f), args, options)  # options.rounds, options.seconds
    times["path with"] - times["path without"]  # seconds the checks cost per call
"""

from __future__ import annotations

from collections.abc import Callable

from timing import interleaved_minimum


def without_freshness_checks(dfn, args: tuple) -> Callable:
    """A copy of the transformed function ``dfn`` whose hot path is its own without the
    freshness checks: the same guard of the signature of ``args``
    (s2sgrad/compiler/signature_guards.py), made with no entries, called the same way
    (``dfn(*args)`` calls its guard, ``_entry``), so that only the checks differ.
    ``rebuild()`` makes its guard again, for the code ``dfn.code.calls`` holds now."""
    from s2sgrad.compiler.specialize import signature

    key = signature(args, {})

    class Unchecked(type(dfn)):
        def rebuild(self):
            guard = self._guarded(key, self.code.calls[key][0], [])
            self._entry = guard or self._call_unguarded  # None: not guardable

    unchecked = object.__new__(Unchecked)  # not copy.copy: a transform pickles without code
    unchecked.__dict__.update(vars(dfn))  # shares the compiled functions
    unchecked._guards = {}
    unchecked.rebuild()
    return unchecked


def freshness_cost(dfn, args: tuple, options) -> dict[str, float]:
    """Seconds per call of s2sgrad's gradient with the freshness checks and without them,
    timed in alternating rounds; then the same two calls with a no-op in place of the
    compiled gradient, whose difference (``path with`` - ``path without``) is the checks'
    cost, measured where a loaded machine's noise is small next to it."""
    unchecked = without_freshness_checks(dfn, args)
    calls = {"with": lambda: dfn(*args), "without": lambda: unchecked(*args)}
    times = interleaved_minimum(calls, options.rounds, options.seconds)
    compiled = dict(dfn.code.calls)  # shared with the unchecked copy
    try:
        for key, (_, entries, assumptions) in compiled.items():
            dfn.code.calls[key] = (_no_op, entries, assumptions)
        _forget_fast_path(dfn)  # the guard of the last signature holds the real code
        unchecked.rebuild()
        paths = interleaved_minimum(calls, options.rounds * 4, options.seconds / 4)
    finally:
        dfn.code.calls.update(compiled)
        _forget_fast_path(dfn)
    times["path with"], times["path without"] = paths["with"], paths["without"]
    times["names"] = len(dfn.latest.assumptions.entries)
    return times


def _no_op(*args):
    return None


def _forget_fast_path(dfn) -> None:
    """Make the guards of ``dfn``'s code miss (s2sgrad/compiler/cache.py: a new token),
    which call the code they found directly; the next call finds it in ``calls`` again."""
    if hasattr(dfn.code, "forget_fast"):
        dfn.code.forget_fast()
