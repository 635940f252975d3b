"""Code that draws random numbers and runs more than once for one derivative draws the
same numbers each time: a checkpointed function or loop run again by the backward pass,
and a forward-mode Jacobian or Hessian run once per column.

``sg.checkpoint(block)`` and ``sg.checkpointed(range(n))`` recompute in the backward pass.
Code that draws noise or a dropout mask drew new numbers there, and the gradient was that
of another computation, in every mode, without an error. Now the generators the code can
reach are set back for the second run (NumPy's global one; generators among the
arguments, globals and closure variables, and those objects hold as attributes), and
what is still out of sight is refused: the second run must give the first run's values.

Forward-mode Jacobians (``sg.jacfwd``, ``sg.hessian``) run the function once per column
where they cannot batch the columns (the tape, loops): each column came from other noise.

The oracle is central differences of the same function without checkpoints, each
evaluation drawing from the same seeds.
"""

import random

import numpy as np
import numpy.random as npr
import pytest
from oracle import assert_close

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")
RNG = np.random.default_rng(11)
RNG_START = RNG.bit_generator.state


def _reset(seed=3):
    np.random.seed(seed)
    RNG.bit_generator.state = RNG_START


def noisy_block(h):
    return np.tanh(h + 0.5 * np.random.normal(size=h.shape))


def generator_block(h):
    return np.tanh(h * (RNG.uniform(size=h.shape) > 0.3) / 0.7)


def argument_block(h, rng):
    return np.tanh(h + rng.normal(size=h.shape))


class Dropout:
    def __init__(self):
        self.rng = np.random.default_rng(7)

    def __call__(self, h):
        return h * (self.rng.uniform(size=h.shape) > 0.4) / 0.6


checkpointed_noise = sg.checkpoint(noisy_block)
checkpointed_generator = sg.checkpoint(generator_block)
checkpointed_argument = sg.checkpoint(argument_block)


def two_noisy_blocks(x):
    return np.sum(checkpointed_noise(checkpointed_noise(x)) ** 2)


def two_generator_blocks(x):
    return np.sum(checkpointed_generator(checkpointed_generator(x * 2.0)) ** 2)


def noisy_loop(x):
    h = x
    for _ in sg.checkpointed(range(6), snapshots=2):
        h = np.tanh(h + 0.3 * np.random.normal(size=h.shape))
    return np.sum(h**2)


def generator_loop(x):
    h = x
    for _ in sg.checkpointed(range(5), snapshots=2):
        h = np.sin(h) * (RNG.uniform(size=h.shape) > 0.2)
    return np.sum(h**2)


def plain(function):
    """The same computation without checkpoints, for the oracle."""
    return {
        two_noisy_blocks: lambda x: np.sum(noisy_block(noisy_block(x)) ** 2),
        two_generator_blocks: lambda x: np.sum(generator_block(generator_block(x * 2.0)) ** 2),
        noisy_loop: noisy_loop,
        generator_loop: generator_loop,
    }[function]


