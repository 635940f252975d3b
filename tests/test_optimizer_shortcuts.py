"""The optimiser's shortcuts (a pass skipped when a cheap look proves it has nothing to do,
work limited to the statements that changed) leave the code exactly as without them: the
expected code below is what the optimiser wrote before it took them."""

from __future__ import annotations

import textwrap
import warnings
from collections import Counter

import gast
import numpy as np
import program_families
import pytest
from test_optimize import is_pure

import s2sgrad as sg
from s2sgrad.compiler.codegen import to_source
from s2sgrad.compiler.optimize import optimize
from s2sgrad.compiler.optimize.common import eliminate_common_calls
from s2sgrad.compiler.optimize.facts import Facts, FactsCache
from s2sgrad.compiler.optimize.optimizer import Optimizer
from s2sgrad.compiler.optimize.simple_statements import without_blocks
from s2sgrad.compiler.optimize.statements import drop_orphan_comments, has_copies
from s2sgrad.compiler.optimize.views import views_of_updated_arrays
from s2sgrad.compiler.syntax import COMMENT_MARK, RULES_MARK, every_statement

CASES = {
    # a literal propagated, then folded in the statements it reached, in the same round
    "propagated_then_folded": (
        """
        def f(x):
            a = 1.0
            y = x * a
            z = -y
            w = x + -z
            return w
        """,
        """\
def f(x):
    w = x + x * 1.0
    return w
""",
    ),
    # a view of an array written in place, in straight-line code; a tuple target kept
    "view_in_straight_line_code": (
        """
        def f(x, s):
            t = x * 2.0
            v = t[1:]
            t[1:] = s
            y = v * 3.0
            u, k = v, t
            e = u * 2
            return y + k
        """,
        """\
def f(x, s):
    t = x * 2.0
    v = t[1:]
    t[1:] = s
    y = v * 3.0
    u, k = (v, t)
    return y + k
""",
    ),
    # repeated calls in a branch are merged there; the branch ends the outer run
    "common_calls_in_a_branch": (
        """
        def f(x, s):
            a = np.exp(x)
            if s:
                b = np.exp(x)
                c = np.exp(x)
                d = b + c
            else:
                d = 0.0
            g = np.exp(x)
            return a + d + g
        """,
        """\
def f(x, s):
    a = np.exp(x)
    if s:
        b = np.exp(x)
        d = b + b
    else:
        d = 0.0
    g = np.exp(x)
    return a + d + g
""",
    ),
    # repeated calls and an accumulation in straight-line code
    "common_calls_in_straight_line_code": (
        """
        def f(x):
            a = np.exp(x)
            b = np.exp(x)
            c = np.sin(a)
            d = c
            d = d + b
            return d
        """,
        """\
def f(x):
    a = np.exp(x)
    d = np.sin(a) + a
    return d
""",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_code_as_without_the_shortcuts(name):
    source, expected = CASES[name]
    function = gast.parse(textwrap.dedent(source)).body[0]
    function.body = eliminate_common_calls(function.body, is_pure)
    function.body = optimize(function.body, is_pure)
    assert to_source(function) == expected


def test_views_in_straight_line_code():
    assert views_of_updated_arrays(gast.parse("v = t[1:]\nt[1:] = s\nw = v.T").body) == {
        "t": frozenset({"v", "w"}),
        "v": frozenset({"t", "w"}),
        "w": frozenset({"t", "v"}),
    }
    assert views_of_updated_arrays(gast.parse("v = t[1:]\nw = v.T").body) == {}


def test_without_blocks():
    assert without_blocks(gast.parse("a = 1\na += 2\nf(a)\nreturn a").body)
    assert not without_blocks(gast.parse("a = 1\nif a:\n    pass").body)
    assert not without_blocks(gast.parse("def g():\n    pass").body)


def test_facts_of_each_statement_and_the_statements_touched():
    body = gast.parse("a = b + c\nd = a * 2\nreturn d").body
    cache = FactsCache()
    assert cache.of_each(body) == [cache.of(s) for s in body]
    cache.forget(body[1])
    assert cache.touched == [body[1]]
    records = cache.of_each(body)
    assert records[1].statement is body[1] and records[1].reads == {"a"}


def _orphans_dropped_one_by_one(body, comments):
    """drop_orphan_comments as it was written: a loop over every statement."""
    result = []
    last = len(body) - 1
    for index, statement in enumerate(body):
        if comments[index] and (
            index == last or comments[index + 1] or type(body[index + 1]) is gast.Return
        ):
            continue
        result.append(statement)
    return result


@pytest.mark.parametrize("pattern", range(2**6))
def test_orphan_comments_found_among_the_comments(pattern):
    comments = [bool(pattern >> bit & 1) for bit in range(6)]
    for last in ("x = 1", "return x"):
        body = gast.parse("\n".join(["x = 1"] * 5 + [last])).body
        kept = drop_orphan_comments(body, comments)
        assert kept == _orphans_dropped_one_by_one(body, comments)
        assert kept is not body


@pytest.mark.parametrize(
    ("source", "copies"),
    [
        ("a = b + c\nd = f(a)", False),
        ("a = b", True),
        ("a = 2.0", True),
        ("a = -2", True),
        ("a = True", True),
        ("a = -b", False),
        ("a = range(3)", True),
        ("a = range(n)", False),
        ("a = np.zeros(3)", False),
        ("a, b = c, d", False),
        ("a[0] = b", False),
    ],
)
def test_copies_looked_for_by_the_kind_of_value(source, copies):
    body = gast.parse(source).body
    assert has_copies(FactsCache().of_each(body), None) is copies
    assert has_copies(FactsCache().of_each(body), set()) is False


def test_rule_names_dropped_from_comments_at_every_depth():
    mark = COMMENT_MARK + "grad of: y = np.sin(x)"
    named = mark + RULES_MARK + "_sin in s2sgrad.rules.elementwise"
    body = gast.parse(f"{named!r}\ny = g(x)\nif c:\n    {named!r}\n    z = g(y)\nreturn y + z").body
    body = optimize(body, is_pure)
    texts = [s.value.value for s in every_statement(body) if type(s) is gast.Expr]
    assert texts == [mark, mark]


def _checking_every_skip(monkeypatch) -> list[str]:
    """Make the optimiser run every rewrite it skips as done with the body at hand (see
    ``Optimizer.run``), and fail if one changes anything; return the names of the
    rewrites so checked."""
    checked: list[str] = []
    done_with = Optimizer.done_with

    def checking(self, rewrite, body):
        if not done_with(self, rewrite, body):
            return False
        before, rewrites = [gast.dump(s) for s in body], self.facts.rewrites
        result = rewrite(self, body)
        assert result == body, rewrite.__name__
        assert self.facts.rewrites == rewrites, rewrite.__name__
        assert [gast.dump(s) for s in result] == before, rewrite.__name__
        checked.append(rewrite.__name__)
        return True

    monkeypatch.setattr(Optimizer, "done_with", checking)
    return checked


def test_rewrites_skipped_would_change_nothing(monkeypatch, tmp_path):
    """On the generated code of random programs (straight-line, loops, branches, in-place
    updates) and of a long straight-line function, each rewrite the optimiser skips (it
    ran on the same body and changed nothing, or folding single uses ran on what it made)
    is run anyway and changes nothing."""
    checked = _checking_every_skip(monkeypatch)
    sources = [program_families.family_program(seed) for seed in range(0, 240, 3)]
    sources.append(("straight line", straight_line(120), ((5,), (5,))))
    assert _differentiated(sources, tmp_path) > 40
    assert "fold_single_uses" in checked and "merge_accumulations" in checked


def _differentiated(sources: list, tmp_path) -> int:
    """Differentiate each random program in s2s (its generic code, then its specialised
    code); how many ran. Refusals and programs that fail are no matter; a failed check
    (AssertionError) is."""
    ran = 0
    for index, (_, source, (x_shape, y_shape)) in enumerate(sources):
        module = program_families._load(source, tmp_path, index)
        rng = np.random.default_rng(index)
        x, y = rng.uniform(-1, 1, size=x_shape), rng.uniform(-1, 1, size=y_shape)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                sg.grad(module.f, wrt=(0, 1), mode="s2s")(x, y)
            except AssertionError:
                raise
            except Exception:  # noqa: BLE001 - refusals and programs that fail are no matter
                continue
        ran += 1
    return ran


def straight_line(statements: int) -> str:
    """Like benchmarks/transform_scaling.py's: each statement reads the two before it."""
    forms = (
        "t{k} = np.sin(t{p}) * 0.5 + t{q}",
        "t{k} = t{p} * t{q} * 0.25",
        "t{k} = np.tanh(t{p} - 0.1 * t{q})",
        "t{k} = t{p} + np.exp(-t{q} * t{q})",
    )
    lines = ["import numpy as np", "", "", "def f(x, y):", "    t0 = x", "    t1 = x * y"]
    for k in range(2, statements):
        lines.append("    " + forms[k % 4].format(k=k, p=k - 1, q=k - 2))
    lines.append(f"    return np.sum(t{statements - 1})")
    return "\n".join(lines) + "\n"


def _what_a_walk_tells(facts) -> tuple:
    """What a record says of its statement's names and calls, in no particular order."""
    return (
        Counter(facts.loads),
        Counter(facts.stores),
        Counter(facts.others),
        facts.reads,
        facts.writes,
        facts.modified,
        facts.assigned,
        facts.comment,
        Counter(map(id, facts.calls)),
        (facts.has_scope, facts.own_scope, facts.effects, facts.annotated),
    )


def test_records_handed_from_rewrite_to_rewrite_are_what_a_walk_finds(monkeypatch, tmp_path):
    """Each rewrite hands the records of the body it made to the next (``remember``):
    on the generated code of random programs and of a long straight-line function, every
    record ``of_each`` gives is what a walk of its statement finds now, and it is given
    without a walk or a look-up where a rewrite handed it on."""
    of_each, handed = FactsCache.of_each, []

    def checked_of_each(cache, statements):
        last = cache.last
        records = of_each(cache, statements)
        if cache.enabled:
            handed.append(last is not None and last[0] == statements)
            for statement, facts in zip(statements, records):
                assert facts.statement is statement
                fresh = cache._shared(Facts(statement))
                assert _what_a_walk_tells(facts) == _what_a_walk_tells(fresh)
        return records

    monkeypatch.setattr(FactsCache, "of_each", checked_of_each)
    sources = [program_families.family_program(seed) for seed in range(1, 240, 5)]
    sources.append(("straight line", straight_line(60), ((5,), (5,))))
    _differentiated(sources, tmp_path)
    assert handed.count(True) > len(handed) // 3  # most records are handed on


def test_records_are_not_handed_on_once_a_statement_changed():
    body = gast.parse("a = b + c\nd = a * 2\nreturn d").body
    cache = FactsCache()
    records = cache.of_each(body)
    cache.remember(body, records)
    assert cache.of_each(list(body)) == records  # the same statements, handed on
    changed = [body[0], body[2]]  # another body: walked
    assert [f.statement for f in cache.of_each(changed)] == changed
    cache.remember(body, [records[0], None, records[2]])  # None: asked for again
    assert cache.of_each(body)[1].reads == {"a"}
    body[1].value = gast.parse("x * 2").body[0].value
    cache.forget(body[1])  # a rewrite: nothing handed on is current any more
    assert cache.of_each(body)[1].reads == {"x"}


def test_records_handed_on_after_many_changes_are_looked_up_again():
    body = gast.parse("\n".join(f"a{k} = b{k} + 1" for k in range(50))).body
    cache = FactsCache()
    cache.remember(body, cache.of_each(body))
    for statement in body[::2]:  # more changes than are patched in one by one
        statement.value.left.id = "c"
        cache.forget(statement)
    records = cache.of_each(body)
    assert [f.reads for f in records[:4]] == [{"c"}, {"b1"}, {"c"}, {"b3"}]
