"""The probe of code without loops is run by walking its tree, not compiled
(``specialize/interpreted.py``): it must do what Python does with the same code, and
specialise to the same code as the compiled probe.
"""

import textwrap
import tracemalloc
import warnings

import gast
import numpy as np
import pytest
from oracle import assert_gradient_in_every_mode

import s2sgrad as sg
from s2sgrad.compiler.codegen import compile_ast
from s2sgrad.compiler.pipeline import clear_cache
from s2sgrad.compiler.specialize import interpreted as interpreting
from s2sgrad.compiler.specialize import loop_cuts, probe, releases
from s2sgrad.compiler.specialize.broadcasts import raw_facts

GLOBAL_T = "the global, not the local"


def _function(source: str) -> gast.FunctionDef:
    return gast.parse(textwrap.dedent(source)).body[0]


def _both(source: str, namespace: dict):
    """(Python's function, the walked one) for ``source``, in ``namespace``."""
    node = _function(source)
    facts = raw_facts(node)
    assert interpreting.interpretable(node, facts)
    names = interpreting.bound_names(node, facts)
    compiled = compile_ast(node, namespace, "test")

    def compile_stub(stub, names_in):
        return compile_ast(stub, names_in, "test")

    walked = interpreting.interpreted(node, names, namespace, compile_stub, lambda: None)
    return compiled, walked


def _outcome(function, *args, **kwargs):
    try:
        return "returned", function(*args, **kwargs)
    except Exception as error:
        return "raised", type(error)


class Log:
    """Records what is asked of it, in order, and answers with the value given."""

    def __init__(self):
        self.events = []

    def __call__(self, label, value):
        self.events.append(label)
        return value


PROGRAMS = [
    # chained comparisons stop at the first false one; and/or return an operand
    (
        """
        def f(a, b, log):
            c = log("a", a) < log("b", b) < log("3", 3)
            d = log("x", a) and log("y", b) or log("z", 0)
            e = log("p", 0) or log("q", []) or log("r", None)
            return c, d, e, (a if b > a else b), not a, -b, ~3, +a
        """,
        [(1, 2), (2, 1), (0, 5), (3, 3)],
    ),
    # unpacking, subscripts and attributes stored in Python's order, del, +=
    (
        """
        def f(a, b, log):
            x, (y, z) = a, [b, a + b]
            box = {}
            log("target", box)[log("index", "k")] = log("value", x * y)
            items = [x, y, z]
            items[1:2] = [log("slice", 7)]
            del items[0]
            holder = log
            holder.stored = z
            total = 0
            total += x
            total -= y
            total *= 2
            items[log("at", 0)] += log("more", 5)
            holder.stored += log("added", 1)
            del holder.stored
            return box, items, total, x, y, z
        """,
        [(1, 2), (-3, 0.5)],
    ),
    # calls: keywords, starred arguments, methods, subscripts and slices, literals
    (
        """
        def f(a, b, log):
            values = np.array([a, b, a * b])
            picked = values[1:], values[::-1], values[..., None][0, 0], values[[0, 2]]
            joined = np.concatenate(*[[values, values]], axis=0)
            table = {log("k1", "one"): log("v1", a), log("k2", "two"): log("v2", b)}
            return picked, joined.sum(axis=0, keepdims=True), table, (a, *[b, b]), {a: b}
        """,
        [(1.0, 2.0), (0.5, -1.5)],
    ),
    # branches that return, fall through, or leave a local unbound
    (
        """
        def f(a, b, log):
            if a > b:
                result = a
                return result
            elif a == b:
                pass
            else:
                GLOBAL_T = b
            return GLOBAL_T
        """,
        [(3, 1), (1, 1), (1, 3)],
    ),
    # a name bound inside an expression (as the lean probe lets go of an array)
    (
        """
        def f(a, b, log):
            pair = (a, (a := b))[0]
            return pair, a, (c := a + 1) * c
        """,
        [(1, 2), (5, -5)],
    ),
    # every binary operator, and a function that returns nothing
    (
        """
        def f(a, b, log):
            log("ops", (a + b, a - b, a * b, a / b, a // b, a % b, a ** 2, a << 1, a >> 1,
                        a | b, a ^ b, a & b, a in [b], a not in [b], a is b, a is not b))
        """,
        [(7, 3), (2, 2)],
    ),
    # errors raise (the unpacking takes one item past the end only)
    (
        """
        def f(a, b, log):
            x, y = iter(range(a))
            return x + y
        """,
        [(2, 0), (3, 0), (1, 0)],
    ),
]


