"""Random programs by family: the patterns issue 12 §5 and issues 19/20 name, each drawn with
random operands, operations, axes and indices, and checked in ``s2s``, ``tape`` and
``auto`` on the first and second call, plus ``jvp`` (forward mode) and ``hvp``, against
Richardson-extrapolated differences (tests/oracle.py).

Each check ends as one of: ``right``, ``fallback`` (``auto`` used the tape, and was right),
``refused`` (an S2SGradError whose message names the program's file and line),
``unclear`` (a refusal that does not), ``CRASH`` (any other exception) or ``WRONG``.

Run it at scale from the repository root (one process per ~500 programs, so that nothing
kept between transformations hides a bug)::

    python tests/program_families.py 500 0 results.jsonl   # count, first seed, log
    python tests/program_families.py --table results.jsonl  # the per-family table

``family_program(seed)`` gives the family and the source; the seed chooses the family
(``seed % len(FAMILIES)``) and everything else.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import signal
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

import numpy as np
from oracle import directional_derivative, richardson, richardson_gradients
from program_fuzzer import HELPERS, program

MORE_HELPERS = """
from functools import partial

W = np.linspace(-0.5, 0.5, 3)
S = 0.7


def affine(a, w=1.0, *, shift=0.25):
    return a * w + shift


def stats(a):
    return np.mean(a), a.shape, "stats", np.sum


def squash(a, b):
    return np.tanh(a) * b


def halve(a):
    a[:] *= 0.5


def smooth_max(a):
    return np.log(np.sum(np.exp(a)))


def scaled_by(w):
    return lambda v: v * w


def flat_pair(p):
    def unflat(v):
        return v.reshape(p.shape)

    return p.ravel(), unflat


def items_of(a, scale=1.0):
    for i in range(len(a)):
        yield a[i] * scale
"""

SMOOTH = [
    "np.sin({a})",
    "np.tanh({a})",
    "({a} ** 2)",
    "np.exp(np.tanh({a}))",
    "(np.cos({a}) * 0.5)",
    "np.sqrt(1.0 + {a} ** 2)",
    "({a} * 1.5)",
    "np.log1p({a} ** 2)",
]


class _Draw:
    """Random choices for one program."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def pick(self, options):
        return self.rng.choice(options)

    def smooth(self, operand: str) -> str:
        return self.pick(SMOOTH).format(a=operand)

    def operand(self) -> str:
        return self.smooth(self.pick(["x", "y"])) if self.rng.random() < 0.6 else "x"


def _linalg(d: _Draw):
    matrix = d.pick(
        [
            "m = np.eye(3) * 3.0 + 0.4 * {u}",
            "m = {u} @ {u2}.T * 0.2 + np.eye(3) * 2.0",
        ]
    )
    spd = "a = m @ m.T + np.eye(3)"
    op = d.pick(
        [
            "r = np.linalg.inv(m) @ y",
            "r = np.linalg.det(m) * y",
            "r = np.linalg.slogdet(m)[1] * y",
            "r = np.linalg.cholesky(a)[:, 0] * y",
            "r = np.linalg.eigh(a)[0] * y",
            "r = np.linalg.eigh(a)[1][:, -1] ** 2 * y",
            "r = np.linalg.solve(m, y)",
            "r = np.linalg.solve(a, {v})",
            "r = np.abs(np.diag(np.linalg.qr(m)[1])) * y",
            "r = np.linalg.svd(m, compute_uv=False) * y",
            "r = np.linalg.norm(m, axis=0) * y",
            "r = np.trace(np.linalg.inv(a)) + y",
        ]
    )
    u, u2 = d.smooth("x"), d.smooth("x")
    lines = [matrix.format(u=u, u2=u2), spd, op.format(v=d.smooth("y"))]
    return lines, "r", ((3, 3), (3,))


def _axes(d: _Draw):
    reduce = d.pick(
        ["np.sum", "np.mean", "np.prod", "np.max", "np.min", "np.std", "np.var", "np.cumsum"]
    )
    axis = d.pick(["0", "1", "-1", "(0, 1)", "None"])
    if reduce == "np.cumsum" and axis in ("(0, 1)", "None"):
        axis = "0"
    keep = d.pick(["", ", keepdims=True"]) if reduce != "np.cumsum" else ""
    a = d.smooth("x") if d.rng.random() < 0.7 else "x * y"
    lines = [f"t = {a} + 0.1 * y", f"r = {reduce}(t, axis={axis}{keep})"]
    if d.rng.random() < 0.5:
        lines.append(f"r = r * {d.smooth('np.sum(y)')}")
    return lines, "r", ((2, 3), (3,))


