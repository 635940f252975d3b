"""The distribution: an sdist with what its tests need, and a wheel that works on its own."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("setuptools", minversion="77")


def run(command, cwd, **options):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, **options)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """An sdist built from the repository, and a wheel built from that sdist."""
    out = tmp_path_factory.mktemp("dist")
    build = "from setuptools import build_meta as b; import sys; print(b.{}(sys.argv[1]))"
    sdist_name = run([sys.executable, "-c", build.format("build_sdist"), str(out)], ROOT)
    sdist = out / sdist_name.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as archive:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        archive.extractall(out, **safe)
    unpacked = out / sdist.name.removesuffix(".tar.gz")
    wheel_name = run([sys.executable, "-c", build.format("build_wheel"), str(out)], unpacked)
    return sdist, unpacked, out / wheel_name.stdout.strip().splitlines()[-1]


def test_the_sdist_carries_the_license_fixtures_golden_files_and_docs(built):
    sdist, _, _ = built
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for needed in [
        "LICENSE",
        "CHANGELOG.md",
        "tests/conftest.py",
        "tests/oracle.py",
        "tests/rulecheck.py",
        "docs/tutorial.md",
        "examples/quickstart.py",
        "s2sgrad/py.typed",
    ]:
        assert needed in names, needed
    assert any(name.startswith("tests/golden/") for name in names)
    assert not any("__pycache__" in name for name in names)


def test_the_wheel_installs_alone_and_differentiates(built, tmp_path):
    _, _, wheel = built
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "s2sgrad/py.typed" in names and "s2sgrad/compiler/pipeline.py" in names
    assert not any(name.startswith("tests/") for name in names)
    site = tmp_path / "site"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site, wheel], ROOT)
    program = tmp_path / "program.py"
    program.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(site)!r})
            import numpy as np
            import s2sgrad as sg
            assert sg.__file__.startswith({str(site)!r}), sg.__file__

            def f(x):
                return np.sum(np.sin(x) * x)

            x = np.linspace(0.0, 1.0, 5)
            assert np.allclose(sg.grad(f)(x), np.cos(x) * x + np.sin(x))
            print("ok")
            """
        )
    )
    assert run([sys.executable, str(program)], tmp_path).stdout.strip() == "ok"


def test_the_sdist_s_own_tests_pass_on_it(built):
    _, unpacked, _ = built
    run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_golden.py"],
        unpacked,
    )
