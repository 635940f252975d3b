"""The transformer does not recurse with the size of a function: long functions and deep
expressions (a sum of many terms is a left-nested tree as deep as it is long) are
differentiated by source transformation."""

import importlib.util
import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg


def _load(tmp_path, name, source):
    """A function defined in a file of its own (the transformer reads its source)."""
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\n\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name), str(path)


def test_a_function_of_2000_statements(tmp_path):
    lines = [f"    y{i + 1} = y{i} * {1 + (i % 3) / 1000}\n" for i in range(2000)]
    source = "def long(x):\n    y0 = x\n" + "".join(lines) + "    return np.sum(y2000)\n"
    f, _ = _load(tmp_path, "long", source)
    x = np.array([0.3, -0.2])
    assert_close(sg.grad(f, mode="s2s")(x), numeric_grad(f, (x,), 0), rtol=1e-4)


def test_an_expression_of_1000_terms(tmp_path):
    terms = " + ".join(f"x * {i + 1}.0" for i in range(1000))
    f, path = _load(tmp_path, "wide", f"def wide(x):\n    return np.sum({terms} * x)\n")
    x = np.array([0.3, -0.2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient = sg.grad(f, mode="auto")
        assert_close(gradient(x), numeric_grad(f, (x,), 0), rtol=1e-4)
        assert_close(gradient(x), numeric_grad(f, (x,), 0), rtol=1e-4)  # specialised code
    try:  # the source check compiles the definition's tree, which Python 3.11 cannot here
        assert_close(sg.grad(f, mode="s2s")(x), numeric_grad(f, (x,), 0), rtol=1e-4)
    except sg.UnsupportedError as error:
        assert path in str(error)


def test_second_order_through_a_deep_expression(tmp_path):
    terms = " + ".join(f"np.sin(x * {i % 7 + 1}.0) * {i + 1}.0" for i in range(120))
    f, _ = _load(tmp_path, "deep", f"def deep(x):\n    return np.sum({terms})\n")
    x = np.array([0.3, -0.2])
    gradient = sg.grad(f, mode="s2s")
    (product,) = sg.hvp(f, (x,), (np.ones(2),), mode="s2s")
    assert_close(product, numeric_grad(lambda x: np.sum(gradient(x)), (x,), 0), rtol=1e-4)


def test_a_deep_expression_split_in_evaluation_order(tmp_path):
    # the deep part comes second, after a call that must run first: nothing can move
    terms = " + ".join(["x"] * 200)
    f, path = _load(tmp_path, "ordered", f"def ordered(x):\n    return g(x) * ({terms})\n")
    with pytest.raises(sg.UnsupportedError, match=f"{path}:4: .*bind its parts to names"):
        sg.grad(f, mode="s2s")(1.0)


def test_deep_parts_side_by_side_and_in_keyword_arguments(tmp_path):
    terms = " + ".join(["x"] * 150)
    source = (
        f"def wide(x):\n    return np.sum(({terms}) * ({terms}) + np.add(x, {terms}))\n\n\n"
        f"def keyword(x):\n    return np.sum(scale(x, k=({terms})))\n\n\n"
        "def scale(x, k):\n    return x * k\n"
    )
    wide, _ = _load(tmp_path, "wide", source)
    keyword = wide.__globals__["keyword"]
    x = np.array([0.3, -0.2])
    for f in (wide, keyword):
        assert_close(sg.grad(f, mode="s2s")(x), numeric_grad(f, (x,), 0), rtol=1e-4)
