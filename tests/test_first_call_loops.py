"""The first call of a gradient with a long loop: the probe stops the loop once the state
each iteration starts from repeats (``specialize/loop_cuts.py``) and the call then runs in
the specialised code. Gradients stay right where shapes change between iterations (before
the fixed point, never reached, or in the backward sweep only) and between calls.
"""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.pipeline import clear_cache
from s2sgrad.compiler.specialize import loop_cuts
from s2sgrad.compiler.specialize.loop_cuts import LONG, LoopCuts

MODES = ("s2s", "tape", "auto")
N = 192  # the loops below: at least 3 * LONG iterations


def scalar_recurrence(a, b, x):
    for _ in range(192):
        x = np.sin(x) * a + b * x
    return x


def becomes_a_vector(x, w):
    for _ in range(192):  # x is a number in the first iteration, a vector after
        x = np.tanh(x * w + 0.1) * 0.9
    return np.sum(x)


def becomes_a_matrix(x, w):
    for _ in range(192):  # (3,) then (4, 3) from the second iteration on
        x = np.tanh(w[:, :1] * x + 0.05) * 0.5
    return np.sum(x**2)


def grows(x, w):
    y = x
    for _ in range(192):  # a new shape every iteration: no fixed point
        y = np.concatenate([y[-2:] * w, y])
    return np.sum(np.sin(y))


def counted(x, n):
    s = x * 0.0
    for _ in range(n):
        s = np.cos(s + x) * 0.5
    return np.sum(s)


def nested(x, w):
    for _ in range(192):
        for _ in range(3):
            x = np.tanh(x * w) + 0.01
    return np.sum(x)


def accumulated(x):
    total = 0.0  # a Python float, then an array
    for _ in range(192):
        total = total + np.sin(x) * 0.01
        x = x * 0.999
    return np.sum(total)


def accumulates_in_place(x):
    total = np.zeros_like(x)
    for _ in range(192):  # ``+=`` on its own array
        total += np.sin(x) * 0.01
        x = x * 0.999
    return np.sum(total)


RNG = np.random.default_rng(7)
CASES = [
    (scalar_recurrence, (0.4, 0.3, 0.5), (0, 1, 2)),
    (becomes_a_vector, (0.3, RNG.normal(size=3)), (0, 1)),
    (becomes_a_matrix, (RNG.normal(size=3), RNG.normal(size=(4, 2))), (0, 1)),
    (grows, (RNG.normal(size=2), 0.999), (0,)),
    (counted, (RNG.normal(size=3), N), (0,)),
    (nested, (RNG.normal(size=3), 0.9), (0, 1)),
    (accumulated, (RNG.normal(size=4),), (0,)),
    (accumulates_in_place, (RNG.normal(size=4),), (0,)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_first_and_later_calls_match_the_oracle(f, args, wrt, mode):
    gradient = sg.grad(f, wrt=wrt, mode=mode)
    for _ in range(2):  # the first call (probed, perhaps cut) and a later one
        got = gradient(*args)
        for position, value in zip(wrt, got):
            assert_close(value, numeric_grad(f, args, position), rtol=1e-5, atol=1e-7)


def test_a_loop_of_another_length_in_a_later_call():
    gradient = sg.grad(counted, wrt=0, mode="s2s")
    x = RNG.normal(size=3)
    for n in (N, 2 * N, LONG // 2, N):
        assert_close(gradient(x, n), numeric_grad(counted, (x, n), 0), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_a_cut_loop_called_with_other_shapes(mode):
    gradient = sg.grad(becomes_a_vector, wrt=(0, 1), mode=mode)
    for size in (3, 5, 1, 3):  # a new signature, probed and cut again, then the first one
        args = (0.3, RNG.normal(size=size))
        got = gradient(*args)
        for position, value in zip((0, 1), got):
            expected = numeric_grad(becomes_a_vector, args, position)
            assert_close(value, expected, rtol=1e-5, atol=1e-7)


def test_the_probe_cuts_a_long_loop_at_its_fixed_point(monkeypatch):
    made = []
    for_probe = LoopCuts.for_probe.__func__

    def spy(cls, probed, is_pure):
        cuts = for_probe(cls, probed, is_pure)
        made.append(cuts)
        return cuts

    monkeypatch.setattr(loop_cuts.LoopCuts, "for_probe", classmethod(spy))
    clear_cache()
    args = (0.3, RNG.normal(size=3))
    got = sg.grad(becomes_a_vector, wrt=(0, 1), mode="s2s")(*args)
    assert made and made[0] is not None and made[0].cut and not made[0].inconclusive
    for position, value in zip((0, 1), got):
        assert_close(value, numeric_grad(becomes_a_vector, args, position), rtol=1e-5)


def _forward_then_backward(cuts, backward_step):
    """A forward loop whose state settles at once, then a backward loop over the cut
    iterations whose state changes by ``backward_step`` each iteration."""
    stack = []
    w = 0.0
    t = range(1000)
    for _ in cuts.forward(0, t, ("w",), True):
        stack.append(w)
        w = 1.0
    t = cuts.prefix(0, t)
    k = 0.0
    for _ in cuts.backward(t, ("k",)):
        k = backward_step(k)
        stack.pop()
    cuts.finished()
    return len(t)


def test_a_backward_loop_that_settles_confirms_the_cut():
    cuts = LoopCuts(None)
    iterations = _forward_then_backward(cuts, lambda k: 1.0)
    assert cuts.cut and not cuts.inconclusive and iterations < 1000


def test_a_backward_loop_still_changing_makes_the_cut_inconclusive():
    cuts = LoopCuts(None)
    _forward_then_backward(cuts, lambda k: (k,))  # a new structure every iteration
    assert cuts.cut and cuts.inconclusive


def test_a_cut_never_popped_is_inconclusive():
    cuts = LoopCuts(None)
    stack = []
    w = 0.0
    t = range(1000)
    for _ in cuts.forward(0, t, ("w",), True):
        stack.append(w)
        w = 1.0
    cuts.prefix(0, t)
    cuts.finished()
    assert cuts.cut and cuts.inconclusive


def printing(x):
    for _ in range(192):
        print(end="")
        x = np.sin(x)
    return np.sum(x)


def test_a_loop_with_effects_is_not_cut(monkeypatch):
    made = []
    for_probe = LoopCuts.for_probe.__func__
    monkeypatch.setattr(
        loop_cuts.LoopCuts,
        "for_probe",
        classmethod(lambda cls, p, pure: made.append(for_probe(cls, p, pure)) or made[-1]),
    )
    clear_cache()
    x = RNG.normal(size=3)
    got = sg.grad(printing, mode="s2s")(x)
    assert made and all(cuts is None for cuts in made)
    assert_close(got, numeric_grad(printing, (x,), 0), rtol=1e-5)
