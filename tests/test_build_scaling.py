"""The build side of the transformer (parsing, normal form, analyses, sweeps) does work
per statement that does not grow with the function (issue 15: a 2,000-statement function
must transform in under a second), and its answers are those of the plain analyses."""

from __future__ import annotations

import importlib.util

import numpy as np
from oracle import assert_close, numeric_grad

import s2sgrad as sg


def _load(tmp_path, name: str, source: str):
    """The function ``name`` of ``source``, from a file of its own (the source is read)."""
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\n\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def _long_source(name: str, statements: int) -> str:
    """``name(x, c)``: ``statements`` assignments, a comparison of the parameter ``c`` with
    a differentiated value among them (its operands are checked as the code runs)."""
    lines = [f"def {name}(x, c):", "    t0 = x", "    t1 = x * 0.5"]
    for k in range(2, statements):
        lines.append(f"    t{k} = np.sin(t{k - 1}) * 0.5 + t{k - 2}")
    lines.append(f"    flag = c < t{statements - 1}")
    lines.append(f"    return np.sum(np.where(flag, t{statements - 1}, t{statements - 2} * 2.0))")
    return "\n".join(lines) + "\n"


class _CountedSet(set):
    """A set that counts the copies made by ``-`` (a difference per statement is O(n^2))."""

    differences = 0

    def __sub__(self, other):
        _CountedSet.differences += 1
        return set(self) - other


def test_the_forward_sweep_does_not_copy_the_numeric_names_per_statement(tmp_path, monkeypatch):
    from s2sgrad.compiler.reverse import context

    original = context.numeric_names

    def counted(*args, **kwargs):
        return _CountedSet(original(*args, **kwargs))

    monkeypatch.setattr(context, "numeric_names", counted)
    monkeypatch.setattr(_CountedSet, "differences", 0)
    f = _load(tmp_path, "long_compared", _long_source("long_compared", 60))
    rng = np.random.default_rng(1501)
    x, c = rng.uniform(-1.0, 1.0, size=(3, 4)), rng.uniform(-0.5, 0.5, size=(4,))
    assert_close(sg.grad(f, mode="s2s")(x, c), numeric_grad(f, (x, c), 0), rtol=1e-5)
    # the comparison's operand c is still checked as the code runs
    assert "answered_plainly(c" in sg.source(sg.grad(f, mode="s2s"), optimize=False)
    assert _CountedSet.differences <= 2


# --- the function summary the normal form's passes ask first -----------------------------

_SUMMARISED = """
def f(x, y, *, scale=1.0):
    import math
    d = {"a": x, **{"b": y}}
    e = dict(d, c=scale)
    items = [x, y]
    items.append(x * 2)
    first = items.pop(0)
    t = np.zeros(3)
    t[0] = 1.0
    t[1] += x[0]
    u = x
    u = u * 2
    for k in range(2):
        u = u + k
    g = lambda z: z * np.piecewise(z, [z > 0], [1.0, 2.0])
    def h(w):
        return w.T
    print(math.pi, sep="")
    return np.sum(u) + first[0] + h(t)[0] + g(1.0) + e["a"][0]
"""


def _plain_facts(node):
    """What the summary says, found by a plain walk of every node."""
    import gast

    from s2sgrad.compiler.syntax import walk

    nodes = walk(node)
    stored = [n.id for n in nodes if type(n) is gast.Name and type(n.ctx) is gast.Store]
    definitions = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)
    stored += [n.name for n in nodes if type(n) in definitions]  # a def binds its name
    return {
        "kinds": frozenset(type(n) for n in nodes),
        "names": frozenset(n.id for n in nodes if type(n) is gast.Name),
        "attributes": frozenset(n.attr for n in nodes if type(n) is gast.Attribute),
        "called_names": frozenset(
            n.func.id for n in nodes if type(n) is gast.Call and type(n.func) is gast.Name
        ),
        "keywords": frozenset(n.arg for n in nodes if type(n) is gast.keyword),
        "rebound": len(stored) != len(set(stored)),
        "subscript_stores": any(
            type(n) is gast.Subscript and type(n.ctx) is gast.Store for n in nodes
        ),
        "call_statements": any(type(n) is gast.Expr and type(n.value) is gast.Call for n in nodes),
    }


def _definition(source: str):
    import gast

    return gast.parse(source).body[0]


def test_the_summary_answers_as_a_plain_walk():
    from s2sgrad.compiler.function_summary import FunctionSummary

    sources = [
        _SUMMARISED,
        "def f(x):\n    return x\n",
        "def f(x):\n    y = x\n    return y.T\n",
        "def f(x):\n    x[0] = 1\n    return x\n",
        "def f(a):\n    b, a[1] = a, 2\n    return b\n",
        "def f(a):\n    a.append(1)\n    return a\n",
        "def f(a):\n    def g():\n        a = 2\n    a = 1\n    return a\n",
        "def f(a):\n    def g():\n        return 2\n    g = 3\n    return a * g\n",
        "def f(a):\n    class C:\n        pass\n    return a\n",
    ]
    for source in sources:
        node = _definition(source)
        summary = FunctionSummary.of(node)
        for fact, answer in _plain_facts(node).items():
            assert getattr(summary, fact) == answer, (source, fact)
        assert summary.mentions("piecewise") == ("piecewise" in source)


