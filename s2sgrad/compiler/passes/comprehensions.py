"""Lower comprehensions, ``map`` and ``partial(...)(...)`` calls of a statement into loops.

``[e for v in xs]`` (and a generator passed as an argument) becomes a list built by a loop
that appends, placed before the statement (``{k: v for ...}`` the ``dict`` of such a list of
pairs, and ``list``, ``tuple`` or ``dict`` of ``zip(...)`` or ``enumerate(xs)`` the same of
a list of the tuples made by a comprehension); ``map(f, xs)`` passed on or iterated becomes the
list ``[f(x) for x in xs]`` so lowered; ``partial(g, a)(b)`` becomes ``g(a, b)``;
``functools.reduce(f, xs)`` becomes a loop that applies ``f``
to what it has and the next item (an empty ``xs`` raises ``IndexError``, not Python's
``TypeError``). The loops
made are normalised by :class:`s2sgrad.compiler.passes.loops.Loops`.
"""

from __future__ import annotations

from collections import Counter

import gast

from s2sgrad.compiler.syntax import (
    COMPREHENSIONS,
    assign,
    attribute,
    call,
    clone,
    constant,
    load,
    located,
    store,
    walk,
)

__all__ = ["Comprehensions"]


class Comprehensions(gast.NodeTransformer):
    """``[e for v in xs]`` (and generator arguments) → a list built by a loop beforehand."""

    def __init__(self, loops, prefix: list[gast.stmt], statement: gast.stmt):
        """``loops`` is the :class:`~s2sgrad.compiler.passes.loops.Loops` of the function (it
        lowers the loops made here, and knows its names); what is computed beforehand goes
        to ``prefix``, before ``statement``."""
        self.loops = loops
        self.prefix = prefix
        self.statement = statement

    def visit_FunctionDef(self, node):
        return node

    def visit_Lambda(self, node):
        return node

    def visit_For(self, node):  # only the header: the body's statements are lowered in it
        lazy = any(
            type(n) is gast.GeneratorExp or self.loops.builtin_call(n, "map")
            for n in walk(node.iter)
        )
        if lazy and self.loops.sees_changes(node.iter, node):
            return node  # made as the loop runs, from what it changes: left for the tape
        node.iter = self.visit(node.iter)
        return node

    def visit_If(self, node):
        node.test = self.visit(node.test)
        return node

    def visit_While(self, node):  # its test runs again each time round: left as it is
        return node

    def visit_With(self, node):
        node.items = [self.visit(item) for item in node.items]
        return node

    def visit_Try(self, node):
        return node

    def visit_ListComp(self, node):
        return self.lower(node)

    def visit_GeneratorExp(self, node):
        return self.lower(node)

    def visit_DictComp(self, node):
        """``{k: v for ...}`` → ``dict([(k, v) for ...])``: the pairs in the same order, the
        later of equal keys kept, as the comprehension does."""
        if not self.loops.is_builtin("dict"):
            return node
        pair = gast.Tuple(elts=[node.key, node.value], ctx=gast.Load())
        return call(load("dict"), [self.lower(gast.ListComp(elt=pair, generators=node.generators))])

    def visit_Call(self, node):
        loops = self.loops
        if loops.builtin_call(node, "next"):
            return node  # next(chain(a, b)): an iterator, not the list of what it gives
        self.generic_visit(node)
        if loops.is_partial(node.func):  # partial(g, a, k=v)(b) is g(a, b, k=v)
            inner = node.func
            node.func = inner.args[0]
            node.args = [*inner.args[1:], *node.args]
            node.keywords = [*inner.keywords, *node.keywords]
            return node
        if _reads_pairs_whole(loops, node):  # dict(zip(ks, vs)), list(enumerate(xs)) ...
            pairs = node.args[0]
            width = len(pairs.args) if pairs.func.id == "zip" else 2
            items = [loops.names.fresh("item") for _ in range(width)]
            target = gast.Tuple(elts=[store(i) for i in items], ctx=gast.Store())
            pair = gast.Tuple(elts=[load(i) for i in items], ctx=gast.Load())
            generator = gast.comprehension(target=target, iter=pairs, ifs=[], is_async=0)
            listed = self.lower(gast.ListComp(elt=pair, generators=[generator]))
            return listed if node.func.id == "list" else call(node.func, [listed])
        if _reads_lazily_whole(loops, node):  # list(reversed(xs)), tuple(zip(*rows))
            item = loops.names.fresh("item")
            generator = gast.comprehension(
                target=store(item), iter=node.args[0], ifs=[], is_async=0
            )
            listed = self.lower(gast.ListComp(elt=load(item), generators=[generator]))
            return listed if node.func.id == "list" else call(node.func, [listed])
        if loops.sorted_by_key(node):
            return self.sorted_by_key(node)
        if loops.is_reduce(node):
            return self.reduced(node)
        listed = loops.iterator_listed(node)
        if listed is not None:
            if isinstance(self.statement, gast.Assign) and self.statement.value is node:
                return node  # acc = accumulate(...): an iterator kept for later, left
            return getattr(self, listed)(node)
        if not loops.builtin_call(node, "map") or len(node.args) < 2:
            return node
        if any(isinstance(a, gast.Starred) for a in node.args):
            return node
        if isinstance(self.statement, gast.Assign) and self.statement.value is node:
            return node  # m = map(...): a lazy iterator kept for later, left as it is
        function, *sequences = node.args
        items = [loops.names.fresh("item") for _ in sequences]
        element = self.applied(function, [load(i) for i in items])
        if element is None:
            return node
        if len(sequences) == 1:
            target: gast.expr = store(items[0])
            source = sequences[0]
        else:
            target = gast.Tuple(elts=[store(i) for i in items], ctx=gast.Store())
            source = call(load("zip"), sequences)
        generator = gast.comprehension(target=target, iter=source, ifs=[], is_async=0)
        return self.lower(gast.ListComp(elt=element, generators=[generator]))

    def reduced(self, node: gast.Call) -> gast.expr:
        """``reduce(f, items[, initial])``: a loop beforehand, ``acc = items[0]`` (or
        ``initial``) then ``acc = f(acc, item)`` for the rest."""
        statement = self.statement
        function, items, *initial = node.args
        names = self.loops.names
        accumulated, item = names.fresh("reduced"), names.fresh("item")
        step = self.applied(function, [load(accumulated), load(item)])
        if step is None:
            return node
        if initial:
            first, rest = initial[0], items
        elif isinstance(items, (gast.List, gast.Tuple)) and items.elts:
            if any(isinstance(e, gast.Starred) for e in items.elts):
                return node
            first, rest = items.elts[0], gast.List(elts=items.elts[1:], ctx=gast.Load())
        else:  # any iterable: listed once, its first item the start
            listed = names.fresh("items")
            self.prefix.append(assign(listed, call(load("list"), [items]), like=statement))
            first = gast.Subscript(
                value=load(listed), slice=gast.Constant(value=0, kind=None), ctx=gast.Load()
            )
            rest = gast.Subscript(
                value=load(listed),
                slice=gast.Slice(lower=gast.Constant(value=1, kind=None), upper=None, step=None),
                ctx=gast.Load(),
            )
        self.prefix.append(assign(accumulated, first, like=statement))
        loop = gast.For(
            target=store(item),
            iter=rest,
            body=[assign(accumulated, step, like=statement)],
            orelse=[],
            type_comment=None,
        )
        located(loop, statement)
        self.prefix.extend(self.loops.for_loop(loop))
        return load(accumulated)

    def accumulate(self, node: gast.Call) -> gast.expr:
        """``accumulate(items[, f], initial=v)``: the list of running results made by a loop
        beforehand, ``result = [v]`` (or ``listed[:1]``, the first item) then ``result.append(
        f(result[-1], item))`` (``+`` without ``f``) for each item after it."""
        names, statement = self.loops.names, self.statement
        keywords = {k.arg: k.value for k in node.keywords}
        items = node.args[0]
        function = keywords.get("func", node.args[1] if len(node.args) > 1 else None)
        if isinstance(function, gast.Constant) and function.value is None:
            function = None
        result, previous = names.fresh("running"), names.fresh("previous")
        item = names.fresh("item")
        step: gast.expr | None
        if function is None:
            step = gast.BinOp(left=load(previous), op=gast.Add(), right=load(item))
        else:
            step = self.applied(function, [load(previous), load(item)])
        if step is None:
            return node
        initial = keywords.get("initial")
        if isinstance(initial, gast.Constant) and initial.value is None:
            initial = None
        if initial is not None:
            start: gast.expr = gast.List(elts=[initial], ctx=gast.Load())
            rest = items
        else:  # the first item starts; none when there are none
            listed = names.fresh("items")
            self.prefix.append(assign(listed, call(load("list"), [items]), like=statement))
            start = call(load("list"), [_sliced(listed, None, 1)])  # a list, made here
            rest = _sliced(listed, 1, None)
        self.prefix.append(assign(result, start, like=statement))
        last = gast.Subscript(value=load(result), slice=constant(-1), ctx=gast.Load())
        append = gast.Expr(value=call(attribute(load(result), "append"), [step]))
        body = [assign(previous, last, like=statement), located(append, statement)]
        loop = gast.For(target=store(item), iter=rest, body=body, orelse=[], type_comment=None)
        self.prefix.extend(self.loops.for_loop(located(loop, statement)))
        return load(result)

    def chain(self, node: gast.Call) -> gast.expr:
        """``chain(a, b, ...)``: the list of their items, each iterable evaluated first
        (as the call does), then a loop appending each one's items in turn."""
        names, statement = self.loops.names, self.statement
        sources = [self.named(a) for a in node.args]
        result = names.fresh("chained")
        self.prefix.append(assign(result, gast.List(elts=[], ctx=gast.Load()), like=statement))
        for source in sources:
            item = names.fresh("item")
            append = gast.Expr(value=call(attribute(load(result), "append"), [load(item)]))
            loop = gast.For(
                target=store(item),
                iter=load(source),
                body=[located(append, statement)],
                orelse=[],
                type_comment=None,
            )
            self.prefix.extend(self.loops.for_loop(located(loop, statement)))
        return load(result)

    def sorted_by_key(self, node: gast.Call) -> gast.expr:
        """``sorted(xs, key=f, reverse=r)``: ``items = for_items(xs)`` (what ``for v in xs``
        visits, as a list: a dict's keys), then the items read in
        the order ``sorted_order(items, f, r)`` finds at run time (a permutation, like a
        branch taken: the derivative follows each item to where it goes)."""
        names, statement = self.loops.names, self.statement
        items, order, position = names.fresh("items"), names.fresh("order"), names.fresh("i")
        listed = call(self.loops.helper("for_items"), [node.args[0]])  # a dict: its keys
        self.prefix.append(assign(items, listed, like=statement))
        keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
        arranged = call(self.loops.helper("sorted_order"), [load(items)], keywords)
        self.prefix.append(assign(order, arranged, like=statement))
        read = gast.Subscript(value=load(items), slice=load(position), ctx=gast.Load())
        generator = gast.comprehension(target=store(position), iter=load(order), ifs=[], is_async=0)
        return self.lower(gast.ListComp(elt=read, generators=[generator]))

    def zip_longest(self, node: gast.Call) -> gast.expr:
        """``zip_longest(a, b, ..., fillvalue=v)``: each iterable listed, then the list of
        the tuples ``(a[i] if i < len(a) else v, ...)`` for ``i`` up to the longest."""
        names, statement = self.loops.names, self.statement
        fill = next((k.value for k in node.keywords if k.arg == "fillvalue"), None)
        listed = []
        for source in node.args:
            name = names.fresh("items")
            self.prefix.append(assign(name, call(load("list"), [source]), like=statement))
            listed.append(name)
        filler = self.named(fill) if fill is not None else None
        index, result = names.fresh("i"), names.fresh("zipped")
        lengths = [call(load("len"), [load(n)]) for n in listed]
        longest = call(load("max"), lengths) if len(lengths) > 1 else lengths[0]
        entries = [
            gast.IfExp(
                test=gast.Compare(
                    left=load(index), ops=[gast.Lt()], comparators=[call(load("len"), [load(n)])]
                ),
                body=gast.Subscript(value=load(n), slice=load(index), ctx=gast.Load()),
                orelse=load(filler) if filler is not None else constant(None),
            )
            for n in listed
        ]
        self.prefix.append(assign(result, gast.List(elts=[], ctx=gast.Load()), like=statement))
        entry = gast.Tuple(elts=entries, ctx=gast.Load())
        append = gast.Expr(value=call(attribute(load(result), "append"), [entry]))
        loop = gast.For(
            target=store(index),
            iter=call(load("range"), [longest]),
            body=[located(append, statement)],
            orelse=[],
            type_comment=None,
        )
        self.prefix.extend(self.loops.for_loop(located(loop, statement)))
        return load(result)

    def named(self, node: gast.expr) -> str:
        """A name for ``node``, evaluated once here (``node`` itself when a name)."""
        if isinstance(node, gast.Name):
            return node.id
        name = self.loops.names.fresh("t")
        self.prefix.append(assign(name, node, like=self.statement))
        return name

    def applied(self, function: gast.expr, items: list[gast.expr]) -> gast.expr | None:
        """``function(*items)`` as an expression the transformer can follow: a lambda's
        body with its parameters replaced, ``g(a, *items)`` for ``partial(g, a)``."""
        if isinstance(function, gast.Lambda):
            arguments = function.args
            parameters = arguments.posonlyargs + arguments.args
            plain = not (
                arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.defaults
            )
            nested = any(type(n) in (*COMPREHENSIONS, gast.Lambda) for n in walk(function.body))
            if not plain or nested or len(parameters) != len(items):
                return None
            replacements = {p.id: item.id for p, item in zip(parameters, items)}
            body = clone(function.body)
            for name in walk(body):
                if type(name) is gast.Name and name.id in replacements:
                    name.id = replacements[name.id]
            return body
        if self.loops.is_partial(function):
            fixed = [self.once(a) for a in function.args[1:]]
            keywords = {k.arg: self.once(k.value) for k in function.keywords}
            return call(self.once(function.args[0]), [*fixed, *items], keywords)
        return call(self.once(function), items)

    def once(self, node: gast.expr) -> gast.expr:
        """``node`` evaluated once, before the loop: a name for anything but names,
        constants and attribute chains on names."""
        base = node
        while isinstance(base, gast.Attribute):
            base = base.value
        if isinstance(base, (gast.Name, gast.Constant)):
            return node
        name = self.loops.names.fresh("t")
        self.prefix.append(assign(name, node, like=self.statement))
        return load(name)

    def lower(self, node):
        """``[e for a in xs if c for b in ys(a)]`` as the loops a user would write: ``items
        = []; for a in xs: if c: for b in ys(a): items.append(e)``, the first iterable
        computed once before them, each later one where its loop starts (it may read the
        variables of the loops around it)."""
        generators = node.generators
        if not generators or any(g.is_async for g in generators):
            return node
        if any(_makes_functions_or_lists(g.iter) for g in generators[1:]):
            return node  # a later iterable runs in each pass: nothing of it is hoisted
        generator = generators[0]
        generator.iter = self.visit(generator.iter)  # computed once, before the loop
        self.keep_variables_apart(node)
        result = self.loops.names.fresh("items")
        append = gast.Expr(value=call(attribute(load(result), "append"), [node.elt]))
        body: list[gast.stmt] = [located(append, self.statement)]
        for level, inner in enumerate(reversed(generators)):
            for condition in reversed(inner.ifs):
                body = [located(gast.If(test=condition, body=body, orelse=[]), self.statement)]
            if level == len(generators) - 1:
                break
            nested = gast.For(
                target=inner.target, iter=inner.iter, body=body, orelse=[], type_comment=None
            )
            body = [located(nested, self.statement)]
        loop = gast.For(
            target=generator.target,
            iter=generator.iter,
            body=body,
            orelse=[],
            type_comment=None,
        )
        located(loop, self.statement)
        self.prefix.append(assign(result, gast.List(elts=[], ctx=gast.Load()), like=self.statement))
        self.prefix.extend(self.loops.for_loop(loop))
        return load(result)

    def keep_variables_apart(self, node) -> None:
        """Rename the comprehension's variables that the function also uses elsewhere: in
        Python they are the comprehension's own, and the loop it becomes must not change
        (or read) the function's variable of that name."""
        first = node.generators[0]
        inside = Counter(n.id for n in walk(node) if type(n) is gast.Name)
        parts = [node.elt]
        for generator in node.generators:
            parts.extend([generator.target, *generator.ifs])
            if generator is not first:
                parts.append(generator.iter)  # run in the comprehension's own scope
        targets = {n.id for g in node.generators for n in walk(g.target) if type(n) is gast.Name}
        for variable in targets:
            if self.loops.uses[variable] > inside[variable]:
                new = self.loops.names.claim(variable)
                for part in parts:
                    for name in walk(part):
                        if type(name) is gast.Name and name.id == variable:
                            name.id = new


