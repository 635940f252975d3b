"""Many ``if/else`` statements one after another are optimised in time linear in their
number: the names counted beside each branch (which the optimiser needs to tell the names
local to it) are kept as it moves down the body, not counted again from the whole body for
every branch."""

import importlib.util

import gast
import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.codegen import to_source
from s2sgrad.compiler.optimize import optimize
from s2sgrad.compiler.optimize.facts import FactsCache


def _branches(count: int) -> str:
    lines = ["import numpy as np", "", "", "def branches(x, s):", "    y = x"]
    for k in range(count):
        lines += [f"    if s > {k % 7}:", "        y = np.sin(y) * 1.01 + 0.1"]
        lines += ["    else:", "        y = y * 0.9"]
    return "\n".join([*lines, "    return np.sum(y)", ""])


def _load(tmp_path, count: int):
    path = tmp_path / f"branches_{count}.py"
    path.write_text(_branches(count))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.branches


@pytest.fixture
def statements_asked(monkeypatch) -> list:
    """Every statement whose facts the optimiser asks for, one entry per question."""
    asked: list = []
    of, of_each = FactsCache.of, FactsCache.of_each

    def counted_of(cache, statement):
        asked.append(statement)
        return of(cache, statement)

    def counted_of_each(cache, statements):
        asked.extend(statements)
        return of_each(cache, statements)

    monkeypatch.setattr(FactsCache, "of", counted_of)
    monkeypatch.setattr(FactsCache, "of_each", counted_of_each)
    return asked


def test_branches_in_a_row_are_read_a_bounded_number_of_times_each(tmp_path, statements_asked):
    x = np.array([0.3, -0.2, 0.7])
    asked = []
    for count in (40, 80):
        f = _load(tmp_path, count)
        statements_asked.clear()
        gradient = sg.grad(f, mode="s2s")
        for s in (3.0, 5.5):  # some branches taken, some not
            assert_close(gradient(x, s), numeric_grad(f, (x, s), 0), rtol=1e-4)
        asked.append(len(statements_asked))
    # linear: twice the branches, about twice the questions (quadratic was 3.6 times)
    assert asked[1] < 2.3 * asked[0], asked


def test_branches_in_a_body_whose_statements_share_a_node():
    # without the facts cache (two statements share a node, so optimising one may change
    # the other), the names beside each branch are counted afresh at every branch
    function = gast.parse(
        "def f(a, b):\n    t = a\n"
        "    if b > 0:\n        u = t * 1\n        v = u + 2\n        w = v * 3\n"
        "    else:\n        w = a\n"
        "    if b > 1:\n        p = a + 0\n        q = p * 2\n        w = w + q\n"
        "    return w\n"
    ).body[0]
    function.body[2].body[1].value.left = function.body[1].body[1].value  # q = (u + 2) * 2
    cache = FactsCache()
    cache.prime(function.body)
    assert not cache.enabled
    function.body = optimize(function.body, lambda call: True)
    assert to_source(function) == (
        "def f(a, b):\n    if b > 0:\n        u = a\n        w = (u + 2) * 3\n"
        "    else:\n        w = a\n    if b > 1:\n        w = w + (u + 2) * 2\n    return w\n"
    )
