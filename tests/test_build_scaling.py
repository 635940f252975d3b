"""The build side of the transformer (parsing, normal form, analyses, sweeps) does work
per statement that does not grow with the function (issue 15: a 2,000-statement function
must transform in under a second), and its answers are those of the plain analyses."""

from __future__ import annotations

import importlib.util

import numpy as np
from oracle import assert_close, numeric_grad

import s2sgrad as sg


def _load(tmp_path, name: str, source: str):
    """The function ``name`` of ``source``, from a file of its own (the source is read)."""
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\n\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def _long_source(name: str, statements: int) -> str:
    """``name(x, c)``: ``statements`` assignments, a comparison of the parameter ``c`` with
    a differentiated value among them (its operands are checked as the code runs)."""
    lines = [f"def {name}(x, c):", "    t0 = x", "    t1 = x * 0.5"]
    for k in range(2, statements):
        lines.append(f"    t{k} = np.sin(t{k - 1}) * 0.5 + t{k - 2}")
    lines.append(f"    flag = c < t{statements - 1}")
    lines.append(f"    return np.sum(np.where(flag, t{statements - 1}, t{statements - 2} * 2.0))")
    return "\n".join(lines) + "\n"


class _CountedSet(set):
    """A set that counts the copies made by ``-`` (a difference per statement is O(n^2))."""

    differences = 0

    def __sub__(self, other):
        _CountedSet.differences += 1
        return set(self) - other


def test_the_forward_sweep_does_not_copy_the_numeric_names_per_statement(tmp_path, monkeypatch):
    from s2sgrad.compiler.reverse import context

    original = context.numeric_names

    def counted(*args, **kwargs):
        return _CountedSet(original(*args, **kwargs))

    monkeypatch.setattr(context, "numeric_names", counted)
    monkeypatch.setattr(_CountedSet, "differences", 0)
    f = _load(tmp_path, "long_compared", _long_source("long_compared", 60))
    rng = np.random.default_rng(1501)
    x, c = rng.uniform(-1.0, 1.0, size=(3, 4)), rng.uniform(-0.5, 0.5, size=(4,))
    assert_close(sg.grad(f, mode="s2s")(x, c), numeric_grad(f, (x, c), 0), rtol=1e-5)
    # the comparison's operand c is still checked as the code runs
    assert "answered_plainly(c" in sg.source(sg.grad(f, mode="s2s"), optimize=False)
    assert _CountedSet.differences <= 2
