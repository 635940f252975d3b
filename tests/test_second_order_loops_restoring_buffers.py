"""Hessians in s2s of loops that write into buffers the gradient restores from its stack.

The gradient of a time-stepping loop (a leapfrog wave step into ``u_next`` and the buffers
rotated, ``h[t + 1] = f(h[t])``, RK4 steps stored into a preallocated array) saves what
each write overwrites and restores it in the backward loop (``h[t6] = stack.pop()``), and
pushes the views the backward reads (``stack.append(t2)``). Differentiating that gradient
again was refused in s2s: the walk along the paths (passes/aliases_paths.py) joined the
loop's entries into one bag, so it could not see that iteration ``k`` of the backward runs
once every later forward iteration is undone (passes/aliases_loop_pairs.py). Oracles:
central differences of the function, and of the tape's gradient (itself checked against
them) for the Hessian-vector products; every mode, no fallback in "auto".
"""

from __future__ import annotations

import contextlib
import warnings

import gast
import numpy as np
import pytest
from collector import older_objects_frozen
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg
from s2sgrad.compiler.passes.aliases_paths import changed_memory_reads
from s2sgrad.runtime.core import snapshot

MODES = ("s2s", "tape", "auto")


def leapfrog_wave(c):
    n = 7
    u_prev = np.zeros(n)
    u = np.sin(np.linspace(0.0, 3.0, n)) * c[0]
    u_next = np.zeros(n)
    for _ in range(4):
        u_next[1:-1] = 2 * u[1:-1] - u_prev[1:-1] + c[1] * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_prev, u, u_next = u, u_next, u_prev
    return np.sum(u**2) + np.sum(u * u_prev)


def recurrence(w):
    h = np.zeros((5, w.shape[0]))
    h[0] = w
    for t in range(4):
        h[t + 1] = np.tanh(h[t] * w + 0.1)
    return np.sum(h**2)


def sir_rk4(p):
    def rhs(y):
        s, i = y[0], y[1]
        return np.array([-p[0] * s * i, p[0] * s * i - p[1] * i, p[1] * i])

    ys = np.zeros((6, 3))
    ys[0] = np.array([0.9, 0.1, 0.0])
    dt = 0.1
    for k in range(5):
        y = ys[k].copy()
        k1 = rhs(y)
        k2 = rhs(y + dt / 2 * k1)
        k3 = rhs(y + dt / 2 * k2)
        k4 = rhs(y + dt * k3)
        ys[k + 1] = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.sum(ys[:, 1] ** 2)


def row_written_back(x):
    out = np.zeros((4, x.shape[0]))
    out[0] = x
    for t in range(1, 4):
        prev = out[t - 1]
        out[t] = prev * np.cos(prev) + x
        out[t - 1] = out[t - 1] * 2.0
    return np.sum(out * out[::-1])


PROGRAMS = {
    "leapfrog_wave": (leapfrog_wave, 2),
    "recurrence": (recurrence, 3),
    "sir_rk4": (sir_rk4, 2),
    "row_written_back": (row_written_back, 3),
}


def assert_grad_jvp_hvp_without_fallback(f, x, v, mode):
    taped = sg.grad(f, mode="tape")
    assert_close(taped(x), numeric_grad(f, [x], 0))
    expected_hvp = numeric_jvp(taped, [x], 0, v, step=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.errors.FallbackWarning)
        assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        assert_close(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-5)
        for _ in range(2):  # the second call runs the code specialised to the shapes
            (product,) = sg.hvp(f, (x,), (v,), mode=mode)
            assert_close(product, expected_hvp, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_hessian_vector_products_of_buffer_loops(name, mode):
    f, size = PROGRAMS[name]
    rng = np.random.default_rng(len(name))
    x = rng.uniform(0.2, 0.8, size=size)
    v = rng.normal(size=size)
    # on the tape, sir_rk4's records started full collections late in a worker, each walking
    # everything its earlier tests kept (25 s of CPU in round 34's suite, 0.7 s alone); the
    # tape builds no code, so the older objects are frozen meanwhile (tests/collector.py)
    with older_objects_frozen() if mode == "tape" else contextlib.nullcontext():
        assert_grad_jvp_hvp_without_fallback(f, x, v, mode)


def test_the_hessian_of_a_recurrence_by_source_is_the_tapes():
    w = np.array([0.3, -0.5, 0.8])
    by_source = sg.hessian(recurrence, mode="s2s")(w)
    np.testing.assert_allclose(by_source, sg.hessian(recurrence, mode="tape")(w), atol=1e-10)


_BACKWARD_READS_A_VIEW_EARLIER_ITERATIONS_CHANGED = """
def f(x):
    stack = []
    h = np.zeros(3)
    v = h[0:2]
    for t in range(3):
        stack.append(snapshot(h[0:2]))
        h[0:2] = x
    for t in reversed(range(3)):
        h[0:2] = stack.pop()
        y = v * 2.0
    return y
"""


def test_a_view_taken_before_the_loop_still_sees_the_earlier_iterations_writes():
    """In the backward's iteration k, once it undid the write of the forward's iteration k,
    those of the iterations before k are not undone yet: ``v``, a view taken before the
    loop, still holds them, so its read is a read of changed memory (the model of one
    iteration keeps them as earlier changes)."""
    function = gast.parse(_BACKWARD_READS_A_VIEW_EARLIER_ITERATIONS_CHANGED).body[0]
    names = {"np": np, "snapshot": snapshot, "range": range, "reversed": reversed}

    def resolve(node):
        return names.get(node.id) if type(node) is gast.Name else None

    update = function.body[3].body[1]  # h[0:2] = x
    stale = changed_memory_reads(function, [(update, "h")], resolve, set())
    assert stale is not None and "v" in stale[id(update)]
