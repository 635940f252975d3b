"""Round 35's adversarial findings (adv21): each an internal error, a crash or a refusal that
named s2sgrad's generated file instead of the user's line, now right or refused at the
user's line.

- ``operator.getitem(x, i)`` spelled as a call: the reverse sweep took every ``getitem`` for
  a subscript ``x[i]`` and read its ``.value``: an internal error in modes "s2s" and "auto".
- a generator function defined inside the differentiated function (``sum(gen(x))``): mode
  "auto" ran the generated code, which handed the call of the generator to the tape as one
  call, and the tape refused it naming the generated file; "auto" now tapes the whole
  function, where each value is recorded as it is read.
- a run of the generated code refused part way in mode "auto" (a store through a property's
  setter, a local generator) is run again on the tape from the state the call started
  from; the random generators the function draws from were not set back, so the tape's run
  drew other numbers: a gradient at other draws than mode "tape" gives for the same seed,
  and a generator left two calls' draws further on than a plain call leaves it.
- forward mode of a call with a custom derivative resolved as the code runs
  (``sg.checkpoint(f)(x, s=3.0)``, a function with ``@sg.derivative(of=..., jvp=...)`` held
  in a list or passed as an argument) dropped the arguments given by keyword: the value and
  the tangent of the checkpointed call were those of the default ``s`` (silently wrong, in
  modes "s2s" and "auto"), and a ``jvp=`` companion reading them crashed (IndexError).
- a NumPy function given as an argument and called with a keyword its rule does not take
  (``fn(x, y, dtype=float)``, ``out=None``, ``where=``, ``casting=``): the reverse sweep
  called the rule with it, a TypeError from inside s2sgrad; refused at the user's line
  now, as the call written out is.
- code specialised to the shapes of a call's arguments, run again for a call whose arguments
  had the same description but computed other shapes: a function given as an argument was
  described by its class alone (``np.linalg.norm`` and ``np.sort`` are both NumPy's array
  functions, every ``def`` a ``function``, every ``partial`` a ``partial``, whatever its
  ``axis=``), and an object by its class (layers in a list
  with weights of other shapes): the shapes the probe saw were wrong for the next one, and
  ``np.sum(fn(x))`` crashed (AttributeError, ValueError) or gave a float for an array.
- a function taken out of a list that holds a value being differentiated
  (``a = [x, np.sin]; helper(*a)``) is a differentiated argument of the helper's derivative;
  a helper calling it added its cotangents, None, with ``+`` (TypeError).
"""

from __future__ import annotations

import functools
import operator
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = "test_adversarial_round35.py"
R = np.random.default_rng(3521)
MODES = ["s2s", "auto", "tape"]


def _hvp_expected(f, x, v):
    """H v by central differences of central differences of ``f`` (no engine involved)."""
    return numeric_jvp(lambda y: numeric_grad(f, [y], 0, step=1e-5), [x], 0, v, step=1e-3)


