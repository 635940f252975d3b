"""What the tape asks of the source analysis about the function it is running.

Under a function transform the tape promises NumPy's meaning (see
:mod:`s2sgrad.tape.in_place`), and for that it needs facts only the source tells: which
in-place updates a name sharing the array reads afterwards (the alias analysis), whether a
``match`` class pattern or a ``type(x)`` comparison would see a tape value, and which item
writes go into a plain array the function made itself. The tape is below the compiler, so
it does not import this module: this module registers these three functions with it when
imported (:func:`s2sgrad.tape.in_place.use_source_facts`).

Example::

    shared_updates_by_line(f)  # {line: why the update there is refused}
"""

from __future__ import annotations

import ast
import numbers
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.frontend import NOT_FOUND, parse_function
from s2sgrad.compiler.passes.aliases import fresh_result, shared_in_place_updates
from s2sgrad.compiler.passes.desugar import desugar_matches
from s2sgrad.compiler.passes.final_state_notes import drop_final_state_notes
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.passes.tuple_item_writes import split_tuple_item_writes
from s2sgrad.compiler.reads_after import names_unread_after_call
from s2sgrad.compiler.syntax import clone, names_written, nested_statements
from s2sgrad.compiler.written_values import one_value_check
from s2sgrad.errors import S2SGradError, UnsupportedError
from s2sgrad.running import is_own_code
from s2sgrad.runtime.core import zeros_like_value
from s2sgrad.tape.in_place import SLICE, WritesOnOneLine, use_source_facts

__all__ = [
    "shared_updates_by_line",
    "value_class_pattern",
    "plain_writes_by_line",
    "view_writes_by_line",
]

_VALUE_TYPES = (numbers.Number, np.ndarray, np.generic)


def shared_updates_by_line(function: Any) -> dict[int, str] | None:
    """``{line: why}`` for each ``x op= v`` (or item update) in ``function`` after which a
    name that may share ``x``'s memory is read (the alias analysis of
    :mod:`s2sgrad.compiler.passes.aliases`, which refuses the same code when transforming);
    None when ``function`` has no source to analyse (the tape then looks at what its frame
    holds, :func:`s2sgrad.tape.in_place.refuse_unread_sharing`).

    Example::

        shared_updates_by_line(f)  # {12: "f.py:12: 'v' is updated in place, but 'w' ..."}
    """
    try:
        parsed = parse_function(function)
    except S2SGradError:  # no source: nothing to tell by
        return None
    node = _with_matches_desugared(parsed)
    if node is parsed.node:  # not a copy: one to drop notes from
        node = clone(node)
    taken = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    split_tuple_item_writes(node.body, NameGenerator(taken))  # b[:1], b[1:] = b[1:], b[:1]
    # generated code: its notes of final states copy only plain arrays, never tape values
    drop_final_state_notes(node, parsed.resolve)
    found = shared_in_place_updates(node, parsed.location, parsed.resolve)
    return {
        parsed.line_offset + statement.lineno: found[id(statement)]
        for statement in nested_statements(node.body)
        if id(statement) in found and type(statement) in (gast.AugAssign, gast.Assign)
    }


def _with_matches_desugared(parsed: Any) -> gast.FunctionDef:
    """The function with ``match`` statements as ``if`` chains, so that updates in their
    cases are seen (statements keep their lines)."""
    node = clone(parsed.node)
    taken = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    try:
        desugar_matches(node, NameGenerator(taken), parsed.location, parsed.resolve)
    except UnsupportedError:  # a pattern it cannot rewrite: look at the rest
        return parsed.node
    return node


