"""Functions made by helpers, generators and itertools iterators, differentiated by source.

A helper that returns a function it makes (the ``flatten`` idiom returning ``unflatten``)
is inlined where the differentiated function calls it, and the function it made then is a
nested one, inlined where it is called. A generator read whole (a loop over it, a
comprehension, ``sum``) runs before the statement that reads it, appending what it yields
to a list. ``itertools.product`` and its kin loop over the same function of indices. Each
is checked against central differences in every mode, on the first and second call, and
``auto`` must not fall back; what cannot be transformed is refused, and the tape follows it.
"""

import itertools
import warnings
from itertools import combinations, pairwise, permutations

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning

MODES = ["s2s", "tape", "auto"]
RNG = np.random.default_rng(23)


def check_gradient(f, args, mode, wrt=0):
    expected = numeric_grad(f, args, wrt)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        gradient = call_twice(sg.grad(f, wrt=wrt, mode=mode), *args)
    assert_close(gradient, expected, rtol=1e-5, atol=1e-7)


def check_hvp(f, x, mode):
    """The Hessian-vector product against differences of the tape's gradient."""
    v = RNG.normal(size=np.shape(x))
    (product,) = sg.hvp(f, (x,), (v,), mode=mode)
    gradient = sg.grad(f, mode="tape")
    expected = numeric_grad(lambda y: np.sum(gradient(y) * v), (x,), 0)
    assert_close(product, expected, rtol=1e-4, atol=1e-6)


# -- helpers returning functions --------------------------------------------------------


def flatten(p):
    return p.ravel(), (lambda v: v.reshape(p.shape))


def flatten_idiom(x):
    v, unflatten = flatten(x)
    return np.sum(np.sin(unflatten(v * 2.0)) * x)


def scaler(w):
    def scale(v):
        return v * w

    return scale


def returned_def(x):
    h = scaler(x)
    return np.sum(h(np.tanh(x)) ** 2)


def power_of(w, exponent=2):
    step = lambda v: v * np.exp(w)  # noqa: E731
    return step, exponent


def returned_named_lambda(x):
    step, exponent = power_of(x)
    return np.sum(step(x) ** exponent)


def made_twice(x):
    double = scaler(2.0 * x)
    triple = scaler(np.cos(x))
    return np.sum(double(x) * triple(x))


def captured_before_rebinding(x):
    h = scaler(x)
    x = x * 3.0
    return np.sum(h(x) ** 2)


def fed_into_another(x):
    h = scaler(x)
    g = scaler(h(np.sin(x)))
    return np.sum(g(x))


def pack(params):
    shapes = [np.shape(p) for p in params]
    flat = np.concatenate([np.ravel(p) for p in params])

    def unpack(v):
        out = []
        start = 0
        for shape in shapes:
            size = int(np.prod(shape))
            out.append(v[start : start + size].reshape(shape))
            start = start + size
        return out

    return flat, unpack


def packed_parameters(W, b):
    flat, unpack = pack([W, b])
    W2, b2 = unpack(flat * 1.5)
    return np.sum(np.tanh(W2 @ b2 + b2))


def called_where_made(x):
    total = 0.0
    for w in (1.0, 2.0):
        total = total + np.sum((lambda v: np.sin(v * w) * x)(x**2))
    return total


def made_in_each_pass(x):
    total = 0.0
    for w in (0.5, 1.0, 2.0):

        def scaled(v):
            return np.tanh(v * w) * x  # noqa: B023  # w as it is when called

        total = total + np.sum(scaled(x))
    return total


def called_a_pass_later(x):
    total = 0.0
    h = lambda v: v * 0.0  # noqa: E731
    for w in (0.5, 1.0, 2.0):
        total = total + np.sum(h(x) ** 2)  # made the pass before: reads w and x as they are now
        h = lambda v: np.sin(v * w) * x  # noqa: E731, B023
    return total


def bound_once_called_a_pass_later(x):
    total = 0.0
    for i in range(3):
        if i > 0:
            total = total + np.sum(np.cos(step(x)))  # noqa: F821  # made the pass before
        step = lambda v: v * x * (i + 1.0)  # noqa: E731, B023, F841  # reads i when called
    return total


