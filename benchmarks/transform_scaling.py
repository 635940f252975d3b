"""How the source transformation's time grows with the size of the function (see run.py).

Three families of generated functions, each written to a file of its own and imported
(s2sgrad reads the source), so that every one is transformed from a cold cache:

* straight-line functions of 100, 500 and 2,000 statements;
* 30, 60 and 90 nested ``if`` statements;
* a 100,000-iteration loop on Python floats, whose first call is set against a later one;
* 100, 200 and 400 ``if/else`` statements one after another, and a loop whose body has
  100, 200 and 400 statements (no target: the time should grow with the size, and the
  table prints how much it grows when the size doubles);
* the derivatives of ``tanh`` to the sixth order, each the gradient of the one before (no
  target: the code to differentiate about triples with each order).

The transformation's time is the first call's minus a later call's. Targets: 2,000
statements under 1 s, 90 nested ifs under 0.5 s, the loop's first call at most 2x a later
call.

    python benchmarks/transform_scaling.py   # this table alone

Example:
    >>> source = straight_line_source(3)
    >>> source.count("\\n    t") == 3
    True
"""

from __future__ import annotations

import gc
import importlib.util
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from verdicts import judge

STRAIGHT_LINE_SIZES = (100, 500, 2000)
NESTED_IF_DEPTHS = (30, 60, 90)
LOOP_ITERATIONS = 100_000
STRAIGHT_LINE_TARGET_MS = 1000.0  # for the largest size
NESTED_IF_TARGET_MS = 500.0  # for the deepest
LOOP_FIRST_CALL_TARGET = 2.0  # first call / later call

_STATEMENTS = (
    "t{k} = np.sin(t{p}) * 0.5 + t{q}",
    "t{k} = t{p} * t{q} * 0.25",
    "t{k} = np.tanh(t{p} - 0.1 * t{q})",
    "t{k} = t{p} + np.exp(-t{q} * t{q})",
)


def straight_line_source(statements: int) -> str:
    """A function ``f(x)`` of ``statements`` assignments, each reading the two before it."""
    lines = ["import numpy as np", "", "", "def f(x):", "    t0 = x", "    t1 = x * 0.5"]
    for k in range(2, statements):
        form = _STATEMENTS[k % len(_STATEMENTS)]
        lines.append("    " + form.format(k=k, p=k - 1, q=k - 2))
    lines.append(f"    return np.sum(t{statements - 1})")
    return "\n".join(lines) + "\n"


def nested_if_source(depth: int) -> str:
    """A function ``f(x, s)`` with ``depth`` nested ``if s > k:`` statements."""
    lines = ["import numpy as np", "", "", "def f(x, s):", "    y = x"]
    for k in range(depth):
        indent = "    " * (k + 1)
        lines.append(f"{indent}if s > {k}:")
        lines.append(f"{indent}    y = np.sin(y) * 1.01 + 0.1")
    lines.append("    return np.sum(y)")
    return "\n".join(lines) + "\n"


def loop_source(iterations: int) -> str:
    """A function ``f(a, b, x)`` running ``iterations`` steps of a scalar recurrence."""
    return (
        "import numpy as np\n\n\ndef f(a, b, x):\n"
        f"    for _ in range({iterations}):\n"
        "        x = np.sin(x) * a + b * x\n"
        "    return x\n"
    )


def branches_source(branches: int) -> str:
    """A function ``f(x, s)`` of ``branches`` ``if/else`` statements one after another."""
    lines = ["import numpy as np", "", "", "def f(x, s):", "    y = x"]
    for k in range(branches):
        lines.append(f"    if s > {k % 7}:")
        lines.append("        y = np.sin(y) * 1.01 + 0.1")
        lines.append("    else:")
        lines.append("        y = y * 0.9")
    lines.append("    return np.sum(y)")
    return "\n".join(lines) + "\n"


def loop_body_source(statements: int) -> str:
    """A function ``f(x)`` whose 3-step loop has a body of ``statements`` assignments."""
    lines = ["import numpy as np", "", "", "def f(x):", "    y = x", "    for _ in range(3):"]
    lines.append("        t1 = y * 0.5")
    for k in range(2, statements):
        form = _STATEMENTS[k % len(_STATEMENTS)].format(k=k, p=k - 1, q=max(k - 2, 1))
        lines.append("        " + form)
    lines.append(f"        y = t{statements - 1} * 0.1 + y")
    lines.append("    return np.sum(y)")
    return "\n".join(lines) + "\n"


def tanh_source() -> str:
    """``tanh`` written out, whose derivatives to the sixth order autograd's example plots."""
    return (
        "import numpy as np\n\n\ndef tanh(x):\n"
        "    y = np.exp(-2.0 * x)\n"
        "    return (1.0 - y) / (1.0 + y)\n"
    )


def load(source: str, directory: Path, name: str, function: str = "f"):
    """The function ``f`` of ``source``, imported from a new file (new code, cold cache)."""
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, function)


def seconds(call: Callable[[], object], clock=time.perf_counter) -> float:
    start = clock()
    call()
    return clock() - start


