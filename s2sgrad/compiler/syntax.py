"""Small builders and queries for gast syntax trees, shared by every pass."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from typing import Any

import gast

from s2sgrad.compiler.node_kinds import kinds_of, names_in, of_kind

__all__ = [
    "call_bound_to_a_name",
    "is_integer_arithmetic",
    "arguments",
    "store_param",
    "item_target_base",
    "parameter_names",
    "replace_node",
    "load",
    "store",
    "constant",
    "assign",
    "call",
    "attribute",
    "parse_expression",
    "clone",
    "clone_rewriting",
    "child_fields",
    "node_fields",
    "located",
    "names_read",
    "names_used",
    "every_statement",
    "walk",
    "names_written",
    "names_written_by_walk",
    "names_read_in_all",
    "names_written_in_all",
    "names_modified",
    "nested_statements",
    "method_receiver",
    "string_statement",
    "is_atom",
    "literal_keys",
    "COMMENT_MARK",
    "comment",
    "add_rule_names",
    "drop_rule_names",
    "RULES_MARK",
    "SCOPES",
    "COMPREHENSIONS",
]

COMMENT_MARK = "__s2sgrad_comment__:"

# the function each operator node applies
BINARY_OPERATORS = {
    gast.Add: operator.add,
    gast.Sub: operator.sub,
    gast.Mult: operator.mul,
    gast.Div: operator.truediv,
    gast.FloorDiv: operator.floordiv,
    gast.Mod: operator.mod,
    gast.Pow: operator.pow,
    gast.MatMult: operator.matmul,
    gast.BitAnd: operator.and_,
    gast.BitOr: operator.or_,
    gast.BitXor: operator.xor,
    gast.LShift: operator.lshift,
    gast.RShift: operator.rshift,
}
UNARY_OPERATORS: dict[Any, Callable[[Any], Any]] = {
    gast.USub: operator.neg,
    gast.UAdd: operator.pos,
    gast.Not: operator.not_,
    gast.Invert: operator.invert,
}
COMPARISON_OPERATORS = {
    gast.Eq: operator.eq,
    gast.NotEq: operator.ne,
    gast.Lt: operator.lt,
    gast.LtE: operator.le,
    gast.Gt: operator.gt,
    gast.GtE: operator.ge,
    gast.Is: operator.is_,
    gast.IsNot: operator.is_not,
    gast.In: lambda a, b: a in b,
    gast.NotIn: lambda a, b: a not in b,
}

# methods of lists, dicts and arrays that change the object they are called on
MUTATING_METHODS = {
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "reverse",
    "update",
    "setdefault",
    "popitem",
    "sort",
    "fill",
    "put",
    "resize",
    "itemset",
    "partition",
    "setflags",
    "add",
    "discard",
}


# the builders below fill a new node's fields as gast's constructor would (the same
# attributes, in the same order), without its generic loop over arguments: passes make
# tens of thousands of names and assignments


def load(name: str) -> gast.Name:
    node = _new(gast.Name)
    node.__dict__ = {"id": name, "ctx": _LOAD, "annotation": None, "type_comment": None}
    return node


def store(name: str) -> gast.Name:
    node = _new(gast.Name)
    node.__dict__ = {"id": name, "ctx": _STORE, "annotation": None, "type_comment": None}
    return node


_LOAD, _STORE = gast.Load(), gast.Store()  # contexts carry nothing: one of each serves all
_new = gast.AST.__new__


def constant(value) -> gast.Constant:
    node = _new(gast.Constant)
    node.__dict__ = {"value": value, "kind": None}
    return node


def assign(target: str | gast.expr, value: gast.expr, like: gast.AST | None = None) -> gast.Assign:
    """``target = value``, carrying ``like``'s line number when given."""
    target_node = store(target) if isinstance(target, str) else target
    node = _new(gast.Assign)
    node.__dict__ = {"targets": [target_node], "value": value, "type_comment": None}
    return located(node, like) if like is not None else node


def call_bound_to_a_name(statement: gast.stmt) -> gast.Call | None:
    """The call of ``name = f(...)`` (one name, one call), or None for any other statement.

    Example::

        call_bound_to_a_name(parse("d = np.zeros(3)").body[0])  # the Call node
    """
    if (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
        and type(statement.value) is gast.Call
    ):
        return statement.value
    return None