def value_class_pattern(function: Any) -> str:
    """Why ``function`` cannot run on tape values: a ``match`` class pattern of a number or
    array type, or a comparison of ``type(x)``; ``""`` when it has neither.

    Example::

        value_class_pattern(f)  # "f.py:3: a class pattern in a match statement would see ..."
    """
    try:
        parsed = parse_function(function)
    except S2SGradError:  # no source: nothing to tell by
        return ""
    code = getattr(function, "__code__", None)  # s2sgrad's own (sg.vmap) names classes in
    own = code is not None and is_own_code(code)  # messages: not read
    # names bound to type(...) (generated code in A-normal form: t2 = type(x); t2 is ...)
    classes = {
        node.targets[0].id
        for node in gast.walk(parsed.node)
        if isinstance(node, gast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], gast.Name)
        and _is_type_call(node.value, parsed.resolve)
    }

    def is_class(inner: gast.AST) -> bool:
        if isinstance(inner, gast.Name) and isinstance(inner.ctx, gast.Load):
            return inner.id in classes
        return _is_type_call(inner, parsed.resolve)

    for node in gast.walk(parsed.node):
        if (
            isinstance(node, gast.Compare)
            and any(  # type(x) is ..., type(x).__name__ == ...
                is_class(inner)
                for part in (node.left, *node.comparators)
                for inner in gast.walk(part)
            )
        ) or (not own and _reads_type(node, parsed.resolve)):
            return (
                f"{parsed.location(node)}: type(...) of a value being differentiated on the "
                "tape is the tape's own class, not NumPy's, so code comparing it or reading "
                "its name would take another branch than the plain program; test "
                "isinstance(...) instead (which "
                "the tape answers as NumPy would), or differentiate with mode='s2s'"
            )
        if isinstance(node, gast.MatchClass):
            cls = parsed.resolve(node.cls)
            if cls is NOT_FOUND or (isinstance(cls, type) and issubclass(cls, _VALUE_TYPES)):
                return (
                    f"{parsed.location(node)}: a class pattern in a match statement would see "
                    "the tape's value, not the number or array it stands for; differentiate "
                    "with mode='s2s' (which tests the values themselves)"
                )
    return ""


def _reads_type(node: gast.AST, resolve: Any) -> bool:
    """``type(x).__name__`` kept for later, ``table[type(x)]``, ``str(type(x))``: what the
    tape's class of a value would change as a comparison would."""
    if isinstance(node, gast.Attribute):
        return _is_type_call(node.value, resolve)
    if isinstance(node, gast.Subscript):
        return _is_type_call(node.slice, resolve)
    if isinstance(node, gast.FormattedValue):  # f"{type(x)}"
        return _is_type_call(node.value, resolve)
    if isinstance(node, gast.Call) and resolve(node.func) in (str, repr, format):
        return any(_is_type_call(argument, resolve) for argument in node.args)
    return False


def _is_type_call(node: gast.expr, resolve: Any) -> bool:
    """Whether ``node`` is ``type(value)``, the builtin with one argument."""
    return (
        isinstance(node, gast.Call)
        and len(node.args) == 1
        and not node.keywords
        and resolve(node.func) is type
    )


_PURE_INDEX = (
    gast.Name,
    gast.Constant,
    gast.Attribute,
    gast.Subscript,
    gast.Tuple,
    gast.List,
    gast.Slice,
    gast.BinOp,
    gast.UnaryOp,
    gast.Compare,
    gast.expr_context,
    gast.operator,
    gast.unaryop,
    gast.cmpop,
)


