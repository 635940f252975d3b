"""Tidying: make generated code read like a careful hand-written gradient.

One module per job:

* ``optimizer`` — the loop over a body's blocks, to a fixed point;
* ``folding`` — constant folding (``x * 1`` → ``x``, ``2 - 1`` → ``1``);
* ``copies`` — copy propagation, and folding single-use temporaries into their reader;
* ``accumulation`` — ``d = e1 … d = d + e2`` → ``d = e1 + e2``;
* ``saves`` — stack pushes and pops of values nobody reads once restored;
* ``facts`` — what each statement reads and writes, from one walk, kept until it changes;
* ``foldable`` — whether the folder would change a node (so a statement can be skipped);
* ``statements`` — small questions the rewrites ask about statements.

Dead code (side-effect-free assignments nobody reads) goes in the optimiser's own pass.
"""

from s2sgrad.compiler.optimize.folding import fold_constants
from s2sgrad.compiler.optimize.optimizer import optimize
from s2sgrad.compiler.optimize.saves import drop_unneeded_saves

__all__ = ["optimize", "fold_constants", "drop_unneeded_saves"]
