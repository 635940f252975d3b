"""The direct converters between gast and ast give what gast's own converters give."""

import ast
import operator
from pathlib import Path

import gast
import pytest
from collector import older_objects_frozen

from s2sgrad.compiler.python_ast import into_gast, to_gast, to_python_ast

ROOT = Path(__file__).resolve().parent.parent
FILES = [
    "s2sgrad/compiler/reverse/forward_sweep.py",
    "s2sgrad/api.py",
    "s2sgrad/tape/values.py",
    "tests/test_control_flow.py",
    "examples/checkpointed_cnn.py",
]


@pytest.fixture(autouse=True)
def _collections_walk_only_this_test():
    """The trees converted here are hundreds of thousands of objects that outlive young
    collections: the full collections they start walk only them, not every object the
    worker's earlier tests kept (most of this file's time late in a run)."""
    with older_objects_frozen():
        yield


@pytest.mark.parametrize("name", FILES)
def test_to_gast_matches_gast(name):
    tree = ast.parse((ROOT / name).read_text())
    expected = gast.dump(gast.ast_to_gast(tree), include_attributes=True)
    assert gast.dump(to_gast(tree), include_attributes=True) == expected


@pytest.mark.parametrize("name", FILES)
def test_to_gast_without_locations_is_gast_s_tree_with_its_locations_removed(name):
    tree = ast.parse((ROOT / name).read_text())
    expected = gast.ast_to_gast(tree)
    located = ("lineno", "col_offset", "end_lineno", "end_col_offset")
    for node in gast.walk(expected):
        for key in located:
            node.__dict__.pop(key, None)
    converted = to_gast(tree, locations=False)
    assert gast.dump(converted, include_attributes=True) == gast.dump(
        expected, include_attributes=True
    )
    for mine, theirs in zip(gast.walk(converted), gast.walk(expected)):
        assert list(mine.__dict__) == list(theirs.__dict__)  # the same entries, in order


@pytest.mark.parametrize("name", FILES)
def test_into_gast_makes_to_gast_s_tree_of_the_tree_itself(name):
    text = (ROOT / name).read_text()
    expected = to_gast(ast.parse(text))
    tree = ast.parse(text)
    statements = list(tree.body)
    converted = into_gast(tree)
    assert converted is tree and all(map(operator.is_, converted.body, statements))
    assert gast.dump(converted, include_attributes=True) == gast.dump(
        expected, include_attributes=True
    )
    for mine, theirs in zip(gast.walk(converted), gast.walk(expected)):
        assert type(mine) is type(theirs)
        assert list(mine.__dict__) == list(theirs.__dict__)  # the same entries, in order
    # the operators and contexts the parser shares between trees are left as they were
    assert type(ast.parse("a + b < c").body[0].value.left.op) is ast.Add
    assert type(ast.parse("a").body[0].value.ctx) is ast.Load


@pytest.mark.parametrize("name", FILES)
def test_to_python_ast_matches_gast_with_locations_filled_in(name):
    tree = gast.parse((ROOT / name).read_text())
    expected = ast.dump(ast.fix_missing_locations(gast.gast_to_ast(tree)), include_attributes=True)
    converted = to_python_ast(tree)
    assert ast.dump(converted, include_attributes=True) == expected
    compile(converted, name, "exec")


def test_nodes_without_a_location_take_their_statement_s():
    function = gast.parse("def f(x):\n    return x").body[0]
    call = gast.Call(
        func=gast.Name(id="g", ctx=gast.Load(), annotation=None, type_comment=None),
        args=[],
        keywords=[],
    )
    function.body.append(gast.Expr(value=call))
    expected = ast.fix_missing_locations(gast.gast_to_ast(function))
    converted = to_python_ast(function)
    assert ast.dump(converted, include_attributes=True) == ast.dump(
        expected, include_attributes=True
    )
