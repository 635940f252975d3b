"""Check a function's derivatives against central finite differences.

``check_grads`` is the oracle the project's own tests use, and users can run it on their
code: reverse mode (``vjp``) and forward mode (``jvp``) are compared entry by entry with
central differences in float64, on the first call and on a later one (which runs the code
specialised to the arguments' shapes), and ``order=2`` checks the derivative functions again.
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from s2sgrad.api import grad, jvp, vjp
from s2sgrad.tape.structures import flatten

__all__ = ["check_grads"]

MODES = ("rev", "fwd")


def check_grads(
    f: Callable,
    *args: Any,
    modes: Sequence[str] = MODES,
    order: int = 2,
    mode: str = "auto",
    step: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    seed: int = 0,
) -> None:
    """Check ``f``'s derivatives at ``args`` against central differences.

    ``modes`` picks reverse mode (``"rev"``: a vector-Jacobian product with a random
    cotangent) and forward mode (``"fwd"``: a Jacobian-vector product with random
    tangents); ``order=2`` also checks the derivatives of the gradient. ``mode`` is the
    engine (``"auto"``, ``"s2s"`` or ``"tape"``). Arguments holding integers or booleans
    are held fixed. Raises ``AssertionError`` naming the worst entry. To second order the
    gradient's VJP is compared with the gradient's difference along the cotangent (a
    Hessian is symmetric), two calls of the gradient instead of two per entry.

    Example::

        sg.check_grads(lambda x: np.sum(np.sin(x) ** 2), np.linspace(0, 1, 4))
    """
    for kind in modes:
        if kind not in MODES:
            raise ValueError(f"modes must be taken from {MODES}, not {kind!r}")
    if order < 1:
        raise ValueError(f"order must be 1 or more, not {order}")
    positions = [i for i, a in enumerate(args) if _is_float_structure(a)]
    if not positions:
        raise TypeError("check_grads needs at least one argument holding floats")
    _check_orders(f, args, positions, modes, order, mode, step, rtol, atol, seed, False)


def _check_orders(f, args, positions, modes, order, mode, step, rtol, atol, seed, gradient):
    """``check_grads`` from ``order`` down; ``gradient``: ``f`` is the gradient, wrt
    ``positions``, of a real function of ``args`` (the check of the order above)."""
    rng = np.random.default_rng(seed)
    if "rev" in modes:
        _check_reverse(f, args, positions, mode, step, rtol, atol, rng, gradient)
    if "fwd" in modes:
        _check_forward(f, args, positions, mode, step, rtol, atol, rng)
    if order > 1:
        cotangent = _random_like(f(*args), rng)
        first = grad(_projected(f, cotangent, len(args)), wrt=tuple(positions), mode=mode)
        _check_orders(
            first, args, positions, modes, order - 1, mode, step, rtol, atol, seed + 1, True
        )


def _check_reverse(f, args, positions, mode, step, rtol, atol, rng, gradient=False) -> None:
    cotangent = _random_like(f(*args), rng)
    # a gradient's VJP: its derivative along the cotangent; else entry by entry, as needed
    numeric = _gradient_along(f, args, positions, cotangent, step) if gradient else {}
    for call in _CALLS:
        _, pullback = vjp(f, *args, mode=mode)
        analytic = pullback(cotangent)
        for position in positions:
            if position not in numeric:

                def along(value: Any, p: int = position) -> Any:
                    return _inner(cotangent, f(*_replaced(args, p, value)))

                numeric[position] = _numeric_gradient(along, args[position], step)
            what = f"reverse mode, argument {position}, {call}"
            _compare(analytic[position], numeric[position], what, rtol, atol)


def _gradient_along(gradient, args, positions, cotangent, step) -> dict[int, list]:
    """The VJP of a ``gradient`` (one entry per position) with the ``cotangent`` by central
    differences, with two calls: a Hessian is symmetric, so ``c^T H`` is ``H c``, the
    gradient's derivative along ``c`` (``c``'s entry for each position moving that
    argument). One difference per entry of the arguments measures the same vector."""

    def moved(scale: float) -> Any:
        trial = list(args)
        for position, direction in zip(positions, cotangent):
            trial[position] = _moved(args[position], direction, scale)
        return gradient(*trial)

    up, down = moved(step), moved(-step)
    return {
        position: [(u - d) / (2 * step) for u, d in zip(_float_leaves(a), _float_leaves(b))]
        for position, a, b in zip(positions, up, down)
    }


def _check_forward(f, args, positions, mode, step, rtol, atol, rng) -> None:
    tangents = [_random_like(a, rng) if i in positions else None for i, a in enumerate(args)]

    def moved(scale):
        return f(*[_axpy(scale, t, a) if t is not None else a for a, t in zip(args, tangents)])

    up, down = _float_leaves(moved(step)), _float_leaves(moved(-step))
    numeric = [(u - d) / (2 * step) for u, d in zip(up, down)]
    for call in _CALLS:
        _, analytic = jvp(f, args, tangents, mode=mode)
        _compare(analytic, numeric, f"forward mode, output, {call}", rtol, atol)


# the first call of a derivative runs while it is specialised to the arguments' shapes, and
# later calls run the specialised code: both are checked
_CALLS = ("first call", "later call")


def _moved(value: Any, direction: Any, scale: float) -> Any:
    """``value + scale * direction`` in float64, leaf by leaf, as ``_numeric_gradient``
    moves an entry (a Python number stays one)."""
    leaves, rebuild = flatten(value)
    moved = []
    for leaf, step in zip(leaves, flatten(direction)[0]):
        entry = np.array(leaf, dtype=np.float64) + scale * np.asarray(step, dtype=np.float64)
        moved.append(entry if np.ndim(leaf) else float(entry))
    return rebuild(moved)


def _numeric_gradient(evaluate: Callable[[Any], float], x: Any, step: float) -> list:
    """Central differences of a scalar function of the structure ``x``, one array per leaf."""
    leaves, rebuild = flatten(x)
    gradients = []
    for index, leaf in enumerate(leaves):
        base = np.array(leaf, dtype=np.float64)
        gradient = np.zeros_like(base)
        for entry in np.ndindex(base.shape):
            values = []
            for sign in (1, -1):
                moved = base.copy()
                moved[entry] += sign * step
                trial = list(leaves)
                trial[index] = moved if np.ndim(leaf) else float(moved)
                values.append(evaluate(rebuild(trial)))
            gradient[entry] = (values[0] - values[1]) / (2 * step)
        gradients.append(gradient)
    return gradients


def _compare(analytic: Any, numeric: list, what: str, rtol: float, atol: float) -> None:
    analytic_leaves = _float_leaves(analytic)
    if len(analytic_leaves) != len(numeric):
        raise AssertionError(
            f"{what}: the derivative has {len(analytic_leaves)} parts, expected {len(numeric)}"
        )
    for leaf, (a, n) in enumerate(zip(analytic_leaves, numeric)):
        a = np.asarray(a, dtype=np.result_type(a, n, np.float64))
        if a.shape != n.shape:
            raise AssertionError(f"{what}, leaf {leaf}: shape {a.shape}, expected {n.shape}")
        error = np.abs(a - n) - (atol + rtol * np.abs(n))
        # a NaN derivative is wrong; a NaN difference (error NaN) is no evidence either way
        wrong = np.isnan(a) | (error > 0)
        if wrong.any():
            badness = np.where(np.isnan(a), np.inf, np.where(wrong, error, -np.inf))
            worst = np.unravel_index(np.argmax(badness), a.shape)
            raise AssertionError(
                f"{what}, leaf {leaf}, entry {tuple(int(i) for i in worst)}: derivative "
                f"{a[worst].item()!r}, central differences {n[worst].item()!r}"
            )


def _projected(f: Callable, cotangent: Any, arity: int) -> Callable:
    """``lambda *xs: <cotangent, f(*xs)>``, written as plain source so it can be transformed.

    Its parameters are named, and each output leaf is read by its path, because the
    transformer reads the function's source.
    """
    parameters = ", ".join(f"x{i}" for i in range(arity))
    paths = _leaf_paths(cotangent)
    terms = " + ".join(f"np.sum(np.real(cotangent{path} * out{path}))" for path in paths) or "0.0"
    filename = f"<s2sgrad check_grads projection {next(_projections)}>"
    source = f"def projected({parameters}):\n    out = f({parameters})\n    return {terms}\n"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np, "f": f, "cotangent": cotangent}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["projected"]


_projections = itertools.count()


def _leaf_paths(tree: Any, prefix: str = "") -> list[str]:
    if isinstance(tree, dict):
        return [p for k in tree for p in _leaf_paths(tree[k], f"{prefix}[{k!r}]")]
    if isinstance(tree, (list, tuple)):
        return [p for i, v in enumerate(tree) for p in _leaf_paths(v, f"{prefix}[{i}]")]
    return [prefix] if _is_float_leaf(tree) else []


def _inner(cotangent: Any, out: Any) -> float:
    """``Re <cotangent, out>``: a complex cotangent is ``dL/dRe - i dL/dIm`` (docs/complex.md)."""
    pairs = zip(_float_leaves(cotangent), _float_leaves(out))
    return float(sum(np.sum(np.real(np.multiply(c, o))) for c, o in pairs))


def _random_like(tree: Any, rng: np.random.Generator) -> Any:
    leaves, rebuild = flatten(tree)
    return rebuild([_random_leaf(leaf, rng) for leaf in leaves])


def _random_leaf(leaf: Any, rng: np.random.Generator) -> Any:
    if not _is_float_leaf(leaf):
        return None
    if np.iscomplexobj(leaf):
        shape = np.shape(leaf)
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(np.result_type(leaf))
    if np.ndim(leaf) == 0 and not isinstance(leaf, np.ndarray):
        return float(rng.normal())
    return rng.normal(size=np.shape(leaf)).astype(np.result_type(leaf))


def _axpy(scale: float, tangent: Any, value: Any) -> Any:
    t_leaves, _ = flatten(tangent)
    v_leaves, rebuild = flatten(value)
    return rebuild([v if t is None else v + scale * t for t, v in zip(t_leaves, v_leaves)])


def _replaced(args: tuple, position: int, value: Any) -> list:
    trial = list(args)
    trial[position] = value
    return trial


def _float_leaves(tree: Any) -> list[np.ndarray]:
    """The real and complex leaves, in float64 or complex128."""
    leaves, _ = flatten(tree)
    return [
        np.asarray(leaf, dtype=np.complex128 if np.iscomplexobj(leaf) else np.float64)
        for leaf in leaves
        if _is_float_leaf(leaf)
    ]


def _is_float_leaf(value: Any) -> bool:
    """A real or complex floating leaf: one an output's derivative is checked on."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (float, complex)):
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and dtype.kind in "fc"


def _is_real_leaf(value: Any) -> bool:
    return _is_float_leaf(value) and not np.iscomplexobj(value)


def _is_float_structure(value: Any) -> bool:
    """An argument central differences can move: real floating leaves only."""
    leaves, _ = flatten(value)
    return bool(leaves) and all(_is_real_leaf(leaf) for leaf in leaves)
