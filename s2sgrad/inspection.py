"""Read, print and save generated derivative code: ``source``, ``show``, ``export``."""

from __future__ import annotations

import ast
import inspect
import keyword
import os
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from s2sgrad import runtime
from s2sgrad.api import _Transform, grad
from s2sgrad.compiler.codegen import GeneratedFunction, generated_of
from s2sgrad.compiler.listing import listing, with_dependencies
from s2sgrad.compiler.pipeline import derivative
from s2sgrad.display import highlight, in_notebook, show_in_notebook
from s2sgrad.errors import S2SGradError

__all__ = ["source", "show", "export"]


def _generated(transformed: Any, wrt=0, latest: bool = True) -> GeneratedFunction:
    if not isinstance(transformed, _Transform):
        _refuse_other_transforms(transformed)
        transformed = grad(transformed, wrt=wrt, mode="s2s")
    return transformed.generated_code(latest)


_PACKAGE = Path(__file__).resolve().parent


def _refuse_other_transforms(f: Any) -> None:
    """``jacobian``, ``hessian`` and ``vmap`` return functions that run generated code (of
    ``grad``/``jvp``) on batches: their own code is s2sgrad's, not something to transform."""
    code = getattr(f, "__code__", None)
    made_here = code is not None and Path(code.co_filename).is_relative_to(_PACKAGE)
    if made_here or type(f).__module__.startswith("s2sgrad."):
        name = getattr(f, "__qualname__", type(f).__qualname__)
        raise S2SGradError(
            f"{name}: this is a Jacobian, Hessian or vmap made by s2sgrad, which runs the code "
            "generated for a gradient or a JVP; show that code instead: "
            "sg.show(sg.grad(f)) or sg.show(sg.grad(f), forward=True)"
        )


def source(transformed: Callable, wrt: int | str | tuple = 0, optimize: bool = True) -> str:
    """The generated source of a transformed function (with the callees it uses).

    Once the transformed function has been called, this is the code that ran last:
    specialised to the shapes of its arguments where that was safe. Before any call it
    is the generic code, which works for any shapes. ``optimize=False`` gives the generic
    code before it is tidied: one statement per rule applied, each ``# grad of:`` comment
    naming the rules of its block.

    Example::

        print(sg.source(sg.grad(f)))
        print(sg.source(sg.grad(f), optimize=False))
    """
    _check_options("source", wrt, {"optimize": optimize})
    return listing(_generated(transformed, wrt, latest=optimize), optimize)


def _is_position_or_name(w: Any) -> bool:
    return isinstance(w, (int, np.integer, str)) and not isinstance(w, bool)


def _check_options(caller: str, wrt: Any, flags: dict[str, Any]) -> None:
    """Refuse arguments meant for the gradient itself (``sg.show(g, p, x)``), saying how to
    call ``caller``: it takes the function, and which arguments to differentiate by."""
    usage = (
        f"sg.{caller}(f, wrt=...) prints the code of f's derivative and is not given the "
        "arguments f is called with; call the gradient itself for values"
    )
    entries = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    if not entries or not all(_is_position_or_name(w) for w in entries):
        raise TypeError(
            f"{usage}: wrt must be a position (int), a parameter name (str) or a tuple of "
            f"them, not {type(wrt).__name__}"
        )
    for flag, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{usage}: {flag} must be True or False, not {type(value).__name__}")


def show(
    f: Callable,
    wrt: int | str | tuple = 0,
    forward: bool = False,
    file=None,
    optimize: bool = True,
) -> None:
    """Print the gradient code of ``f`` (syntax-highlighted in a colour terminal);
    ``optimize=False`` prints it before tidying, naming the rule applied to each primitive.

    Example::

        sg.show(loss, wrt="w")
        sg.show(loss, wrt="w", optimize=False)
    """
    _check_options("show", wrt, {"forward": forward, "optimize": optimize})
    text = _jvp_source(f, wrt) if forward else source(f, wrt, optimize)
    stream = file or sys.stdout
    if file is None and in_notebook():
        show_in_notebook(text)
        return
    if _wants_colour(stream):
        text = highlight(text)
    print(text, end="", file=stream)


def _jvp_source(f: Callable, wrt) -> str:
    function = f.__func__ if hasattr(f, "__func__") else f
    parameters = list(inspect.signature(function).parameters)
    chosen = wrt if isinstance(wrt, tuple) else (wrt,)
    names = tuple(parameters[w] if isinstance(w, int) else w for w in chosen)
    return listing(derivative(function, names, "jvp"))


