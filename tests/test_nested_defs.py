"""Nested ``def``s and lambdas inside the differentiated function, loops over iterators,
and what cannot be transformed refused at transform time.

A nested function bound once and only called is inlined where it is called (its
variables renamed apart, each ``return`` an assignment of the call's value), so the
values it captures are differentiated like any other: by source, with no fallback.
"""

import itertools
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning

MODES = ["s2s", "tape", "auto"]
RNG = np.random.default_rng(19)


def check_gradient(f, args, wrt=0, mode="s2s"):
    """First and second call against central differences; ``auto`` must not fall back."""
    expected = numeric_grad(f, args, wrt)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        gradient = call_twice(sg.grad(f, wrt=wrt, mode=mode), *args)
    assert_close(gradient, expected, rtol=1e-5, atol=1e-7)


def check_hvp(f, x, v, mode="s2s"):
    """The Hessian-vector product against differences of the gradient."""
    (product,) = sg.hvp(f, (x,), (v,), mode=mode)
    gradient = sg.grad(f, mode="tape")
    expected = numeric_grad(lambda y: np.sum(gradient(y) * v), (x,), 0)
    assert_close(product, expected, rtol=1e-4, atol=1e-6)


# --------------------------------------------------------------------------------------
# nested defs


def rnn_loss(W, xs):
    def cell(h, x):
        pre = x @ W[:2] + h @ W[2:]
        for _ in range(2):  # a loop inside the cell
            pre = pre + 0.1 * np.sin(pre)
        h = np.tanh(pre)
        return h

    h = np.zeros(3)
    for x in xs:
        h = cell(h, x)
    return np.sum(h**2)


def lstm_loss(W, xs):
    def sigmoid(z):
        return 0.5 * (np.tanh(z / 2) + 1)

    def update(h, c, x):  # calls another nested def, returns a tuple
        z = x @ W[:2] + h @ W[2:]
        c = sigmoid(z[:3]) * c + sigmoid(z[3:6]) * np.tanh(z[6:])
        h = np.tanh(c)
        return h, c

    h = c = np.zeros(3)
    for x in xs:
        h, c = update(h, c, x)
    return np.sum(h) + np.sum(c**2)


def early_returns(w, x):
    def piece(v):
        if np.sum(v) > 0:
            return np.sin(v * w)
        scaled = v * 2
        if scaled[0] > 10.0:
            return scaled
        return np.cos(scaled) * w

    return np.sum(piece(x)) + np.sum(piece(-x))


def called_on_its_own_result(w, x):
    def step(v):
        out = np.sin(v * w)
        return out + v

    return np.sum(step(step(x)) * step(x))


def defined_before_what_it_calls(w, x):
    def outer(v):
        return inner(v) * w + v

    def inner(v):
        total = v
        for k in range(3):
            total = total + np.exp(-v * w * k)
        return total

    return np.sum(outer(x))


def appends_instead_of_returning(w, x):
    out = []

    def add(v):
        """A docstring, then no return."""
        out.append(np.tanh(v * w))

    add(x)
    add(2 * x)
    return np.sum(out[0] * out[1])


def a_parameter_named_like_a_captured_value(w, x):
    def scaled(v):
        return v * w

    def outer(w):  # its own w: scaled() reads the enclosing one
        t = scaled(w)
        return t + w

    return np.sum(outer(x) * w)


def mapped_over_a_list(w, xs):
    def cell(x):
        y = np.tanh(x * w)
        return np.sum(y)

    return sum(map(cell, xs))


def mapped_with_loops_inside(w, xs):
    def cell(x):
        total = 0.0
        for row in x:  # lowered to an index loop once the body is inlined in map's loop
            total = total + np.sum(np.sin(row * w))
        parts = [np.cos(r * w) for r in x]
        return total + np.sum(parts[0])

    return sum(map(cell, xs))


def comprehension_inside(w, x):
    def f(v):
        parts = [np.sin(v * k) for k in range(3)]
        return sum(parts) * w

    return np.sum(f(x))