def _fancy(d: _Draw):
    op = d.pick(
        [
            "r = t[[0, 0, 1]] * y",
            "r = t[np.array([1, -2, 1])] * y",
            "r = t[[0, 1, 1], [2, 2, 0]] * y",
            "r = np.sum(t[t > 0.1]) + y",
            "r = t[:, [2, 0, 2]] * y",
            "r = t[1, [0, 0, 2]] * y",
            "r = t[[1, 0]][:, [1, 1, 2]] * y",
            "r = t.ravel()[[5, 0, 5]] * y",
            "r = np.sum(t[:, y > 0.0]) + y",
        ]
    )
    return [f"t = {d.smooth('x')} + 0.0", op], "r", ((2, 3), (3,))


def _take_along(d: _Draw):
    index = d.pick(
        [
            "idx = np.argsort(t, axis=1)",
            "idx = np.argmax(t, axis=1, keepdims=True)",
            "idx = np.array([[0, 0, 2], [1, 1, 1]])",
            "idx = np.argsort(-t, axis=0)",
        ]
    )
    axis = "0" if "axis=0" in index else "1"
    lines = [
        f"t = {d.smooth('x')} * 1.0",
        index,
        f"r = np.take_along_axis(t, idx, axis={axis}) * y",
    ]
    return lines, "r", ((2, 3), (3,))


def _writes(d: _Draw):
    make = d.pick(["t = x * 1.0", "t = np.zeros_like(x)", "t = x.copy()", "t = np.ones(3) * y"])
    writes = [
        "t[1:] = {e}[1:]",
        "t[0] = np.sum({e})",
        "t[[0, 0]] += {e}[:2]",
        "t[[0, 2, 0]] = {e}",
        "t[t > 0.2] = 0.5 * {e}[t > 0.2]",
        "t[::2] *= {e}[::2]",
        "t[-1] -= {e}[0]",
        "t[np.array([2, 2])] = {e}[:2]",
    ]
    lines = [make]
    for _ in range(d.rng.randint(1, 3)):
        lines.append(d.pick(writes).format(e=d.smooth(d.pick(["x", "y"]))))
    lines.append("r = t * y")
    if d.rng.random() < 0.5:  # drawn last: the draws above stay what they were
        lines += _scientific_writes(d)
    return lines, "r", ((3,), (3,))


def _scientific_writes(d: _Draw) -> list[str]:
    """What simulations write: a buffer swap (``u, un = un, u``), unpacking an array or an
    argument, and writes into the result of a NumPy call."""
    e = d.smooth(d.pick(["x", "y"]))
    return d.pick(
        [
            [
                "u = r * 1.0",
                "un = np.zeros(3)",
                "for _ in range(2):",
                f"    un[1:] = u[1:] * 0.5 + u[:-1] * {e}[1:]",
                "    un[0] = u[0]",
                "    u, un = un, u",
                "r = r + u",
            ],
            [f"a0, a1, a2 = {e}", "r = r * a0 + a1 * a2"],
            ["p0, p1, p2 = x", "r = r + p0 * p1 - p2 * y"],
            [f"k = np.exp({e})", "k[1] = 0.0", "r = r + k"],
            [f"k = np.cumsum({e})", "k[0] += 1.0", "r = r * k"],
        ]
    )


def _views(d: _Draw):
    view, write = d.pick(
        [
            ("a, b = np.split(t, [2])", "a[0] = np.sum({e})"),
            ("v = np.einsum('ij->ji', t)", "v[0] = {e}[:2]"),
            ("v = t.reshape(-1)", "v[1:3] = {e}[:2]"),
            ("v = t.T", "v[1] += {e}[:2]"),
            ("v = t[0]", "v[:] = {e}"),
            ("v = t[:, 1:]", "v *= 0.5"),
            ("a, b = np.hsplit(t, [1])", "b[:, 0] = {e}[:2]"),
            ("v = np.ravel(t)", "v[0] = np.sum({e})"),
        ]
    )
    lines = [
        f"t = {d.smooth('x')} * 1.0",
        view,
        write.format(e=d.smooth("y")),
        "r = t[0] * y + t[1]",
    ]
    return lines, "r", ((2, 3), (3,))


