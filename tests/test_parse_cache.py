"""The on-disk cache of parsed rule bodies: what it gives back equals a fresh parse."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gast
import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad import inline, parse_cache
from s2sgrad.rules.registry import _RULES


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path / "cache"))
    parse_cache.forget_loaded()
    yield tmp_path / "cache"
    parse_cache.forget_loaded()


def _inlined_rules():
    rules = {r.vjp for r in _RULES.values() if r.vjp is not None and r.inline_vjp}
    rules |= {r.jvp for r in _RULES.values() if r.jvp is not None and r.inline_jvp}
    return sorted(
        (r for r in rules if hasattr(r, "__code__")),
        key=lambda r: (r.__code__.co_filename, r.__code__.co_firstlineno),
    )


def _dump(parsed):
    body, written = parsed
    return [gast.dump(s) for s in body], written


def _parse_through_cache(rule):
    code = rule.__code__
    key = (rule.__qualname__, code.co_firstlineno)
    stored = parse_cache.load(code.co_filename, key)
    if stored is None:
        stored = inline._read_rule(rule)
        parse_cache.store(code.co_filename, key, stored)
    return stored


def test_every_rule_comes_back_from_the_cache_as_parsed(cache_dir):
    rules = _inlined_rules()
    assert len(rules) > 100
    fresh = [_dump(_parse_through_cache(r)) for r in rules]
    parse_cache.write()
    assert len(list(cache_dir.glob("*.pickle"))) >= 4  # one file per rules module
    parse_cache.forget_loaded()
    for rule, expected in zip(rules, fresh):
        code = rule.__code__
        stored = parse_cache.load(code.co_filename, (rule.__qualname__, code.co_firstlineno))
        assert stored is not None, rule.__qualname__
        assert _dump(stored) == expected, rule.__qualname__


def _rule_file(directory: Path, body: str) -> Path:
    path = directory / "my_rules.py"
    path.write_text(f"def my_rule(g, ans, x):\n    {body}\n")
    return path


def test_an_edited_source_file_is_parsed_again(cache_dir, tmp_path):
    path = _rule_file(tmp_path, "return g * 2.0")
    key = ("my_rule", 1)
    parse_cache.store(str(path), key, "parsed before the edit")
    parse_cache.write()
    parse_cache.forget_loaded()
    assert parse_cache.load(str(path), key) == "parsed before the edit"

    os.utime(path, ns=(1, 1))  # touched, the same text: still good
    parse_cache.forget_loaded()
    assert parse_cache.load(str(path), key) == "parsed before the edit"

    _rule_file(tmp_path, "return g * 3.0")  # the same size, another text
    parse_cache.forget_loaded()
    assert parse_cache.load(str(path), key) is None


def test_copies_of_a_source_share_entries(cache_dir, tmp_path):
    first = _rule_file(tmp_path, "return g")
    (tmp_path / "clone").mkdir()
    second = _rule_file(tmp_path / "clone", "return g")
    parse_cache.store(str(first), ("my_rule", 1), "parsed once")
    parse_cache.write()
    parse_cache.forget_loaded()
    assert parse_cache.load(str(second), ("my_rule", 1)) == "parsed once"


def test_only_the_newest_cache_files_are_kept(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(parse_cache, "KEPT_FILES", 3)
    for index in range(5):
        path = tmp_path / f"rules_{index}.py"
        path.write_text(f"def my_rule(g, ans, x):\n    return g * {index}\n")
        parse_cache.store(str(path), ("my_rule", 1), index)
        parse_cache.write()
        (written,) = cache_dir.glob(f"rules_{index}-*.pickle")
        os.utime(written, ns=(index * 10**9, index * 10**9))  # written in this order
    kept = sorted(p.name.split("-")[0] for p in cache_dir.glob("*.pickle"))
    assert kept == ["rules_2", "rules_3", "rules_4"]


def test_a_damaged_cache_file_is_ignored_and_replaced(cache_dir, tmp_path):
    path = _rule_file(tmp_path, "return g")
    parse_cache.store(str(path), ("my_rule", 1), "kept")
    parse_cache.write()
    (cached,) = cache_dir.glob("my_rules-*.pickle")
    cached.write_bytes(b"not a pickle")
    parse_cache.forget_loaded()
    assert parse_cache.load(str(path), ("my_rule", 1)) is None
    parse_cache.store(str(path), ("my_rule", 1), "kept again")
    parse_cache.write()
    parse_cache.forget_loaded()
    assert parse_cache.load(str(path), ("my_rule", 1)) == "kept again"


def test_an_empty_directory_setting_turns_the_cache_off(monkeypatch, tmp_path):
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", "")
    parse_cache.forget_loaded()
    path = _rule_file(tmp_path, "return g")
    parse_cache.store(str(path), ("my_rule", 1), "not kept")
    parse_cache.write()
    assert parse_cache.load(str(path), ("my_rule", 1)) is None
    assert parse_cache.directory() is None
    parse_cache.forget_loaded()


def test_sources_that_are_not_files_are_not_cached(cache_dir):
    parse_cache.store("<string>", ("f", 1), "not kept")
    parse_cache.write()
    assert parse_cache.load("<string>", ("f", 1)) is None
    assert not cache_dir.exists()


_PROGRAM = textwrap.dedent(
    """
    import numpy as np
    import s2sgrad as sg
    from s2sgrad import parse_cache

    loaded = []
    original = parse_cache.load
    parse_cache.load = lambda f, k: loaded.append(original(f, k) is not None) or original(f, k)

    def f(x, w):
        return np.sum(np.tanh(x @ w) ** 2) / np.mean(np.exp(w))

    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    w = np.linspace(0.5, 1.5, 12).reshape(3, 4)
    checksum = repr(sg.grad(f, wrt=(0, 1))(x, w)[1].sum())
    print(sum(loaded), len(loaded), checksum)
    """
)


def test_a_second_process_reads_the_rules_the_first_one_parsed(cache_dir, tmp_path):
    program = tmp_path / "program.py"
    program.write_text(_PROGRAM)
    environment = {**os.environ, "S2SGRAD_CACHE_DIR": str(cache_dir)}

    def run():
        done = subprocess.run(
            [sys.executable, str(program)],
            capture_output=True,
            text=True,
            env=environment,
            check=True,
        )
        hits, uses, checksum = done.stdout.split()
        return int(hits), int(uses), checksum

    first = run()
    second = run()
    assert first[0] == 0 and first[1] >= 5  # nothing cached yet: every rule was parsed
    assert second[:2] == (first[1], first[1])  # every rule came from the cache
    assert second[2] == first[2]  # and the gradient is the same


def test_gradients_agree_whether_rules_come_from_the_cache_or_not(cache_dir):
    from s2sgrad.transform import clear_cache

    def f(x):
        return np.sum(np.log1p(x**2) * np.sin(x), axis=0).mean()

    x = np.random.default_rng(3).normal(size=(4, 3))

    def start_afresh():
        inline._parse_rule.cache_clear()
        inline._TEMPLATES.clear()
        clear_cache()

    start_afresh()
    parsed = sg.grad(f)(x)
    parse_cache.write()
    parse_cache.forget_loaded()
    start_afresh()
    from_cache = sg.grad(f)(x)
    np.testing.assert_array_equal(from_cache, parsed)
    step = 1e-6
    for index in np.ndindex(x.shape):
        shift = np.zeros_like(x)
        shift[index] = step
        expected = (f(x + shift) - f(x - shift)) / (2 * step)
        assert from_cache[index] == pytest.approx(expected, rel=1e-6, abs=1e-8)


def test_rule_parameters_read_from_code_match_inspect():
    import inspect

    rules = _inlined_rules()

    def keyword_rule(g, ans, x, /, y=2, *rest, axis=None, keepdims):
        return g

    for rule in [*rules, keyword_rule]:
        expected = [
            p for p in inspect.signature(rule).parameters.values() if p.kind != p.VAR_KEYWORD
        ]
        assert inline._parameters(rule) == expected, rule.__qualname__
