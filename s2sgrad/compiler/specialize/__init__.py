"""Specialisation: generated code rewritten for the argument shapes of its first call.

Generic generated code cannot know shapes, so it calls helpers such as
``unbroadcast(g, x)`` that look at shapes at run time. When the shapes of every
intermediate follow from the shapes of the arguments, one run tells them all: the first
call with a new shape signature runs a *probe* copy of the code in which each such call
records what it saw, and the specialised copy replaces each call by what it amounts to
for those shapes (``g`` itself, ``np.sum(g, axis=0)``, ``g @ b.T``, a constant shape).
The result is both faster and closer to what a person would write.

One module per job (``compiler/finishing.py`` runs them in order, with the optimiser):

* ``criterion`` — whether shapes follow the arguments, and the signature code is kept under;
* ``probe`` — the instrumented copy, its run, and the rewrite of each probed site;
* ``seen`` — what a value looked like to the probe;
* ``rewrites`` — the specialisers, each declared on the rule of the function it rewrites;
* ``broadcasts`` — broadcasts that broadcasting restores, dropped;
* ``scatter`` — index cotangents summed into one buffer;
* ``index_scatter`` — an index cotangent of integer arrays as zeros and a write;
* ``exact_divisors`` — division by a power of two the shapes fix, as multiplication.
"""

from s2sgrad.compiler.specialize.criterion import shapes_follow_arguments, signature

__all__ = ["shapes_follow_arguments", "signature"]
