"""The signatures s2sgrad supplies for NumPy's C callables where NumPy (before 2.4) has none.

On NumPy 2.4 and later the supplied signatures are compared with NumPy's own; on every
version, each registered NumPy callable must have a signature one way or the other, and
calls bound through them must reach the right parameters.
"""

import inspect
import types

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.batching.rules import FUNCTION_RULES
from s2sgrad.numpy_signatures import numpy_signature, signature
from s2sgrad.rules import registered_primitives


def _numpy_callables():
    seen = {}
    for primitive in [*registered_primitives(), *FUNCTION_RULES]:
        if not callable(primitive):  # ndarray.T, np.c_ ...: no call to bind
            continue
        if isinstance(primitive, np.ufunc):
            seen[id(primitive)] = primitive
        elif isinstance(primitive, types.MethodDescriptorType):
            if getattr(primitive, "__objclass__", None) is np.ndarray:
                seen[id(primitive)] = primitive
        elif (getattr(primitive, "__module__", None) or "").startswith("numpy"):
            seen[id(primitive)] = primitive
    return list(seen.values())


NUMPY_CALLABLES = _numpy_callables()


def _has_runtime_signature(function) -> bool:
    try:
        inspect.signature(function)
    except (TypeError, ValueError):
        return False
    return True


def _name(function):
    owner = getattr(function, "__objclass__", None)
    return f"{owner.__name__}.{function.__name__}" if owner else function.__name__


@pytest.mark.parametrize("function", NUMPY_CALLABLES, ids=_name)
def test_every_registered_numpy_callable_has_a_signature(function):
    parameters = signature(function).parameters
    assert parameters, _name(function)


NUMPY_SIGNS_C_CALLABLES = _has_runtime_signature(np.where) and _has_runtime_signature(np.sin)


@pytest.mark.skipif(
    not NUMPY_SIGNS_C_CALLABLES,
    reason="this NumPy (before 2.4) has no runtime signatures to compare the supplied ones with",
)
@pytest.mark.parametrize("function", NUMPY_CALLABLES, ids=_name)
def test_supplied_signatures_are_numpys_own(function):
    supplied = numpy_signature(function)
    if supplied is None:  # a Python function: NumPy's signature is read on every version
        return
    own = list(inspect.signature(function).parameters.values())
    given = list(supplied.parameters.values())
    assert [str(p) for p in own[: len(given)]] == [str(p) for p in given]
    # a NumPy newer than 2.4 may add keyword-only parameters (ndarray.argsort(descending=))
    for added in own[len(given) :]:
        assert added.kind is added.KEYWORD_ONLY and added.default is not added.empty, added


def test_ufunc_signatures_follow_inputs_and_outputs():
    assert str(numpy_signature(np.sin)).startswith("(x, /, out=None, *, where=True")
    assert str(numpy_signature(np.arctan2)).startswith("(x1, x2, /, out=None, *")
    assert str(numpy_signature(np.divmod)).startswith("(x1, x2, /, out=(None, None), *")
    assert "axes=" in str(numpy_signature(np.matmul))
    assert "where=" not in str(numpy_signature(np.matmul))


def test_something_else_raises_what_inspect_raises():
    with pytest.raises((TypeError, ValueError)):
        signature(np.ndarray.shape)  # a property, not a call
    assert numpy_signature(len) is None


@pytest.mark.filterwarnings("ignore::s2sgrad.errors.FallbackWarning")  # auto: to the tape
@pytest.mark.parametrize("mode", ["tape", "auto"])  # s2s reads source: a ufunc has none
def test_vjp_of_a_ufunc_itself(mode):
    x = np.random.default_rng(0).uniform(0.2, 1.0, size=3)
    for _ in range(2):
        value, pullback = sg.vjp(np.sin, x, mode=mode)
        np.testing.assert_allclose(value, np.sin(x))
        (dx,) = pullback(np.ones(3))
        np.testing.assert_allclose(dx, np.cos(x), rtol=1e-12)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_c_functions_bound_by_keyword(mode):
    # np.where and np.concatenate are C functions: binding their arguments needs a signature
    def f(x):
        joined = np.concatenate([x, x * x], axis=0)
        return np.sum(np.where(joined > 0.5, joined, 2.0 * joined))

    x = np.random.default_rng(1).uniform(0.0, 1.0, size=4)
    expected = np.where(x > 0.5, 1.0, 2.0) + np.where(x * x > 0.5, 2 * x, 4 * x)
    gradient = sg.grad(f, mode=mode)
    for _ in range(2):
        np.testing.assert_allclose(gradient(x), expected, rtol=1e-12)
