"""What one call of a transform leaves in the state a function keeps, and what each run
repeated for one answer sees, where the state is reached a less direct way: an iterator a
dict or an object holds and that the caller replaces between calls, a dict a class holds,
a batched run of a forward-mode Jacobian that fails part way, a helper's object under the
Hessian of a lambda on the tape, a module cache keyed by shape. The reference is the plain
program: the derivative of one call from the state the call starts from, and the state
one plain call leaves."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

DATA = [1.5, 0.5, 2.0, -1.0, 0.75, 1.25]
ITEMS = {"it": iter(DATA)}


class Holder:
    pass


HOLDER = Holder()
HOLDER.it = iter(DATA)


def scaled_by_dict_entry(x):
    return np.sum(next(ITEMS["it"]) * np.sin(x) * x)


def scaled_by_attribute(x):
    return np.sum(next(HOLDER.it) * np.sin(x) * x)


def _plain(s):
    return lambda x: np.sum(s * np.sin(x) * x)


@pytest.mark.parametrize("mode", ["tape", "auto"])
@pytest.mark.parametrize("f", [scaled_by_dict_entry, scaled_by_attribute])
def test_an_iterator_replaced_between_calls_is_set_back_for_each_column(f, mode):
    x = np.random.default_rng(51).normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in (0, 2):  # the caller starts the data again (a new epoch)
            ITEMS["it"], HOLDER.it = iter(DATA[start:]), iter(DATA[start:])
            found = sg.jacfwd(f, mode=mode)(x)
            assert_close(found, numeric_grad(_plain(DATA[start]), [x], 0))
            mapped = sg.vmap(f)(np.stack([x, -x]))
            assert_close(mapped, np.array([_plain(DATA[start + 1])(t) for t in (x, -x)]))
            assert f(x) == pytest.approx(_plain(DATA[start + 2])(x))  # one item per call


class Registry:
    entries: dict = {}


def counted_in_a_class(x):
    Registry.entries.setdefault("calls", []).append(1)
    return np.sum(len(Registry.entries["calls"]) * np.sin(x))


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_dict_a_class_holds_counts_one_call_per_jacobian(mode):
    x = np.random.default_rng(52).normal(size=3)
    Registry.entries.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):
            found = sg.jacfwd(counted_in_a_class, mode=mode)(x)
            assert_close(found, call * np.cos(x))
            assert_close(
                sg.hessian(counted_in_a_class, mode=mode)(x), np.diag(-(call + 1) * np.sin(x))
            )
            Registry.entries["calls"].pop()  # the Hessian's call: counted once
    assert Registry.entries == {"calls": [1, 1]}


class Layer:
    def __init__(self) -> None:
        self.history: list = []

    def __call__(self, x):
        self.history.append(len(self.history))
        return np.sum(np.sin(x) * len(self.history))


def test_a_failed_batched_run_leaves_the_state_of_one_call():
    """The forward-mode Jacobian tries the columns batched, which the layer's code cannot
    take, then runs them one at a time: the call leaves the history of one call (it left
    the state the failed batched run left, the history before the call)."""
    x = np.random.default_rng(53).normal(size=3)
    layer = Layer()

    def loss(t):
        return layer(t)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):
            found = sg.jacfwd(loss, mode="s2s")(x)
            assert_close(found, call * np.cos(x))
            assert layer.history == list(range(call))


class RunningMean:
    def __init__(self) -> None:
        self.mean = np.zeros(3)

    def __call__(self, x):
        self.mean = 0.9 * self.mean + 0.1 * x
        return np.sum(np.tanh(x - 0.5 * self.mean))


NORM = RunningMean()


def normalised(x):
    return NORM(x)


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_hessian_of_a_lambda_leaves_plain_arrays_on_a_helpers_object(mode):
    x = np.random.default_rng(54).normal(size=3)
    NORM.__init__()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = sg.hessian(lambda t: normalised(t) * 1.0, mode=mode)(x)
    assert type(NORM.mean) is np.ndarray  # (it held the tape's value)
    assert_close(NORM.mean, 0.1 * x)
    u = 0.95 * x  # x - 0.5 * (0.1 * x)
    assert_close(found, np.diag(-2.0 * 0.95**2 * np.tanh(u) * (1.0 - np.tanh(u) ** 2)))


CACHE: dict = {}


def counted_by_shape(x):
    key = x.shape
    if key not in CACHE:
        CACHE[key] = 0
    CACHE[key] = CACHE[key] + 1
    return np.sum(CACHE[key] * np.cos(x))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_module_cache_keyed_by_shape_counts_its_first_entry(mode):
    x = np.random.default_rng(55).normal(size=4)
    CACHE.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):
            found = sg.grad(counted_by_shape, mode=mode)(x)
            assert_close(found, -call * np.sin(x))
            assert {(4,): call} == CACHE


class CallCounter:
    def __init__(self) -> None:
        self.n = 0

    def loss(self, x):
        self.n += 1
        return np.sum(self.n * np.sin(x))


COUNTER = CallCounter()
counted_loss = COUNTER.loss


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_bound_method_a_lambda_names_counts_one_call_per_hessian(mode):
    x = np.random.default_rng(56).normal(size=3)
    COUNTER.n = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):
            found = sg.hessian(lambda t: counted_loss(t) * 1.0, mode=mode)(x)
            assert_close(found, np.diag(-call * np.sin(x)))
            assert COUNTER.n == call


class Averaged:
    def __init__(self) -> None:
        self.mean = np.zeros(3)

    def __call__(self, x):
        self.mean = 0.5 * self.mean + 0.5 * x
        return np.sum(np.sin(x) * 2.0)


AVERAGED = Averaged()


def averaged(x):
    return AVERAGED(x)


def test_vmap_leaves_no_batched_value_in_the_state():
    """The batched run stored a batch of means on the object, left there: the next plain
    call failed inside s2sgrad (a batched value's float()). One example at a time, each
    run stores a plain array (the last example's is left)."""
    xs = np.random.default_rng(57).normal(size=(4, 3))
    AVERAGED.__init__()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in (1, 2):
            assert_close(sg.vmap(averaged)(xs), np.sum(np.sin(xs) * 2.0, axis=1))
            assert type(AVERAGED.mean) is np.ndarray
            AVERAGED.mean = np.zeros(3)
    assert_close(AVERAGED(xs[0]), np.sum(np.sin(xs[0]) * 2.0))


class Accumulator:
    def __init__(self) -> None:
        self.total = np.zeros(3)

    def add(self, v):
        self.total += v  # in place, on the object's own array
        return self.total


ACCUMULATOR = Accumulator()


def accumulated(x):
    return np.sum(ACCUMULATOR.add(np.ones(3)) * np.sin(x))


class CountedByClass:
    n = 0

    def __call__(self, x):
        type(self).n += 1
        return np.sum(type(self).n * np.sin(x))


COUNTED_BY_CLASS = CountedByClass()


def counted_by_class(x):
    return COUNTED_BY_CLASS(x)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_an_array_written_in_place_on_an_object_counts_one_call_per_jacobian(mode):
    x = np.random.default_rng(58).normal(size=3)
    ACCUMULATOR.__init__()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):
            assert_close(sg.jacfwd(accumulated, mode=mode)(x), call * np.cos(x))
            assert_close(ACCUMULATOR.total, np.full(3, float(call)))


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_a_class_attribute_set_through_type_counts_one_call_per_jacobian(mode):
    x = np.random.default_rng(59).normal(size=3)
    CountedByClass.n = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):
            assert_close(sg.jacfwd(counted_by_class, mode=mode)(x), call * np.cos(x))
            assert CountedByClass.n == call


