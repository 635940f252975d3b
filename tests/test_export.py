"""``sg.export``: the module it writes binds only a safe public name, and it never replaces
an existing file unless asked to."""

import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg


def loss(x, w):
    return np.sum(np.tanh(x * w) ** 2)


def _import_and_call(module_path: Path, function: str, *values: float) -> float:
    program = (
        "import sys\nsys.path.insert(0, sys.argv[1])\n"
        f"from {module_path.stem} import {function}\n"
        f"print(repr(float({function}(*map(float, sys.argv[2:])))))"
    )
    run = subprocess.run(
        [sys.executable, "-c", program, str(module_path.parent), *map(str, values)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(sg.__file__).parents[1],
    )
    return float(run.stdout)


@pytest.mark.parametrize(
    "name",
    [
        "import os; os.system('touch planted'); y",  # code run on import
        "class",  # a keyword: the module would not compile
        "two words",
        "",
    ],
)
def test_a_name_that_is_not_an_identifier_is_refused_and_nothing_is_written(tmp_path, name):
    target = tmp_path / "dloss.py"
    with pytest.raises(ValueError, match="identifier that is not a keyword"):
        sg.export(loss, target, name=name)
    assert not target.exists()
    assert not (tmp_path / "planted").exists()


@pytest.mark.parametrize("name", ["np", "x", "seed_cotangent", "as_gradient", "__name__"])
def test_a_name_the_module_already_uses_is_refused(tmp_path, name):
    target = tmp_path / "dloss.py"
    with pytest.raises(ValueError, match="already uses"):
        sg.export(loss, target, name=name)
    assert not target.exists()


def test_a_name_that_is_not_a_string_is_refused(tmp_path):
    with pytest.raises(TypeError, match="must be a string"):
        sg.export(loss, tmp_path / "dloss.py", name=3)


def test_the_chosen_name_is_the_gradient(tmp_path):
    target = sg.export(loss, tmp_path / "gradients.py", name="loss_gradient")
    x, w = 0.4, -1.3
    expected = numeric_grad(loss, (x, w), 0)
    assert _import_and_call(target, "loss_gradient", x, w) == pytest.approx(expected, rel=1e-6)


def test_an_existing_file_is_kept_unless_overwrite_is_given(tmp_path):
    target = tmp_path / "dloss.py"
    target.write_text("precious = 1\n")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        sg.export(loss, target)
    assert target.read_text() == "precious = 1\n"
    sg.export(loss, target, overwrite=True)
    x, w = -0.7, 0.9
    assert_close(_import_and_call(target, "dloss", x, w), numeric_grad(loss, (x, w), 0))


def test_a_lambda_keeps_its_generated_name(tmp_path):
    square = lambda x: x * x  # noqa: E731
    target = sg.export(square, tmp_path / "dsquare.py")
    made = runpy.run_path(str(target))  # a valid module: '<lambda>' is no Python name
    (gradient,) = [f for f in made.values() if getattr(f, "__module__", "") == "<run_path>"]
    assert gradient.__name__.isidentifier() and gradient(0.7) == pytest.approx(1.4)


@pytest.mark.parametrize(
    "made",
    [sg.hessian, sg.jacobian, sg.jacfwd, lambda f: sg.vmap(f)],
    ids=["hessian", "jacobian", "jacfwd", "vmap"],
)
def test_source_of_a_jacobian_or_hessian_points_at_the_code_it_runs(made):
    def g(x):
        return np.sum(np.sin(x) ** 2)

    with pytest.raises(
        sg.S2SGradError, match=r"Jacobian, Hessian or vmap .*sg\.show\(sg\.grad\(f\)"
    ):
        sg.source(made(g))