def plain_writes_by_line(function: Any) -> dict[int, Any]:
    """``{line: (name, compiled index, check) or None}`` for each ``name[index] = v`` (or
    ``name[index] += v``) in ``function``: the triple when ``name`` is a local bound once
    only, by arithmetic or a call known to return a new array, and the index has no calls
    (it is evaluated again in the running frame, with :data:`s2sgrad.tape.in_place.SLICE`
    for slices), and ``v`` may be one value: ``check`` is None when it surely is, else a
    function of the frame's ``(globals, locals)`` telling whether it is (NumPy hands the
    tape the items of a list, not ``v``; see :mod:`s2sgrad.compiler.written_values`); else
    None. For ``name += v`` the triple is ``(name, None, None)`` when ``name`` is bound once
    so, and otherwise only updated by such operators; and ``(name, None, None)`` for
    ``np.add.at(name, index, v)`` (or ``np.subtract.at``) into such a ``name``.

    Example::

        plain_writes_by_line(f)  # {5: ('Y', <code object <module>>, None)}
    """
    try:
        parsed = parse_function(function)
    except S2SGradError:
        return {}
    statements = list(nested_statements(parsed.node.body))
    made = _made_once_anew(parsed, statements)
    updated = _made_once_anew(parsed, statements, counting_updates=False)
    writes: dict[int, Any] = {}
    item_writes: dict[int, list] = {}  # line -> its item writes, while it has only those
    for statement in statements:
        line = parsed.line_offset + getattr(statement, "lineno", 0)
        added_into = _added_at_into(statement, parsed.resolve) or _written_by_call(
            statement, parsed.resolve
        )
        if added_into is not None:  # np.add.at(y, index, v): y bound again, as by y += v
            writes[line] = (
                (added_into, None, None) if added_into in made and line not in writes else None
            )
            item_writes.pop(line, None)
            continue
        if type(statement) is gast.AugAssign and type(statement.target) is gast.Name:
            name = statement.target.id  # y += v: y bound again to what += returns
            writes[line] = (name, None, None) if name in updated and line not in writes else None
            item_writes.pop(line, None)
            continue
        for target, value in _item_targets(statement):
            found = None
            if target is not None and value is not None:
                name = target.value.id if type(target.value) is gast.Name else None
                pure = all(
                    isinstance(n, _PURE_INDEX) or _pure_index_call(n, parsed.resolve)
                    for n in gast.walk(target.slice)
                )
                # y[i] = [a, b]: NumPy converts the items one by one, not the value written
                one_value = value is _UPDATED or one_value_check(value, parsed.resolve)
                fits = name in updated and pure and one_value is not False
                if fits:
                    check = None if one_value is True else one_value
                    found = (name, _compiled_index(target.slice), check)
            if line not in writes:
                writes[line] = found
                item_writes[line] = [found]
            elif line in item_writes:  # K[i, i] += k; K[j, j] += k: told apart as they run
                item_writes[line].append(found)
                writes[line] = WritesOnOneLine(item_writes[line])
            else:
                writes[line] = None
    return writes


# the value of ``y[i] += v``'s store: what the operator returns, one value
_UPDATED = gast.Constant(value=None, kind=None)


def _item_targets(statement: gast.stmt) -> list[tuple[Any, Any]]:
    """``(target, value)`` for each item store ``statement`` makes, in the order the
    bytecode stores them: ``y[i] = v`` gives ``(y[i], v)``, ``y[i] += v`` ``(y[i],
    _UPDATED)``, and ``m[t], P[t] = a, b`` one pair for each item target (its names are
    plain stores). A store whose value or target cannot be told is ``(None, None)``: the
    line's write is not followed (a value unpacked from a call's tuple, a nested or starred
    target, or a value that reads a name the statement binds).

    Example::

        _item_targets(parse_statement("m[t], P[t] = mean, var"))  # [(m[t], mean), (P[t], var)]
    """
    if type(statement) is gast.AugAssign:
        target = statement.target
        return [(target, _UPDATED)] if type(target) is gast.Subscript else []
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return []
    target, value = statement.targets[0], statement.value
    if type(target) is gast.Subscript:
        return [(target, value)]
    if type(target) not in (gast.Tuple, gast.List):
        return []
    items = [t for t in target.elts if type(t) is gast.Subscript]
    if not items:
        return []
    if any(type(t) not in (gast.Name, gast.Subscript) for t in target.elts):
        return [(None, None)]  # a nested or starred target: its stores are not counted
    bound = {t.id for t in target.elts if type(t) is gast.Name}
    values = value.elts if type(value) in (gast.Tuple, gast.List) else None
    if (
        values is None
        or len(values) != len(target.elts)
        or any(
            type(v) is gast.Starred or (type(v) is gast.Name and v.id in bound)
            for part in values
            for v in gast.walk(part)
        )
    ):
        return [(None, None)] * len(items)
    return [(t, v) for t, v in zip(target.elts, values) if type(t) is gast.Subscript]


def _added_at_into(statement: gast.stmt, resolve: Any) -> str | None:
    """``y`` for the statement ``np.add.at(y, index, v)`` (or ``np.subtract.at``), else None."""
    if type(statement) is not gast.Expr or type(statement.value) is not gast.Call:
        return None
    value = statement.value
    if type(value.func) is not gast.Attribute:
        return None
    if value.func.attr != "at" or len(value.args) != 3 or value.keywords:
        return None
    if type(value.args[0]) is not gast.Name:
        return None
    try:
        ufunc = resolve(value.func.value)
    except Exception:
        return None
    return value.args[0].id if ufunc is np.add or ufunc is np.subtract else None


