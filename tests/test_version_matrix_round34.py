"""Programs whose differentiation differed between the Python and NumPy versions s2sgrad
supports (3.10 to 3.13, NumPy 1.26 and 2.x): each is differentiated right on every one.

Python 3.13 gave ``types.SimpleNamespace`` a signature, ``(mapping_or_iterable=(), /,
**kwargs)``, where 3.10 to 3.12 had none; the transformer read that no parameter is named
``w`` and refused ``SimpleNamespace(w=x)`` ("pass differentiated values positionally"),
although a namespace's keywords are its attributes, which the record rules follow by name.
3.13 also lets ``SimpleNamespace(mapping)`` store a mapping's entries: the record rules gave
the mapping no cotangent (a silently wrong zero gradient); it is refused by source and taped
in mode "auto".
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import linecache
import os
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_grad_jvp_and_hvp,
    assert_refused_in_s2s_and_taped_in_auto,
    numeric_grad,
)

import s2sgrad as sg

R = np.random.default_rng(34_020)
HERE = "test_version_matrix_round34.py"
stats = pytest.importorskip("scipy.stats")


def namespace_by_keywords(x):
    ns = types.SimpleNamespace(w=x * 2.0, b=x[0], label="layer")
    return np.sum(np.sin(ns.w) * ns.b)


def namespace_by_keyword_then_stored(x):
    ns = types.SimpleNamespace(scale=np.cos(x))
    ns.scale = ns.scale * x[1]
    return np.sum(ns.scale**2)


def namespace_with_a_constant_keyword(x):
    ns = types.SimpleNamespace(w=x, shift=1.5)
    return np.sum(ns.w**3 + ns.shift * ns.w)


@pytest.mark.parametrize(
    "f",
    [namespace_by_keywords, namespace_by_keyword_then_stored, namespace_with_a_constant_keyword],
)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_namespace_built_by_keyword(f, mode):
    x, v = R.uniform(0.3, 1.2, size=(2, 3)), R.normal(size=(2, 3))
    assert_grad_jvp_and_hvp(f, x, v, mode)


def namespace_of_a_mapping(x):
    ns = types.SimpleNamespace({"w": x * 2.0}, b=x[0, 1])
    return np.sum(np.sin(ns.w)) * ns.b


def namespace_of_pairs(x):
    ns = types.SimpleNamespace([("w", np.exp(x)), ("n", 3)])
    return np.sum(ns.w**2) * ns.n


@pytest.mark.skipif(sys.version_info < (3, 13), reason="SimpleNamespace(mapping): 3.13 on")
@pytest.mark.parametrize("f", [namespace_of_a_mapping, namespace_of_pairs])
def test_a_namespace_of_a_mapping_is_refused_by_source_and_taped(f):
    x, v = R.uniform(0.3, 1.2, size=(2, 3)), R.normal(size=(2, 3))
    assert_refused_in_s2s_and_taped_in_auto(f, [x], "given a mapping", __file__)
    with pytest.raises(sg.UnsupportedError, match="given a mapping"):
        sg.jvp(f, (x,), (v,), mode="s2s")
    assert_grad_jvp_and_hvp(f, x, v, "auto")
    assert_grad_jvp_and_hvp(f, x, v, "tape")


def second_moment(x):
    return stats.moment(x, 2) * 2.0


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_library_asking_an_array_api_attribute_is_named_on_numpy_1(mode):
    """SciPy 1.17's array-API helpers ask ``x.device`` of an array they do not know as
    NumPy's; on NumPy 1.26, whose ndarray has no ``device``, the tape raised a bare
    ``AttributeError: device`` from its own code."""
    x = R.normal(size=5)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gradient = sg.grad(second_moment, mode=mode)(x)
    except sg.S2SGradError as refusal:  # a SciPy whose code the tape cannot follow
        assert f"{HERE}:" in str(refusal)
        assert "scipy.stats.moment" in str(refusal)
    else:  # a SciPy computing with NumPy's functions, which the tape follows
        assert_close(gradient, numeric_grad(second_moment, [x], 0))


@dataclasses.dataclass
class Layer:
    w: object
    b: object = 0.5


def astuple_of_a_made_dataclass(x):
    d = Layer(x * 2.0, x[0])
    w, b = dataclasses.astuple(d)
    return np.sum(w) * b


@pytest.mark.skipif(
    not hasattr(dataclasses, "_ATOMIC_TYPES"), reason="dataclasses compares type(obj) from 3.12 on"
)
def test_astuple_compares_the_class_of_each_field_from_python_3_12():
    """``dataclasses.astuple`` returns a field whose ``type(...)`` is one of its atomic types
    (float, int, str ...) as it is, and deep-copies any other. The transformer refuses its
    code (an in-place write it cannot tell apart), and mode "auto" gives it to the tape,
    which refuses it there: on the tape a float being differentiated is a tape value, whose
    ``type(...)`` is not float, so the code would take the other branch. (Both branches
    return the same number here, but nothing tells the tape so.) Mode "tape", which checks
    the function given to it, not what it calls, differentiates it right."""
    x = R.uniform(0.3, 1.2, size=3)
    refused = pytest.raises(sg.UnsupportedError, match=r"dataclasses\.py:\d+: type\(\.\.\.\)")
    with refused, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sg.grad(astuple_of_a_made_dataclass, mode="auto")(x)
    expected = numeric_grad(astuple_of_a_made_dataclass, [x], 0)
    assert_close(sg.grad(astuple_of_a_made_dataclass, mode="tape")(x), expected)


TYPE_ALIASES = """
import numpy as np


