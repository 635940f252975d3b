"""mode="auto" falls back to the tape, with one warning at the user's call, whenever the
source transformer cannot handle a function, a failure of the transformer itself included;
the user's own exceptions propagate unchanged in every mode."""

import itertools
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
import s2sgrad.compiler.pipeline
from s2sgrad.errors import FallbackWarning

MODES = ["auto", "s2s", "tape"]


def smooth(x):
    return np.sum(np.sin(x) * x)


def _broken_pass(*args, **kwargs):
    raise KeyError("a bug in a pass")


@pytest.fixture
def broken_transformer(monkeypatch):
    """The transformer fails inside a pass, as a bug in it would."""
    s2sgrad.compiler.pipeline.clear_cache()
    monkeypatch.setattr(s2sgrad.compiler.pipeline, "desugar", _broken_pass)
    yield
    s2sgrad.compiler.pipeline.clear_cache()


def test_an_internal_error_of_the_transformer_falls_back_to_the_tape(broken_transformer):
    def f(x):
        return np.sum(np.sin(x) * x)

    x = np.random.default_rng(0).normal(size=3)
    with pytest.warns(FallbackWarning, match=r"internal error.*KeyError.*bug") as record:
        gradient = sg.grad(f)(x)  # the warning names this line
    assert record[0].filename == __file__
    assert_close(gradient, numeric_grad(f, (x,), 0))
    assert_close(sg.grad(f)(x), numeric_grad(f, (x,), 0))


def test_an_internal_error_in_mode_s2s_is_an_unsupported_error(broken_transformer):
    def f(x):
        return np.sum(np.sin(x) * x)

    with pytest.raises(sg.UnsupportedError, match=r"test_fallback.py:\d+.*internal error") as info:
        sg.grad(f, mode="s2s")(np.ones(2))
    assert "mode='tape'" in str(info.value)
    assert isinstance(info.value.__cause__, KeyError)  # the bug's own traceback is kept


class UsersOwnError(ValueError):
    pass


def raises_its_own_error(x):
    if np.sum(x) > 0:
        raise UsersOwnError("negative values only")
    return np.sum(x**2)


@pytest.mark.parametrize("mode", MODES)
def test_the_users_own_exception_propagates_unchanged(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback either: the error is the user's
        with pytest.raises(UsersOwnError, match="negative values only"):
            sg.grad(raises_its_own_error, mode=mode)(np.ones(2))
        with pytest.raises(UsersOwnError, match="negative values only"):
            sg.vjp(raises_its_own_error, np.ones(2), mode=mode)
    assert_close(sg.grad(raises_its_own_error, mode=mode)(-np.ones(2)), -2 * np.ones(2))


def _function_without_source():
    """A new function (a new code object) that mode="auto" differentiates on the tape."""
    name = f"f{next(_counter)}"  # equal code objects share one warning
    namespace = {"np": np}
    source = f"def {name}(x):\n    return np.sum(np.sin(x) * x)\n"
    exec(compile(source, f"<{name}>", "exec"), namespace)  # no '<string>' of another test
    return namespace[name]


_counter = itertools.count()


CALLS = {  # each call on a line of its own, which the warning must name
    "grad": lambda f, x: sg.grad(f)(x),
    "value_and_grad": lambda f, x: sg.value_and_grad(f)(x),
    "vjp": lambda f, x: sg.vjp(f, x),
    "jacobian": lambda f, x: sg.jacobian(f)(x),
    "jacfwd": lambda f, x: sg.jacfwd(f)(x),
    "jvp": lambda f, x: sg.jvp(f, (x,), (x,)),
    "hessian": lambda f, x: sg.hessian(f)(x),
}


@pytest.mark.parametrize("name", CALLS)
def test_the_fallback_warning_points_at_the_users_call(name):
    f = _function_without_source()
    with pytest.warns(FallbackWarning, match="with the tape instead") as record:
        CALLS[name](f, np.ones(2))
    assert [(w.filename, w.lineno) for w in record] == [
        (__file__, CALLS[name].__code__.co_firstlineno)
    ]


def test_the_fallback_warning_of_a_dispatched_call_points_at_the_users_call():
    layers = [_function_without_source()]

    def f(x):
        return np.sum(layers[0](x) * x)  # dispatched when it runs

    x = np.random.default_rng(1).normal(size=3)
    with pytest.warns(FallbackWarning) as record:
        gradient = sg.grad(f)(x)
    assert {w.filename for w in record} == {__file__}
    assert_close(gradient, numeric_grad(f, (x,), 0))


def test_the_fallback_warning_works_from_python_dash_c(tmp_path):
    """A caller in ``__main__`` without a source file (``python -c``) gets the warning,
    not an ImportError from the warnings machinery looking for its source."""
    (tmp_path / "tries.py").write_text(
        "import numpy as np\n"
        "def f(x):\n"
        "    try:\n"
        "        return np.sum(x ** 2)\n"
        "    except ValueError:\n"
        "        return 0.0\n"
    )
    code = "import numpy as np, s2sgrad as sg, tries; print(sg.grad(tries.f)(np.ones(2)))"
    root = str(Path(__file__).resolve().parents[1])
    env = {"PYTHONPATH": f"{tmp_path}:{root}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "[2. 2.]" in done.stdout
    assert "FallbackWarning" in done.stderr and "tries.py:3" in done.stderr
