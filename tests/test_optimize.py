"""Tests of the optimiser (s2sgrad/compiler/optimize/) and the facts it keeps (optimize/facts.py).

Most of the expected code below is what the optimiser wrote before it kept facts between
passes; the faster one must write exactly the same.
"""

from __future__ import annotations

import random
import textwrap

import gast
import numpy as np
import pytest

from s2sgrad.compiler.codegen import to_source
from s2sgrad.compiler.optimize import optimize
from s2sgrad.compiler.optimize.facts import (
    Facts,
    FactsCache,
    facts_after_folding,
    facts_after_merging,
    facts_after_rename,
    facts_after_replacing_by_literal,
    rename_reads,
    replace_reads,
)
from s2sgrad.compiler.optimize.folding import ConstantFolder
from s2sgrad.compiler.optimize.statements import node_size
from s2sgrad.compiler.syntax import (
    clone,
    names_modified,
    names_read,
    names_written,
    parse_expression,
)


def is_pure(call: gast.Call) -> bool:
    """Like the transformer's test: ``log_event`` has effects, and so has a method call on
    anything but a name (it cannot be resolved)."""
    func = call.func
    if isinstance(func, gast.Name):
        return func.id != "log_event"
    base = func
    while isinstance(base, gast.Attribute):
        base = base.value
    return isinstance(base, gast.Name) and (base.id == "np" or hasattr(np.ndarray, func.attr))


def optimized(source: str) -> str:
    function = gast.parse(textwrap.dedent(source)).body[0]
    function.body = optimize(function.body, is_pure)
    return to_source(function)


