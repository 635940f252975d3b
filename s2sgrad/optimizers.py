"""Gradient-based optimisers over parameters of any pytree structure.

Each optimiser has the shape ``opt(grad_fn, params, num_iters, step_size, callback=None,
**hyper)``: ``grad_fn(params, i)`` returns the gradient at step ``i`` as a pytree of the
same structure as ``params`` (a dict, list, tuple, ``NamedTuple``, dataclass, ...), and
``callback(params, i, gradient)`` runs after the gradient of every step. The final
parameters come back in the same structure. ``step_size`` may be a number or a function
of the step (a schedule)::

    import s2sgrad as sg
    from s2sgrad.optimizers import adam

    def loss(params, x, y):
        return np.mean((x @ params["w"] + params["b"] - y) ** 2)

    dloss = sg.grad(loss)
    params = adam(lambda p, i: dloss(p, x, y), {"w": np.zeros(3), "b": 0.0}, 500, 0.05)

Parameters are never changed in place: each step makes new arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.pytrees import tree_flatten, tree_unflatten

__all__ = ["sgd", "momentum", "adam", "rmsprop"]

GradientFunction = Callable[[Any, int], Any]
Callback = Callable[[Any, int, Any], None]


def sgd(
    grad_fn: GradientFunction,
    params: Any,
    num_iters: int = 100,
    step_size: float | Callable[[int], float] = 0.1,
    callback: Callback | None = None,
) -> Any:
    """Plain gradient descent: ``params ← params − step_size · gradient``.

    Example::

        sgd(lambda p, i: 2 * p, np.ones(3), num_iters=50, step_size=0.1)  # ≈ 0
    """

    def update(leaves, gradients, step, size):
        return [x - size * g for x, g in zip(leaves, gradients)]

    return _optimise(grad_fn, params, num_iters, step_size, callback, update)


def momentum(
    grad_fn: GradientFunction,
    params: Any,
    num_iters: int = 100,
    step_size: float | Callable[[int], float] = 0.1,
    callback: Callback | None = None,
    mass: float = 0.9,
) -> Any:
    """Heavy-ball momentum: ``v ← mass · v − step_size · gradient``, ``params ← params + v``.

    Example::

        momentum(lambda p, i: 2 * p, np.ones(3), num_iters=100, step_size=0.05, mass=0.8)
    """
    velocities: list[Any] = []

    def update(leaves, gradients, step, size):
        if not velocities:
            velocities.extend(np.zeros_like(g) for g in gradients)
        for k, g in enumerate(gradients):
            velocities[k] = mass * velocities[k] - size * g
        return [x + v for x, v in zip(leaves, velocities)]

    return _optimise(grad_fn, params, num_iters, step_size, callback, update)


def rmsprop(
    grad_fn: GradientFunction,
    params: Any,
    num_iters: int = 100,
    step_size: float | Callable[[int], float] = 0.1,
    callback: Callback | None = None,
    gamma: float = 0.9,
    eps: float = 1e-8,
) -> Any:
    """RMSProp: each leaf's step divided by a running root mean square of its gradients.

    ``s ← gamma · s + (1 − gamma) · gradient²``, ``params ← params − step_size ·
    gradient / (√s + eps)``.

    Example::

        rmsprop(lambda p, i: 2 * p, np.ones(3), num_iters=200, step_size=0.01)
    """
    squares: list[Any] = []

    def update(leaves, gradients, step, size):
        if not squares:
            squares.extend(np.zeros_like(g) for g in gradients)
        result = []
        for k, (x, g) in enumerate(zip(leaves, gradients)):
            squares[k] = gamma * squares[k] + (1 - gamma) * g * g
            result.append(x - size * g / (np.sqrt(squares[k]) + eps))
        return result

    return _optimise(grad_fn, params, num_iters, step_size, callback, update)


def adam(
    grad_fn: GradientFunction,
    params: Any,
    num_iters: int = 100,
    step_size: float | Callable[[int], float] = 0.001,
    callback: Callback | None = None,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
) -> Any:
    """Adam (Kingma and Ba, 2015): running means of the gradient and its square, with
    their start-up bias corrected.

    ``m ← b1 · m + (1 − b1) · g``, ``v ← b2 · v + (1 − b2) · g²``, ``params ← params −
    step_size · m̂ / (√v̂ + eps)`` with ``m̂ = m / (1 − b1^(i+1))``, ``v̂ = v / (1 − b2^(i+1))``.

    Example::

        adam(lambda p, i: 2 * p, np.ones(3), num_iters=500, step_size=0.05)
    """
    first: list[Any] = []
    second: list[Any] = []

    def update(leaves, gradients, step, size):
        if not first:
            first.extend(np.zeros_like(g) for g in gradients)
            second.extend(np.zeros_like(g) for g in gradients)
        result = []
        for k, (x, g) in enumerate(zip(leaves, gradients)):
            first[k] = b1 * first[k] + (1 - b1) * g
            second[k] = b2 * second[k] + (1 - b2) * g * g
            corrected_first = first[k] / (1 - b1 ** (step + 1))
            corrected_second = second[k] / (1 - b2 ** (step + 1))
            result.append(x - size * corrected_first / (np.sqrt(corrected_second) + eps))
        return result

    return _optimise(grad_fn, params, num_iters, step_size, callback, update)


def _optimise(grad_fn, params, num_iters, step_size, callback, update):
    """Run ``num_iters`` steps of ``update(leaves, gradient_leaves, i, size)``."""
    if not isinstance(num_iters, (int, np.integer)) or num_iters < 0:
        raise ValueError(f"num_iters must be a whole number of steps, not {num_iters!r}")
    leaves, structure = tree_flatten(params)
    for step in range(num_iters):
        gradient = grad_fn(params, step)
        gradient_leaves, gradient_structure = tree_flatten(gradient)
        if gradient_structure != structure:
            raise ValueError(
                f"grad_fn returned a gradient of the structure {gradient_structure!r} at step "
                f"{step}, but the parameters have the structure {structure!r}; return the "
                "gradient with respect to all of params, in their structure"
            )
        if callback is not None:
            callback(params, step, gradient)
        size = step_size(step) if callable(step_size) else step_size
        gradient_leaves = [np.asarray(g) for g in gradient_leaves]
        leaves = update(leaves, gradient_leaves, step, size)
        params = tree_unflatten(structure, leaves)
    return params
