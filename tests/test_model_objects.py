"""Models as objects: parameters in dataclasses, named tuples and registered classes,
methods differentiated with respect to their object (``wrt="self"``), and objects that
keep state, checked against central differences in every mode."""

from __future__ import annotations

import dataclasses
import warnings
from typing import NamedTuple

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")
HERE = __file__


def tree_grad(f, args, index=0):
    """Central differences of ``f`` wrt every leaf of the pytree ``args[index]``, as a
    pytree of the same structure."""
    leaves, structure = sg.tree_flatten(args[index])

    def of_leaves(*values):
        trial = list(args)
        trial[index] = sg.tree_unflatten(structure, values)
        return f(*trial)

    return sg.tree_unflatten(
        structure, [numeric_grad(of_leaves, leaves, i) for i in range(len(leaves))]
    )


def assert_tree_close(actual, expected, rtol=1e-5, atol=1e-7):
    assert type(actual) is type(expected), (type(actual), type(expected))
    got, got_structure = sg.tree_flatten(actual)
    want, want_structure = sg.tree_flatten(expected)
    assert got_structure == want_structure, (got_structure, want_structure)
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def check(f, args, mode, index=0):
    """The gradient wrt ``args[index]`` on the first and the second (specialised) call,
    without a fallback warning, against central differences."""
    expected = tree_grad(f, args, index)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto must not fall back to the tape
        gradient = sg.grad(f, wrt=index, mode=mode)
        for _ in ("first", "second"):
            assert_tree_close(gradient(*args), expected)


# -- parameter structures --------------------------------------------------------------


@dataclasses.dataclass
class Affine:
    w: np.ndarray
    b: float


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    scale: float


class Pair(NamedTuple):
    w: np.ndarray
    b: np.ndarray


@dataclasses.dataclass
class Stack:
    layers: list
    scale: float


class Registered:
    """Not a dataclass: its class says what its children are."""

    def __init__(self, w, b, name):
        self.w, self.b, self.name = w, b, name


sg.register_pytree(
    Registered,
    lambda layer: ((layer.w, layer.b), layer.name),
    lambda name, children: Registered(*children, name),
)


def affine_loss(p, x):
    return np.sum(np.tanh(p.w * x) + p.b**2)


def frozen_loss(p, x):
    return p.scale * np.sum(np.sin(p.w * x))


def pair_loss(p, x):
    return np.sum(np.tanh(x @ p.w + p[1]) ** 2)  # by attribute and by position


def stack_loss(m, x):
    h = x
    for W in m.layers:
        h = np.tanh(h @ W)
    return m.scale * np.sum(h**2)


def dict_of_objects_loss(ps, x):
    return np.sum(np.tanh(ps["a"].w * x) * ps["b"].w) + ps["a"].b * ps["b"].b


def list_of_layers_loss(layers, x):
    h = x
    for layer in layers:
        h = np.tanh(h @ layer.w + layer.b)
    return np.sum(h**2)


def registered_loss(layer, x):
    return np.sum(np.cos(x @ layer.w + layer.b))


def _affine_part(p, x):
    return np.tanh(p.w * x) + p.b


def through_a_helper(p, x):
    return np.sum(_affine_part(p, x) ** 2)


def through_a_function_argument(p, x, part=_affine_part):
    return np.sum(part(p, x) ** 2)  # resolved when it runs


def _cases(rng):
    x2, x3 = rng.normal(size=2), rng.normal(size=(4, 3))
    return {
        "dataclass": (affine_loss, (Affine(rng.normal(size=2), 0.5), x2)),
        "frozen": (frozen_loss, (Frozen(rng.normal(size=2), 1.5), x2)),
        "named_tuple": (pair_loss, (Pair(rng.normal(size=(3, 2)), rng.normal(size=2)), x3)),
        "nested_list": (
            stack_loss,
            (Stack([rng.normal(size=(3, 4)), rng.normal(size=(4, 2))], 0.7), x3),
        ),
        "dict_of_dataclasses": (
            dict_of_objects_loss,
            ({"a": Affine(rng.normal(size=2), 0.5), "b": Affine(rng.normal(size=2), 1.5)}, x2),
        ),
        "list_of_dataclasses": (
            list_of_layers_loss,
            (
                [
                    Pair(rng.normal(size=(3, 4)), rng.normal(size=4)),
                    Pair(rng.normal(size=(4, 2)), rng.normal(size=2)),
                ],
                x3,
            ),
        ),
        "registered": (
            registered_loss,
            (Registered(rng.normal(size=(3, 2)), rng.normal(size=2), "dense"), x3),
        ),
        "helper": (through_a_helper, (Affine(rng.normal(size=2), 0.5), x2)),
        "dispatched": (through_a_function_argument, (Affine(rng.normal(size=2), 0.5), x2)),
    }