def call(function: gast.expr | str, args: Iterable[gast.expr] = (), keywords=None) -> gast.Call:
    function_node = parse_expression(function) if isinstance(function, str) else function
    node = _new(gast.Call)
    node.__dict__ = {
        "func": function_node,
        "args": list(args),
        "keywords": [gast.keyword(arg=k, value=v) for k, v in keywords.items()] if keywords else [],
    }
    return node


def attribute(value: gast.expr, name: str) -> gast.Attribute:
    return gast.Attribute(value=value, attr=name, ctx=gast.Load())


def parse_expression(text: str) -> gast.expr:
    return gast.parse(text, mode="eval").body


def clone(node):
    """A deep copy of a syntax tree (much faster than ``copy.deepcopy``).

    Extra attributes passes attach to nodes are copied along (lists and nodes deeply).
    Expression contexts (``Load``, ``Store``) carry nothing and are shared.
    """
    if type(node) is list:
        return [clone(item) for item in node]
    if not isinstance(node, gast.AST) or type(node) in _CONTEXTS:
        return node
    return _copy_plain(node)


def clone_rewriting(
    node: gast.AST, replace: Callable[[gast.AST], gast.AST], kinds: tuple[type, ...] = ()
) -> gast.AST:
    """A deep copy of ``node`` in which ``replace`` rewrites each copied node.

    ``replace(copy)`` sees every node outside nested functions (only those of the given
    ``kinds``, if any) after its children, and returns the node to use instead (or the
    copy itself).

    Example::

        clone_rewriting(tree, lambda n: constant(1), kinds=(gast.Name,))
    """
    return _copy(node, replace, False, node, frozenset(kinds))


def _copy(node, replace, nested, root=None, kinds=frozenset()):
    kind = type(node)
    new = kind.__new__(kind)
    state = new.__dict__ = node.__dict__.copy()  # names, literals, operators: shared
    if replace is not None and not nested and kind in SCOPES and node is not root:
        nested = True
    fields = _OPERATOR_FREE.get(kind)
    if fields is None:
        fields = node_fields(kind)
    for field in fields:
        value = state.get(field)
        if type(value) is list:
            state[field] = [
                _copy(item, replace, nested, root, kinds) if isinstance(item, gast.AST) else item
                for item in value
            ]
        elif isinstance(value, gast.AST):
            state[field] = _copy(value, replace, nested, root, kinds)
    if len(state) > _PLAIN_SIZE.get(kind, 0):  # attributes a pass attached: copied as well
        _copy_attached(state, kind)
    if replace is None or nested or (kinds and kind not in kinds):
        return new
    return replace(new)


def _copy_plain(node):
    # _copy without a rewrite: the copy of every node, one argument to pass down
    kind = type(node)
    new = _new(kind)
    state = new.__dict__ = node.__dict__.copy()
    if kind not in _CHILDLESS:
        fields = _OPERATOR_FREE.get(kind)
        if fields is None:
            fields = node_fields(kind)
        for field in fields:
            value = state.get(field)
            if type(value) is list:
                state[field] = [
                    _copy_plain(item) if isinstance(item, gast.AST) else item for item in value
                ]
            elif isinstance(value, gast.AST):
                state[field] = _copy_plain(value)
    if len(state) > _PLAIN_SIZE.get(kind, 0):  # attributes a pass attached: copied as well
        _copy_attached(state, kind)
    return new


def _copy_attached(state: dict, kind: Any) -> None:
    if kind not in _PLAIN_SIZE:
        _PLAIN_SIZE[kind] = len(kind._fields) + len(kind._attributes)
        if len(state) <= _PLAIN_SIZE[kind]:
            return
    plain = _PLAIN_KEYS.get(kind)
    if plain is None:
        plain = _PLAIN_KEYS[kind] = frozenset(kind._fields) | frozenset(kind._attributes)
    for key, value in state.items():
        if key not in plain and isinstance(value, (list, gast.AST)):
            state[key] = clone(value)


_PLAIN_SIZE: dict[type, int] = {}
_PLAIN_KEYS: dict[type, frozenset] = {}
_CONTEXTS = frozenset({gast.Load, gast.Store, gast.Del})


