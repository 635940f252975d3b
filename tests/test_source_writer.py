"""The quick source printer writes what ``ast.unparse`` writes, character for character:
on every function of this repository's own code it prints, on expressions chosen for
their parentheses and literals, and on the code generated for a corpus of gradients."""

import ast
import inspect
import sys
from pathlib import Path

import gast
import numpy as np
import pytest
from collector import older_objects_frozen

import s2sgrad as sg
from s2sgrad.compiler import codegen
from s2sgrad.compiler.python_ast import into_gast, to_python_ast
from s2sgrad.compiler.source_writer import write_source, write_source_and_names
from s2sgrad.compiler.syntax import names_used, walk

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="3.10 prints with ast.unparse alone"
)

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    str(path.relative_to(ROOT))
    for folder in ("s2sgrad", "tests", "benchmarks", "examples")
    for path in (ROOT / folder).rglob("*.py")
)


def _functions(tree):
    return [node for node in walk(tree) if type(node) is gast.FunctionDef]


@pytest.fixture(scope="module")
def repository_functions():
    """``(file name, its functions)`` for every file of ``SOURCES``: parsed once for the
    tests below (parsing is most of their time; the printers do not change the trees), into
    gast trees as the frontend makes them (``into_gast``: the same trees as ``gast.parse``,
    in half its time). The older objects are frozen meanwhile: the full collections that a
    million new nodes start walk only those, not every object the worker kept before."""
    with older_objects_frozen():
        return [
            (name, _functions(into_gast(ast.parse((ROOT / name).read_text())))) for name in SOURCES
        ]


def test_the_repository_s_functions_print_as_ast_unparse_prints_them(repository_functions):
    printed = compared = 0
    # the Python trees made to compare with start full collections: frozen meanwhile, they
    # walk only those (5.3 s of collections late in round 35's suite; nothing is built here)
    with older_objects_frozen():
        for name, functions in repository_functions:
            for function in functions:
                compared += 1
                text = write_source(function)
                if text is None:
                    continue
                printed += 1
                assert text == ast.unparse(to_python_ast(function)), f"{name}: {function.name}"
    assert printed > compared // 5  # docstrings and comprehensions are handed back


def test_the_names_met_while_printing_are_every_name_of_the_function(repository_functions):
    printed = 0
    for name, functions in repository_functions:
        for function in functions:
            found = write_source_and_names(function)
            if found is None:
                assert write_source(function) is None
                continue
            printed += 1
            text, names = found
            assert text == write_source(function)
            assert names == names_used(function), f"{name}: {function.name}"
    assert printed > 100


def test_names_in_annotations_are_met_as_well():
    function = gast.parse("def f(x: np.ndarray, *a: T, k: K = 1):\n    return x").body[0]
    text, names = write_source_and_names(function)
    assert names == names_used(function) == {"x", "np", "a", "T", "k", "K"}
    function.body[0].value.annotation = gast.Name("hidden", gast.Load(), None, None)
    assert write_source_and_names(function)[1] == names_used(function)  # "hidden" included
    assert "hidden" in names_used(function)


EXPRESSIONS = [
    "(a + b) * c",
    "a + b * c",
    "a - (b - c)",
    "(a - b) - c",
    "a ** b ** c",
    "(a ** b) ** c",
    "(-a) ** 2",
    "-a ** 2",
    "-(-a)",
    "not a or b and not c",
    "(a or b) and c",
    "a if b else c if d else e",
    "(a if b else c) + 1",
    "a < b <= (c == d)",
    "f(*args, x=1, **kwargs)[1:2, ::3, None]",
    "x[()]",
    "x[(1,)]",
    "x[1,]",
    "x[a:b:c, ...]",
    "(1).real + 1.5 .real + True .real",
    "(a, b)",
    "((a, b), [c, d], {e: f, **g})",
    "f((a, b), (c,))",
    "1e400 + -1e400 + 1j * 1e400",
    "'it''s' + \"a\\\"b\" + b'bytes' + u'text'",
    "a @ b // c % d << e >> f | g ^ h & i",
    "~a + +b",
    "a is not b not in c",
    "x.y.z(-1)",
    "(x, (x := None))[0] + f(y := 2)",
]


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_expressions_print_as_ast_unparse_prints_them(text):
    function = gast.parse(f"def f(a, b=1, *c, d, e=2, **g):\n    y = {text}\n    return y").body[0]
    assert write_source(function) == ast.unparse(to_python_ast(function))


STATEMENTS = [
    "a, b = c\nfor i, v in z:\n    pass\nelse:\n    del a, b",
    "if a:\n    pass\nelif b:\n    x += 1\nelse:\n    if c:\n        pass\n    return",
    "while a:\n    break\nelse:\n    x = y = (1, 2)",
    "x = 1\n'a comment'\n(a, b)",
]


@pytest.mark.parametrize("text", STATEMENTS)
def test_statements_print_as_ast_unparse_prints_them(text):
    body = "\n".join("    " + line for line in text.splitlines())
    function = gast.parse(f"def f(x, /, y):\n{body}").body[0]
    assert write_source(function) == ast.unparse(to_python_ast(function))


def test_nodes_made_without_a_type_comment_print_as_ast_unparse_prints_them():
    name = gast.Name(id="y", ctx=gast.Store(), annotation=None)  # no type_comment
    value = gast.Call(
        func=gast.Name(id="g", ctx=gast.Load(), annotation=None, type_comment=None),
        args=[gast.Constant(value=1.5, kind=None)],
        keywords=[gast.keyword(arg="k", value=gast.Constant(value="s", kind=None))],
    )
    function = gast.parse("def f(x):\n    return x").body[0]
    function.body.insert(0, gast.Assign(targets=[name], value=value))  # no type_comment
    assert write_source(function) == ast.unparse(to_python_ast(function))


@pytest.mark.parametrize(
    "text",
    [
        "def f(x):\n    'a docstring'\n    return x",
        "def f(x):\n    def g(y):\n        return y\n    return g(x)",
        "def f(x):\n    return lambda y: y",
        "def f(x):\n    return [y for y in x]",
        "def f(x) -> int:\n    return x",
        "def f(x):\n    return f'{x}'",
        "def f(x):\n    with x:\n        pass",
    ],
)
def test_what_it_does_not_print_is_left_to_ast_unparse(text):
    assert write_source(gast.parse(text).body[0]) is None


def _corpus():
    import generated_code_corpus

    return [
        function
        for name, function in vars(generated_code_corpus).items()
        if inspect.isfunction(function)
        and function.__module__ == generated_code_corpus.__name__
        and not name.startswith("_")
    ]


def test_generated_code_prints_as_ast_unparse_prints_it(monkeypatch):
    printed = []

    def checked(function):
        text = write_source(function)
        if text is not None:
            assert text == ast.unparse(to_python_ast(function))
            printed.append(function.name)
        return text

    def checked_names(function, positions=None):
        found = write_source_and_names(function, positions)
        if found is not None:
            assert found[1] == names_used(function)
            # one position for each line that starts a statement, none past the last line
            assert positions is None or len(positions) <= found[0].count("\n") + 1
            printed.append(function.name)
        return found

    monkeypatch.setattr(codegen, "write_source", checked)
    monkeypatch.setattr(codegen, "write_source_and_names", checked_names)
    x = np.linspace(0.3, 1.1, 6)
    for function in _corpus():
        derivative = sg.grad(function, mode="s2s")
        derivative(x)
        sg.source(sg.grad(function, mode="s2s"))  # the generic code, printed
    assert len(printed) > 10
