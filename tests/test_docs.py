"""The documentation is true: every Python block in docs/ and the README runs, and no page
points outside the repository.

A page's blocks run in order, in one namespace, in a directory of their own (as a reader
pasting them into one script would run them). The word after ``python`` in a fence says
what a block is:

- ```` ```python ````: runs.
- ```` ```python file=NAME.py ````: the contents of a file the page's other blocks import;
  it is written, not run.
- ```` ```python raises ````: runs, and must stop with the s2sgrad error named in its
  ``# s2sgrad.errors.XxxError:`` comment.
- ```` ```python generated ```` (code s2sgrad printed) and ```` ```python fragment ````
  (lines cut out of a longer listing): not run; a generated block must compile.
"""

import contextlib
import io
import re
import sys
from pathlib import Path

import pytest

import s2sgrad as sg

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
RAISED = re.compile(r"^# (?:s2sgrad\.errors\.)?(\w+Error):", re.M)
OUTSIDE = re.compile(r"(/work/|\.\./shared|/root/|/home/|~/\.|briefs/)")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _blocks(page: Path) -> list[tuple[str, str]]:
    return [(info.strip(), body) for info, body in FENCE.findall(page.read_text())]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_points_outside_the_repository(page):
    text = page.read_text()
    assert not OUTSIDE.findall(text), f"{page.name} names a path outside the repository"
    for target in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)], ids=lambda p: p.name)
def test_every_python_block_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))  # docs/writing-rules.md imports tests.rulecheck
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace = {"__name__": "__main__"}
    for index, (info, body) in enumerate(_blocks(page)):
        where = f"{page.name}, python block {index + 1}"
        kind, _, argument = info.partition("=")
        if kind == "file":
            (tmp_path / argument).write_text(body)
            continue
        if info == "fragment":
            continue
        if info == "generated":
            compile(body, where, "exec")
            continue
        assert info in ("", "raises"), f"{where}: unknown block kind {info!r}"
        path = tmp_path / f"block_{index + 1}.py"  # sg.source reads functions' files
        path.write_text(body)
        code = compile(body, str(path), "exec")
        with contextlib.redirect_stdout(io.StringIO()):
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
    for name in [n for n in sys.modules if getattr(sys.modules[n], "__file__", None)]:
        if str(tmp_path) in (sys.modules[name].__file__ or ""):
            del sys.modules[name]