def keyword_calls(w, x):
    def cell(h, x, scale):
        y = np.tanh(h * w) * scale
        return y + x

    def one(v, s):
        return v * s * w

    h = np.zeros(3)
    h = cell(h, x=x, scale=2.0)
    h = cell(scale=0.5, h=h, x=np.sin(x))
    return np.sum(h) + np.sum(one(s=w, v=x))


def with_defaults(w, x):
    scale = 3.0

    def cell(h, s=0.5, act=np.tanh, shift=scale * w):
        y = act(h * s) + shift
        return y

    scale = 100.0  # the default was computed where cell was made
    return np.sum(cell(x) * cell(x, 2.0) + cell(x, act=np.sin)) + scale


def a_tuple_argument(w, x):
    f = lambda t: t[0] * t[1] * w  # noqa: E731
    return np.sum(f((x, np.sin(x))))


def lstm_with_gates_inside_the_cell(W, xs):
    """A helper defined inside a nested def (a gate inside the cell), itself holding a
    lambda: inlined innermost first."""

    def cell(h, x):
        both = np.concatenate([h, x])

        def gate(k):
            squash = lambda z: 0.5 * (np.tanh(z / 2) + 1)  # noqa: E731
            return squash(W[:, 3 * k : 3 * k + 3].T @ both)

        remember, keep = gate(0), gate(1)
        return np.tanh(remember * h + keep * np.sin(both[:3]))

    h = np.zeros(3)
    for x in xs:
        h = cell(h, x)
    return np.sum(h**2)


def three_levels(w, x):
    def outer(v):
        def middle(u):
            def inner(t):
                return np.sin(t * w)

            return inner(u) + u * w

        return middle(v) * middle(v * 0.5)

    return np.sum(outer(x))


