"""Integers computed from differentiated values, given where NumPy takes integers.

``n = rows(h)`` with a helper returning ``h.shape[0]`` (or ``out, n = layer(x)``) is a value
computed from a differentiated one, so source transformation once refused it wherever a
rule has no derivative (``np.reshape(h, (n, -1))``, ``np.roll(h, n)``, ``np.sum(h,
axis=n - 1)``). ``rules/integer_arguments.py`` declares those arguments zero by design;
each declaration is proved here (NumPy refuses a non-integer there, or the output does not
move), and the gradients are checked in every mode against central differences. Arguments
that may be real numbers with a derivative of their own (``ddof=``, ``ord=``) stay refused.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning
from s2sgrad.rules.integer_arguments import INTEGER_ARGUMENTS

A = np.arange(24.0).reshape(4, 6) / 7.0
SQUARE = np.arange(16.0).reshape(4, 4) / 9.0 + np.eye(4)
INDICES = np.array([[0, 1, 0, 2, 1, 0], [1, 0, 2, 0, 0, 1]])

# function -> (positional arguments, keywords) of a call NumPy accepts, with an integer in
# each declared argument
SAMPLES = {
    np.reshape: ((A, (3, 8)), {}),
    np.ndarray.reshape: ((A, (3, 8)), {}),
    np.broadcast_to: ((A[0], (2, 6)), {}),
    np.roll: ((A, 2), {"axis": 1}),
    np.rot90: ((A, 1), {"axes": (0, 1)}),
    np.repeat: ((A, 2), {"axis": 0}),
    np.ndarray.repeat: ((A, 2), {"axis": 0}),
    np.tile: ((A, 2), {}),
    np.split: ((A, 2), {"axis": 0}),
    np.array_split: ((A, 3), {"axis": 1}),
    np.hsplit: ((A, 3), {}),
    np.vsplit: ((A, 2), {}),
    np.take: ((A, 2), {"axis": 1}),
    np.ndarray.take: ((A, 2), {"axis": 1}),
    np.take_along_axis: ((A[:2], INDICES), {"axis": 0}),
    np.sum: ((A,), {"axis": 1}),
    np.ndarray.sum: ((A,), {"axis": 1}),
    np.mean: ((A,), {"axis": 1}),
    np.ndarray.mean: ((A,), {"axis": 1}),
    np.prod: ((A,), {"axis": 1}),
    np.max: ((A,), {"axis": 1}),
    np.min: ((A,), {"axis": 1}),
    np.cumsum: ((A,), {"axis": 1}),
    np.cumprod: ((A,), {"axis": 1}),
    np.std: ((A,), {"axis": 1}),
    np.var: ((A,), {"axis": 1}),
    np.median: ((A,), {"axis": 1}),
    np.ptp: ((A,), {"axis": 1}),
    np.average: ((A,), {"axis": 1}),
    np.nansum: ((A,), {"axis": 1}),
    np.sort: ((A,), {"axis": 1}),
    np.partition: ((A, 2), {"axis": 1}),
    np.flip: ((A,), {"axis": 1}),
    np.concatenate: (([A, A],), {"axis": 1}),
    np.stack: (([A, A],), {"axis": 1}),
    np.expand_dims: ((A, 1), {}),
    np.squeeze: ((A[:, :1], 1), {}),
    np.diff: ((A, 2), {"axis": 1}),
    np.transpose: ((A[None], (1, 0, 2)), {}),
    np.ndarray.transpose: ((A[None], (1, 0, 2)), {}),
    np.moveaxis: ((A[None], 0, 1), {}),
    np.swapaxes: ((A[None], 0, 1), {}),
    np.ndarray.swapaxes: ((A[None], 0, 1), {}),
    np.diagonal: ((A[None], 1, 1, 2), {}),
    np.ndarray.diagonal: ((A[None], 1, 1, 2), {}),
    np.trace: ((A[None], 1, 1, 2), {}),
    np.triu: ((A, 1), {}),
    np.tril: ((A, 1), {}),
    np.diag: ((A, 1), {}),
    np.linspace: ((0.5, 2.0, 5), {"axis": 0}),
    np.pad: ((A, 1), {}),
    np.linalg.matrix_power: ((SQUARE, 2), {}),
    np.linalg.norm: ((A,), {"axis": 1}),
    np.fft.fft: ((A, 4), {"axis": 1}),
    np.fft.ifft: ((A, 4), {"axis": 1}),
    np.fft.rfft: ((A, 4), {"axis": 1}),
    np.fft.irfft: ((A, 4), {"axis": 1}),
    np.fft.fftshift: ((A, 1), {}),
}


def _numpy_position(function, name: str, args: tuple, keywords: dict):
    """Where the declared argument ``name`` sits in the sample call: a keyword, or the
    position it has among the rule's parameters."""
    if name in keywords:
        return name
    from s2sgrad.rules.integer_arguments import positions_of

    return positions_of(function, (name,))[0]


def _moved(value, by: float):
    """``value`` moved by ``by`` (less than one): an integer becomes a real number, a
    tuple's first integer or an array's integers too."""
    if isinstance(value, tuple):
        return (value[0] + by, *value[1:])
    return value + by


