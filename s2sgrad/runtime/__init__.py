"""Everything generated code may call besides NumPy.

Exported gradient modules import only ``numpy`` and this package, so every helper a
derivative rule uses lives in one of the submodules re-exported here. (:mod:`hooks` is not
re-exported: it is how the layers above hand the runtime what it asks of them.)
"""

from s2sgrad.runtime import (
    dispatch,
    elementwise,
    fft,
    linalg,
    reductions,
    scientific,
    shapes,
    ufunc_methods,
)
from s2sgrad.runtime.core import *  # noqa: F403
from s2sgrad.runtime.core import __all__ as _core_all
from s2sgrad.runtime.revolve import run_checkpointed

__all__ = [*_core_all, "run_checkpointed"]

for _module in (elementwise, reductions, linalg, shapes, fft, scientific, ufunc_methods, dispatch):
    for _name in _module.__all__:
        globals()[_name] = getattr(_module, _name)
        __all__.append(_name)
