"""Time s2sgrad's generated gradients against hand-written NumPy gradients, side by side.

    python benchmarks/run.py                 # everything (2-4 minutes)
    python benchmarks/run.py --quick         # fewer rounds
    python benchmarks/run.py --only rnn,d    # some workloads, by name or key letter
    python benchmarks/run.py --processes 11  # more worker processes per workload (default 9)
    python benchmarks/run.py --no-frameworks # leave out autograd, JAX and PyTorch
    python benchmarks/run.py --blas-threads 1 # one BLAS thread in the timed workers (busy machine)

For each workload in workloads.py it first checks that ``s2sgrad.grad`` agrees with the
hand-written gradient, then times both side by side in several fresh worker processes
(``run.py --worker KEY``, see timing.py), each interleaving rounds of [hand-written,
s2sgrad] and keeping each one's fastest per-call time; the ratio is the median over the
processes of each process's ratio. autograd, JAX and PyTorch, where installed, are timed
after them in this process, each on its own. It also times the
first-call transformation of a 30-line function (thirty_lines.py). See README.md in this
folder for what the columns mean. Exits with status 1 if a gradient disagrees with the
hand-written one.
"""

from __future__ import annotations

import argparse
import ast
import compileall
import importlib.util
import inspect
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from frameworks import Framework, available
from freshness_cost import freshness_cost
from memory import (
    FIRST_CALL_TARGET,
    MEMORY_TARGET,
    first_call_peak,
    measure_large_input,
    peak_bytes,
)
from timing import (
    WorkerTimes,
    blas_threads_environment,
    fix_allocator,
    interleaved_minimum,
    ratios_in_workers,
    shift_memory_layout,
)
from transform_scaling import measure_scaling
from verdicts import judge, summary
from workloads import WORKLOADS, Workload, rnn_saved_bytes, workload

HERE = Path(__file__).resolve().parent
TRANSFORM_TARGET_MS = 50.0
GEOMETRIC_MEAN_TARGET = 1.0  # of s2sgrad/hand over the workloads
STATEMENTS_TARGET = 1.3  # generated statements / hand-written, on the specialised code
FRESHNESS_TARGET_PERCENT = 3.0
SPREAD_LIMIT = 0.05  # of the per-process ratios' interquartile range: above, twice the workers


def load_s2sgrad():
    """The s2sgrad module, from the installed package or else from this checkout."""
    try:
        import s2sgrad
    except ImportError:
        sys.path.insert(0, str(HERE.parent))
        import s2sgrad
    return s2sgrad


sg = load_s2sgrad()


def s2sgrad_grad(fn: Callable, wrt: tuple, mode: str) -> Callable:
    """``s2sgrad.grad(fn, wrt=wrt, mode=mode)``: the function under test."""
    return sg.grad(fn, wrt=wrt, mode=mode)


# --------------------------------------------------------------------------------------------
# Checking


def disagreement(got, want) -> str | None:
    """Why the gradients ``got`` differ from ``want`` (tuples, one per wrt), or None."""
    if not isinstance(got, tuple) or len(got) != len(want):
        return f"expected a tuple of {len(want)} gradients, got {type(got).__name__}"
    for i, (g, w) in enumerate(zip(got, want)):
        if np.shape(g) != np.shape(w):
            return f"gradient {i}: shape {np.shape(g)}, expected {np.shape(w)}"
        if not np.allclose(g, w, rtol=1e-6, atol=1e-9):
            error = np.max(np.abs(np.asarray(g, dtype=np.float64) - w))
            return f"gradient {i}: max abs difference {error:.3g}"
    return None


def shout(message: str) -> None:
    bar = "!" * 78
    print(f"\n{bar}\n!!! {message}\n{bar}\n", flush=True)


# --------------------------------------------------------------------------------------------
# One workload


