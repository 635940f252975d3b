"""Reading a function's definition without tokenizing gives what ``inspect`` gives."""

import ast
import functools
import inspect
import textwrap

import pytest

from s2sgrad.compiler.frontend import read_definition


def plain(x):
    return x * 2


def with_docstring(x):
    """Docs."""
    return x


def trailing_comment(x):
    y = x + 1
    return y
    # a comment after the return


def trailing_pass(x):
    if x > 0:
        y = 1
    else:
        pass
    return x + y


def multiline_end(x):
    return (x +
            1)  # fmt: skip


def nested_at_end(x):
    def inner(y):
        return y * 3

    return inner


def ends_with_nested(x):
    def inner(y):
        z = y + 1
        return z


@functools.lru_cache(maxsize=16)
def decorated(x):
    return x


def one_liner(x): return x + 1  # fmt: skip


class Holder:
    def method(self, x):
        return x * self.scale

    @staticmethod
    def static(x):
        return x


def string_end(x):
    s = """a
multi-line
string"""
    return s


def loop_else(x):
    for i in range(3):
        x = x + i
    else:
        x = x * 2
    return x


CASES = [
    plain,
    with_docstring,
    trailing_comment,
    trailing_pass,
    multiline_end,
    nested_at_end,
    ends_with_nested,
    decorated.__wrapped__,
    one_liner,
    Holder.method,
    Holder.static,
    string_end,
    loop_else,
    lambda x: x + 1,
]


@pytest.mark.parametrize("function", CASES, ids=lambda f: f.__qualname__)
def test_definition_parses_as_inspect_reads_it(function):
    lines, first, tree = read_definition(function)
    expected_lines, expected_first = inspect.getsourcelines(function)
    assert first == expected_first
    if function.__name__ == "<lambda>":
        assert lines == expected_lines and tree is None
        return
    assert tree is not None  # the fast way applied
    expected = ast.parse(textwrap.dedent("".join(expected_lines)))
    assert ast.dump(tree) == ast.dump(expected)


def test_functions_without_source_raise_as_inspect_does():
    namespace = {}
    exec(compile("def made(x):\n    return x\n", "<made>", "exec"), namespace)
    with pytest.raises(OSError):
        read_definition(namespace["made"])
    with pytest.raises(TypeError):
        read_definition(len)


class _WithoutColumns:
    """A code object as Python 3.10 has it: no ``co_positions``."""

    def __init__(self, code):
        self._code = code

    def __getattr__(self, name):
        if name == "co_positions":
            raise AttributeError(name)
        return getattr(self._code, name)


def test_of_two_lambdas_on_a_line_the_one_that_compiles_to_the_code_without_columns(
    monkeypatch,
):
    import numpy as np

    import s2sgrad as sg
    from s2sgrad.compiler.frontend import lambdas

    original, calls = lambdas.lambda_node, []

    def without_columns(source, code, *rest):
        calls.append(code)
        return original(source, _WithoutColumns(code), *rest)

    monkeypatch.setattr(lambdas, "lambda_node", without_columns)
    pair = (lambda x: x**3, lambda x: np.sin(x) * 2.0)
    derivatives = (lambda x: 3 * x**2, lambda x: 2.0 * np.cos(x))
    for function, derivative in zip(pair, derivatives):
        for mode in ("s2s", "auto"):
            gradient = sg.grad(function, mode=mode)
            for _ in range(2):
                assert gradient(0.7) == pytest.approx(derivative(0.7), rel=1e-12)
    assert calls  # the lambdas were found without columns


def test_a_lambda_inside_a_lambda_is_read_by_source():
    """The inner lambda's code sits, when compiled again to compare, in a wrapper that is
    also named ``<lambda>``: it is found by its qualified name, not taken for an edited file."""
    import warnings

    import numpy as np

    import s2sgrad as sg

    cube_slope = lambda a: sg.grad(lambda v: a * v**3, mode="s2s")(2.0)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isclose(cube_slope(1.5), 1.5 * 3 * 2.0**2)
        assert np.isclose(cube_slope(-1.0), -12.0)
