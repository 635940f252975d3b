"""The optimiser's facts walk (``optimize/facts.py``) tells a binary operation, the most
frequent node with a role, where it meets it, and leaves a loop's or branch's blocks out
by filtering the statement's fields once (the cache adds its blocks' records). The
records are those of a walk of the statement (``syntax.walk``, ``names_read``,
``names_written``), which ``tests/test_build_facts.py`` also holds them to."""

from __future__ import annotations

import gast
import pytest

from s2sgrad.compiler.optimize.facts import Facts, FactsCache
from s2sgrad.compiler.optimize.foldable import binop_folds
from s2sgrad.compiler.syntax import names_read, names_written, walk

STATEMENTS = [
    "y = a * b + c * d",
    "y = 2 * 3 + a",
    "y = -a + b * (1.0 - c ** 2)",
    "y = np.exp(a * b) / np.sum(np.exp(a * b), axis=1, keepdims=True)",
    "x[i] = x[i] + a * b",
    "y = [a * t for t in ts]",
    "y = lambda z: z * a + b",
    "if a > 0:\n    y = a * b\nelse:\n    y = a - b * 1",
    "for i in range(n):\n    s = s + x[i] * w\n    if s > 0:\n        s = 0 * s",
]


def test_arithmetic_is_listed_and_counted():
    statement = gast.parse("y = a * b + c * d - e / f").body[0]
    operations: list = []
    record = Facts(statement, [], None, operations)
    assert len(operations) == 5 and all(type(o) is gast.BinOp for o in operations)
    assert sorted(record.loads) == ["a", "b", "c", "d", "e", "f"]
    assert record.value_size == 16  # five operations, their operators and six names
    assert not record.foldable and Facts(gast.parse("y = a * 1").body[0]).foldable


@pytest.mark.parametrize("source", STATEMENTS)
def test_records_are_those_of_the_walk(source):
    statement = gast.parse(source).body[0]
    trail: list = []
    operations: list = []
    record = Facts(statement, trail, None, operations)
    nodes = walk(statement)
    binops = [n for n in nodes if type(n) is gast.BinOp]
    assert sorted(map(id, operations)) == sorted(map(id, binops))
    assert record.reads == names_read(statement)
    assert record.writes == names_written(statement)
    assert record.foldable == any(map(binop_folds, binops)) or record.foldable
    calls = [n for n in nodes if type(n) is gast.Call]
    assert sorted(map(id, record.calls)) == sorted(map(id, calls))
    walked = {id(n) for n in nodes}
    assert all(id(n) in walked for n in trail)


@pytest.mark.parametrize("source", STATEMENTS[-2:])
def test_a_statement_with_blocks_is_told_from_its_blocks(source):
    statement = gast.parse(source).body[0]
    whole = Facts(statement)
    cached = FactsCache().of(statement)  # walked outside its blocks, and each block
    assert sorted(cached.loads) == sorted(whole.loads)
    assert sorted(cached.stores) == sorted(whole.stores)
    assert cached.reads == whole.reads and cached.modified == whole.modified
    assert cached.foldable == whole.foldable and len(cached.calls) == len(whole.calls)
