"""The specialised code shares the raw code's plain names and literals
(``specialize/probe_copy.py``): no pass after the probe's copy may change one in place,
or the raw code, which every later specialisation (and the generic code) starts from,
would change with it. Each test fingerprints the raw code (every node's identity, class
and fields, every list's identity and length) before specialising and checks it after.
"""

import sys
import tempfile
import warnings
from pathlib import Path

import gast
import numpy as np
import pytest
from oracle import assert_close, numeric_grad
from program_families import NAMES, _load, family_program

import s2sgrad as sg
from s2sgrad.compiler import finishing, pipeline
from s2sgrad.compiler.optimize.facts import FactsCache, rename_reads
from s2sgrad.compiler.specialize import releases
from s2sgrad.compiler.syntax import COMMENT_MARK, RULES_MARK, drop_rule_names

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from workloads import WORKLOADS  # noqa: E402


def fingerprint(root) -> list:
    """Every node and list reachable from ``root``, by identity, with its fields."""
    found = []
    pending = [root]
    while pending:
        item = pending.pop()
        if type(item) is list:
            found.append(("list", id(item), len(item)))
            pending += [part for part in item if isinstance(part, (gast.AST, list))]
            found += [repr(part) for part in item if not isinstance(part, (gast.AST, list))]
            continue
        entry = [type(item).__name__, id(item)]
        for key, value in sorted(item.__dict__.items()):
            if isinstance(value, (gast.AST, list)):
                entry.append((key, id(value)))
                pending.append(value)
            elif isinstance(value, (str, int, float, bool, complex, tuple, type(None))):
                entry.append((key, repr(value)))
            else:
                entry.append((key, type(value).__name__, id(value)))
        found.append(tuple(entry))
    return found


@pytest.fixture
def changed_raw_code(monkeypatch):
    """The names of the functions whose raw code a specialisation changed."""
    changed: list[str] = []
    original = finishing.specialised

    def checked(generated, args, kwargs):
        raw = generated.raw_node
        before = fingerprint(raw)
        try:
            return original(generated, args, kwargs)
        finally:
            if fingerprint(raw) != before:
                changed.append(raw.name)

    monkeypatch.setattr(finishing, "specialised", checked)
    monkeypatch.setattr(pipeline, "specialised", checked)
    return changed


def test_specialising_the_workloads_leaves_their_raw_code_as_it_was(changed_raw_code):
    for workload in WORKLOADS:
        args = workload.make_args(np.random.default_rng(0), **workload.small)
        gradient = sg.grad(workload.fn, wrt=workload.wrt_indices(), mode="s2s")
        gradient(*args)
    assert changed_raw_code == []


@pytest.mark.parametrize("first", range(0, 2 * len(NAMES), len(NAMES)))
def test_specialising_random_programs_leaves_their_raw_code_as_it_was(first, changed_raw_code):
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(first, first + len(NAMES)):
            _, source, (x_shape, y_shape) = family_program(seed)
            module = _load(source, Path(folder), seed)
            rng = np.random.default_rng(seed)
            x, y = rng.uniform(-1, 1, size=x_shape), rng.uniform(-1, 1, size=y_shape)
            gradient = sg.grad(module.f, wrt=(0, 1), mode="s2s")
            try:
                with np.errstate(all="ignore"):
                    gradient(x, y)
            except Exception:  # noqa: BLE001 - refused or raising programs still specialise
                pass
    assert changed_raw_code == []


def test_copies_renamed_and_comments_shortened_in_specialised_code_stay_right(changed_raw_code):
    def f(x):  # the optimiser renames copies of names, and drops the comments' rule names
        a = x[1:] - x[:-1] ** 2
        b = a
        return np.sum(100.0 * b**2 + (1.0 - x[:-1]) ** 2)

    x = np.linspace(0.1, 0.9, 7)
    gradient = sg.grad(f, mode="s2s")
    for _ in range(2):
        assert_close(gradient(x), numeric_grad(f, (x,), 0))
    assert changed_raw_code == []


def test_rename_reads_replaces_the_names_it_renames():
    statement = gast.parse("y = a * f(a, b)").body[0]
    shared = [n for n in gast.walk(statement) if type(n) is gast.Name and n.id == "a"]
    rename_reads(statement, "a", "c", FactsCache())
    assert gast.unparse(statement) == "y = c * f(c, b)"
    assert [n.id for n in shared] == ["a", "a"]  # what another tree holds is unchanged


def test_drop_rule_names_replaces_the_comment_s_literal():
    text = COMMENT_MARK + "grad of: y = f(x)" + RULES_MARK + "_f in m"
    statement = gast.Expr(value=gast.Constant(text, None))
    literal = statement.value
    drop_rule_names([statement])
    assert statement.value.value == COMMENT_MARK + "grad of: y = f(x)"
    assert literal.value == text


def _rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _masked(x, m):
    t = np.sin(x) * 2.0
    u = np.cos(t) + x
    v = u * t
    return np.sum(v[m] * x[m]) + np.sum(u)


def test_a_lean_probe_lets_go_of_arrays_without_changing_the_raw_code(changed_raw_code):
    x = np.linspace(-0.9, 0.9, releases.LARGE + 3)  # large: the probe lets go of arrays
    gradient = sg.grad(_rosenbrock, mode="s2s")
    expected = sg.grad(_rosenbrock, mode="tape")(x)
    assert_close(gradient(x), expected)
    assert_close(gradient(x[:9]), numeric_grad(_rosenbrock, (x[:9],), 0))
    m = x > 0.2  # a mask indexes: the probe stops before it runs, the generic code runs
    masked = sg.grad(_masked, mode="s2s")
    assert_close(masked(x, m), sg.grad(_masked, mode="tape")(x, m))
    assert_close(masked(x[:9], m[:9]), numeric_grad(lambda a: _masked(a, m[:9]), (x[:9],), 0))
    assert changed_raw_code == []
