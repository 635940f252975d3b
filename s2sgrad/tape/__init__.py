"""The runtime tape: tape values, ``GradientTape``, ``Variable`` and ``constant``.

Tape values wrap NumPy values and record the operations applied to them while a
``GradientTape`` watches them, so plain NumPy code can be differentiated without being
transformed. ``tape_vjp`` is the entry point the function transforms use
(``grad(f, mode="tape")`` and the fallback of ``mode="auto"``).

Example::

    import numpy as np
    from s2sgrad.tape import GradientTape, constant

    x = constant(np.array([1.0, 2.0]))
    with GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.sin(x) * x)
    tape.gradient(y, x)  # array([1.38177329, 0.07700375])
"""

from s2sgrad.runtime import hooks
from s2sgrad.tape.gradient_tape import GradientTape
from s2sgrad.tape.values import TapeValue, apply, is_tape_value, value_of
from s2sgrad.tape.variables import Variable, constant
from s2sgrad.tape.vjp import tape_vjp

__all__ = [
    "GradientTape",
    "TapeValue",
    "Variable",
    "apply",
    "constant",
    "is_tape_value",
    "tape_vjp",
    "value_of",
]

# generated code running on tape values (grad of grad, dynamic dispatch) asks the runtime
hooks.register_tape(TapeValue, value_of, tape_vjp)
