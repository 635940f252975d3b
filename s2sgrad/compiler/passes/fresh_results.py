"""Which calls are known to return a new array, sharing no memory with anything.

The world is closed: a call may return (a view of) any of its arguments unless it is
positively known not to. This module holds that knowledge (NumPy functions by module and
name, ufuncs, builtins that compute) for the sharing analysis (:mod:`.sharing`) and for
the tape's check of in-place updates.
"""

from __future__ import annotations

import builtins
import copy
import sys
import types
from typing import Any

import gast
import numpy as np

__all__ = ["FRESH_NUMPY", "fresh_result", "keeps_memory"]

# The world is closed: a call may return (a view of) any of its arguments unless it is
# positively known to return a new array. NumPy functions that do, by module and name
# (not among them: asarray, ascontiguousarray, require, reshape, ravel, squeeze, transpose,
# matrix_transpose, atleast_*d, broadcast_to, expand_dims, flip, rot90, split and its
# kin, unstack, einsum ('ij->ji' is a view), diag and diagonal, real, imag,
# real_if_close, linalg.matrix_power (a power of 1 is the argument itself) ...).
FRESH_NUMPY = {
    "numpy": frozenset(
        """
        zeros ones empty full zeros_like ones_like empty_like full_like arange
        linspace logspace geomspace eye identity tri tril triu copy array
        indices fromfunction fromiter meshgrid concatenate concat stack vstack
        hstack dstack column_stack block append insert delete tile repeat pad
        roll resize sort argsort argmax argmin nonzero argwhere flatnonzero
        where searchsorted unique unique_values partition argpartition lexsort
        count_nonzero sort_complex extract select piecewise choose compress take
        take_along_axis histogram histogram2d bincount digitize isin intersect1d
        union1d setdiff1d setxor1d sum prod mean std var average median
        percentile quantile nansum nanprod nanmean nanstd nanvar nanmax nanmin
        nanmedian nanpercentile nanquantile nanargmax nanargmin nancumsum
        nancumprod max min amax amin ptp cumsum cumprod cumulative_sum
        cumulative_prod diff ediff1d gradient trapezoid cross dot vdot inner
        outer tensordot kron trace clip round around convolve correlate interp
        polyval polyfit all any allclose isclose array_equal cov corrcoef angle
        unwrap sinc i0 nan_to_num shape ndim size result_type broadcast_shapes
        iscomplexobj isrealobj isscalar
        """.split()  # noqa: SIM905
    ),
    "numpy.linalg": frozenset(
        """
        inv pinv solve lstsq det slogdet eig eigh eigvals eigvalsh svd svdvals
        qr cholesky norm vector_norm matrix_norm matrix_rank cond tensorsolve
        tensorinv multi_dot cross outer vecdot matmul trace
        """.split()  # noqa: SIM905
    ),
    "numpy.fft": frozenset(
        """
        fft ifft rfft irfft fft2 ifft2 rfft2 irfft2 fftn ifftn rfftn irfftn hfft
        ihfft fftfreq rfftfreq fftshift ifftshift
        """.split()  # noqa: SIM905
    ),
}
# ... unless given a parameter that can make them return an argument: (name, position)
_FRESH_UNLESS = {
    "array": ("copy", 2),
    "diff": ("n", 1),
    "nan_to_num": ("copy", 1),
    "meshgrid": ("copy", None),
}
_FRESH_BUILTINS = frozenset(
    """
    len abs float int bool complex round range isinstance issubclass hasattr
    callable id hash type print str repr format any all sum divmod pow ord chr
    """.split()  # noqa: SIM905
)


def fresh_result(target: Any, call: gast.Call) -> bool:
    """Whether ``call``, a call of ``target``, is known to return a new array (or a number,
    or a tuple of new arrays) that shares no memory with anything: the NumPy functions
    listed above, ufuncs, the builtins that compute, without ``out=``, and
    ``copy.deepcopy(x)`` (a new container of new arrays).

    Example::

        fresh_result(np.concatenate, call)  # True;  np.split, np.asarray: False
    """
    if target is None or keeps_memory(call, getattr(target, "__name__", None)):
        return False
    # while a tape records, np.full and the like are stand-ins that equal the function they
    # wrap (tape/conversions.py), but whose __module__ is their own class's
    stood_for = getattr(target, "__wrapped__", None)
    if stood_for is not None and target == stood_for:  # not a decorator's wrapper
        target = stood_for
    if isinstance(target, np.ufunc):
        return True
    if target is copy.deepcopy:  # of one argument (a memo may hand back what it holds)
        return len(call.args) == 1 and not call.keywords
    name = getattr(target, "__name__", None)
    if getattr(builtins, name or "", None) is target:
        return name in _FRESH_BUILTINS
    if target is np.einsum:  # of one operand it may be a view ('ij->ji'), of more a product
        subscripts = call.args[0] if call.args else None
        written = isinstance(subscripts, gast.Constant) and isinstance(subscripts.value, str)
        return written and len(call.args) >= 3
    names = FRESH_NUMPY.get(getattr(target, "__module__", None) or "")
    # == rather than is: while a tape records, np.full and the like are stand-ins that
    # equal the function they wrap (tape/conversions.py)
    return names is not None and name in names and getattr(_module_of(target), name) == target


def keeps_memory(call: gast.Call, name: str | None) -> bool:
    """Whether ``call`` passes ``out=`` or a parameter that can make ``name`` return an
    argument itself (``np.array(x, copy=False)``, ``x.astype(t, copy=False)``)."""
    keywords = {k.arg for k in call.keywords}
    if "out" in keywords or None in keywords:
        return True
    copy = next((k.value for k in call.keywords if k.arg == "copy"), None)
    if copy is not None and not (type(copy) is gast.Constant and copy.value is True):
        return True
    if any(type(a) is gast.Starred for a in call.args):
        return True
    parameter = _FRESH_UNLESS.get(name or "")
    if parameter is None:
        return False
    keyword, position = parameter
    return keyword in keywords or (position is not None and len(call.args) > position)


def _module_of(target: Any) -> types.ModuleType | None:
    return sys.modules.get(getattr(target, "__module__", None) or "")