NESTED = [
    (
        lstm_with_gates_inside_the_cell,
        lambda: (RNG.normal(size=(5, 6)) * 0.5, RNG.normal(size=(3, 2))),
    ),
    (three_levels, lambda: (RNG.normal(size=3), RNG.normal(size=3))),
    (rnn_loss, lambda: (RNG.normal(size=(5, 3)) * 0.5, RNG.normal(size=(4, 2)))),
    (lstm_loss, lambda: (RNG.normal(size=(5, 9)) * 0.5, RNG.normal(size=(3, 2)))),
    (early_returns, lambda: (RNG.normal(size=3), RNG.normal(size=3))),
    (called_on_its_own_result, lambda: (RNG.normal(size=3), RNG.normal(size=3))),
    (defined_before_what_it_calls, lambda: (RNG.normal(size=3), RNG.normal(size=3))),
    (appends_instead_of_returning, lambda: (RNG.normal(size=3), RNG.normal(size=3))),
    (a_parameter_named_like_a_captured_value, lambda: (RNG.normal(size=3), RNG.normal(size=3))),
    (mapped_over_a_list, lambda: (RNG.normal(size=3), [RNG.normal(size=3) for _ in range(2)])),
    (
        mapped_with_loops_inside,
        lambda: (RNG.normal(size=3), [RNG.normal(size=(2, 3)) for _ in range(2)]),
    ),
    (comprehension_inside, lambda: (RNG.normal(size=3), RNG.normal(size=3))),
    (keyword_calls, lambda: (RNG.normal(size=3), RNG.normal(size=3))),
    (a_tuple_argument, lambda: (RNG.normal(size=3), RNG.normal(size=3))),
    (with_defaults, lambda: (RNG.normal(size=3), RNG.normal(size=3))),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, make", NESTED, ids=[f.__name__ for f, _ in NESTED])
def test_nested_defs_computing_differentiated_values(f, make, mode):
    args = make()
    check_gradient(f, args, 0, mode)
    if not isinstance(args[1], list):
        check_gradient(f, args, 1, mode)


@pytest.mark.parametrize("f, make", NESTED[:4], ids=[f.__name__ for f, _ in NESTED[:4]])
def test_second_order_through_nested_defs(f, make):
    w, x = make()
    check_hvp(lambda w: f(w, x), w, RNG.normal(size=w.shape))


SINGLE = [(f, make) for f, make in NESTED if not isinstance(make()[1], list)]


@pytest.mark.parametrize("f, make", SINGLE, ids=[f.__name__ for f, _ in SINGLE])
def test_forward_mode_through_nested_defs(f, make):
    w, x = make()
    along = RNG.normal(size=np.shape(w))
    _, tangent = sg.jvp(lambda w: f(w, x), (w,), (along,), mode="s2s")
    expected = numeric_grad(f, (w, x), 0)
    np.testing.assert_allclose(tangent, np.sum(expected * along), rtol=1e-5, atol=1e-7)


def test_the_generated_code_shows_the_nested_def_inlined():
    w, xs = RNG.normal(size=(5, 3)), RNG.normal(size=(4, 2))
    gradient = sg.grad(rnn_loss, mode="s2s")
    gradient(w, xs)
    code = [line for line in sg.source(gradient).splitlines() if not line.strip().startswith("#")]
    assert any("np.tanh" in line for line in code)
    assert not any("cell(" in line for line in code)


def loop_with_return(w, x):
    def first_positive(v):
        for k in range(3):
            if np.sum(v * k) > 0:
                return v * w * k
        return v * w

    return np.sum(first_positive(x))


def recursive(w, x):
    def power(v, n):
        if n == 0:
            return v
        return power(v * w, n - 1)

    return np.sum(power(x, 2))


def kept_for_later(w, x):
    def f(v):
        y = v * w
        return y

    functions = [f]
    return np.sum(functions[0](x))


@pytest.mark.parametrize("f", [loop_with_return, recursive, kept_for_later])
def test_nested_defs_that_cannot_be_inlined_are_refused_at_transform_time(f):
    w, x = RNG.normal(size=3), RNG.normal(size=3)
    with pytest.raises(sg.UnsupportedError, match=r"test_nested_defs.py:\d+.*mode='tape'"):
        sg.grad(f, mode="s2s")(w, x)
    with pytest.warns(FallbackWarning, match=r"test_nested_defs.py:\d+"):
        gradient = sg.grad(f, mode="auto")(w, x)
    assert_close(gradient, numeric_grad(f, (w, x), 0))


# --------------------------------------------------------------------------------------
# lambdas


def linreg(X, w, b):
    return X @ w + b


def squared_loss(y_hat, y):
    return (y_hat - y) ** 2 / 2


def d2l_style(w, b, X, y):
    net, loss = lambda X: linreg(X, w, b), squared_loss
    return np.mean(loss(net(X), y))


def star_lambda(x, y):
    g = lambda *a: np.sum(np.sin(a[0]) * a[1])  # noqa: E731
    call = lambda *a: g(*a)  # noqa: E731
    return call(x, y) + g(y, x)


@pytest.mark.parametrize("mode", MODES)
def test_lambdas_made_inside_the_function(mode):
    w, X, y = RNG.normal(size=2), RNG.normal(size=(4, 2)), RNG.normal(size=4)
    check_gradient(d2l_style, (w, 0.3, X, y), 0, mode)
    check_gradient(d2l_style, (w, 0.3, X, y), 1, mode)
    x, v = RNG.normal(size=3), RNG.normal(size=3)
    check_gradient(star_lambda, (x, v), 0, mode)
    check_gradient(star_lambda, (x, v), 1, mode)


def sine_product(x, y):
    return np.sum(np.sin(x) * y)


forwarding = lambda *a: sine_product(*a)  # noqa: E731  (what check_grads-style code passes)


@pytest.mark.parametrize("mode", MODES)
def test_a_lambda_forwarding_star_args(mode):
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    check_gradient(forwarding, (x, y), 0, mode)
    check_gradient(forwarding, (x, y), 1, mode)
    (dx, dy) = sg.vjp(forwarding, x, y, mode=mode)[1](1.0)
    assert_close((dx, dy), (np.cos(x) * y, np.sin(x)))
    products = sg.hvp(forwarding, (x, y), (y, x), mode=mode)
    assert_close(products, (-np.sin(x) * y * y + np.cos(x) * x, np.cos(x) * y))


def test_second_order_through_lambdas():
    x, v = RNG.normal(size=3), RNG.normal(size=3)
    check_hvp(lambda x: star_lambda(x, v), x, RNG.normal(size=3))


# --------------------------------------------------------------------------------------
# loops over iterators


def over_product(x):
    total = 0.0
    for i, j in itertools.product(range(2), range(3)):
        total = total + np.sum(x[i] * np.sin(x[j]))
    return total


def over_pairs(x):
    total = 0.0
    for i, (a, b) in enumerate(itertools.pairwise([0, 2, 1])):
        total = total + np.sum(x[a] * x[b]) * (i + 1)
    return total


def over_filter(x, ks):
    total = 0.0
    for k in filter(lambda k: k > 0, ks):
        total = total + np.sum(np.cos(x * k))
    return total


def over_a_generator(x):
    total = 0.0
    for v in (np.sin(x * k) for k in range(3)):
        total = total + np.sum(v**2)
    return total


@pytest.mark.parametrize("mode", MODES)
def test_loops_over_iterators(mode):
    x = RNG.normal(size=(3, 2))
    check_gradient(over_product, (x,), 0, mode)
    check_gradient(over_pairs, (x,), 0, mode)
    check_gradient(over_filter, (x, [1.0, -1.0, 2.0]), 0, mode)
    check_gradient(over_a_generator, (x,), 0, mode)


def test_second_order_through_a_loop_over_an_iterator():
    check_hvp(over_product, RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2)))


