"""A fourth source of random programs: the from-scratch models of ``model_zoo.py``, each
rewritten at random places the way another person would have written the same code.

A rewrite keeps what the program computes and changes how it says it: a subexpression
named first (``t = W @ h; h = np.tanh(t + b)``), a subexpression moved into a helper
function (a module-level helper given the locals it reads, or a closure), a method called
as NumPy's function (``a.sum(axis=1)`` as ``np.sum(a, axis=1)``, ``a @ b`` as
``np.matmul(a, b)``), an unpacking done by indexing (``W, b = p`` as ``r = p; W = r[0];
b = r[1]``; ``for W, b in ps`` unpacked in the body), arithmetic in other words (``a * b``
as ``b * a``, ``x ** 2`` as ``x * x``, ``a / b`` as ``np.divide(a, b)``), a ``for`` loop
over ``range`` written as a ``while`` loop, ``a = a + b`` as ``a += b`` where every value
``a`` holds is an array the function made, a NumPy result written whole into a buffer of
its shape (``y = np.empty_like(r); y[...] = r``), and statements nothing reads (dead
code).
Every rewritten model is differentiated in ``s2s``, ``tape`` and ``auto`` (a first and a
second call) and set against central differences of the rewritten model itself, so the
oracle stays independent of whether a rewrite kept the meaning.

Run it at scale from the repository root::

    python tests/program_mutations.py 300 0 results.jsonl   # count, first seed, log
    python tests/program_mutations.py --table results.jsonl

Example:
    >>> kind, case, source, applied = mutated_zoo(0)
    >>> "def " in source and kind in REWRITES
    True
"""

from __future__ import annotations

import ast
import importlib.util
import json
import random
import re
import signal
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import program_families

ZOO = Path(__file__).with_name("model_zoo.py")
MODES = ("s2s", "tape", "auto")
_MODULES = {"np", "math", "sg", "functools", "itertools"}
_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LAZY = (ast.IfExp, ast.BoolOp, ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Starred)


class _Function:
    """One function of the module: its node, the names it binds (parameters included)."""

    def __init__(self, node: ast.FunctionDef):
        self.node = node
        arguments = node.args
        every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        self.parameters = {a.arg for a in every}
        self.bound = set(self.parameters)
        nodes = list(ast.walk(node))  # walked once, read three times
        for child in nodes:
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                self.bound.add(child.id)
            elif isinstance(child, (ast.FunctionDef, ast.ClassDef)) and child is not node:
                self.bound.add(child.name)
        self.fresh_arrays = _fresh_arrays(nodes, self.parameters)
        # holding nested scopes (or nested itself, see _Rewriter.block): a helper made here is
        # a closure, as a module-level one would miss names the scopes share
        self.nested = any(
            isinstance(c, (ast.FunctionDef, ast.Lambda, ast.Nonlocal, ast.Global))
            for c in nodes
            if c is not node
        )


