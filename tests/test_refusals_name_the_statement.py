"""A refusal raised by the runtime as generated code runs names the user's statement, not
the ``def`` line of the function: ``running.running_origin`` and ``name_the_origin`` read the
generated line that runs from ``running.POSITIONS`` (recorded by ``source_writer``, or by
pairing ``ast.unparse``'s text with the tree, ``compiler/printed_positions.py``), through a
derivative differentiated again (``hvp``), and where the optimiser moved a call into
another statement (``dx = unpad(db, ...) * 2.0`` under ``a = x * 2.0``), the call's line."""

from __future__ import annotations

import inspect
import sys
import warnings
from array import array

import gast
import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad import running
from s2sgrad.compiler.codegen import to_source
from s2sgrad.compiler.printed_positions import positions_by_reparsing
from s2sgrad.compiler.source_writer import write_source_and_names

HERE = "test_refusals_name_the_statement.py"


def _line_of(function, text: str) -> int:
    """The file line of the statement of ``function`` that starts with ``text``."""
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if line.strip().startswith(text))


def _padded_by_a_ramp(x):
    scaled = x * 2.0
    wide = np.pad(scaled, 2, mode="linear_ramp")  # the rule refuses as the backward runs
    return np.sum(wide**2)


def _list_added_to_an_array(x):
    y = np.sin(x)
    z = y * 2.0
    w = z + [1.0, 2.0]  # refused as it runs: NumPy adds item by item
    return np.sum(w)


def _calls_a_tape_gradient(p, x):
    scale = 2.0 * x
    inner = sg.grad(_energy, wrt=0, mode="tape")(scale, p)  # no source to transform
    return np.sum(inner)


def _energy(x, p):
    return np.sum((x * p["w"]) ** 2)


def _refusal(run) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        with pytest.raises(sg.S2SGradError) as raised:
            run()
    return str(raised.value)


def _named_line(message: str) -> int:
    """The line the message starts with (``file.py:12: ...``), which must be this file's."""
    location = message.split(": ", 1)[0].split(" (in its derivative", 1)[0]
    assert location.rsplit(":", 1)[0].endswith(HERE), message
    return int(location.rsplit(":", 1)[1])


X = np.array([0.3, 1.2, -0.4])


@pytest.mark.parametrize(
    "run",
    [
        lambda: sg.grad(_padded_by_a_ramp, mode="s2s")(X),
        lambda: sg.jvp(_padded_by_a_ramp, (X,), (X,), mode="s2s"),
        lambda: sg.hvp(_padded_by_a_ramp, (X,), (X,), mode="s2s"),
    ],
    ids=["grad", "jvp", "hvp"],
)
def test_a_rule_refusing_as_the_code_runs_names_its_statement(run):
    statement = _line_of(_padded_by_a_ramp, "wide = np.pad")
    for _ in range(2):  # the first call's generic code, then the specialised code
        message = _refusal(run)
        assert _named_line(message) == statement, message
        assert "mode 'constant'" in message


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_helper_refusing_as_the_code_runs_names_its_statement(mode):
    statement = _line_of(_list_added_to_an_array, "w = z +")
    gradient = sg.grad(_list_added_to_an_array, mode=mode)
    for _ in range(2):
        message = _refusal(lambda: gradient(X[:2]))
        assert _named_line(message) == statement, message
        assert "np.array([a, b])" in message
    message = _refusal(lambda: sg.hvp(_list_added_to_an_array, (X[:2],), (X[:2],), mode="s2s"))
    assert _named_line(message) == statement, message


def test_a_call_refused_as_it_is_dispatched_names_the_calling_statement():
    statement = _line_of(_calls_a_tape_gradient, "inner = sg.grad")
    p = {"w": np.array([1.5])}
    message = _refusal(lambda: sg.grad(_calls_a_tape_gradient, mode="s2s")(p, np.array([2.0])))
    assert _named_line(message) == statement, message
    assert "mode='tape'" in message


def test_the_origin_is_followed_through_a_derivative_differentiated_again(monkeypatch):
    # a user function at line 10; its derivative's line 3 comes from the user's 3rd line
    # (line 12); the derivative of that derivative's line 2 from the first's line 3
    origins = {
        "/gen/d.py": "model.py:10",
        "/gen/dd.py": "model.py:10 (in its derivative, /gen/d.py:1)",
        "/gen/chained.py": "/gen/d.py:1",
    }
    positions = {
        "/gen/d.py": array("i", [0, 2, 3, 0]),
        "/gen/dd.py": array("i", [0, 3, 0]),
        "/gen/chained.py": array("i", [0, 0, 3]),
    }
    monkeypatch.setattr(running, "ORIGINS", {**running.ORIGINS, **origins})
    monkeypatch.setattr(running, "POSITIONS", {**running.POSITIONS, **positions})
    assert running.statement_origin("/gen/d.py", 3) == "model.py:12"
    assert running.statement_origin("/gen/d.py", 2) == "model.py:11"
    assert running.statement_origin("/gen/d.py", 4) is None  # no statement starts there
    assert running.statement_origin("/gen/dd.py", 2) == (
        "model.py:12 (in its derivative, /gen/d.py:3)"
    )
    assert running.statement_origin("/gen/chained.py", 3) == "model.py:12"
    assert running.statement_origin("/gen/chained.py", 2) is None
    assert running.statement_origin("/not/generated.py", 2) is None


_PRINTED = """
def f(x, n):
    a = g(x)
    if a > 0:
        b = h(a)
    else:
        b = a
    for i in range(n):
        b = b * k(i)
    return b
"""


def _numbered(source: str) -> gast.FunctionDef:
    """``source``'s function, each statement's ``lineno`` moved by 40 so that it differs
    from the printed line (as a generated statement's is the user's, not its own)."""
    function = gast.parse(source).body[0]
    for node in gast.walk(function):
        if isinstance(node, (gast.stmt, gast.expr)) and hasattr(node, "lineno"):
            node.lineno += 40
    return function


@pytest.mark.skipif(
    sys.version_info < (3, 11), reason="the printer that records lines runs on Python 3.11 on"
)
def test_pairing_the_printed_text_with_the_tree_agrees_with_the_printer():
    function = _numbered(_PRINTED)
    recorded = array("i")
    text, _ = write_source_and_names(function, recorded)
    paired = positions_by_reparsing(function, to_source(function))
    assert paired is not None
    assert list(paired[: len(recorded)]) == list(recorded)
    assert any(recorded)  # the statements were recorded, each where its line starts
    for index, line in enumerate(text.splitlines()):
        if line.strip().startswith(("a =", "b =", "return")):
            assert recorded[index] > 40


def test_a_call_moved_into_another_statement_gives_that_statement_its_line():
    function = _numbered(_PRINTED)
    first, second = function.body[0], function.body[-1]  # a = g(x) ... return b
    second.value = first.value  # the optimiser moved g(x) into the return
    text = to_source(function)
    paired = positions_by_reparsing(function, text)
    returned = next(i for i, line in enumerate(text.splitlines()) if "return" in line)
    assert paired[returned] == first.lineno
    recorded = array("i")
    if write_source_and_names(function, recorded) is not None:  # Python 3.11 on
        assert recorded[returned] == first.lineno
