"""A third generator of random programs: Python and NumPy constructs the other two do not
draw (closures and small classes, comprehensions and builtins over lists of arrays,
``np.r_`` and concatenation, writes through repeated indices with NumPy's own semantics,
sorting and running reductions, ``try``/``finally`` and early exits, dicts of parameters,
complex intermediates, matrices built from vectors, buffers updated through slices, names
reused for other values, and small objects holding parameters). Several constructs are
chained in one function, each reading what the ones before it made, so that a construct's
derivative is checked inside others, not alone.

Each program is checked like ``program_families.py`` checks its own (``s2s``, ``tape`` and
``auto``, first and second call, ``jvp`` and ``hvp``, against Richardson-extrapolated
differences); run it at scale from the repository root::

    python tests/program_constructs.py 500 0 results.jsonl   # count, first seed, log
    python tests/program_constructs.py --table results.jsonl
"""

from __future__ import annotations

import random
import sys

import program_families
from program_families import SMOOTH

HELPERS = """
import functools
import itertools
from dataclasses import dataclass

import numpy as np

GAIN = 0.8


class Affine:
    def __init__(self, w, shift=0.1):
        self.w = w
        self.shift = shift

    def __call__(self, v):
        return v * self.w + self.shift

    def scaled(self, k):
        return Affine(self.w * k, self.shift)


@dataclass
class Pair:
    first: object
    second: object

    def mix(self, t):
        return self.first * t + self.second * (1.0 - t)


def power(v, n):
    return v if n <= 1 else v * power(v, n - 1)


def running(values):
    total = values[0] * 0.0
    for v in values:
        total = total * 0.5 + v
        yield total
"""


