"""A custom gradient that clips the gradient's norm, then exported and run in a fresh Python.

TensorFlow's ``tf.custom_gradient`` example: the value of ``clip_gradient(y)`` is ``y``,
but the gradient flowing back into ``y`` is clipped to norm 0.5. So for ``f(v) = clip(v²)``
at ``v = 2`` the gradient is 0.5 · 2v = 2.0 (4.0 without clipping). The same number comes
from the generated code, from the tape, from a ``GradientTape``, and from the module
``sg.export`` writes, imported in a new interpreter that has never seen this file run.

Run with ``python examples/custom_gradient_export.py [output directory]`` (default
``examples/output``; the ``S2SGRAD_EXAMPLES_OUTPUT`` environment variable also sets it).
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from _shared import output_directory

import s2sgrad as sg


def clip_by_norm(g, limit):
    return g * limit / max(float(np.linalg.norm(g)), limit)


@sg.custom_gradient
def clip_gradient(y):
    return y, lambda g: clip_by_norm(g, 0.5)


def f(v):
    return clip_gradient(v * v)


def run_exported(directory: Path) -> str:
    """Import the exported module in a fresh interpreter and return what it prints.

    The exported code imports ``clip_gradient`` from this file's module, so the new
    interpreter finds it on its path (next to this file) and s2sgrad where this one did.
    """
    examples = str(Path(__file__).resolve().parent)
    package = str(Path(sg.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(directory), examples, package]))
    script = "import df_clipped; print(df_clipped.df(2.0))"
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def main() -> None:
    print("f(2.0) =", f(2.0))  # 4.0: the value is v * v
    print("gradient, generated code:", sg.grad(f, mode="s2s")(2.0))  # 2.0
    print("gradient, tape:", sg.grad(f, mode="tape")(2.0))  # 2.0

    v = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(v)
        y = f(v)
    print("gradient, GradientTape:", tape.gradient(y, v))  # 2.0

    # sg.export needs the custom gradient importable by name, so export the functions of
    # this file imported as a module (not of __main__, which a new interpreter cannot import).
    import custom_gradient_export as module

    directory = output_directory()
    path = directory / "df_clipped.py"
    sg.export(module.f, path, name="df")
    print(f"exported to {path.name}:")
    print(path.read_text())
    print("gradient, exported module in a fresh interpreter:", run_exported(directory))


if __name__ == "__main__":
    main()
