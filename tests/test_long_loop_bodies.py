"""A loop with a long body is transformed in time linear in its length: the passes that
ask something of every saved value or accumulated cotangent read each statement a bounded
number of times, not once per value (which made a body of n statements cost n²)."""

import numpy as np
from oracle import assert_close, calls_counted, numeric_grad
from written_source import function_in_file

import s2sgrad as sg

STATEMENTS = 80
_FORMS = (
    "t{k} = np.sin(t{p}) * 0.5 + t{q}",
    "t{k} = t{p} * t{q} * 0.25",
    "t{k} = np.tanh(t{p} - 0.1 * t{q})",
    "t{k} = t{p} + np.exp(-t{q} * t{q})",
)


def _loop_body(statements: int, indent: str) -> list[str]:
    """A loop body of ``statements`` assignments, each reading the two before it."""
    lines = [f"{indent}t1 = y * 0.5"]
    for k in range(2, statements):
        form = _FORMS[k % len(_FORMS)]
        lines.append(indent + form.format(k=k, p=k - 1, q=max(k - 2, 1)))
    lines.append(f"{indent}y = t{statements - 1} * 0.1 + y")
    return lines


def _count_reads(monkeypatch) -> dict[str, list]:
    from s2sgrad.compiler.optimize import saves
    from s2sgrad.compiler.specialize import in_place, shape_constants

    return {
        "saves": calls_counted(monkeypatch, saves, "names_read"),
        "in place": calls_counted(monkeypatch, in_place, "walk"),
        "shape constants": calls_counted(monkeypatch, shape_constants, "walk"),
    }


def _gradient_and_lines(f) -> int:
    x = np.linspace(-0.4, 0.5, 4)
    g = sg.grad(f, mode="s2s")
    assert_close(g(x), numeric_grad(f, (x,), 0), rtol=1e-4)
    return sg.source(g).count("\n")


def test_a_long_loop_body_reads_each_statement_a_bounded_number_of_times(tmp_path, monkeypatch):
    # whether each saved value is read once restored, and whether each cotangent may be
    # accumulated in place, are answered from one reading of the statements
    asked = _count_reads(monkeypatch)
    lines = ["def f(x):", "    y = x", "    for _ in range(3):"]
    lines += _loop_body(STATEMENTS, "        ") + ["    return np.sum(y)"]
    generated = _gradient_and_lines(function_in_file(tmp_path, "long_body", lines))
    assert generated > 5 * STATEMENTS  # forward and backward sweeps, one statement each
    assert 0 < len(asked["saves"]) < 3 * generated
    assert 0 < len(asked["in place"]) < 3 * generated


def test_a_helper_with_a_long_loop_body_reads_each_statement_a_bounded_number_of_times(
    tmp_path, monkeypatch
):
    # the helper's VJP pair: its unread pushes and its saved constants are found from one
    # reading of each function, not one per saved value
    asked = _count_reads(monkeypatch)
    lines = ["def helper(y):", "    for _ in range(3):"] + _loop_body(STATEMENTS, "        ")
    lines += ["    return y", "", "", "def f(x):", "    return np.sum(helper(x) * 2.0)"]
    generated = _gradient_and_lines(function_in_file(tmp_path, "long_helper", lines))
    assert generated > 5 * STATEMENTS
    assert 0 < len(asked["saves"]) < 3 * generated
    assert 0 < len(asked["in place"]) < 3 * generated
    assert 0 < len(asked["shape constants"]) < 10
