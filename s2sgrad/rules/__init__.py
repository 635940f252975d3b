"""Derivative rules, one registry for both engines.

The registry (:mod:`s2sgrad.rules.registry`) is below the runtime, whose helpers register
their own rules; the rule bodies (``elementwise``, ``reductions``, ``linalg``, ``eig``,
``shapes``, ``fft``, ``scientific``, ``statistics``, ``ufunc_methods``, ``python_math``) are
written with those helpers, so they are above it. Each rule module registers its rules
when imported, and ``import s2sgrad`` imports them all before anything else (``complex``
last: it declares which of them are right for complex values).
The rule modules of an optional library (``registry.OPTIONAL_RULE_MODULES``: library module
→ rule module, e.g. ``scipy.special`` → ``scipy_special``) are imported when a lookup misses
and the process has imported that library, so importing s2sgrad never imports SciPy.
"""

from s2sgrad.rules.registry import (  # noqa: F401
    Rule,
    get_rule,
    is_registered,
    jvp_rule,
    nondifferentiable,
    registered_primitives,
    vjp_rule,
)