class _Rewriter:
    """The random rewrites of one module; ``self.applied`` lists what was done where."""

    def __init__(self, rng: random.Random, kind: str, rate: float):
        self.rng = rng
        self.kind = kind
        self.rate = rate
        self.count = 0
        self.applied: list[str] = []
        self.helpers: list[ast.stmt] = []
        self.facts: _Function | None = None

    def fresh(self, stem: str) -> str:
        """A new local name of the function being rewritten (a helper it calls gets it)."""
        self.count += 1
        name = f"_{stem}{self.count}"
        self.facts.bound.add(name)
        return name

    def chosen(self, kind: str) -> bool:
        rate = self.rate if kind == self.kind else self.rate * 0.15
        return self.rng.random() < rate

    # ---- the module -------------------------------------------------------------------

    def module(self, tree: ast.Module) -> ast.Module:
        body = []
        for statement in tree.body:
            if isinstance(statement, ast.FunctionDef) and not _draws_arguments(statement):
                self.function(statement)
                body.extend(self.helpers)
                self.helpers = []
            body.append(statement)
        tree.body = body
        return ast.fix_missing_locations(tree)

    def function(self, node: ast.FunctionDef) -> None:
        facts = _Function(node)
        node.body = self.block(node.body, facts, node)

    def block(self, body: list[ast.stmt], facts: _Function, owner) -> list[ast.stmt]:
        result: list[ast.stmt] = []
        for index, statement in enumerate(body):
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and inner and not isinstance(statement, ast.ClassDef):
                    if isinstance(statement, ast.FunctionDef):
                        inner_facts = _Function(statement)
                        inner_facts.nested = True  # it reads its outer function's locals
                        setattr(statement, field, self.block(inner, inner_facts, statement))
                    else:
                        setattr(statement, field, self.block(inner, facts, owner))
            before: list[ast.stmt] = []
            self.facts = facts
            statement = self.statement(statement, facts, before, body[index + 1 :], owner)
            result.extend(before)
            result.extend(statement if isinstance(statement, list) else [statement])
            if self.chosen("dead code") and not isinstance(statement, ast.Return):
                result.extend(self.dead_code(facts))
        return result

    def statement(self, statement, facts, before, after, owner):
        if isinstance(statement, ast.Assign) and self.chosen("in-place updates"):
            statement = self.in_place(statement, facts)
        if isinstance(statement, ast.Assign) and self.chosen("buffers"):
            buffered = self.buffer(statement)
            if buffered is not None:
                return buffered
        if isinstance(statement, ast.Assign) and self.chosen("unpacking"):
            unpacked = self.unpack_assignment(statement)
            if unpacked is not None:
                return unpacked
        if isinstance(statement, ast.For) and self.chosen("unpacking"):
            self.unpack_loop_target(statement)
        if isinstance(statement, ast.For) and self.chosen("loops as while"):
            rewritten = self.while_loop(statement, after)
            if rewritten is not None:
                return rewritten
        if isinstance(statement, (ast.Assign, ast.Return, ast.Expr, ast.AugAssign, ast.If)):
            field = "test" if isinstance(statement, ast.If) else "value"
            value = getattr(statement, field)
            if value is not None:
                setattr(statement, field, self.expression(value, facts, before, owner, top=True))
        return statement

    # ---- expressions ------------------------------------------------------------------

    def expression(self, node, facts, before, owner, top=False):
        """``node`` with its subexpressions rewritten; hoisting only where nothing lazy
        (a conditional expression, ``and``/``or``, a lambda or comprehension) is above."""
        if isinstance(node, (_SCOPES, _LAZY)):
            return node
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                setattr(node, field, self.expression(value, facts, before, owner))
            elif isinstance(value, list):
                setattr(
                    node,
                    field,
                    [
                        self.expression(v, facts, before, owner) if isinstance(v, ast.expr) else v
                        for v in value
                    ],
                )
        for item in getattr(node, "keywords", []) or []:  # a call's keyword arguments
            item.value = self.expression(item.value, facts, before, owner)
        node = self.rewrite_arithmetic(node)
        node = self.rewrite_method(node)
        if top or not self.worth_hoisting(node):
            return node
        if self.chosen("temporaries"):
            name = self.fresh("t")
            before.append(ast.Assign(targets=[_store(name)], value=node))
            self.applied.append(f"temporaries: {name} in {owner.name}")
            return _load(name)
        if self.chosen("helpers"):
            return self.helper(node, facts, before, owner)
        return node

    @staticmethod
    def worth_hoisting(node) -> bool:
        """A call, arithmetic or an item read with no assignment expression inside."""
        return isinstance(node, (ast.Call, ast.BinOp, ast.UnaryOp, ast.Subscript)) and not any(
            isinstance(c, ast.NamedExpr) for c in ast.walk(node)
        )

    def helper(self, node, facts: _Function, before, owner):
        inside = {
            c.id for c in ast.walk(node) if isinstance(c, ast.Name) and isinstance(c.ctx, ast.Store)
        }
        inside |= {c.arg for c in ast.walk(node) if isinstance(c, ast.arg)}
        reads = sorted(
            {
                c.id
                for c in ast.walk(node)
                if isinstance(c, ast.Name)
                and isinstance(c.ctx, ast.Load)
                and c.id in facts.bound
                and c.id not in inside
            }
        )
        name = self.fresh("helper")
        if facts.nested or self.rng.random() < 0.5:  # a closure over the locals it reads
            definition = ast.FunctionDef(
                name=name,
                args=_arguments([]),
                body=[ast.Return(value=node)],
                decorator_list=[],
                returns=None,
                type_params=[],
            )
            before.append(definition)
            self.applied.append(f"helpers: closure {name} in {owner.name}")
            return ast.Call(func=_load(name), args=[], keywords=[])
        definition = ast.FunctionDef(
            name=name,
            args=_arguments(reads),
            body=[ast.Return(value=node)],
            decorator_list=[],
            returns=None,
            type_params=[],
        )
        self.helpers.append(definition)
        self.applied.append(f"helpers: module-level {name} for {owner.name}")
        return ast.Call(func=_load(name), args=[_load(r) for r in reads], keywords=[])

    def rewrite_arithmetic(self, node):
        if not isinstance(node, ast.BinOp) or not self.chosen("arithmetic"):
            return node
        if isinstance(node.op, ast.Mult) and not _may_be_sequence(node):
            self.applied.append("arithmetic: a * b as b * a")
            return ast.BinOp(left=node.right, op=ast.Mult(), right=node.left)
        if (
            isinstance(node.op, ast.Pow)
            and isinstance(node.right, ast.Constant)
            and node.right.value == 2
            and isinstance(node.left, ast.Name)
        ):
            self.applied.append("arithmetic: x ** 2 as x * x")
            return ast.BinOp(left=node.left, op=ast.Mult(), right=_load(node.left.id))
        functions = {ast.Div: "divide", ast.Sub: "subtract", ast.MatMult: "matmul"}
        name = functions.get(type(node.op))
        if name is not None:
            self.applied.append(f"arithmetic: {name} as np.{name}")
            return _numpy_call(name, [node.left, node.right], [])
        return node

    def rewrite_method(self, node):
        methods = ("sum", "mean", "reshape", "dot", "max", "transpose")
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in methods
            and not (isinstance(node.func.value, ast.Name) and node.func.value.id in _MODULES)
        ):
            return node
        if not self.chosen("methods as functions"):
            return node
        attribute, receiver = node.func.attr, node.func.value
        args = list(node.args)
        if attribute == "reshape" and len(args) > 1:
            args = [ast.Tuple(elts=args, ctx=ast.Load())]
        if attribute == "transpose" and len(args) > 1:
            args = [ast.Tuple(elts=args, ctx=ast.Load())]
        self.applied.append(f"methods as functions: .{attribute}() as np.{attribute}")
        return _numpy_call(attribute, [receiver, *args], node.keywords)

    # ---- statements -------------------------------------------------------------------

    def unpack_assignment(self, statement: ast.Assign):
        target = statement.targets[0]
        if len(statement.targets) != 1 or not isinstance(target, ast.Tuple | ast.List):
            return None
        if not all(isinstance(e, ast.Name) for e in target.elts):
            return None
        name = self.fresh("r")
        self.applied.append(f"unpacking: {len(target.elts)} names by indexing")
        lines: list[ast.stmt] = [ast.Assign(targets=[_store(name)], value=statement.value)]
        for position, element in enumerate(target.elts):
            item = ast.Subscript(value=_load(name), slice=ast.Constant(position), ctx=ast.Load())
            lines.append(ast.Assign(targets=[_store(element.id)], value=item))
        return lines

    def unpack_loop_target(self, statement: ast.For) -> None:
        target = statement.target
        if not isinstance(target, ast.Tuple) or not all(
            isinstance(e, ast.Name) for e in target.elts
        ):
            return
        name = self.fresh("item")
        statement.target = _store(name)
        unpack = ast.Assign(targets=[target], value=_load(name))
        statement.body.insert(0, unpack)
        self.applied.append("unpacking: loop target unpacked in the body")

    def while_loop(self, statement: ast.For, after: list[ast.stmt]):
        """``for i in range(a, b): ...`` as a ``while`` loop, when nothing in the body
        leaves or skips (``break``, ``continue``, ``return``) and nothing after reads ``i``."""
        iterator = statement.iter
        if not (
            isinstance(iterator, ast.Call)
            and isinstance(iterator.func, ast.Name)
            and iterator.func.id == "range"
            and 1 <= len(iterator.args) <= 2
            and not iterator.keywords
            and isinstance(statement.target, ast.Name)
            and not statement.orelse
        ):
            return None
        exits = (ast.Break, ast.Continue, ast.Return, ast.Yield, ast.FunctionDef, ast.Lambda)
        if any(isinstance(c, exits) for s in statement.body for c in ast.walk(s)):
            return None
        variable = statement.target.id
        if any(isinstance(c, ast.Name) and c.id == variable for s in after for c in ast.walk(s)):
            return None
        if any(
            isinstance(c, ast.Name) and isinstance(c.ctx, ast.Store) and c.id == variable
            for s in statement.body
            for c in ast.walk(s)
        ):
            return None
        start, stop = (
            (ast.Constant(0), iterator.args[0]) if len(iterator.args) == 1 else iterator.args
        )
        end = self.fresh("stop")
        body = [
            *statement.body,
            ast.AugAssign(target=_store(variable), op=ast.Add(), value=ast.Constant(1)),
        ]
        self.applied.append(f"loops as while: for {variable} in range")
        return [
            ast.Assign(targets=[_store(end)], value=stop),
            ast.Assign(targets=[_store(variable)], value=start),
            ast.While(
                test=ast.Compare(left=_load(variable), ops=[ast.Lt()], comparators=[_load(end)]),
                body=body,
                orelse=[],
            ),
        ]

    def in_place(self, statement: ast.Assign, facts: _Function):
        """``a = a + b`` as ``a += b`` when every value ``a`` is bound to is an array the
        function made (never an argument or a view of one)."""
        target, value = statement.targets[0], statement.value
        if not (
            len(statement.targets) == 1
            and isinstance(target, ast.Name)
            and target.id in facts.fresh_arrays
            and isinstance(value, ast.BinOp)
            and isinstance(value.op, (ast.Add, ast.Sub, ast.Mult, ast.Div))
            and isinstance(value.left, ast.Name)
            and value.left.id == target.id
        ):
            return statement
        self.applied.append(f"in-place updates: {target.id} {type(value.op).__name__}")
        return ast.AugAssign(target=_store(target.id), op=value.op, value=value.right)

    def buffer(self, statement: ast.Assign):
        """``y = np.f(...)`` as a buffer of the result's shape and type written whole."""
        target, value = statement.targets[0], statement.value
        if not (
            len(statement.targets) == 1
            and isinstance(target, ast.Name)
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == "np"
            and value.func.attr not in _VIEWS
        ):
            return None
        result = self.fresh("result")
        write = self.rng.choice(["{y}[...] = {r}", "np.copyto({y}, {r})", "{y}[...] += {r}"])
        make = "np.zeros_like" if write.endswith("+= {r}") else "np.empty_like"
        self.applied.append(f"buffers: {target.id} written by {write.split(' ')[0]}")
        lines = [ast.Assign(targets=[_store(result)], value=value)]
        lines += ast.parse(f"{target.id} = {make}({result})").body
        lines += ast.parse(write.format(y=target.id, r=result)).body
        return lines

    def dead_code(self, facts: _Function) -> list[ast.stmt]:
        name = self.fresh("unused")
        options = sorted(facts.parameters)
        if not options:
            return []
        read = self.rng.choice(options)
        self.applied.append(f"dead code: {name} from {read}")
        form = self.rng.choice(
            [
                f"{name} = {read}",
                f"{name} = isinstance({read}, float)",
                f"{name} = {read} if False else None",
                f"if False:\n    {name} = {read}",
                f"{name} = [{read}]",
            ]
        )
        return ast.parse(form).body


