"""Random NumPy programs, differentiated by both engines and checked by finite differences.

Hypothesis writes small functions out of assignments, augmented assignments, tuple
unpacking, branches (on shapes and on values, with ``elif``), ``for`` loops (over ranges
and over arrays, with ``break`` and ``continue``), ``while`` loops, lists, dicts,
comprehensions, writes into an array made in the function, calls to helpers (with
keywords and starred arguments), nested ``def``s and lambdas, loops over ``itertools``
iterators and generators, and lists of layer tuples read through slices, ``zip``,
``reversed``, concatenation, nested and starred unpacking and ``dict.items()``, over
arguments whose shapes broadcast against each other. Each function is
written to a module (the source transformer reads source), and its gradient is checked
against central differences in float64: the first call (which runs the specialisation
probe), the second call (which runs the code specialised to these shapes), and the tape
(which refuses item writes, by design).
"""

import importlib.util
import itertools
import os
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from oracle import directional_derivative, richardson, richardson_gradients

import s2sgrad as sg

SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((2, 1), (1, 3)),
    ((2, 3), ()),
    ((), (4,)),
    ((2, 3), (2, 3)),
    ((3, 1, 2), (4, 1)),
]

# smooth everywhere on the values these programs make (no kinks, no poles)
UNARY = [
    "np.sin({a})",
    "np.tanh({a})",
    "np.exp(np.tanh({a}))",
    "{a} ** 2",
    "np.sqrt(1.0 + {a} ** 2)",
    "-{a}",
    "np.log1p({a} ** 2)",
    "np.cos({a}) * 0.5",
    "np.square({a}) - {a}",
    "helper({a}, 0.5)",
    "np.sum({a}, axis=-1, keepdims=True)",
    "np.mean({a})",
    "np.sum({a} * {a}) / 4",
    "np.exp(-np.tanh({a}) ** 2)",
    "{a}.sum(axis=-1, keepdims=True) * 0.5",
    "np.max({a}, axis=-1, keepdims=True)",
    "np.flip({a}, axis=-1) if np.ndim({a}) else {a}",
    "{a}[..., ::-1] * 2.0",
    "np.cumsum({a}, axis=-1)",
    "twice({a})[1]",
    "np.linalg.norm({a} + 3.0)",
    "np.prod(1.0 + 0.1 * {a})",
    "np.clip({a}, -10.0, 10.0)",
    "{a}.T.T * 1.5",
    "np.reshape({a}, np.shape({a})) ** 2",
    "{a}.ravel().sum() + {a}",
    "np.abs({a} + 2.0) ** 0.5",
]
BINARY = [
    "{a} + {b}",
    "{a} - {b}",
    "{a} * {b}",
    "{a} / (1.5 + np.tanh({b}))",
    "np.hypot(1.0 + {a} ** 2, {b})",
    "np.arctan2({a}, 2.0 + {b} ** 2)",
    "2.0 * {a} - {b} * 0.25",
    "helper({a}, {b})",
    "np.where({b} > 0, {a} * {b}, {a})",
    "np.maximum({a}, {b} + 0.25)",
    "np.stack([{a} * 1.0, {b} * 1.0])[0]",
    "np.concatenate([{a} * 1.0, {b} * 1.0], axis=-1)[..., :1]",
]
HELPER = """
def helper(a, b):
    return a * np.sin(b) + 0.5 * a


def twice(a):
    return a * 2.0, np.sin(a)
"""


