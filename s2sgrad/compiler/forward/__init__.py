"""Forward mode: tangent statements interleaved with the primal ones (a JVP).

- ``sweep``: the statements in order, a :class:`~s2sgrad.compiler.steps.Step` for each
  assignment (how its tangent is taken, what is refused); ``forward_sweep`` is the entry.
- ``tangents``: the tangent of a primitive's value, from its JVP rule.
- ``calls``: tangents of calls of user functions and of calls dispatched at run time.
"""

from s2sgrad.compiler.forward.sweep import TangentProgram, forward_sweep

__all__ = ["TangentProgram", "forward_sweep"]