def _draws_arguments(node: ast.FunctionDef) -> bool:
    """A model's ``case_*`` or a helper of one: it draws random arguments (kept as written,
    so that the rewritten model is run at the same point)."""
    return node.name.startswith("case_") or any(a.arg == "rng" for a in node.args.args)


def _load(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Load())


def _store(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Store())


def _numpy_call(name: str, args: list, keywords: list) -> ast.Call:
    function = ast.Attribute(value=_load("np"), attr=name, ctx=ast.Load())
    return ast.Call(func=function, args=args, keywords=keywords)


def _arguments(names: list[str]) -> ast.arguments:
    return ast.arguments(
        posonlyargs=[],
        args=[ast.arg(arg=n) for n in names],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=[],
    )


# NumPy functions whose result may be a view of an argument
_VIEWS = {
    "reshape",
    "transpose",
    "ravel",
    "asarray",
    "asanyarray",
    "squeeze",
    "expand_dims",
    "broadcast_to",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "diagonal",
    "real",
    "imag",
    "swapaxes",
    "moveaxis",
    "split",
    "array_split",
    "hsplit",
    "vsplit",
    "flip",
    "fliplr",
    "flipud",
    "rot90",
    "broadcast_arrays",
    "meshgrid",
    "ix_",
    "take_along_axis",
    "where",
    "shape",
    "ndim",
    "size",
    "arange",
    "linspace",
    "sort",
    "argsort",
    "argmax",
    "argmin",
}
_MAKES_NEW = {
    "zeros",
    "ones",
    "full",
    "exp",
    "tanh",
    "sin",
    "cos",
    "log",
    "sqrt",
    "dot",
    "matmul",
    "maximum",
    "minimum",
    "abs",
    "square",
    "outer",
    "stack",
    "concatenate",
    "sum",
    "mean",
    "zeros_like",
    "ones_like",
    "copy",
    "array",
}