def _written_by_call(statement: gast.stmt, resolve: Any) -> str | None:
    """``y`` for a statement that only writes into the local ``y`` by a NumPy call:
    ``np.exp(x, y)``, ``np.clip(x, a, b, out=y)`` (``out=(y,)`` too), ``np.copyto(y, v)``,
    ``np.putmask(y, m, v)``, ``np.put(y, i, v)``; else None."""
    if type(statement) is not gast.Expr or type(statement.value) is not gast.Call:
        return None
    call = statement.value
    try:
        function = resolve(call.func)
    except Exception:
        return None
    if getattr(function, "__module__", None) is None and not isinstance(function, np.ufunc):
        return None
    written: Any = None
    if function is np.copyto or function is np.putmask or function is np.put:
        written = call.args[0] if call.args else None
    elif isinstance(function, np.ufunc) and len(call.args) == function.nin + 1:
        written = call.args[-1]
    else:
        outs = [k.value for k in call.keywords if k.arg == "out"]
        written = outs[0] if outs else None
        if type(written) is gast.Tuple and len(written.elts) == 1:
            written = written.elts[0]
    if type(written) is not gast.Name or not _numpy_function(function):
        return None
    return written.id


def _numpy_function(function: Any) -> bool:
    module = getattr(function, "__module__", None) or ""
    return isinstance(function, np.ufunc) or module == "numpy" or module.startswith("numpy.")


def view_writes_by_line(function: Any) -> dict[int, tuple[str, bool | str]]:
    """``{line: (why, always)}`` for each item write into an array that an expression makes
    (``a.T[0] = v``, ``a[1:][0] = v``, ``a.reshape(3)[i] *= v``): on the tape such an
    expression makes a new value, so a write into it would not reach ``a``. The tape refuses
    the line ``always`` when the expression is a call or an array attribute (``.T``,
    ``.real``), else (``L[0][1] = v``, which may be an item of a list) when the array written
    into is a view of another.

    Example::

        view_writes_by_line(f)  # {7: ("f.py:7: 'a.T[...] = ...' writes into ...", True)}
    """
    try:
        parsed = parse_function(function)
    except S2SGradError:
        return {}
    found = _writes_into_iterated_views(parsed)
    for statement in nested_statements(parsed.node.body):
        if type(statement) is gast.Assign and len(statement.targets) == 1:
            target = statement.targets[0]
        elif type(statement) is gast.AugAssign:
            target = statement.target
        else:
            continue
        if type(target) is not gast.Subscript or type(target.value) is gast.Name:
            continue
        written = ast.unparse(gast.gast_to_ast(target.value))
        always = type(target.value) is gast.Call or (
            type(target.value) is gast.Attribute and target.value.attr in _VIEW_ATTRIBUTES
        )
        found[parsed.line_offset + statement.lineno] = (
            f"{parsed.location(statement)}: '{written}[...] = ...' writes into a view of "
            f"another array that the expression '{written}' makes, which the tape cannot "
            "follow back to that array; write into the array itself with one index "
            "(a[0, 1] = ..., a[:, 0] = ... instead of a[0][1] = ..., a.T[0] = ...), or "
            "differentiate with mode='s2s'",
            always,
        )
    return found


_LOOP_WRAPPERS = ("enumerate", "zip", "reversed")
ITERATED = "iterated"  # a write the tape refuses whatever the array written into is


def _writes_into_iterated_views(parsed) -> dict[int, tuple[str, bool | str]]:
    """The item writes into ``t`` inside a loop over a part of ``t`` (``for i, row in
    enumerate(t[:-1]): t[i + 1] = ...``): a later row may be one the loop wrote, and the
    loop's iterator holds a view the tape cannot see."""
    found: dict[int, tuple[str, bool | str]] = {}
    for loop in nested_statements(parsed.node.body):
        if type(loop) is not gast.For:
            continue
        sources = [loop.iter]
        header = loop.iter
        if type(header) is gast.Call and getattr(header.func, "id", None) in _LOOP_WRAPPERS:
            sources = list(header.args)
        viewed = {
            s.value.id for s in sources if type(s) is gast.Subscript and type(s.value) is gast.Name
        }
        for statement in nested_statements(loop.body) if viewed else ():
            targets = (
                statement.targets
                if type(statement) is gast.Assign
                else [statement.target]
                if type(statement) is gast.AugAssign
                else []
            )
            for target in targets:
                name = getattr(target.value, "id", None) if type(target) is gast.Subscript else None
                if name in viewed:
                    found[parsed.line_offset + statement.lineno] = (
                        f"{parsed.location(statement)}: this loop runs over a part of "
                        f"'{name}' and writes into '{name}': a later row may be one the "
                        "loop wrote, which neither engine follows; loop over range(...) "
                        f"and read {name}[i] in the body instead",
                        ITERATED,
                    )
    return found