def _out_writes(d: _Draw):
    write = d.pick(
        [
            "np.sin({e}, out=t)",
            "np.multiply({e}, 2.0, out=t)",
            "np.copyto(t, {e})",
            "np.add.at(t, [0, 0, 2], {e})",
            "np.subtract.at(t, [1, 1], {e}[:2])",
            "np.put(t, [0, 2], {e}[:2])",
            "t.fill(np.sum({e}))",
            "np.clip({e}, -0.5, 0.5, out=t)",
            "np.putmask(t, t > 0.0, {e})",
            "t.sort()",
            "np.negative(t, out=t)",
            "np.exp({e}, t)",
        ]
    )
    lines = [
        d.pick(["t = x * 1.0", "t = np.zeros(3)", "t = np.empty_like(x)"]),
        write.format(e=d.smooth(d.pick(["x", "y"]))),
        "r = t * y",
    ]
    if "empty_like" in lines[0] and write in ("t.sort()", "np.negative(t, out=t)"):
        lines[0] = "t = x * 1.0"
    if "empty_like" in lines[0] and any(w in write for w in (".at(", "put", "putmask")):
        lines[0] = "t = x * 1.0"
    return lines, "r", ((3,), (3,))


def _rows(d: _Draw):
    lines = d.pick(
        [
            [
                "rows = []",
                "for row in x:",
                "    rows.append({s} * y)",
                "r = np.stack(rows)",
            ],
            ["r = np.stack([{s} + y for row in x], axis=1)"],
            [
                "rows = []",
                "for i in range(x.shape[0]):",
                "    row = x[i]",
                "    rows.append({s})",
                "r = np.stack(rows[::-1]) * y",
            ],
            [
                "rows = [x[0] * y]",
                "for row in x[1:]:",
                "    rows.append(rows[-1] * 0.5 + {s})",
                "r = np.vstack(rows)",
            ],
        ]
    )
    return [line.format(s=d.smooth("row")) for line in lines], "r", ((2, 3), (3,))


def _pop(d: _Draw):
    first = d.pick(["items = [x * 1.0, {s}, y * 2.0]", "items = [{s}, x, y * x]"])
    pops = d.pick(
        [
            ["v = items.pop()", "w = items.pop(0)", "r = v * w + items[0]"],
            ["v = items.pop(1)", "r = v + items[0] * items[-1]"],
            [
                "r = x * 0.0",
                "while items:",
                "    r = r * 0.5 + items.pop()",
            ],
        ]
    )
    return [first.format(s=d.smooth("y"))] + pops, "r", ((3,), (3,))


def _softmax(d: _Draw):
    axis = d.pick(["-1", "0"])
    lines = d.pick(
        [
            [
                "z = {s} * 2.0",
                f"z = z - np.max(z, axis={axis}, keepdims=True)",
                "e = np.exp(z)",
                f"r = e / np.sum(e, axis={axis}, keepdims=True)",
                "r = r * y",
            ],
            [
                "z = {s} + y",
                f"r = z - np.log(np.sum(np.exp(z), axis={axis}, keepdims=True))",
            ],
            [
                "z = {s}",
                "p = np.exp(z) / np.sum(np.exp(z))",
                "r = -np.sum(np.tanh(y) ** 2 * np.log(p + 1e-3))",
            ],
        ]
    )
    return [line.format(s=d.smooth("x")) for line in lines], "r", ((2, 3), (3,))


def _while(d: _Draw):
    lines = d.pick(
        [
            [
                "r = {s} * 1.0",
                "k = 0",
                "while np.sum(r ** 2) < 40.0 and k < 6:",
                "    r = r * 1.5 + y",
                "    k += 1",
            ],
            [
                "r = x * 1.0",
                "k = 0",
                "while True:",
                "    r = np.sin(r) + {s}",
                "    k += 1",
                "    if k >= 3:",
                "        break",
            ],
            [
                "r = x * 0.5",
                "k = 0",
                "while k < 4:",
                "    k += 1",
                "    if k % 2 == 0:",
                "        continue",
                "    r = r * y + {s}",
            ],
        ]
    )
    return [line.format(s=d.smooth(d.pick(["x", "y"]))) for line in lines], "r", ((3,), (3,))


