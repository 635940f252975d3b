"""Exact divisors read what the probe saw only where a divisor is a power of two
(``specialize/exact_divisors.py``): most divisors are not, and reading every site's
records for the dividends' kinds was a third of the pass on the 30-line benchmark.
The gradients stay those of finite differences either way."""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.specialize import exact_divisors

RNG = np.random.default_rng(19)


def normalised(w, x):  # divisors the shapes do not fix, or that are no power of two
    p = np.exp(x * w)
    p = p / np.sum(p)
    return np.sum(p * x) / 3.0 + np.sum(w / (1.5 + x * x)) / x.shape[0]


def halved(w, x):  # x.shape[0] is 4: the first division becomes a product
    return np.sum(w * x / x.shape[0]) + np.sum(np.tanh(w) / (2.0 + x * x))


def _kinds_read(monkeypatch) -> list:
    """Each time the pass reads the probe's records for the dividends' kinds."""
    read: list = []
    original = exact_divisors.observed_kinds

    def counted(probing, parameters, once):
        read.append(probing)
        return original(probing, parameters, once)

    monkeypatch.setattr(exact_divisors, "observed_kinds", counted)
    return read


@pytest.mark.parametrize("size", [3, 5, 6])
def test_no_power_of_two_divisor_reads_no_records(monkeypatch, size):
    read = _kinds_read(monkeypatch)
    w, x = RNG.normal(size=size), RNG.normal(size=size)
    g = sg.grad(normalised, wrt=(0, 1), mode="s2s")
    for _ in range(2):
        for index, got in enumerate(g(w, x)):
            assert_close(got, numeric_grad(normalised, (w, x), index))
    assert read == []  # the pass ran (it divides) and asked no dividend's kind


def test_a_power_of_two_divisor_reads_them_once(monkeypatch):
    read = _kinds_read(monkeypatch)
    w, x = RNG.normal(size=4), RNG.normal(size=4)
    g = sg.grad(halved, wrt=(0, 1), mode="s2s")
    for _ in range(2):
        for index, got in enumerate(g(w, x)):
            assert_close(got, numeric_grad(halved, (w, x), index))
    assert len(read) == 1
    code = "\n".join(line for line in sg.source(g).splitlines() if "#" not in line)
    assert "0.25" in code and "shape" not in code, code  # w * x * 0.25, folded


@pytest.mark.parametrize("shape", [(4,), (4, 3), (2, 4, 3)])
def test_quarter_against_differences_at_random_points(shape):
    w = RNG.normal(size=shape[-1])  # broadcast against x
    for seed in range(3):
        x = np.random.default_rng(seed).normal(size=shape)
        g = sg.grad(halved, wrt=(0, 1), mode="s2s")
        for index, got in enumerate(g(w, x)):
            assert_close(got, numeric_grad(halved, (w, x), index))
