"""A second, independent generator of random programs, nested the way people nest code.

``tests/test_random_programs.py`` builds programs from flat statement templates, each
defining a new name. This generator grows blocks inside blocks (branches beside and inside
loops, ``while`` with ``break``, ``continue``) whose statements OVERWRITE names that earlier
statements read, calls helpers that call helpers, appends to lists in loops, unpacks tuples
and writes into buffers: the shapes of code where a forward and a backward sweep can fall
out of step. Each program is checked in ``s2s``, ``tape`` and ``auto`` mode, on its first
and second call, against Richardson-extrapolated central differences.

Run it at scale from the repository root::

    python tests/program_fuzzer.py 2000        # programs; prints a summary and each failure
"""

from __future__ import annotations

import importlib.util
import random
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from oracle import richardson_gradients

HELPERS = """
def scale(a, b):
    return a * np.tanh(b) + 0.5 * a


def step(a, b, rate=0.5):
    h = a
    for _ in range(2):
        h = h + rate * scale(h, b)
    return h


def pair(a, b):
    return a * b, np.sin(a) + b


def settle(a, b):
    out = a * 1.0
    if np.sum(b) > 0.0:
        out = out * 0.5 + b
    return out
"""

UNARY = [
    "np.sin({a})",
    "np.tanh({a})",
    "{a} ** 2",
    "np.sqrt(1.0 + {a} ** 2)",
    "np.exp(np.tanh({a}))",
    "np.cos({a}) * 0.5",
    "np.log1p({a} ** 2)",
    "np.sum({a}) * 0.25 + {a}",
    "np.mean({a} * {a})",
]
BINARY = [
    "{a} + {b}",
    "{a} * {b}",
    "{a} - 0.5 * {b}",
    "{a} / (2.0 + np.tanh({b}))",
    "scale({a}, {b})",
    "step({a}, {b})",
    "step({a}, b={b}, rate=0.25)",
    "settle({a}, {b})",
    "np.where({b} > 0.0, {a}, {b} * 0.5)",
    "pair({a}, {b})[1]",
]


@dataclass
class _Writer:
    rng: random.Random
    names: list[str] = field(default_factory=lambda: ["x", "y"])
    counter: int = 0
    loop_depth: int = 0

    def operand(self) -> str:
        return self.rng.choice(self.names)

    def expression(self) -> str:
        if self.rng.random() < 0.5:
            return self.rng.choice(UNARY).format(a=self.operand())
        return self.rng.choice(BINARY).format(a=self.operand(), b=self.operand())

    def target(self) -> str:
        """An existing name to overwrite (never an argument), or a new one."""
        own = [n for n in self.names if n not in ("x", "y")]
        if own and self.rng.random() < 0.6:
            return self.rng.choice(own)
        self.counter += 1
        name = f"t{self.counter}"
        return name

    def block(self, depth: int, size: int) -> list[str]:
        lines: list[str] = []
        for _ in range(size):
            lines += self.statement(depth)
        return lines or ["pass"]

    def statement(self, depth: int) -> list[str]:
        kinds = ["assign", "assign", "assign", "rebind", "unpack", "append"]
        kinds += ["augment", "buffer"] if self.rng.random() < 0.2 else []
        if depth < 3:
            kinds += ["if", "if", "for", "for", "while"]
        if self.loop_depth:
            kinds += ["jump"]
        kind = self.rng.choice(kinds)
        return getattr(self, f"_{kind}")(depth)

    def _define(self, name: str) -> None:
        if name not in self.names:
            self.names.append(name)

    def _assign(self, depth):
        value = self.expression()
        name = self.target()
        self._define(name)
        return [f"{name} = {value}"]

    def _augment(self, depth):
        own = [n for n in self.names if n not in ("x", "y")]
        if not own:
            return self._assign(depth)
        op = self.rng.choice(["+=", "-=", "*="])
        return [f"{self.rng.choice(own)} {op} np.tanh({self.operand()})"]

    def _rebind(self, depth):
        own = [n for n in self.names if n not in ("x", "y")]
        if not own:
            return self._assign(depth)
        name = self.rng.choice(own)
        return [f"{name} = {name} * 0.5 + {self.expression()}"]

    def _unpack(self, depth):
        a, b = self.operand(), self.operand()
        first, second = self.target(), self.target()
        if first == second:
            return self._assign(depth)
        self._define(first)
        self._define(second)
        return [f"{first}, {second} = pair({a}, {b})"]

    def _buffer(self, depth):
        source = self.operand()
        name = self.target()
        lines = [
            f"{name} = np.zeros(3) + 0.0 * np.sum({source})",
            f"{name}[{self.rng.randrange(3)}] = np.sum(np.sin({self.operand()}))",
            f"{name}[1:] = {name}[1:] + np.tanh(np.mean({self.operand()}))",
            f"{name} = {name} + {source}",
        ]
        self._define(name)
        return lines

    def _append(self, depth):
        name = self.target()
        n = self.rng.randint(1, 3)
        source = self.operand()
        lines = [
            "parts = []",
            f"for j in range({n}):",
            f"    parts.append(np.sin({source}) * (j + 1.0))",
            f"{name} = sum(parts) + {self.operand()}",
        ]
        self._define(name)
        return lines

    def _if(self, depth):
        condition = self.rng.choice(
            [f"np.sum({self.operand()}) > 0.0", f"np.mean({self.operand()}) < 0.3"]
            + (["i % 2 == 0"] if self.loop_depth else [])
        )
        lines = [f"if {condition}:"]
        lines += _indent(self.block(depth + 1, self.rng.randint(1, 3)))
        if self.rng.random() < 0.7:
            lines += ["else:"] + _indent(self.block(depth + 1, self.rng.randint(1, 3)))
        return lines

    def _for(self, depth):
        n = self.rng.randint(0, 3)
        self.loop_depth += 1
        body = self.block(depth + 1, self.rng.randint(1, 3))
        self.loop_depth -= 1
        return [f"for i in range({n}):"] + _indent(body)

    def _while(self, depth):
        n = self.rng.randint(1, 3)
        # a counter per loop depth: a nested loop that reset its enclosing loop's counter
        # would never end
        k = f"k{self.loop_depth}" if self.loop_depth else "k"
        self.loop_depth += 1
        body = self.block(depth + 1, self.rng.randint(1, 2))
        self.loop_depth -= 1
        return [f"{k} = 0", f"while {k} < {n}:", f"    {k} += 1"] + _indent(body)

    def _jump(self, depth):
        word = self.rng.choice(["break", "continue"])
        return [
            f"if np.sum({self.operand()}) > {self.rng.choice(['0.5', '1.0', '-0.5'])}:",
            f"    {word}",
        ]


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def program(seed: int) -> str:
    """The source of a module defining ``f(x, y)``, drawn from ``seed``."""
    rng = random.Random(seed)
    writer = _Writer(rng)
    body = writer.block(0, rng.randint(3, 7))
    used = rng.sample(writer.names, k=min(len(writer.names), rng.randint(1, 3)))
    terms = " + ".join(f"np.sum(np.sin({n}) * {i + 1.0})" for i, n in enumerate(used))
    body.append(f"return {terms} + 0.01 * np.sum(x * y)")
    # every name is defined before the body, so branches that skip a definition stay legal
    prologue = ["i = 0"] + [f"{n} = x * 0.0" for n in writer.names if n not in ("x", "y")]
    lines = "\n".join(_indent(prologue + body))
    return f"import numpy as np\n{HELPERS}\n\ndef f(x, y):\n{lines}\n"


