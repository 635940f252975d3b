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
from s2sgrad.compiler.optimize import optimize
from s2sgrad.compiler.optimize.copies import propagate_copies
from s2sgrad.compiler.optimize.facts import FactsCache
from s2sgrad.compiler.optimize.optimizer import Optimizer

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


EXPECTED = """\
def f(x, s, items):
    b = x * 2.0
    e = b * s
    a = e
    e = a + 1.0
    u = a * e
    p = x
    p = p * 3.0 - 2
    items.append(p)
    for i in range(3):
        s = s + b[i]
    w = u * u * p
    return w + s + items[0] + 3.0
"""


class _CountingSet(set):
    """A record's names: counts the elements a loop in Python goes through."""

    iterated = 0

    def __iter__(self):
        _CountingSet.iterated += len(self)
        return super().__iter__()


def _optimised(source: str) -> str:
    node = gast.parse(textwrap.dedent(source)).body[0]
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


def test_the_same_code_as_with_every_name_indexed():
    # what the optimiser wrote when it indexed every name
    assert _optimised(BODY) == EXPECTED


def test_many_copies_do_not_loop_over_every_name():
    # a long block with many copies: each record's names are looked through in C, a loop
    # in Python goes only through the records that hold a name asked about
    lines = ["def f(x):", "    t0 = x * 2.0"]
    for k in range(1, 400):
        lines.append(f"    c{k} = t{k - 1}")
        lines.append(f"    t{k} = np.sin(c{k}) * {k} + t{k - 1}")
    lines.append("    return t399")
    node = gast.parse("\n".join(lines)).body[0]
    cache = FactsCache()
    cache.prime(node.body)
    for record in cache.of_each(node.body):
        record.reads, record.modified = _CountingSet(record.reads), _CountingSet(record.modified)
    _CountingSet.iterated = 0
    body = propagate_copies(Optimizer(is_pure, cache), node.body)
    copies = [s for s in body if type(s) is gast.Assign and s.targets[0].id.startswith("c")]
    assert len(body) == 401 and not copies  # every copy propagated
    # indexing every name went through each record's names twice (about 2,400 here)
    assert _CountingSet.iterated < 100


def test_a_long_function_with_many_copies(tmp_path):
    f = function_in_file(tmp_path, "many_copies", _straight_line(120))
    x = np.random.default_rng(5).uniform(-0.8, 0.8, size=(2, 3))
    g = sg.grad(f, mode="s2s")
    assert_close(g(x), numeric_grad(f, (x,), 0), rtol=1e-5)
    # the specialised code's copies (an unbroadcast that did nothing) were propagated
    assert "unbroadcast" not in sg.source(g)
