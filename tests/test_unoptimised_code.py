"""``sg.show(f, optimize=False)``: the generic code before tidying, for reading the rules."""

import io
import re

import numpy as np
import pytest

import s2sgrad as sg


def loss(w, x, y):
    p = np.tanh(x @ w)
    return np.mean((p - y) ** 2)


def _shown(**options) -> str:
    out = io.StringIO()
    sg.show(loss, file=out, **options)
    return out.getvalue()


def test_the_unoptimised_code_names_the_rule_of_each_primitive():
    text = _shown(optimize=False)
    comments = [line.strip() for line in text.splitlines() if "# grad of:" in line]
    assert comments == [
        "# grad of: return np.mean((p - y) ** 2)    rules: _mean in s2sgrad.rules.reductions; "
        "_power in s2sgrad.rules.elementwise; _subtract in s2sgrad.rules.elementwise",
        "# grad of: p = np.tanh(x @ w)    rules: _tanh in s2sgrad.rules.elementwise; "
        "_matmul in s2sgrad.rules.linalg",
    ]
    assert "count = np.size(t3)" in text  # the mean's rule as written, not folded away


def test_the_optimised_code_keeps_only_the_statement():
    text = _shown()
    assert "rules:" not in text and "# grad of: p = np.tanh(x @ w)" in text


@pytest.mark.parametrize("optimize", [True, False])
def test_both_forms_compute_the_same_gradient(optimize):
    rng = np.random.default_rng(0)
    w, x, y = rng.normal(size=3), rng.normal(size=(5, 3)), rng.normal(size=5)
    namespace = {}
    text = sg.source(sg.grad(loss), optimize=optimize)
    helpers = set(re.findall(r"\b([a-z_]+)\(", text)) & set(dir(sg.runtime))
    namespace.update({name: getattr(sg.runtime, name) for name in helpers}, np=np)
    exec(compile(text, "<shown>", "exec"), namespace)
    np.testing.assert_allclose(namespace["dloss"](w, x, y), sg.grad(loss)(w, x, y), rtol=1e-12)
