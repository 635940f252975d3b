"""The documentation is true: every Python block in docs/ and the README runs, every listing
of generated code that a block prints is what s2sgrad prints today, and no page points
outside the repository.

A page's blocks run in order, in one namespace, in a directory of their own (as a reader
pasting them into one script would run them). The word after ``python`` in a fence says
what a block is:

- ```` ```python ````: runs.
- ```` ```python file=NAME.py ````: the contents of a file the page's other blocks import;
  it is written, not run.
- ```` ```python raises ````: runs, and must stop with the s2sgrad error named in its
  ``# s2sgrad.errors.XxxError:`` comment.
- ```` ```python generated ````: code s2sgrad printed. When the block that ran before it
  printed functions of the same names, the listing must be exactly those functions;
  otherwise it must compile.
- ```` ```python fragment ````: lines cut out of a longer listing; not run.

After a change to the generated code, rewrite the listings from what the blocks print::

    python tests/test_docs.py --update
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
from pathlib import Path

import pytest

import s2sgrad as sg
from s2sgrad.rules import get_rule, registered_primitives

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
RAISED = re.compile(r"^# (?:s2sgrad\.errors\.)?(\w+Error):", re.M)
OUTSIDE = re.compile(r"(/work/|\.\./shared|/root/|/home/|~/\.|briefs/)")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
TOP_LEVEL = re.compile(r"^(?:def|class) (\w+)", re.M)


def _blocks(page: Path) -> list[tuple[str, str]]:
    return [(info.strip(), body) for info, body in FENCE.findall(page.read_text())]


def _definitions(text: str) -> dict[str, str]:
    """The top-level functions printed in ``text``, by name, with their decorators."""
    chunks: dict[str, str] = {}
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = TOP_LEVEL.match(lines[index])
        if not match:
            index += 1
            continue
        start, end = index, index + 1
        while start > 0 and lines[start - 1].startswith("@"):
            start -= 1
        while end < len(lines) and (not lines[end] or lines[end][0].isspace()):
            end += 1
        chunks[match.group(1)] = "\n".join(lines[start:end]).rstrip() + "\n"
        index = end
    return chunks


def _expected_listing(body: str, printed: str) -> str | None:
    """What a ``generated`` block should say, from what the block before it printed; None
    when that block printed none of its functions."""
    names = TOP_LEVEL.findall(body)
    printed_functions = _definitions(printed)
    if not names or not all(name in printed_functions for name in names):
        return None
    return "\n\n".join(printed_functions[name].rstrip() + "\n" for name in names)


def run_page(page: Path, directory: Path) -> list[tuple[int, str, str | None]]:
    """Run ``page``'s blocks in ``directory``; return ``(index, listing, expected)`` for its
    generated listings (``expected`` None where nothing printed them)."""
    namespace = {"__name__": "__main__"}
    printed = ""
    listings = []
    for index, (info, body) in enumerate(_blocks(page)):
        where = f"{page.name}, python block {index + 1}"
        kind, _, argument = info.partition("=")
        if kind == "file":
            (directory / argument).write_text(body)
            continue
        if info == "fragment":
            continue
        if info == "generated":
            compile(body, where, "exec")
            listings.append((index, body, _expected_listing(body, printed)))
            continue
        assert info in ("", "raises"), f"{where}: unknown block kind {info!r}"
        path = directory / f"block_{index + 1}.py"  # sg.source reads functions' files
        path.write_text(body)
        code = compile(body, str(path), "exec")
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            if info == "raises":
                expected = RAISED.search(body)
                assert expected, f"{where}: a 'raises' block names the error it shows"
                with pytest.raises(sg.S2SGradError) as raised:
                    exec(code, namespace)
                assert type(raised.value).__name__ == expected.group(1), where
            else:
                try:
                    exec(code, namespace)
                except Exception as error:
                    pytest.fail(f"{where} fails: {type(error).__name__}: {error}")
        printed = output.getvalue()
    for name in [n for n in sys.modules if getattr(sys.modules[n], "__file__", None)]:
        if str(directory) in (sys.modules[name].__file__ or ""):
            del sys.modules[name]
    return listings


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_points_outside_the_repository(page):
    text = page.read_text()
    assert not OUTSIDE.findall(text), f"{page.name} names a path outside the repository"
    for target in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)], ids=lambda p: p.name)
def test_every_python_block_runs_and_every_printed_listing_is_current(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))  # docs/writing-rules.md imports tests.rulecheck
    monkeypatch.syspath_prepend(str(tmp_path))
    with derivatives_forgotten_after():
        for index, listing, expected in run_page(page, tmp_path):
            if expected is not None:
                assert listing == expected, (
                    f"{page.name}, python block {index + 1}: the listing is not what the block "
                    "before it prints; run `python tests/test_docs.py --update` and reread the text"
                )


def _customised() -> set:
    return {p for p in registered_primitives() if get_rule(p).custom is not None}


@contextlib.contextmanager
def derivatives_forgotten_after():
    """Forget the derivatives a page registers for library functions (docs/controls.md
    gives np.i0 one): left registered, they would replace s2sgrad's own rule in every test
    that runs after this one in the same process."""
    before = _customised()
    try:
        yield
    finally:
        for primitive in _customised() - before:
            sg.forget_derivative(of=primitive)


def _update() -> None:
    """Rewrite every checked listing with what its page's blocks print now."""
    sys.path.insert(0, str(ROOT))
    for page in PAGES:
        if not _blocks(page):
            continue
        with tempfile.TemporaryDirectory() as directory:
            here = os.getcwd()
            os.chdir(directory)
            sys.path.insert(0, directory)
            try:
                listings = run_page(page, Path(directory))
            finally:
                sys.path.remove(directory)
                os.chdir(here)
        replacements = {i: e for i, listing, e in listings if e is not None and e != listing}
        _rewrite_blocks(page, replacements)


def _rewrite_blocks(page: Path, replacements: dict[int, str]) -> None:
    """Replace the bodies of ``page``'s python blocks at the given indices."""
    blocks = iter(range(len(_blocks(page))))

    def rewrite(match: re.Match) -> str:
        index = next(blocks)
        if index not in replacements:
            return match.group(0)
        print(f"{page.name}: updated python block {index + 1}")
        return f"```python{match.group(1)}\n{replacements[index]}```"

    page.write_text(FENCE.sub(rewrite, page.read_text()))


if __name__ == "__main__" and "--update" in sys.argv:
    _update()
