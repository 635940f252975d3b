"""s2sgrad keeps no cache on disk: rules are parsed in each process, and nothing in the
directories the removed rule cache used (``$S2SGRAD_CACHE_DIR``, ``~/.cache/s2sgrad``) is
read, run, written or deleted."""

import inspect
import os
import pickle
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import s2sgrad as sg
from s2sgrad.compiler import inline
from s2sgrad.rules import get_rule, registered_primitives


def _all_rules():
    return [get_rule(primitive) for primitive in registered_primitives()]


class _Planted:
    """A pickle that, when loaded, creates the file ``marker``."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').close()",))


def _plant(directory: Path, marker: Path) -> list[Path]:
    """Files where the old cache looked for each rules module, and unrelated pickles."""
    directory.mkdir(parents=True, exist_ok=True)
    planted = []
    for module in sorted({Path(inspect.getfile(r.vjp)) for r in _all_rules() if r.vjp}):
        if module.suffix != ".py":
            continue
        text = module.read_bytes()
        name = f"{module.stem}-{zlib.crc32(text):08x}-{len(text):x}.pickle"
        planted.append(directory / name)
    planted += [directory / f"unrelated_{index}.pickle" for index in range(70)]
    for path in planted:
        path.write_bytes(pickle.dumps(_Planted(str(marker))))
        os.chmod(path, 0o666)  # as if another user could have written them
    os.chmod(directory, 0o777)
    return planted


_PROGRAM = textwrap.dedent(
    """
    import numpy as np
    import s2sgrad as sg

    def f(x, w):
        return np.sum(np.tanh(x @ w) ** 2) / np.mean(np.exp(w))

    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    w = np.linspace(0.5, 1.5, 12).reshape(3, 4)
    print(repr(float(sg.grad(f, wrt=1)(x, w).sum())))
    """
)


def test_planted_cache_files_are_neither_loaded_nor_deleted(tmp_path):
    marker = tmp_path / "planted_code_ran"
    configured = tmp_path / "configured"
    home = tmp_path / "home"
    planted = _plant(configured, marker) + _plant(home / ".cache" / "s2sgrad", marker)
    program = tmp_path / "program.py"
    program.write_text(_PROGRAM)
    for setting in ({"S2SGRAD_CACHE_DIR": str(configured)}, {}):
        environment = {k: v for k, v in os.environ.items() if k != "S2SGRAD_CACHE_DIR"}
        root = str(Path(sg.__file__).parent.parent)  # this s2sgrad, not an installed one
        environment.update(setting, HOME=str(home), XDG_CACHE_HOME="", PYTHONPATH=root)
        done = subprocess.run(
            [sys.executable, str(program)],
            capture_output=True,
            text=True,
            env=environment,
            check=True,
        )
        assert float(done.stdout) == float(done.stdout)  # a number came out
    assert not marker.exists()
    assert all(path.exists() for path in planted)
    found = set(configured.iterdir()) | set((home / ".cache" / "s2sgrad").iterdir())
    assert found == set(planted)  # nothing written beside them


def _inlined_rules():
    rules = {r.vjp for r in _all_rules() if r.vjp is not None and r.inline_vjp}
    rules |= {r.jvp for r in _all_rules() if r.jvp is not None and r.inline_jvp}
    return sorted(
        (r for r in rules if hasattr(r, "__code__")),
        key=lambda r: (r.__code__.co_filename, r.__code__.co_firstlineno),
    )


def test_rule_parameters_read_from_code_match_inspect():
    rules = _inlined_rules()

    def keyword_rule(g, ans, x, /, y=2, *rest, axis=None, keepdims):
        return g

    for rule in [*rules, keyword_rule]:
        expected = [
            p for p in inspect.signature(rule).parameters.values() if p.kind != p.VAR_KEYWORD
        ]
        assert inline.parameters_of(rule) == expected, rule.__qualname__