def _load(source: str, directory: Path, number: int):
    path = directory / f"fuzzed_program_{number}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), ())]


def check(seed: int, directory: Path, modes=("s2s", "tape", "auto")) -> dict[str, str]:
    """Outcome per mode: ok, refused, fallback (auto used the tape), skip, WRONG or CRASH."""
    import s2sgrad as sg

    source = program(seed)
    f = _load(source, directory, seed)
    rng = np.random.default_rng(seed)
    x_shape, y_shape = SHAPES[seed % len(SHAPES)]
    x = rng.uniform(-1.2, 1.2, size=x_shape)
    y = rng.uniform(-1.2, 1.2, size=y_shape)
    with np.errstate(all="ignore"):
        value = f(x, y)
        if not np.isfinite(value):
            return {"all": "skip"}
        expected = richardson_gradients(f, x, y)
    if any(np.any(np.abs(want) > 1e4) for want, _ in expected):
        return {"all": "skip"}
    outcomes = {}
    for mode in modes:
        outcomes[mode] = _outcome(sg, f, x, y, mode, expected, source)
    return outcomes


def _outcome(sg, f, x, y, mode, expected, source) -> str:
    x_before, y_before = x.copy(), y.copy()
    fell_back = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            transformed = sg.grad(f, wrt=(0, 1), mode=mode)
            results = [transformed(x, y), transformed(x, y)]
        fell_back = any("tape instead" in str(w.message) for w in caught)
    except (sg.S2SGradError, TypeError) as error:
        if isinstance(error, TypeError) and "mode='s2s'" not in str(error):
            return "CRASH " + traceback.format_exc(limit=-3)
        if "fuzzed_program_" not in str(error):
            return f"CRASH unlocated refusal: {error}"
        return "refused"
    except Exception:  # noqa: BLE001 - any other exception is a bug to report
        return "CRASH " + traceback.format_exc(limit=-3)
    if not (np.array_equal(x, x_before) and np.array_equal(y, y_before)):
        return "WRONG: changed its inputs"
    for call, gradients in zip(("first", "second"), results):
        for got, (want, error), name in zip(gradients, expected, "xy"):
            tolerance = 1e-6 + 1e-6 * np.abs(want) + 10 * error
            if np.shape(got) != np.shape(want) or not np.all(np.abs(got - want) <= tolerance):
                return f"WRONG {call} call d{name}: {got} vs {want}"
    return "fallback" if fell_back else "ok"


def main(count: int, start: int = 0) -> int:
    tally: dict[str, int] = {}
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        sys.path.insert(0, folder)
        for seed in range(start, start + count):
            for mode, outcome in check(seed, Path(folder)).items():
                key = f"{mode}:{outcome.split()[0].rstrip(':')}"
                tally[key] = tally.get(key, 0) + 1
                if outcome.startswith(("WRONG", "CRASH")):
                    failures.append((seed, mode, outcome))
                    print(f"--- seed {seed} mode {mode}: {outcome}\n{program(seed)}", flush=True)
    print(dict(sorted(tally.items())))
    return 1 if failures else 0


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    start = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    sys.exit(main(count, start))
