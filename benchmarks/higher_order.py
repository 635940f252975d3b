"""Time s2sgrad's Hessian-vector products and forward mode against autograd and JAX, side by side.

    python benchmarks/higher_order.py                  # everything (about 20 seconds)
    python benchmarks/higher_order.py --quick          # fewer, shorter rounds: a smoke run
    python benchmarks/higher_order.py --no-frameworks  # only hand-written NumPy and s2sgrad
    python benchmarks/higher_order.py --small          # the MLP at batch 32, 196-64-10

Two workloads from workloads.py, at the sizes of the gradient benchmark (run.py):

- **hvp**: the Hessian of ``mlp_softmax`` (softmax cross-entropy, batch 128, 784-256-10, relu)
  wrt the first weight matrix ``W1``, times a random ``v`` of ``W1``'s shape; the other
  arguments are held fixed. s2sgrad computes it with ``sg.hvp`` (forward mode over the
  reverse-mode gradient), and also with ``sg.jvp`` of a gradient function made once;
  JAX with ``jax.jvp(jax.grad(f), ...)``, jitted and not; autograd with
  ``autograd.hessian_vector_product`` (reverse over reverse).
- **jvp**: the RNN loss (``rnn``: 40 steps, batch 16, 32-64, tanh) pushed forward along a
  random tangent of the input weights ``Wx``: s2sgrad's ``sg.jvp``, autograd's
  ``autograd.make_jvp``, and JAX's ``jax.jvp`` (jitted and not).

Each workload also has a hand-written NumPy version (one forward pass carrying the tangent,
then, for the HVP, the gradient's backward pass differentiated by hand), the reference every
other column is checked against before it is timed. A column that disagrees is reported
loudly and not timed, and the script exits with status 1.

Timing follows run.py: the NumPy-based columns (hand-written, s2sgrad, autograd) are timed
in alternating rounds, each keeping its fastest per-call time; JAX's columns are timed after
them, each on its own, because JAX's worker threads keep spinning after a call and slow
whatever runs next. "first call" is the first call's time: the source transformation for
s2sgrad, tracing and compilation for ``jax.jit``. autograd and JAX are optional (their columns
are left out when they do not import); run the script with a Python that has them, e.g.::

    python -m pip install -e . --no-deps   # in a virtualenv with jax and autograd
    python benchmarks/higher_order.py
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import cpu_model, fix_allocator, interleaved_minimum, load_s2sgrad, shout  # noqa: E402
from workloads import (  # noqa: E402
    mlp_softmax,
    mlp_softmax_args,
    rnn,
    rnn_args,
    with_numpy,
)

sg = load_s2sgrad()

MLP_SIZES = {"batch": 128, "n_in": 784, "n_hidden": 256, "n_out": 10}
MLP_SMALL = {"batch": 32, "n_in": 196, "n_hidden": 64, "n_out": 10}
RNN_SIZES = {"steps": 40, "batch": 16, "n_in": 32, "n_hidden": 64}


# --------------------------------------------------------------------------------------------
# Hand-written references


def mlp_softmax_hvp_W1(W1, b1, W2, b2, X, Y, V):
    """The Hessian of ``mlp_softmax`` wrt ``W1`` times ``V``, written by hand.

    The gradient is ``X.T @ (((p - Y) / n) @ W2.T * active)`` with ``p`` the softmax of the
    logits and ``active`` the relu's mask; moving ``W1`` along ``V`` changes only ``p`` (the
    mask is constant almost everywhere, and the rows of ``Y`` are one-hot).

    Example:
        >>> args = mlp_softmax_args(np.random.default_rng(0), 4, 3, 5, 2)
        >>> mlp_softmax_hvp_W1(*args, np.ones((3, 5))).shape
        (3, 5)
    """
    z = X @ W1 + b1
    active = z > 0.0
    logits = (z * active) @ W2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    dlogits = ((X @ V) * active) @ W2
    dp = p * (dlogits - np.sum(p * dlogits, axis=1, keepdims=True))
    dz = (dp @ W2.T) * active / X.shape[0]
    return X.T @ dz


def rnn_jvp_Wx(Wx, Wh, b, xs, dWx):
    """``(rnn(Wx, Wh, b, xs), its derivative along dWx)``, written by hand.

    Example:
        >>> args = rnn_args(np.random.default_rng(0), 3, 2, 2, 4)
        >>> value, tangent = rnn_jvp_Wx(*args, np.ones((2, 4)))
    """
    h = np.zeros((xs.shape[1], Wh.shape[0]))
    dh = np.zeros_like(h)
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
        dh = (xs[t] @ dWx + dh @ Wh) * (1.0 - h * h)
    return np.sum(h**2), np.sum(2.0 * h * dh)


# --------------------------------------------------------------------------------------------
# The functions of one argument that s2sgrad differentiates. (They spell the other
# arguments out: forward mode does not yet take ``fn(first, *rest)``.)


def mlp_loss_of_W1(args: tuple) -> Callable:
    _, b1, W2, b2, X, Y = args

    def loss(W1):
        return mlp_softmax(W1, b1, W2, b2, X, Y)

    return loss


def rnn_loss_of_Wx(args: tuple) -> Callable:
    _, Wh, b, xs = args

    def loss(Wx):
        return rnn(Wx, Wh, b, xs)

    return loss


# --------------------------------------------------------------------------------------------
# Columns


@dataclass
class Column:
    """One way of computing the workload's result: ``call()`` returns it as NumPy."""

    title: str
    call: Callable[[], object]
    jax: bool = False  # timed on its own, after the others