class _Writer:
    """One program's random choices; ``fresh()`` names a new variable, ``value()`` picks a
    smooth function of an array already defined (all of shape (3,))."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.arrays = ["x", "y"]
        self.count = 0

    def pick(self, options):
        return self.rng.choice(options)

    def value(self) -> str:
        name = self.pick(self.arrays[-3:] + ["x", "y"])
        return self.pick(SMOOTH).format(a=name) if self.rng.random() < 0.5 else name

    def fresh(self) -> str:
        self.count += 1
        name = f"v{self.count}"
        self.arrays.append(name)
        return name


def _closures(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            ["def inner(u):", f"    return u * {a} + np.sin(u)", f"{n} = inner({b})"],
            [f"scale = lambda u, c={a}: u * c", f"{n} = scale({b}) + scale({b}, c=0.5)"],
            [f"m = Affine({a})", f"{n} = m({b}) + m.scaled(2.0)({b}) * 0.25"],
            [f"p = Pair({a}, {b})", f"{n} = p.mix(0.3) + p.first * p.second"],
            [f"{n} = power({a}, 3) * 0.2 + {b}"],
            [
                f"k = {a}",
                "def bump(u):",
                "    return u + k * 0.5",
                f"k = {b} * 2.0",
                f"{n} = bump({a})",
            ],
            [f"{n} = functools.partial(np.multiply, {a})({b})"],
        ]
    )


def _builtins(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            [f"{n} = np.array([u * v for u, v in zip({a}, {b}) if True])"],
            [f"{n} = sum([u * {b} for u in {a}], start={b} * 0.0)"],
            [f"{n} = {a} * max([np.sum({b}), 0.5 * np.sum({a}), -1.0])"],
            [f"{n} = np.array(sorted({a}, key=lambda u: -u)) * {b}"],
            [f"{n} = functools.reduce(lambda s, u: s * 0.5 + u, [{a}, {b}, {a} * {b}])"],
            [f"{n} = np.array(list(itertools.accumulate({a}))) + {b}"],
            [f"{n} = np.stack(list(running([{a}, {b}, {a} - {b}])))[-1]"],
            [
                f"{n} = {b} * 0.0",
                f"for i, u in enumerate(reversed(list({a})), start=1):",
                f"    {n} = {n} + u * i * {b}",
            ],
            [f"{n} = np.array([min(u, v) + max(u, v) ** 2 for u, v in zip({a}, {b})])"],
            [f"{n} = np.array([*({a}[:1] * 2.0), *{b}[1:]])"],
        ]
    )


def _joins(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            [f"{n} = np.r_[{a}[:2], {b}[2:]]"],
            [f"{n} = np.r_[{a}, {b}][1:4]"],
            [f"{n} = np.r_[np.sum({a}), {b}[1:]]"],
            [f"{n} = np.concatenate([{a}[1:], {b}[:1]]) * {a}"],
            [f"p, q = np.split(np.r_[{a}, {b}], 2)", f"{n} = p * q"],
            [f"{n} = np.hstack(({a}[::2], {b}[1:2]))"],
            [f"{n} = np.append({a}[:2], np.sum({b}))"],
            [f"{n} = np.c_[{a}, {b}] @ np.array([0.5, -1.0])"],
            [f"{n} = np.array([{a}[0], np.sum({b}), {a}[2] * {b}[1]])"],
        ]
    )


def _repeated_indices(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            [f"{n} = {a} * 1.0", f"{n}[[0, 0, 2]] += {b}"],  # NumPy adds once per element
            [f"{n} = {a} * 1.0", f"np.add.at({n}, [0, 0, 2], {b})"],
            [f"{n} = np.zeros(3)", f"{n}[[1, 1, 0]] = {b}"],  # the last write wins
            [f"{n} = {a} * 1.0", f"{n}[np.array([2, 2])] *= {b}[:2]"],
            [f"{n} = {a} * 1.0", f"{n}[{b} > 0.0] = {b}[{b} > 0.0] ** 2"],
            [f"{n} = {a}[[0, 0, 1]] * {b}[[2, 1, 1]]"],
            [f"{n} = np.bincount([0, 2, 0], weights={a}, minlength=3) + {b}"],
        ]
    )


def _orderings(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            [f"{n} = np.sort({a}) * {b}"],
            [f"{n} = {a}[np.argsort({b})] + {b}"],
            [f"{n} = np.cumprod(0.5 + {a} ** 2) * {b}"],
            [f"{n} = np.cumsum({a}[::-1])[::-1] * {b}"],
            [f"{n} = np.maximum.accumulate({a}) + {b}"],
            [f"{n} = np.diff({a}, prepend=0.0) * {b}"],
            [f"{n} = np.max({a}) * {b} + np.min({b})"],
            [f"{n} = np.clip({a}, -0.5, 0.5) * {b}"],
            [f"{n} = np.where({a} > {b}, {a}, {b}) ** 2"],
        ]
    )


def _exits(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            [
                "try:",
                f"    {n} = np.log(1.0 + {a} ** 2)",
                "except ValueError:",
                f"    {n} = {a}",
                "finally:",
                f"    {n} = {n} * {b}",
            ],
            [
                f"{n} = {a} * 1.0",
                "for i in range(4):",
                f"    if np.sum({n}) > 3.0:",
                "        break",
                f"    {n} = {n} * 0.9 + {b}",
            ],
            [
                f"{n} = {a} * 1.0",
                "k = 0",
                "while k < 3:",
                f"    {n} = np.sin({n}) + {b}",
                "    k += 1",
                "else:",
                f"    {n} = {n} * 2.0",
            ],
            [f"{n} = {a} if np.sum({b}) > 0.0 else -{a}"],
            [f"if (s := np.sum({a})) > 0.0:", f"    {n} = {b} * s", "else:", f"    {n} = {b} - s"],
            [f"assert {a}.shape == {b}.shape", f"{n} = {a} * {b}"],
            [f"{n}, rest = {a}, {b}", f"{n}, rest = rest * 0.5, {n}", f"{n} = {n} + rest"],
        ]
    )


def _parameters(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            [
                f"params = {{'w': {a}, 'b': {b}}}",
                "params['w'] = params['w'] * GAIN",
                f"{n} = params['w'] * params['b']",
            ],
            [
                f"params = {{'w': {a}, 'b': {b}}}",
                f"{n} = {b} * 0.0",
                "for key, value in params.items():",
                f"    {n} = {n} + value * len(key)",
            ],
            [
                f"layers = [({a}, 0.5), ({b}, -0.25)]",
                f"{n} = x * 1.0",
                "for scale, shift in layers:",
                f"    {n} = np.tanh({n} * scale + shift)",
            ],
            [
                f"layers = [({a}, 0.5), ({b}, -0.25), (x, 0.1)]",
                f"{n} = y * 1.0",
                "for scale, shift in layers[:-1]:",
                f"    {n} = {n} * scale + shift",
                f"{n} = {n} * layers[-1][0]",
            ],
            [
                f"nest = {{'a': [{a}, ({b}, 2.0)]}}",
                "(u, (v, c)) = nest['a'][0], nest['a'][1]",
                f"{n} = u * v * c",
            ],
        ]
    )


def _complex(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            [f"z = {a} + 1j * {b}", f"{n} = np.abs(z) ** 2"],
            [f"z = np.exp(1j * {a}) * {b}", f"{n} = z.real + 0.5 * z.imag"],
            [f"z = {a} + 1j * {b}", f"{n} = np.real(z * np.conj(z)) + np.angle(z + 2.0)"],
            [f"{n} = np.fft.ifft(np.fft.fft({a}) * np.fft.fft({b})).real"],
            [f"{n} = np.abs(np.fft.rfft({a}))[:2].sum() + {b}"],
        ]
    )


def _matrices(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            [f"m = np.outer({a}, {b}) + np.eye(3) * 2.0", f"{n} = np.linalg.solve(m, {a})"],
            [f"{n} = np.einsum('i,j,j->i', {a}, {b}, {a})"],
            [f"{n} = (({a}[:, None] * {b}[None, :]).sum(axis=0, keepdims=True))[0]"],
            [f"m = np.diag({a}) + np.tril(np.outer({b}, {b}), -1)", f"{n} = m @ {b}"],
            [f"{n} = np.kron({a}[:1], {b}) + np.trace(np.outer({a}, {b}))"],
            [
                f"m = np.outer({a}, {b})",
                f"{n} = (m / (1.0 + m.sum(axis=0, keepdims=True) ** 2)).sum(1)",
            ],
        ]
    )


def _buffers(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            [
                "u = np.zeros(5)",
                f"u[1:4] = {a}",
                "for _ in range(2):",
                "    u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2.0 * u[1:-1] + u[:-2])",
                f"{n} = u[1:4] * {b}",
            ],
            [
                f"u = {a} * 1.0",
                "for _ in range(2):",
                "    u = u + 0.1 * (np.roll(u, 1) - u)",
                f"{n} = u * {b}",
            ],
            [f"{n} = {a} * 1.0", f"{n}[1:] += {n}[:-1] * {b}[1:]"],  # reads the old left part
            [f"{n} = {a} * 1.0", f"{n}[::-1] = {n} * {b}"],  # the right side is read first
            [
                "grid = np.zeros((2, 3))",
                f"grid[0] = {a}",
                f"grid[1, :] = {b} * grid[0]",
                f"{n} = grid.sum(axis=0)",
            ],
            [f"{n} = np.empty(3)", "for i in range(3):", f"    {n}[i] = {a}[i] * {b}[(i + 1) % 3]"],
        ]
    )


def _reused_names(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            [
                f"k = np.sum({a})",
                f"{n} = {b} * k",
                "for k in range(2):",
                f"    {n} = {n} * 0.5 + {a} * k",
            ],
            [
                f"{n} = {b} * 1.0",
                "for item in {a}:".replace("{a}", a),
                f"    {n} = {n} * 0.9 + item",
                f"{n} = {n} * item",
            ],
            [f"t = {a}", f"t = t * {b}", "t = np.sin(t) + t", f"{n} = t"],
            [
                f"{n} = {a} * 1.0",
                "for i in range(3):",
                f"    {n} = {n} + {b} * i",
                f"{n} = {n} * (i + 1)",
            ],
            [
                f"pair = ({a}, {b})",
                "first, second = pair",
                "second, first = first, second * 2.0",
                f"{n} = first * second",
            ],
        ]
    )


def _objects(w: _Writer) -> list[str]:
    a, b, n = w.value(), w.value(), w.fresh()
    return w.pick(
        [
            [f"layer = Affine({a}, 0.2)", f"{n} = layer({b})"],
            ["layer = Affine(0.5)", f"layer.w = {a}", f"{n} = layer({b})"],
            [f"p = Pair({a}, {b})", "p.first = p.first * 2.0", f"{n} = p.mix(0.25)"],
            [
                f"models = [Affine({a}), Affine({b}, 0.0)]",
                f"{n} = {b} * 1.0",
                "for m in models:",
                f"    {n} = np.tanh(m({n}))",
            ],
        ]
    )


CONSTRUCTS = {
    "closures and classes": _closures,
    "comprehensions and builtins": _builtins,
    "r_ and concatenation": _joins,
    "repeated indices": _repeated_indices,
    "sorting and running reductions": _orderings,
    "try, loops with exits": _exits,
    "parameter dicts and lists": _parameters,
    "complex intermediates": _complex,
    "matrices from vectors": _matrices,
    "buffers and stencils": _buffers,
    "reused names": _reused_names,
    "objects with attributes": _objects,
}
NAMES = list(CONSTRUCTS)


def construct_program(seed: int) -> tuple[str, str, tuple]:
    """``(family, source of a module defining f(x, y), (x shape, y shape))``: the family's
    construct first, then one to three others drawn from every family."""
    family = NAMES[seed % len(NAMES)]
    w = _Writer(random.Random(seed))
    lines = CONSTRUCTS[family](w)
    for _ in range(w.rng.randint(1, 3)):
        lines += CONSTRUCTS[w.pick(NAMES)](w)
    result = w.arrays[-1]
    tail = w.pick(["np.sum(np.sin({r}))", "np.sum({r} ** 2) * 0.5", "np.sum(np.tanh({r}) * x)"])
    body = "\n".join("    " + line for line in lines)
    source = f"{HELPERS}\n\ndef f(x, y):\n{body}\n    return {tail.format(r=result)}\n"
    return family, source, ((3,), (3,))


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        print(program_families.table(sys.argv[2:], NAMES))
        sys.exit(0)
    sys.exit(
        program_families.main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], construct_program)
    )
