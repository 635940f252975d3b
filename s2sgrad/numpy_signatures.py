"""Signatures of NumPy's C-implemented callables, on NumPy versions that do not expose them.

``inspect.signature`` reads a ufunc, an ``ndarray`` method or a function NumPy implements in C
(``np.where``, ``np.dot``, ``np.concatenate`` ...) only from NumPy 2.4, which added their
runtime signatures (numpy/numpy#30104 and the pull requests that followed it). On NumPy 1.26
to 2.3 it raises ``ValueError``, and Python 3.10 has no NumPy newer than 2.2. The engines bind
call arguments to parameter names, so :func:`signature` supplies the same signatures there:
a ufunc's from its ``nin``, ``nout`` and core signature, the others from the table below,
which is NumPy 2.4's text (``tests/test_numpy_signatures.py`` checks both against it).
Parameters NumPy added after 1.26 (``device=``, ``copy=`` ...) are in the table; an older
NumPy refuses them itself when they are passed.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import numpy as np

# A parameter NumPy leaves unset unless given (``keepdims=<no value>``).
_NO_VALUE = getattr(np, "_NoValue", None)

_TABLE = {
    "arange": "(start_or_stop, /, stop=None, step=1, *, dtype=None, device=None, like=None)",
    "array": (
        "(object, dtype=None, *, copy=True, order='K', subok=False, ndmin=0, ndmax=0, like=None)"
    ),
    "asanyarray": "(a, dtype=None, order=None, *, device=None, copy=None, like=None)",
    "asarray": "(a, dtype=None, order=None, *, device=None, copy=None, like=None)",
    "ascontiguousarray": "(a, dtype=None, *, like=None)",
    "asfortranarray": "(a, dtype=None, *, like=None)",
    "bincount": "(x, /, weights=None, minlength=0)",
    "concatenate": "(arrays, /, axis=0, out=None, *, dtype=None, casting='same_kind')",
    "dot": "(a, b, out=None)",
    "empty": "(shape, dtype=None, order='C', *, device=None, like=None)",
    "empty_like": "(prototype, /, dtype=None, order='K', subok=True, shape=None, *, device=None)",
    "float16": "(value=0, /)",
    "float32": "(value=0, /)",
    "inner": "(a, b, /)",
    "lexsort": "(keys, axis=-1)",
    "ndarray.all": "(self, /, axis=None, out=None, keepdims=False, *, where=True)",
    "ndarray.any": "(self, /, axis=None, out=None, keepdims=False, *, where=True)",
    "ndarray.argmax": "(self, /, axis=None, out=None, *, keepdims=False)",
    "ndarray.argmin": "(self, /, axis=None, out=None, *, keepdims=False)",
    "ndarray.argpartition": "(self, kth, /, axis=-1, kind='introselect', order=None)",
    "ndarray.argsort": "(self, /, axis=-1, kind=None, order=None, *, stable=None)",
    "ndarray.astype": "(self, /, dtype, order='K', casting='unsafe', subok=True, copy=True)",
    "ndarray.clip": "(self, /, min=None, max=None, out=None, **kwargs)",
    "ndarray.compress": "(self, /, condition, axis=None, out=None)",
    "ndarray.conj": "(self, /)",
    "ndarray.conjugate": "(self, /)",
    "ndarray.copy": "(self, /, order='C')",
    "ndarray.cumprod": "(self, /, axis=None, dtype=None, out=None)",
    "ndarray.cumsum": "(self, /, axis=None, dtype=None, out=None)",
    "ndarray.diagonal": "(self, /, offset=0, axis1=0, axis2=1)",
    "ndarray.dot": "(self, other, /, out=None)",
    "ndarray.flatten": "(self, /, order='C')",
    "ndarray.item": "(self, /, *args)",
    "ndarray.max": "(self, /, axis=None, out=None, **kwargs)",
    "ndarray.mean": "(self, /, axis=None, dtype=None, out=None, **kwargs)",
    "ndarray.min": "(self, /, axis=None, out=None, **kwargs)",
    "ndarray.nonzero": "(self, /)",
    "ndarray.prod": "(self, /, axis=None, dtype=None, out=None, **kwargs)",
    "ndarray.ravel": "(self, /, order='C')",
    "ndarray.repeat": "(self, repeats, /, axis=None)",
    "ndarray.reshape": "(self, /, *shape, order='C', copy=None)",
    "ndarray.searchsorted": "(self, v, /, side='left', sorter=None)",
    "ndarray.squeeze": "(self, /, axis=None)",
    "ndarray.std": "(self, /, axis=None, dtype=None, out=None, ddof=0, **kwargs)",
    "ndarray.sum": "(self, /, axis=None, dtype=None, out=None, **kwargs)",
    "ndarray.swapaxes": "(self, axis1, axis2, /)",
    "ndarray.take": "(self, indices, /, axis=None, out=None, mode='raise')",
    "ndarray.trace": "(self, /, offset=0, axis1=0, axis2=1, dtype=None, out=None)",
    "ndarray.transpose": "(self, /, *axes)",
    "ndarray.var": "(self, /, axis=None, dtype=None, out=None, ddof=0, **kwargs)",
    "result_type": "(*arrays_and_dtypes)",
    "vdot": "(a, b, /)",
    "where": "(condition, x=None, y=None, /)",
    "zeros": "(shape, dtype=None, order='C', *, device=None, like=None)",
}

_PARSED: dict[str, inspect.Signature] = {}


def signature(function: Any) -> inspect.Signature:
    """``inspect.signature(function)``, also for NumPy's C callables on NumPy before 2.4.

    Raises what ``inspect.signature`` raises for anything else it cannot read.

    Example::

        signature(np.where)  # <Signature (condition, x=None, y=None, /)>
    """
    try:
        # a Python function's own parameters, not those of what functools.wraps named
        own = isinstance(function, types.FunctionType)
        return inspect.signature(function, follow_wrapped=not own)
    except (TypeError, ValueError):
        known = numpy_signature(function)
        if known is None:
            raise
        return known


def parameters(function: Any) -> tuple[inspect.Parameter, ...]:
    """``function``'s parameters, in order; raises as :func:`signature` does.

    Example::

        [p.name for p in parameters(np.where)]  # ['condition', 'x', 'y']
    """
    return tuple(signature(function).parameters.values())


def positional_parameters(function: Any) -> list[str]:
    """The names of ``function``'s positional parameters, in order (``[]`` when it has no
    signature to read): the one place s2sgrad reads a callable's parameter names (for a
    parsed function's syntax tree, ``compiler.syntax.parameter_names``).

    Example::

        positional_parameters(lambda x, /, y=1, *rest, z: x)  # ['x', 'y']
    """
    try:
        found = parameters(function)
    except (TypeError, ValueError):
        return []
    return [p.name for p in found if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def vararg_name(function: Any) -> str | None:
    """The name of ``function``'s ``*args`` parameter, if it has one.

    Example::

        vararg_name(lambda x, *rest: x)  # 'rest'
    """
    try:
        found = parameters(function)
    except (TypeError, ValueError):
        return None
    return next((p.name for p in found if p.kind is p.VAR_POSITIONAL), None)


def numpy_signature(function: Any) -> inspect.Signature | None:
    """NumPy 2.4's signature of a ufunc or a C-implemented NumPy callable, or None.

    Example::

        numpy_signature(np.ndarray.sum)  # <Signature (self, /, axis=None, dtype=None, ...)>
    """
    if isinstance(function, np.ufunc):
        return _ufunc_signature(function)
    key = _table_key(function)
    if key is None:
        return None
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = _PARSED[key] = _parse(_TABLE[key])
    return parsed


def _table_key(function: Any) -> str | None:
    name = getattr(function, "__name__", None)
    if not isinstance(name, str):
        return None
    if isinstance(function, types.MethodDescriptorType):
        key = f"ndarray.{name}"
        owner = np.ndarray.__dict__.get(name)
    else:
        key = name
        owner = getattr(np, name, None)
    return key if owner is function and key in _TABLE else None


def _parse(text: str) -> inspect.Signature:
    namespace: dict[str, Any] = {"NoValue": _NO_VALUE}
    exec(f"def function{text}: pass", namespace)
    return inspect.signature(namespace["function"])


def _ufunc_signature(ufunc: np.ufunc) -> inspect.Signature:
    """``x`` or ``x1, x2, ...`` positional only, ``out``, then the ufunc keywords."""
    Parameter = inspect.Parameter
    names = ["x"] if ufunc.nin == 1 else [f"x{i + 1}" for i in range(ufunc.nin)]
    parameters = [Parameter(n, Parameter.POSITIONAL_ONLY) for n in names]
    out = None if ufunc.nout == 1 else (None,) * ufunc.nout
    parameters.append(Parameter("out", Parameter.POSITIONAL_OR_KEYWORD, default=out))
    keywords: dict[str, Any] = {}
    if ufunc.signature is None:
        keywords["where"] = True
    else:
        keywords.update(axes=_NO_VALUE, axis=_NO_VALUE, keepdims=False)
    keywords.update(casting="same_kind", order="K", dtype=None, subok=True, signature=None)
    parameters += [Parameter(k, Parameter.KEYWORD_ONLY, default=v) for k, v in keywords.items()]
    return inspect.Signature(parameters)
