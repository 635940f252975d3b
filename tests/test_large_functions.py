"""The transformer does not recurse with the size of a function: long functions and deep
expressions (a sum of many terms is a left-nested tree as deep as it is long) are
differentiated by source transformation."""

import importlib.util
import warnings

import numpy as np
import pytest
from oracle import assert_close, calls_counted, numeric_grad

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


# Deeply nested blocks: passes that walk each statement of nested_statements walk only the
# statement's own header (syntax.header_nodes), so that a block is not walked once per
# statement around it. The names and changes they find must be what whole walks find.

_NESTED_FORMS = """
def forms(x, items, n):
    total = 0.0
    if n > 1 and (k := n - 1) > 0:
        for i in range(k):
            while total < 3.0:
                total = total + float(np.sum(x)) ** 2 + 1.0
                items.append(total)
        else:
            x[0] += 1.0
    try:
        with open(n) as handle:
            scale = [float(v) for v in handle if 0 < len(v) < 9]
    except OSError as error:
        message = str(error)
        np.copyto(x, x * 2.0)
    finally:
        done = lambda z: z.sort()
    def inner(a, b=total):
        kept = a * b
        items.extend([kept])
        return kept
    match n:
        case 1:
            picked = inner(x)
        case _:
            picked = None
    return picked
"""


def test_header_walks_find_what_whole_walks_find():
    import gast

    from s2sgrad.compiler.block_walks import (
        header_nodes,
        names_read_by_all,
        names_read_kept,
        names_written_by_all,
    )
    from s2sgrad.compiler.syntax import names_read, names_written, nested_statements, walk

    body = gast.parse(_NESTED_FORMS).body[0].body
    statements = list(nested_statements(body))
    assert names_read_by_all(statements) == set().union(*map(names_read, statements))
    assert names_written_by_all(statements) == set().union(*map(names_written, statements))
    every = {id(n) for s in statements for n in walk(s)}
    assert every == {id(n) for s in statements for n in header_nodes(s)}
    kept: dict = {}
    for statement in reversed(statements):  # inner blocks first, as the backward sweep asks
        assert names_read_kept(statement, kept) == names_read(statement)
    compound = next(s for s in statements if isinstance(s, gast.If))
    assert not any(n is compound.body[0] for n in header_nodes(compound))


def test_changes_in_place_are_found_in_nested_blocks():
    import gast

    from s2sgrad.compiler.passes.mutation import changed_in_place

    node = gast.parse(_NESTED_FORMS).body[0]
    resolve = lambda expression: getattr(np, getattr(expression, "attr", ""), None)  # noqa: E731
    assert changed_in_place(node, resolve) >= {"x", "items"}
    assert "x" in changed_in_place(node, resolve, arrays_only=True)


def _nested_ifs(depth):
    lines = ["def nested(x, s):", "    y = x"]
    for k in range(depth):
        indent = "    " * (k + 1)
        lines += [f"{indent}if s > {k}:", f"{indent}    y = np.sin(y) * 1.01 + 0.1"]
        if k % 7 == 3:
            lines += [f"{indent}    y = y * 0.5 if 1 < s < 100 else y"]
    return "\n".join(lines) + "\n    return np.sum(y * y)\n"


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_forty_nested_ifs(tmp_path, mode):
    f, _ = _load(tmp_path, "nested", _nested_ifs(40))
    x = np.array([0.3, -0.2, 0.7])
    for s in (25.0, 50.0):  # some branches taken, then all of them
        assert_close(sg.grad(f, mode=mode)(x, s), numeric_grad(f, (x, s), 0), rtol=1e-4)


def _with_a_view(statements):
    """A straight-line function of ``statements`` statements that begins with a view."""
    lines = ["def viewed(x):", "    y0 = x.T", "    y1 = x * 0.5"]
    for i in range(2, statements):
        lines.append(f"    y{i} = np.tanh(y{i - 1} - 0.1 * y{i - 2})")
    return "\n".join(lines) + f"\n    return np.sum(y{statements - 1})\n"


def test_a_long_function_with_a_view_is_read_once_per_statement(tmp_path, monkeypatch):
    # write_back_views asks of each name whether every binding makes a new array: the
    # bindings are found in one pass, not one pass over the function per name
    from s2sgrad.compiler.passes import view_writes

    asked = calls_counted(monkeypatch, view_writes, "names_written")
    f, _ = _load(tmp_path, "viewed", _with_a_view(300))
    x = np.array([0.3, -0.2])
    assert_close(sg.grad(f, mode="s2s")(x), numeric_grad(f, (x,), 0), rtol=1e-4)
    assert 0 < len(asked) < 4 * 900  # linear: about 900 statements in normal form


def test_numbers_followed_down_a_chain_in_linear_time(tmp_path, monkeypatch):
    # y0 is a list's entry (maybe not a number): each y after it is dropped in turn from
    # the names surely holding numbers. One pass over every name per dropped link was
    # quadratic, and asked again of each np.sin(x) which function it calls
    from s2sgrad.compiler.frontend.parsed import ParsedFunction

    asked = []
    original = ParsedFunction.resolve

    def counted(parsed, node):
        asked.append(node)
        return original(parsed, node)

    monkeypatch.setattr(ParsedFunction, "resolve", counted)
    lines = ["def chain(x):", "    xs = [x, x * 2.0]", "    y0 = xs[0]"]
    lines += [f"    y{i} = y{i - 1} * 0.5 + np.sin(x)" for i in range(1, 300)]
    f, _ = _load(tmp_path, "chain", "\n".join(lines) + "\n    return np.sum(y299)\n")
    x = np.array([0.3, -0.2])
    assert_close(sg.grad(f, mode="s2s")(x), numeric_grad(f, (x,), 0), rtol=1e-4)
    assert 0 < len(asked) < 40 * 300  # linear: a few resolves per statement and pass