def _grad_jvp_hvp(f, mode, shapes=((5,), (5,), (7,))):
    """grad (a first and a later call), jvp and hvp of ``f`` at points of ``shapes`` (the
    same shape with other values, then another shape), against central differences."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformed = sg.grad(f, mode=mode)
        for shape in shapes:
            x, v = R.normal(size=shape), R.normal(size=shape)
            assert_close(call_twice(transformed, x), numeric_grad(f, [x], 0))
            value, tangent = sg.jvp(f, (x,), (v,), mode=mode)
            assert_close(value, f(x), rtol=1e-12)
            assert_close(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-5, atol=1e-7)
            (hvp,) = sg.hvp(f, (x,), (v,), mode=mode)
            assert_close(hvp, _hvp_expected(f, x, v), rtol=1e-4, atol=1e-5)


# --- operator.getitem spelled as a call ---------------------------------------------------


def item_by_operator(x):
    return operator.getitem(x, 1) * operator.neg(x[0]) + np.sum(operator.mul(x, x))


def items_by_operator_in_a_loop(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + operator.getitem(x, i) ** 2 * np.sin(operator.getitem(x, -1 - i))
    return total


def slice_by_operator(x):
    return np.sum(operator.getitem(x, slice(1, None, 2)) ** 3)


@pytest.mark.parametrize("f", [item_by_operator, items_by_operator_in_a_loop, slice_by_operator])
@pytest.mark.parametrize("mode", MODES)
def test_operator_getitem_called_is_differentiated(f, mode):
    _grad_jvp_hvp(f, mode)


# --- generator functions defined inside the function differentiated -----------------------


def sum_of_a_local_generator(x):
    def squares(v):
        for e in v:
            yield np.sin(e) * e

    return sum(squares(x)) * x[0]


def yield_from_a_local_generator(x):
    def doubled(v):
        yield from (e**2 * 2.0 for e in v)
        yield v[0] ** 3

    return sum(doubled(x))


@pytest.mark.parametrize("f", [sum_of_a_local_generator, yield_from_a_local_generator])
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_a_local_generator_is_taped_in_auto(f, mode):
    _grad_jvp_hvp(f, mode)


@pytest.mark.parametrize("f", [sum_of_a_local_generator, yield_from_a_local_generator])
def test_a_local_generator_is_refused_at_the_users_line_in_s2s(f):
    x = R.normal(size=4)
    with pytest.raises(sg.UnsupportedError, match="generator") as e:
        sg.grad(f, mode="s2s")(x)
    assert f"{HERE}:" in str(e.value)
    with pytest.raises(sg.UnsupportedError, match="generator") as e:
        sg.jvp(f, (x,), (np.ones(4),), mode="s2s")
    assert f"{HERE}:" in str(e.value)


# --- random draws of a run refused part way in mode "auto" ---------------------------------


class SetterScaled:
    """A property whose setter stores something else than the value assigned: source
    transformation refuses the store as the code runs, and mode "auto" takes the tape."""

    def __init__(self):
        self._v = 0.0

    @property
    def v(self):
        return self._v * 2.0

    @v.setter
    def v(self, value):
        self._v = value + 1.0


SHARED_RNG = np.random.default_rng(0)


def draws_then_stores_through_a_setter(x, p):
    noise = SHARED_RNG.normal(size=x.shape)
    p.v = x * noise
    return np.sum(p.v**2)


def draws_globally_then_stores_through_a_setter(x, p):
    noise = np.random.normal(size=x.shape)
    p.v = x * noise
    return np.sum(p.v**2)


def draws_from_an_argument_then_stores(x, p, rng):
    noise = rng.normal(size=x.shape)
    p.v = x * noise
    return np.sum(p.v**2)


def _noisy_gradient(x, noise):
    return 8.0 * (x * noise + 1.0) * noise  # of sum((2 (x noise + 1))^2)


def _seeded(kind, seed):
    """Seed the generator ``kind`` draws from; return it (None for one the function finds
    itself) and a function drawing ``n`` numbers from it."""
    global SHARED_RNG
    if kind == "shared":
        SHARED_RNG = np.random.default_rng(seed)
        return None, lambda n: SHARED_RNG.normal(size=n)
    if kind == "global":
        np.random.seed(seed)
        return None, lambda n: np.random.normal(size=n)
    rng = np.random.default_rng(seed)
    return rng, lambda n: rng.normal(size=n)


DRAWING = {
    "shared": draws_then_stores_through_a_setter,
    "global": draws_globally_then_stores_through_a_setter,
    "argument": draws_from_an_argument_then_stores,
}


@pytest.mark.parametrize("kind", list(DRAWING))
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_a_refused_run_draws_nothing_more_in_auto(kind, mode):
    x = R.normal(size=4)
    seed = int(R.integers(1 << 30))
    _, draw = _seeded(kind, seed)
    noise, after = draw(4), draw(3)  # what a plain call draws, and the draws after it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformed = sg.grad(DRAWING[kind], mode=mode)
        for _ in range(2):  # the first call (refused part way in "auto"), and a later one
            rng, draw = _seeded(kind, seed)
            args = (x, SetterScaled()) + ((rng,) if rng is not None else ())
            assert_close(transformed(*args), _noisy_gradient(x, noise), rtol=1e-12)
            assert_close(draw(3), after, rtol=0)  # one call's draws, as a plain call


# --- keyword arguments of custom derivatives called in forward mode -----------------------


def scaled_sine(v, s=2.0):
    return np.sin(v) * s


def checkpointed_with_a_keyword(x):
    f = sg.checkpoint(scaled_sine)
    return np.sum(f(x) * f(x, s=3.0))


def checkpointed_lambda_with_a_keyword(x):
    f = sg.checkpoint(lambda v, s=2.0: np.cos(v) * s)
    return np.sum(f(x, s=0.5) ** 2)


def scaled_exp(v, s=1.0):
    return np.exp(v) * s


def _scaled_exp_jvp(primals, tangents):
    v, s = primals
    return scaled_exp(v, s), np.exp(v) * s * tangents[0] + np.exp(v) * tangents[1]


@sg.derivative(of=scaled_exp, jvp=_scaled_exp_jvp)
def _scaled_exp_vjp(v, s=1.0):
    value = np.exp(v) * s
    return value, lambda g: (g * value, np.sum(g * np.exp(v)))


HELD = [scaled_exp]


def custom_derivative_held_in_a_list(x):
    return np.sum(HELD[0](x, s=3.0) * x)


@pytest.mark.parametrize(
    "f",
    [
        checkpointed_with_a_keyword,
        checkpointed_lambda_with_a_keyword,
        custom_derivative_held_in_a_list,
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_keywords_of_a_custom_derivative_reach_forward_mode(f, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape in ((4,), (4,), (6,)):  # other values, then another shape
            x, v = R.normal(size=shape), R.normal(size=shape)
            value, tangent = sg.jvp(f, (x,), (v,), mode=mode)
            assert_close(value, f(x), rtol=1e-12)
            assert_close(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-5, atol=1e-7)
            assert_close(sg.grad(f, mode=mode)(x), numeric_grad(f, [x], 0))


def sine_keyword_only(v, *, s=2.0):
    return np.sin(v) * s


def checkpointed_keyword_only(x):
    return np.sum(sg.checkpoint(sine_keyword_only)(x, s=3.0))


def test_a_keyword_only_parameter_is_refused_in_s2s_and_taped_in_auto():
    x, v = R.normal(size=4), R.normal(size=4)
    with pytest.raises(sg.UnsupportedError, match="by keyword") as e:
        sg.jvp(checkpointed_keyword_only, (x,), (v,), mode="s2s")
    assert f"{HERE}:" in str(e.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, tangent = sg.jvp(checkpointed_keyword_only, (x,), (v,), mode="auto")
    assert_close(value, checkpointed_keyword_only(x), rtol=1e-12)
    assert_close(tangent, numeric_jvp(checkpointed_keyword_only, [x], 0, v), rtol=1e-5)


# --- keywords without a derivative, of a function resolved as the code runs ----------------


def multiplied_by_a_given_function(x, fn, keyword):
    return np.sum(fn(x, x[::-1], **keyword) ** 2)


@pytest.mark.parametrize(
    "keyword",
    [{"out": None}, {"dtype": "float64"}, {"casting": "same_kind"}, {"where": True}],
    ids=["out", "dtype", "casting", "where"],
)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_keyword_without_a_derivative_is_refused_at_the_users_line(keyword, mode):
    x = R.normal(size=4)
    with pytest.raises(sg.NonDifferentiableError, match="keyword") as e:
        sg.grad(multiplied_by_a_given_function, mode=mode)(x, np.multiply, keyword)
    assert f"{HERE}:" in str(e.value)

    def second_order(v, _keyword=keyword):  # forward mode over the gradient
        return multiplied_by_a_given_function(v, np.multiply, _keyword)

    with pytest.raises(sg.NonDifferentiableError, match="keyword") as e:
        sg.hvp(second_order, (x,), (np.ones(4),), mode=mode)
    assert f"{HERE}:" in str(e.value)


# --- code specialised to shapes, run for functions and objects computing others -----------


def sum_of_a_given_function(x, fn):
    return np.sum(fn(x) * 1.5)


def _head(v):
    return v[:2] * 3.0


def _outer(v):
    return np.outer(v, v[::-1])


GIVEN = [np.linalg.norm, np.sort, np.cumsum, np.copy, _outer, _head, lambda v: np.sin(v[1:])]
GIVEN_FOR_MATRICES = [
    functools.partial(np.sum, axis=0),
    functools.partial(np.sum, axis=1),
    functools.partial(np.max, axis=None),
    functools.partial(np.sort, axis=0),
    functools.partial(np.cumsum, axis=1),
]


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_function_given_as_an_argument_gets_its_own_code(mode):
    transformed = sg.grad(sum_of_a_given_function, mode=mode)
    for fn in [*GIVEN, *GIVEN[::-1]]:  # each after another computing another shape
        x = R.normal(size=5)
        gradient = transformed(x, fn)
        assert type(gradient) is np.ndarray and gradient.shape == x.shape
        assert_close(gradient, numeric_grad(sum_of_a_given_function, [x, fn], 0))
    for fn in [*GIVEN_FOR_MATRICES, *GIVEN_FOR_MATRICES[::-1]]:
        x = R.normal(size=(3, 4))
        assert_close(transformed(x, fn), numeric_grad(sum_of_a_given_function, [x, fn], 0))


class Dense:
    def __init__(self, w):
        self.w = w

    def __call__(self, v):
        return np.tanh(self.w @ v)

    def loss(self, v):
        return np.sum(self(v) ** 2)


def through_layers(x, layers):
    for layer in layers:
        x = layer(x)
    return np.sum(x) * 2.0


def through_a_given_method(x, loss):
    return loss(x) * 2.0


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_objects_holding_arrays_of_other_shapes_get_their_own_code(mode):
    by_layers = sg.grad(through_layers, mode=mode)
    by_method = sg.grad(through_a_given_method, mode=mode)
    for widths in ((4, 4, 4), (4, 2, 3), (4, 3, 1), (4, 4, 4)):
        x = R.normal(size=4)
        layers = [Dense(R.normal(size=(m, n))) for n, m in zip(widths, widths[1:])]
        assert_close(by_layers(x, layers), numeric_grad(through_layers, [x, layers], 0))
        loss = layers[-1].loss if widths[1] == 4 else Dense(R.normal(size=(widths[1], 4))).loss
        assert_close(by_method(x, loss), numeric_grad(through_a_given_method, [x, loss], 0))


# --- a function given to a helper from a list being differentiated -------------------------


def mapped_by_a_given_function(x, fn):
    return np.sum(np.stack(list(map(fn, x))) * x)


def called_by_a_given_function(x, fn):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + fn(x[i]) * x[i]
    return total


def _unpacked_into_the_helper(helper):
    def f(x):
        arguments = [x, np.sin]
        return helper(*arguments)

    return f


@pytest.mark.parametrize("helper", [mapped_by_a_given_function, called_by_a_given_function])
@pytest.mark.parametrize("mode", MODES)
def test_a_function_from_a_differentiated_list_given_to_a_helper(helper, mode):
    _grad_jvp_hvp(_unpacked_into_the_helper(helper), mode)


class Stack:
    """Weights in a list, as a model holds them."""

    def __init__(self, weights):
        self.weights = weights

    def __call__(self, v):
        for w in self.weights:
            v = np.tanh(w @ v)
        return v


class Wrapped:
    def __init__(self, inner):
        self.inner = inner

    def __call__(self, v):
        return self.inner(v)


def through_a_model(x, model):
    return np.sum(model(x))


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_model_holding_weights_of_other_shapes_gets_its_own_code(mode):
    transformed = sg.grad(through_a_model, mode=mode)
    for widths in ((4, 4, 4), (4, 2, 3), (4, 4, 4), (4, 3, 2)):
        for wrap in (False, True):
            x = R.normal(size=4)
            model = Stack([R.normal(size=(m, n)) for n, m in zip(widths, widths[1:])])
            model = Wrapped(model) if wrap else model
            expected = numeric_grad(through_a_model, [x, model], 0)
            assert_close(transformed(x, model), expected)
