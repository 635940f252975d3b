"""``tape_vjp``: the entry point of the function transforms on the tape."""

import copy

import numpy as np
import pytest
from oracle import assert_close, numeric_vjp

from s2sgrad.errors import NonDifferentiableError
from s2sgrad.tape import GradientTape, Variable, constant, tape_vjp


def model(params, x, scale):
    hidden = np.tanh(x @ params["w"] + params["b"])
    out = hidden * params["layers"][0] + params["layers"][1]["shift"] * scale
    return np.sum(out**2) + params["layers"][1]["weight"] * np.sum(x)


@pytest.fixture
def problem():
    rng = np.random.default_rng(1)
    params = {
        "w": rng.normal(size=(3, 4)),
        "b": 0.5,
        "layers": [rng.normal(size=4), {"shift": rng.normal(size=4), "weight": 1.5}],
    }
    x = rng.normal(size=(2, 3))
    return params, x, 0.7


def test_vjp_over_nested_containers_matches_finite_differences(problem):
    params, x, scale = problem
    out, pullback = tape_vjp(model, (params, x, scale), {}, (0, 1, 2))
    assert type(out) is np.float64 and out == pytest.approx(model(params, x, scale))
    dparams, dx, dscale = pullback(1.0)
    assert set(dparams) == {"w", "b", "layers"} and isinstance(dparams["layers"], list)
    assert type(dparams["b"]) is float and type(dscale) is float
    for i, got in enumerate((dparams, dx, dscale)):
        expected = numeric_vjp(model, (params, x, scale), i, 1.0)
        assert_close(got, expected, rtol=1e-6, atol=1e-8)


def test_vjp_with_structured_output_and_cotangent():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=3), rng.normal(size=(2, 3))

    def f(a, b):
        return {"sum": np.sum(a * b), "pair": (np.sin(a) * b, a**2)}

    cotangent = {"sum": 2.0, "pair": (rng.normal(size=(2, 3)), rng.normal(size=3))}
    out, pullback = tape_vjp(f, (a, b), {}, (0, 1))
    assert isinstance(out["pair"], tuple) and out["pair"][0].shape == (2, 3)

    da, db = pullback(cotangent)
    np.testing.assert_allclose(da, numeric_vjp(f, (a, b), 0, cotangent), rtol=1e-6)
    np.testing.assert_allclose(db, numeric_vjp(f, (a, b), 1, cotangent), rtol=1e-6)
    # a missing part of the cotangent counts as zero
    da_sum_only, _ = pullback({"sum": 1.0, "pair": (None, None)})
    np.testing.assert_allclose(da_sum_only, np.sum(b, axis=0))


def test_pullback_can_be_called_several_times_and_is_linear():
    x = np.array([0.3, 1.2, -0.4])
    out, pullback = tape_vjp(lambda x: np.exp(x) * x, (x,), {}, (0,))
    g = np.array([1.0, -2.0, 0.5])
    first = pullback(g)[0]
    np.testing.assert_allclose(pullback(g)[0], first)
    np.testing.assert_allclose(pullback(3 * g)[0], 3 * first)
    np.testing.assert_allclose(first, g * np.exp(x) * (1 + x))


def test_float32_is_preserved_and_inputs_are_never_mutated():
    rng = np.random.default_rng(3)
    params = {"w": rng.normal(size=(3, 2)).astype(np.float32), "b": np.float32(0.5)}
    x = rng.normal(size=(4, 3)).astype(np.float32)
    before = copy.deepcopy((params, x))

    def f(params, x):
        return np.sum(np.tanh(x @ params["w"] + params["b"]) ** 2)

    out, pullback = tape_vjp(f, (params, x), {}, (0, 1))
    dparams, dx = pullback(np.float32(1.0))
    assert dparams["w"].dtype == np.float32 and dx.dtype == np.float32
    assert np.result_type(dparams["b"]) == np.float32
    assert dparams["w"] is not params["w"] and dx is not x
    np.testing.assert_array_equal(params["w"], before[0]["w"])
    np.testing.assert_array_equal(x, before[1])
    assert params["b"] == before[0]["b"]


def test_unconnected_arguments_and_integer_leaves_get_zeros():
    def f(x, unused, config):
        return np.sum(x * config["factor"])

    x = np.ones(3)
    unused = {"a": np.ones((2, 2), dtype=np.float32), "b": 2.0}
    config = {"factor": 3, "name": "double"}
    _, pullback = tape_vjp(f, (x, unused, config), {}, (0, 1, 2))
    dx, dunused, dconfig = pullback(1.0)
    np.testing.assert_allclose(dx, [3.0, 3.0, 3.0])
    assert dunused["a"].dtype == np.float32 and dunused["a"].shape == (2, 2)
    assert not dunused["a"].any() and dunused["b"] == 0.0
    assert dconfig == {"factor": 0.0, "name": None}


def test_one_array_passed_as_two_arguments_gets_two_gradients():
    a = np.array([1.0, 2.0])
    _, pullback = tape_vjp(lambda u, v: np.sum(u * v**2), (a, a), {}, (0, 1))
    du, dv = pullback(1.0)
    np.testing.assert_allclose(du, a**2)
    np.testing.assert_allclose(dv, 2 * a * a)


def test_keyword_arguments_are_passed_and_not_differentiated():
    _, pullback = tape_vjp(
        lambda x, *, power: np.sum(x**power), (np.ones(2) * 2,), {"power": 3}, (0,)
    )
    np.testing.assert_allclose(pullback(1.0)[0], [12.0, 12.0])