@pytest.mark.parametrize("source, cases", PROGRAMS, ids=range(len(PROGRAMS)))
def test_the_walk_does_what_python_does(source, cases):
    namespace = {"np": np, "GLOBAL_T": GLOBAL_T}
    compiled, walked = _both(source, namespace)
    for a, b in cases:
        log_python, log_walked = Log(), Log()
        expected = _outcome(compiled, a, b, log_python)
        got = _outcome(walked, a, b, log_walked)
        assert repr(got) == repr(expected)
        assert log_walked.events == log_python.events
        assert vars(log_walked) == vars(log_python)


def test_arguments_bind_as_python_binds_them():
    source = """
        def f(a, /, b=2, *rest, c, d=4, **more):
            return a, b, rest, c, d, more
    """
    compiled, walked = _both(source, {})
    for args, kwargs in [((1,), {"c": 3}), ((1, 5, 6, 7), {"c": 3, "e": 9}), ((), {"c": 3})]:
        assert repr(_outcome(walked, *args, **kwargs)) == repr(_outcome(compiled, *args, **kwargs))


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    for i in range(3):\n        x = x + i\n    return x",
        "def f(x):\n    while x:\n        x = x - 1\n    return x",
        "def f(x):\n    return [v for v in x]",
        "def f(x):\n    g = lambda v: v\n    return g(x)",
        "def f(x):\n    def g(v):\n        return v\n    return g(x)",
        "def f(x):\n    return locals()",
        "def f(x):\n    read = vars\n    return read()",
        "def f(x):\n    return np.sum(**x)",
        "def f(x):\n    return {**x}",
        "def f(x):\n    a, *b = x\n    return b",
        "def f(x):\n    global y\n    y = x\n    return y",
        "def f(x):\n    try:\n        return x\n    except ValueError:\n        return 0",
        "def f(x):\n    with x:\n        return x",
        "def f(x):\n    return f'{x}'",
    ],
)
def test_code_the_walk_does_not_know_is_compiled(source):
    node = _function(source)
    assert not interpreting.interpretable(node, raw_facts(node))


def straight(x, y):
    a, b = np.sin(x) * y, np.cos(y)
    c = a + b * 2.0
    if x.shape[0] > 2:  # on shapes: the code is specialised
        return np.sum(c * c)
    d = c - x[0]
    return np.sum(d * a) + np.sum(b)


def keywords_and_slices(x, y):
    z = np.sum(x * y[..., None], axis=-1, keepdims=True)
    w = np.concatenate([z, x[:, :1]], axis=1)[:, ::-1]
    return np.sum(np.tanh(w) ** 2) + np.mean(x[1:] / (1.5 + y[1:, None] ** 2))


RNG = np.random.default_rng(5)
CASES = [
    (straight, (RNG.normal(size=(2, 3)), RNG.normal(size=3))),
    (straight, (RNG.normal(size=(3, 3)), RNG.normal(size=3))),
    (keywords_and_slices, (RNG.normal(size=(3, 4)), RNG.normal(size=3))),
]


@pytest.mark.parametrize("f, args", CASES, ids=["falls through", "returns early", "keywords"])
def test_gradients_through_the_walked_probe_match_the_oracle(f, args, monkeypatch):
    walked = []
    original = probe.interpreted
    monkeypatch.setattr(probe, "interpreted", lambda *a, **k: walked.append(1) or original(*a, **k))
    clear_cache()
    assert_gradient_in_every_mode(f, args)
    assert walked  # the s2s and auto modes' probes were walked


