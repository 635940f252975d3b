"""Time s2sgrad's Jacobians computed one element at a time against batched, side by side.

    python benchmarks/jacobian.py                  # everything (about 30 seconds)
    python benchmarks/jacobian.py --quick          # fewer, shorter rounds: a smoke run
    python benchmarks/jacobian.py --no-frameworks  # only s2sgrad's two ways

``sg.jacobian`` needs one backward pass per output element, ``sg.jacfwd`` one forward pass
per input element. s2sgrad runs the generated derivative code on a whole batch of one-hot
cotangents (tangents) at once where every operation in it has a batching rule
(``s2sgrad.batching``), and one element at a time otherwise. This script times both ways
in one process, in alternating rounds, on:

- **layer wrt x / wrt W**: one MLP layer ``tanh(x @ W + b)``, ``x`` of shape (4, 64) and
  ``W`` of shape (64, m), so 4 * m = 64, 128 and 256 outputs; ``sg.jacobian`` wrt ``x`` and
  wrt ``W``.
- **softmax**: ``sg.jacobian`` of a stable softmax of 256 elements.
- **layer jacfwd**: ``sg.jacfwd`` of the layer wrt ``x`` (256 inputs).
- **hessian**: ``sg.hessian`` (forward over reverse) of a two-layer MLP's squared loss wrt
  its first kernel (20 x 16 = 320 columns).

"loop" is s2sgrad with batching switched off (``s2sgrad.batching.jacobians.BATCHING``),
"batched" is the default. autograd's ``jacobian`` (one VJP per output, in a Python loop) and
JAX's ``jax.jacrev`` / ``jax.jacfwd`` (vectorised with ``vmap``; not jitted) are timed too
when they import. Every column is checked against the loop's Jacobian before it is timed; a
disagreement is reported loudly, not timed, and the script exits with status 1.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import cpu_model, fix_allocator, interleaved_minimum, load_s2sgrad, shout  # noqa: E402

sg = load_s2sgrad()
from s2sgrad.batching import jacobians as batching  # noqa: E402


def layer(x, W, b):
    return np.tanh(x @ W + b)


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def mlp_loss(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    return np.mean((h @ W2 + b2 - y) ** 2)


@dataclass
class Case:
    name: str
    function: Callable  # written with NumPy (``np``), as a user hands it to s2sgrad
    args: tuple
    wrt: int
    kind: str  # "jacobian", "jacfwd" or "hessian"


def cases() -> list[Case]:
    rng = np.random.default_rng(0)
    result = []
    for outputs in (64, 128, 256):
        m = outputs // 4
        args = (rng.normal(size=(4, 64)), rng.normal(size=(64, m)) / 8, rng.normal(size=m))
        result.append(Case(f"layer wrt x, {outputs} outputs", layer, args, 0, "jacobian"))
        result.append(Case(f"layer wrt W, {outputs} outputs", layer, args, 1, "jacobian"))
    result.append(Case("softmax, 256 outputs", softmax, (rng.normal(size=256),), 0, "jacobian"))
    args = (rng.normal(size=(4, 64)), rng.normal(size=(64, 32)) / 8, rng.normal(size=32))
    result.append(Case("layer jacfwd wrt x, 256 inputs", layer, args, 0, "jacfwd"))
    mlp = (
        rng.normal(size=(20, 16)) / 4,
        rng.normal(size=16),
        rng.normal(size=(16, 3)) / 4,
        rng.normal(size=3),
        rng.normal(size=(32, 20)),
        rng.normal(size=(32, 3)),
    )
    result.append(Case("hessian of an MLP loss wrt W1", mlp_loss, mlp, 0, "hessian"))
    return result


def s2sgrad_column(case: Case, batched: bool) -> Callable[[], object]:
    transform = getattr(sg, case.kind)(case.function, case.wrt)

    def run():
        batching.BATCHING = batched
        try:
            return transform(*case.args)
        finally:
            batching.BATCHING = True

    return run


def autograd_column(case: Case) -> Callable[[], object] | None:
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None
    function = with_module(case.function, anp)
    if case.kind == "hessian":
        transform = autograd.hessian(function, case.wrt)
    else:
        transform = autograd.jacobian(function, case.wrt)
    return lambda: transform(*case.args)


def jax_columns(case: Case) -> Callable[[], object] | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    function = with_module(case.function, jnp)
    make = {"jacobian": jax.jacrev, "jacfwd": jax.jacfwd, "hessian": jax.hessian}[case.kind]
    transform = make(function, case.wrt)
    args = tuple(jnp.asarray(a) for a in case.args)
    return lambda: transform(*args).block_until_ready()


def with_module(function: Callable, module) -> Callable:
    """``function`` with its global ``np`` replaced by ``module`` (autograd's or JAX's numpy)."""
    import types

    globals_ = {**function.__globals__, "np": module}
    return types.FunctionType(function.__code__, globals_, function.__name__)


def measure(case: Case, options) -> tuple[dict[str, float], list[str], bool]:
    columns = {"loop": s2sgrad_column(case, False), "batched": s2sgrad_column(case, True)}
    notes, wrong = [], False
    if not options.no_frameworks:
        for name, column in (("autograd", autograd_column(case)), ("jax", jax_columns(case))):
            if column is not None:
                columns[name] = column
    reference = np.asarray(columns["loop"]())
    batching.stats.clear()
    columns["batched"]()
    if not batching.stats[f"{'reverse' if case.kind == 'jacobian' else 'forward'}_batched"]:
        shout(f"{case.name}: the batched column fell back to the loop")
        wrong = True
    checked = {}
    for name, column in columns.items():
        value = np.asarray(column())
        if value.shape == reference.shape and np.allclose(value, reference, rtol=1e-6, atol=1e-9):
            checked[name] = column
        else:
            shout(f"{case.name}: {name} disagrees with the loop; not timed")
            wrong = wrong or name == "batched"
    times = interleaved_minimum(
        {k: v for k, v in checked.items() if k != "jax"}, options.rounds, options.seconds
    )
    if "jax" in checked:
        times.update(interleaved_minimum({"jax": checked["jax"]}, options.rounds, options.seconds))
    return times, notes, wrong


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 short rounds instead of 7")
    parser.add_argument("--no-frameworks", action="store_true", help="skip autograd and JAX")
    options = parser.parse_args(argv)
    options.rounds = 3 if options.quick else 7
    options.seconds = 0.05 if options.quick else 0.2
    print(f"CPU: {cpu_model()}; {fix_allocator()}; NumPy {np.__version__}")
    header = f"{'workload':36s} {'loop':>10s} {'batched':>10s} {'speed-up':>9s}"
    header += f" {'autograd':>10s} {'jax':>10s}"
    print(header)
    failed = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in cases():
            times, _, wrong = measure(case, options)
            failed = failed or wrong
            loop, batched = times.get("loop"), times.get("batched")
            ratio = f"{loop / batched:8.1f}x" if loop and batched else "        -"
            row = f"{case.name:36s} {_ms(loop)} {_ms(batched)} {ratio}"
            row += f" {_ms(times.get('autograd'))} {_ms(times.get('jax'))}"
            print(row, flush=True)
    print("times: fastest round, milliseconds per Jacobian (forward pass included)")
    return 1 if failed else 0


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:9.2f}ms" if seconds is not None else f"{'-':>11s}"


if __name__ == "__main__":
    sys.exit(main())