def zipped_with_a_counter(x, ws):
    total = 0.0
    for w, k in zip(ws, itertools.count()):
        total = total + np.sum(x * w * k)
    return total


def product_of_differentiated_values(ws):
    total = 0.0
    for a, b in itertools.product(ws, ws):
        total = total + np.sum(a * b)
    return total


def test_iterators_without_a_length_are_refused_when_transformed():
    x = RNG.normal(size=2)
    with pytest.raises(sg.UnsupportedError, match=r"test_nested_defs.py:\d+.*range"):
        sg.grad(zipped_with_a_counter, mode="s2s")(x, [x, 2 * x])
    with pytest.warns(FallbackWarning):
        gradient = sg.grad(zipped_with_a_counter, mode="auto")(x, [x, 2 * x])
    assert_close(gradient, numeric_grad(zipped_with_a_counter, (x, [x, 2 * x]), 0))


def filter_reading_what_the_loop_changes(x, ks):
    limit = 0.0

    def keep(k):
        return k > limit

    total = 0.0
    for k in filter(keep, ks):  # filter calls keep as the loop runs: it sees the new limit
        total = total + np.sum(np.sin(x * k))
        limit = limit + 1.5
    return total


def map_reading_what_the_loop_changes(x, ks):
    scale = 1.0
    total = 0.0
    for v in map(lambda k: k * scale, ks):
        total = total + np.sum(np.sin(x * v))
        scale = scale * 2.0
    return total


def generator_reading_what_the_loop_changes(x, ks):
    scale = 1.0
    total = 0.0
    for v in (k * scale for k in ks):
        total = total + np.sum(np.sin(x * v))
        scale = scale * 2.0
    return total


LAZY = [
    filter_reading_what_the_loop_changes,
    map_reading_what_the_loop_changes,
    generator_reading_what_the_loop_changes,
]


@pytest.mark.parametrize("f", LAZY)
def test_an_iterator_reading_what_the_loop_changes_is_not_read_beforehand(f):
    """Read whole before the loop, these gave a silently wrong gradient (the values made
    with the old scale); they are refused, and the tape follows them."""
    x, ks = RNG.normal(size=2), [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(sg.UnsupportedError, match=r"test_nested_defs.py:\d+.*mode='tape'"):
        sg.grad(f, mode="s2s")(x, ks)
    with pytest.warns(FallbackWarning):
        gradient = sg.grad(f, mode="auto")(x, ks)
    assert_close(gradient, numeric_grad(f, (x, ks), 0))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_product_of_differentiated_values_is_read_by_index(mode):
    """itertools.product over differentiated values loops over the product of their
    indices (tests/test_lambdas_and_iterators.py has the family)."""
    ws = [RNG.normal(size=2), RNG.normal(size=2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = sg.grad(product_of_differentiated_values, mode=mode)(ws)
    assert_close(gradient, numeric_grad(product_of_differentiated_values, (ws,), 0))
