"""Common-subexpression elimination of pure calls (compiler/optimize/common.py): a repeated
NumPy call is computed once in the generated code, never across a write that could change
its value, and the gradients stay right (against central differences, in every mode)."""

from __future__ import annotations

import warnings

import gast
import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.optimize.common import eliminate_common_calls
from s2sgrad.compiler.purity import purity_of

RNG = np.random.default_rng(23)
IS_PURE = purity_of({"np": np})


def merged(source: str) -> str:
    body = gast.parse(source).body
    return gast.unparse(gast.Module(eliminate_common_calls(body, IS_PURE), []))


def test_a_repeated_call_becomes_a_copy_of_the_first():
    assert "b = a\n" in merged("a = np.exp(z)\nb = np.exp(z)\nc = b.sum(axis=1)")


@pytest.mark.parametrize(
    "between",
    [
        "z = z + 1.0",  # the operand is rebound
        "z[0] = 1.0",  # the operand is written in place
        "a = np.log(z)",  # the first result is rebound
        "np.copyto(z, w)",  # a call whose result is dropped may write its arguments
    ],
)
def test_nothing_is_merged_across_a_write(between):
    assert "b = a\n" not in merged(f"a = np.exp(z)\n{between}\nb = np.exp(z)")


@pytest.mark.parametrize(
    "after",
    [
        "b[0] = 0.0",  # merged, a and b would be one array
        "v = b.reshape(-1)\nv[0] = 0.0",  # a view of b written in place
        "a += 1.0",
    ],
)
def test_results_written_in_place_are_not_merged(after):
    assert "b = a\n" not in merged(f"a = np.exp(z)\nb = np.exp(z)\n{after}")


def test_random_draws_are_not_merged():
    assert "b = a\n" not in merged("a = np.random.normal(z)\nb = np.random.normal(z)")


def softmax_energy(z):
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return np.sum(p * p * np.arange(z.shape[1]))


def written_after(z):
    a = np.tanh(z)
    b = np.tanh(z)
    b[0] = 0.0
    return np.sum(a * b)


@pytest.mark.parametrize("f", [softmax_energy, written_after])
def test_gradients_stay_right(f):
    z = RNG.standard_normal((3, 4))
    expected = numeric_grad(f, (z,), 0)
    for mode in ("s2s", "auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(call_twice(sg.grad(f, mode=mode), z), expected, rtol=1e-5, atol=1e-7)


def test_second_order_of_the_merged_code():
    z = RNG.standard_normal((3, 4))
    v = RNG.standard_normal((3, 4))
    gradient = sg.grad(softmax_energy, mode="s2s")
    expected = numeric_grad(lambda x: np.sum(gradient(x) * v), (z,), 0)
    for mode in ("s2s", "tape"):
        (actual,) = sg.hvp(softmax_energy, (z,), (v,), mode=mode)
        assert_close(actual, expected, rtol=1e-4, atol=1e-6)


def test_the_generated_forward_computes_the_exponential_once():
    z = RNG.standard_normal((3, 4))
    gradient = sg.grad(softmax_energy, mode="s2s")
    gradient(z)
    code = [line for line in sg.source(gradient).splitlines() if not line.strip().startswith("#")]
    assert sum(line.count("np.exp(") for line in code) == 1


@pytest.mark.parametrize(
    "first",
    [
        "np.sum(z, axis=(0, 1))",  # a tuple operand
        "np.maximum(z, -1.0)",  # a negative literal
        "z.sum(axis=-1, keepdims=True)",  # a method with keywords
    ],
)
def test_the_first_look_finds_every_repeat(first):
    # eliminate_common_calls skips its analysis where a rough look finds no repeated call:
    # the look must find each repeat the analysis would merge
    assert "b = a" in merged(f"a = {first}\nb = {first}").splitlines()


def test_the_first_look_finds_a_repeat_inside_a_block():
    source = "def f(z, c):\n    if c:\n        a = np.exp(z)\n        b = np.exp(z)\n"
    body = gast.parse(source).body[0].body
    eliminate_common_calls(body, IS_PURE)
    assert type(body[0].body[1].value) is gast.Name


def test_a_repeated_nan_literal_is_merged_too():
    body = gast.parse("a = np.full(3, 0.0)\nb = np.full(3, 0.0)").body
    for statement in body:  # folding can leave a nan literal, equal to itself in gast.dump
        statement.value.args[1].value = float("nan")
    eliminate_common_calls(body, IS_PURE)
    assert type(body[1].value) is gast.Name


@pytest.mark.parametrize(
    "between",
    [
        "c = np.tanh(w)",  # nothing written in place: the calls merge
        "c = [0 for q.x in r]",  # an attribute is a comprehension's target
        "c = {k: 0 for np.exp(z).x in r}",  # of what a call returns, in a dict comprehension
        "c = [q for q[0] in r]",  # an item
        "c = items.append(z)",  # a mutating method, its result kept
        "c = np.exp(z, out=w)",  # out=
        "c = np.random.normal(z)",  # a call that is not pure
        "c = z.reshape(3)\nc[0] = 1.0",  # a view of the operand, written in place
        "c: float = np.exp(w)",  # an annotated target
        "c = d = np.exp(z)",  # two targets
    ],
)
def test_what_the_facts_tell_is_what_the_walks_find(between):
    # with the optimiser's facts (the specialising finishing has them) the effects and
    # reads of ``name = value`` are read off its record: the code must be the same
    from s2sgrad.compiler.optimize.facts import FactsCache

    source = f"a = np.exp(z)\n{between}\nb = np.exp(z)\ne = np.exp(z)[0]"
    body = gast.parse(source).body
    facts = FactsCache()
    facts.prime(body)
    with_facts = gast.unparse(gast.Module(eliminate_common_calls(body, IS_PURE, facts), []))
    assert with_facts == merged(source)