@dataclass
class Workload:
    title: str
    sizes: str
    reference: Callable[[], object]
    columns: list[Column]
    notes: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=dict)  # seconds per call, best round
    first: dict[str, float] = field(default_factory=dict)  # seconds, first call
    wrong: list[str] = field(default_factory=list)


def import_autograd():
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None, None
    return autograd, anp


def import_jax():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None, None
    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def hvp_workload(sizes: dict, frameworks: bool) -> Workload:
    args = mlp_softmax_args(np.random.default_rng(0), **sizes)
    W1 = args[0]
    v = np.random.default_rng(1).standard_normal(W1.shape)
    loss = mlp_loss_of_W1(args)
    dloss = sg.grad(loss, mode="s2s")
    columns = [
        Column("s2sgrad sg.hvp", lambda: sg.hvp(loss, (W1,), (v,), mode="s2s")[0]),
        Column("s2sgrad sg.jvp(grad made once)", lambda: sg.jvp(dloss, (W1,), (v,), mode="s2s")[1]),
    ]
    autograd, anp = import_autograd() if frameworks else (None, None)
    if autograd is not None:
        product = autograd.hessian_vector_product(with_numpy(mlp_softmax, anp))
        columns.append(Column("autograd hessian_vector_product", lambda: product(*args, v)))
    jax, jnp = import_jax() if frameworks else (None, None)
    if jax is not None:
        jax_loss = with_numpy(mlp_softmax, jnp)

        def jax_hvp(W, vector, *rest):
            gradient = jax.grad(lambda w: jax_loss(w, *rest))
            return jax.jvp(gradient, (W,), (vector,))[1]

        jargs = [jnp.asarray(a) for a in args]
        jv = jnp.asarray(v)
        jitted = jax.jit(jax_hvp)
        columns += [
            Column("jax jvp(grad)", lambda: np.asarray(jax_hvp(jargs[0], jv, *jargs[1:])), True),
            Column("jax.jit jvp(grad)", lambda: np.asarray(jitted(jargs[0], jv, *jargs[1:])), True),
        ]
    sizes_text = "batch {batch}, {n_in}-{n_hidden}-{n_out}, relu".format(**sizes)
    return Workload(
        f"hvp: mlp_softmax, Hessian wrt W1 {W1.shape} times v",
        sizes_text,
        lambda: mlp_softmax_hvp_W1(*args, v),
        columns,
    )


def jvp_workload(sizes: dict, frameworks: bool) -> Workload:
    args = rnn_args(np.random.default_rng(0), **sizes)
    Wx = args[0]
    tangent = np.random.default_rng(1).standard_normal(Wx.shape)
    loss = rnn_loss_of_Wx(args)
    columns = [Column("s2sgrad sg.jvp", lambda: sg.jvp(loss, (Wx,), (tangent,), mode="s2s"))]
    autograd, anp = import_autograd() if frameworks else (None, None)
    if autograd is not None:
        make_jvp = autograd.make_jvp(with_numpy(rnn, anp))
        columns.append(Column("autograd make_jvp", lambda: make_jvp(*args)(tangent)))
    jax, jnp = import_jax() if frameworks else (None, None)
    if jax is not None:
        jax_rnn = with_numpy(rnn, jnp)

        def jax_jvp(W, direction, *rest):
            return jax.jvp(lambda w: jax_rnn(w, *rest), (W,), (direction,))

        jargs = [jnp.asarray(a) for a in args]
        jt = jnp.asarray(tangent)
        jitted = jax.jit(jax_jvp)
        columns += [
            Column("jax jvp", lambda: as_floats(jax_jvp(jargs[0], jt, *jargs[1:])), True),
            Column("jax.jit jvp", lambda: as_floats(jitted(jargs[0], jt, *jargs[1:])), True),
        ]
    sizes_text = "{steps} steps, batch {batch}, {n_in}-{n_hidden}, tanh".format(**sizes)
    return Workload(
        f"jvp: rnn, tangent on Wx {Wx.shape}",
        sizes_text,
        lambda: rnn_jvp_Wx(*args, tangent),
        columns,
    )