def _declared():
    for function, names in INTEGER_ARGUMENTS.items():
        for name in names:
            label = f"{getattr(function, '__qualname__', function)}-{name}"
            yield pytest.param(function, name, id=label)


def test_every_declared_function_has_a_sample_call():
    assert set(INTEGER_ARGUMENTS) == set(SAMPLES)


@pytest.mark.parametrize("function, name", list(_declared()))
def test_a_declared_argument_takes_integers_or_is_read_as_steps(function, name):
    """The claim behind each declaration: NumPy refuses a real number there, or the output
    does not change between two integers (the same a quarter and a half above one), so
    an integer computed from differentiated values has no derivative through it."""
    args, keywords = SAMPLES[function]
    where = _numpy_position(function, name, args, keywords)
    if where not in keywords and (not isinstance(where, int) or where >= len(args)):
        pytest.fail(f"the sample call of {function} does not give {name!r}")
    outputs = []
    for by in (0.25, 0.5):
        moved_args, moved_keywords = list(args), dict(keywords)
        if isinstance(where, str):
            moved_keywords[where] = _moved(keywords[where], by)
        else:
            moved_args[where] = _moved(args[where], by)
        try:
            outputs.append(function(*moved_args, **moved_keywords))
        except (TypeError, ValueError, IndexError):
            assert by == 0.25, "refused half way between integers, taken a quarter of the way"
            return  # NumPy takes integers only there
    quarter, half = (o if isinstance(o, list) else [o] for o in outputs)
    for a, b in zip(quarter, half, strict=True):
        np.testing.assert_array_equal(a, b)


# ---- programs -----------------------------------------------------------------------


def rows(a):
    return a.shape[0]


def layer(x, w):
    h = np.tanh(x @ w)
    return h, h.shape[1]


def reshaped(w, x):
    h = np.tanh(x @ w)
    n = rows(h)
    return np.sum(np.reshape(h, (n, -1)) ** 2) + np.sum(h.reshape(n // 2, -1)[0])


def rolled(w, x):
    h, width = layer(x, w)
    return np.sum(np.roll(h, width - 1, axis=1) * h) + np.sum(np.cumsum(h, axis=width - 2))


def reduced(w, x):
    h = np.sin(x @ w)
    axis = rows(h) % 2  # 0 for an even number of rows
    return np.sum(np.sum(h**2, axis=axis) * np.max(h, axis=1 - axis).sum())


def repeated(w, x):
    h, width = layer(x, w)
    tiled = np.repeat(h, width, axis=0)
    return np.sum(np.triu(tiled @ tiled.T, k=width - 1)) + np.sum(np.pad(h, width - 1) ** 3)


def powered(w, x):
    h = np.tanh(x @ w) * 0.5
    square = h.T @ h + np.eye(h.shape[1])
    return np.sum(np.linalg.matrix_power(square, rows(h) - 2))


PROGRAMS = [reshaped, rolled, reduced, repeated, powered]


@pytest.mark.parametrize("function", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("n", [4, 6])
def test_integers_from_helpers_in_every_mode(function, mode, n):
    rng = np.random.default_rng(n)
    w, x = rng.normal(size=(3, 2)) * 0.7, rng.normal(size=(n, 3))
    expected = numeric_grad(function, (w, x), 0)
    with warnings.catch_warnings():
        if mode == "auto":  # auto must not need the tape
            warnings.simplefilter("error", FallbackWarning)
        transformed = sg.grad(function, mode=mode)
        for _ in ("first", "second"):
            assert_close(transformed(w, x), expected, rtol=1e-5, atol=1e-7)
    along = rng.normal(size=w.shape)
    _, tangent = sg.jvp(lambda v: function(v, x), (w,), (along,), mode=mode)
    want = numeric_jvp(function, (w, x), 0, along)
    np.testing.assert_allclose(tangent, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("function", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_integers_from_helpers_to_second_order(function, mode):
    rng = np.random.default_rng(1)
    w, x = rng.normal(size=(3, 2)) * 0.7, rng.normal(size=(4, 3))
    along = rng.normal(size=w.shape)
    (product,) = sg.hvp(lambda v: function(v, x), (w,), (along,), mode=mode)
    gradient = sg.grad(function, mode="tape")
    want = numeric_jvp(lambda v: gradient(v, x), (w,), 0, along)
    np.testing.assert_allclose(product, want, rtol=1e-4, atol=1e-6)


def spread(w, x):
    h = np.tanh(x @ w)
    return np.std(h, ddof=rows(h) - 3) + np.linalg.norm(h, ord=rows(h) - 2)


def test_real_valued_arguments_with_a_derivative_stay_refused():
    """``ddof=`` and ``ord=`` may be real numbers whose change moves the output: a value
    computed from differentiated ones there is refused in s2s, naming the line; the tape,
    which sees the integer, differentiates it."""
    rng = np.random.default_rng(2)
    w, x = rng.normal(size=(3, 2)), rng.normal(size=(4, 3))
    with pytest.raises(sg.S2SGradError, match=r"test_integer_arguments\.py:\d+.*(ddof|ord)="):
        sg.grad(spread, mode="s2s")(w, x)
    assert_close(sg.grad(spread, mode="tape")(w, x), numeric_grad(spread, (w, x), 0), rtol=1e-5)