def _fresh_arrays(nodes: list[ast.AST], parameters: set[str]) -> set[str]:
    """Names every binding of which is a new array the function made (arithmetic, or a
    NumPy function that never returns a view): ``+=`` on them changes nothing else.
    ``nodes`` are the function's, as ``ast.walk`` gives them."""
    simple = {
        id(child.targets[0]): child.value
        for child in nodes
        if isinstance(child, ast.Assign)
        and len(child.targets) == 1
        and isinstance(child.targets[0], ast.Name)
    }
    bindings: dict[str, list] = {}
    for child in nodes:
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            bindings.setdefault(child.id, []).append(simple.get(id(child)))
    fresh = set()
    for name, values in bindings.items():
        if name in parameters:
            continue
        if all(_makes_new_array(v) for v in values):
            fresh.add(name)
    return fresh


def _makes_new_array(value) -> bool:
    if isinstance(value, ast.Constant):  # a number: += binds the name anew
        return isinstance(value.value, int | float) and not isinstance(value.value, bool)
    if isinstance(value, ast.BinOp):
        return not isinstance(value.op, ast.Mod)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id == "np"
        and value.func.attr in _MAKES_NEW
    )


def _may_be_sequence(node: ast.BinOp) -> bool:
    """``[0.0] * n`` or ``(1,) * k``: repetition, whose operands do not commute in type."""
    return any(
        isinstance(side, ast.List | ast.Tuple | ast.ListComp) for side in (node.left, node.right)
    )