def _keywords(d: _Draw):
    call = d.pick(
        [
            "r = affine({e}, w=y)",
            "r = affine(a={e}, shift=np.sum(y))",
            "r = affine({e}, y, shift=0.5)",
            "r = step({e}, b=y, rate=0.3)",
            "r = step(a={e}, b=y)",
            "r = squash(b=y, a={e})",
        ]
    )
    return [call.format(e=d.smooth("x"))], "r", ((3,), (3,))


def _second_order(d: _Draw):
    lines, name, shapes = _keywords(d)
    extra = d.pick(["r = scale(r, y)", "r = pair(r, y)[0]", "r = settle(r, x)"])
    return [*lines, extra], name, shapes


def _globals(d: _Draw):
    line = d.pick(
        [
            "r = {e} * W + S",
            "r = np.tanh({e} @ W) * y * S",
            "r = affine({e}, w=W) * S",
            "r = {e} * S ** 2 + W * y",
        ]
    )
    return [line.format(e=d.smooth("x"))], "r", ((3,), (3,))


def _dicts(d: _Draw):
    loop = d.pick(
        [
            ["for k in p:", "    r = r + np.sin(p[k]) * y"],
            ["for k in sorted(p):", "    r = r * 0.5 + p[k]"],
            ["for k, v in p.items():", "    r = r + v * len(k)"],
            ["for v in p.values():", "    r = np.tanh(r + v)"],
            ["for k in list(p.keys())[::-1]:", "    r = r * p[k]"],
        ]
    )
    lines = ["p = {{'w': {a}, 'b': y * 0.5, 'c': {b}}}", "r = x * 0.0", *loop]
    lines = [line.format(a=d.smooth("x"), b=d.smooth("y")) for line in lines]
    if d.rng.random() < 0.5:  # drawn last: the draws above stay what they were
        lines += _dict_slots(d)
    return lines, "r", ((3,), (3,))


def _dict_slots(d: _Draw) -> list[str]:
    """A dict used as named slots (``cache["z"] = ...``), written in order, in a loop and in
    a branch, with augmented updates; read back into ``r``."""
    lines = [d.pick(["cache = {}", 'cache = {"z": r * 1.0}']), f'cache["z"] = r + {d.smooth("x")}']
    steps = [
        'cache["a"] = {e} * cache["z"]',
        'cache["z"] = {e} + cache["z"] * 0.5',
        'cache["z"] *= {e}',
        'cache["a"] = np.tanh(cache["z"]) * y',
    ]
    for _ in range(d.rng.randint(1, 3)):
        step = d.pick(steps).format(e=d.smooth(d.pick(["x", "y"])))
        shape = d.pick(["plain", "loop", "branch"])
        if shape == "loop":
            lines += ["for _ in range(2):", f"    {step}"]
        elif shape == "branch":
            lines += [
                "if np.sum(y) > 0.0:",
                f"    {step}",
                "else:",
                '    cache["z"] = cache["z"] - y',
            ]
        else:
            lines.append(step)
    if 'cache["a"]' not in "\n".join(lines):
        lines.append('cache["a"] = cache["z"] * 1.0')
    return [*lines, 'r = cache["a"] * y + cache["z"]']


def _layers(d: _Draw):
    loop = d.pick(
        [
            ["for w, b in layers[:-1]:", "    h = np.tanh(h * w + b)", "w, b = layers[-1]"],
            ["for (w1, b1), (w2, b2) in zip(layers[:-1], layers[1:]):", "    h = h * w1 + b2"],
            ["for w, b in reversed(layers):", "    h = np.sin(h) * w + b"],
            ["for i, (w, b) in enumerate(layers[1:]):", "    h = h * w + b * i"],
            ["for w, b in layers[::-1][:2]:", "    h = np.tanh(h) * w - b"],
        ]
    )
    lines = [
        "layers = [({a}, y * 0.5), (x * 0.3, {b}), ({b}, x * 1.0)]",
        "h = x * 1.0",
        *loop,
        "r = h * 1.0",
    ]
    return [line.format(a=d.smooth("x"), b=d.smooth("y")) for line in lines], "r", ((3,), (3,))