@pytest.mark.parametrize("f, args", CASES, ids=["falls through", "returns early", "keywords"])
def test_the_walked_probe_specialises_as_the_compiled_one(f, args, monkeypatch):
    def specialised_source():
        clear_cache()
        gradient = sg.grad(f, wrt=(0, 1), mode="s2s")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = gradient(*args)
        return sg.source(gradient), value

    walked_source, walked_value = specialised_source()
    monkeypatch.setattr(probe, "interpretable", lambda node, facts: False)
    compiled_source, compiled_value = specialised_source()
    assert walked_source == compiled_source
    for got, expected in zip(walked_value, compiled_value):
        np.testing.assert_array_equal(got, expected)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_a_lean_probe_is_walked_and_specialises_as_the_compiled_one(monkeypatch):
    """With large arguments the probe lets go of arrays (``releases.py``: stand-ins and
    ``(t, (t := None))[0]`` inserted into it): the walk runs that too."""
    monkeypatch.setattr(releases, "LARGE", 1000)
    x = np.random.default_rng(2).uniform(-1.0, 1.0, 3000)

    def specialised_source():
        clear_cache()
        gradient = sg.grad(rosenbrock, mode="s2s")
        return sg.source(gradient(x) is not None and gradient), gradient(x)

    walked = []
    original = probe.interpreted
    monkeypatch.setattr(probe, "interpreted", lambda *a, **k: walked.append(1) or original(*a, **k))
    walked_source, walked_value = specialised_source()
    assert walked
    monkeypatch.setattr(probe, "interpretable", lambda node, facts: False)
    compiled_source, compiled_value = specialised_source()
    assert walked_source == compiled_source
    np.testing.assert_array_equal(walked_value, compiled_value)


def _first_call_peak(x) -> int:
    clear_cache()
    gradient = sg.grad(rosenbrock, mode="s2s")
    tracemalloc.start()
    try:
        gradient(x)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_walked_lean_probe_holds_no_array_longer_than_the_compiled_one(monkeypatch):
    """The walk keeps no value in a variable of its own past the statement that made it,
    so the arrays the lean probe lets go of are gone as they would be compiled."""
    x = np.random.default_rng(4).uniform(-1.0, 1.0, 300_000)
    walked = _first_call_peak(x)
    monkeypatch.setattr(probe, "interpretable", lambda node, facts: False)
    compiled = _first_call_peak(x)
    assert walked <= compiled + x.nbytes // 4, (walked / x.nbytes, compiled / x.nbytes)


def _probe_after_its_run(f, args, walked: bool):
    """The probe calls in the probe's code once it ran, and the probe's state, for
    ``f``'s first gradient call."""
    ran = {}
    original = probe.run
    probe_names = {loop_cuts.PROBE, *loop_cuts.ARITHMETIC_PROBES.values()}

    def run(probed, probing):
        result = original(probed, probing)
        ran["code"] = [n for n in gast.walk(probed) if type(n) is gast.Name and n.id in probe_names]
        ran["probing"] = probing
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(probe, "run", run)
        if not walked:
            patch.setattr(probe, "interpretable", lambda node, facts: False)
        clear_cache()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sg.grad(f, wrt=(0, 1), mode="s2s")(*args)
    return ran["code"], ran["probing"]


@pytest.mark.parametrize("f, args", CASES, ids=["falls through", "returns early", "keywords"])
def test_the_walked_probe_records_its_sites_in_place_as_probe_calls_would(f, args):
    """The walk runs the copy as it is (no probe call written into it and taken out
    again), finding each site by its node: what it records, site by site, is what the
    compiled probe's calls record."""
    walked_calls, walked = _probe_after_its_run(f, args, walked=True)
    compiled_calls, compiled = _probe_after_its_run(f, args, walked=False)
    assert walked.in_place and not compiled.in_place
    assert not walked_calls and len(compiled_calls) == len(compiled.sites)
    assert sorted(walked.probe.site_of.values()) == list(range(len(walked.sites)))
    numbered = walked.probe.site_of
    assert all(numbered[id(node)] == site for site, (node, *_) in enumerate(walked.sites))
    assert len(walked.sites) == len(compiled.sites) > 0
    assert walked.probe.sites == compiled.probe.sites