def seeded_differences(f, x, step=1e-6):
    gradient = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = step
        _reset()
        up = f(x + e)
        _reset()
        down = f(x - e)
        gradient[i] = (up - down) / (2 * step)
    return gradient


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f",
    [two_noisy_blocks, two_generator_blocks, noisy_loop, generator_loop],
    ids=lambda f: f.__name__,
)
def test_the_backward_pass_draws_the_same_random_numbers(mode, f):
    x = np.array([0.4, -0.8, 1.3])
    expected = seeded_differences(plain(f), x)
    _reset()
    plain(f)(x)
    after_plain = (np.random.normal(), RNG.normal())
    _reset()
    gradient = sg.grad(f, mode=mode)(x)
    # the generators end where the function left them
    assert (np.random.normal(), RNG.normal()) == after_plain
    assert_close(gradient, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_a_generator_given_as_an_argument_or_held_by_a_layer(mode):
    x = np.array([0.4, -0.8, 1.3])
    layer = sg.checkpoint(Dropout())

    def f(x, rng):
        return np.sum(checkpointed_argument(layer(x), rng) ** 2)

    def unchecked(x, rng):
        return np.sum(argument_block(Dropout()(x), rng) ** 2)

    def evaluate(z):
        return unchecked(z, np.random.default_rng(5))

    layer.layer.rng = np.random.default_rng(7)
    gradient = sg.grad(f, mode=mode)(x, np.random.default_rng(5))
    assert_close(gradient, seeded_differences(evaluate, x), rtol=1e-6, atol=1e-8)


SETTINGS = {"rng": np.random.default_rng(2)}  # a generator the code reaches through a dict


def hidden_block(h):
    return np.tanh(h + SETTINGS["rng"].normal(size=h.shape))


checkpointed_hidden = sg.checkpoint(hidden_block)


@pytest.mark.parametrize("mode", MODES)
def test_a_generator_out_of_sight_is_refused_at_the_block(mode):
    def f(x):
        return np.sum(checkpointed_hidden(x) ** 2)

    with pytest.raises(
        sg.UnsupportedError, match=rf"{__file__}:\d+: the checkpointed hidden_block"
    ):
        sg.grad(f, mode=mode)(np.array([0.4, -0.8]))


def noisy_map(x):
    return np.tanh(x * RNG.normal(size=x.shape)) + 0.1 * np.random.normal(size=x.shape)


def noisy_loss_with_a_loop(x):
    total = 0.0
    for i in range(x.size):
        total = total + np.sin(x[i] * np.random.normal()) ** 2
    return total * np.sum(x * RNG.normal(size=x.shape))


def _seeded_jacobian(f, x, step=1e-6):
    columns = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = step
        _reset()
        up = f(x + e)
        _reset()
        down = f(x - e)
        columns.append((up - down) / (2 * step))
    return np.stack(columns, axis=-1)


@pytest.mark.parametrize("mode", MODES)
def test_each_column_of_a_forward_jacobian_draws_the_same_numbers(mode):
    x = np.array([0.4, -0.8, 1.3])
    _reset()
    jacobian = sg.jacfwd(noisy_map, mode=mode)(x)
    after = (np.random.normal(), RNG.normal())
    _reset()
    noisy_map(x)
    assert (np.random.normal(), RNG.normal()) == after
    assert_close(jacobian, _seeded_jacobian(noisy_map, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_each_column_of_a_hessian_draws_the_same_numbers(mode):
    x = np.array([0.4, -0.8, 1.3])
    _reset()
    hessian = sg.hessian(noisy_loss_with_a_loop, mode=mode)(x)
    gradient = sg.grad(noisy_loss_with_a_loop, mode="tape")
    assert_close(hessian, _seeded_jacobian(gradient, x), rtol=1e-5, atol=1e-7)


def _python_noise(h):
    return h + np.array([random.gauss(0.0, 0.3) for _ in range(h.size)])


checkpointed_python_noise = sg.checkpoint(lambda h: np.tanh(_python_noise(h)))


@pytest.mark.parametrize("mode", MODES)
def test_python_random_in_a_helper_the_block_calls(mode):
    x = np.array([0.4, -0.8, 1.3])

    def f(x):
        return np.sum(checkpointed_python_noise(x) ** 2)

    def evaluate(z):
        random.seed(9)
        return np.sum(np.tanh(_python_noise(z)) ** 2)

    random.seed(9)
    gradient = sg.grad(f, mode=mode)(x)
    assert_close(gradient, seeded_differences(evaluate, x), rtol=1e-6, atol=1e-8)


def test_a_block_that_names_no_generator_notes_none():
    from s2sgrad.runtime.replays import random_sources

    assert random_sources(lambda h: np.tanh(h) * 2.0, (np.ones(2),)) == []
    assert random_sources(noisy_block, (np.ones(2),)) != []


checkpointed_module_alias = sg.checkpoint(lambda h: np.tanh(h + 0.5 * npr.normal(size=h.shape)))


@pytest.mark.parametrize("mode", MODES)
def test_numpy_random_imported_under_another_name(mode):
    # the code names neither "random" nor a generator: the module itself is the source
    x = np.array([0.4, -0.8, 1.3])

    def f(x):
        return np.sum(checkpointed_module_alias(x) ** 2)

    def evaluate(z):
        return np.sum(np.tanh(z + 0.5 * npr.normal(size=z.shape)) ** 2)

    _reset()
    gradient = sg.grad(f, mode=mode)(x)
    assert_close(gradient, seeded_differences(evaluate, x), rtol=1e-6, atol=1e-8)


def test_the_attributes_of_a_module_are_not_searched_for_generators():
    from s2sgrad.runtime.replays import random_sources

    # np's hundreds of attributes: looking at each cost tens of microseconds per call
    assert random_sources(lambda h: np.sum(np.tanh(h)), (np.ones(2),)) == []
