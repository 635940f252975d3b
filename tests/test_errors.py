"""Errors a user can cause: each names the user's file and line and what to do instead."""

from __future__ import annotations

import contextlib
import math
import sys
import warnings

import numpy as np
import pytest
from oracle import directional_derivative

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning

HERE = "test_errors.py"


def vector_output(x):
    return np.sin(x)


def mutates_argument(x):
    x[0] = 1.0
    return np.sum(x)


def no_rule(x):
    return np.sum(np.sort_complex(x).real)


def test_non_scalar_output_names_vjp_and_jacobian():
    with pytest.raises(ValueError) as error:
        sg.grad(vector_output)(np.ones(3))
    message = str(error.value)
    assert "vjp" in message and "jacobian" in message
    assert HERE in message and "(3,)" in message


def scaled_sum(x, scale=2.0):
    return np.sum(x) * scale


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize(
    ("args", "kwargs", "problem"),
    [
        ((np.ones(2), 1.0, 2.0), {}, "too many positional arguments"),
        ((), {}, "missing a required argument: 'x'"),
        ((np.ones(2),), {"shift": 1.0}, "unexpected keyword argument 'shift'"),
    ],
)
def test_a_call_the_function_cannot_take_names_it(mode, args, kwargs, problem):
    """Said of the user's function and where it is, not of the generated ``dscaled_sum``."""
    with pytest.raises(TypeError) as error:
        sg.grad(scaled_sum, mode=mode)(*args, **kwargs)
    message = str(error.value)
    assert f"{HERE}:" in message and "scaled_sum()" in message and problem in message


def test_integer_argument_is_a_type_error():
    with pytest.raises(TypeError, match="integer"):
        sg.grad(vector_output)(np.arange(3))
    with pytest.raises(TypeError, match="3.0"):
        sg.grad(lambda x: x * 2.0)(3)
    with pytest.raises(TypeError, match="boolean"):
        sg.grad(lambda x: x * 2.0)(True)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_mutating_an_argument_differentiates_a_copy(mode):
    """The derivative is that of the function of the argument's values at the call; the
    caller's array is left as it was (see tests/test_argument_updates.py)."""
    x = np.array([0.5, 2.0, -1.0])
    gradient = sg.grad(mutates_argument, mode=mode)(x)
    np.testing.assert_array_equal(gradient, [0.0, 1.0, 1.0])  # x[0] is overwritten
    np.testing.assert_array_equal(x, [0.5, 2.0, -1.0])


def test_library_function_without_rule():
    with pytest.raises(sg.NonDifferentiableError) as error:
        sg.grad(no_rule, mode="s2s")(np.ones(3))
    message = str(error.value)
    assert f"{HERE}:" in message and "np.sort_complex" in message and "derivative" in message


def test_no_source_in_s2s_mode():
    namespace = {"np": np}
    # a file name of its own: another test's exec may have left '<string>' in linecache
    code = compile("def f(x):\n    return np.sum(x ** 2)\n", "<test_no_source>", "exec")
    exec(code, namespace)
    with pytest.raises(sg.S2SGradError, match="no source"):
        sg.grad(namespace["f"], mode="s2s")(np.ones(2))


def test_bad_wrt():
    with pytest.raises(ValueError, match="no parameter named 'z'"):
        sg.grad(vector_output, wrt="z")
    with pytest.raises(ValueError, match="out of range"):
        sg.grad(vector_output, wrt=3)
    with pytest.raises(ValueError, match="mode"):
        sg.grad(vector_output, mode="fast")


def walrus(x):
    if np.sum(x) < -5.0 or (s := np.sum(x)) > 0:  # s bound only when the left side is False
        return s * 2.0
    return s


def test_hidden_assignments_are_named_not_ignored():
    # (an assignment expression run first in its statement is an assignment before it)
    with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+: an assignment expression"):
        sg.grad(walrus, mode="s2s")(np.ones(3))
    with pytest.warns(UserWarning, match="assignment expression"):
        np.testing.assert_allclose(sg.grad(walrus)(np.ones(3)), 2.0 * np.ones(3))