def as_floats(pair) -> tuple[float, float]:
    return tuple(float(x) for x in pair)


# --------------------------------------------------------------------------------------------
# Checking and timing


def disagreement(got, want) -> str | None:
    """Why ``got`` differs from the hand-written ``want`` (arrays or tuples of them), or None."""
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    if len(got) != len(want):
        return f"{len(got)} results, expected {len(want)}"
    for g, w in zip(got, want):
        g = np.asarray(g, dtype=np.float64)
        if g.shape != np.shape(w):
            return f"shape {g.shape}, expected {np.shape(w)}"
        scale = max(1.0, float(np.max(np.abs(w))))
        if not np.allclose(g, w, rtol=1e-6, atol=1e-9 * scale):
            return f"max abs difference {np.max(np.abs(g - w)):.3g} (largest value {scale:.3g})"
    return None


def first_call(column: Column) -> tuple[object, float]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        result = column.call()
        elapsed = time.perf_counter() - start
    for warning in caught:
        print(f"  warning from {column.title}: {warning.message}")
    return result, elapsed


def measure(w: Workload, rounds: int, seconds: float) -> None:
    print(f"{w.title} ({w.sizes})", flush=True)
    want, w.first["hand-written NumPy"] = timed(w.reference)
    calls = {"hand-written NumPy": w.reference}
    jax_calls = {}
    for column in w.columns:
        try:
            got, w.first[column.title] = first_call(column)
        except Exception as error:  # a failing column is reported, the others go on
            w.notes.append(f"{column.title} failed: {type(error).__name__}: {error}")
            continue
        problem = disagreement(got, want)
        if problem:
            w.wrong.append(column.title)
            shout(f"{column.title} disagrees with the hand-written result: {problem}")
            continue
        (jax_calls if column.jax else calls)[column.title] = column.call
    for note in w.notes:
        print(f"  note: {note}")
    time.sleep(1.0)  # JAX's threads, busy from its first calls above, go quiet
    w.times = interleaved_minimum(calls, rounds, seconds)
    for title, call in jax_calls.items():
        w.times |= interleaved_minimum({title: call}, rounds, seconds)


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


# --------------------------------------------------------------------------------------------
# Report


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    us = seconds * 1e6
    if us >= 100_000:
        return f"{seconds * 1e3:,.0f} ms"
    return f"{us:,.1f} µs" if us < 100 else f"{us:,.0f} µs"


def print_table(w: Workload) -> None:
    hand = w.times["hand-written NumPy"]
    s2sgrad = next((t for name, t in w.times.items() if name.startswith("s2sgrad")), None)
    header = ["", "per call", "÷ hand", "÷ s2sgrad", "first call"]
    rows = []
    for name, seconds in w.times.items():
        versus = f"{seconds / s2sgrad:.2f}x" if s2sgrad else "-"
        first = duration(w.first.get(name))
        rows.append([name, duration(seconds), f"{seconds / hand:.2f}x", versus, first])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print(f"\n{w.title}\n  {w.sizes}")
    for row in [header, ["-" * width for width in widths], *rows]:
        cells = [row[0].ljust(widths[0])] + [c.rjust(n) for c, n in zip(row[1:], widths[1:])]
        print("  " + "  ".join(cells))
    for title in w.wrong:
        print(f"  {title}: WRONG (disagrees with the hand-written result; not timed)")


def versions() -> str:
    parts = [f"Python {sys.version.split()[0]}", f"NumPy {np.__version__}"]
    for name in ("autograd", "jax"):
        try:
            parts.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{name} not installed")
    return ", ".join(parts)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 short rounds instead of 10")
    parser.add_argument("--small", action="store_true", help="a smaller MLP for the hvp")
    parser.add_argument("--no-frameworks", action="store_true", help="skip autograd and JAX")
    parser.add_argument(
        "--default-malloc", action="store_true", help="leave glibc's malloc thresholds alone"
    )
    options = parser.parse_args(argv)
    options.rounds = 4 if options.quick else 10
    options.seconds = 0.02 if options.quick else 0.05
    return options


def main(argv=None) -> int:
    options = parse_args(argv)
    allocator = "the default allocator" if options.default_malloc else fix_allocator()
    print(versions())
    print(f"Machine: {cpu_model()}; memory: {allocator}\n")
    frameworks = not options.no_frameworks
    workloads = [
        hvp_workload(MLP_SMALL if options.small else MLP_SIZES, frameworks),
        jvp_workload(RNN_SIZES, frameworks),
    ]
    for w in workloads:
        measure(w, options.rounds, options.seconds)
    for w in workloads:
        print_table(w)
    if any(w.wrong for w in workloads):
        shout("some results disagree with the hand-written ones (see above)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
