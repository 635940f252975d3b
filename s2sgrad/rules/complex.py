"""Which rules are right for complex values (docs/complex.md states the convention).

A rule follows the convention when its VJP maps the cotangent ``g`` of a result to
``g * f'(z)`` for a holomorphic ``f`` (no conjugation), and when every function with a
real result of a complex argument (``abs``, ``np.real``, ``np.var`` …) uses only the real
part of its cotangent. Both engines refuse a rule not listed here where it meets a complex
value: the tape when it records the step, the source transformer when the function may
compute with complex values (``s2sgrad.compiler`` asks :func:`accepts_complex`).
``tests/test_complex.py`` checks every entry against finite differences that move the
real and the imaginary parts separately.
"""

import operator

import numpy as np

from s2sgrad import runtime
from s2sgrad.rules.registry import complex_ready

# elementwise: holomorphic functions, and the four that take a complex number apart
complex_ready(
    np.negative, operator.neg, np.positive, operator.pos,
    np.add, operator.add, np.subtract, operator.sub, np.multiply, operator.mul,
    np.divide, operator.truediv, np.power, operator.pow, pow,
    np.exp, np.exp2, np.expm1, np.log, np.log1p, np.log2, np.log10,
    np.sqrt, np.square, np.reciprocal,
    np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan,
    np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh,
    np.real, np.ndarray.real, np.imag, np.ndarray.imag,
    np.conjugate, np.ndarray.conj, np.ndarray.conjugate,
    np.absolute, abs, np.angle, sum,
)  # fmt: skip

# reductions
complex_ready(
    np.sum, np.ndarray.sum, np.mean, np.ndarray.mean, np.nansum, np.nanmean,
    np.prod, np.ndarray.prod, np.cumsum, np.ndarray.cumsum, np.cumprod, np.ndarray.cumprod,
    np.trace, np.ndarray.trace, np.var, np.ndarray.var, np.std, np.ndarray.std,
)  # fmt: skip

# products and linear algebra
complex_ready(
    np.matmul, operator.matmul, np.dot, np.ndarray.dot, np.vdot, np.outer, np.inner,
    np.tensordot, np.kron, np.einsum,
    np.linalg.inv, np.linalg.det, np.linalg.slogdet, np.linalg.solve, np.linalg.cholesky,
    np.linalg.eigh, np.linalg.eigvalsh, np.linalg.norm, np.linalg.matrix_power,
    np.linalg.pinv, np.linalg.qr, np.linalg.svd,
)  # fmt: skip

# moving values around: the derivative moves the cotangent back
complex_ready(
    np.reshape, np.ndarray.reshape, np.expand_dims, np.squeeze, np.ndarray.squeeze,
    np.atleast_1d, np.atleast_2d, np.atleast_3d, np.ravel, np.ndarray.ravel,
    np.ndarray.flatten, np.transpose, np.ndarray.transpose, np.ndarray.T, np.swapaxes,
    np.ndarray.swapaxes, np.moveaxis, np.rollaxis, np.flip, np.fliplr, np.flipud, np.roll,
    np.rot90, np.broadcast_to, np.tile, np.repeat, np.ndarray.repeat, np.copy, np.ndarray.copy,
    np.ndarray.astype, np.full, np.full_like, np.concatenate, np.stack, np.hstack,
    np.vstack, np.dstack, np.column_stack, np.append, np.split, np.array_split, np.hsplit,
    np.vsplit, np.dsplit, np.array, np.asarray, list, tuple, operator.getitem, np.take,
    np.ndarray.take, np.ndarray.item, np.take_along_axis, np.diff, np.diag, np.diagonal,
    np.ndarray.diagonal, np.triu, np.tril, np.pad, np.where, np.r_, np.c_,
    np.lib.stride_tricks.sliding_window_view, np.lib.stride_tricks.as_strided,
)  # fmt: skip
if hasattr(np, "astype"):  # NumPy 2
    complex_ready(np.astype)

# the helpers generated code and the rules above call
complex_ready(
    runtime.unbroadcast, runtime.owned, runtime.owned_argument, runtime.owned_items,
    runtime.owned_tangent,
    runtime.snapshot, runtime.shape_only,
    runtime.unpack_cotangent,
    runtime.as_gradient, runtime.add_cotangents, runtime.cast_like, runtime.index_cotangent,
    runtime.assigned_cotangent, runtime.only_last_writes, runtime.for_items,
    runtime.items_cotangent, runtime.concatenated, runtime.sequence_part, runtime.dict_entry,
    runtime.split_like, runtime.join_like, runtime.unpack_like, runtime.pack_like,
    runtime.untile, runtime.unwindow, runtime.unblock, runtime.block_of, runtime.unrepeat,
    runtime.unpad, runtime.undiagonal,
    runtime.untake,
    runtime.zero_if_integer, runtime.added_at, runtime.untake_along_axis, runtime.undiff,
    runtime.matmul_cotangent_a, runtime.matmul_cotangent_b, runtime.dot_cotangent_a,
    runtime.dot_cotangent_b, runtime.rhs_as_matrix, runtime.shift_along,
    runtime.linear_recurrence, runtime.exclusive_cumprod, runtime.group_axes,
    runtime.ungroup_axes, runtime.prod_of_others, runtime.tie_share, runtime.nonzero_norm,
)  # fmt: skip