# statements that define {name}: {e1} {e2} are expressions, {o1} {o2} names, {n} a count
STATEMENTS = {
    "assign": ["{name} = {e1}"],
    "if": ["if {o1}.ndim > 1:", "    {name} = {e1}", "else:", "    {name} = {e2}"],
    "branch": [  # on values: the path taken is the path differentiated
        "if np.sum({o1}) > 0.5:",
        "    {name} = {e1}",
        "else:",
        "    {name} = {e2} * 0.5",
    ],
    "loop": [
        "{name} = {o1} * 1.0",
        "for i in range({n}):",
        "    {name} = {name} * 0.5 + np.sin({o2}) * (i + 1)",
    ],
    "while": [
        "{name} = {o1} * 1.0",
        "k = 0",
        "while k < {n}:",
        "    {name} = np.tanh({name}) + {o2} * (0.5 + 0.1 * k)",
        "    k += 1",
    ],
    "count": [  # constant work that overwrites k, which a while loop's backward reads
        "k = 0",
        "while k < {n} + 2:",
        "    k += 1",
        "{name} = {o1} * k",
    ],
    "flag": [
        "if np.sum({o1}) > 0:",
        "    k = -1",
        "{name} = {o2} * 1.0",
    ],
    "list": ["parts = [{e1}, {e2}]", "{name} = parts[0] * parts[1] + parts[0]"],
    "dict": ["d = {{'p': {e1}, 'q': {e2}}}", "{name} = d['p'] * d['q'] + d['p']"],
    "item": [  # writing into an array made here
        "{name} = np.zeros_like({o1} * 1.0)",
        "if np.ndim({name}) > 0:",
        "    {name}[0] = np.tanh(np.sum({o2} ** 2))",
        "{name} = {name} + {o1}",
    ],
    "slice": [
        "{name} = np.ones_like({o1}) * {e1}",
        "if np.ndim({name}) > 0:",
        "    {name}[..., :1] = np.tanh({name}[..., -1:]) * 2.0",
    ],
    "repeats": [  # an index that writes an element twice: NumPy keeps the last write
        "{name} = np.ones_like({o1}) * {e1}",
        "if np.ndim({name}) > 0:",
        "    {name}[[0, -1, 0]] = np.tanh(np.sum({o2}))",
    ],
    "rows": [  # a for loop over an array's first axis
        "{name} = 0.0",
        "for row in np.atleast_1d({e1}):",
        "    {name} = {name} + np.sin(row) * {o2}",
    ],
    "comprehension": [
        "{name} = sum([np.tanh(r) * (k + 1.0) for k, r in enumerate(np.atleast_1d({e1}))])",
    ],
    "break": [  # a loop that stops early on a value
        "{name} = {o1} * 1.0",
        "for i in range({n} + 1):",
        "    if np.sum({name}) > 2.0:",
        "        break",
        "    {name} = {name} + np.exp(np.tanh({o2})) * 0.5",
    ],
    "continue": [
        "{name} = {e1} * 1.0",
        "for i in range({n} + 1):",
        "    if i % 2 == 1:",
        "        continue",
        "    {name} = np.sin({name}) * {o2}",
    ],
    "keywords": ["{name} = helper(b={o1}, a={e1}) + twice(a={o2})[0]"],
    # parameters read out of lists of layer tuples, unpacked, and spread into calls (new
    # arrays in the lists: an array written in place and kept in a list makes the alias
    # analysis refuse the hvp of the generated gradient)
    "layers": [
        "layers = [({e1}, {o1} * 0.5), ({e2}, {o2} * 1.0), ({o1} * 0.25, {o2} * 1.5)]",
        "{name} = {o1} * 1.0",
        "for w, b in layers[:-1]:",
        "    {name} = np.tanh({name} * w + b)",
        "w, b = layers[-1]",
        "{name} = {name} * w + b",
    ],
    "layer_pairs": [
        "layers = [({e1}, {o1} * 1.5), ({e2}, {o2} * 0.5), ({o2} * 0.5, {o1} * 0.25)]",
        "{name} = {o2} * 1.0",
        "for (w1, b1), (w2, b2) in zip(layers[:-1], layers[1:]):",
        "    {name} = np.sin({name} * w1 + b2) * 0.5 + w2 * b1",
    ],
    "reversed_layers": [
        "layers = [({e1}, {o1} * 1.5), ({e2}, {o2} * 0.5)]",
        "{name} = {o1} * 1.0",
        "for i, (w, b) in enumerate(reversed(layers)):",
        "    {name} = np.tanh({name} * w) + b * (i + 1.0)",
    ],
    "joined_layers": [
        "more = [({e1}, {o1} * 1.5)] + [({e2}, {o2} * 0.5)]",
        "{name} = {o1} * 0.5",
        "for w, b in more[1:] + more[:1]:",
        "    {name} = {name} + np.sin(w) * b",
    ],
    "nested": ["nest = (({e1}, {o1} * 2.0), {e2})", "(p, q), s = nest", "{name} = p * q + s"],
    "starred": ["group = [{e1}, {o2} * 0.5]", "{name} = helper(*group) + np.add(*group)"],
    "star_target": [
        "first, *others = [{e1}, {o1} * 0.5, {o2} + 1.0]",
        "{name} = first * np.sum(others[0]) + others[-1]",
    ],
    "dict_items": [
        "table = {{'u': {e1}, 'v': {o2} * 2.0}}",
        "{name} = {o1} * 0.0",
        "for key, value in table.items():",
        "    {name} = {name} + np.cos(value) * len(key)",
    ],
    "nested_def": [
        "def cell_{name}(h, s):",
        "    out = np.tanh(h * s) + {o2} * 0.5",
        "    for _ in range({n}):",
        "        out = out * 0.5 + np.sin(out)",
        "    if np.sum(out) > 100.0:",
        "        return out",
        "    return out * 2.0",
        "{name} = cell_{name}({o1} * 1.0, 0.5)",
        "{name} = cell_{name}({name}, s={e1})",
    ],
    "lambda": [
        "scale_{name} = lambda a, *rest: a * rest[0] + {o2}",
        "{name} = scale_{name}({e1}, 0.5) + scale_{name}({o1}, {o2})",
    ],
    "iterators": [
        "{name} = {o1} * 0.5",
        "for i, j in itertools.product(range({n}), range(2)):",
        "    {name} = {name} + np.sin({e1} * (i - j))",
        "for part in (np.cos({o2} * k) for k in range({n})):",
        "    {name} = {name} + part",
    ],
    "elif": [
        "if np.sum({o1}) > 1.0:",
        "    {name} = {e1}",
        "elif np.sum({o1}) > -1.0:",
        "    {name} = {e2} * {o2}",
        "else:",
        "    {name} = {o2} * 1.0",
    ],
}