def _calls_through(d: _Draw):
    lines = d.pick(
        [
            ["r = sum(map(partial(squash, {e}), [y, y * 2.0]))"],
            ["g = partial(affine, w=y)", "r = g({e})"],
            ["fs = [np.sin, np.tanh, smooth_max]", "r = sum(fn({e} * y) for fn in fs)"],
            ["r = sum(list(map(lambda t: t * y, [{e}, x])))"],
            ["fs = [scale, squash]", "r = x * 0.0", "for fn in fs:", "    r = r + fn({e}, y)"],
            ["r = np.stack(list(map(np.tanh, [{e}, y])))[0]"],
            # functions made by helpers, generators and itertools iterators read whole
            ["h = scaled_by({e})", "r = h(y) + h(x * 2.0)"],
            ["v, unflat = flat_pair({e})", "r = unflat(v * y[0]) * y"],
            ["h = scaled_by(y)", "g = scaled_by(h({e}))", "r = g(x)"],
            ["r = x * 0.0", "for v in items_of({e}, 0.5):", "    r = r + v * y"],
            ["r = y * sum(items_of({e}))"],
            ["r = np.stack([v * y for v in items_of({e})])[0]"],
            ["r = x * 0.0", "for i, v in enumerate(items_of({e})):", "    r = r + v * y[i]"],
            ["r = y * 0.0", "for a, b in itertools.product({e}, y):", "    r = r + a * b"],
            ["r = y * sum(a * b for a, b in itertools.combinations({e}, 2))"],
            ["r = y * 0.0", "for a, b in itertools.pairwise({e}):", "    r = r + (b - a) ** 2"],
        ]
    )
    return [line.format(e=d.smooth("x")) for line in lines], "r", ((3,), (3,))


def _tuples(d: _Draw):
    lines = d.pick(
        [
            ["m, shape, label, how = stats({e})", "r = m * y + len(shape) + how(y)"],
            ["m, *rest = stats({e})", "r = m * y * len(rest)"],
            ["m = stats({e})[0]", "r = m + y"],
            ["out = stats({e} * y)", "r = out[0] + out[3](x)"],
        ]
    )
    return [line.format(e=d.smooth("x")) for line in lines], "r", ((3,), (3,))


def _unpacking(d: _Draw):
    lines = d.pick(
        [
            ["(a, b), c = ({e}, y), x * y", "r = a * b + c"],
            ["a, (b, (c, e)) = x, (y, ({e}, x * 2.0))", "r = a * b * c + e"],
            ["pairs = [({e}, y), (y, x)]", "for (a, b) in pairs:", "    x = x + a * b", "r = x"],
            ["(a, b), *rest = [(x, {e}), y, x * 2.0]", "r = a * b + rest[0] * rest[-1]"],
        ]
    )
    return [line.format(e=d.smooth("x")) for line in lines], "r", ((3,), (3,))


def _starred(d: _Draw):
    lines = d.pick(
        [
            ["args = [{e}, y]", "r = squash(*args)"],
            ["args = ({e}, y)", "r = np.add(*args) * scale(*args)"],
            ["kw = {{'w': y, 'shift': 0.1}}", "r = affine({e}, **kw)"],
            ["rest = [y]", "r = pair({e}, *rest)[1]"],
            ["args = [{e}]", "r = affine(*args, w=y)"],
        ]
    )
    return [line.format(e=d.smooth("x")) for line in lines], "r", ((3,), (3,))


# in-place writes a helper may make to its parameter v (s: a number or array it is given)
_HELPER_WRITES = [
    "v[:] *= {s}",
    "v[1] = v[1] * {s}",
    "v[1:] += v[:-1] * {s}",
    "v *= {s}",
    "np.add.at(v, [0, 2, 0], {s})",
    "np.multiply(v, {s}, out=v)",
    "w = v[::2]\n        w *= {s}",
]