DEEP: dict = {"n": 0}


def _count_deep():
    DEEP["n"] += 1
    return DEEP["n"]


def _level_two():
    return _count_deep()


def _level_one():
    return _level_two()


def counted_four_levels_down(x):
    return np.sum(_level_one() * np.sin(x))


PARTIAL_STATE = {"k": 0.0}


def _scaled_by_state(state, x):
    state["k"] += 1.0
    return np.sum(state["k"] * np.sin(x))


scaled_by_partial = functools.partial(_scaled_by_state, PARTIAL_STATE)


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_counter_four_helpers_down_counts_one_call_per_hessian(mode):
    x = np.random.default_rng(60).normal(size=3)
    DEEP["n"] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):
            found = sg.hessian(lambda t: counted_four_levels_down(t) * 1.0, mode=mode)(x)
            assert_close(found, np.diag(-call * np.sin(x)))
            assert DEEP["n"] == call


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_the_state_a_partial_gives_counts_one_call_per_hessian(mode):
    x = np.random.default_rng(61).normal(size=3)
    PARTIAL_STATE["k"] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (1, 2):
            found = sg.hessian(lambda t: scaled_by_partial(t) * 1.0, mode=mode)(x)
            assert_close(found, np.diag(-call * np.sin(x)))
            assert PARTIAL_STATE["k"] == call
            assert_close(sg.jacfwd(scaled_by_partial, mode=mode)(x), (call + 1) * np.cos(x))
            PARTIAL_STATE["k"] -= 1.0  # (the Jacobian's call, counted once)


class NoisyLayer:
    def __init__(self) -> None:
        self.rng = np.random.default_rng(62)

    def __call__(self, x):
        return np.sum(self.rng.normal(size=3) * np.sin(x))


NOISY = NoisyLayer()


def noisy(x):
    return NOISY(x)


def test_a_run_refused_part_way_draws_again_what_it_drew():
    """Mode "auto": the generated code of the gradient's Jacobian is refused after the
    layer drew; the tape runs it again from the generator's state before that run (it drew
    the next numbers: the derivative of another draw, the generator advanced twice)."""
    x = np.random.default_rng(63).normal(size=3)
    NOISY.rng = np.random.default_rng(62)
    twin = np.random.default_rng(62)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in (1, 2):
            found = sg.jacobian(sg.grad(noisy, mode="auto"), mode="auto")(x)
            assert_close(found, np.diag(-twin.normal(size=3) * np.sin(x)))
    assert NOISY.rng.bit_generator.state == twin.bit_generator.state  # one draw per call