@st.composite
def programs(draw):
    """The source of ``f(x, y)`` and the shapes of ``x`` and ``y``."""
    shapes = draw(st.sampled_from(SHAPES))
    names = ["x", "y"]
    lines = []
    counter = itertools.count()

    def operand():
        return draw(st.sampled_from(names))

    def expression():
        if draw(st.booleans()):
            return draw(st.sampled_from(UNARY)).format(a=operand())
        return draw(st.sampled_from(BINARY)).format(a=operand(), b=operand())

    kinds = ["assign", "assign", "augment", "unpack", *STATEMENTS]
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(kinds))
        if kind == "augment" and len(names) > 2:
            target = draw(st.sampled_from(names[2:]))
            operator = draw(st.sampled_from(["+=", "-=", "*="]))
            lines.append(f"{target} {operator} np.tanh({operand()})")
        elif kind == "unpack":
            first, second = f"v{next(counter)}", f"v{next(counter)}"
            lines.append(f"{first}, {second} = {expression()}, {expression()}")
            names += [first, second]
        elif kind in STATEMENTS:
            name = f"v{next(counter)}"
            parts = dict(e1=expression(), e2=expression(), o1=operand(), o2=operand())
            count = draw(st.integers(1, 3))
            lines += [line.format(name=name, n=count, **parts) for line in STATEMENTS[kind]]
            names.append(name)
    used = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
    total = " + ".join(f"np.sum(np.sin({n}) * {i + 1.0})" for i, n in enumerate(used))
    lines.append(f"return {total} + 0.01 * np.sum(x) * np.sum(y)")
    body = textwrap.indent("\n".join(lines), "    ")
    return f"import itertools\n\nimport numpy as np\n{HELPER}\n\ndef f(x, y):\n{body}\n", shapes


_MODULE_NUMBERS = itertools.count()


def _load(source: str, directory):
    path = directory / f"random_program_{next(_MODULE_NUMBERS)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    return tmp_path_factory.mktemp("random_programs")


