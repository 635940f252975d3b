"""The frontend: a Python function's source, parsed with gast, its names resolved.

``parse_function(f)`` reads ``f``'s definition (:mod:`.source`), checks that it compiles
to the code ``f`` runs (:mod:`.same_code`), splits expressions too deep for the passes
(:mod:`.deep_expressions`), finds a lambda among others on its line (:mod:`.lambdas`),
and returns a :class:`ParsedFunction` that resolves every free name against ``f``'s
globals, closure cells and builtins (:mod:`.parsed`).

Example::

    parsed = parse_function(lambda x: x * 2)
    parsed.resolve_name("print")  # builtins.print
"""

from s2sgrad.compiler.frontend.parsed import NOT_FOUND, ParsedFunction
from s2sgrad.compiler.frontend.source import parse_function, read_definition

__all__ = ["ParsedFunction", "parse_function", "read_definition", "NOT_FOUND"]