def located(new: gast.AST, old: gast.AST | None) -> gast.AST:
    """``new``, placed at ``old``'s location: it and the statements inside it that have no
    location get ``old``'s; expressions without one take their statement's when the code
    is compiled (:mod:`s2sgrad.compiler.python_ast`)."""
    if old is None or getattr(old, "lineno", None) is None:
        return new
    place = {
        "lineno": old.lineno,
        "col_offset": getattr(old, "col_offset", 0),
        "end_lineno": getattr(old, "end_lineno", old.lineno),
        "end_col_offset": getattr(old, "end_col_offset", 0),
    }
    state = new.__dict__
    if state.get("lineno") is None and "lineno" in new._attributes:
        state.update(place)
    if "body" not in state and "orelse" not in state and "finalbody" not in state:
        return new  # no block inside (most statements): nothing more to place
    pending = [new]
    while pending:
        node = pending.pop()
        if node.__dict__.get("lineno") is None and "lineno" in node._attributes:
            node.__dict__.update(place)
        for field in ("body", "orelse", "finalbody"):
            inner = node.__dict__.get(field)
            if type(inner) is list:
                pending += [item for item in inner if isinstance(item, gast.stmt)]
    return new


def walk(node: gast.AST) -> list[gast.AST]:
    """Every node below ``node`` and itself, in no particular order (a faster ``gast.walk``).

    Expression contexts (``Load``/``Store``) are not included: no pass needs them as nodes.
    """
    return _nodes(node, True, False)


def _nodes(node: gast.AST, into_functions: bool, skip_operators: bool) -> list[gast.AST]:
    # each node is listed as it is found (not as it is visited): one step less per node;
    # a node that cannot hold another (a literal, an operator, a name without annotation)
    # is listed but not visited, which changes neither the list nor its order
    found: list[gast.AST] = [node]
    stack = [node]
    pop, push, add = stack.pop, stack.append, found.append
    plans = _OPERATOR_FREE if skip_operators else _NODE_FIELDS
    skipped, childless, name = _SKIPPED, _CHILDLESS, gast.Name
    while stack:
        current = pop()
        kind = type(current)
        if not into_functions and kind in SCOPES and current is not node:
            continue
        fields = plans.get(kind)
        if fields is None:
            fields = _node_fields(kind, skip_operators)
        state = current.__dict__
        for field in fields:
            value = state.get(field)
            kind = type(value)
            if kind is list:
                for item in value:
                    kind = type(item)
                    if kind in skipped:
                        continue
                    add(item)
                    if kind is name:
                        if item.__dict__.get("annotation") is not None:
                            push(item)
                    elif kind not in childless:
                        push(item)
            elif kind not in skipped:
                add(value)
                if kind is name:
                    if value.__dict__.get("annotation") is not None:
                        push(value)
                elif kind not in childless:
                    push(value)
    return found


SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)
_LEAVES = frozenset({str, int, float, complex, bytes, bool, type(Ellipsis), *_CONTEXTS})
_SKIPPED = _LEAVES | {type(None)}
_FIELDS: dict[type, tuple[str, ...]] = {}
_NODE_FIELDS: dict[type, tuple[str, ...]] = {}
_OPERATOR_FREE: dict[type, tuple[str, ...]] = {}
_CHILDLESS: set[type] = set()  # node classes no field of which holds a node (filled as met)
_SCALAR_FIELDS = {  # fields that hold names or literals, never nodes
    gast.Name: {"id"},
    gast.Attribute: {"attr"},
    gast.FunctionDef: {"name"},
    gast.AsyncFunctionDef: {"name"},
    gast.ClassDef: {"name"},
    gast.keyword: {"arg"},
    gast.alias: {"name", "asname"},
    gast.ImportFrom: {"module", "level"},
    gast.Global: {"names"},
    gast.Nonlocal: {"names"},
    gast.Constant: {"value"},
    gast.comprehension: {"is_async"},
    gast.FormattedValue: {"conversion"},
}


def child_fields(kind: Any) -> tuple[str, ...]:
    """The fields of a node class that hold child nodes, in the order walkers visit them."""
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(
            f for f in kind._fields if f not in ("ctx", "type_comment", "kind")
        )
    return fields