def _mutating_helpers(d: _Draw):
    """A helper that changes its argument in place, at module level or nested (a ``def``
    with arguments, a closure writing an array of the caller, one calling another), called
    as a statement, for its result, in a loop or a branch."""
    form = d.pick(["module", "nested", "nested", "closure", "chain", "result"])
    write = d.pick(_HELPER_WRITES)
    scale = d.pick(["0.5", "s", "x[0]", "np.tanh(y)"])
    lines = [d.pick(["t = {e}.copy()", "t = {e} * 1.0", "t = np.zeros(3) + {e}"])]
    if form == "module":
        lines[-1:] = [lines[-1], "halve(t)"]
        call = None
    elif form == "closure":
        body = write.replace("v", "t").format(s=scale.replace("s", "0.7"))
        lines += ["def bump():", *("    " + b.strip() for b in body.split("\n")), "bump()"]
        call = None
    else:
        body = write.format(s=scale)
        lines += ["def h(v, s):", *("    " + b.strip() for b in body.split("\n"))]
        if form == "result":
            lines.append("    return v * 2.0")
        if form == "chain":
            lines += ["def g(v, s):", "    h(v, s)", "    h(v, 0.5 * s)"]
        call = ("g" if form == "chain" else "h") + "(t, " + d.pick(["y[1]", "0.5", "x"]) + ")"
    if call is not None:
        where = d.pick(["plain", "loop", "branch", "result"] if form == "result" else ["plain"])
        lines += {
            "plain": [call],
            "loop": ["for i in range(2):", "    " + call],
            "branch": ["if x[0] > 0:", "    " + call],
            "result": ["u = " + call, "t = t + u"],
        }[where]
    lines.append(d.pick(["r = t * y", "r = t * x + y", "r = t * t"]))
    return [line.format(e=d.smooth("x")) for line in lines], "r", ((3,), (3,))


FAMILIES = {
    "linalg": _linalg,
    "axis reductions": _axes,
    "fancy/boolean indexing": _fancy,
    "take_along_axis": _take_along,
    "item/slice/mask writes": _writes,
    "views written into": _views,
    "out= and in-place functions": _out_writes,
    "row loops, np.stack": _rows,
    "list.pop": _pop,
    "softmax": _softmax,
    "while": _while,
    "helper keywords": _keywords,
    "helpers under grad(grad)": _second_order,
    "globals rebound": _globals,
    "dicts iterated": _dicts,
    "layer tuples": _layers,
    "partial/map/function lists, made functions": _calls_through,
    "tuples with non-arrays": _tuples,
    "nested unpacking": _unpacking,
    "starred calls": _starred,
    "helpers writing in place": _mutating_helpers,
    "nested blocks (program_fuzzer)": None,
}
NAMES = list(FAMILIES)


def family_program(seed: int) -> tuple[str, str, tuple]:
    """``(family, source of a module defining f(x, y), (x shape, y shape))``."""
    family = NAMES[seed % len(NAMES)]
    if FAMILIES[family] is None:
        from program_fuzzer import SHAPES

        return family, program(seed), SHAPES[seed % len(SHAPES)]
    d = _Draw(random.Random(seed))
    lines, result, shapes = FAMILIES[family](d)
    body = "\n".join("    " + line for line in lines)
    tail = d.pick(["np.sum(np.sin({r}))", "np.sum({r} ** 2) * 0.5", "np.sum(np.tanh({r}) * x[0])"])
    source = (
        f"import itertools\nimport numpy as np\n{HELPERS}\n{MORE_HELPERS}\n\n"
        f"def f(x, y):\n{body}\n    return {tail.format(r=result)}\n"
    )
    if family == "helpers under grad(grad)":
        source += _GRAD_OF_GRAD
    return family, source, shapes


_GRAD_OF_GRAD = """

import s2sgrad as sg

MODE = "s2s"
V = np.array([0.3, -0.7, 0.5])


def g(x, y):
    return np.sum(sg.grad(f, wrt=0, mode=MODE)(x, y) * V)
"""


def _load(source: str, directory: Path, seed: int):
    path = directory / f"family_program_{seed}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MODES = ("s2s", "tape", "auto")
# second derivatives cost most of a check (optimising forward-over-reverse code): at scale,
# PROGRAM_FAMILIES_HVP_EVERY=4 checks them on one program in four
HVP_EVERY = int(os.environ.get("PROGRAM_FAMILIES_HVP_EVERY", 1))


