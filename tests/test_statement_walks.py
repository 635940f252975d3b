"""The statement-level walks that replace whole-tree walks (issue 15's transform time):
they must find what a walk of every node finds, in every kind of block."""

import textwrap

import gast

from s2sgrad.compiler.optimize.views import views_of_updated_arrays
from s2sgrad.compiler.syntax import (
    COMMENT_MARK,
    RULES_MARK,
    drop_rule_names,
    every_statement,
    names_used,
    walk,
)

SOURCE = textwrap.dedent(
    """
    def f(x, s):
        a = x
        if s:
            b = a
        else:
            c = a
        for i in range(3):
            d = i
        while s:
            e = 1
        try:
            g = 1
        except ValueError:
            h = 1
        else:
            k = 1
        finally:
            m = 1
        with open(s) as handle:
            n = 1
        match s:
            case 1:
                p = 1
        def inner(y):
            q = y
        class C:
            r = 1
        return lambda z: z + a
    """
)


def _body():
    return gast.parse(SOURCE).body[0].body


def test_every_statement_finds_what_a_walk_of_every_node_finds():
    body = _body()
    walked = {id(n) for s in body for n in walk(s) if isinstance(n, gast.stmt)}
    found = every_statement(body)
    assert {id(s) for s in found} == walked
    assert len(found) == len(walked)  # each once
    assigned = {s.targets[0].id for s in found if type(s) is gast.Assign}
    assert assigned == set("abcdeghkmnpqr")


def test_names_used_is_every_name_of_a_walk():
    body = _body()
    for statement in body:
        expected = {n.id for n in walk(statement) if type(n) is gast.Name}
        assert names_used(statement) == expected
    assert {"x", "s", "y", "z", "handle", "range"} <= set().union(*map(names_used, body))


def test_rule_names_are_dropped_in_every_block():
    text = COMMENT_MARK + "grad of: y = f(x)"
    source = textwrap.dedent(
        f"""
        def f(x):
            {text + RULES_MARK + "_f in m"!r}
            if x:
                {text + RULES_MARK + "_g in m"!r}
            try:
                pass
            except ValueError:
                {text + RULES_MARK + "_h in m"!r}
            def inner(y):
                {text + RULES_MARK + "_k in m"!r}
            s = {RULES_MARK!r}
        """
    )
    body = gast.parse(source).body[0].body
    drop_rule_names(body)
    comments = [
        n.value
        for s in body
        for n in walk(s)
        if type(n) is gast.Constant and isinstance(n.value, str) and COMMENT_MARK in n.value
    ]
    assert comments == [text] * 4
    assert body[-1].value.value == RULES_MARK  # a string that is no comment is left alone


def test_views_of_arrays_updated_in_nested_blocks():
    source = textwrap.dedent(
        """
        def f(t, s):
            v = t[:]
            if s:
                for i in range(2):
                    t[i] = s
            def g(u):
                w = u.T
                u[0] = 1.0
        """
    )
    body = gast.parse(source).body[0].body
    assert views_of_updated_arrays(body) == {
        "t": frozenset({"v"}),
        "v": frozenset({"t"}),
        "u": frozenset({"w"}),
        "w": frozenset({"u"}),
    }
