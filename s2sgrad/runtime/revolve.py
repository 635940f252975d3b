"""Binomial checkpointing (Griewank's Revolve): reverse a long loop keeping few snapshots.

Reverse mode needs each step's values in reverse order. Keeping all of them costs memory in
proportion to the number of steps. With ``s`` snapshots of the loop state, the backward
sweep instead restores the nearest snapshot and runs the loop forward again to the step it
needs. Splitting the steps at the points below makes the total number of steps run again
the least possible for ``s`` snapshots (Griewank, 1992; Griewank and Walther, 2000):
with ``t`` the least number such that ``β(s, t) = C(s + t, s) ≥ n``, reversing ``n`` steps
runs ``t·n − C(s + t, s + 1)`` steps forward in all.

:class:`CheckpointedLoop` does this for a loop given as functions of its state::

    loop = CheckpointedLoop(step, step_vjp, step_backward, steps=10_000, snapshots=100)
    final = loop.forward(state)        # runs every step once, keeping at most 100 snapshots
    d_state = loop.backward(d_final)   # cotangent of the state before the first step

``step(state, t)`` returns the state after step ``t``; ``step_vjp(state, t)`` returns it with
what the step's backward needs, ``(new_state, saved)``; ``step_backward(saved, d_new)``
returns the cotangent of the state before the step. Values the loop only reads (weights)
belong in the state too: carried unchanged, their cotangents add up step by step.

:func:`run_checkpointed` is what a ``for t in sg.checkpointed(range(n), snapshots=k):``
loop becomes in differentiated code: a call with the loop body as a step function. Run
plainly it is the loop; its derivative (registered in ``s2sgrad/controls.py``, the same
for both engines) runs the loop through :class:`CheckpointedLoop`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from s2sgrad.runtime import hooks
from s2sgrad.runtime.replays import fingerprint, random_states, set_random_states

__all__ = [
    "CheckpointedLoop",
    "Replay",
    "check_snapshots",
    "checkpointed",
    "run_checkpointed",
    "default_snapshots",
    "optimal_split",
    "recomputed_steps",
]


def _beta(snapshots: int, repetitions: int) -> int:
    """How many steps ``snapshots`` snapshots reverse when no step runs forward more than
    ``repetitions`` extra times: C(s + t, s)."""
    if repetitions < 0:
        return 0
    return math.comb(snapshots + repetitions, snapshots)


def _repetitions(steps: int, snapshots: int) -> int:
    repetitions = 0
    while _beta(snapshots, repetitions) < steps:
        repetitions += 1
    return repetitions


def recomputed_steps(steps: int, snapshots: int) -> int:
    """The least number of forward steps that reversing ``steps`` steps takes with
    ``snapshots`` snapshots (the one of the starting state included), advances to place
    the snapshots included.

    Example::

        recomputed_steps(10, 1)  # 45: each step run again from the start
    """
    if steps <= 1:
        return 0
    t = _repetitions(steps, snapshots)
    return t * steps - _beta(snapshots + 1, t - 1)


def optimal_split(steps: int, snapshots: int) -> int:
    """Where to put the next snapshot when reversing ``steps`` steps from a snapshot at
    step 0 with ``snapshots`` snapshots (at least 2): the smallest split that keeps the
    total number of recomputed steps the least possible.

    Every ``m`` in ``[max(β(s, t−2), n − β(s−1, t)), min(β(s, t−1), n − β(s−1, t−1))]`` is
    optimal; tests/test_revolve.py checks this against an exhaustive search.

    Example::

        optimal_split(10, 3)  # 4
    """
    t = _repetitions(steps, snapshots)
    lowest = max(1, _beta(snapshots, t - 2), steps - _beta(snapshots - 1, t))
    highest = min(steps - 1, _beta(snapshots, t - 1), steps - _beta(snapshots - 1, t - 1))
    assert lowest <= highest, (steps, snapshots)
    return lowest


def default_snapshots(steps: int) -> int:
    """About √steps snapshots: memory and recomputation both grow like √steps.

    Example::

        default_snapshots(10_000)  # 100
    """
    return max(1, math.isqrt(max(steps, 1)))


def _copy_state(state: Any) -> Any:
    """A snapshot that later in-place writes by the loop body cannot change."""
    if isinstance(state, np.ndarray):
        return state.copy()
    if isinstance(state, tuple):
        return tuple(_copy_state(item) for item in state)
    if isinstance(state, list):
        return [_copy_state(item) for item in state]
    if isinstance(state, dict):
        return {key: _copy_state(value) for key, value in state.items()}
    return state


class CheckpointedLoop:
    """One run of a loop of ``steps`` steps, reversed with at most ``snapshots`` snapshots.

    ``snapshots=None`` takes :func:`default_snapshots`. ``stats`` counts the calls made:
    ``forward`` (steps run without saving, the first pass included), ``taped`` (steps run
    to be reversed: exactly ``steps``) and ``most_snapshots`` (the most kept at once).

    ``CheckpointedLoop.latest`` is the loop that ran forward last (what tests and
    benchmarks read ``stats`` from).

    Example::

        loop = CheckpointedLoop(step, step_vjp, step_backward, steps=100, snapshots=10)
        d_start = loop.backward(d_end) if loop.forward(start) is not None else None
    """

    latest: CheckpointedLoop | None = None

    def __init__(
        self,
        step: Callable[[Any, int], Any],
        step_vjp: Callable[[Any, int], tuple[Any, Any]],
        step_backward: Callable[[Any, Any], Any],
        steps: int,
        snapshots: int | None = None,
        copy_state: Callable[[Any], Any] = _copy_state,
        replay: Replay | None = None,
    ) -> None:
        if snapshots is None:
            snapshots = default_snapshots(steps)
        if not isinstance(snapshots, (int, np.integer)) or snapshots < 1:
            raise ValueError(f"snapshots must be a whole number of at least 1, not {snapshots!r}")
        self.step, self.step_vjp, self.step_backward = step, step_vjp, step_backward
        self.steps, self.snapshots, self.copy_state = int(steps), int(snapshots), copy_state
        self.replay = replay or Replay([])
        self.random_after: list = []  # the generators' states where the forward pass left them
        self.stored: dict[int, Any] = {}
        self.random_at: dict[int, list] = {}  # the generators' states at each snapshot
        self.stats = {"forward": 0, "taped": 0, "most_snapshots": 0}

    def forward(self, state: Any) -> Any:
        """Run every step once, keeping the snapshots the backward sweep starts from."""
        CheckpointedLoop.latest = self
        again = 0 in self.random_at  # pulled back again: the same random numbers again
        now = self.replay.states() if again else None
        if again:
            self.replay.set(self.random_at[0])
        chain = set(self.first_chain())
        self._store(0, state)
        for t in range(self.steps):
            if t in chain:
                self._store(t, state)
            state = self._advance_one(state, t)
        self.random_after = self.replay.states() if now is None else now
        if now is not None:
            self.replay.set(now)
        return state

    def backward(self, cotangent: Any) -> Any:
        """The cotangent of the state before the first step, given that of the last."""
        if self.steps == 0:
            return cotangent
        try:
            result = self._reverse(0, self.steps, self.snapshots, cotangent)
        finally:
            self.replay.set(self.random_after)
        self.stored.clear()
        self.random_at.clear()
        return result

    def first_chain(self) -> list[int]:
        """The snapshots the backward sweep places first, on its way to the last step:
        the forward pass passes them anyway."""
        chain, start, length, snapshots = [], 0, self.steps, self.snapshots
        while length > 1 and snapshots > 1:
            split = optimal_split(length, snapshots)
            start, length, snapshots = start + split, length - split, snapshots - 1
            chain.append(start)
        return chain

    def _store(self, position: int, state: Any) -> None:
        self.stored[position] = self.copy_state(state)
        self.random_at[position] = self.replay.states()
        self.stats["most_snapshots"] = max(self.stats["most_snapshots"], len(self.stored))

    def _advance_one(self, state: Any, t: int) -> Any:
        self.stats["forward"] += 1
        state = self.step(state, t)
        self.replay.check(t, state)
        return state

    def _from_snapshot(self, start: int) -> Any:
        """A copy of the snapshot at ``start``, with the generators as they were there."""
        self.replay.set(self.random_at[start])
        return self.copy_state(self.stored[start])

    def _advance(self, start: int, stop: int) -> Any:
        state = self._from_snapshot(start)
        for t in range(start, stop):
            state = self._advance_one(state, t)
        return state

    def _reverse_step(self, state: Any, t: int, cotangent: Any) -> Any:
        self.stats["taped"] += 1
        new_state, saved = self.step_vjp(state, t)
        self.replay.check(t, new_state)
        return self.step_backward(saved, cotangent)

    def _reverse(self, start: int, stop: int, snapshots: int, cotangent: Any) -> Any:
        """Reverse steps ``start .. stop - 1`` from the snapshot at ``start``."""
        while stop - start > 1 and snapshots > 1:
            split = start + optimal_split(stop - start, snapshots)
            if split not in self.stored:
                self._store(split, self._advance(start, split))
            cotangent = self._reverse(split, stop, snapshots - 1, cotangent)
            del self.stored[split], self.random_at[split]
            stop = split
        for t in range(stop - 1, start - 1, -1):  # one snapshot: run forward from it each time
            state = self._advance(start, t) if t > start else self._from_snapshot(start)
            cotangent = self._reverse_step(state, t, cotangent)
        return cotangent


_FINGERPRINTS = 4096  # the most steps of one loop whose states are compared when run again


class Replay:
    """What makes a loop's steps run again as they ran the first time: the random
    generators its body can reach (``s2sgrad/runtime/replays.py``), set again at each
    snapshot, and a fingerprint of the state after each step (of up to 4,096 steps evenly
    spread over ``steps``), which a step run again must give again (``refusal()`` is raised
    when it does not).

    Example::

        replay = Replay(random_sources(body, values), lambda: changed_on_recomputing(body))
    """

    def __init__(
        self, sources: list, refusal: Callable[[], Exception] | None = None, steps: int = 0
    ):
        self.sources, self.refusal = sources, refusal
        # at most _FINGERPRINTS steps are compared, evenly spread: a loop that draws unseen
        # random numbers or reads a global it changes differs at every step after the first
        # such step, and a checkpointed loop is long and meant to be kept small and fast
        self.stride = max(1, -(-steps // _FINGERPRINTS))
        self.fingerprints = np.zeros(0, dtype=np.int64)
        self.noted = np.zeros(0, dtype=bool)

    def states(self) -> list:
        return random_states(self.sources)

    def set(self, states: list) -> None:
        set_random_states(self.sources, states)

    def check(self, t: int, state: Any) -> None:
        """Note the fingerprint of the state after step ``t`` the first time; after that,
        refuse another."""
        if self.refusal is None or t % self.stride:
            return
        found = fingerprint(state, hooks.value_of)
        t //= self.stride
        if t >= len(self.noted):  # room for twice as many steps
            grown = max(2 * len(self.noted), t + 1)
            self.fingerprints = np.resize(self.fingerprints, grown)
            self.noted = np.concatenate([self.noted, np.zeros(grown - len(self.noted), bool)])
        if not self.noted[t]:
            self.fingerprints[t], self.noted[t] = found, True
        elif self.fingerprints[t] != found:
            raise self.refusal()


def run_checkpointed(
    step: Callable[..., tuple],
    carried: tuple,
    read: tuple,
    iterable: Any,
    snapshots: int | None = None,
    differentiated: tuple[bool, ...] | None = None,
) -> tuple:
    """The loop ``for t in iterable: carried = step(*carried, *read, t)``; returns ``carried``.

    ``carried`` is the loop state the body assigns, ``read`` what the body only reads. In
    differentiated code its derivative reverses the loop keeping at most ``snapshots``
    snapshots of ``carried`` (``None``: about √n), recomputing the rest, and gives
    cotangents to the entries of ``read`` that ``differentiated`` marks (``None``: every
    floating one): data the loop reads is not differentiated at each step.

    Example::

        def body(h, w, t):
            return (np.tanh(w * h),)

        (h,) = run_checkpointed(body, (h0,), (w,), range(100), snapshots=10)
    """
    carried = tuple(carried)
    for t in iterable:
        carried = step(*carried, *read, t)
    return carried


def checkpointed(iterable: Iterable, snapshots: int | None = None) -> Iterator:
    """Mark a loop whose backward sweep keeps at most ``snapshots`` snapshots of its state.

    ``for t in checkpointed(range(n), snapshots=k):`` in a differentiated function: the
    forward pass keeps at most ``k`` copies of the loop state (the variables the body
    assigns), and the backward pass recomputes the steps in between from the nearest one,
    on the binomial (Revolve) schedule, which recomputes the least for ``k`` snapshots.
    ``snapshots=None`` takes about √n. Anywhere else it is ``iter(iterable)``.

    Example::

        def loss(w, h):
            for t in checkpointed(range(10_000), snapshots=100):
                h = np.tanh(w @ h)
            return np.sum(h)
    """
    check_snapshots(snapshots)
    return iter(iterable)


def check_snapshots(snapshots: Any) -> None:
    """Refuse a number of snapshots that is not ``None`` or a whole number ≥ 1."""
    whole = isinstance(snapshots, (int, np.integer)) and not isinstance(snapshots, bool)
    if snapshots is not None and not (whole and snapshots >= 1):
        raise ValueError(
            f"checkpointed: snapshots must be None or a whole number of at least 1, "
            f"not {snapshots!r}"
        )