@dataclass
class Result:
    workload: Workload
    times: dict[str, float] = field(default_factory=dict)  # seconds per call
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None  # why s2sgrad was not timed
    wrong: bool = False
    peaks: dict[str, int] = field(default_factory=dict)
    freshness: dict[str, float] = field(default_factory=dict)  # see freshness_cost
    statements: tuple[int, int] | None = None  # (generated, hand-written), see count
    workers: WorkerTimes | None = None  # hand and s2sgrad, timed in fresh processes

    @property
    def ratio(self) -> float | None:
        """The median over worker processes of each one's s2sgrad/hand."""
        if self.workers is None:
            return None
        return self.workers.ratio

    @property
    def memory_ratio(self) -> float | None:
        if "s2sgrad" not in self.peaks:
            return None
        return self.peaks["s2sgrad"] / self.peaks["hand"]

    @property
    def verdict(self) -> str:
        if self.wrong:
            return "WRONG"
        if self.ratio is None:
            return "SKIP"
        return "PASS" if self.ratio <= self.workload.target else "MISS"


def first_s2sgrad_call(w: Workload, args: tuple, mode: str):
    """The s2sgrad gradient function for ``w`` and its first result; warnings are printed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dfn = s2sgrad_grad(w.fn, w.wrt, mode)
        got = dfn(*args)
    for warning in caught:
        print(f"  warning from s2sgrad on {w.name}: {warning.message}")
    return dfn, got


def run_workload(w: Workload, frameworks: list[Framework], options) -> Result:
    print(f"[{w.key}] {w.name}: {w.sizes_text}", flush=True)
    result = Result(w)
    args = w.make_args(np.random.default_rng(0), **w.full)
    want = w.hand_grad(*args)
    calls: dict[str, Callable[[], object]] = {"hand": lambda: w.hand_grad(*args)}

    try:
        dfn, got = first_s2sgrad_call(w, args, options.mode)
    except Exception as error:  # any failure is reported, not fatal
        reason = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        if w.loops:
            reason = f"needs loops in the source transformer; {reason}"
        result.skipped = reason
        print(f"  s2sgrad skipped: {reason}")
    else:
        problem = disagreement(tuple(got) if isinstance(got, list) else got, want)
        if problem:
            result.wrong = True
            shout(f"s2sgrad's gradient of {w.name} disagrees with the hand-written one: {problem}")
        else:
            calls["s2sgrad"] = lambda: dfn(*args)

    # Hand-written and s2sgrad are timed side by side in fresh processes (timing.py), before
    # any framework runs here: PyTorch's and JAX's worker threads keep spinning for a while
    # after a call and would slow the workers down.
    if "s2sgrad" in calls:
        try:
            result.workers = workers_times(w, options)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            result.skipped = f"a worker process failed: {error}".splitlines()[0][:300]
            print(f"  s2sgrad not timed: {result.skipped}")
            del calls["s2sgrad"]
    if result.workers is not None:
        result.times = result.workers.median_times()
        ratios = " ".join(f"{ratio:.2f}" for ratio in result.workers.ratios)
        print(f"  s2sgrad/hand in {len(result.workers.ratios)} processes: {ratios}")
    else:
        result.times = interleaved_minimum({"hand": calls["hand"]}, options.rounds, options.seconds)

    for framework in frameworks:
        try:
            for column in framework.gradients(w, args):
                problem = disagreement(column.to_numpy(column.call()), want)
                if problem:
                    result.notes.append(f"{column.title} disagrees ({problem}); not timed")
                else:
                    calls[column.title] = column.call
        except Exception as error:  # a framework that fails is left out
            result.notes.append(f"{framework.name} failed: {type(error).__name__}: {error}")
    for note in result.notes:
        print(f"  note: {note}")

    # The other frameworks are timed afterwards, each on its own.
    time.sleep(0.3)
    main = {name: call for name, call in calls.items() if name in ("hand", "s2sgrad")}
    for title, call in calls.items():
        if title not in main:
            result.times |= interleaved_minimum({title: call}, options.rounds, options.seconds)
    for name, call in main.items():
        call()  # the steady state: a second call makes its signature's guard (cache.py)
        call()
        result.peaks[name] = peak_bytes(call)
    if "s2sgrad" in calls and getattr(dfn, "code", None) is not None:
        result.freshness = freshness_cost(dfn, args, options)
        result.statements = (count_statements(sg.source(dfn)), hand_statements(w))
    if "s2sgrad" in calls:
        result.peaks["s2sgrad first call"] = first_call_peak(sg, w.fn, w.wrt, args, options.mode)
    if w.name == "rnn":
        result.peaks["hand saved"] = rnn_saved_bytes(*args)
    return result


def workers_times(w: Workload, options) -> WorkerTimes:
    """``w`` timed side by side in ``options.processes`` worker processes, and as many more
    where their ratios spread widely (the layout matters there, README.md)."""
    environment = blas_threads_environment(options.blas_threads)
    arguments = worker_arguments(options)
    workers = ratios_in_workers(w.key, options.processes, arguments, environment)
    if workers.spread > SPREAD_LIMIT:
        workers.extend(ratios_in_workers(w.key, options.processes, arguments, environment))
    return workers


def worker_arguments(options) -> list[str]:
    """The options a worker process (``run.py --worker KEY``) is started with."""
    arguments = ["--mode", options.mode, "--rounds", str(options.worker_rounds)]
    arguments += ["--seconds", str(options.seconds)]
    return arguments + (["--default-malloc"] if options.default_malloc else [])


def run_worker(key: str, options) -> int:
    """Time workload ``key``'s hand-written and s2sgrad gradients side by side in this
    process and print ``{"hand": seconds, "s2sgrad": seconds}`` as JSON (one line, last)."""
    if not options.default_malloc:
        fix_allocator()
    padding = shift_memory_layout()
    w = workload(key)
    args = w.make_args(np.random.default_rng(0), **w.full)
    dfn, got = first_s2sgrad_call(w, args, options.mode)
    problem = disagreement(tuple(got) if isinstance(got, list) else got, w.hand_grad(*args))
    if problem:
        print(f"s2sgrad's gradient of {w.name} disagrees: {problem}", file=sys.stderr)
        return 1
    calls = {"hand": lambda: w.hand_grad(*args), "s2sgrad": lambda: dfn(*args)}
    print(json.dumps(interleaved_minimum(calls, options.rounds, options.seconds)))
    del padding  # kept until here: the arrays above lie where it moved them
    return 0


def count_statements(source: str) -> int:
    """Statements of the functions in ``source`` (a callee's derivative, which s2sgrad
    shows beside the function's, included; each ``def`` and docstring left out; comments
    are not statements)."""
    total = 0
    for function in ast.parse(textwrap.dedent(source)).body:
        body = function.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        total += sum(isinstance(node, ast.stmt) for s in body for node in ast.walk(s))
    return total


def hand_statements(w: Workload) -> int:
    """Statements of the hand-written gradient (the helpers it calls not counted)."""
    return count_statements(inspect.getsource(w.hand_grad))


# --------------------------------------------------------------------------------------------
# First-call transformation time


def fresh_copy(source: Path, directory: Path, index: int):
    """Import ``source`` again under a new module name: new code objects, a cold cache."""
    path = directory / f"thirty_lines_copy{index}.py"
    path.write_text(source.read_text())
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def time_call(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure_transform(mode: str, copies: int = 6) -> None:
    print("\nFirst-call transformation of a 30-line function (benchmarks/thirty_lines.py)")
    source = HERE / "thirty_lines.py"
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for index in range(copies):
            module = fresh_copy(source, Path(directory), index)
            args = module.make_args(np.random.default_rng(0))
            fn, wrt = module.layer_norm_classifier, module.WRT

            def call(fn=fn, wrt=wrt, args=args):
                return s2sgrad_grad(fn, wrt, mode)(*args)

            try:
                first = time_call(call)
            except Exception as error:  # reported, the rest of the run goes on
                print(f"  skipped: s2sgrad failed on it: {type(error).__name__}: {error}")
                return
            later = min(time_call(call) for _ in range(20))
            rows.append((first, later))
    transforms = [(first - later) * 1e3 for first, later in rows]
    cache_hits = all(later < 0.5 * first for first, later in rows)
    median = statistics.median(transforms[1:])

    def verdict(ms, what):
        return judge(what, ms < TRANSFORM_TARGET_MS)

    first, later = rows[0]
    first_verdict = verdict(transforms[0], "transform of the 30-line function, first")
    median_verdict = verdict(median, "transform of the 30-line function, fresh copies")
    print(
        f"  first function in this process: first call {first * 1e3:7.1f} ms, "
        f"later call {later * 1e3:6.2f} ms, transformation {transforms[0]:6.1f} ms "
        f"(target < {TRANSFORM_TARGET_MS:.0f} ms) {first_verdict}"
    )
    print(
        f"  median of {len(transforms) - 1} fresh copies after it:    "
        f"        transformation {median:6.1f} ms "
        f"(target < {TRANSFORM_TARGET_MS:.0f} ms) {median_verdict}"
    )
    print(
        f"  later calls hit the cache: {'yes' if cache_hits else 'NO'} "
        "(a later sg.grad(f)(*args) takes under half the first call's time)"
    )


# --------------------------------------------------------------------------------------------
# Report


def microseconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    us = seconds * 1e6
    return f"{us:,.1f}" if us < 100 else f"{us:,.0f}"


def print_table(results: list[Result], extra: list[str]) -> None:
    header = ["workload", "hand µs", "s2sgrad µs", "ratio", "target", "result", "memory"]
    header += ["statements"]
    header += [f"{title} µs" for title in extra]
    rows = []
    for r in results:
        ratio = f"{r.ratio:.2f}x" if r.ratio is not None else "-"
        row = [f"{r.workload.key} {r.workload.name}", microseconds(r.times["hand"])]
        row += [microseconds(r.times.get("s2sgrad")), ratio, f"{r.workload.target:g}x"]
        memory = f"{r.memory_ratio:.2f}x" if r.memory_ratio is not None else "-"
        statements = "-"
        if r.statements:
            generated, hand = r.statements
            ok = generated / hand <= STATEMENTS_TARGET
            mark = judge(f"statements of {r.workload.name}", ok)
            statements = f"{generated}/{hand} {generated / hand:.2f}x {mark}"
        if r.ratio is not None:
            judge(f"time of {r.workload.name}", r.verdict == "PASS")
        row += [r.verdict, memory, statements]
        row += [microseconds(r.times.get(title)) for title in extra]
        rows.append(row)
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    ratios = [r.ratio for r in results if r.ratio is not None]
    lines = [header, ["-" * w for w in widths], *rows]
    print()
    for line in lines:
        cells = [line[0].ljust(widths[0])]
        cells += [str(cell).rjust(width) for cell, width in zip(line[1:], widths[1:])]
        print("  ".join(cells))
    if ratios:
        mean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        verdict = judge("geometric mean of the time ratios", mean <= GEOMETRIC_MEAN_TARGET)
        print(
            f"geometric mean of s2sgrad/hand: {mean:.3f}x "
            f"(target <= {GEOMETRIC_MEAN_TARGET:.1f}x) {verdict}"
        )
    print(f"statements: target <= {STATEMENTS_TARGET}x the hand-written gradient's")
    behind = [
        f"{r.workload.name} ({r.times['s2sgrad'] / r.times['jax.jit']:.2f}x jax.jit's time)"
        for r in results
        if "jax.jit" in r.times and "s2sgrad" in r.times and r.times["s2sgrad"] > r.times["jax.jit"]
    ]
    if any("jax.jit" in r.times for r in results):
        print("s2sgrad behind jax.jit: " + (", ".join(behind) if behind else "nowhere"))


def print_freshness(results: list[Result]) -> None:
    print(
        "\nCost of the freshness checks (each call checks that the globals and closure "
        f"variables f reads hold what they held; target < {FRESHNESS_TARGET_PERCENT:.0f} %)"
    )
    for r in results:
        times = r.freshness
        if not times:
            continue
        added = (times["with"] - times["without"]) / times["without"] * 100
        check = times["path with"] - times["path without"]
        print(
            f"  {r.workload.key} {r.workload.name:<12} with checks {microseconds(times['with'])} "
            f"µs, without {microseconds(times['without'])} µs ({added:+.1f} %); the call "
            f"path alone {times['path with'] * 1e9:.0f} ns vs {times['path without'] * 1e9:.0f}"
            f" ns: the checks ({times['names']} names) cost {check * 1e9:.0f} ns, "
            f"{check / times['with'] * 100:.2f} % of the call"
        )


def print_memory(results: list[Result]) -> None:
    print(
        "\nPeak memory of one gradient call (tracemalloc; includes the returned gradients). "
        f"Target: s2sgrad/hand <= {MEMORY_TARGET}x. The first call's peak includes the "
        "transformer's own objects (about 200 KiB), which dwarf small workloads' arrays; "
        f"the first-call target (<= {FIRST_CALL_TARGET}x a later call) is judged on the "
        "large input below"
    )
    for r in results:
        parts = [f"{name} {size / 1024:,.0f} KiB" for name, size in r.peaks.items()]
        if r.memory_ratio is not None:
            first = r.peaks["s2sgrad first call"] / r.peaks["s2sgrad"]
            parts.append(f"s2sgrad/hand {r.memory_ratio:.2f}x, first/later {first:.2f}x")
            ok = r.memory_ratio <= MEMORY_TARGET
            parts.append(judge(f"memory of {r.workload.name}", ok))
        print(f"  {r.workload.key} {r.workload.name:<12} " + ", ".join(parts))


def print_machine(frameworks: list[Framework]) -> None:
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    except Exception:  # older NumPy has no mode="dicts"
        blas = "BLAS unknown"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"Python {platform.python_version()}, NumPy {np.__version__} ({blas}), "
        f"s2sgrad {getattr(sg, '__version__', '?')}"
    )
    print(f"Machine: {platform.machine()} {cpu_model()}, {cores} cores, {platform.system()}")
    if frameworks:
        print("Also timed: " + ", ".join(f"{fw.name} {fw.version}" for fw in frameworks))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


# --------------------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 short rounds instead of 150")
    parser.add_argument("--only", help="comma-separated workload names or key letters")
    parser.add_argument("--no-frameworks", action="store_true", help="skip autograd/JAX/torch")
    parser.add_argument(
        "--default-malloc", action="store_true", help="leave glibc's malloc thresholds alone"
    )
    parser.add_argument("--mode", default="s2s", help="s2sgrad mode (default s2s: no tape)")
    parser.add_argument(
        "--no-scaling", action="store_true", help="skip the transform scaling table"
    )
    parser.add_argument(
        "--processes", type=int, help="worker processes per workload (default 9, 3 with --quick)"
    )
    parser.add_argument(
        "--blas-threads",
        type=int,
        help="BLAS threads in the worker processes (default: the library's own choice)",
    )
    parser.add_argument("--worker", metavar="KEY", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    # Many short rounds: on a shared machine, bursts of load are less likely to touch every
    # round of a column, and each column keeps its fastest round. A round shorter than the
    # scheduler's time slice (a few ms) often runs whole without being preempted, where a
    # round of 25 ms on a loaded machine almost never does.
    options.rounds = options.rounds or (40 if options.quick else 150)
    options.seconds = options.seconds or (0.00125 if options.quick else 0.0025)
    options.processes = options.processes or (3 if options.quick else 9)
    options.worker_rounds = 30 if options.quick else 60
    return options


def main(argv=None) -> int:
    options = parse_args(argv)
    if options.worker:
        return run_worker(options.worker, options)
    allocator = "the default allocator" if options.default_malloc else fix_allocator()
    frameworks = [] if options.no_frameworks else available()
    print_machine(frameworks)
    print(f"Memory: {allocator}")
    chosen = WORKLOADS
    if options.only:
        names = options.only.split(",")
        chosen = [w for w in WORKLOADS if w.name in names or w.key in names]

    if hasattr(sg, "grad"):
        # an installed package has its bytecode: the first function's transformation must
        # not pay for compiling the modules it imports lazily after a checkout
        compileall.compile_dir(Path(sg.__file__).parent, quiet=1)
        measure_transform(options.mode)
    else:
        print("\ns2sgrad.grad does not exist yet: only the other columns are timed")
    print()
    results = [run_workload(w, frameworks, options) for w in chosen]
    extra = [
        t for t in ("autograd", "jax", "jax.jit", "torch") if any(t in r.times for r in results)
    ]
    print_table(results, extra)
    print_freshness(results)
    print_memory(results)
    if hasattr(sg, "grad"):
        measure_large_input(sg, options.mode)
        if not options.no_scaling:
            measure_scaling(sg, options.mode)

    verdicts = [r.verdict for r in results]
    print("\n" + ", ".join(f"{verdicts.count(v)} {v}" for v in ("PASS", "MISS", "SKIP", "WRONG")))
    print(summary())
    for r in results:
        if r.skipped:
            print(f"  {r.workload.name} skipped: {r.skipped}")
    if "WRONG" in verdicts:
        shout("some s2sgrad gradients disagree with the hand-written ones (see above)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