def node_fields(kind: type) -> tuple[str, ...]:
    """The fields of ``kind`` that can hold nodes other than operators (none for non-nodes).

    Operators (``Add``, ``USub``, ``Eq`` …) are never changed in place and hold no names,
    so walkers that look for names skip them.
    """
    fields = _OPERATOR_FREE.get(kind)
    return _node_fields(kind, skip_operators=True) if fields is None else fields


def _node_fields(kind: type, skip_operators: bool) -> tuple[str, ...]:
    if not issubclass(kind, gast.AST):
        _NODE_FIELDS[kind] = _OPERATOR_FREE[kind] = ()
        return ()
    scalar = _SCALAR_FIELDS.get(kind, set())
    fields = tuple(f for f in child_fields(kind) if f not in scalar)
    _NODE_FIELDS[kind] = fields
    _OPERATOR_FREE[kind] = tuple(f for f in fields if f not in ("op", "ops"))
    if not fields:
        _CHILDLESS.add(kind)
    return _OPERATOR_FREE[kind] if skip_operators else fields


def names_read(node: gast.AST) -> set[str]:
    """Names loaded anywhere inside ``node``."""
    if type(node) is gast.Assign:  # name = value of atoms (most statements): no walk
        plain = plain_binding(node)
        if plain is not None:
            return set(plain[1])
    return _names_of([node], gast.Load)


def names_written(node: gast.AST) -> set[str]:
    """Names stored anywhere inside ``node`` (not descending into nested functions)."""
    if type(node) is gast.Assign:  # name = value of atoms (most statements): no walk
        plain = plain_binding(node)
        if plain is not None:
            return {plain[0]}
    return _names_of([node], gast.Store)


def plain_binding(statement: gast.Assign) -> tuple[str, list[str]] | None:
    """``(name, the names the value reads)`` when ``statement`` is ``name = value`` and
    ``value`` a name, a literal, or an operator or a call applied to names and literals
    (called by a name or a name's attribute): nothing in such a value stores a name; else
    None. The answer of a walk, without one.

    Example::

        plain_binding(parse_statement("y = np.sin(x)"))  # ('y', ['np', 'x'])
    """
    targets = statement.targets
    if len(targets) != 1:
        return None
    target = targets[0]
    if type(target) is not _NAME or type(target.ctx) is not _STORING or target.annotation:
        return None
    value = statement.value
    kind = type(value)
    parts: Any
    if kind is _BINOP:
        parts = (value.left, value.right)
    elif kind is _CALL:
        func = value.func
        if type(func) is _ATTRIBUTE:
            func = func.value
        if type(func) is not _NAME:
            return None
        parts = [func, *value.args]
        if value.keywords:
            parts += [keyword.value for keyword in value.keywords]
    elif kind is _NAME or kind is _CONSTANT:
        parts = (value,)
    elif kind is _UNARYOP:
        parts = (value.operand,)
    else:
        return None
    reads = []
    for part in parts:
        kind = type(part)
        if kind is _NAME:
            if type(part.ctx) is not _LOADING or part.annotation:
                return None
            reads.append(part.id)
        elif kind is not _CONSTANT:
            return None
    return target.id, reads


_NAME, _CONSTANT, _ATTRIBUTE, _CALL = gast.Name, gast.Constant, gast.Attribute, gast.Call
_BINOP, _UNARYOP, _LOADING, _STORING = gast.BinOp, gast.UnaryOp, gast.Load, gast.Store


def names_written_by_walk(
    node: gast.FunctionDef, nodes: list[gast.AST], kinds: set[type] | None = None
) -> set[str]:
    """``names_written(node)``, read off ``nodes`` (``walk(node)``, which the caller has)
    when ``node`` defines no function, lambda nor class inside (whose bodies
    ``names_written`` does not enter); else found by walking ``node`` again. ``kinds``:
    ``kinds_of(nodes)``, when the caller has it.

    Example::

        names_written_by_walk(function, walk(function)) == names_written(function)  # True
    """
    kinds = kinds_of(nodes) if kinds is None else kinds
    if not kinds.isdisjoint(_INNER_SCOPES) or any(
        n is not node for n in of_kind(nodes, gast.FunctionDef)
    ):
        return names_written(node)
    return names_in(nodes, gast.Name, gast.Store) | {node.name}


_INNER_SCOPES = (gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)  # and inner defs


