"""Small functions s2sgrad writes as source, to be read by the transformer as a user's
function is (their source kept in ``linecache``): a call of another function with its
parameters (``one_tuples.py``, ``primitive_callers.py``).

Example::

    namespace = {"callee": np.sum}
    parameters, arguments = spelled_parameters(signature(np.sum).parameters.values(),
                                               namespace, "default_")
    source = f"def total({', '.join(parameters)}):\\n    return callee({', '.join(arguments)})\\n"
    total = defined(source, "<s2sgrad total>", "total", namespace)
"""

from __future__ import annotations

import inspect
import linecache
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["defined", "spelled_parameters"]


def spelled_parameters(
    parameters: Iterable[inspect.Parameter], namespace: dict[str, Any], default_prefix: str
) -> tuple[list[str], list[str]]:
    """The parameter list of a function taking ``parameters`` and the arguments passing
    each on as it came (keyword-only ones by keyword), as source text; each default is
    bound in ``namespace`` to a name starting with ``default_prefix``.

    Example::

        spelled_parameters(signature(lambda x, *, k=2: x).parameters.values(), {}, "d_")
        # (['x', '*', 'k=d_0'], ['x', 'k=k'])
    """
    spelled_list: list[str] = []
    arguments: list[str] = []
    keyword_only = False
    positional_only = 0
    for parameter in parameters:
        name, kind = parameter.name, parameter.kind
        if kind is parameter.VAR_POSITIONAL:
            spelled_list.append(f"*{name}")
            arguments.append(f"*{name}")
            keyword_only = True
            continue
        if kind is parameter.VAR_KEYWORD:
            spelled_list.append(f"**{name}")
            arguments.append(f"**{name}")
            continue
        if kind is parameter.KEYWORD_ONLY and not keyword_only:
            spelled_list.append("*")
            keyword_only = True
        if kind is parameter.POSITIONAL_ONLY:
            positional_only += 1
        spelled = name
        if parameter.default is not parameter.empty:
            default = f"{default_prefix}{len(namespace)}"
            namespace[default] = parameter.default
            spelled = f"{name}={default}"
        spelled_list.append(spelled)
        arguments.append(f"{name}={name}" if kind is parameter.KEYWORD_ONLY else name)
    if positional_only:
        spelled_list.insert(positional_only, "/")
    return spelled_list, arguments


def defined(source: str, filename: str, name: str, namespace: dict[str, Any]) -> Callable:
    """The function ``name`` that ``source`` defines, run in ``namespace``, its source kept
    in ``linecache`` under ``filename`` for the transformer to read.

    Example::

        defined("def f(x):\\n    return x\\n", "<s2sgrad f>", "f", {})(3)  # 3
    """
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our own source)
    return namespace[name]