# the ndarray attributes that are views of the array
_VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "flat"})


def _names_bound(statement: gast.stmt) -> set[str]:
    """The names ``statement`` binds in the function's scope: a comprehension's targets
    are its own (``[min(u, v) for u, v in pairs]`` leaves the function's ``u`` alone)."""
    written = names_written(statement)
    comprehensions = [n for n in gast.walk(statement) if type(n) is gast.comprehension]
    if not comprehensions:
        return written
    own = {id(n) for c in comprehensions for n in gast.walk(c.target)}
    return written & {
        n.id
        for n in gast.walk(statement)
        if type(n) is gast.Name and type(n.ctx) is gast.Store and id(n) not in own
    }


def _made_once_anew(parsed: Any, statements: list, counting_updates: bool = True) -> set[str]:
    """The local names bound only by arithmetic or calls known to return a new array
    (and, unless ``counting_updates``, updated by ``y += v`` any number of times),
    or also by swaps among such names only (``u, un = un, u``: each still holds an array
    no other name holds)."""
    counts: dict[str, int] = {}
    swaps = [names for names in map(_swapped_names, statements) if names]
    for statement in statements:
        if not counting_updates and type(statement) is gast.AugAssign:
            continue
        if _swapped_names(statement):
            continue
        for name in _names_bound(statement) if not _is_compound(statement) else ():
            counts[name] = counts.get(name, 0) + 1
        if isinstance(statement, (gast.For, gast.With, gast.Try)):  # loop targets and the like
            for name in _header_names(statement):
                counts[name] = counts.get(name, 0) + 2
    arguments = parsed.node.args
    parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    parameters += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    taken = {a.id for a in parameters if type(a) is gast.Name}
    anew: dict[str, int] = {}  # how many of a name's bindings make a new array
    handed: dict[str, set[str]] = {}  # alpha = new: the local names a name is given
    swapping = {id(e) for s in statements if _swapped_names(s) for e in s.targets[0].elts}
    for target, value in _name_bindings(statements):
        if target.id in taken:
            continue
        if type(value) in (gast.BinOp, gast.UnaryOp) or (  # arithmetic makes a new array
            type(value) is gast.Call
            and (_makes_new(parsed.resolve(value.func), value) or _is_copy_method(value))
        ):
            anew[target.id] = anew.get(target.id, 0) + 1
        elif type(value) is gast.Name and value.id in counts and id(target) not in swapping:
            anew[target.id] = anew.get(target.id, 0) + 1
            handed.setdefault(target.id, set()).add(value.id)
    # every binding makes a new array (K = np.zeros(n); ...; K = K + eps * np.eye(n)), or
    # hands on the array of a name that is so (alpha = new, the step of a recursion): the
    # name holds an array the function made, whichever binding ran last (whether another
    # name sharing it is read after a write is the alias analysis's to refuse)
    made = {name for name, count in anew.items() if counts.get(name) == count}
    while any(not sources <= made for name, sources in handed.items() if name in made):
        made -= {name for name, sources in handed.items() if not sources <= made}
    while any(not names <= made for names in swaps if names & made):
        for names in swaps:
            if not names <= made:
                made -= names
    return made


def _name_bindings(statements: list):
    """``(name, value)`` for each name an assignment binds to a value of its own: ``y =
    e``, and each name of ``a, b = e1, e2`` (a tuple of as many names as values)."""
    for statement in statements:
        if type(statement) is not gast.Assign or len(statement.targets) != 1:
            continue
        target, value = statement.targets[0], statement.value
        if type(target) is gast.Name:
            yield target, value
        elif (
            type(target) is gast.Tuple
            and type(value) is gast.Tuple
            and len(target.elts) == len(value.elts)
            and all(type(e) is gast.Name for e in target.elts)
        ):
            yield from zip(target.elts, value.elts)


