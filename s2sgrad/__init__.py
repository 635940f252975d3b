"""s2sgrad: source-to-source automatic differentiation for Python and NumPy.

Example::

    import numpy as np
    import s2sgrad as sg

    def loss(w, x, y):
        return np.mean((x @ w - y) ** 2)

    dloss = sg.grad(loss)
    print(sg.source(dloss))   # the generated gradient, as Python source
"""

import importlib

# Every rule module registers its rules when imported: all of them before anything asks.
from s2sgrad.rules import array_api as _array_api  # noqa: F401
from s2sgrad.rules import eig as _eig  # noqa: F401
from s2sgrad.rules import elementwise as _elementwise  # noqa: F401
from s2sgrad.rules import fft as _fft  # noqa: F401
from s2sgrad.rules import histograms as _histograms  # noqa: F401
from s2sgrad.rules import histograms_grid as _histograms_grid  # noqa: F401
from s2sgrad.rules import linalg as _linalg  # noqa: F401
from s2sgrad.rules import more_numpy as _more_numpy  # noqa: F401
from s2sgrad.rules import nan_reductions as _nan_reductions  # noqa: F401
from s2sgrad.rules import polynomials as _polynomials  # noqa: F401
from s2sgrad.rules import python_math as _python_math  # noqa: F401
from s2sgrad.rules import real_if_close as _real_if_close  # noqa: F401
from s2sgrad.rules import reductions as _reductions  # noqa: F401
from s2sgrad.rules import scientific as _scientific  # noqa: F401
from s2sgrad.rules import shapes as _shapes  # noqa: F401
from s2sgrad.rules import statistics as _statistics  # noqa: F401
from s2sgrad.rules import ufunc_methods as _ufunc_methods  # noqa: F401

# isort: split
# which of the rules above are right for complex values: after them all
from s2sgrad.rules import complex as _complex  # noqa: F401

# the integer arguments of the rules above (shapes, axes, counts): after them all
from s2sgrad.rules import integer_arguments as _integer_arguments  # noqa: F401

# isort: split
from s2sgrad.api import grad, hessian, hvp, jacfwd, jacobian, jvp, value_and_grad, vjp
from s2sgrad.batching.vmap import vmap
from s2sgrad.checking import check_grads
from s2sgrad.controls import (
    checkpoint,
    checkpointed,
    custom_gradient,
    derivative,
    forget_derivative,
    stop_gradient,
    with_derivative,
    without_derivative,
)
from s2sgrad.errors import (
    NonDifferentiableError,
    S2SGradError,
    S2SGradWarning,
    UnsupportedError,
)
from s2sgrad.inspection import export, show, source
from s2sgrad.pytrees import register_pytree, tree_flatten, tree_leaves, tree_map, tree_unflatten
from s2sgrad.tape import GradientTape, Variable, constant
from s2sgrad.tracing import trace

__all__ = [
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "jacobian",
    "jacfwd",
    "hessian",
    "hvp",
    "vmap",
    "check_grads",
    "stop_gradient",
    "without_derivative",
    "derivative",
    "forget_derivative",
    "custom_gradient",
    "with_derivative",
    "checkpoint",
    "checkpointed",
    "source",
    "show",
    "export",
    "trace",
    "register_pytree",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_map",
    "GradientTape",
    "Variable",
    "constant",
    "S2SGradError",
    "UnsupportedError",
    "NonDifferentiableError",
    "S2SGradWarning",
]

__version__ = "0.1.0"


def __getattr__(name: str):
    """``sg.optimizers`` without importing it first (it is not needed to differentiate)."""
    if name == "optimizers":
        return importlib.import_module("s2sgrad.optimizers")
    raise AttributeError(f"module 's2sgrad' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API only: the modules s2sgrad is built from are not part of it."""
    return sorted([*__all__, "optimizers", "pytrees", "__version__"])
