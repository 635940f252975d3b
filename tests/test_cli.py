"""The command line: ``python -m s2sgrad show module:function``."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(*arguments, cwd):
    return subprocess.run(
        [sys.executable, "-m", "s2sgrad", *arguments], capture_output=True, text=True, cwd=cwd
    )


def test_show_prints_the_gradient_code(tmp_path):
    (tmp_path / "model.py").write_text(
        textwrap.dedent(
            """
            import numpy as np

            def loss(w, x):
                return np.sum(np.tanh(x @ w) ** 2)
            """
        )
    )
    result = run("show", "model:loss", "--wrt", "0", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "def dloss(w, x):" in result.stdout and "# grad of:" in result.stdout


def test_errors_are_one_line_messages(tmp_path):
    result = run("show", "no_such_module:f", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "cannot find no_such_module:f" in result.stderr
