"""The optimiser's facts carried past the passes that change a few statements (exact
divisors, reused quotients) instead of walked again: every record handed on is what a
fresh walk finds, the code is the same, and the gradients are right.
"""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import program_families
from oracle import numeric_grad

import s2sgrad as sg
from s2sgrad.compiler import finishing
from s2sgrad.compiler.optimize.facts import Facts, FactsCache


def softmax_loss(W, X, Y):
    z = X @ W
    n = X.shape[0]
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / n + np.sum(W * W) / 4.0


def two_items(x, y):
    a = x[0] * y
    b = np.sin(x[1:]) * y[0]
    return np.sum(a * a) + np.sum(b)


def _arguments():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 3))
    W = rng.normal(size=(3, 2))
    Y = np.eye(2)[[0, 1, 1, 0]]
    return W, X, Y


def _what_a_walk_tells(facts: Facts) -> tuple:
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
        (facts.has_scope, facts.own_scope, facts.effects, facts.annotated, facts.stores_items),
    )


def _checking_handed_facts(monkeypatch) -> list[int]:
    """Make each optimisation of the finishing that is handed facts check them against a
    fresh priming of the body; return the sizes of the bodies so checked."""
    checked: list[int] = []
    optimize = finishing.optimize

    def checking(body, is_pure, facts=None):
        if facts is not None and facts.enabled:  # (else each record is a walk anyway)
            fresh = FactsCache()
            fresh.prime(body)
            assert fresh.enabled  # no two statements share a node
            assert (facts.updated, facts.sharing) == (fresh.updated, fresh.sharing)
            for statement in body:
                kept = _what_a_walk_tells(facts.of(statement))
                assert kept == _what_a_walk_tells(fresh.of(statement))
            checked.append(len(body))
        return optimize(body, is_pure, facts)

    monkeypatch.setattr(finishing, "optimize", checking)
    return checked


def _counting_primes(monkeypatch) -> list[int]:
    """Record the size of each body the facts are primed on."""
    primed: list[int] = []
    prime = FactsCache.prime

    def counting(cache, body, *more):
        primed.append(len(body))
        return prime(cache, body, *more)

    monkeypatch.setattr(FactsCache, "prime", counting)
    return primed


def test_the_facts_are_walked_once_through_divisions_and_quotients(monkeypatch):
    primed = _counting_primes(monkeypatch)
    g = sg.grad(softmax_loss, mode="s2s")
    g(*_arguments())  # the first call specialises
    code = sg.source(g)
    assert "-0.25 * Y" in code  # n is 4 in this signature: / n made a product
    assert "(dp * p).sum(" in code  # the quotient p = e / s reused
    assert len(primed) == 1  # the stripping's walk, carried to the end (it was three)


def test_the_facts_are_walked_once_through_index_cotangent_buffers(monkeypatch):
    primed = _counting_primes(monkeypatch)
    g = sg.grad(two_items, wrt=(0, 1), mode="s2s")
    g(np.linspace(0.1, 1.0, 3), np.linspace(0.2, 0.9, 3))
    code = sg.source(g)
    assert "dx = np.empty_like(x)" in code and "dx[1:] = " in code  # one buffer
    assert len(primed) == 1  # it was two: the buffers dropped the stripping's facts


def test_handed_facts_are_what_a_walk_finds(monkeypatch, tmp_path):
    """On random programs and on the softmax loss, each record handed to an optimisation
    (past exact divisors, or past reused quotients) is what a fresh priming makes."""
    checked = _checking_handed_facts(monkeypatch)
    sg.grad(softmax_loss, mode="s2s")(*_arguments())
    for seed in range(0, 200, 3):
        _, source, (x_shape, y_shape) = program_families.family_program(seed)
        module = program_families._load(source, tmp_path, seed)
        rng = np.random.default_rng(seed)
        x, y = rng.uniform(-1, 1, size=x_shape), rng.uniform(-1, 1, size=y_shape)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                sg.grad(module.f, wrt=(0, 1), mode="s2s")(x, y)
            except AssertionError:
                raise
            except Exception:  # noqa: BLE001 - refusals and programs that fail are no matter
                continue
    assert len(checked) > 20


def test_gradients_match_central_differences():
    W, X, Y = _arguments()
    g = sg.grad(softmax_loss, wrt=0, mode="s2s")
    for _ in range(2):  # the specialised code, then its second call
        expected = numeric_grad(softmax_loss, (W, X, Y), 0)
        np.testing.assert_allclose(g(W, X, Y), expected, rtol=1e-6, atol=1e-8)
    x, y = np.linspace(0.1, 1.0, 3), np.linspace(0.2, 0.9, 3)
    g = sg.grad(two_items, wrt=(0, 1), mode="s2s")
    for _ in range(2):
        dx, dy = g(x, y)
        np.testing.assert_allclose(dx, numeric_grad(two_items, (x, y), 0), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(dy, numeric_grad(two_items, (x, y), 1), rtol=1e-6, atol=1e-8)
