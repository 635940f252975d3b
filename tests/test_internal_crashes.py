"""Programs that once raised an internal exception (or gave a wrong gradient) at a user.

Each is checked against central differences (sg.check_grads, tests/oracle.py) in every
engine, first and second call.
"""

import numpy as np
import pytest
from oracle import numeric_grad

try:
    import scipy.integrate
    import scipy.linalg
    import scipy.ndimage
except ImportError:  # SciPy is optional
    scipy = None

import s2sgrad as sg

rng = np.random.default_rng(11)


def stacked_grid(x, y):
    return np.stack(np.meshgrid(x, y))


def grid_read_three_ways(x, y):
    m = np.meshgrid(x, y)
    return np.sum(np.stack(m) ** 2) + np.sum(np.concatenate(m) ** 3) + np.sum(m[0] * m[1])


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_second_order_through_a_joined_meshgrid(mode):
    for _ in range(2):
        sg.check_grads(stacked_grid, rng.random(2), rng.random(3), order=2, mode=mode)
        sg.check_grads(grid_read_three_ways, rng.random(2), rng.random(3), order=2, mode=mode)


def test_two_cotangents_of_a_meshgrid_are_added_not_concatenated():
    for _ in range(2):
        sg.check_grads(grid_read_three_ways, rng.random(2), rng.random(3), order=1, mode="s2s")


def running_values(w, n):
    acc, kept = 0, []
    for t in range(n):
        acc = acc + np.sin(w * t)
        kept = kept + [acc * w]
    return acc * w + sum(kept)


def running_values_in_branches(w, n):
    kept = []
    for t in range(n):
        if t % 2:  # noqa: SIM108 (a branch on purpose)
            kept = kept + [np.cos(w * t)]
        else:
            kept = [w * t] + kept
    return sum(kept) * w


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("function", [running_values, running_values_in_branches])
def test_a_list_joined_in_a_loop(mode, function):
    derivative = sg.grad(function, mode=mode)
    for n in (5, 3):  # a second call, another trip count
        w = float(rng.normal())
        expected = numeric_grad(function, [w, n], 0)
        np.testing.assert_allclose(derivative(w, n), expected, rtol=1e-6, atol=1e-8)


def squared_error(p, x, y):
    return np.sum((p * x - y) ** 2)


@pytest.mark.parametrize("show", [sg.show, sg.source])
def test_show_given_the_gradients_arguments_says_how_to_call_it(show):
    p, x, y = rng.normal(size=(3, 4))
    with pytest.raises(TypeError, match=r"wrt must be a position .* not ndarray"):
        show(sg.grad(squared_error), p, x)
    with pytest.raises(TypeError, match="must be True or False, not ndarray"):
        show(sg.grad(squared_error), 0, x)


def test_show_with_right_options_still_prints(capsys):
    sg.show(squared_error, wrt=(0, "x"))
    sg.show(squared_error, wrt=1, forward=True)
    assert capsys.readouterr().out.count("def ") >= 2


checkpointed_layer = sg.checkpoint(lambda x, w: np.tanh(x * w))


