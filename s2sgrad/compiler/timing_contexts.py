"""Context managers of the user's that only time or report the block they wrap.

``with Timer():`` around a computation changes no value the block computes and no flow of
control when the class's ``__init__``, ``__enter__`` and ``__exit__`` store only on the
manager itself (``self.start = time.perf_counter()``), call only NumPy, ``math``,
``time``, builtins and reporters (``print``, logging), and ``__exit__`` never suppresses
an exception (it returns nothing, ``None`` or ``False``). Such a block is transparent
(``transparent_blocks.py``): the sweeps differentiate its body as the enclosing block's.

Example::

    only_reports(Timer)  # True for the timer above
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import textwrap
import time
import types
from typing import Any

from s2sgrad.compiler.effects import is_library_function

__all__ = ["only_reports"]

# builtins that reach into objects or code by name: not only reporting
_REACHING = frozenset(
    {"setattr", "delattr", "exec", "eval", "globals", "vars", "locals", "__import__", "compile"}
)


def only_reports(cls: Any) -> bool:
    """Whether ``cls`` is a context manager class of the user's whose construction,
    ``__enter__`` and ``__exit__`` only time or report (see the module).

    Example::

        only_reports(np.errstate)  # False: not a class of the user's (listed elsewhere)
    """
    if not isinstance(cls, type) or type(cls) is not type:
        return False
    try:
        return _only_reports(cls, tuple(id(v) for b in cls.__mro__ for v in vars(b).values()))
    except TypeError:
        return False


@functools.lru_cache(maxsize=128)
def _only_reports(cls: type, state: tuple[int, ...]) -> bool:
    if cls.__new__ is not object.__new__:
        return False
    methods = []
    for name in ("__init__", "__enter__", "__exit__"):
        method = getattr(cls, name, None)
        if name == "__init__" and method is object.__init__:
            continue
        if not isinstance(method, types.FunctionType):
            return False
        methods.append((name, method))
    return all(_reports(method, name == "__exit__") for name, method in methods)


def _reports(function: types.FunctionType, is_exit: bool) -> bool:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return False
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef) or definition.decorator_list:
        return False
    parameters = [*definition.args.posonlyargs, *definition.args.args]
    if not parameters:
        return False
    receiver = parameters[0].arg
    for node in ast.walk(definition):
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.Delete, ast.Lambda, ast.Yield)):
            return False
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node is not definition:
            return False
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            plain = isinstance(target, ast.Name)
            own = (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == receiver
            )
            if not (plain or own):
                return False  # only locals and attributes of the manager itself
        if isinstance(node, ast.Call) and not _allowed(node.func, function):
            return False
        if (
            is_exit
            and isinstance(node, ast.Return)
            and node.value is not None
            and not (isinstance(node.value, ast.Constant) and node.value.value in (None, False))
        ):
            return False  # it may suppress the exception: another path
    return True


def _allowed(func: ast.expr, function: types.FunctionType) -> bool:
    """Whether a call of ``func`` (read in ``function``'s globals) only computes or
    reports: NumPy's, ``math``'s, ``time``'s, a builtin or a reporter."""
    chain = []
    while isinstance(func, ast.Attribute):
        chain.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return False
    if func.id in function.__globals__:
        value = function.__globals__[func.id]
    elif hasattr(builtins, func.id):
        value = getattr(builtins, func.id)
    else:
        return False
    for attribute in reversed(chain):
        value = getattr(value, attribute, None)
    if value is None or getattr(value, "__name__", None) in _REACHING:
        return False
    if getattr(value, "__module__", None) == "time" or value in vars(time).values():
        return True
    return is_library_function(value)