def first_and_later(sg, fn, args: tuple, wrt, mode: str, later_calls: int = 3):
    """Seconds of the first ``sg.grad(fn)(*args)`` and the fastest of a few later calls:
    wall-clock time, then this process's CPU time (steadier on a shared machine)."""

    def call():
        return sg.grad(fn, wrt=wrt, mode=mode)(*args)

    # the garbage the rows before left (a 2,000-statement transform's trees) is collected
    # now, not in the middle of this row's first call: one such collection took 106 ms of
    # the long loop's 120 ms "transformation" when run.py ran this table after its workloads
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    call()
    first, first_cpu = time.perf_counter() - start, time.process_time() - cpu
    later = min(seconds(call) for _ in range(later_calls))
    later_cpu = min(seconds(call, time.process_time) for _ in range(later_calls))
    return first, later, first_cpu, later_cpu


def _row(label: str, measure: Callable[[], tuple]) -> tuple[float, float] | None:
    try:
        first, later, first_cpu, later_cpu = measure()
    except Exception as error:  # reported in the table, the run goes on
        print(f"  {label:<28} failed: {type(error).__name__}: {str(error)[:200]}")
        return None
    print(
        f"  {label:<28} first call {first * 1e3:9.1f} ms, later {later * 1e3:8.2f} ms, "
        f"transformation {(first - later) * 1e3:9.1f} ms "
        f"(CPU {(first_cpu - later_cpu) * 1e3:7.1f} ms)"
    )
    return first, later


def measure_scaling(sg, mode: str = "s2s") -> None:
    """Print the "transform scaling" table: statements (or depth) -> milliseconds."""
    print("\nTransform scaling (first call - later call = the transformation)")
    rng = np.random.default_rng(0)
    x = rng.normal(size=8)
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        last = None
        for size in STRAIGHT_LINE_SIZES:
            fn = load(straight_line_source(size), folder, f"straight_{size}")
            last = _row(f"{size:,} statements", lambda f=fn: first_and_later(sg, f, (x,), 0, mode))
        ms = (last[0] - last[1]) * 1e3 if last else float("inf")
        verdict = judge("transform of 2,000 statements", ms < STRAIGHT_LINE_TARGET_MS)
        print(f"    largest: {ms:.0f} ms (target < {STRAIGHT_LINE_TARGET_MS:.0f} ms) {verdict}")
        for depth in NESTED_IF_DEPTHS:
            fn = load(nested_if_source(depth), folder, f"nested_{depth}")
            args = (x, float(depth))
            last = _row(
                f"{depth} nested ifs", lambda f=fn, a=args: first_and_later(sg, f, a, 0, mode)
            )
        ms = (last[0] - last[1]) * 1e3 if last else float("inf")
        verdict = judge("transform of the deepest nested ifs", ms < NESTED_IF_TARGET_MS)
        print(f"    deepest: {ms:.0f} ms (target < {NESTED_IF_TARGET_MS:.0f} ms) {verdict}")
        fn = load(loop_source(LOOP_ITERATIONS), folder, "long_loop")
        args = (0.4, 0.3, 0.5)
        row = _row(
            f"loop of {LOOP_ITERATIONS:,} iterations",
            lambda: first_and_later(sg, fn, args, (0, 1), mode, later_calls=2),
        )
        plain = min(seconds(lambda: fn(*args)) for _ in range(2))
        ratio = row[0] / row[1] if row else float("inf")
        verdict = judge("first call of the long loop", ratio <= LOOP_FIRST_CALL_TARGET)
        print(
            f"    f itself {plain * 1e3:.1f} ms; first call / later call {ratio:.2f}x "
            f"(target <= {LOOP_FIRST_CALL_TARGET:.0f}x) "
            f"{verdict}"
        )
        _growth(sg, folder, mode, "if/else in a row", branches_source, (x, 3.0))
        _growth(sg, folder, mode, "statements in a loop body", loop_body_source, (x,))
        _higher_orders(sg, load(tanh_source(), folder, "tanh_orders", "tanh"), mode)


def _growth(sg, folder: Path, mode: str, label: str, source, args, sizes=(100, 200, 400)):
    """Rows for one family of sizes, then how the transformation grows per doubling."""
    times = []
    for size in sizes:
        fn = load(source(size), folder, f"{source.__name__}_{size}")
        row = _row(f"{size} {label}", lambda f=fn: first_and_later(sg, f, args, 0, mode))
        times.append(row[0] - row[1] if row else float("nan"))
    steps = ", ".join(f"{b / a:.1f}x" for a, b in zip(times, times[1:]))
    print(f"    growth per doubling: {steps} (2x is linear)")


def _higher_orders(sg, tanh, mode: str, orders: int = 6) -> None:
    """Each order's derivative of ``tanh`` made from the one before (``grad(grad(...))``):
    the code to differentiate about triples with each order, and so does its time."""
    print(f"  derivatives of tanh, order 1 to {orders} (each the grad of the one before):")
    derivative, cells = tanh, []
    for order in range(1, orders + 1):
        derivative = sg.grad(derivative, mode=mode)
        gc.collect()
        start = time.process_time()
        derivative(0.7)
        made = time.process_time() - start
        lines = sg.source(derivative).count("\n")
        cells.append(f"{order}: {made * 1e3:.0f} ms CPU ({lines} lines)")
    print("    " + ", ".join(cells))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import s2sgrad

    measure_scaling(s2sgrad)
