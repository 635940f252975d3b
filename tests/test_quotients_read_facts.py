"""Quotient reuse reads the facts it is handed (``optimize/quotients.py``): the names'
counts and each statement's calls come off the records of the body, not walks of their
own. What it makes must be what it makes from walks, node for node, and the gradient of
what it rewrote stays right against central differences."""

from __future__ import annotations

import gast
import numpy as np
import pytest
from oracle import assert_gradient_in_every_mode

from s2sgrad.compiler import finishing, pipeline
from s2sgrad.compiler.optimize.facts import FactsCache
from s2sgrad.compiler.optimize.quotients import reuse_quotients
from s2sgrad.compiler.syntax import clone

RNG = np.random.default_rng(3407)


def softmax_rows(z, v):
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    w = e / np.sum(e, axis=1, keepdims=True)
    return np.sum((w @ v) ** 2)


def softmax_columns(z):
    e = np.exp(z)
    w = e / np.sum(e, axis=0, keepdims=True)
    return np.sum(np.sin(w) * z)


CASES = [
    (softmax_rows, (RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3))), ("z",)),
    (softmax_columns, (RNG.standard_normal((3, 4)),), ("z",)),
]


def _names(record):
    """A record's names by context and its calls, each in no particular order."""
    return sorted(record.loads), sorted(record.stores), sorted(record.others), len(record.calls)


@pytest.mark.parametrize("f, args, wrt", CASES)
def test_with_facts_as_with_walks(f, args, wrt, monkeypatch):
    """At the pass's place in the specialised code's finishing, on the body and facts the
    optimiser hands it: the same rewrite as from walks, and the records kept true."""
    seen = []

    def compared(body, is_pure, facts=None):
        walked = [clone(s) for s in body]
        changed_walked = reuse_quotients(walked, is_pure)
        changed = reuse_quotients(body, is_pure, facts)
        seen.append((facts is not None, changed, changed_walked))
        assert changed == changed_walked
        assert [gast.dump(s) for s in body] == [gast.dump(s) for s in walked]
        if facts is not None:  # what it forgot leaves the records of the rest true
            fresh = FactsCache()
            assert list(map(_names, facts.of_each(body))) == list(map(_names, fresh.of_each(body)))
        return changed

    monkeypatch.setattr(finishing, "reuse_quotients", compared)
    generated = pipeline.derivative(f, wrt)
    finishing.specialised(generated, args, {})
    assert (True, True, True) in seen  # with facts, a quotient reused


@pytest.mark.parametrize("f, args, wrt", CASES)
def test_gradient_against_differences(f, args, wrt):
    assert_gradient_in_every_mode(f, args)
