"""Central finite differences in float64: the independent oracle for gradient tests."""

from __future__ import annotations

import warnings

import numpy as np

import s2sgrad as sg

STEP = 1e-6


def numeric_grad(f, args, index, kwargs=None, step=STEP):
    """d f(*args) / d args[index] for a scalar-valued ``f``; containers are mirrored."""
    kwargs = kwargs or {}
    args = list(args)

    def evaluate(value):
        trial = list(args)
        trial[index] = value
        out = f(*trial, **kwargs)
        return out if type(out) is float else float(np.sum(out))

    return _grad_of(evaluate, args[index], step)


def numeric_vjp(f, args, index, cotangent, kwargs=None, step=STEP):
    """d <cotangent, f(*args)> / d args[index]: the vector-Jacobian product of any ``f``.

    ``f``'s output may be nested lists and tuples; a ``None`` entry of ``cotangent`` is an
    output nobody used. Example::

        numeric_vjp(np.sin, [x], 0, g)  # g * np.cos(x)
    """
    return numeric_grad(
        lambda *a, **k: inner(cotangent, f(*a, **k)), args, index, kwargs=kwargs, step=step
    )


def numeric_jvp(f, args, index, tangent, kwargs=None, step=STEP):
    """The derivative of ``f(*args)`` along ``tangent`` in ``args[index]``, mirroring
    ``f``'s (nested) output.

    Example::

        numeric_jvp(np.sin, [x], 0, t)  # np.cos(x) * t
    """
    kwargs = kwargs or {}

    def along(scale):
        trial = list(args)
        trial[index] = shifted(args[index], tangent, scale)
        return f(*trial, **kwargs)

    return _difference(along(step), along(-step), 2 * step)


def numeric_jacobian(f, args, index, step=STEP):
    """d f(*args) / d args[index] (an array or a float) as one array of shape
    ``output shape + argument shape``.

    Example::

        numeric_jacobian(sg.grad(f), [x], 0)  # the Hessian of f at x
    """
    x = np.asarray(args[index], dtype=np.float64)
    jacobian = np.zeros(np.shape(f(*args)) + x.shape)
    for position in np.ndindex(x.shape):
        unit = np.zeros(x.shape)
        unit[position] = 1.0
        direction = unit if np.ndim(args[index]) else 1.0
        jacobian[(..., *position)] = numeric_jvp(f, args, index, direction, step=step)
    return jacobian


def directional_derivative(f, x, v, step=STEP):
    """``(f(x + step v) - f(x - step v)) / 2 step``: ``f``'s derivative at ``x`` along ``v``
    (a Hessian-vector product when ``f`` is a gradient), mirroring ``f``'s output.

    Example::

        directional_derivative(sg.grad(f), x, v)  # the Hessian of f at x, times v
    """
    return numeric_jvp(f, [x], 0, v, step=step)


def shifted(x, direction, scale):
    """``x + scale * direction`` entry by entry over nested lists, tuples and dicts, in
    float64 (a Python float stays one)."""
    if isinstance(x, dict):
        return {k: shifted(x[k], direction[k], scale) for k in x}
    if isinstance(x, (list, tuple)):
        items = [shifted(a, d, scale) for a, d in zip(x, direction, strict=True)]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    if isinstance(x, float) and np.ndim(direction) == 0:
        return float(x + scale * direction)
    return np.asarray(x, dtype=np.float64) + scale * np.asarray(direction, dtype=np.float64)


def _difference(up, down, width):
    if isinstance(up, dict):
        return {k: _difference(up[k], down[k], width) for k in up}
    if isinstance(up, (list, tuple)):
        items = [_difference(u, d, width) for u, d in zip(up, down, strict=True)]
        return type(up)(*items) if hasattr(up, "_fields") else type(up)(items)
    return (np.asarray(up, dtype=np.float64) - np.asarray(down, dtype=np.float64)) / width


def inner(a, b) -> float:
    """``<a, b>`` summed over nested lists, tuples and dicts of arrays; a ``None`` entry or
    a key missing from either side counts as zero.

    Example::

        inner([np.ones(2), None], [np.arange(2.0), np.ones(3)])  # 1.0
    """
    if a is None or b is None:
        return 0.0
    if isinstance(a, dict):
        return sum((inner(v, b.get(k)) for k, v in a.items()), 0.0)
    if isinstance(a, (list, tuple)):
        return sum((inner(u, v) for u, v in zip(a, b, strict=True)), 0.0)
    return float(np.multiply(a, b, dtype=np.float64).sum())