def through_a_checkpointed_lambda(w, x):
    for _ in range(3):
        x = checkpointed_layer(x, w)
    return np.sum(x**2)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_a_checkpointed_lambda_called_in_a_loop(mode):
    derivative = sg.grad(through_a_checkpointed_lambda, mode=mode)
    for _ in range(2):
        w, x = rng.normal(size=(2, 3))
        expected = numeric_grad(through_a_checkpointed_lambda, [w, x], 0)
        np.testing.assert_allclose(derivative(w, x), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.filterwarnings("ignore::s2sgrad.errors.FallbackWarning")
def test_hvp_through_a_checkpointed_lambda():
    w, x, v = rng.normal(size=(3, 3))
    gradient = sg.grad(through_a_checkpointed_lambda, mode="tape")
    expected = numeric_grad(lambda u: np.dot(gradient(u, x), v), [w], 0)
    products = sg.hvp(through_a_checkpointed_lambda, (w, x), (v, np.zeros(3)), mode="auto")
    np.testing.assert_allclose(products[0], expected, rtol=1e-5, atol=1e-7)


def symmetric_or_not(x):  # (expm, used here before, has a rule now)
    outer = np.outer(x, x)
    return np.sum(outer) if scipy.linalg.issymmetric(outer) else np.sum(outer**2)


def reads_flags(x):
    return np.sum(x**2) if x.flags.writeable else np.sum(x)


def test_a_library_reading_an_attribute_is_refused_at_the_users_line():
    if scipy is None:
        pytest.skip("SciPy is not installed")
    with pytest.raises(sg.NonDifferentiableError) as refused:
        sg.grad(symmetric_or_not, mode="tape")(np.array([0.3, 0.7, 1.1]))
    location, message = str(refused.value).split(": ", 1)
    assert "test_internal_crashes.py:" in location and "scipy" not in location
    # SciPy reads x.flags (1.17) or refuses the type itself (1.18): either is named
    assert ".flags" in message or "scipy.linalg.issymmetric" in message


def integrated(x):
    return np.sum(scipy.integrate.cumulative_trapezoid(x))


def test_a_library_rejecting_the_type_of_a_tape_value_is_refused_by_name():
    if scipy is None:
        pytest.skip("SciPy is not installed")
    x = np.array([0.3, 0.7, 1.1, 0.4])
    try:
        gradient = sg.grad(integrated, mode="tape")(x)
    except sg.NonDifferentiableError as refused:  # SciPy 1.17+ checks the array's type
        location, message = str(refused).split(": ", 1)
        assert "test_internal_crashes.py:" in location
        assert "derivative(of=scipy.integrate.cumulative_trapezoid)" in message
    else:  # older SciPy computes with the tape's values: then the gradient is right
        np.testing.assert_allclose(gradient, numeric_grad(integrated, (x,), 0), atol=1e-7)


def test_the_users_own_attribute_read_is_refused_at_its_line():
    with pytest.raises(sg.NonDifferentiableError, match=r"test_internal_crashes.py:\d+: .flags"):
        sg.grad(reads_flags, mode="tape")(np.ones(3))


def filtered(x):
    return np.sum(scipy.ndimage.gaussian_filter(x, 1.0))


def test_a_tape_refusal_inside_a_library_names_the_users_line():
    if scipy is None:
        pytest.skip("SciPy is not installed")
    with pytest.raises(sg.NonDifferentiableError) as refused:
        sg.grad(filtered, mode="tape")(np.array([0.3, 0.7, 1.1, 0.4]))
    location = str(refused.value).split(": ")[0]
    assert "test_internal_crashes.py:" in location and "scipy" not in location


def test_numpy_functions_replaced_while_a_tape_records_keep_their_docstrings():
    # numpy.ma (first imported by SciPy inside a function the tape runs) edits np.clip's
    from s2sgrad.tape.conversions import Converting

    assert Converting(np.clip, lambda *a: None).__doc__ == np.clip.__doc__


def _two_body_steps(pos, masses):
    vel = np.zeros_like(pos)
    for _ in range(2):
        diff = pos[None, :, :] - pos[:, None, :]
        vel = vel + np.sum(masses[None, :, None] * diff, axis=1)
        pos = pos + 0.1 * vel
    return np.sum(pos**2)


def test_second_order_of_an_update_the_tape_refuses_in_generated_code():
    """The gradient's own ``dmasses[None, :, None] += ...``, run on the tape when the
    gradient is differentiated again, raised a TypeError from reading the line of generated
    code; in mode "auto" the tape now records the user's code instead."""
    pos, masses = rng.normal(size=(3, 2)), np.array([1.0, 2.0, 0.5])
    direction = rng.normal(size=(3, 2))

    def loss(x):
        arguments = [pos, masses]
        arguments[0] = x
        return _two_body_steps(*arguments)

    def along(gradient):
        return lambda x: np.sum(gradient(x) * direction)

    expected = numeric_grad(along(sg.grad(loss, mode="tape")), [pos], 0)
    second = sg.grad(along(sg.grad(loss)))
    for _ in range(2):
        np.testing.assert_allclose(second(pos), expected, rtol=1e-5, atol=1e-7)