def check(seed: int, directory: Path, programs=family_program) -> dict[str, str]:
    """Outcome of each check of program ``seed`` (drawn by ``programs``): its gradient in
    each mode (first and second call), its jvp and hvp in each mode, and for some families
    grad of grad."""
    family, source, (x_shape, y_shape) = programs(seed)
    module = _load(source, directory, seed)
    f = module.f
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.2, 1.2, size=x_shape)
    y = rng.uniform(-1.2, 1.2, size=y_shape)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = f(x, y)
        except Exception as error:  # noqa: BLE001 - a program that does not run is skipped
            return {"all": f"skip {type(error).__name__}"}
        if not np.isfinite(value):
            return {"all": "skip"}
        expected = richardson_gradients(f, x, y)
        rebind = family == "globals rebound"
        expected_after = None
        if rebind:
            before = module.W, module.S
            module.W, module.S = rng.uniform(-1, 1, size=3), float(rng.uniform(0.5, 1.5))
            after = module.W, module.S
            expected_after = richardson_gradients(f, x, y)
            module.W, module.S = before
    if any(np.any(np.abs(want) > 1e4) for want, _ in expected):
        return {"all": "skip"}
    outcomes = {}
    along = (rng.normal(size=x_shape), rng.normal(size=y_shape))
    for mode in MODES:
        if rebind:
            module.W, module.S = before
        result, gradient = _gradient_outcome(
            f,
            x,
            y,
            mode,
            expected,
            module if rebind else None,
            after if rebind else None,
            expected_after,
        )
        outcomes[mode] = result
        second_order = (seed // len(NAMES)) % HVP_EVERY == 0  # every family alike
        if result in ("right", "fallback") and mode != "auto" and not rebind and second_order:
            outcomes[f"hvp {mode}"] = _hvp_outcome(f, x, y, mode, along)
        if not rebind:
            outcomes[f"jvp {mode}"] = _jvp_outcome(f, x, y, mode, along)
        if family == "helpers under grad(grad)" and result in ("right", "fallback"):
            outcomes[f"grad(grad) {mode}"] = _grad_of_grad_outcome(module, x, y, mode)
    return outcomes


def _classify(error: BaseException) -> str:
    import s2sgrad as sg

    text = str(error)
    if isinstance(error, sg.S2SGradError) or (
        isinstance(error, TypeError) and "mode='s2s'" in text
    ):
        if re.search(r"family_program_\d+\.py:\d+|fuzzed_program_\d+\.py:\d+", text):
            return f"refused: {type(error).__name__}: {text[:240]}"
        return f"unclear {type(error).__name__}: {text[:300]}"
    return "CRASH " + "".join(traceback.format_exception(error, limit=-4))[-1500:]


def _close(got, want, error, tolerance=1e-6) -> bool:
    return np.shape(got) == np.shape(want) and bool(
        np.all(np.abs(np.asarray(got) - want) <= tolerance * (1 + np.abs(want)) + 10 * error)
    )


def _gradient_outcome(f, x, y, mode, expected, module, after, expected_after):
    import s2sgrad as sg

    x_before, y_before = x.copy(), y.copy()
    calls = [expected, expected_after if module is not None else expected]
    try:
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
            warnings.simplefilter("always")
            transformed = sg.grad(f, wrt=(0, 1), mode=mode)
            results = []
            for number in range(2):
                if number == 1 and module is not None:
                    module.W, module.S = after
                results.append(transformed(x, y))
    except Exception as error:  # noqa: BLE001 - classified
        return _classify(error), None
    fell_back = any("tape instead" in str(w.message) for w in caught)
    if not (np.array_equal(x, x_before) and np.array_equal(y, y_before)):
        return "WRONG: changed its inputs", None
    for call, gradients, wanted in zip(("first", "second"), results, calls):
        for got, (want, error), name in zip(gradients, wanted, "xy"):
            if not _close(got, want, error):
                return f"WRONG {call} call d{name}: {got} vs {want}", None
    return ("fallback" if fell_back else "right"), transformed


def _hvp_outcome(f, x, y, mode, along) -> str:
    import s2sgrad as sg

    gradient = sg.grad(f, wrt=(0, 1), mode=mode)  # checked right at (x, y) above

    def directional(step):
        return directional_derivative(lambda xy: gradient(*xy), (x, y), along, step=step)

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expected = richardson(directional(1e-5), directional(5e-6))
            products = sg.hvp(f, (x, y), along, mode=mode)
    except Exception as error:  # noqa: BLE001 - classified
        return _classify(error)
    for got, (want, error), name in zip(products, expected, "xy"):
        if not _close(got, want, error, 1e-5):
            return f"WRONG hvp d{name}: {got} vs {want}"
    return "right"


def _jvp_outcome(f, x, y, mode, along) -> str:
    """Forward mode (``sg.jvp``, a first and a later call) against the derivative of ``f``
    along ``along`` by central differences."""
    import s2sgrad as sg

    def directional(step):
        return directional_derivative(lambda xy: f(*xy), (x, y), along, step=step)

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            [(want, error)] = richardson([directional(1e-5)], [directional(5e-6)])
            tangents = [sg.jvp(f, (x, y), along, mode=mode)[1] for _ in range(2)]
    except Exception as error:  # noqa: BLE001 - classified
        return _classify(error)
    for got in tangents:
        if not _close(got, want, error, 1e-5):
            return f"WRONG jvp: {got} vs {want}"
    return "right"


def _grad_of_grad_outcome(module, x, y, mode) -> str:
    import s2sgrad as sg

    module.MODE = mode
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expected = richardson_gradients(module.g, x, y)
            transformed = sg.grad(module.g, wrt=(0, 1), mode=mode)
            results = [transformed(x, y), transformed(x, y)]
    except Exception as error:  # noqa: BLE001 - classified
        return _classify(error)
    for gradients in results:
        for got, (want, error), name in zip(gradients, expected, "xy"):
            if not _close(got, want, error, 1e-5):
                return f"WRONG grad(grad) d{name}: {got} vs {want}"
    return "right"


def _timeout(*_):
    raise TimeoutError("the program took more than 120 s")


def main(count: int, start: int, log: str, programs=family_program) -> int:
    signal.signal(signal.SIGALRM, _timeout)
    bad = 0
    with tempfile.TemporaryDirectory() as folder, open(log, "a") as out:
        sys.path.insert(0, folder)
        for seed in range(start, start + count):
            family = programs(seed)[0]
            if os.environ.get("PROGRAM_FAMILIES_ONLY", family) != family:
                continue  # PROGRAM_FAMILIES_ONLY="helpers writing in place" runs one family
            signal.alarm(120)  # a program that hangs is reported, not waited for
            try:
                outcomes = check(seed, Path(folder), programs)
            except Exception as error:  # noqa: BLE001 - a bug of the checker itself
                outcomes = {"checker": "CRASH " + repr(error)}
            finally:
                signal.alarm(0)
            out.write(json.dumps({"seed": seed, "family": family, "outcomes": outcomes}) + "\n")
            out.flush()
            for key, outcome in outcomes.items():
                if outcome.startswith(("WRONG", "CRASH", "unclear")):
                    bad += 1
                    print(f"--- seed {seed} ({family}) {key}: {outcome}", flush=True)
    return 1 if bad else 0


def table(logs: list[str], names: list[str] = NAMES) -> str:
    """Per family: programs, and the checks right / refused / unclear / WRONG / CRASH."""
    rows: dict[str, dict[str, int]] = {}
    for log in logs:
        for line in Path(log).read_text().splitlines():
            entry = json.loads(line)
            row = rows.setdefault(entry["family"], {})
            row["programs"] = row.get("programs", 0) + 1
            for key, outcome in entry["outcomes"].items():
                kind = outcome.split()[0].rstrip(":")
                if key == "all":
                    row["skip"] = row.get("skip", 0) + 1
                    continue
                kind = "right" if kind == "fallback" else kind
                scope = "grad" if key in MODES else "jvp" if key.startswith("jvp") else "2nd"
                row[f"{scope} {kind}"] = row.get(f"{scope} {kind}", 0) + 1
                if key in MODES and kind == "refused":
                    row[f"refused {key}"] = row.get(f"refused {key}", 0) + 1
    kinds = ("right", "refused", "unclear", "WRONG", "CRASH")
    columns = ["programs", "skip"] + [f"{s} {k}" for s in ("grad", "jvp", "2nd") for k in kinds]
    columns += [f"refused {m}" for m in MODES]
    lines = ["| family | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    total = dict.fromkeys(columns, 0)
    for family in names:
        row = rows.get(family, {})
        for c in columns:
            total[c] += row.get(c, 0)
        lines.append(f"| {family} | " + " | ".join(str(row.get(c, 0)) for c in columns) + " |")
    lines.append("| total | " + " | ".join(str(total[c]) for c in columns) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        print(table(sys.argv[2:]))
        sys.exit(0)
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
