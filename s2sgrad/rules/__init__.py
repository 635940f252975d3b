"""Derivative rules, one registry for both engines.

Importing this package imports every rule module, which registers its rules.
"""

import importlib

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

for _name in RULE_MODULES:
    try:
        importlib.import_module(f"s2sgrad.rules.{_name}")
    except ModuleNotFoundError as error:  # a rule module not written yet
        if error.name != f"s2sgrad.rules.{_name}":
            raise
import s2sgrad.runtime  # noqa: E402,F401  (runtime helpers register their own rules)
