"""Random programs of jumps: ``return``, ``break`` and ``continue`` nested in ``if``, ``for``,
``while``, ``with`` and ``try``/``finally`` blocks, up to three deep, around a number ``s``
and an array ``v`` that every block updates from the arguments, so that which way a
program leaves a block decides its derivative.

Each program is checked like ``program_families.py`` checks its own (``s2s``, ``tape`` and
``auto``, first and second call, ``jvp`` and ``hvp``, the arguments unchanged, against
Richardson-extrapolated differences); run it at scale from ``tests/``::

    python program_jumps.py 200 0 results.jsonl   # count, first seed, log
    python program_jumps.py --table results.jsonl

``jump_program(seed)`` gives the family and the source; the seed chooses the family
(``seed % len(FAMILIES)``) and everything else.
"""

from __future__ import annotations

import random
import sys

import program_families

HELPERS = """
import contextlib

import numpy as np


class Scope:
    \"\"\"A context manager of the user's that computes nothing.\"\"\"

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        return False
"""

_CONTEXTS = ("np.errstate(all='ignore')", "contextlib.nullcontext()", "Scope()")
_STEPS = (
    "s = s + x[{i}] * {k}",
    "s = s * {k2} + np.sin(x[{i}])",
    "s = s + x[{i}] ** 2",
    "v = v * np.cos(x[{i}]) + y",
    "s = s + np.sum(v * y) * {k}",
    "v = np.tanh(v + s * {k})",
)


class _Writer:
    """Draws the blocks of one program; ``jumps`` says which jumps a family allows."""

    def __init__(self, rng: random.Random, kinds: tuple[str, ...], depth: int):
        self.rng = rng
        self.kinds = kinds
        self.depth = depth
        self.count = 0

    def pick(self, items):
        return self.rng.choice(list(items))

    def number(self) -> int:
        self.count += 1
        return self.count

    def step(self) -> str:
        return self.pick(_STEPS).format(
            i=self.rng.randint(0, 3), k=self.pick([1.5, -0.5, 0.75]), k2=self.pick([0.9, 1.1])
        )

    def test(self) -> str:
        i = self.rng.randint(0, 3)
        return self.pick(
            [
                f"x[{i}] {self.pick(['>', '<'])} {self.pick([0.0, 0.35, -0.5])}",
                f"s {self.pick(['>', '<'])} {self.pick([0.2, -0.3, 1.0])}",
                f"np.sum(v) < {self.pick([0.0, 1.5])}",
            ]
        )

    def leave(self) -> str:
        c = self.number()
        return f"return s * {self.pick([2.0, -1.0, 0.5])} + np.sum(v ** 2) * 0.{c % 9 + 1}"

    def block(self, level: int, in_loop: bool) -> list[str]:
        """One to three statements; a jump ends the block it is in."""
        lines: list[str] = []
        for _ in range(self.rng.randint(1, 3)):
            kinds = self.kinds if level < self.depth else ("step", "return", "jump")
            kind = self.pick(kinds)
            if kind == "step":
                lines.append(self.step())
            elif kind == "return":
                return [*lines, self.step(), self.leave()]
            elif kind == "jump":
                if in_loop:
                    return [*lines, self.step(), self.pick(["break", "continue"])]
                lines.append(self.step())
            else:
                lines += self.compound(kind, level, in_loop)
        return lines or [self.step()]

    def compound(self, kind: str, level: int, in_loop: bool) -> list[str]:
        inner = level + 1
        if kind == "if":
            lines = [f"if {self.test()}:", *_indented(self.block(inner, in_loop))]
            if self.rng.random() < 0.5:
                lines += ["else:", *_indented(self.block(inner, in_loop))]
            return lines
        if kind == "for":
            i = f"i{self.number()}"
            header = self.pick(
                [
                    f"for {i} in range({self.rng.randint(1, 3)}):",
                    f"for {i}, yk in enumerate(y):",
                    f"for {i} in reversed(range({self.rng.randint(1, 3)})):",
                ]
            )
            first = f"s = s + x[{i}] * " + ("yk" if "yk" in header else "0.5")
            body = [first, *self.block(inner, True)]
            if self.rng.random() < 0.25:  # a loop's else: run when no break left it
                return [header, *_indented(body), "else:", *_indented([self.step()])]
            return [header, *_indented(body)]
        if kind == "while":
            w = f"w{self.number()}"
            limit = self.rng.randint(1, 3)
            test = self.pick([f"{w} < {limit}", f"{w} < {limit} and s < 4.0"])
            body = [f"{w} = {w} + 1", f"s = s + x[{w}] * 0.25", *self.block(inner, True)]
            return [f"{w} = 0", f"while {test}:", *_indented(body)]
        if kind == "with":
            return [f"with {self.pick(_CONTEXTS)}:", *_indented(self.block(inner, in_loop))]
        # try/finally: the finally block runs on every way out, a return's too
        body = self.block(inner, in_loop)
        return ["try:", *_indented(body), "finally:", *_indented(["s = s + x[0] * 0.125"])]


def _indented(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


# each family: the blocks it draws and how deep they nest
FAMILIES = {
    "return in if": (("step", "if", "if", "return"), 3),
    "break/continue in for": (("step", "for", "if", "jump"), 3),
    "jumps in while": (("step", "while", "if", "jump", "return"), 3),
    "jumps in with": (("step", "with", "for", "if", "jump", "return"), 3),
    "return through finally": (("step", "try", "for", "if", "jump", "return"), 2),
    "every block": (("step", "if", "for", "while", "with", "try", "jump", "return"), 3),
}
NAMES = list(FAMILIES)


def jump_program(seed: int) -> tuple[str, str, tuple]:
    """``(family, source of a module defining f(x, y), (x shape, y shape))``."""
    family = NAMES[seed % len(NAMES)]
    kinds, depth = FAMILIES[family]
    w = _Writer(random.Random(seed), kinds, depth)
    lines = ["s = x[0] * 0.1", "v = y * 0.5"]
    compounds = [k for k in kinds if k not in ("step", "return", "jump")]
    for _ in range(w.rng.randint(2, 3)):  # blocks in a row, each holding jumps
        lines += [*w.compound(w.pick(compounds), 1, False), w.step()]
    tail = w.pick(["s + np.sum(np.sin(v)) + x[3]", "s * x[1] + np.sum(v * y)"])
    body = "\n".join("    " + line for line in lines)
    source = f"{HELPERS}\n\ndef f(x, y):\n{body}\n    return {tail}\n"
    return family, source, ((4,), (3,))


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        print(program_families.table(sys.argv[2:], NAMES))
        sys.exit(0)
    sys.exit(program_families.main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], jump_program))