def _grad_of(evaluate, x, step):
    if isinstance(x, dict):
        return {k: _grad_of(lambda v, k=k: evaluate({**x, k: v}), x[k], step) for k in x}
    if isinstance(x, (list, tuple)):

        def rebuilt(items):
            return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)

        def replace(i, v):
            items = list(x)
            items[i] = v
            return rebuilt(items)

        return rebuilt(
            [
                _grad_of(lambda v, i=i: evaluate(replace(i, v)), item, step)
                for i, item in enumerate(x)
            ]
        )
    if isinstance(x, float):
        return (evaluate(x + step) - evaluate(x - step)) / (2 * step)
    x = np.asarray(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for position in np.ndindex(x.shape):
        up = x.copy()
        up[position] += step
        down = x.copy()
        down[position] -= step
        grad[position] = (evaluate(up) - evaluate(down)) / (2 * step)
    return grad


def assert_close(actual, expected, rtol=1e-5, atol=1e-7):
    """Compare gradients, including their structure, shape and type."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys()
        for k in expected:
            assert_close(actual[k], expected[k], rtol, atol)
        return
    if isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol, atol)
        return
    if isinstance(expected, float):
        assert isinstance(actual, float), f"expected a float gradient, got {type(actual)}"
    else:
        assert np.shape(actual) == np.shape(expected), (np.shape(actual), np.shape(expected))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def assert_gradient_in_every_mode(f, args, rtol=1e-6):
    """``sg.grad(f)`` (with respect to the first argument) in s2s, auto and tape, on a first
    and a later call, against central differences."""
    expected = numeric_grad(f, args, 0)
    for mode in ("s2s", "auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(call_twice(sg.grad(f, mode=mode), *args), expected, rtol=rtol)


def assert_refused_in_s2s_and_taped_in_auto(f, args, match, here):
    """``sg.grad(f)`` (wrt the first argument) refused by source transformation with an
    ``UnsupportedError`` matching ``match`` and naming the test file ``here``; mode "auto"
    then differentiates ``f`` on the tape, right on a first and a later call. Returns the
    gradient by central differences."""
    import pytest

    with pytest.raises(sg.UnsupportedError, match=match) as refused:
        sg.grad(f, mode="s2s")(*args)
    assert f"{here}:" in str(refused.value)
    expected = numeric_grad(f, args, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode="auto"), *args), expected, rtol=1e-5)
    return expected


def assert_grad_jvp_and_hvp_of_two(f, x, y, v, mode, seed):
    """``sg.grad`` of ``f(x, y)`` with respect to both (called twice), ``sg.jvp`` along
    ``(v, v)`` and ``sg.hvp`` along a random direction (``seed``), in ``mode``, against
    central differences."""
    gradient = call_twice(sg.grad(f, wrt=(0, 1), mode=mode), x, y)
    assert_close(gradient[0], numeric_grad(f, [x, y], 0))
    assert_close(gradient[1], numeric_grad(f, [x, y], 1))
    _, tangent = sg.jvp(f, (x, y), (v, v), mode=mode)
    assert_close(tangent, numeric_jvp(lambda t: f(x + t * v, y + t * v), [0.0], 0, 1.0))
    assert_hvp_matches_differences(f, (x, y), mode=mode, seed=seed)


def check_grads_on_two_calls(f, args, mode):
    """``sg.check_grads(f, *args, mode=mode, order=2)`` on a first and a later call (the
    later runs the code specialised to the shapes, and builds the second order anew from
    derivatives already made and specialised), the tape fallback's warning silenced.

    On the tape once: ``check_grads`` itself calls each derivative twice, and the tape
    keeps no code of the function to reuse, so a second check ran the same steps on the
    same numbers (a tenth of the helper's time over the three modes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        for _ in range(1 if mode == "tape" else 2):
            sg.check_grads(f, *args, mode=mode, order=2)


def call_twice(transformed, *args, **kwargs):
    """Call a transformed function twice and check both calls agree.

    The first call with new argument shapes runs the generic code (while specialising it);
    the second runs the code specialised to those shapes. Both must give the same result.
    """
    first = transformed(*args, **kwargs)
    second = transformed(*args, **kwargs)
    _assert_same(first, second)
    return second


def _assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _assert_same(u, v)
    elif a is None or b is None:  # an empty entry's gradient
        assert a is None and b is None
    else:
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _central_differences(f, x, y, step):
    gradients = []
    for position, value in enumerate((x, y)):
        gradient = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            shifted = [np.array(x, copy=True), np.array(y, copy=True)]
            shifted[position][index] += step
            up = f(*shifted)
            shifted[position][index] -= 2 * step
            down = f(*shifted)
            gradient[index] = (up - down) / (2 * step)
        gradients.append(gradient)
    return gradients


def richardson_gradients(f, x, y, step=1e-5):
    """Gradients of a scalar ``f(x, y)`` wrt both arrays by Richardson-extrapolated central
    differences, each with an estimate of its error (random programs can grow fast enough
    for plain differences to be off in the fifth digit)."""
    return richardson(_central_differences(f, x, y, step), _central_differences(f, x, y, step / 2))


def richardson(coarse: list, fine: list) -> list:
    """Richardson's extrapolation of differences with steps h and h/2, with their error."""
    return [((4 * b - a) / 3, np.abs(b - a)) for a, b in zip(coarse, fine)]


def numeric_complex_grad(f, args, index, step=STEP):
    """The gradient of ``real(sum(f(*args)))`` wrt ``args[index]`` in the convention of
    docs/complex.md: the derivative wrt the real parts minus i times that wrt the
    imaginary parts, each by central differences; a real argument gets the real one."""
    args = list(args)
    x = np.asarray(args[index])

    def evaluate(value):
        trial = list(args)
        trial[index] = value
        return float(np.real(np.sum(f(*trial))))

    grad = np.zeros(x.shape, dtype=np.complex128 if np.iscomplexobj(x) else np.float64)
    for position in np.ndindex(x.shape):
        for direction, weight in ((1.0, 1.0), (1j, -1j)):
            if direction == 1j and not np.iscomplexobj(x):
                continue
            up = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
            down = up.copy()
            up[position] += step * direction
            down[position] -= step * direction
            grad[position] += weight * (evaluate(up) - evaluate(down)) / (2 * step)
    return grad


def assert_hvp_matches_differences(f, args, mode, seed=0):
    """``sg.hvp`` of ``f`` along a random direction, twice, against central differences of
    the tape's gradient (itself checked against differences first)."""
    rng = np.random.default_rng(seed)
    wrt = tuple(range(len(args)))
    leaves, tree = sg.tree_flatten(args)
    direction = sg.tree_unflatten(tree, [rng.normal(size=np.shape(leaf)) for leaf in leaves])
    gradient = sg.grad(f, wrt=wrt, mode="tape")
    for index in wrt:
        assert_close(gradient(*args)[index], numeric_grad(f, list(args), index))

    def gradient_along(t):
        shifted = sg.tree_unflatten(
            tree, [a + t * d for a, d in zip(leaves, sg.tree_flatten(direction)[0])]
        )
        return gradient(*shifted)

    expected = numeric_jvp(gradient_along, [0.0], 0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            products = sg.hvp(f, args, tuple(direction), mode=mode)
            assert_close(tuple(products), tuple(expected), rtol=1e-4, atol=1e-6)


def calls_counted(monkeypatch, module, name: str) -> list:
    """The arguments of every call of ``module.name`` from now on (a list that grows), for
    tests that a transformation reads each statement a bounded number of times.

    Example::

        asked = calls_counted(monkeypatch, recompute, "names_read")
    """
    asked: list = []
    original = getattr(module, name)

    def counted(node):
        asked.append(node)
        return original(node)

    monkeypatch.setattr(module, name, counted)
    return asked


def grad_jvp_and_hvp_oracle(f, x, v) -> tuple:
    """What ``assert_grad_jvp_and_hvp`` compares with: the gradient of ``f`` at ``x`` and its
    derivative along ``v`` by central differences, and the differences of the tape's
    gradient along ``v`` (the Hessian-vector product). A file checking one function in
    several modes computes it once and passes it to each check.

    Example::

        expected = grad_jvp_and_hvp_oracle(f, x, v)
        for mode in ("s2s", "tape"):
            assert_grad_jvp_and_hvp(f, x, v, mode, expected)
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = numeric_grad(f, [x], 0)
        along = numeric_jvp(f, [x], 0, v)
        hvp = numeric_jvp(lambda y: sg.grad(f, mode="tape")(y), [x], 0, v, step=1e-5)
    return gradient, along, hvp


def assert_grad_jvp_and_hvp(f, x, v, mode, expected=None):
    """``sg.grad`` (called twice), ``sg.jvp`` and ``sg.hvp`` of ``f`` at the array ``x``, along
    ``v``, in ``mode``, against central differences (the hvp against differences of the
    tape's gradient), or ``expected``, ``grad_jvp_and_hvp_oracle(f, x, v)`` computed before;
    warnings (a fallback in mode "auto") are silenced."""
    gradient, along, expected_hvp = expected or grad_jvp_and_hvp_oracle(f, x, v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode=mode), x), gradient, rtol=1e-5)
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        assert_close(tangent, along, rtol=1e-5)
        hvp = sg.hvp(f, (x,), (v,), mode=mode)
    assert_close(np.asarray(hvp).reshape(np.shape(x)), expected_hvp, rtol=1e-4, atol=1e-6)


def assert_tape_program(program, size):
    """``program`` of one array on the tape, at a random point of ``size`` entries: its
    value as the plain function gives it, its gradient (called twice) and jvp against
    central differences, and its hvp against differences of the tape's gradient."""
    rng = np.random.default_rng(size)
    x = rng.normal(size=size)
    value, _ = sg.value_and_grad(program, mode="tape")(x.copy())
    np.testing.assert_allclose(value, program(x.copy()), rtol=1e-12)
    assert_close(call_twice(sg.grad(program, mode="tape"), x), numeric_grad(program, [x], 0))
    v = rng.normal(size=size)
    _, tangent = sg.jvp(program, (x,), (v,), mode="tape")
    assert_close(tangent, numeric_jvp(program, [x], 0, v), rtol=1e-5)
    hvp = sg.hvp(program, (x,), (v,), mode="tape")
    expected = numeric_jvp(lambda y: sg.grad(program, mode="tape")(y), [x], 0, v, step=1e-5)
    assert_close(np.asarray(hvp).reshape(x.shape), expected, rtol=1e-4, atol=1e-6)
