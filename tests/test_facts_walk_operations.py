"""The optimiser's facts walk (``optimize/facts._Walk``) tells a binary operation, the most
frequent node with a role, where it meets it, without a call per operation; and a walk
that leaves a statement's blocks out filters the statement's fields once, not a test per
node. The records are those of a walk of the statement (``syntax.walk``, ``names_read``,
``names_written``), which ``tests/test_build_facts.py`` also holds them to."""

from __future__ import annotations

import gast
import pytest

from s2sgrad.compiler.optimize import facts
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
    "if a > 0:\n    y = a * b\nelse:\n    y = a - b",
    "for i in range(n):\n    s = s + x[i] * w",
]


def _noticed(monkeypatch) -> list:
    noticed: list = []
    original = facts._Walk._notice

    def counted(self, node, kind, role):
        noticed.append(kind)
        return original(self, node, kind, role)

    monkeypatch.setattr(facts._Walk, "_notice", counted)
    return noticed


def test_arithmetic_is_told_without_a_call_per_operation(monkeypatch):
    noticed = _noticed(monkeypatch)
    statement = gast.parse("y = a * b + c * d - e / f").body[0]
    operations: list = []
    record = facts.Facts(statement, [], None, operations)
    assert noticed == []
    assert len(operations) == 5 and all(type(o) is gast.BinOp for o in operations)
    assert sorted(record.loads) == ["a", "b", "c", "d", "e", "f"]
    assert record.value_size == 16  # five operations, their operators and six names


@pytest.mark.parametrize("source", STATEMENTS)
def test_records_are_those_of_the_walk(source):
    statement = gast.parse(source).body[0]
    trail: list = []
    operations: list = []
    record = facts.Facts(statement, trail, None, operations)
    nodes = walk(statement)
    binops = [n for n in nodes if type(n) is gast.BinOp]
    assert sorted(map(id, operations)) == sorted(map(id, binops))
    assert record.reads == names_read(statement)
    assert record.writes == names_written(statement)
    assert record.foldable == any(binop_folds(b) for b in binops) or record.foldable
    assert (
        record.calls
        and all(type(c) is gast.Call for c in record.calls)
        or not any(type(n) is gast.Call for n in nodes)
    )
    walked = {id(n) for n in nodes}
    assert all(id(n) in walked for n in trail)


@pytest.mark.parametrize("source", STATEMENTS[-2:])
def test_a_walk_without_blocks_leaves_only_them_out(source):
    statement = gast.parse(source).body[0]
    outside = facts._Walk(statement, None, blocks=False)
    whole = facts._Walk(statement, None)
    for inner in statement.body + statement.orelse:
        outside.add_block_statement(facts._Walk(inner, None))
    assert sorted(outside.loads) == sorted(whole.loads)
    assert sorted(outside.stores) == sorted(whole.stores)
    assert outside.size == whole.size and outside.foldable == whole.foldable
