"""The documentation site builds without a warning, and its API reference lists every
public name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import s2sgrad

ROOT = Path(__file__).resolve().parent.parent

if sys.version_info < (3, 11):  # the docs extra installs only on Python 3.11 or newer
    pytest.skip("the documentation tool chain needs Python 3.11+", allow_module_level=True)
pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")


def test_every_public_name_is_in_the_api_reference():
    reference = (ROOT / "docs" / "reference.md").read_text()
    missing = [name for name in s2sgrad.__all__ if f"::: s2sgrad.{name}\n" not in reference]
    assert not missing, f"add these to docs/reference.md: {missing}"


def test_the_site_builds_strictly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    reference = (tmp_path / "reference" / "index.html").read_text()
    assert "value_and_grad" in reference and "register_pytree" in reference