def names_used(node: gast.AST) -> set[str]:
    """Every name anywhere inside ``node``, read, written or a parameter (nested functions
    included): what a generated module's namespace must hold of its free names.

    Example::

        names_used(gast.parse("y = f(x)"))  # {'y', 'f', 'x'}
    """
    return _names_of([node], None)


def names_read_in_all(statements: list[gast.stmt]) -> set[str]:
    """``set().union(*map(names_read, statements))``, in one walk.

    Example::

        names_read_in_all(function.body)  # every name the body reads
    """
    return _names_of(statements, gast.Load)


def names_written_in_all(statements: list[gast.stmt]) -> set[str]:
    """``set().union(*map(names_written, statements))``, in one walk (a function
    definition among ``statements`` is entered, as ``names_written`` of it does).

    Example::

        names_written_in_all(function.body)  # every name the body binds
    """
    return _names_of(statements, gast.Store)


def _names_of(roots: list, context: type | None) -> set[str]:
    """The names of ``context`` (Load: everywhere; Store: not inside nested functions, and
    the names of the functions and classes defined; None: all, everywhere) in one walk
    that does not list nodes: names_read and names_written run once or more per statement
    in most passes. Each of ``roots`` is asked as if alone (its own definition entered)."""
    found: set[str] = set()
    add = found.add
    root_ids: set[int] | None = None
    stack = list(roots)
    pop, push, extend = stack.pop, stack.append, stack.extend
    plans = _OPERATOR_FREE
    name, constant = gast.Name, gast.Constant
    skipped = _SKIPPED
    writes = context is gast.Store
    while stack:
        current = pop()
        kind = type(current)
        if kind is name:
            if context is None or type(current.ctx) is context:
                add(current.id)
            if current.annotation is not None:
                push(current.annotation)
            continue
        if kind is constant or kind in skipped:  # lists are pushed whole: None, literals
            continue
        if writes and kind in SCOPES:
            if kind is not gast.AsyncFunctionDef and kind is not gast.Lambda:
                add(current.name)
            if root_ids is None:  # a definition: entered only as one of the roots
                root_ids = {id(root) for root in roots}
            if id(current) not in root_ids:
                continue
        fields = plans.get(kind)
        if fields is None:
            fields = _node_fields(kind, True)
        state = current.__dict__
        for field in fields:
            value = state.get(field)
            if type(value) is list:
                extend(value)
            elif value is not None:
                push(value)
    return found


def names_modified(node: gast.AST) -> set[str]:
    """Names a statement rebinds or changes in place (``y[i] = v``, ``items.append(v)``)."""
    if type(node) is gast.Assign:  # name = value of atoms: no walk
        plain = plain_binding(node)
        if plain is not None:
            return {plain[0]} | _receiver_changed(node.value)
    return names_written(node) | _changed_bases(node)


def names_changed_in_place(node: gast.AST) -> set[str]:
    """``names_modified(node) - names_written(node)``: the names a statement changes in
    place and does not rebind (``y[i] = v``, ``items.append(v)``), without the walk for
    the names it writes where it changes none in place.

    Example::

        names_changed_in_place(parse_statement("y[i] = v"))  # {'y'}
    """
    if type(node) is gast.Assign:  # name = value of atoms: no walk
        plain = plain_binding(node)
        if plain is not None:
            return _receiver_changed(node.value) - {plain[0]}
    found = _changed_bases(node)
    if found:
        found -= names_written(node)
    return found


def _receiver_changed(value: gast.expr) -> set[str]:
    """``{name}`` when ``value`` is the call ``name.method(...)`` of a mutating method
    (``items.pop()``), else nothing."""
    func: Any = getattr(value, "func", None)
    if (
        type(func) is gast.Attribute
        and type(func.value) is gast.Name
        and func.attr in MUTATING_METHODS
    ):
        return {func.value.id}
    return set()


def _changed_bases(node: gast.AST) -> set[str]:
    """The bases of the items and attributes ``node`` stores into, and the receivers of
    the mutating methods it calls."""
    found: set[str] = set()
    for child in _nodes(node, True, True):
        kind = type(child)
        if kind in (gast.Subscript, gast.Attribute) and type(child.ctx) is gast.Store:
            base = child.value
            while isinstance(base, (gast.Subscript, gast.Attribute)):
                base = base.value
            if isinstance(base, gast.Name):
                found.add(base.id)
        elif (
            kind is gast.Call
            and isinstance(child.func, gast.Attribute)
            and isinstance(child.func.value, gast.Name)
            and child.func.attr in MUTATING_METHODS
        ):
            found.add(child.func.value.id)
    return found


