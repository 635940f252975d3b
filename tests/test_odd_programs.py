"""No internal exception reaches a user: a corpus of odd but legal Python functions, one or
more per statement and expression kind, goes through ``sg.grad`` in every mode. Each
outcome is a correct gradient (against central differences), or an ``S2SGradError`` whose
message names this file; never any other exception."""

from __future__ import annotations

import contextlib
import functools
import math
import sys
import warnings

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg

MODES = ["auto", "s2s", "tape"]
COUNTER = 0
CACHE = None
SCALE = 1.5
CORPUS = []


def corpus(f):
    CORPUS.append(f)
    return f


class Box:
    pass


BOX = Box()
BOX.v = 0.0


def doubled(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return 2.0 * function(*args, **kwargs)

    return wrapper


@doubled
def decorated_helper(t):
    return np.sin(t)


@corpus
def global_counter(x):
    global COUNTER
    COUNTER += 1
    return np.sum(x**2) * SCALE


@corpus
def global_array(x):
    global CACHE
    CACHE = x * 2.0
    return np.sum(CACHE * x)


@corpus
def nonlocal_counter(x):
    count = 0

    def bump():
        nonlocal count
        count += 1

    bump()
    return np.sum(x) * (count + 1)


@corpus
def try_except_finally(x):
    try:
        y = np.sin(x)
    except ValueError:
        y = x
    finally:
        z = 2.0
    return np.sum(y * z)


@corpus
def caught_exception(x):
    try:
        y = x[10]
    except IndexError:
        y = x * 3.0
    return np.sum(y)


@corpus
def return_inside_try(x):
    try:
        return np.sum(np.sin(x))
    finally:
        pass


@corpus
def with_statement(x):
    with contextlib.suppress(KeyError):
        y = x * 2.0
    return np.sum(y**2)


@corpus
def asserts(x):
    assert x.shape == (3,), "three values"
    return np.sum(np.exp(x))


@corpus
def raise_not_taken(x):
    if np.any(np.isnan(x)):
        raise ValueError("nan")
    return np.sum(x**3)


@corpus
def walrus(x):
    if (total := np.sum(x)) > -100.0:
        return total * 2.0
    return total


@corpus
def f_strings(x):
    label = f"{len(x)} values, first {x[0]:.2f}"
    return np.sum(x) * len(label.split())


@corpus
def set_and_dict_comprehensions(x):
    sizes = {i % 2 for i in range(len(x))}
    squares = {i: x[i] ** 2 for i in range(len(x))}
    return squares[0] + squares[2] * len(sizes)


@corpus
def list_comprehension_with_condition(x):
    return sum([x[i] * i if i > 0 else -x[i] for i in range(3)])


@corpus
def generator_expression(x):
    return sum(np.sin(x[i]) for i in range(3))


@corpus
def starred_unpacking(x):
    first, *rest = x
    return first * np.sum(np.stack(rest))


@corpus
def starred_arguments(x):
    pair = [x, x * 2.0]
    return np.sum(np.maximum(*pair)) + np.sum(np.stack([*x, *x]) ** 2)


@corpus
def lambdas(x):
    cube = lambda t: t**3  # noqa: E731
    order = sorted(range(3), key=lambda i: -i)
    return np.sum(cube(x)) + x[order[0]]


@corpus
def inner_generator(x):
    def values():
        yield x
        yield from [x * 2.0, x * 3.0]

    return np.sum(sum(values()))


@corpus
def match_statement(x):
    match len(x):
        case 3:
            y = x * 2.0
        case _:
            y = x
    match "sum":
        case "sum" | "total":
            return np.sum(y)
    return np.max(y)


@corpus
def slices_with_steps(x):
    return np.sum(x[::2] * 3.0) + np.sum(x[::-1] * x) + np.sum(x[1::2] ** 2) + x[...][0]


@corpus
def chained_comparisons(x):
    if 0 < len(x) < 5 <= 5:
        return np.sum(x**2)
    return np.sum(x)


@corpus
def conditional_expressions(x):
    y = x * 2.0 if np.sum(x) > 0 else x * 3.0
    return np.sum(y * (1.0 if len(x) == 3 else 2.0))


@corpus
def deletes(x):
    y = x * 2.0
    z = np.sin(y)
    del y
    return np.sum(z)


@corpus
def augmented_attribute_assignment(x):
    box = Box()
    box.v = 0.0
    box.v += np.sum(x**2)
    return box.v


@corpus
def augmented_global_attribute(x):
    BOX.v = 1.0
    BOX.v *= 2.0
    return np.sum(x) * BOX.v


@corpus
def decorated_helper_call(x):
    return np.sum(decorated_helper(x))


@corpus
@doubled
def decorated_itself(x):
    return np.sum(x**2)


@corpus
def default_arguments(x, scale=2.0, power=3):
    return np.sum(x**power) * scale


@corpus
def keyword_only_arguments(x, *, scale=2.0):
    return np.sum(np.tanh(x)) * scale


@corpus
def star_args(*args):
    return np.sum(np.tanh(args[0]))


@corpus
def star_star_kwargs(x, **options):
    return np.sum(x**2) * options.get("scale", 1.0)


@corpus
def loops_with_else(x):
    total = 0.0
    for i in range(len(x)):
        if i > 5:
            break
        total = total + x[i] ** 2
    else:
        total = total * 2.0
    while total > 1e6:
        total = total / 2.0
    else:
        total = total + 1.0
    return total


@corpus
def early_return_in_loop(x):
    for i in range(len(x)):
        if i == 1:
            return np.sum(x[: i + 1] ** 2)
    return np.sum(x)


@corpus
def nested_closure(x):
    scale = 2.0

    def inner(t):
        return np.sin(t) * scale

    return np.sum(inner(x))


@corpus
def local_class(x):
    class Point:
        def __init__(self, value):
            self.value = value

    return np.sum(Point(x).value ** 2)


@corpus
def annotations(x):
    y: np.ndarray = x * 2.0
    n: int  # noqa: F842
    return np.sum(y**2)


@corpus
def tuple_swap(x):
    a, b = x * 2.0, x * 3.0
    a, b = b, a
    return np.sum(a - b * 2.0)


@corpus
def isinstance_checks(x):
    if isinstance(x, np.ndarray) and type(x) is np.ndarray:
        return np.sum(x.T @ x)
    return np.sum(x)


@corpus
def newaxis_and_ellipsis(x):
    return np.sum(x[:, np.newaxis] * x[np.newaxis, ...])


@corpus
def dict_iteration(x):
    parts = {"a": x, "b": x * 2.0}
    total = 0.0
    for key in parts:
        total = total + np.sum(parts[key] ** 2)
    return total


@corpus
def sorted_dict_iteration(x):
    parts = {"b": x * 2.0, "a": x}
    total = 0.0
    for key in sorted(parts):
        total = total + np.sum(parts[key] ** 3)
    return total


@corpus
def dict_items_iteration(x):
    parts = {"a": x, "b": x * 2.0}
    total = 0.0
    for _, value in parts.items():
        total = total + np.sum(value**2)
    return total


@corpus
def dict_keys_iteration(x):
    parts = {"a": x, "b": x * 2.0}
    total = 0.0
    for key in parts.keys():  # noqa: SIM118
        total = total + np.sum(parts[key] ** 2)
    return total


@corpus
def list_slice_assignment(x):
    parts = [x, x, x]
    parts[1:] = [x * 2.0, x * 3.0]
    return np.sum(parts[0] + parts[1] * parts[2])


@corpus
def augmented_item_assignment(x):
    y = np.zeros(3)
    y[0] += x[1] * 2.0
    y[1:] -= x[:2]
    return np.sum(y**2)


@corpus
def floor_and_modulo(x):
    return np.sum((x * 10.0 + 0.5) // 1.0 + x % 1.0 + abs(x) + divmod(3, 2)[0] * x)


@corpus
def python_builtins_on_scalars(x):
    return max(x[0], x[1]) + min(x[1], x[2]) + sum([x[0], x[2]]) + float(len(x))


@corpus
def math_on_constants(x):
    return np.sum(x) * math.sqrt(4.0) + math.pi


@corpus
def math_on_a_differentiated_value(x):
    return math.sin(x[0])


@corpus
def formatted_differentiated_value(x):
    text = f"{np.sum(x):.3f}"
    return np.sum(x**2) + len(text) * 0.0


@corpus
def boolean_masks(x):
    return np.sum(np.where(x > 0, x**2, -x)) + np.sum(x[x > -10.0])


@corpus
def string_operations(x):
    name = "abc".upper() + str(len(x))
    return np.sum(x) * len(name)


@corpus
def bytes_and_complex(x):
    data = b"xy"
    z = complex(1.0, 2.0)
    return np.sum(x) * len(data) * z.real


@corpus
def nested_functions_with_defaults(x):
    def scaled(t, factor=3.0, *, shift=0.0):
        return t * factor + shift

    return np.sum(scaled(x, shift=1.0) ** 2)


@corpus
def print_statement(x):
    print("value", file=sys.stderr, end="")
    return np.sum(x**2)


@corpus
def pass_and_ellipsis(x):
    pass
    ...
    return np.sum(x)


async def _coroutine(x):
    return x


@corpus
async def async_function(x):
    return np.sum(x**2)


@corpus
def generator_function(x):
    yield np.sum(x**2)


@corpus
def creates_a_coroutine(x):
    coroutine = _coroutine(x)
    coroutine.close()
    return np.sum(x**2)


@corpus
def lambda_default_capture(x):
    functions = [lambda t, k=k: t * k for k in range(1, 3)]
    return np.sum(functions[0](x) + functions[1](x))


@corpus
def attribute_of_a_local_object(x):
    box = Box()
    box.h = 2.0 * x
    return np.sum(box.h)


@corpus
def walrus_in_comprehension(x):
    return sum([(y := x[i] * 2.0) * y for i in range(3)])


@corpus
def global_read_after_write_elsewhere(x):
    return np.sum(x) * (COUNTER * 0.0 + 1.0)


def _gradient_or_error(f, mode, x):
    """The gradient of f at x (called twice), or the S2SGradError it raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        try:
            gradient = sg.grad(f, mode=mode)
            first = gradient(x.copy())
            second = gradient(x.copy())
        except sg.S2SGradError as error:
            return error
    np.testing.assert_allclose(first, second, rtol=1e-12, atol=0)
    return second


# Known wrong answers, each a bug to fix (strict: the test fails once it is fixed).
KNOWN_WRONG: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", CORPUS, ids=[f.__name__ for f in CORPUS])
def test_a_correct_gradient_or_a_clear_error(f, mode, request):
    reason = KNOWN_WRONG.get((f.__name__, mode))
    if reason is not None:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
    x = np.random.default_rng(len(f.__name__)).uniform(0.2, 0.9, size=3)
    outcome = _gradient_or_error(f, mode, x)  # any other exception fails the test
    if isinstance(outcome, sg.S2SGradError):
        assert __file__ in str(outcome), f"the error does not name this file: {outcome}"
        return
    with contextlib.redirect_stderr(None):
        expected = numeric_grad(f, (x,), 0)
    np.testing.assert_allclose(outcome, expected, rtol=1e-5, atol=1e-6)
