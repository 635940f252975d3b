"""The forward sweep's work per statement does not grow with the function: a question it
asks of every assignment (which operands of a comparison to check as the code runs) is
answered from the statement's own names, not from a set of the function's numeric names
built again for each statement (which made a 2,000-statement function cost 2,000² set
elements, a third of its first call)."""

import numpy as np
from oracle import assert_close, numeric_grad
from written_source import function_in_file

import s2sgrad as sg
from s2sgrad.compiler.reverse import context

STATEMENTS = 150
_FORMS = (
    "t{k} = np.sin(t{p}) * 0.5 + t{q}",
    "t{k} = t{p} * t{q} * 0.25",
    "t{k} = np.where(t{p} > c, np.tanh(t{p} - 0.1 * t{q}), t{q} * 0.5)",
    "t{k} = t{p} + np.exp(-t{q} * t{q})",
)


class _CountingSet(set):
    """A set that counts the elements its operators and copies go through."""

    touched = 0

    def _count(self):
        _CountingSet.touched += len(self)

    def __sub__(self, other):
        self._count()
        return set(self) - other

    def __and__(self, other):
        self._count()
        return set(self) & other

    def __or__(self, other):
        self._count()
        return set(self) | other

    def __iter__(self):
        self._count()
        return super().__iter__()

    def copy(self):
        self._count()
        return set(self)


def _straight_line(statements: int) -> list[str]:
    lines = ["def f(x, c):", "    t0 = x", "    t1 = x * 0.5"]
    for k in range(2, statements):
        form = _FORMS[k % len(_FORMS)]
        lines.append("    " + form.format(k=k, p=k - 1, q=k - 2))
    lines.append(f"    return np.sum(t{statements - 1})")
    return lines


def test_numeric_names_are_not_copied_per_statement(tmp_path, monkeypatch):
    original = context.numeric_names

    def counting(*args, **kwargs):
        return _CountingSet(original(*args, **kwargs))

    monkeypatch.setattr(context, "numeric_names", counting)
    _CountingSet.touched = 0
    f = function_in_file(tmp_path, "straight_comparisons", _straight_line(STATEMENTS))
    rng = np.random.default_rng(3)
    x, c = rng.uniform(-1.0, 1.0, size=(2, 3)), 0.05
    g = sg.grad(f, mode="s2s")
    assert_close(g(x, c), numeric_grad(lambda x: f(x, c), (x,), 0), rtol=1e-5)
    # each statement's own question touches none of them: linear, a few passes at most
    # (with a copy per statement, of every temporary the normal form names too, it was
    # over 300,000 here)
    assert _CountingSet.touched < 4 * STATEMENTS


def test_parameters_compared_are_still_checked_and_numeric_names_not(tmp_path):
    # c is a parameter: whatever it holds may answer c < t itself, so it is checked as the
    # code runs; t and a local number are numeric, and never checked
    lines = [
        "def f(x, c):",
        "    t = np.sin(x)",
        "    k = 0.25",
        "    m = np.where(t > k, t, k * t)",
        "    return np.sum(np.where(c < t, m, t * t))",
    ]
    f = function_in_file(tmp_path, "compared", lines)
    x = np.linspace(-1.0, 1.0, 5)
    g = sg.grad(f, mode="s2s")
    source = sg.source(g)
    assert "answered_plainly(c)" in source
    assert "answered_plainly(t" not in source and "answered_plainly(k" not in source
    for c in (0.1, -0.3):
        assert_close(g(x, c), numeric_grad(lambda x, c=c: f(x, c), (x,), 0), rtol=1e-5)
