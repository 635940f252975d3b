"""``np.real_if_close(a, tol=100)``: ``a`` itself, or its real part when every imaginary
part is within ``tol`` machine epsilons of zero.

Which of the two happened shows in the result's dtype: a real result of a complex ``a`` is
``np.real(a)`` (its rule keeps the real part of the cotangent, as ``np.real``'s does);
otherwise the result is ``a`` and the derivative is the identity. The result is piecewise
constant in ``tol``, so ``tol`` gets no derivative.

Example::

    sg.grad(lambda x: np.sum(np.real_if_close(x + 0j) ** 2))(np.ones(3))  # [2., 2., 2.]
"""

import numpy as np

from s2sgrad.rules.registry import complex_ready, jvp_rule, vjp_rule
from s2sgrad.runtime import is_complex


@vjp_rule(np.real_if_close)
def _real_if_close(g, ans, a, tol=100):
    return (g if is_complex(ans) else np.real(g)), None


@jvp_rule(np.real_if_close)
def _real_if_close_jvp(t, ans, a, tol=100):
    return (t if is_complex(ans) else np.real(t)), None


complex_ready(np.real_if_close)