def tape_grad(f):
    """grad built from tape_vjp, the way the function transforms use it."""

    def df(x):
        _, pullback = tape_vjp(f, (x,), {}, (0,))
        return pullback(1.0)[0]

    return df


def test_tape_vjp_composes_grad_of_grad_of_grad():
    def f(x):
        return np.sin(x) * x**3

    x = 0.7
    d1 = tape_grad(f)
    d2 = tape_grad(d1)
    d3 = tape_grad(d2)
    assert d1(x) == pytest.approx(np.cos(x) * x**3 + 3 * x**2 * np.sin(x))
    assert d2(x) == pytest.approx(-np.sin(x) * x**3 + 6 * x**2 * np.cos(x) + 6 * x * np.sin(x))
    expected = -np.cos(x) * x**3 - 9 * x**2 * np.sin(x) + 18 * x * np.cos(x) + 6 * np.sin(x)
    assert d3(x) == pytest.approx(expected)
    assert type(d3(x)) is float


def test_hessian_vector_product_through_tape_vjp():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 3))
    x, v = rng.normal(size=3), rng.normal(size=3)

    def f(x):
        return np.sum(np.tanh(a @ x) ** 2) + np.sum(x**4)

    grad_f = tape_grad(f)
    _, pullback = tape_vjp(grad_f, (x,), {}, (0,))
    step = 1e-6
    expected = (grad_f(x + step * v) - grad_f(x - step * v)) / (2 * step)
    np.testing.assert_allclose(pullback(v)[0], expected, rtol=1e-6, atol=1e-8)


def test_tape_vjp_inside_a_recording_gradient_tape():
    x = constant(np.array([0.5, -1.0]))
    with GradientTape() as outer:
        outer.watch(x)
        _, pullback = tape_vjp(lambda u: np.sum(np.exp(u) * u), (x,), {}, (0,))
        (g,) = pullback(1.0)
        total = np.sum(g)
    # d/dx sum((1 + x) e^x) = (2 + x) e^x
    np.testing.assert_allclose(outer.gradient(total, x), (2 + x.numpy()) * np.exp(x.numpy()))


def test_variables_read_inside_f_are_not_watched():
    w = Variable(np.array([2.0, 3.0]))
    _, pullback = tape_vjp(lambda x: np.sum(w * x), (np.ones(2),), {}, (0,))
    np.testing.assert_allclose(pullback(1.0)[0], [2.0, 3.0])


def test_unknown_function_inside_f_names_the_line():
    def f(x):
        return np.sum(np.sort_complex(x).real)

    with pytest.raises(NonDifferentiableError, match=r"test_tape_vjp\.py:\d+: np\.sort_complex"):
        tape_vjp(f, (np.ones(4),), {}, (0,))


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_storing_a_tape_value_into_a_plain_array_the_function_made_is_recorded(shape):
    def f(x):
        buffer = np.zeros(shape)
        buffer[0] = np.sum(x**2)  # the tape takes the buffer over as a tape value
        return np.sum(buffer * x)

    x = np.random.default_rng(2).uniform(0.5, 1.5, size=shape)
    _, pullback = tape_vjp(f, (x,), {}, (0,))
    (gradient,) = pullback(1.0)
    written = np.zeros(shape)
    written[0] = np.sum(x**2)  # d/dx of sum(buffer * x) through buffer * x, at the buffer
    np.testing.assert_allclose(gradient, 2 * x * np.sum(x[0]) + written, rtol=1e-12)


def test_storing_a_tape_value_into_a_given_plain_array_is_refused_on_its_line():
    buffer = np.zeros(3)

    def f(x):
        buffer[0] = np.sum(x**2)  # NumPy wraps the refusal in a ValueError
        return np.sum(buffer * x)

    line = f.__code__.co_firstlineno + 1
    with pytest.raises(NonDifferentiableError, match=rf"test_tape_vjp\.py:{line}: writing a"):
        tape_vjp(f, (np.ones(3),), {}, (0,))


def test_updating_a_given_plain_array_with_a_tape_value_is_refused_on_its_line():
    def f(x, total):
        total *= x
        return np.sum(total)

    line = f.__code__.co_firstlineno + 1
    refusal = rf"test_tape_vjp\.py:{line}: 'total \*= x' .* Write 'total = total \* \.\.\.'"
    with pytest.raises(NonDifferentiableError, match=refusal):
        tape_vjp(f, (np.ones(3), np.ones(3)), {}, (0,))


def test_pullback_inside_an_unrelated_recording_tape_returns_plain_values():
    with GradientTape() as tape:
        _, pullback = tape_vjp(lambda x: np.sin(x) * 2.0, (np.ones(2),), {}, (0,))
        (g,) = pullback(np.ones(2))
    assert type(g) is np.ndarray
    np.testing.assert_allclose(g, 2 * np.cos(np.ones(2)))
    assert "0 operations recorded" in repr(tape)


def test_returned_gradients_never_share_memory_with_each_other_or_the_cotangent():
    a, b = np.ones(3), np.ones(3)
    cotangent = np.array([1.0, 2.0, 3.0])
    _, pullback = tape_vjp(lambda a, b: a + b, (a, b), {}, (0, 1))
    da, db = pullback(cotangent)
    assert da is not db and da is not cotangent and db is not cotangent
    da[0] = 100.0
    assert db[0] == 1.0 and cotangent[0] == 1.0