def _counted_passes(monkeypatch, module, names):
    """The names of ``module``'s functions among ``names`` called from now on."""
    called: list = []
    for name in names:
        original = getattr(module, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            called.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    return called


_RARE_PASSES = (
    "rename_rebound_names",
    "keyword_dicts_as_literals",
    "scalarize_local_dicts",
    "desugar_matches",
    "chained_item_writes",
    "piecewise_calls",
    "index_list_loops",
    "indexed_pops",
    "split_tuple_item_writes",
    "shared_in_place_updates",
    "mark_list_copies",
    "shared_list_changes",
    "dict_entry_writes",
)


def test_passes_whose_construct_is_absent_do_not_run(tmp_path, monkeypatch):
    from s2sgrad.compiler.passes import desugar

    called = _counted_passes(monkeypatch, desugar, _RARE_PASSES)
    f = _load(tmp_path, "plain_lines", _long_source("plain_lines", 40))
    rng = np.random.default_rng(1502)
    x, c = rng.uniform(-1.0, 1.0, size=(2, 3)), rng.uniform(-0.5, 0.5, size=(3,))
    assert_close(sg.grad(f, mode="s2s")(x, c), numeric_grad(f, (x, c), 0), rtol=1e-5)
    assert called == []


_DEF_REBOUND = """
def def_rebound(x):
    def g(z):
        return z * 2.0
    y = g(x)
    g = np.sin
    return np.sum(g(y) * x)
"""


def test_a_def_bound_again_by_an_assignment_is_renamed(tmp_path, monkeypatch):
    # the def binds g as an assignment does: the second binding is a rebinding
    from s2sgrad.compiler.passes import desugar

    called = _counted_passes(monkeypatch, desugar, ("rename_rebound_names",))
    f = _load(tmp_path, "def_rebound", _DEF_REBOUND)
    x = np.random.default_rng(1505).uniform(-1.0, 1.0, size=4)
    assert_close(sg.grad(f, mode="auto")(x), numeric_grad(f, (x,), 0), rtol=1e-5)
    assert called


_FEATURES = """
def features(x, y):
    d = dict(a=x, b=y)
    d["c"] = d["a"] * d["b"]
    items = [x, y * 2.0, np.sin(x)]
    first = items.pop(1)
    t = np.zeros((2, 3))
    t[0] = x
    t[1] += y * x
    t[1][2] = 0.5 * x[0]
    u = x
    u = u * 1.5 + first
    match len(items):
        case 2:
            u = u + items[1]
        case _:
            u = u - 1.0
    p = np.piecewise(u, [u > 0.2], [lambda v: v * v, lambda v: 0.5 * v])
    return np.sum(p * d["c"]) + np.sum(t ** 2)
"""


def test_passes_run_where_their_construct_is_or_an_earlier_pass_made_it(tmp_path, monkeypatch):
    # dict(a=x, b=y) becomes a dict literal, whose entry write d["c"] = ... the entry pass
    # then rewrites: the summary made before the first rewrite has no dict literal in it
    from s2sgrad.compiler.passes import desugar

    called = _counted_passes(monkeypatch, desugar, _RARE_PASSES)
    f = _load(tmp_path, "features", _FEATURES)
    rng = np.random.default_rng(1503)
    x, y = rng.uniform(-1.0, 1.0, size=3), rng.uniform(-1.0, 1.0, size=3)
    for position in (0, 1):
        expected = numeric_grad(f, (x, y), position)
        assert_close(sg.grad(f, wrt=position, mode="s2s")(x, y), expected, rtol=1e-5)
    for expected_pass in (
        "rename_rebound_names",
        "keyword_dicts_as_literals",
        "desugar_matches",
        "chained_item_writes",
        "piecewise_calls",
        "indexed_pops",
        "shared_in_place_updates",
    ):
        assert expected_pass in called


_ESCAPING_DICT = """
def total(d):
    return sum(np.sum(v * v) for v in d.values())


def escaping_dict(x, y):
    d = dict(a=x, b=y)
    d["c"] = d["a"] * d["b"]
    return total(d)
"""


def test_a_dict_literal_an_earlier_pass_made_has_its_entry_writes_rewritten(tmp_path, monkeypatch):
    # dict(a=x, b=y) becomes {"a": x, "b": y} in desugaring: the summary made before has no
    # dict display in it, the one asked after the rewrite has
    from s2sgrad.compiler.passes import desugar

    called = _counted_passes(monkeypatch, desugar, ("dict_entry_writes",))
    f = _load(tmp_path, "escaping_dict", _ESCAPING_DICT)
    rng = np.random.default_rng(1504)
    x, y = rng.uniform(-1.0, 1.0, size=3), rng.uniform(-1.0, 1.0, size=3)
    for position in (0, 1):
        expected = numeric_grad(f, (x, y), position)
        assert_close(sg.grad(f, wrt=position, mode="s2s")(x, y), expected, rtol=1e-5)
    (product,) = sg.hvp(f, (x, y), (np.ones(3), np.zeros(3)), mode="s2s")[:1]
    gradient = sg.grad(f, mode="s2s")
    expected = numeric_grad(lambda z: np.sum(gradient(z, y)), (x,), 0)
    assert_close(product, expected, rtol=1e-4, atol=1e-6)
    assert "dict_entry_writes" in called