def _wants_colour(stream) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def export(
    f: Callable,
    path: str | os.PathLike,
    wrt: int | str | tuple = 0,
    name: str | None = None,
    *,
    overwrite: bool = False,
) -> Path:
    """Write ``f``'s gradient as a standalone module importing only NumPy and the runtime.

    The module's public function is ``name`` (default ``"d" + f.__name__``) and takes
    ``f``'s parameters. ``name`` must be an identifier, not a keyword, and not a name the
    module uses otherwise (``ValueError``). An existing file at ``path`` is replaced only
    with ``overwrite=True`` (else ``FileExistsError``).

    Example::

        sg.export(loss, "dloss.py")   # then: from dloss import dloss
        sg.export(loss, "dloss.py", name="loss_gradient", overwrite=True)
    """
    function = f.function if isinstance(f, _Transform) else f
    target = Path(path)
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists; pass overwrite=True to replace it")
    generated = _generated(f, wrt, latest=False)  # the generic code works for any shapes
    parts = with_dependencies(generated)
    imports: dict[str, str] = {}
    assignments: list[str] = []
    for part in parts:
        for bound, obj in part.namespace.items():
            if bound in part.live:  # the user's data as it is now
                obj = part.live[bound].expected
            try:
                text = _import_line(bound, obj, parts)
            except S2SGradError as error:  # name the user's function, where it reads it
                user = part.primal if callable(part.primal) else function
                raise S2SGradError(f"{_defined_at(user)}: {error}") from None
            if text is None:
                continue
            if isinstance(obj, runtime.custom_vjp):
                imports["custom_vjp"] = "from s2sgrad.runtime import custom_vjp"
            for line in text.splitlines():
                if line.startswith(("import ", "from ")):
                    imports[line] = line
                else:
                    assignments.append(line)
    header = [
        f'"""Gradient of {function.__qualname__}, generated by s2sgrad. Do not edit."""',
        "",
        *sorted(set(imports.values())),
        *sorted(set(assignments)),
    ]
    bodies = [part.source.rstrip() for part in parts]
    main_name = parts[-1].function.__name__
    footer = [
        f"{part.function.__name__}.backward = {part.companion.function.__name__}"
        for part in parts
        if part.companion is not None
    ]
    text = "\n".join(header) + "\n\n\n" + "\n\n\n".join(bodies) + "\n"
    if footer:
        text += "\n\n" + "\n".join(footer) + "\n"
    public = _public_name(name, function, main_name, text)
    if public != main_name:
        text += f"\n{public} = {main_name}\n"
    with open(target, "w" if overwrite else "x") as file:
        file.write(text)
    return target


def _defined_at(function: Callable) -> str:
    """``file:line`` of ``function``'s ``def`` (the user's function an exported part was
    generated from)."""
    code = getattr(inspect.unwrap(function), "__code__", None)
    if code is None:
        return getattr(function, "__qualname__", repr(function))
    return f"{code.co_filename}:{code.co_firstlineno}"


def _public_name(name: str | None, function: Callable, main_name: str, text: str) -> str:
    """``name`` if the module can bind its gradient to it without changing anything else."""
    public = name
    if name is None:
        public = "d" + function.__name__
        if not public.isidentifier():  # a lambda's gradient keeps its generated name
            return main_name
    if not isinstance(public, str):
        raise TypeError(f"export: name must be a string, not {type(public).__name__}")
    given = "name" if name is not None else f"the default name {public!r} (pass name=...)"
    if not public.isidentifier() or keyword.iskeyword(public):
        raise ValueError(
            f"export: {given} must be a Python identifier that is not a keyword, "
            f"not {public!r}; pass e.g. name='dloss'"
        )
    if public == main_name:
        return public
    if (public.startswith("__") and public.endswith("__")) or public in _names_used(text):
        raise ValueError(
            f"export: {given}={public!r} is a name the exported module already uses; "
            f"choose another (the gradient function itself is {main_name!r})"
        )
    return public


def _names_used(text: str) -> set[str]:
    """Every name a module's source binds or reads."""
    used = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            used.add(node.name)
        elif isinstance(node, ast.arg):
            used.add(node.arg)
        elif isinstance(node, ast.alias):
            used.add(node.asname or node.name.split(".")[0])
    return used


def _import_line(bound: str, obj: Any, parts: list[GeneratedFunction]) -> str | None:
    if callable(obj) and generated_of(obj) in parts:
        generated_name = obj.__name__
        return None if generated_name == bound else f"{bound} = {generated_name}"
    if isinstance(obj, runtime.custom_vjp):  # a user's derivative: import it, then wrap it
        function = _import_line(obj.function.__name__, obj.function, parts)
        registrar = _registering_module(obj)
        if registrar is not None:  # e.g. a derivative of np.i0 registered in the user's module
            function = f"import {registrar}  # registers the derivative used below\n{function}"
        return f"{function}\n{bound} = custom_vjp({obj.function.__name__}, {obj.positions!r})"
    if obj is np:
        return f"import numpy as {bound}" if bound != "numpy" else "import numpy"
    if isinstance(obj, types.ModuleType):
        return f"import {obj.__name__} as {bound}"
    runtime_name = next((n for n in runtime.__all__ if getattr(runtime, n) is obj), None)
    if runtime_name is not None:
        alias = "" if runtime_name == bound else f" as {bound}"
        return f"from s2sgrad.runtime import {runtime_name}{alias}"
    numpy_path = _numpy_path(obj)
    if numpy_path is not None:
        module, attribute = numpy_path
        alias = "" if attribute == bound else f" as {bound}"
        return f"from {module} import {attribute}{alias}"
    if isinstance(obj, (int, float, complex, str, bool, type(None))):
        return f"{bound} = {obj!r}"
    module_name = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if module_name and qualname and "." not in qualname and module_name != "__main__":
        alias = "" if qualname == bound else f" as {bound}"
        return f"from {module_name} import {qualname}{alias}"
    raise S2SGradError(
        f"cannot export the value of {bound!r} ({type(obj).__name__}); the generated code "
        "refers to it, so make it a module-level function or a number"
    )


def _registering_module(obj: Any) -> str | None:
    """The module to import so that ``obj.function``'s custom derivative is registered, when
    importing the function itself does not do it (a library function)."""
    module = getattr(obj.derivative, "__module__", None) or ""
    if module.startswith("s2sgrad") or module == getattr(obj.function, "__module__", None):
        return None
    if module == "__main__" or not module:
        raise S2SGradError(
            f"cannot export the custom derivative of {obj.function.__name__}: it is defined "
            "in the main script; define it in a module the exported code can import"
        )
    return module


def _numpy_path(obj: Any) -> tuple[str, str] | None:
    name = getattr(obj, "__name__", None)
    if not name:
        return None
    for module_name in ("numpy", "numpy.linalg", "numpy.fft"):
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, name, None) is obj:
            return module_name, name
    return None