class Holder:
    pass


HOLDER = Holder()


def stores_on_a_local_object(x):
    box = Holder()
    box.v = 2.0 * x
    return np.sum(box.v)


def stores_on_a_global_object(x):
    HOLDER.h = np.sin(x)
    return np.sum(HOLDER.h)


def writes_flat(x):
    t = x * 2.0
    t.flat = 0.5
    return np.sum(t * x)


def counts_on_an_object(x):
    HOLDER.calls = 1  # nothing differentiated is stored: an ordinary statement
    return np.sum(np.sin(x))


def _jvp_of(f, mode):
    return lambda x: sg.jvp(f, (x,), (x,), mode=mode)


@pytest.mark.parametrize(
    "f, transform",
    [
        (writes_flat, sg.grad),
        (stores_on_a_local_object, _jvp_of),  # forward mode keeps no attribute state
        (stores_on_a_global_object, _jvp_of),
        (writes_flat, _jvp_of),
    ],
)
def test_storing_a_differentiated_value_on_an_attribute_is_refused(f, transform):
    # it crashed inside the transformer; read back through the object it would be lost
    with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+: .*(mode='tape'|t\[)"):
        transform(f, mode="s2s")(np.ones(3))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_value_stored_on_a_global_object_and_read_back_at_once(mode):
    # nothing but NumPy runs between the store and the read: the read is the stored value
    x = np.random.default_rng(3).normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(sg.grad(stores_on_a_global_object, mode=mode)(x), np.cos(x))
    assert type(HOLDER.h) is np.ndarray


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_an_object_made_in_the_function_keeps_its_attributes_by_source(mode):
    # the object is the function's own: what it stores is read back as a variable
    x = np.random.default_rng(3).normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(sg.grad(stores_on_a_local_object, mode=mode)(x), 2.0)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_an_attribute_assignment_of_a_constant_is_an_ordinary_statement(mode):
    x = np.random.default_rng(4).normal(size=3)
    HOLDER.calls = 0
    np.testing.assert_allclose(sg.grad(counts_on_an_object, mode=mode)(x), np.cos(x))
    assert HOLDER.calls == 1


def deletes_an_item(x):
    parts = {"a": x, "b": 2.0 * x}
    del parts["a"]
    return np.sum(parts["b"])


def test_deleting_an_item_is_refused():
    with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+: deleting an item"):
        sg.grad(deletes_an_item, mode="s2s")(np.ones(2))
    np.testing.assert_allclose(sg.grad(deletes_an_item, mode="tape")(np.ones(2)), 2.0)


def uses_math_trunc(x):
    y = x * 2.0
    return math.trunc(y) * y


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_math_functions_without_a_rule_name_the_line_and_their_numpy_twin(mode):
    # the message named a generated file and talked about the tape (math.sin has a rule
    # now, tests/test_python_math.py; math.trunc makes an integer, like math.floor)
    line = uses_math_trunc.__code__.co_firstlineno + 2
    for transform in (sg.grad, lambda f, mode: lambda x: sg.jvp(f, (x,), (1.0,), mode=mode)):
        with pytest.raises(sg.NonDifferentiableError, match=rf"{HERE}:{line}: .*use np\.trunc"):
            transform(uses_math_trunc, mode=mode)(0.5)


def test_non_scalar_output_on_the_tape_names_the_functions_line():
    line = vector_output.__code__.co_firstlineno
    with pytest.raises(ValueError, match=rf"{HERE}:{line}: vector_output: grad needs"):
        sg.grad(vector_output, mode="tape")(np.ones(3))


def _dense(x, k, activation):
    return activation(x @ k)


def _dense_loss(k, x):
    return np.sum(_dense(x, k, np.tanh) ** 2)


def _energy(x, p):
    return np.sum((x * p["w"]) ** 2)


def _tape_gradient_norm(p, x):
    return np.sum(sg.grad(_energy, wrt=0, mode="tape")(x, p))


def test_a_hessian_through_a_function_argument_by_source_transformation():
    # forward mode over the gradient follows the pullback of activation(x @ k), a call
    # resolved at run time, along the values it was made from
    k, x = np.full((3, 2), 0.1), np.ones((4, 3))
    got = sg.hessian(_dense_loss, mode="s2s")(k, x)
    column = np.zeros_like(k)
    column[0, 1] = 1.0
    gradient = sg.grad(_dense_loss, mode="tape")
    expected = directional_derivative(lambda k: gradient(k, x), k, column, step=1e-5)
    np.testing.assert_allclose(got[:, :, 0, 1], expected, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize(
    "transform, line_of",
    [(lambda: sg.jacobian(sg.grad(_dense_loss, mode="s2s"), mode="s2s"), _dense)],
    ids=["jacobian_of_grad"],
)
def test_second_derivatives_through_a_function_argument_name_the_users_line(transform, line_of):
    k, x = np.full((3, 2), 0.1), np.ones((4, 3))
    with pytest.raises(sg.UnsupportedError) as raised:
        transform()(k, x)
    message = str(raised.value)
    assert f"test_errors.py:{line_of.__code__.co_firstlineno}" in message
    assert "s2sgrad/runtime" not in message and "mode='auto'" in message
    with warnings.catch_warnings():  # auto: the tape takes over (warning once), and is right
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = sg.hessian(_dense_loss)(k, x)
    column = np.zeros_like(k)
    column[0, 1] = 1.0
    gradient = sg.grad(_dense_loss, mode="tape")
    expected = directional_derivative(lambda k: gradient(k, x), k, column, step=1e-5)
    np.testing.assert_allclose(got[:, :, 0, 1], expected, rtol=1e-5, atol=1e-8)

    with pytest.raises(sg.UnsupportedError) as raised:
        sg.grad(_tape_gradient_norm, mode="s2s")({"w": np.array([1.5])}, np.array([2.0]))
    message = str(raised.value)
    line = _tape_gradient_norm.__code__.co_firstlineno + 1  # the statement calling it
    assert f"test_errors.py:{line}" in message and "mode='tape'" in message


def test_a_tape_gradient_called_inside_a_source_transformed_one_names_the_users_line():
    with pytest.raises(sg.UnsupportedError) as raised:
        sg.grad(_tape_gradient_norm, mode="s2s")({"w": np.array([1.5])}, np.array([2.0]))
    message = str(raised.value)
    line = _tape_gradient_norm.__code__.co_firstlineno + 1  # the statement calling it
    assert f"test_errors.py:{line}" in message and "mode='tape'" in message


def test_jvp_wants_a_tuple_of_primals_not_an_array():
    with pytest.raises(TypeError, match=r"sg.jvp\(f, \(x,\), \(v,\)\)"):
        sg.jvp(np.sin, np.zeros(3), np.ones(3))


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_a_library_function_without_a_rule_is_named_by_its_own_module(mode):
    special = pytest.importorskip("scipy.special")

    def f(x):
        return np.sum(special.wrightomega(x))

    with pytest.raises(sg.NonDifferentiableError) as caught:
        sg.grad(f, mode=mode)(np.array([1.5, 2.5]))
    assert "scipy.special.wrightomega" in str(caught.value)
    assert "np.wrightomega" not in str(caught.value) and "from NumPy" not in str(caught.value)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_a_library_function_calling_its_own_ufunc_is_named_at_the_users_line(mode):
    # scipy.special.assoc_laguerre is Python code calling the ufunc eval_genlaguerre: the
    # tape sees only the ufunc, and names the function the user called, at the user's line
    special = pytest.importorskip("scipy.special")

    def f(x):
        return np.sum(np.real(special.assoc_laguerre(x, 2)))

    line = f.__code__.co_firstlineno + 1
    with pytest.raises(sg.NonDifferentiableError) as caught:
        sg.grad(f, mode=mode)(np.array([1.5, 2.5]))
    message = str(caught.value)
    assert message.startswith(f"{__file__}:{line}: scipy.special.assoc_laguerre"), message
    assert "the ufunc" not in message


def _einsum_square(a):
    return np.sum(np.einsum("ij,jk->ik", a, a) ** 2)


def test_second_order_through_a_called_rule_says_nothing_of_s2sgrads_own_code():
    # einsum's rule is called, not inlined; its own code is differentiated at run time (on
    # the tape where the transformer cannot): the user's code did not fall back
    a = np.random.default_rng(5).normal(size=(2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        second = sg.jacobian(sg.grad(_einsum_square))(a)
    gradient = sg.grad(_einsum_square, mode="tape")
    column = np.zeros_like(a)
    column[1, 0] = 1.0
    expected = directional_derivative(gradient, a, column)
    np.testing.assert_allclose(second[:, :, 1, 0], expected, rtol=1e-5, atol=1e-8)


def test_a_missing_rule_is_one_refusal_in_auto_not_a_fallback_that_fails_again():
    """The tape shares the rule registry: warning and trying it only repeats the error."""
    import warnings

    for transform in (
        lambda: sg.grad(no_rule)(np.ones(3)),
        lambda: sg.jvp(no_rule, (np.ones(3),), (np.ones(3),)),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(sg.NonDifferentiableError) as error:
                transform()
        assert f"{HERE}:" in str(error.value) and "np.sort_complex" in str(error.value)
        assert not [w for w in caught if issubclass(w.category, FallbackWarning)]


def spectral_norm(a):
    return np.linalg.norm(a, 2)


def ramp_padded(x):
    return np.sum(np.pad(x, 2, mode="linear_ramp") ** 2)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_refusals_raised_as_rules_run_name_the_users_file_and_line(mode):
    # the second derivative of the spectral norm raised a bare NotImplementedError, and a
    # rule's refusal on the tape or in a Hessian named no location
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+.*ord=2.*no\s+second"):
            sg.hessian(spectral_norm, mode=mode)(np.arange(6.0).reshape(3, 2) + 0.5)
        with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+.*linear_ramp"):
            sg.grad(ramp_padded, mode=mode)(np.ones(3))


def ordered_by_float_key(x):
    parts = [x[:2], x[2:], x[1:3]]
    ordered = sorted(parts, key=lambda part: float(np.sum(part)), **{})  # on the tape
    return np.sum(ordered[0] * 2.0 + ordered[-1])


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_tape_refusal_inside_generated_code_names_the_users_function(mode):
    # sorted(...) runs on the tape inside the generated gradient; the refusal of its key's
    # float() named only the generated file, a temporary the user never wrote
    line = ordered_by_float_key.__code__.co_firstlineno + 2  # the statement calling it
    with pytest.raises(
        sg.NonDifferentiableError, match=rf"{HERE}:{line} \(in its derivative.*stop_gradient"
    ):
        sg.grad(ordered_by_float_key, mode=mode)(np.array([0.3, -1.2, 0.5, 0.9]))


def scaled_tanh(x, A):
    return np.tanh(A @ x) * x


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_cotangent_or_tangent_of_the_wrong_shape_is_named(mode):
    # NumPy's broadcasting or matmul error, raised deep in generated code, said neither
    # which value was wrong nor where
    x, A = np.array([0.3, -0.2, 0.9]), np.eye(3)
    line = scaled_tanh.__code__.co_firstlineno
    _, pullback = sg.vjp(scaled_tanh, x, A, mode=mode)
    with pytest.raises(ValueError, match=rf"{HERE}:{line}: .*cotangent has shape \(4,\)"):
        pullback(np.ones(4))
    with pytest.raises(ValueError, match=rf"{HERE}:{line}: .*tangent of 'x' has shape \(4,\)"):
        sg.jvp(scaled_tanh, (x, A), (np.ones(4), np.zeros((3, 3))), mode=mode)
    assert np.allclose(pullback(1.0)[0], pullback(np.ones(3))[0])  # a number broadcasts


def test_hvp_says_it_takes_tuples():
    # hvp(f, x, v) with arrays read x's rows as the arguments: "wrt=1 is out of range"
    with pytest.raises(TypeError, match=r"hvp takes its primals as a tuple"):
        sg.hvp(lambda x: np.sum(x**3), np.ones(3), np.ones(3))


def layer_of_a_dict(params, x):
    return np.tanh(x @ params["W"] + params["b"])


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_tangents_and_cotangents_are_matched_to_their_values_by_key_and_entry(mode):
    # a tangent dict in another key order (as tree_unflatten makes it), None for zeros and
    # a number for a whole array are right, and were never refused
    params = {"W": np.ones((3, 2)) * 0.1, "b": np.zeros(2)}
    x = np.array([0.3, -0.2, 0.5])
    tangent = {"b": np.ones(2), "W": np.full((3, 2), 0.5)}
    _, product = sg.jvp(layer_of_a_dict, (params, x), (tangent, np.zeros(3)), mode=mode)
    _, same = sg.jvp(
        layer_of_a_dict, (params, x), (dict(reversed(tangent.items())), None), mode=mode
    )
    np.testing.assert_allclose(product, same)
    _, pullback = sg.vjp(layer_of_a_dict, params, x, mode=mode)
    np.testing.assert_allclose(pullback(1.0)[1], pullback(np.ones(2))[1])
    with pytest.raises(ValueError, match=r"tangent of 'params' has shape \(2, 3\)"):
        sg.jvp(
            layer_of_a_dict, (params, x), ({"W": np.ones((2, 3)), "b": np.ones(2)}, x), mode=mode
        )


@contextlib.contextmanager
def _users_own_context():
    yield


def _math_and_errstate(x):
    y = float(np.exp(x)) + 1.0  # the tape cannot follow float()
    with _users_own_context():  # the source transformer refuses this 'with'
        z = np.log(y)
    return z


def test_auto_mode_gives_both_engines_reasons_when_both_refuse():
    """In mode "auto" the tape's refusal must not advise mode="s2s" when the source
    transformer was tried first and refused too: the message gives both reasons."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        with pytest.raises(sg.NonDifferentiableError) as refused:
            sg.grad(_math_and_errstate)(0.4)
    message = str(refused.value)
    assert "mode='s2s'" not in message
    assert "test_errors.py" in message and "tried first" in message
    assert "math functions" in message and "'with'" in message  # both reasons
    with pytest.raises(sg.NonDifferentiableError, match="mode='s2s'"):  # the tape alone
        sg.grad(_math_and_errstate, mode="tape")(0.4)


def _two_arguments(x, n):
    return np.sum(x) * n


def test_a_bad_wrt_or_function_names_the_users_file_and_line():
    line = _two_arguments.__code__.co_firstlineno
    with pytest.raises(ValueError, match=rf"test_errors\.py:{line}: _two_arguments: wrt=5"):
        sg.grad(_two_arguments, wrt=5)
    with pytest.raises(ValueError, match=rf"test_errors\.py:{line}: .* are x, n"):
        sg.grad(_two_arguments, wrt="z")
    with pytest.raises(TypeError, match=rf"test_errors\.py:{line}: _two_arguments: wrt must be"):
        sg.grad(_two_arguments, wrt=1.5)
    here = sys._getframe().f_lineno + 2
    with pytest.raises(TypeError, match=rf"test_errors\.py:{here}: grad needs a function"):
        sg.grad(3)


def test_a_library_function_with_a_rule_differentiated_directly_in_s2s_uses_its_rule():
    x = np.array([0.1, 0.2])
    assert np.allclose(sg.jacfwd(np.sin, mode="s2s")(x), np.diag(np.cos(x)))
    assert np.allclose(sg.grad(np.sum, mode="s2s")(x), np.ones(2))
