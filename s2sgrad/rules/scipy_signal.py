"""Derivative rules of ``scipy.signal.convolve``, in every mode and any number of dimensions.

``convolve(in1, in2, mode)`` is a window of the full convolution, whose length along each
axis is ``n1 + n2 - 1``: from 0 (``full``), from ``(n1 + n2 - 1 - n1) // 2`` (``same``, as
long as ``in1``) or from ``min(n1, n2) - 1`` (``valid``). It is linear in each argument.
Reverse mode puts the cotangent back in its window of zeros and correlates it with the
other argument (a convolution with the other argument flipped, in ``valid`` mode, which has
the argument's own shape); forward mode convolves the tangent.
"""

from __future__ import annotations

import numpy as np
from scipy import signal

from s2sgrad.rules.registry import jvp_rule, vjp_rule


@vjp_rule(signal.convolve)
def _convolve(g, ans, in1, in2, mode="full", method="auto"):
    full = np.add(np.shape(in1), np.shape(in2)) - 1
    if mode == "full":
        start = full - full
    elif mode == "same":
        start = (full - np.shape(in1)) // 2
    else:
        start = np.minimum(np.shape(in1), np.shape(in2)) - 1
    widths = np.stack([start, full - start - np.shape(ans)], axis=1)
    spread = np.pad(g, widths)
    return (
        signal.convolve(spread, np.flip(in2), mode="valid", method=method),
        signal.convolve(spread, np.flip(in1), mode="valid", method=method),
    )


@jvp_rule(signal.convolve)
def _convolve_jvp(t, ans, in1, in2, mode="full", method="auto"):
    return (
        signal.convolve(t, in2, mode=mode, method=method),
        signal.convolve(in1, t, mode=mode, method=method),
    )
