"""Names of library functions as their users write them: ``np.sin``, ``scipy.special.gammaln``.

A ufunc does not say which module it belongs to (NumPy's and SciPy's are all ``numpy.ufunc``),
so it is looked up among the modules imported so far: the shortest public module path that
holds it by its name. A method of a library object is named after the object
(``scipy.stats.norm.logpdf``).
"""

from __future__ import annotations

import os
import sys
import sysconfig
import types
import warnings
from typing import Any

import numpy as np

__all__ = ["describe", "library_entry", "library_name"]


def library_name(obj: Any) -> str | None:
    """``np.<name>`` for NumPy's own functions, ``package.module.name`` for a function
    another library exports, or None when no imported module holds ``obj`` by its name.

    Example::

        library_name(np.sin)                # 'np.sin'
        library_name(scipy.special.gammaln)  # 'scipy.special.gammaln'
        library_name(scipy.stats.norm.logpdf)  # 'scipy.stats.norm.logpdf'
    """
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return None
    owner = getattr(obj, "__self__", None)
    owner_name = str(getattr(owner, "__name__", ""))
    if isinstance(owner, np.ufunc) and getattr(np, owner_name, None) is owner:
        return f"np.{owner_name}.{name}"  # a ufunc's method: np.add.reduce
    if isinstance(obj, types.MethodType) and not isinstance(obj.__self__, (type, types.ModuleType)):
        holder = _object_name(obj.__self__)
        return f"{holder}.{name}" if holder else None
    if getattr(np, name, None) is obj:
        return f"np.{name}"
    return _held_as(name, obj)


def _object_name(obj: Any) -> str | None:
    """``scipy.stats.norm`` for the object a module holds as ``norm``, found by the object's
    ``name`` or its class's name without ``_gen`` (SciPy's distributions are named so)."""
    for name in (getattr(obj, "name", None), type(obj).__name__.removesuffix("_gen")):
        if isinstance(name, str) and name.isidentifier():
            held = _held_as(name, obj)
            if held is not None:
                return held
    return None


def _held_as(name: str, obj: Any) -> str | None:
    with warnings.catch_warnings():  # deprecated modules warn on reading their names
        warnings.simplefilter("ignore")
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


_INSTALLED = tuple({os.path.join(sysconfig.get_paths()[key], "") for key in ("purelib", "platlib")})


def describe(primitive: Any) -> str:
    """A readable name for a primitive: ``np.sin``, ``np.linalg.norm``, ``np.ndarray.sum``.

    Example::

        describe(np.linalg.norm)  # 'np.linalg.norm'
        describe(np.r_)  # 'np.r_'
    """
    if isinstance(primitive, np.ufunc):
        return library_name(primitive) or f"the ufunc {primitive.__name__}"
    owner = getattr(primitive, "__objclass__", None) or getattr(primitive, "__self__", None)
    name = getattr(primitive, "__qualname__", None) or getattr(primitive, "__name__", None)
    if owner is np.ndarray:
        return f"np.ndarray.{primitive.__name__}"
    if isinstance(owner, np.ufunc):
        return f"np.{owner.__name__}.{primitive.__name__}"
    if name is None and type(primitive).__module__.startswith("numpy"):
        held = next((key for key, value in vars(np).items() if value is primitive), None)
        if held is not None:  # an object NumPy holds by name: np.r_, np.c_, np.mgrid
            return f"np.{held}"
    module = getattr(primitive, "__module__", None) or ""
    if module == "numpy" or module.startswith("numpy."):
        public = module.replace("numpy", "np", 1).replace("._core", "").replace(".core", "")
        parts = [p for p in public.split(".") if not p.startswith("_")]
        return ".".join([*parts, str(name)])
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    if module == "builtins" and name is not None:
        return str(name)
    return f"{module}.{name}" if module and name is not None else repr(primitive)


def library_entry(frame: Any) -> tuple[str, Any] | None:
    """When ``frame`` runs inside an installed library's Python code (SciPy's
    ``special.zeta`` calling its ufunc ``_zeta``): the name of the library function the
    caller called (``scipy.special.zeta``), and the caller's frame; else None.

    Example::

        library_entry(frame)  # ('scipy.special.zeta', <frame of model.py, line 12>)
    """
    entry = None
    while frame is not None and frame.f_code.co_filename.startswith(_INSTALLED):
        entry, frame = frame, frame.f_back
    if entry is None or frame is None:
        return None
    code = entry.f_code
    function = entry.f_globals.get(code.co_name)
    named = library_name(function) if function is not None else None
    if named is None:  # a decorator's wrapper: named as the function it wraps
        running = _closure_running(entry)
        named = library_name(running) if running is not None else None
    module = entry.f_globals.get("__name__", "")
    return named or f"{module}.{code.co_name}", frame


def _closure_running(frame: Any) -> Any:
    """The function object ``frame`` runs when it is a closure (a decorator's ``wrapper``,
    shared by the functions it decorates): the one whose cells hold the frame's free
    variables, or None. For messages only: it asks the garbage collector."""
    import gc

    code = frame.f_code
    if not code.co_freevars:
        return None
    values = [frame.f_locals.get(name) for name in code.co_freevars]
    for candidate in gc.get_referrers(code):
        if not isinstance(candidate, types.FunctionType) or candidate.__code__ is not code:
            continue
        try:
            cells = [cell.cell_contents for cell in candidate.__closure__ or ()]
        except ValueError:  # an empty cell
            continue
        if len(cells) == len(values) and all(a is b for a, b in zip(cells, values)):
            return candidate
    return None