CASES = sorted(_cases(np.random.default_rng(0)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_gradient_wrt_a_parameter_structure_has_its_class(case, mode):
    f, args = _cases(np.random.default_rng(1))[case]
    check(f, args, mode)


@pytest.mark.parametrize("mode", MODES)
def test_value_and_grad_of_a_dataclass(mode):
    p, x = Affine(np.array([0.3, -1.2]), 0.4), np.array([1.0, 2.0])
    value, gradient = sg.value_and_grad(affine_loss, mode=mode)(p, x)
    assert value == pytest.approx(affine_loss(p, x))
    assert_tree_close(gradient, tree_grad(affine_loss, (p, x)))
    assert p.w.tolist() == [0.3, -1.2]  # the input is left alone


@pytest.mark.parametrize("mode", MODES)
def test_hvp_and_gradient_of_gradient_wrt_a_dataclass(mode):
    rng = np.random.default_rng(2)
    p, x = Affine(rng.normal(size=2), 0.5), rng.normal(size=2)
    v = Affine(rng.normal(size=2), 0.3)
    (product,) = sg.hvp(lambda q: affine_loss(q, x), (p,), (v,), mode=mode)

    def along(q):  # <grad f(q), v>: its gradient is the Hessian times v
        g = sg.grad(affine_loss, mode=mode)(q, x)
        return np.sum(g.w * v.w) + g.b * v.b

    assert_tree_close(product, tree_grad(along, (p,)), rtol=1e-4, atol=1e-6)
    assert_tree_close(sg.grad(along, mode=mode)(p), tree_grad(along, (p,)), rtol=1e-4, atol=1e-6)


# -- methods of model objects ------------------------------------------------------------


@dataclasses.dataclass
class Linear:
    w: np.ndarray
    b: np.ndarray

    def predict(self, X):
        return X @ self.w + self.b

    def loss(self, X, y):
        return np.mean((self.predict(X) - y) ** 2)  # a method calling a method

    def plain_loss(self, X, y):
        return np.mean((X @ self.w + self.b - y) ** 2)


def _linear(rng):
    return (
        Linear(rng.normal(size=3), rng.normal(size=1)),
        rng.normal(size=(5, 3)),
        rng.normal(size=5),
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", ["loss", "plain_loss"])
def test_a_method_differentiated_wrt_its_object(method, mode):
    model, X, y = _linear(np.random.default_rng(3))
    expected = tree_grad(lambda m: getattr(m, method)(X, y), (model,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = sg.grad(getattr(model, method), wrt="self", mode=mode)
        for _ in ("first", "second"):
            assert_tree_close(gradient(X, y), expected)
        # the other arguments as before: an index counts the method's own arguments
        by_input = sg.grad(getattr(model, method), mode=mode)(X, y)
    assert_close(by_input, numeric_grad(getattr(model, method), (X, y), 0))


@pytest.mark.parametrize("mode", MODES)
def test_second_order_wrt_a_model_object(mode):
    model, X, y = _linear(np.random.default_rng(4))
    v = Linear(np.ones(3), np.ones(1))

    def loss(m):
        return Linear.plain_loss(m, X, y)  # forward mode does not follow m.method() calls

    def along(m):
        g = sg.grad(Linear.plain_loss, mode=mode)(m, X, y)
        return np.sum(g.w * v.w) + np.sum(g.b * v.b)

    (product,) = sg.hvp(loss, (model,), (v,), mode=mode)
    assert_tree_close(product, tree_grad(along, (model,)), rtol=1e-4, atol=1e-6)


MODEL = Linear(np.array([0.5, -1.0, 2.0]), np.array([0.1]))


def uses_a_module_level_model(X):
    return np.sum(np.tanh(MODEL.predict(X)) ** 2)  # its attributes are constants here


@pytest.mark.parametrize("mode", MODES)
def test_a_method_of_a_module_level_object_inside_a_differentiated_function(mode):
    X = np.random.default_rng(5).normal(size=(4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = sg.grad(uses_a_module_level_model, mode=mode)
        for _ in ("first", "second"):
            assert_close(gradient(X), numeric_grad(uses_a_module_level_model, (X,), 0))


# -- what is refused ---------------------------------------------------------------------


@dataclasses.dataclass
class WithProperty:
    w: np.ndarray

    @property
    def squared(self):
        return self.w**2


def reads_a_property(p):
    return np.sum(p.squared)


def test_a_computed_attribute_of_a_differentiated_object_is_refused_by_source():
    p = WithProperty(np.array([1.0, 2.0]))
    with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+: reads \.squared .*property"):
        sg.grad(reads_a_property, mode="s2s")(p)
    assert_tree_close(sg.grad(reads_a_property, mode="tape")(p), WithProperty(2 * p.w))


class PlainModel:
    def __init__(self):
        self.w = np.ones(3)

    def loss(self, X):
        return np.sum(X @ self.w)


@pytest.mark.parametrize("mode", MODES)
def test_a_plain_object_is_refused_with_advice(mode):
    with pytest.raises(TypeError, match="dataclass.*register_pytree"):
        sg.grad(PlainModel().loss, wrt="self", mode=mode)(np.ones((2, 3)))


def test_a_jacobian_wrt_a_dataclass_is_refused_with_advice():
    p, x = Affine(np.ones(2), 0.5), np.ones(2)
    with pytest.raises(TypeError, match="sg.hvp"):
        sg.hessian(affine_loss)(p, x)


# -- objects that keep state -------------------------------------------------------------


class Obj:
    pass


def stores_on_its_own_object(x):
    o = Obj()
    o.h = 2.0 * x
    o.h += np.sin(x)
    return np.sum(o.h**2)


@pytest.mark.parametrize("mode", MODES)
def test_a_value_stored_on_an_object_made_here_and_read_back(mode):
    x = np.random.default_rng(6).normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = sg.grad(stores_on_its_own_object, mode=mode)
        for _ in ("first", "second"):
            assert_close(gradient(x), numeric_grad(stores_on_its_own_object, (x,), 0))
    if mode == "s2s":  # read back as a variable, not through the object
        assert "reads_stored" not in sg.source(gradient)


class RunningNorm:
    """A layer that keeps running statistics of what it normalises on itself."""

    def __init__(self, n):
        self.moving_mean = np.zeros(n)

    def __call__(self, X, gamma):
        mean = X.mean(axis=0)
        self.moving_mean = 0.9 * self.moving_mean + 0.1 * mean
        return gamma * (X - mean)


NORM = RunningNorm(3)


def through_the_norm(gamma, X):
    return np.sum(np.tanh(NORM(X, gamma)) ** 2)


def norm_twice(gamma, X):
    return np.sum(NORM(NORM(X, gamma), gamma) ** 2)


def reads_the_running_mean(gamma, X):
    return np.sum(NORM(X, gamma)) + np.sum(NORM.moving_mean**2)


@pytest.mark.parametrize("mode", MODES)
def test_a_layer_keeping_state_on_itself(mode):
    rng = np.random.default_rng(7)
    gamma, X = rng.normal(size=3), rng.normal(size=(4, 3))
    for wrt in (0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            gradient = sg.grad(through_the_norm, wrt=wrt, mode=mode)
            for _ in ("first", "second"):
                expected = numeric_grad(through_the_norm, (gamma, X), wrt)
                before = NORM.moving_mean.copy()
                assert_close(gradient(gamma, X), expected)
                # the state moved on as the user's code moves it, and stayed an ndarray
                assert type(NORM.moving_mean) is np.ndarray
                np.testing.assert_allclose(NORM.moving_mean, 0.9 * before + 0.1 * X.mean(0))


@pytest.mark.parametrize("f", [norm_twice, reads_the_running_mean])
def test_state_read_back_in_the_same_computation_is_refused_or_taped(f):
    rng = np.random.default_rng(8)
    gamma, X = rng.normal(size=3), rng.normal(size=(4, 3))
    with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+: .*mode='tape'"):
        sg.grad(f, mode="s2s")(gamma, X)
    state = NORM.moving_mean.copy()

    def from_the_same_state(g):
        NORM.moving_mean = state.copy()
        return f(g, X)

    expected = numeric_grad(from_the_same_state, (gamma,), 0)
    for mode in ("auto", "tape"):
        NORM.moving_mean = state.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            assert_close(sg.grad(f, mode=mode)(gamma, X), expected, rtol=1e-5, atol=1e-7)
        assert type(NORM.moving_mean) is np.ndarray


class Stats(NamedTuple):
    mean: np.ndarray
    T: np.ndarray  # named like an array's transpose


def reads_stats(s, x):
    return np.sum(s.mean * x) + np.sum(s.T * x**2)


def test_an_attribute_named_like_an_array_attribute_is_refused_by_source():
    s, x = Stats(np.array([1.0, -2.0]), np.array([0.5, 3.0])), np.array([1.0, 2.0])
    with pytest.raises(sg.UnsupportedError, match=r"\.T, which source transformation reads"):
        sg.grad(reads_stats, mode="s2s")(s, x)
    expected = tree_grad(reads_stats, (s, x))
    assert_tree_close(sg.grad(reads_stats, mode="tape")(s, x), expected)
    with pytest.warns(sg.S2SGradWarning, match="mode='tape'"):
        assert_tree_close(sg.grad(reads_stats)(s, x), expected)


@dataclasses.dataclass
class Configured:
    w: np.ndarray
    activation: object = dataclasses.field(default=np.tanh, metadata={"static": True})
    width: int = dataclasses.field(default=2, metadata={"static": True})


def configured_loss(m, x):
    return np.sum(m.activation(x[: m.width] * m.w) ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_static_dataclass_fields_are_kept_and_not_differentiated(mode):
    m, x = Configured(np.array([0.5, -1.5])), np.array([1.0, 2.0, 3.0])
    g = sg.grad(configured_loss, mode=mode)(m, x)
    assert g.activation is np.tanh and g.width == 2  # the structure, as given
    np.testing.assert_allclose(g.w, tree_grad(configured_loss, (m, x)).w, rtol=1e-5)


def test_a_field_that_is_not_a_parameter_is_refused_with_advice():
    @dataclasses.dataclass
    class Sized:
        w: np.ndarray
        width: int

    with pytest.raises(TypeError, match="static"):
        sg.grad(lambda m: np.sum(m.w), mode="tape")(Sized(np.ones(2), 2))


@dataclasses.dataclass
class Phasor:
    z: np.ndarray
    scale: float


def phasor_power(p):
    return p.scale * np.real(np.sum(p.z * np.conj(p.z)))


@pytest.mark.parametrize("mode", MODES)
def test_a_dataclass_holding_complex_arrays(mode):
    # autograd's convention (docs/complex.md): for u(x + iy), the gradient is du/dx - i du/dy
    p = Phasor(np.array([1.0 + 2.0j, -0.5 + 0.25j]), 1.5)
    g = sg.grad(phasor_power, mode=mode)(p)
    assert isinstance(g, Phasor)
    np.testing.assert_allclose(g.z, 2 * p.scale * np.conj(p.z))
    np.testing.assert_allclose(g.scale, np.sum(np.abs(p.z) ** 2))


def _scales_in_place(p, x):
    p.w = p.w * x  # changes the caller's object
    return np.sum(p.w)


def changes_its_argument(p, x):
    s = _scales_in_place(p, x)
    return s + np.sum(p.w**2)  # reads what the helper stored


def test_a_helper_storing_on_a_differentiated_argument_is_refused_or_taped():
    x = np.array([0.5, 1.5, 2.0])

    def fresh(w):
        return changes_its_argument(Affine(w, 0.0), x)

    expected = numeric_grad(fresh, (np.array([1.0, 2.0, 3.0]),), 0)
    with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+: .*mode='tape'"):
        sg.grad(changes_its_argument, mode="s2s")(Affine(np.array([1.0, 2.0, 3.0]), 0.0), x)
    for mode in ("tape", "auto"):  # auto: the tape, from the refused run's start
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            g = sg.grad(changes_its_argument, mode=mode)(Affine(np.array([1.0, 2.0, 3.0]), 0.0), x)
        np.testing.assert_allclose(g.w, expected, rtol=1e-5)


class Centred:
    """Reads back what it just stored on itself, as layers are written."""

    def __init__(self):
        self.mean = np.zeros(3)

    def __call__(self, X):
        self.mean = 0.9 * self.mean + 0.1 * X.mean(axis=0)
        return X - self.mean


CENTRED = Centred()


def through_centred(X):
    return np.sum(np.tanh(CENTRED(X)) ** 2)


def fails_after_the_layer(X):
    return np.sum(CENTRED(X) @ np.ones((4, 2)))  # a shape error, after the layer stored


@pytest.mark.parametrize("mode", MODES)
def test_a_layer_reading_back_what_it_stored_on_itself(mode):
    X = np.random.default_rng(10).normal(size=(4, 3))
    with pytest.raises(ValueError):
        sg.grad(fails_after_the_layer, mode=mode)(X)  # leaves nothing behind
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = sg.grad(through_centred, mode=mode)
        for _ in ("first", "second"):
            state = CENTRED.mean.copy()

            def from_the_same_state(Y, state=state):
                CENTRED.mean = state.copy()
                return through_centred(Y)

            expected = numeric_grad(from_the_same_state, (X,), 0)
            CENTRED.mean = state
            assert_close(gradient(X), expected, rtol=1e-5, atol=1e-7)
            assert type(CENTRED.mean) is np.ndarray
