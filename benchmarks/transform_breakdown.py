"""Where the first call of a large straight-line gradient spends its time (issue 15).

The transformation of ``transform_scaling.straight_line_source(n)`` is split into the
build (``pipeline.derivative``: parsing, passes, sweeps), each finishing pass of the
specialised code (``finishing.PASSES``) and the compilation of its source. The finishing
is timed twice: on the raw code the sweeps wrote, and on that code already optimised (as
if the sweeps wrote the optimiser's final form): the difference bounds what emitting fewer
raw statements could save after the build. CPU time (steadier on a shared machine),
median of a few rounds, the garbage collector paused.

    python benchmarks/transform_breakdown.py          # 2,000 statements, 3 rounds
    python benchmarks/transform_breakdown.py 500 5    # 500 statements, 5 rounds

Example:
    >>> statement_count("def f(x):\\n    y = x\\n    # a comment\\n    return y\\n")
    2
"""

from __future__ import annotations

import dataclasses
import gc
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from transform_scaling import load, straight_line_source


def statement_count(source: str) -> int:
    """The statements of a printed function: its lines but the header and comments."""
    lines = source.splitlines()[1:]
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def breakdown(sg, size: int = 2000, rounds: int = 3) -> dict[tuple[str, str], float]:
    """Median CPU milliseconds of each part, keyed by (input of the finishing, part)."""
    from s2sgrad.compiler import finishing, pipeline
    from s2sgrad.compiler.codegen import to_source
    from s2sgrad.compiler.syntax import clone

    times: defaultdict[tuple[str, str], list[float]] = defaultdict(list)
    current = ["raw"]

    def timed(step):
        def run(node, state, step=step):
            start = time.process_time()
            try:
                return step.run(node, state)
            finally:
                times[(current[0], step.name)].append(time.process_time() - start)

        return dataclasses.replace(step, run=run)

    original = finishing.PASSES
    finishing.PASSES = tuple(timed(step) for step in original)
    x = np.random.default_rng(0).normal(size=8)
    enabled = gc.isenabled()
    gc.disable()
    try:
        with tempfile.TemporaryDirectory() as directory:
            for index in range(rounds):
                for kind in ("raw", "optimised"):
                    current[0] = kind
                    fn = load(straight_line_source(size), Path(directory), f"b{index}{kind}")
                    start = time.process_time()
                    generated = pipeline.derivative(fn, ("x",))
                    times[(kind, "build")].append(time.process_time() - start)
                    if kind == "raw" and index == 0:
                        raw = statement_count(to_source(generated.raw_node))
                        final = statement_count(to_source(generated.node))
                        print(f"  statements: {raw:,} raw, {final:,} after the optimiser")
                    if kind == "optimised":
                        current[0] = "generic"  # its own finishing, not reported
                        generated.raw_node = clone(generated.node)
                        current[0] = kind
                    start = time.process_time()
                    _, fast = finishing.specialised(generated, (x,), {})
                    times[(kind, "finishing, in all")].append(time.process_time() - start)
                    start = time.process_time()
                    fast.function  # noqa: B018 -- printed and compiled when first asked for
                    times[(kind, "compile")].append(time.process_time() - start)
                    gc.collect()
    finally:
        finishing.PASSES = original
        if enabled:
            gc.enable()
    return {key: statistics.median(values) * 1e3 for key, values in times.items()}


def report(sg, size: int = 2000, rounds: int = 3) -> None:
    print(f"\nFirst call of a {size:,}-statement straight-line gradient, CPU ms (median)")
    medians = breakdown(sg, size, rounds)
    parts = dict.fromkeys(part for kind, part in medians if kind != "generic")
    print(f"  {'part':<48} {'raw code':>9} {'optimised':>10}")
    for part in parts:
        raw, optimised = medians.get(("raw", part), 0.0), medians.get(("optimised", part), 0.0)
        if raw >= 0.5 or optimised >= 0.5:
            print(f"  {part:<48} {raw:9.1f} {optimised:10.1f}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import s2sgrad

    arguments = [int(a) for a in sys.argv[1:3]]
    report(s2sgrad, *arguments)
