"""Names of library functions as their users write them: ``np.sin``, ``scipy.special.gammaln``.

A ufunc does not say which module it belongs to (NumPy's and SciPy's are all ``numpy.ufunc``),
so it is looked up among the modules imported so far: the shortest public module path that
holds it by its name.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["library_name"]


def library_name(obj: Any) -> str | None:
    """``np.<name>`` for NumPy's own functions, ``package.module.name`` for a function
    another library exports, or None when no imported module holds ``obj`` by its name.

    Example::

        library_name(np.sin)                # 'np.sin'
        library_name(scipy.special.gammaln)  # 'scipy.special.gammaln'
    """
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return None
    if getattr(np, name, None) is obj:
        return f"np.{name}"
    holders = [
        module_name
        for module_name, module in list(sys.modules.items())
        if module is not None
        and not any(part.startswith("_") for part in module_name.split("."))
        and getattr(module, name, None) is obj
    ]
    if not holders:
        return None
    best = min(holders, key=lambda m: (m.count("."), len(m)))
    return f"{best.replace('numpy', 'np', 1) if best.startswith('numpy') else best}.{name}"