REWRITES = (
    "temporaries",
    "in-place updates",
    "buffers",
    "helpers",
    "methods as functions",
    "unpacking",
    "arithmetic",
    "loops as while",
    "dead code",
)


def _zoo_cases() -> list[str]:
    spec = importlib.util.spec_from_file_location("model_zoo_names", ZOO)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return sorted(module.CASES)


CASES = _zoo_cases()


def mutated_zoo(seed: int) -> tuple[str, str, str, list[str]]:
    """``(rewrite kind, model case, source of the rewritten zoo, rewrites applied)``."""
    rng = random.Random(seed)
    case = CASES[seed % len(CASES)]
    kind = REWRITES[(seed // len(CASES)) % len(REWRITES)]
    rewriter = _Rewriter(rng, kind, rate=rng.choice([0.2, 0.35, 0.5]))
    tree = rewriter.module(ast.parse(ZOO.read_text()))
    return kind, case, ast.unparse(tree) + "\n" + _through(case), rewriter.applied


def _through(case: str) -> str:
    """Source of ``through(p)``: the case's loss as a function of its first differentiated
    argument alone, the others read from the global ``ARGS`` (for jvp and hvp)."""
    import model_zoo

    loss, args, wrt = model_zoo.CASES[case](np.random.default_rng(0))
    name = loss.__name__ if getattr(model_zoo, loss.__name__, None) is loss else "LOSS"
    given = ", ".join("p" if i == wrt[0] else f"ARGS[{i}]" for i in range(len(args)))
    return f"\n\nLOSS = None\nARGS = None\n\n\ndef through(p):\n    return {name}({given})\n"


def _load_module(source: str, folder: Path, seed: int):
    name = f"mutated_zoo_{seed}"
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _classify(error: BaseException) -> str:
    import s2sgrad as sg

    text = str(error)
    if isinstance(error, sg.S2SGradError) or (
        isinstance(error, TypeError) and "mode='s2s'" in text
    ):
        if re.search(r"mutated_zoo_\d+\.py:\d+", text):
            return f"refused: {type(error).__name__}: {text[:240]}"
        return f"unclear {type(error).__name__}: {text[:300]}"
    return "CRASH " + "".join(traceback.format_exception(error, limit=-4))[-1500:]


def _copies(args):
    import s2sgrad as sg

    return sg.tree_map(lambda a: np.array(a, copy=True) if isinstance(a, np.ndarray) else a, args)


def _same(a, b) -> bool:
    import s2sgrad as sg

    left, right = sg.tree_leaves(a), sg.tree_leaves(b)
    return len(left) == len(right) and all(
        np.array_equal(np.asarray(u), np.asarray(v), equal_nan=True) for u, v in zip(left, right)
    )


def check(seed: int, folder: Path) -> dict[str, str]:
    """Outcome of the rewritten model's gradient in each mode, first and second call."""
    from oracle import assert_close, numeric_grad

    import s2sgrad as sg

    _, case, source, _ = mutated_zoo(seed)
    module = _load_module(source, folder, seed)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            loss, args, wrt = module.CASES[case](np.random.default_rng(seed))
            value = loss(*args)
            expected = tuple(numeric_grad(loss, args, position) for position in wrt)
        except Exception as error:  # noqa: BLE001 - a rewrite that does not run is skipped
            return {"all": f"skip {type(error).__name__}: {error}"[:200]}
        if not np.all(np.isfinite(value)):
            return {"all": "skip"}
    outcomes = {}
    for mode in MODES:
        before = _copies(args)
        try:
            with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
                warnings.simplefilter("always")
                transformed = sg.grad(loss, wrt=wrt, mode=mode)
                results = [transformed(*args), transformed(*args)]
        except Exception as error:  # noqa: BLE001 - classified
            outcomes[mode] = _classify(error)
            continue
        if not _same(before, args):
            outcomes[mode] = "WRONG: changed its inputs"
            continue
        outcome = "fallback" if any("tape instead" in str(w.message) for w in caught) else "right"
        for call, result in zip(("first", "second"), results):
            try:
                assert_close(result, expected, rtol=1e-4, atol=1e-6)
            except AssertionError as error:
                outcome = f"WRONG {call} call: {str(error)[:400]}"
                break
        outcomes[mode] = outcome
    module.LOSS, module.ARGS = loss, tuple(args)
    rng = np.random.default_rng(seed + 1)
    point = args[wrt[0]]
    along = sg.tree_map(lambda leaf: rng.normal(size=np.shape(leaf)), point)
    if isinstance(point, float):
        along = float(along)
    for mode in MODES:
        if outcomes[mode] not in ("right", "fallback"):
            continue
        outcomes[f"jvp {mode}"] = _jvp_outcome(module.through, point, along, mode)
        if mode != "auto":
            outcomes[f"hvp {mode}"] = _hvp_outcome(module.through, point, along, mode)
    return outcomes


def _leaves_close(got, want, error, tolerance) -> bool:
    import s2sgrad as sg

    got, want, error = sg.tree_leaves(got), sg.tree_leaves(want), sg.tree_leaves(error)
    return len(got) == len(want) and all(
        np.shape(g) == np.shape(w)
        and bool(np.all(np.abs(np.asarray(g) - w) <= tolerance * (1 + np.abs(w)) + 10 * e))
        for g, w, e in zip(got, want, error)
    )


def _richardson_tree(coarse, fine):
    import s2sgrad as sg

    value = sg.tree_map(lambda a, b: (4 * np.asarray(b) - a) / 3, coarse, fine)
    error = sg.tree_map(lambda a, b: np.abs(np.asarray(b) - a), coarse, fine)
    return value, error


def _jvp_outcome(through, point, along, mode) -> str:
    """``sg.jvp`` against differences of the rewritten model along ``along``."""
    import s2sgrad as sg

    def tangent():
        return sg.jvp(through, (point,), (along,), mode=mode)[1]

    return _directional_outcome("jvp", through, tangent, point, along, 1e-5)


def _hvp_outcome(through, point, along, mode) -> str:
    """``sg.hvp`` against differences of the tape's gradient (checked right at the point)."""
    import s2sgrad as sg

    def product():
        return sg.hvp(through, (point,), (along,), mode=mode)[0]

    return _directional_outcome("hvp", sg.grad(through, mode="tape"), product, point, along, 1e-4)


def _directional_outcome(what, differenced, computed, point, along, tolerance) -> str:
    """``computed()`` (twice) against Richardson-extrapolated differences of ``differenced``
    at ``point`` along ``along``: right, WRONG, or the classified exception."""
    from oracle import directional_derivative

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want, error = _richardson_tree(
                directional_derivative(differenced, point, along, step=1e-5),
                directional_derivative(differenced, point, along, step=5e-6),
            )
            results = [computed() for _ in range(2)]
    except Exception as failure:  # noqa: BLE001 - classified
        return _classify(failure)
    for got in results:
        if not _leaves_close(got, want, error, tolerance):
            return f"WRONG {what}: {str(got)[:300]} vs {str(want)[:300]}"
    return "right"


def _timeout(*_):
    raise TimeoutError("the program took more than 120 s")


def main(count: int, start: int, log: str, report: Callable = print) -> int:
    signal.signal(signal.SIGALRM, _timeout)
    bad = 0
    with tempfile.TemporaryDirectory() as folder, open(log, "a") as out:
        for seed in range(start, start + count):
            kind, case, _, applied = mutated_zoo(seed)
            signal.alarm(120)
            try:
                outcomes = check(seed, Path(folder))
            except Exception as error:  # noqa: BLE001 - a bug of the checker itself
                outcomes = {"checker": "CRASH " + repr(error)}
            finally:
                signal.alarm(0)
                sys.modules.pop(f"mutated_zoo_{seed}", None)
            entry = {"seed": seed, "family": kind, "case": case, "applied": applied}
            out.write(json.dumps({**entry, "outcomes": outcomes}) + "\n")
            out.flush()
            for key, outcome in outcomes.items():
                if outcome.startswith(("WRONG", "CRASH", "unclear")):
                    bad += 1
                    report(f"--- seed {seed} ({kind}, {case}) {key}: {outcome}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    if sys.argv[1] == "--table":
        print(program_families.table(sys.argv[2:], list(REWRITES)))
        sys.exit(0)
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
