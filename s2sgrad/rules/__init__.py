"""Derivative rules, one registry for both engines.

The rule modules register their rules when imported; the registry imports them all the
first time a rule is looked up (``get_rule``), after :mod:`s2sgrad.runtime` is ready.
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

RULE_MODULES = ("elementwise", "reductions", "linalg", "shapes")