def _makes_functions_or_lists(node: gast.expr) -> bool:
    """Whether ``node`` holds a comprehension or a lambda (lowered or made where it is)."""
    return any(isinstance(n, _SCOPES) for n in walk(node))


_SCOPES = (*COMPREHENSIONS, gast.Lambda)


def _sliced(name: str, start: int | None, stop: int | None) -> gast.Subscript:
    """``name[start:stop]``."""
    bounds = gast.Slice(
        lower=None if start is None else constant(start),
        upper=None if stop is None else constant(stop),
        step=None,
    )
    return gast.Subscript(value=load(name), slice=bounds, ctx=gast.Load())


def _reads_pairs_whole(loops, node: gast.Call) -> bool:
    """``list``, ``tuple`` or ``dict`` of ``zip(...)`` or ``enumerate(xs)``: the tuples read
    whole where they are made, as a comprehension over the same header reads them."""
    if not any(loops.builtin_call(node, name) for name in ("list", "tuple", "dict")):
        return False
    if len(node.args) != 1:
        return False
    inner = node.args[0]
    zipped = loops.builtin_call(inner, "zip") and bool(inner.args)
    counted = loops.builtin_call(inner, "enumerate") and len(inner.args) == 1
    return (zipped or counted) and not any(type(a) is gast.Starred for a in inner.args)


def _reads_lazily_whole(loops, node: gast.Call) -> bool:
    """``list`` or ``tuple`` of ``reversed(xs)`` or ``zip(*rows)``: the items read whole
    where they are made, as a comprehension over the same iterator reads them."""
    if not any(loops.builtin_call(node, name) for name in ("list", "tuple")):
        return False
    if len(node.args) != 1:
        return False
    inner = node.args[0]
    if loops.builtin_call(inner, "reversed"):
        return len(inner.args) == 1 and type(inner.args[0]) is not gast.Starred
    return (
        loops.builtin_call(inner, "zip")
        and len(inner.args) == 1
        and type(inner.args[0]) is gast.Starred
    )