def alias_of_a_type(x):
    type Vec = list[float]
    return np.sum(np.sin(x) ** 3)


def alias_of_the_argument(x):
    type V = x
    return np.sum(V.__value__ ** 3)
"""


@pytest.fixture
def type_alias_programs(tmp_path, monkeypatch):
    """The functions of ``TYPE_ALIASES``, imported from a file (their source is read)."""
    if sys.version_info < (3, 12):
        pytest.skip("'type' statements: Python 3.12 on")
    (tmp_path / "type_alias_programs.py").write_text(TYPE_ALIASES)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module("type_alias_programs")


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_type_alias_statement_is_kept_as_it_is(type_alias_programs, mode):
    """Forward mode refused 'type Vec = list[float]' ("cannot differentiate a 'typealias'
    statement"), so hvp and jvp failed where grad worked."""
    x, v = R.uniform(0.3, 1.2, size=(2, 3)), R.normal(size=(2, 3))
    assert_grad_jvp_and_hvp(type_alias_programs.alias_of_a_type, x, v, mode)


def test_a_type_alias_of_a_differentiated_value_is_refused_by_source(type_alias_programs):
    """'type V = x' read back as V.__value__ was a constant to both sweeps: the gradient
    was zero in modes "s2s" and "auto"."""
    f = type_alias_programs.alias_of_the_argument
    x, v = R.uniform(0.3, 1.2, size=(2, 3)), R.normal(size=(2, 3))
    assert_refused_in_s2s_and_taped_in_auto(f, [x], r"'type V = \.\.\.'", "type_alias_programs.py")
    with pytest.raises(sg.UnsupportedError, match=r"type_alias_programs\.py:\d+: 'type V"):
        sg.jvp(f, (x,), (v,), mode="s2s")
    assert_grad_jvp_and_hvp(f, x, v, "auto")


Sample = collections.namedtuple("Sample", "w b")


def named_tuple_made(x):
    s = Sample(np.sin(x), b=x[0, 1])
    return np.sum(s.w**2) * s.b


def test_a_named_tuple_is_a_record_whatever_lines_string_has(monkeypatch):
    """namedtuple's ``__new__`` is made by ``eval``, so its code names the file
    ``<string>``; Python 3.13 keeps the text of ``python -c`` under that name (as xdist's
    workers run), and ``inspect.getsource`` gave that text for ``__new__``: the class was no
    record, and a named tuple made in the function was refused by source."""
    command = "import sys; exec(eval(sys.stdin.readline()))\n"
    monkeypatch.setitem(linecache.cache, "<string>", (len(command), None, [command], "<string>"))
    x, v = R.uniform(0.3, 1.2, size=(2, 3)), R.normal(size=(2, 3))
    assert_grad_jvp_and_hvp(named_tuple_made, x, v, "s2s")


def test_a_named_tuple_is_a_record_under_python_c(tmp_path):
    """The same, as Python 3.13 itself runs it: a program given to ``python -c``."""
    program = (
        "import numpy as np, s2sgrad as sg, test_version_matrix_round34 as t\n"
        "x = np.array([[0.3, 0.5, 0.9], [1.1, 0.4, 0.7]])\n"
        "g = sg.grad(t.named_tuple_made, mode='s2s')(x)\n"
        "from oracle import numeric_grad\n"
        "print(float(np.max(np.abs(g - numeric_grad(t.named_tuple_made, [x], 0)))))\n"
    )
    tests = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([tests, os.environ.get("PYTHONPATH", ""), *sys.path])
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert float(done.stdout.strip()) < 1e-6