def nested_statements(body: list[gast.stmt]):
    """Every statement of ``body`` and of the blocks nested in it, not entering functions."""
    # a stack of iterators, not nested generators: each statement is handed up once, not
    # once per block around it (90 nested ifs made that quadratic)
    stack = [iter(body)]
    blocks_of = _STATEMENT_BLOCKS
    while stack:
        for statement in stack[-1]:
            yield statement
            kind = type(statement)
            fields = blocks_of.get(kind)
            if fields is None:
                fields = _statement_blocks(kind)
            if not fields:
                continue
            if fields is _CASES:  # a match, read before desugaring (a callee's source)
                blocks = [case.body for case in statement.cases]
            else:
                blocks = []
                for field in fields:
                    inner = getattr(statement, field, None)
                    if isinstance(inner, list):
                        blocks.append(inner)
            if blocks:
                stack.extend(iter(block) for block in reversed(blocks))
                break  # the blocks' statements come next, then this iterator's again
        else:
            stack.pop()


# statement class -> the fields nested_statements looks into (_CASES for match)
_STATEMENT_BLOCKS: dict[type, tuple[str, ...]] = {}
_CASES = ("cases",)


def _statement_blocks(kind: type) -> tuple[str, ...]:
    if issubclass(kind, (gast.FunctionDef, gast.ClassDef)):
        fields: tuple[str, ...] = ()
    elif issubclass(kind, gast.Match):
        fields = _CASES
    else:
        present = getattr(kind, "_fields", ())
        fields = tuple(f for f in ("body", "orelse", "finalbody") if f in present)
    _STATEMENT_BLOCKS[kind] = fields
    return fields


def item_target_base(statement: gast.stmt) -> str | None:
    """``name`` when ``statement`` is the item assignment ``name[index] = value``."""
    if type(statement) is gast.Assign and type(statement.targets[0]) is gast.Subscript:
        base = statement.targets[0].value
        return base.id if type(base) is gast.Name else None
    return None


def parameter_names(function: gast.FunctionDef | gast.Lambda, starred: bool = True) -> set[str]:
    """Every name a function's parameters bind, ``*args`` and ``**kwargs`` included unless
    ``starred`` is false (then: the parameters a caller fills by name or position, whose
    values come from outside; ``args`` of ``*args`` is a tuple made at each call).

    Example::

        parameter_names(parse_expression("lambda a, *rest, b=1, **options: 0"))
        # {"a", "rest", "b", "options"}
        parameter_names(parse_expression("lambda a, *rest, b=1, **options: 0"), starred=False)
        # {"a", "b"}
    """
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    if starred:
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return {a.id for a in every if type(a) is gast.Name}


_INTEGER_OPERATORS = (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)


def is_integer_arithmetic(node: gast.AST, integers: set[str]) -> bool:
    """Whether ``node`` is integer arithmetic (``+ - * // %``, a sign) of integer literals
    and of names in ``integers``: an integer when those hold integers.

    Example::

        is_integer_arithmetic(gast.parse("t + 1").body[0].value, {"t"})  # True
    """
    kind = type(node)
    if kind is gast.Constant:
        return type(node.value) is int
    if kind is gast.Name:
        return node.id in integers
    if kind is gast.UnaryOp and type(node.op) in (gast.USub, gast.UAdd):
        return is_integer_arithmetic(node.operand, integers)
    if kind is gast.BinOp and type(node.op) in _INTEGER_OPERATORS:
        return all(is_integer_arithmetic(side, integers) for side in (node.left, node.right))
    return False


def method_receiver(value: gast.AST, method: str) -> str | None:
    """``name`` when ``value`` is the call ``name.method(...)``, else None."""
    if (
        isinstance(value, gast.Call)
        and isinstance(value.func, gast.Attribute)
        and value.func.attr == method
        and isinstance(value.func.value, gast.Name)
    ):
        return value.func.value.id
    return None


