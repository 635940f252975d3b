"""Functions written to a file of their own, for tests whose programs are generated: the
transformer reads a function's source, so it must live in a file that imports.

Example::

    f = function_in_file(tmp_path, "deep", ["def f(x):", "    return np.sin(x)"])
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def function_in_file(directory: Path, name: str, lines: list[str], function: str = "f"):
    """``function`` of a new module ``name`` in ``directory`` made of ``lines`` (with NumPy
    imported as ``np`` above them)."""
    path = directory / f"{name}.py"
    path.write_text("import numpy as np\n\n\n" + "\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, function)