def _swapped_names(statement: gast.stmt) -> set[str]:
    """The names ``u, un = un, u`` (distinct names given one another's values) binds; empty
    for any other statement."""
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return set()
    target, value = statement.targets[0], statement.value
    if type(target) is not gast.Tuple or type(value) is not gast.Tuple:
        return set()
    if not all(type(e) is gast.Name for e in (*target.elts, *value.elts)):
        return set()
    bound, read = [e.id for e in target.elts], [e.id for e in value.elts]
    if len(set(bound)) != len(bound) or sorted(bound) != sorted(read):
        return set()
    return set(bound)


def _makes_new(function: Any, call: gast.Call) -> bool:
    """Whether ``call`` of ``function`` returns a new array: a fresh NumPy result, or the
    zeros a derivative's code starts a cotangent from (``dseq = zeros_like_value(seq)``,
    written entry by entry in a loop's backward sweep). While a tape records, ``np.full``,
    ``np.array``, ``np.concatenate`` ... are stand-ins that equal the function they wrap
    (``tape/conversions.py``), read here as that function."""
    stood_for = getattr(function, "__wrapped__", None)
    if stood_for is not None and function == stood_for:  # not a decorator's wrapper
        function = stood_for
    return function is zeros_like_value or fresh_result(function, call)


def _is_copy_method(call: gast.Call) -> bool:
    """``x.copy()``: an array's copy is a new array."""
    func = call.func
    return type(func) is gast.Attribute and func.attr == "copy" and not call.args + call.keywords


def _is_compound(statement: gast.stmt) -> bool:
    return isinstance(statement, (gast.For, gast.While, gast.If, gast.With, gast.Try))


def _header_names(statement: gast.stmt) -> set[str]:
    if isinstance(statement, gast.For):
        return names_written(statement.target)
    found: set[str] = set()
    for item in getattr(statement, "items", ()):
        if item.optional_vars is not None:
            found |= names_written(item.optional_vars)
    for handler in getattr(statement, "handlers", ()):
        if handler.name is not None:
            found |= names_written(handler.name)
    return found


class _SlicesAsCalls(ast.NodeTransformer):
    def visit_Slice(self, node: ast.Slice) -> ast.Call:
        self.generic_visit(node)
        parts = [
            p if p is not None else ast.Constant(None) for p in (node.lower, node.upper, node.step)
        ]
        return ast.Call(ast.Name(SLICE, ast.Load()), parts, [])


_PURE_BUILTINS = frozenset({range, len, slice, int, min, max, abs, tuple, list})


def _pure_index_call(node: Any, resolve: Any) -> bool:
    """Whether ``node`` is a call that may run again with the same result and no effect (a
    keyword of one too): a NumPy function but a random one, or ``range``, ``len`` and the
    like (``L[np.tril_indices(d)] = v``, ``out[np.arange(n), y] = v``)."""
    if isinstance(node, gast.keyword):
        return True
    if not isinstance(node, gast.Call):
        return False
    target = resolve(node.func)
    if target is NOT_FOUND:
        return False
    if isinstance(target, np.ufunc):
        return True
    try:
        if target in _PURE_BUILTINS:
            return True
    except TypeError:  # not hashable
        return False
    module = getattr(target, "__module__", None) or ""
    return module.split(".")[0] == "numpy" and "random" not in module


def _compiled_index(index: gast.expr) -> Any:
    """Code that evaluates an index expression (``i:i + h, j``) in the user's frame."""
    expression = _SlicesAsCalls().visit(gast.gast_to_ast(index))
    tree = ast.fix_missing_locations(ast.Expression(expression))
    return compile(tree, "<s2sgrad index>", "eval")


use_source_facts(
    shared_updates=shared_updates_by_line,
    class_pattern=value_class_pattern,
    plain_writes=plain_writes_by_line,
    view_writes=view_writes_by_line,
    unread_after_call=names_unread_after_call,
)
