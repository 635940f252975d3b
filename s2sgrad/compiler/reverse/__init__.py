"""Reverse mode: a forward sweep that records steps, a backward sweep that reads them back.

The forward sweep is the primal code, with calls to other user functions replaced by
calls to their own generated VJPs, and with a value pushed on a stack just before a
statement overwrites it, when the backward sweep will need it again. The backward sweep
visits the forward sweep's steps in reverse and, for each, writes the derivative of what
it computes, then pops what the statement overwrote. Branches are replayed with the same
test; loops run their ``range`` backwards (or, for ``while`` loops and loops that
``break``, as many times as the forward sweep counted). The first contribution to a
cotangent is assigned, later ones are added.

Where to change what, by module:

- ``assembly``: the order of the whole (``reverse_sweeps``, the public entry).
- ``forward_sweep``: what the forward sweep does with a statement and records for it
  (a new kind of statement starts here: give it a :class:`~s2sgrad.compiler.steps.Step`);
  what is refused.
- ``backward_sweep``: blocks, branches and loops in reverse.
- ``adjoints``: the derivative of each kind of statement (a new kind of statement ends
  here: its adjoint block).
- ``rules``: the adjoint of a primitive, its rule inlined (new primitives get a rule in
  ``s2sgrad/rules/``, not code here).
- ``calls``: calls of user functions and calls dispatched at run time, both sweeps.
- ``saves``: values pushed before they are overwritten, the stack, and dropping the
  saves nobody reads.
- ``cotangents``: which cotangents exist and are private while the backward sweep writes.
- ``context``, ``facts``: what every part reads about the function and its body.

The record the sweeps hand over is :mod:`s2sgrad.compiler.steps`.
"""

from s2sgrad.compiler.reverse.assembly import ReverseSweeps, reverse_sweeps

__all__ = ["ReverseSweeps", "reverse_sweeps"]