def string_statement(statement: gast.stmt) -> str | None:
    """The text of a bare string statement (how comments and markers travel), else None."""
    if (
        isinstance(statement, gast.Expr)
        and isinstance(statement.value, gast.Constant)
        and isinstance(statement.value.value, str)
    ):
        return statement.value.value
    return None


def literal_keys(node: gast.Dict) -> bool:
    """Whether the keys of a dict literal are distinct literals (no ``**other``).

    Example::

        literal_keys(parse_expression("{'w': w, 'b': b}"))  # True
    """
    if not all(isinstance(k, gast.Constant) for k in node.keys):
        return False
    return len({k.value for k in node.keys}) == len(node.keys)


def is_atom(node: gast.AST) -> bool:
    """A name or a literal: what A-normal form allows as an operand."""
    if isinstance(node, (gast.Name, gast.Constant)):
        return True
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return isinstance(node.operand, gast.Constant)
    return False


def comment(text: str) -> gast.Expr:
    """A statement that codegen prints as ``# text``."""
    return gast.Expr(value=constant(COMMENT_MARK + text))


#: separates a ``# grad of:`` comment from the rules it names; optimised code drops them
RULES_MARK = "    rules: "


def add_rule_names(statement: gast.Expr, rules: list[str]) -> None:
    """Name ``rules`` in the comment ``statement`` (once each, in order).

    Example::

        add_rule_names(comment("grad of: y = np.sin(x)"), ["_sin in s2sgrad.rules.elementwise"])
    """
    text, _, named = statement.value.value.partition(RULES_MARK)
    known = named.split("; ") if named else []
    known += [r for r in rules if r not in known]
    statement.value.value = text + RULES_MARK + "; ".join(known)


def drop_rule_names(statements: list[gast.stmt]) -> None:
    """Drop the rule names of every ``# grad of:`` comment in ``statements`` (nested blocks
    too), in place: optimised code keeps the comment's first part only.

    Example::

        drop_rule_names(body)  # "# grad of: y = f(x)    rules: _f in m" → "# grad of: y = f(x)"
    """
    for statement in every_statement(statements):  # comments are statements
        if type(statement) is gast.Expr and type(statement.value) is gast.Constant:
            text = statement.value.value
            if isinstance(text, str) and RULES_MARK in text and text.startswith(COMMENT_MARK):
                shortened = _new(gast.Constant)  # not changed: a literal may be shared
                shortened.__dict__ = {
                    **statement.value.__dict__,
                    "value": text.partition(RULES_MARK)[0],
                }
                statement.value = shortened


def every_statement(statements: list[gast.stmt]) -> list[gast.stmt]:
    """Every statement of ``statements`` and of every block inside them, the bodies of
    functions, classes, ``except`` clauses and ``case``s included, in no particular order:
    what a walk of every node finds of the statements, without visiting expressions.

    Example::

        [type(s).__name__ for s in every_statement(parse("if a:\\n    b = 1").body)]
        # ['If', 'Assign']
    """
    found: list[gast.stmt] = []
    pending = list(statements)
    while pending:
        statement = pending.pop()
        state = statement.__dict__
        if type(statement) not in _CLAUSES:
            found.append(statement)
        for field in _BLOCK_FIELDS:
            inner = state.get(field)
            if type(inner) is list:
                pending += inner
    return found


_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
_CLAUSES = frozenset({gast.ExceptHandler, gast.match_case})


def arguments(names: list[str]) -> gast.arguments:
    """Plain positional parameters ``names`` (a backward function's ``saved, g``)."""
    return gast.arguments(
        args=[store_param(n) for n in names],
        posonlyargs=[],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=[],
    )


def store_param(name: str) -> gast.Name:
    """A parameter named ``name``."""
    return gast.Name(id=name, ctx=gast.Param(), annotation=None, type_comment=None)


def replace_node(root: gast.AST, old: gast.AST, new: gast.AST) -> None:
    """Put ``new`` in the place of the node ``old`` inside ``root`` (its first place).

    Example::

        replace_node(statement, call_node, load("helped"))
    """
    for node in walk(root):
        for field, value in gast.iter_fields(node):
            if value is old:
                setattr(node, field, new)
                return
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if item is old:
                        value[index] = new
                        return
