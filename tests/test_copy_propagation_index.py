"""Copy propagation with many copies indexes the readers and modifiers of the names it can
ask about (the copies, and the names they copy), not of every name of the block: the
specialised code of a 2,000-statement function has a thousand copies (``dt = g`` where an
``unbroadcast`` did nothing) among 16,500 statements, and indexing every name was a fifth
of propagation. The code it writes is the same as with every name indexed."""

from __future__ import annotations

import textwrap

import gast
import numpy as np
from oracle import assert_close, numeric_grad
from test_optimize import is_pure
from written_source import function_in_file

import s2sgrad as sg
from s2sgrad.compiler.codegen import to_source
from s2sgrad.compiler.optimize import copies, optimize

# copies of every kind propagation starts from, more than a few: a chain (c = b, d = c),
# a source rebound after the copy (read before and after), a copy back (b = a after a = b),
# a literal, a negated literal, range(3), a copy read by a statement that modifies it
BODY = """
def f(x, s, items):
    b = x * 2.0
    c = b
    d = c
    e = d * s
    k = 3.0
    m = -2
    r = range(3)
    a = e
    e = a + 1.0
    u = a * e
    e2 = u
    u = e2
    p = x
    p = p * k + m
    q = items
    q.append(p)
    for i in r:
        s = s + d[i]
    t = u
    w = t * e2 * p
    return w + s + q[0] + k
"""


def _optimised(source: str, monkeypatch=None, index_everything: bool = False) -> str:
    node = gast.parse(textwrap.dedent(source)).body[0]
    if index_everything:  # the reference: every name indexed at the start, as before
        monkeypatch.setattr(
            copies._Positions, "_index_names", lambda self, names: self._index_all()
        )
    node.body = optimize(node.body, is_pure)
    return to_source(node)


def _straight_line(statements: int) -> list[str]:
    forms = (
        "t{k} = np.sin(t{p}) * 0.5 + t{q}",
        "t{k} = t{p} * t{q} * 0.25",
        "t{k} = np.tanh(t{p} - 0.1 * t{q})",
        "t{k} = t{p} + np.exp(-t{q} * t{q})",
    )
    lines = ["def f(x):", "    t0 = x", "    t1 = x * 0.5"]
    lines += ["    " + forms[k % 4].format(k=k, p=k - 1, q=k - 2) for k in range(2, statements)]
    return lines + [f"    return np.sum(t{statements - 1})"]


def test_the_same_code_as_with_every_name_indexed(monkeypatch):
    ours = _optimised(BODY)
    assert _optimised(BODY, monkeypatch, index_everything=True) == ours
    assert "c = b" not in ours and "d = c" not in ours


def test_many_copies_do_not_index_every_name(tmp_path, monkeypatch):
    indexed: list = []
    original = copies._Positions._index_all

    def index_all(self):
        indexed.append(self.field)
        original(self)

    monkeypatch.setattr(copies._Positions, "_index_all", index_all)
    f = function_in_file(tmp_path, "many_copies", _straight_line(120))
    x = np.random.default_rng(5).uniform(-0.8, 0.8, size=(2, 3))
    g = sg.grad(f, mode="s2s")
    assert_close(g(x), numeric_grad(f, (x,), 0), rtol=1e-5)
    # the specialised code's copies (an unbroadcast that did nothing) were propagated
    assert "unbroadcast" not in sg.source(g)
    assert indexed == []


def test_specialised_code_is_the_same_as_with_every_name_indexed(tmp_path, monkeypatch):
    x = np.random.default_rng(6).uniform(-0.8, 0.8, size=(4,))
    f = function_in_file(tmp_path, "long_copies", _straight_line(60))
    g = sg.grad(f, mode="s2s")
    value = g(x)
    ours = sg.source(g)
    monkeypatch.setattr(copies._Positions, "_index_names", lambda self, names: self._index_all())
    f = function_in_file(tmp_path, "long_copies_again", _straight_line(60))
    g = sg.grad(f, mode="s2s")
    assert_close(g(x), value, rtol=1e-12)
    assert sg.source(g) == ours