CLOSURES = [
    (bound_once_called_a_pass_later, lambda: (RNG.normal(size=3),)),
    (made_in_each_pass, lambda: (RNG.normal(size=3),)),
    (called_where_made, lambda: (RNG.normal(size=3),)),
    (flatten_idiom, lambda: (RNG.normal(size=(2, 3)),)),
    (returned_def, lambda: (RNG.normal(size=3),)),
    (returned_named_lambda, lambda: (RNG.normal(size=3),)),
    (made_twice, lambda: (RNG.normal(size=4),)),
    (captured_before_rebinding, lambda: (RNG.normal(size=3),)),
    (fed_into_another, lambda: (RNG.normal(size=3),)),
    (packed_parameters, lambda: (RNG.normal(size=(3, 3)), RNG.normal(size=3))),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, make", CLOSURES, ids=[f.__name__ for f, _ in CLOSURES])
def test_functions_returned_by_helpers(f, make, mode):
    args = make()
    for wrt in range(len(args)):
        check_gradient(f, args, mode, wrt)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
@pytest.mark.parametrize("f", [flatten_idiom, returned_def, fed_into_another])
def test_second_order_through_functions_returned_by_helpers(f, mode):
    check_hvp(f, RNG.normal(size=3), mode)


def test_the_generated_code_inlines_the_returned_function():
    gradient = sg.grad(returned_def, mode="s2s")
    gradient(RNG.normal(size=3))
    code = sg.source(gradient)
    assert "def " not in code.split("\n", 1)[1]  # no function of its own: inlined
    assert "scaler" not in code.replace("# grad of: h = scaler(x)", "")


def kept_in_a_list(x):
    fs = [lambda v: v * x, np.sin]
    return np.sum(fs[0](x) + fs[1](x))


def passed_on(x):
    h = scaler(x)
    return np.sum(apply_to(h, x))


def apply_to(function, v):
    return function(v)


def made_in_a_loop(x):
    total = 0.0
    for i in range(2):
        h = scaler(x * i)
        total = total + np.sum(h(x))
    return total


@pytest.mark.parametrize("f", [kept_in_a_list, passed_on, made_in_a_loop, called_a_pass_later])
def test_functions_used_as_values_are_refused_and_taped(f):
    x = RNG.normal(size=3)
    with pytest.raises(sg.UnsupportedError, match=r"test_lambdas_and_iterators.py:\d+: "):
        sg.grad(f, mode="s2s")(x)
    with pytest.warns(FallbackWarning):
        gradient = sg.grad(f, mode="auto")(x)
    assert_close(gradient, numeric_grad(f, (x,), 0))


def test_a_lambda_kept_as_a_value_is_named_in_the_refusal():
    with pytest.raises(sg.UnsupportedError, match="a lambda that reads differentiated values"):
        sg.grad(kept_in_a_list, mode="s2s")(RNG.normal(size=3))


# -- generators read whole ----------------------------------------------------------------


def rows(x):
    for i in range(len(x)):
        yield x[i]


def layers(params):
    """A generator of (W, b) pairs, skipping the frozen ones."""
    for W, b, frozen in params:
        if not frozen:
            yield W, b


def loop_over_a_generator(x):
    total = 0.0
    for row in rows(x):
        total = total + np.sum(np.sin(row) * row)
    return total


def sum_of_a_generator(x):
    return np.sum(sum(rows(x * 2.0)) * x)


def comprehension_over_a_generator(x):
    return np.sum(np.stack([np.tanh(r) for r in rows(x)]) ** 2)


def enumerated_generator(x):
    total = 0.0
    for i, row in enumerate(rows(x)):
        total = total + (i + 1.0) * np.sum(row**2)
    return total


def zipped_generator(x, w):
    total = 0.0
    for row, k in zip(rows(x), w):
        total = total + np.sum(row * k)
    return total


def mlp_over_generated_layers(W1, b1, W2, b2, x):
    params = [(W1, b1, False), (W2, b2, False), (np.eye(2), np.zeros(2), True)]
    for W, b in layers(params):
        x = np.tanh(x @ W + b)
    return np.sum(x**2)


GENERATORS = [
    (loop_over_a_generator, lambda: (RNG.normal(size=(3, 2)),)),
    (sum_of_a_generator, lambda: (RNG.normal(size=(3, 3)),)),
    (comprehension_over_a_generator, lambda: (RNG.normal(size=(3, 2)),)),
    (enumerated_generator, lambda: (RNG.normal(size=(3, 2)),)),
    (
        mlp_over_generated_layers,
        lambda: (
            RNG.normal(size=(2, 2)),
            RNG.normal(size=2),
            RNG.normal(size=(2, 2)),
            RNG.normal(size=2),
            RNG.normal(size=(4, 2)),
        ),
    ),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, make", GENERATORS, ids=[f.__name__ for f, _ in GENERATORS])
def test_generators_read_whole(f, make, mode):
    args = make()
    for wrt in range(len(args)):
        check_gradient(f, args, mode, wrt)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_second_order_through_a_generator(mode):
    check_hvp(loop_over_a_generator, RNG.normal(size=(3, 2)), mode)


def stops_early(x):
    total = 0.0
    for row in rows(x):
        if np.sum(row) > 10.0:
            break
        total = total + np.sum(row**3)
    return total


def copied_rows(x):
    for i in range(len(x)):
        yield x[i] * 1.0


def changes_what_it_reads(x):
    x = x.copy()
    total = 0.0
    for row in copied_rows(x):
        total = total + np.sum(row**2)
        x[-1] = x[-1] * 2.0
    return total


@pytest.mark.parametrize("f", [stops_early, zipped_generator])
def test_a_generator_that_may_be_read_in_part_is_refused_and_taped(f):
    """Run first, a generator the loop stops reading early (at a ``break``, or where
    ``zip``'s other argument ends) might not end, or do more than Python does."""
    args = (RNG.normal(size=(3, 2)), RNG.normal(size=3))[: f.__code__.co_argcount]
    with pytest.raises(sg.UnsupportedError, match=r"rows\(\.\.\.\) makes an iterator"):
        sg.grad(f, mode="s2s")(*args)
    with pytest.warns(FallbackWarning):
        gradient = sg.grad(f, mode="auto")(*args)
    assert_close(gradient, numeric_grad(f, args, 0))


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_generator_reading_what_the_loop_changes_is_not_run_first(mode):
    """Run first, it would read the values before the loop changed them: it is left as
    it is, and refused by source transformation; mode "auto" takes the tape, which follows
    the change of what a row shares (tape/view_writes.py)."""
    x = RNG.normal(size=(3, 2))
    if mode == "auto":
        with pytest.warns(FallbackWarning):
            gradient = sg.grad(changes_what_it_reads, mode=mode)(x.copy())
        assert_close(gradient, numeric_grad(changes_what_it_reads, [x.copy()], 0))
        return
    with pytest.raises(sg.UnsupportedError, match=r"test_lambdas_and_iterators.py:\d+: "):
        sg.grad(changes_what_it_reads, mode=mode)(x)


# -- itertools iterators and other lazy loops ----------------------------------------------


def over_a_product(x):
    total = 0.0
    for a, b in itertools.product(x, x[::-1]):
        total = total + a * b**2
    return total


def over_a_repeated_product(x):
    return sum(a * b * np.sin(c) for a, b, c in itertools.product(x, repeat=3))


def over_combinations(x):
    return sum([a * np.sin(b) for a, b in combinations(x, 2)])


def over_pairs(x):
    total = 0.0
    for a, b in pairwise(x):
        total = total + (b - a) ** 2
    return total


def over_permutations(x):
    total = 0.0
    for pair in permutations(x, r=2):
        total = total + pair[0] * pair[1] ** 3
    return total


def over_combinations_with_replacement(xs):
    total = 0.0
    for a, b in itertools.combinations_with_replacement(xs, 2):
        total = total + np.sum(a * np.cos(b))
    return total


def over_a_map(x):
    total = 0.0
    for v in map(np.sin, x):
        total = total + v * v
    return total


def over_a_generator_expression(x):
    total = 0.0
    for v in (t * 2.0 for t in x):
        total = total + v**3
    return total


ITERATORS = [
    (over_a_product, lambda: (RNG.normal(size=3),)),
    (over_a_repeated_product, lambda: (RNG.normal(size=3),)),
    (over_combinations, lambda: (RNG.normal(size=4),)),
    (over_pairs, lambda: (RNG.normal(size=4),)),
    (over_permutations, lambda: (RNG.normal(size=3),)),
    (over_combinations_with_replacement, lambda: ([RNG.normal(size=2) for _ in range(3)],)),
    (over_a_map, lambda: (RNG.normal(size=3),)),
    (over_a_generator_expression, lambda: (RNG.normal(size=3),)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, make", ITERATORS, ids=[f.__name__ for f, _ in ITERATORS])
def test_lazy_iterators(f, make, mode):
    check_gradient(f, make(), mode)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_second_order_through_a_product(mode):
    check_hvp(over_a_product, RNG.normal(size=3), mode)


def over_permutations_of_any_length(x):
    total = 0.0
    for p in permutations(x):
        total = total + p[0] * p[-1] ** 2
    return total


def test_an_iterator_of_tuples_of_unknown_length_is_refused_and_taped():
    x = RNG.normal(size=3)
    with pytest.raises(sg.UnsupportedError, match=r"test_lambdas_and_iterators.py:\d+: "):
        sg.grad(over_permutations_of_any_length, mode="s2s")(x)
    with pytest.warns(FallbackWarning):
        gradient = sg.grad(over_permutations_of_any_length, mode="auto")(x)
    assert_close(gradient, numeric_grad(over_permutations_of_any_length, (x,), 0))


# -- lambdas whose statement starts on an earlier line ---------------------------------------

LISTED = [
    np.sin,
    lambda x: np.sum(x**2), lambda x: np.sum(np.sin(x) * x)]  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("position", [1, 2])
def test_lambdas_on_a_line_that_closes_a_list(position, mode):
    check_gradient(LISTED[position], (RNG.normal(size=3),), mode)


# -- fresh: the helpers inlined are read again at each call -----------------------------------


def _doubling(p):
    return p.ravel(), (lambda v: 2.0 * v.reshape(p.shape))


def _tripling(p):
    return p.ravel(), (lambda v: 3.0 * v.reshape(p.shape))


def _squares(x):
    for i in range(len(x)):
        yield x[i] ** 2


def _cubes(x):
    for i in range(len(x)):
        yield x[i] ** 3


maker = _doubling
generator = _squares


def through_a_global_maker(x):
    v, unflatten = maker(x)
    return np.sum(unflatten(v) ** 2)


def through_a_global_generator(x):
    return sum(generator(x))


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_rebound_helper_is_seen(mode):
    global maker, generator
    x = RNG.normal(size=3)
    grad_maker = sg.grad(through_a_global_maker, mode=mode)
    grad_generator = sg.grad(through_a_global_generator, mode=mode)
    try:
        assert_close(grad_maker(x), 8.0 * x)
        assert_close(grad_generator(x), 2.0 * x)
        maker, generator = _tripling, _cubes
        assert_close(grad_maker(x), 18.0 * x)
        assert_close(grad_generator(x), 3.0 * x**2)
    finally:
        maker, generator = _doubling, _squares


def _pick(first=None, second=None):
    return first, second


# lambdas as entries of a dict display and as keyword arguments of a call spread over
# lines: the line of each is not Python alone, and s2s refused them ("could not isolate the
# lambda's source"), as it would a table of test functions
LAMBDA_TABLE = {
    "sine": lambda x: np.sum(np.sin(x) * x),
    "cube": lambda y: np.sum(y**3) * 0.5,
}
LAMBDA_KEYWORDS = _pick(
    first=lambda x: np.sum(np.cos(x) * x),
    second=lambda v: np.sum(np.exp(-v * v)),
)


@pytest.mark.parametrize(
    "f",
    [*LAMBDA_TABLE.values(), *LAMBDA_KEYWORDS],
    ids=["dict-sine", "dict-cube", "keyword-first", "keyword-second"],
)
def test_lambdas_in_dict_displays_and_keyword_arguments_are_transformed(f):
    x = np.array([0.3, -0.8, 1.4])
    assert_close(call_twice(sg.grad(f, mode="s2s"), x), numeric_grad(f, (x,), 0))