def _examples(share: int = 1):
    """Hypothesis settings: 60 fixed programs (divided by ``share``), or as many random ones
    as $RANDOM_PROGRAMS says."""
    return settings(
        max_examples=int(os.environ.get("RANDOM_PROGRAMS", 60)) // share,
        deadline=None,
        derandomize="RANDOM_PROGRAMS" not in os.environ,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def _instance(program, seed: int, directory):
    """``(source, f, x, y, rng)`` for a generated program; programs whose shapes do not go
    together, or whose value is not a finite number, are skipped."""
    source, (x_shape, y_shape) = program
    note(source)  # shown with any failure, the flaky ones included
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, size=x_shape)
    y = rng.uniform(-1.5, 1.5, size=y_shape)
    f = _load(source, directory)
    try:
        value = f(x, y)
    except (ValueError, IndexError):  # shapes that do not broadcast, say
        assume(False)
    assume(np.ndim(value) == 0 and np.isfinite(value))
    return source, f, x, y, rng


def _differentiated(transform):
    """``transform()``, skipping programs refused for updating shared arrays in place."""
    try:
        return transform()
    except sg.UnsupportedError as error:
        assume("share memory" not in str(error))
        raise


@_examples()
@given(program=programs(), seed=st.integers(0, 2**16))
def test_gradients_of_random_programs_match_finite_differences(program, seed, directory):
    source, f, x, y, _ = _instance(program, seed, directory)
    expected = richardson_gradients(f, x, y)
    # differences with a step of 1e-5 cannot judge a gradient this steep (sin of 1e5, say)
    assume(all(np.all(np.abs(want) < 1e4) for want, _ in expected))
    x_before, y_before = x.copy(), y.copy()
    # with respect to x alone, code that only y reaches differentiates to nothing
    cases = [*itertools.product(("s2s", "tape"), ("first", "second"), ((0, 1),))]
    cases += [("s2s", "first", (0,)), ("s2s", "second", (0,))]
    for mode, call, wrt in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no quiet fallback from s2s to the tape
            try:
                gradients = _differentiated(lambda m=mode, w=wrt: sg.grad(f, w, mode=m)(x, y))
            except (sg.NonDifferentiableError, TypeError) as error:  # the tape: item writes
                assert mode == "tape" and "mode='s2s'" in str(error), source
                continue
        for got, (want, error), name in zip(gradients, expected, "xy"):
            assert np.shape(got) == np.shape(want), (mode, call, name, source)
            tolerance = 1e-6 + 1e-6 * np.abs(want) + 10 * error
            assert np.all(np.abs(got - want) <= tolerance), (
                f"{mode} {call} d{name}: {got} against {want}\n{source}"
            )
    np.testing.assert_array_equal(x, x_before)  # inputs are never changed
    np.testing.assert_array_equal(y, y_before)


@_examples(share=3)
@given(program=programs(), seed=st.integers(0, 2**16))
def test_second_derivatives_of_random_programs_match_differences_of_gradients(
    program, seed, directory
):
    """Forward mode over the generated gradient (hvp) and the batched Hessian, against
    central differences of the gradient (itself checked by the test above)."""
    source, f, x, y, rng = _instance(program, seed, directory)
    gradient = sg.grad(f, wrt=(0, 1), mode="s2s")
    _differentiated(lambda: gradient(x, y))
    along = (rng.normal(size=x.shape), rng.normal(size=y.shape))

    def directional(step):
        return directional_derivative(lambda xy: gradient(*xy), (x, y), along, step=step)

    expected = richardson(directional(1e-5), directional(5e-6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        products = sg.hvp(f, (x, y), along, mode="s2s")
        hessian_xx = sg.hessian(f, wrt=0, mode="s2s")(x, y)
    for got, (want, error), name in zip(products, expected, "xy"):
        tolerance = 1e-5 + 1e-5 * np.abs(want) + 10 * error
        assert np.all(np.abs(got - want) <= tolerance), f"hvp d{name}: {got} vs {want}\n{source}"
    # the x block of the Hessian, applied to the x part of the direction alone
    only_x = sg.hvp(f, (x, y), (along[0], np.zeros(y.shape)), mode="s2s")[0]
    contracted = np.tensordot(hessian_xx, along[0], axes=np.ndim(along[0]))
    np.testing.assert_allclose(contracted, only_x, rtol=1e-6, atol=1e-6, err_msg=source)