CASES = {
    # c * x + c * x is exactly (2 * c) * x in floating point
    "doubled_terms": (
        """
        def f(W, g, h):
            t1 = 0.0001 * W
            t2 = 0.0001 * W
            dW = t1 + t2 + g @ h
            return dW
        """,
        """\
def f(W, g, h):
    dW = 0.0002 * W + g @ h
    return dW
""",
    ),
    # without a float factor, x + x may be a logical or of boolean arrays: left alone
    "doubled_negative_factor": (
        """
        def f(x):
            y = -0.25 * x + -0.25 * x
            return y
        """,
        """\
def f(x):
    y = -0.5 * x
    return y
""",
    ),
    "sums_of_alike_names_stay": (
        """
        def f(a, x):
            y = a * x + a * x
            return y
        """,
        """\
def f(a, x):
    y = a * x + a * x
    return y
""",
    ),
    # a call may differ each time it runs: f(x) + f(x) is not 2 * f(x)
    "calls_are_not_doubled": (
        """
        def f(x):
            y = 0.5 * noise(x) + 0.5 * noise(x)
            return y
        """,
        """\
def f(x):
    y = 0.5 * noise(x) + 0.5 * noise(x)
    return y
""",
    ),
    "subtracting_a_negation": (
        """
        def f(a, b, c):
            t1 = -b
            y = a - t1 * c
            return y
        """,
        """\
def f(a, b, c):
    y = a + b * c
    return y
""",
    ),
    "integer_division_of_constants": (
        """
        def f(x):
            count = 24 // 3
            y = x / (count - 0) + x % 1 + 7 % 4
            return y
        """,
        """\
def f(x):
    y = x / 8 + x % 1 + 3
    return y
""",
    ),
    "straight_line": (
        """
        def f(x, W, b):
            t1 = x @ W
            z = t1 + b
            t2 = np.tanh(z)
            t3 = t2 * 1
            loss = np.sum(t3)
            dloss = 1.0
            dt3 = np.broadcast_to(dloss, t3.shape)
            dt2 = dt3
            dz = dt2 * (1 - t2 ** 2)
            dt1 = dz
            db = dz.sum(axis=0)
            dW = x.T @ dt1
            return (dW, db)
        """,
        """\
def f(x, W, b):
    t2 = np.tanh(x @ W + b)
    dz = np.broadcast_to(1.0, t2.shape) * (1 - t2 ** 2)
    db = dz.sum(axis=0)
    dW = x.T @ dz
    return (dW, db)
""",
    ),
    "accumulations": (
        """
        def f(x, y):
            dx = x * 2
            "__s2sgrad_comment__:grad of: y"
            dy = y * 3
            dx = dx + dy * 4
            dx = dx + -(dy * 2)
            out = np.zeros(3)
            out[0] = dx.sum()
            out[0] += dy.sum()
            unused = dx * dy
            return (dx, out)
        """,
        """\
def f(x, y):
    # grad of: y
    dy = y * 3
    dx = x * 2 + dy * 4
    dx = dx - dy * 2
    out = np.zeros(3)
    out[0] = dx.sum() + dy.sum()
    return (dx, out)
""",
    ),
    "loops_and_branches": (
        """
        def f(x, n):
            total = 0.0
            k = 2
            for i in range(n):
                step = x * i
                scaled = step * k
                total = total + scaled
                if None is None:
                    total = total * 1
                else:
                    total = total - 1
            while total > 1.0:
                half = total / 2
                total = half
            return total
        """,
        """\
def f(x, n):
    total = 0.0
    for i in range(n):
        total = total + x * i * 2
        total = total
    while total > 1.0:
        total = total / 2
    return total
""",
    ),
    # The branch folds away inside the loop; the loop's facts are read afresh, so it no
    # longer writes y, and y = 1 is a constant to propagate.
    "facts_of_a_loop_after_its_body_changes": (
        """
        def f(x):
            y = 1
            for i in range(3):
                if 1 is None:
                    y = 3
                else:
                    x = x * 2
            return (y, x)
        """,
        """\
def f(x):
    for i in range(3):
        x = x * 2
    return (1, x)
""",
    ),
    # np.ndim(v) > 0 once specialisation knows the rank: the test folds, the flag made of
    # it propagates into both sweeps' branches, and they fold away
    "branches_on_a_known_rank": (
        """
        def f(x, v):
            t2 = 3 > 0
            if t2:
                v = v * x
            dv = v * 2.0
            if t2:
                dx = dv * v
            else:
                dx = 0.0 * x
            t5 = 2 <= 2.0 != 2
            if t5:
                dx = dx + 1.0
            return dx
        """,
        """\
def f(x, v):
    v = v * x
    dx = v * 2.0 * v
    return dx
""",
    ),
    # t16's value is judged pure (a method of a name) before t15 is folded into it; the
    # verdict holds for the pass, so t16 is folded in turn.
    "purity_judged_once_a_pass": (
        """
        def f(x):
            t14 = x * 2
            t15 = x.clip(-0.5, 0.5)
            t16 = t15.sum()
            t17 = t16 + t14
            return t17
        """,
        """\
def f(x):
    t17 = x.clip(-0.5, 0.5).sum() + x * 2
    return t17
""",
    ),
    "impure_calls_stay": (
        """
        def f(x):
            t1 = log_event(x)
            t2 = x * 2
            t3 = log_event(t2)
            unused = log_event(x)
            return t3
        """,
        """\
def f(x):
    t1 = log_event(x)
    t3 = log_event(x * 2)
    unused = log_event(x)
    return t3
""",
    ),
    # a copy read only up to where its source is rebound (the rebinding reads first) goes
    "copy_read_until_its_source_is_rebound": (
        """
        def f(dx, a, b, x):
            for _ in range(3):
                dt3 = dx
                dt4 = dx
                db = dt4 * x
                dx = dt4 * b
                da = dt3 * a
                dx = dx + dt3 * x
            return dx
        """,
        """\
def f(dx, a, b, x):
    for _ in range(3):
        dx = dx * b + dx * x
    return dx
""",
    ),
    # read after its source is rebound, a copy stays
    "copy_read_after_its_source_is_rebound": (
        """
        def f(dx, b):
            g = dx
            dx = dx * b
            y = g + dx
            return y
        """,
        """\
def f(dx, b):
    g = dx
    dx = dx * b
    y = g + dx
    return y
""",
    ),
    # an in-place change of the source is not a rebinding: the copy stays
    "copy_of_a_source_changed_in_place": (
        """
        def f(d, b):
            g = d
            d[0] = b
            y = g * 2
            return y
        """,
        """\
def f(d, b):
    g = d
    d[0] = b
    y = g * 2
    return y
""",
    ),
    # a range of literals is written where the loops iterate
    "constant_range_inlined": (
        """
        def f(x):
            t1 = range(3)
            for i in t1:
                x = x * 2
            for i in reversed(t1):
                x = x + 1
            return x
        """,
        """\
def f(x):
    for i in range(3):
        x = x * 2
    for i in reversed(range(3)):
        x = x + 1
    return x
""",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_optimised_code(name):
    source, expected = CASES[name]
    assert optimized(source) == expected


def test_bodies_sharing_a_node_are_optimised_without_the_cache():
    function = gast.parse(
        "def f(a, b):\n    a = b\n    c = a + 1\n    d = c * 3\n    return (c, d)"
    )
    function = function.body[0]
    function.body[2].value.left = function.body[1].value  # d = (a + 1) * 3, the same a + 1
    cache = FactsCache()
    cache.prime(function.body)
    assert not cache.enabled
    function.body = optimize(function.body, is_pure)
    assert to_source(function) == (
        "def f(a, b):\n    c = b + 1\n    d = (b + 1) * 3\n    return (c, d)\n"
    )


STATEMENTS = [
    "y = a + b * c",
    "y, z = a",
    "y[i] = v",
    "y.attr[k] = v",
    "items.append(x)",
    "a.b.sort()",
    "del y[0]",
    "y += x",
    "for i in range(n):\n    s = s + i\n    out[i] = s",
    "if a > 0:\n    b = 1\nelse:\n    c.extend(d)",
    "def g(p, q=r):\n    inner = p + q\n    return inner",
    "h = lambda u: u + w",
    "y = [x * i for i in items]",
    "y = {k: v for k, v in pairs}",
    "while x:\n    x = x.pop()",
    "with open(p) as handle:\n    data = handle.read()",
    "class C:\n    attribute = value",
    "y = (walrus := x + 1)",
    "return (a, b)",
    "y = not (a < b < c) and -f(x, *rest, key=k) or {1: u, **others}[0]",
    "y = f'{a!r:>{width}}' if (b is None) else [*c, ~d]",
]


@pytest.mark.parametrize("source", STATEMENTS)
def test_facts_agree_with_the_syntax_queries(source):
    statement = gast.parse(source).body[0]
    facts = Facts(statement)
    assert facts.reads == names_read(statement)
    assert facts.writes == names_written(statement)
    assert facts.modified == names_modified(statement)
    assert sorted(facts.loads) == sorted(
        n.id
        for n in gast.walk(statement)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
    )
    calls = [n for n in gast.walk(statement) if isinstance(n, gast.Call)]
    assert sorted(map(id, facts.calls)) == sorted(map(id, calls))
    assert facts.effects == any(isinstance(n, gast.NamedExpr) for n in gast.walk(statement))
    if facts.assigned is not None:
        assert facts.value_size == node_size(statement.value)


def _random_expression(rng: random.Random, depth: int = 0) -> str:
    if depth > 3 or rng.random() < 0.3:
        return rng.choice(["a", "b", "1", "2", "0.5", "-1", "None", "x.T"])
    left, right = _random_expression(rng, depth + 1), _random_expression(rng, depth + 1)
    return rng.choice(
        [
            f"({left} {rng.choice('+-*/')} {right})",
            f"(0.5 * {left} + 0.5 * {left})",
            f"({left} * 1)",
            f"(1 * {left})",
            f"-(2 * {left})",
            f"({left} ** {right})",
            f"-({left})",
            f"({left}).sum(axis=0)",
            f"({left}, {right})[{rng.randrange(-2, 2)}]",
            f"({left} is None)",
            f"np.exp({left})",
            f"({left} < {right})",
        ]
    )


@pytest.mark.parametrize("seed", range(10))
def test_statements_without_anything_to_fold_are_left_alone(seed):
    """Facts say "folded" from the start only when the folder would change nothing."""
    rng = random.Random(seed)
    skipped = 0
    for _ in range(60):
        statement = gast.parse(f"y = {_random_expression(rng)}").body[0]
        if not Facts(statement).folded:
            continue
        skipped += 1
        before = gast.dump(statement)
        folder = ConstantFolder(FactsCache(enabled=False))
        folder.visit(statement)
        assert not folder.changed
        assert gast.dump(statement) == before
    assert skipped > 0


def test_facts_are_kept_until_forgotten():
    cache = FactsCache()
    statement = gast.parse("y = a + b").body[0]
    first = cache.of(statement)
    assert cache.of(statement) is first
    rename_reads(statement, "a", "c", cache)
    assert cache.of(statement).reads == {"b", "c"}


def test_rewrites_forget_the_statements_nested_in_what_they_change():
    cache = FactsCache()
    loop = gast.parse("for i in r:\n    s = s + t\n    u = t").body[0]
    inner = loop.body[0]
    assert cache.of(inner).reads == {"s", "t"}
    replace_reads(loop, "t", parse_expression("p * q"), cache)
    assert cache.of(inner).reads == {"s", "p", "q"}
    assert cache.known(loop) is None


def test_replacing_reads_copies_the_value_unless_told_to_move_it():
    value = parse_expression("p * q")
    statement = gast.parse("y = t + t").body[0]
    replace_reads(statement, "t", value, FactsCache(), move=True)
    assert statement.value.left is value
    assert statement.value.right is not value
    assert gast.dump(statement.value.right) == gast.dump(value)
    copied = gast.parse("y = t").body[0]
    replace_reads(copied, "t", value, FactsCache())
    assert copied.value is not value


def test_optimising_again_changes_nothing():
    """The passes run to a fixed point."""
    for source, expected in CASES.values():
        function = gast.parse(textwrap.dedent(source)).body[0]
        function.body = optimize(function.body, is_pure)
        function.body = optimize(clone(function.body), is_pure)
        assert to_source(function) == expected


def _same_facts(told: Facts, walked: Facts) -> None:
    """``told`` (made without a walk) says what a walk says (``folded`` may be the more
    cautious, and a purity verdict is made again)."""
    for field in ("loads", "stores", "others"):
        assert sorted(getattr(told, field)) == sorted(getattr(walked, field)), field
    for field in ("reads", "writes", "modified", "assigned", "comment", "own_scope"):
        assert getattr(told, field) == getattr(walked, field), field
    for field in ("has_scope", "effects", "annotated"):
        assert getattr(told, field) == getattr(walked, field), field
    assert sorted(map(id, told.calls)) == sorted(map(id, walked.calls))
    assert told.foldable >= walked.foldable
    assert told.folded <= walked.folded
    assert told.value_size in (None, walked.value_size)
    assert told.pure_value is None


@pytest.mark.parametrize(
    "source",
    ["y = f(a) + a * b", "y = -a", "a.b[c] = a + g(a)", "y = [a for i in r] + a.T"],
)
def test_facts_told_after_a_rename_are_what_a_walk_finds(source):
    statement = gast.parse(source).body[0]
    facts = Facts(statement)
    told = facts_after_rename(facts, "a", "z")
    rename_reads(statement, "a", "z", FactsCache())
    if told is None:  # a is changed in place there
        assert "a" in facts.modified
    else:
        _same_facts(told, Facts(statement))


@pytest.mark.parametrize("literal", ["2", "-0.5"])
@pytest.mark.parametrize("source", ["y = f(a) + a * b", "y = a", "y = a[0] + a.T", "a.x = a"])
def test_facts_told_after_a_literal_arrived_are_what_a_walk_finds(source, literal):
    statement = gast.parse(source).body[0]
    facts = Facts(statement)
    value = parse_expression(literal)
    told = facts_after_replacing_by_literal(facts, "a", node_size(value))
    replace_reads(statement, "a", value, FactsCache())
    if told is None:
        assert "a" in facts.modified
    else:
        _same_facts(told, Facts(statement))


@pytest.mark.parametrize(
    "value",
    ["f(p) @ q", "p.T", "p[i] + g(q)", "[v for v in p]", "-p", "2.0 * p", "(-p) / q", "p * q"],
)
@pytest.mark.parametrize("reader", ["y = t * 2.0", "y = h(t, k=b)", "y = -t.sum()", "y += t"])
def test_facts_told_after_folding_a_value_in_are_what_a_walk_finds(reader, value):
    dropped = gast.parse(f"t = {value}").body[0]
    later = gast.parse(reader).body[0]
    dropped_facts, later_facts = Facts(dropped), Facts(later)
    replace_reads(later, "t", dropped.value, FactsCache(), move=True)
    told = facts_after_folding(later_facts, dropped_facts, dropped.value)
    walked = Facts(later)
    if told is None:  # the folder may look for what arrived
        assert value in ("-p", "2.0 * p", "(-p) / q")
    else:
        _same_facts(told, walked)
        assert told.folded == walked.folded


@pytest.mark.parametrize("earlier", ["d = f(x)", "d = 0.5 * x", "d = [v for v in x]", "d = -x"])
@pytest.mark.parametrize("later", ["d = d + g(y)", "d = d + 0.5 * x", "d = d + -y"])
def test_facts_told_after_merging_are_what_a_walk_finds(earlier, later):
    first, second = gast.parse(earlier).body[0], gast.parse(later).body[0]
    first_facts, second_facts = Facts(first), Facts(second)
    second.value.left = first.value
    told = facts_after_merging(second_facts, first_facts, second.value)
    walked = Facts(second)
    _same_facts(told, walked)
    assert told.folded == walked.folded
