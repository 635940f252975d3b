"""From a user function to a compiled derivative: the source-transformation pipeline.

``derivative(f, wrt, kind)`` parses ``f``, refuses what it does not differentiate
(``checks``), normalises it (``passes/``: desugaring, loops, jumps, A-normal form,
renaming), analyses activity, builds the sweeps (``reverse``, or ``forward`` for a JVP),
assembles them (``assemble``) and compiles the result (``codegen``), which is finished
(``finishing``: optimised, and specialised to the shapes of each call) when it is first
needed. Results are kept in the one cache (``cache``), per function and options.

* ``grad``: ``df(*args) -> gradients`` (flat: forward sweep, then backward sweep);
* ``value_and_grad``: ``df(*args) -> (value, gradients)``;
* ``vjp``: ``f_vjp(*args) -> (value, saved)``, and ``f_vjp.backward(saved, g)`` returning
  the raw cotangents; this is what calls between user functions use;
* ``jvp``: ``f_jvp(*args, **tangents) -> (value, tangent)``.

Example::

    print(derivative(f, ("x",)).source)
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import inspect
import operator
import threading
import types
from dataclasses import dataclass
from typing import Any

import gast

from s2sgrad import runtime
from s2sgrad.compiler.argument_updates import copy_updated_arguments
from s2sgrad.compiler.assemble import (
    assemble,
    entry_tangents,
    signature_with_defaults,
    wrt_base,
)
from s2sgrad.compiler.cache import CACHE as _cache
from s2sgrad.compiler.called_rules import rule_stand_in
from s2sgrad.compiler.caller_dict_entries import name_caller_dict_entries
from s2sgrad.compiler.checks import (
    check_no_outer_writes,
    check_signature,
    first_yield,
    refuse_foreign_array,
)
from s2sgrad.compiler.codegen import (
    GeneratedFunction,
    compile_function,
    generated_of,
    unique_name,
)
from s2sgrad.compiler.complex_values import complex_readiness, with_callees
from s2sgrad.compiler.custom import build_custom, build_custom_jvp, positions
from s2sgrad.compiler.finishing import Finishing, finish, specialised, without_garbage_collection
from s2sgrad.compiler.forward import forward_sweep
from s2sgrad.compiler.free_names import attribute_entries, depending, free_name_entries
from s2sgrad.compiler.frontend import NOT_FOUND, ParsedFunction, parse_function
from s2sgrad.compiler.in_place_writes import refuse_untracked_writes
from s2sgrad.compiler.inline import Namespace
from s2sgrad.compiler.mode_sharing import built_for_the_other_mode
from s2sgrad.compiler.node_kinds import kinds_of, of_kind
from s2sgrad.compiler.operations import OperationKind, classify, is_text
from s2sgrad.compiler.passes.activity import analyse_activity
from s2sgrad.compiler.passes.anf import (
    AssignmentTable,
    assignment_table,
    is_function_reference,
    join_sequences,
    repeated_sequences,
    to_anf,
)
from s2sgrad.compiler.passes.aux_returns import pair_the_joined_return, split_aux_returns
from s2sgrad.compiler.passes.checkpointed_loops import (
    mark_differentiated_reads,
    rewrite_checkpointed_loops,
)
from s2sgrad.compiler.passes.desugar import desugar
from s2sgrad.compiler.passes.final_state_notes import (
    drop_final_state_notes,
    refuse_outside_final_states,
)
from s2sgrad.compiler.passes.helper_bodies import inline_helper_bodies
from s2sgrad.compiler.passes.jumps import structure_jumps
from s2sgrad.compiler.passes.local_imports import done_imports
from s2sgrad.compiler.passes.loops import (
    normalise_loops,
    only_partials_to_rewrite,
    refuse_views_changed_as_visited,
)
from s2sgrad.compiler.passes.mutation import mutated_parameters
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.passes.object_state import name_stored_values
from s2sgrad.compiler.passes.rename import rename_reassignments
from s2sgrad.compiler.passes.shift_invariance import cancelled_shifts
from s2sgrad.compiler.plain_values import names_read_by_body, written_by_all
from s2sgrad.compiler.purity import purity
from s2sgrad.compiler.reverse import reverse_sweeps
from s2sgrad.compiler.specialize import shapes_follow_arguments, signature
from s2sgrad.compiler.syntax import (
    call,
    clone,
    load,
    names_read,
    names_read_in_all,
    names_written_by_walk,
    nested_statements,
    parameter_names,
    store_param,
    walk,
)
from s2sgrad.compiler.transformed_closures import refuse_transformed_closures
from s2sgrad.compiler.updating_helpers import inline_updating_helpers
from s2sgrad.errors import (
    S2SGradError,
    UnsupportedError,
    asynchronous_error,
    generator_error,
    no_forward_derivative,
    where,
)
from s2sgrad.rules import get_rule
from s2sgrad.running import ORIGINS, note_generated_origin, tracing
from s2sgrad.runtime import hooks
from s2sgrad.runtime.logging_callees import refuse_a_logging_callee
from s2sgrad.runtime.own_transforms import is_public_transform, own_transform_refusal
from s2sgrad.tape import is_tape_value
from s2sgrad.tape.structures import flatten

__all__ = [
    "derivative",
    "call_specialised",
    "specialised",
    "KINDS",
    "clear_cache",
    "without_garbage_collection",
]

KINDS = ("grad", "value_and_grad", "vjp", "jvp")

_in_progress: set[tuple] = set()
_lock = threading.RLock()


@dataclass(frozen=True)
class Request:
    """What is asked of the pipeline: the derivative of ``function`` of one ``kind``."""

    function: Any
    wrt: tuple[str, ...]
    kind: str
    has_aux: bool
    containers: frozenset
    dynamic: bool  # calls unknown at transform time are dispatched when they happen


def clear_cache() -> None:
    """Forget every generated function (tests use it to time cold transformations)."""
    with _lock:
        _cache.clear()


def derivative(
    function: Any,
    wrt: tuple[str, ...],
    kind: str = "grad",
    has_aux: bool = False,
    containers: frozenset = frozenset(),
    dynamic: bool = True,
) -> GeneratedFunction:
    """The generated derivative of ``function`` wrt the named parameters (cached).

    Example::

        derivative(f, ("x",)).function(2.0)  # f'(2.0)
        print(derivative(f, ("x",)).source)
    """
    generic = getattr(function, "generic_function", None)
    if callable(generic):  # a transform: what is differentiated is the code it generated
        generated_code = generic(containers)  # the user's code refused here is refused
        try:
            return _derivative(generated_code, wrt, kind, has_aux, containers, dynamic)
        except S2SGradError as error:  # the user's code was understood, its derivative not
            error.in_generated_code = True
            raise
    return _derivative(function, wrt, kind, has_aux, containers, dynamic)


def _derivative(function, wrt, kind, has_aux, containers, dynamic) -> GeneratedFunction:
    if isinstance(function, types.FunctionType) and function in runtime.dispatch.RUN_TIME_CALLS:
        raise _runtime_refusal(function)
    key = (function, wrt, kind, has_aux, containers, dynamic)
    with _lock:
        options = (wrt, kind, has_aux, dynamic)
        derivatives = _cache.entry(function, options)
        stale = derivatives.generic.get(containers)
        if stale is not None and stale.assumptions.current():
            return stale  # else a name it read now holds something else: build anew
        shared = built_for_the_other_mode(function, options, containers) if stale is None else None
        if shared is not None:  # mode "s2s"'s code is mode "auto"'s (mode_sharing.py)
            return shared
        if key in _in_progress:
            error = UnsupportedError(
                f"{parse_function(function).location()}: {function.__qualname__} calls itself; "
                "recursive functions are differentiated with mode='tape'"
            )
            error.recursive_call = True  # the caller's sweep dispatches it when it runs
            raise error
        _in_progress.add(key)
        try:
            with without_garbage_collection():
                generated = _build_or_refuse(
                    Request(function, wrt, kind, has_aux, containers, dynamic)
                )
        finally:
            _in_progress.discard(key)
        if stale is not None:  # the code made from the stale one, for signatures, goes too
            derivatives.forget_calls()
        derivatives.generic[containers] = generated
        generated.cached_in = derivatives
        return generated


def call_specialised(
    generated: GeneratedFunction, args: tuple, kwargs: dict, key: tuple | None = None
) -> tuple[Any, GeneratedFunction]:
    """Call ``generated``'s code on ``args`` through its specialisation to their shapes,
    and keep what ran for the signature ``key`` (computed when not given) in the cache.

    The first call with a new signature specialises; code whose shapes may depend on
    values, and tape values, run the generic code. Under ``sg.trace`` the generic code
    runs (for its lines) and nothing is kept. Returns ``(result, the code that ran)``.

    Example::

        value, ran = call_specialised(derivative(f, ("x",)), (x,), {})
    """
    try:
        if tracing():
            return generated.function(*args, **kwargs), generated
        key = signature(args, kwargs) if key is None else key
        derivatives = generated.cached_in
        found = None if derivatives is None else derivatives.calls.get(key)
        if found is not None and found[2] is generated.assumptions:
            return found[0](*args, **kwargs), generated_of(found[0]) or generated
        if generated.shapes_follow_arguments and not _has_tape_values(args, kwargs):
            result, ran = specialised(generated, args, kwargs)
        else:
            result, ran = generated.function(*args, **kwargs), generated
        if derivatives is not None:
            derivatives.keep_call(key, ran)
        return result, ran
    except S2SGradError:
        raise
    except Exception as error:  # the user's function raising, most likely: say where
        note_generated_origin(error)
        raise


def _has_tape_values(args, kwargs) -> bool:
    return any(is_tape_value(leaf) for leaf in flatten((args, kwargs))[0])


def _runtime_refusal(function) -> UnsupportedError:
    """The runtime's dispatch (``dynamic_vjp``, ``vjp_call`` ...) is differentiated when it
    runs, never by transforming its source."""
    code = getattr(function, "__code__", None)
    origin = where(code.co_filename, code.co_firstlineno) if code else repr(function)
    name = getattr(function, "__qualname__", None) or repr(function)
    return UnsupportedError(
        f"{origin}: {name} is s2sgrad's run-time dispatch, differentiated when it runs; "
        "use mode='tape'"
    )


def _build_or_refuse(request: Request) -> GeneratedFunction:
    """``_build``, with a failure of the transformer itself turned into an
    ``UnsupportedError`` (so that mode="auto" falls back to the tape) that says it is a bug.

    The transformer does not run the user's code, so any other exception here is ours.
    """
    try:
        return _build(request)
    except S2SGradError:
        raise
    except (Exception, RecursionError) as error:
        raise internal_error(request.function, error) from error


def internal_error(function, error: BaseException) -> UnsupportedError:
    """The refusal standing for an internal error of the transformer on ``function``.

    Example::

        raise internal_error(f, KeyError("x"))  # 'model.py:3: internal error ... (a bug ...)'
    """
    code = getattr(function, "__code__", None)
    origin = where(code.co_filename, code.co_firstlineno) if code else repr(function)
    name = getattr(function, "__qualname__", None) or repr(function)
    problem = f"{type(error).__name__}: {error}"
    refusal = UnsupportedError(
        f"{origin}: internal error of the source transformer on {name} ({problem:.200}); "
        "this is a bug in s2sgrad, please report it; meanwhile use mode='tape'"
    )
    refusal.internal = True
    return refusal


def _build(request: Request) -> GeneratedFunction:
    rule = get_rule(request.function)
    if rule is not None and rule.custom is not None:
        if request.kind == "jvp":
            return build_custom_jvp(request.function, request.wrt, rule.custom_jvp is not None)
        return build_custom(request.function, request.wrt, request.kind, request.has_aux)
    parsed = parse_function(request.function, request.containers)
    changed = _changed_parameters(request.function, parsed)  # before the passes change it
    _refuse_generators(request, parsed)
    nodes = walk(parsed.node)  # for the steps below while none changes the tree
    parsed_kinds = kinds_of(nodes)  # the classes of its nodes, which three steps ask
    node = _taken_from(parsed, nodes, parsed_kinds)
    generated = ORIGINS.get(parsed.filename) is not None  # a derivative differentiated again
    if generated:
        refuse_outside_final_states(node, parsed)
    if generated and drop_final_state_notes(node, parsed.resolve):
        nodes = walk(node)
        parsed_kinds = kinds_of(nodes)
    imported = done_imports(node, parsed.globals.get("__package__"))
    if imported:  # it dropped their statements
        parsed.closure.update(imported)
        nodes = walk(node)
        parsed_kinds = kinds_of(nodes)
    check_signature(parsed, node, request.wrt)
    # wrt "args[1]" differentiates the tuple *args, and reads its entry at the end
    differentiated = tuple(dict.fromkeys(wrt_base(w) for w in request.wrt))
    if node.args.vararg is not None and node.args.vararg.id in differentiated:
        request = dataclasses.replace(
            request, containers=request.containers | {node.args.vararg.id}
        )
    check_no_outer_writes(parsed, node, nodes)
    names = NameGenerator(_all_names(nodes))
    if request.has_aux:
        split_aux_returns(node, parsed, names)
    inlined = inline_updating_helpers(node, parsed, names)
    # it changes the tree only where it inlines a call or finds a nested def or lambda
    unchanged = not inlined and _defines_no_function(node, nodes, parsed_kinds)
    inlined |= inline_helper_bodies(node, parsed, names, nodes if unchanged else None)
    # bn_param['running_mean'] = m on a caller's dict: m's variable carries the derivative
    entries = name_caller_dict_entries(node, parsed, names, differentiated)
    parsed.closure.update(entries)
    as_parsed = unchanged and not (inlined or request.has_aux or entries)  # the walk holds
    copied = copy_updated_arguments(
        node, parsed, names, request.containers, nodes if as_parsed else None, differentiated
    )
    # the classes of the nodes as parsed, while the steps above changed nothing
    kinds = parsed_kinds if as_parsed and not copied else None
    partials_only = kinds is not None and only_partials_to_rewrite(nodes, node, kinds)
    local_names, assignments = _normal_form(
        request, parsed, node, names, kinds, partials_only, nodes if kinds is not None else None
    )
    namespace = Namespace(names)
    nodes = walk(node)  # shared by the analyses below while none changes the tree
    free_names = sorted((names_read_by_body(node, nodes) - local_names) | inlined)
    reads_complex = False
    for name in free_names:
        obj = parsed.resolve_name(name)
        if obj is NOT_FOUND:
            continue
        if name in parsed.globals or name in parsed.closure:
            refuse_foreign_array(parsed, node, name, obj)
            reads_complex = reads_complex or runtime.is_complex(obj)
            namespace.bind_existing(name, obj)
    live, assumptions = free_name_entries(parsed, free_names)
    assumptions.include(attribute_entries(parsed, node, nodes))
    classified: dict[int, tuple] = {}  # id(value) -> (value, its Operation), made once
    activity = _activity(request, parsed, node, differentiated, local_names, classified)
    refuse_views_changed_as_visited(nodes, activity.varied, parsed.location)
    if _repeat_sequences(parsed, node, activity.varied, names, namespace, assignments):
        nodes = walk(node)
    if mark_differentiated_reads(node, parsed, activity.varied, nodes):
        nodes = walk(node)
        classified.clear()  # the calls marked have a keyword more
    complex_facts = complex_readiness(
        node, parsed, local_names, reads_complex, activity.varied, nodes, classified
    )
    callees: list = []  # (call node, complex-ready, makes complex) of each derivative called
    pieces = (request, parsed, node, activity, names, namespace, local_names, assumptions)
    if request.kind == "jvp":
        generated = _build_jvp(*pieces, callees)
    else:  # the reverse sweep reads the values _activity classified, not classify again
        # the sweeps add no function to ``node`` and remove none: the walk above answers
        defines_functions = not _defines_no_function(node, nodes)
        generated = _build_reverse(*pieces, callees, classified, defines_functions)
    complex_facts = with_callees(complex_facts, callees, parsed)
    if generated.companion is not None:
        depending(generated.companion, live, assumptions)
        generated.companion.complex_ready = complex_facts.ready
        generated.companion.complex_makes = complex_facts.makes
    generated = depending(generated, live, assumptions)
    generated.complex_ready = complex_facts.ready  # see complex_values.complex_readiness
    generated.complex_makes = complex_facts.makes
    generated.updated_arguments = frozenset(copied) | changed
    return generated


def _changed_parameters(function, parsed: ParsedFunction) -> frozenset[str]:
    """The parameters ``function`` may change in place as it runs (a dispatch at run time
    refuses to differentiate a call that changes an array of its caller); ``parsed`` is
    its tree, read here when it is ``function``'s own, not yet changed by a pass."""
    if not isinstance(function, types.FunctionType):
        return frozenset()
    own = parsed.function is function and not hasattr(function, "__s2sgrad_parsed__")
    try:
        return mutated_parameters(function, parsed if own else None)
    except KeyError:  # the analysis fails on a `match` of a shared array (sharing.made_since)
        return frozenset()  # not known: nothing refused, as before the check


def _complex_facts(callee) -> tuple[bool, bool]:
    """Whether a callee's derivative is complex-ready, and whether it makes complex values."""
    return getattr(callee, "complex_ready", False), getattr(callee, "complex_makes", False)


def _taken_from(
    parsed: ParsedFunction, nodes: list[gast.AST], kinds: set[type]
) -> gast.FunctionDef:
    """The parsed function's tree, for the passes to change in place: parsing made it for
    this build alone, so it is not copied. ``parsed`` keeps what the sweeps read of the
    function as written: its outline (name and parameters) and the names its body writes.
    ``nodes``: ``walk`` of the tree; ``kinds``: the classes of its nodes."""
    node = parsed.node
    parsed.written = frozenset(names_written_by_walk(node, nodes, kinds))
    outline = gast.FunctionDef(
        name=node.name,
        args=clone(node.args),
        body=[],
        decorator_list=[],
        returns=None,
        type_comment=None,
        type_params=[],
    )
    parsed.node = gast.copy_location(outline, node)
    return node


def _refuse_generators(request: Request, parsed: ParsedFunction) -> None:
    if inspect.isgeneratorfunction(request.function):
        yielding = first_yield(parsed.node) or parsed.node
        raise generator_error(parsed.location(yielding), request.function.__qualname__)
    if inspect.iscoroutinefunction(request.function) or inspect.isasyncgenfunction(
        request.function
    ):
        raise asynchronous_error(parsed.location(parsed.node), request.function.__qualname__)


def _normal_form(
    request: Request,
    parsed: ParsedFunction,
    node,
    names,
    kinds: set[type] | None = None,
    partials_only: bool = False,
    nodes: list[gast.AST] | None = None,
) -> tuple[set[str], AssignmentTable]:
    """Bring ``node`` to normal form in place (``passes/``); return its local names, and
    the table of its assignments the sequence searches share (``anf.AssignmentTable``).
    ``kinds``: the classes of ``node``'s nodes (``kinds_of(walk(node))``), when known;
    ``partials_only``: ``loops.only_partials_to_rewrite`` of them; ``nodes``: that walk.

    The passes may make the code call helpers of their own: those are bound in
    ``parsed.closure``, where the names the code reads are resolved.
    """
    looked = kinds is None or not kinds.isdisjoint(_LOOPS)  # a checkpointed loop is a 'for'
    checkpointed = (
        rewrite_checkpointed_loops(node, parsed, names, request.kind, not request.dynamic)
        if looked
        else {}
    )
    # a loop left unmarked keeps a part of its marker only: no node of a new class
    kinds = None if checkpointed else kinds
    # the helpers desugared code calls (refuse_if_array, added_at, match's tests ...)
    parsed.closure.update(checkpointed)
    nodes = None if looked or kinds is None else nodes  # the walk holds: nothing changed
    parsed.closure.update(desugar(node, names, parsed.location, parsed.resolve, kinds, nodes))
    parsed.closure.update(name_stored_values(node, names, parsed.resolve, parsed.location))
    parameters = parameter_names(node)

    def is_builtin(name: str) -> bool:
        return parsed.resolve_name(name) is getattr(builtins, name)

    for name, helper in normalise_loops(
        node, names, parsed.resolve, partials_only, parsed.location
    ).items():
        parsed.closure[name] = getattr(runtime, helper)  # for_items, dict_keys
    structure_jumps(node, names)
    if request.has_aux:
        pair_the_joined_return(node, parsed, names)
    local_names = parameters | names_written_in(node)
    claimed = set(names.taken)
    to_anf(node, names, local_names, parsed.resolve)
    rename_reassignments(node, names)
    # both bind only new names, claimed from ``names`` (renaming keeps each name bound by
    # its first assignment, or a parameter): no walk of the body again
    local_names = local_names | (names.taken - claimed)
    assignments = assignment_table(node)
    joining = join_sequences(node, set(request.containers), is_builtin, names, assignments)
    if joining is not None:  # a name the code now calls, as desugar's refusal above
        parsed.closure[joining] = runtime.concatenated
    return local_names, assignments


_LOOPS = (gast.For, gast.AsyncFor)


def _returns_only_sequences(function) -> bool:
    """Whether ``function`` is a Python function whose every ``return`` gives a list or
    tuple display (read from its source; False without one)."""
    if not isinstance(function, types.FunctionType):
        return False
    try:
        definition = parse_function(function).node
    except S2SGradError:
        return False
    returns = [n for n in walk(definition) if type(n) is gast.Return]
    return bool(returns) and all(type(r.value) in (gast.Tuple, gast.List) for r in returns)


def _repeat_sequences(
    parsed: ParsedFunction, node, varied, names, namespace, assignments=None
) -> bool:
    """Make ``ys = xs * n`` (or ``n * xs``) a call ``repeated(xs, n)`` where ``xs`` surely
    holds a list or tuple of differentiated values the function builds and ``n`` is no
    differentiated value: ``*``
    repeats the sequence, whose derivative sums the copies (a differentiated ``n`` makes
    ``*`` NumPy's product of the list as an array). ``repeated`` checks both as it runs.
    Returns whether it rewrote any. ``assignments``: the table of ``node``'s assignments
    the normal form made (nothing changed the body since but the joins it read)."""

    def is_builtin(name: str) -> bool:
        return parsed.resolve_name(name) is getattr(builtins, name)

    # only lists the function builds: a container argument may reach '*' on a path that
    # an isinstance test keeps it off
    known: dict[int, tuple[Any, bool]] = {}  # id(function) -> (function, answer)

    def returns_sequence(call: gast.Call) -> bool:
        function = parsed.resolve(call.func)
        found = known.get(id(function))
        if found is None or found[0] is not function:
            found = known[id(function)] = (function, _returns_only_sequences(function))
        return found[1]

    helper = None
    # not a product (a varied count), nor constants repeated (which need no derivative)
    found = repeated_sequences(node, set(), is_builtin, returns_sequence, set(varied), assignments)
    for statement, sequence, count in found:
        if helper is None:
            helper = names.claim("repeated")
            parsed.closure[helper] = runtime.repeated
            namespace.bind_existing(helper, runtime.repeated)
        statement.value = call(load(helper), [sequence, count])
    return helper is not None


def _activity(
    request: Request, parsed: ParsedFunction, node, differentiated, local_names, classified
):
    """Which values depend on a differentiated argument and reach the output; refuses
    writes the derivative could not follow. ``classified`` keeps each value's operation
    (``classify``), by id, for the analyses after it."""

    def output_names(statement: gast.Return) -> set[str]:
        value = statement.value
        if request.has_aux and isinstance(value, gast.Tuple):
            return names_read(value.elts[0])
        return names_read(value)

    def resolve(function: gast.expr) -> Any:
        return parsed.resolve(function) if is_function_reference(function, local_names) else None

    # maxima subtracted for numerical stability only (softmax): no derivative flows there
    cancelled = cancelled_shifts(node.body, resolve)

    def blocks_derivative(value: gast.expr) -> bool:
        if id(value) in cancelled:
            return True
        operation = classify(value, parsed, local_names)
        classified[id(value)] = (value, operation)
        return (
            operation.kind in (OperationKind.COMPARISON, OperationKind.CONSTANT)
            or not operation.differentiable
        )

    activity = analyse_activity(node.body, set(differentiated), output_names, blocks_derivative)
    texts = {id(value) for value, operation in classified.values() if is_text(operation)}
    if texts:
        activity.text = frozenset(
            statement.targets[0].id
            for statement in nested_statements(node.body)
            if type(statement) is gast.Assign
            and type(statement.targets[0]) is gast.Name
            and id(statement.value) in texts
        )
    refuse_untracked_writes(node.body, parsed, local_names, activity)
    refuse_transformed_closures(node.body, parsed, local_names, activity)
    return activity


def _generic_finish(namespace: Namespace):
    """What finishes raw code as generic code when it is first needed (``finishing``)."""
    is_pure = purity(namespace)

    def finish_generic(function: gast.FunctionDef) -> gast.FunctionDef:
        return finish(clone(function), Finishing(is_pure))

    return finish_generic


def _build_reverse(
    request,
    parsed,
    node,
    activity,
    names,
    namespace,
    local_names,
    assumptions,
    callees,
    classified=None,
    defines_functions=True,
):
    """Reverse mode: a ``grad``, ``value_and_grad`` or ``vjp`` function; ``callees`` gets a
    ``(call node, complex-ready)`` pair per user function whose derivative it calls;
    ``classified``: the operations of values already classified, ``{id(value): (value,
    operation)}``, for values not changed since; ``defines_functions``: whether the user's
    function defines a function or lambda inside (the derivative then does too)."""

    def callee_vjp(function, active, call_node, containers):
        if function is runtime.dynamic_vjp or function is runtime.transformed_vjp:
            raise UnsupportedError(
                f"{parsed.location(call_node)}: a derivative of the gradient of a call "
                "resolved at run time (a method, a function from a list or an argument) is "
                "not supported by source transformation; use mode='auto' or mode='tape', or "
                "call the function by its name"
            )
        stand_in = _called_rule(function, parsed, call_node, activity.varied)
        if stand_in is not None:
            where_called = parsed.location(call_node)
            callee = _stand_in_vjp(stand_in, active, where_called, containers, request.dynamic)
            callees.append((call_node, *_complex_facts(callee)))
            assumptions.include(callee.assumptions)
            return callee.function
        if isinstance(function, types.FunctionType) and function in runtime.dispatch.RUN_TIME_CALLS:
            raise UnsupportedError(
                f"{parsed.location(call_node)}: this derivative calls a rule at run time "
                f"({function.__qualname__}), whose own derivative source transformation cannot "
                "write; use mode='auto' or mode='tape'"
            )
        rule = get_rule(function)
        if rule is not None and rule.custom is not None:
            callees.append((call_node, False, False))
            return runtime.custom_vjp(function, positions(function, active))
        with _own_callees_refused_at(function, request.function, parsed.location(call_node)):
            callee = derivative(
                function, active, "vjp", containers=containers, dynamic=request.dynamic
            )
        refuse_a_logging_callee(function, parsed.location(call_node))
        callees.append((call_node, *_complex_facts(callee)))
        assumptions.include(callee.assumptions)
        return callee.function

    differentiated = list(dict.fromkeys(wrt_base(w) for w in request.wrt))
    sweeps = reverse_sweeps(
        parsed,
        node.body,
        differentiated,
        activity,
        names,
        namespace,
        local_names,
        callee_vjp,
        containers=set(request.containers),
        aux=request.has_aux,
        dynamic=request.dynamic,
        classified=classified,
    )
    assembled = assemble(request, parsed, node, sweeps, names, namespace)
    finish_generic = _generic_finish(namespace)
    if request.kind == "vjp":
        forward_function, backward_function = assembled
        generated = compile_function(
            forward_function, namespace.objects, parsed.location(), finish_generic
        )
        generated.companion = compile_function(
            backward_function, namespace.objects, parsed.location()
        )
        if not (request.containers or request.has_aux):  # its value is the function's
            generated.primal = request.function
        # specialised with a caller specialised to its shapes (specialize/callees.py)
        follows = shapes_follow_arguments(
            node.body, parsed.resolve, parameter_names(node, starred=False)
        )
        generated.shapes_follow_arguments = generated.companion.shapes_follow_arguments = follows
        return generated
    generated = compile_function(assembled, namespace.objects, parsed.location(), finish_generic)
    generated.shapes_follow_arguments = shapes_follow_arguments(
        node.body, parsed.resolve, parameter_names(node, starred=False)
    )
    # the derivative defines functions where the user's function does (no closures else)
    generated.defines_functions = defines_functions
    return generated


@contextlib.contextmanager
def _own_callees_refused_at(function, caller, where_called: str):
    """A refusal met inside s2sgrad's own code (``sg.vmap``, ``sg.hvp`` called by the user's
    function ``caller``) names the user's call, not s2sgrad's file."""
    try:
        yield
    except S2SGradError as error:
        if not _is_own(function) or _is_own(caller):
            raise
        if is_public_transform(function):  # sg.jvp inside: where it stopped is no news
            text = own_transform_refusal(function, where_called)
        else:
            name = getattr(function, "__qualname__", None) or repr(function)
            text = (
                f"{where_called}: source transformation cannot differentiate through "
                f"s2sgrad's own {name} ({error})"
            )
        refusal = type(error)(f"{text}; use mode='auto' or mode='tape'")
        refusal.__dict__.update(error.__dict__)
        raise refusal from None


def _is_own(function) -> bool:
    return (getattr(function, "__module__", None) or "").startswith("s2sgrad.")


def _called_rule(function, parsed: ParsedFunction, call_node, varied: set) -> Any:
    """For ``vjp_call(np.einsum, g, ans, ...)`` (``function``), the stand-in calling the
    rule ``vjp_call`` looks up when it runs, whose code the derivative transforms
    (``called_rules``); None for any other call, or a call spelled otherwise. ``varied``:
    the names that vary with the differentiated arguments."""
    if function is not runtime.vjp_call:
        return None
    value = getattr(call_node, "value", call_node)
    if not isinstance(value, gast.Call) or len(value.args) < 3:
        return None
    if any(isinstance(a, gast.Starred) for a in value.args) or any(
        k.arg is None for k in value.keywords
    ):
        return None
    primitive = parsed.resolve(value.args[0])
    if primitive is NOT_FOUND:
        return None

    def is_varied(expression) -> bool:
        return bool(names_read(expression) & varied)

    return rule_stand_in(
        primitive,
        tuple(is_varied(a) for a in value.args[3:]),
        {k.arg: is_varied(k.value) for k in value.keywords},
    )


def _stand_in_vjp(stand_in, active, location: str, containers, dynamic) -> GeneratedFunction:
    """The VJP of a called rule's stand-in; a rule whose code the transformer cannot
    differentiate is refused at the user's line (``location``), naming the rule's line."""
    try:
        return derivative(stand_in, active, "vjp", containers=containers, dynamic=dynamic)
    except S2SGradError as error:
        raise UnsupportedError(
            f"{location}: this derivative calls a rule at run time, whose own code source "
            f"transformation cannot differentiate ({error}); use mode='auto' or mode='tape'"
        ) from None


def _build_jvp(
    request, parsed, node, activity, names, namespace, local_names, assumptions, callees
):
    """Forward mode: ``f_jvp(*args, **tangents) -> (value, tangent)``; ``callees`` gets a
    ``(None, complex-ready)`` pair per user function whose JVP it calls."""

    def callee_jvp(function, active):
        rule = get_rule(function)
        if rule is not None and rule.custom is not None:
            if rule.custom_jvp is None:
                raise no_forward_derivative(function, parsed.location())
            callees.append((None, False, False))
            return runtime.custom_jvp_call(function, positions(function, active))
        generated = derivative(function, active, "jvp", dynamic=request.dynamic)
        refuse_a_logging_callee(function, parsed.location())
        callees.append((None, *_complex_facts(generated)))
        assumptions.include(generated.assumptions)
        function_object = generated.function
        function_object.tangent_names = generated.tangent_names
        return function_object

    sweep = forward_sweep(
        parsed,
        node.body,
        list(dict.fromkeys(wrt_base(w) for w in request.wrt)),
        activity,
        names,
        namespace,
        local_names,
        callee_jvp,
        dynamic=request.dynamic,
    )
    arguments = signature_with_defaults(parsed, node, namespace)
    tangents, prologue = entry_tangents(request.wrt, sweep.tangents, names, namespace)
    for tangent in tangents.values():
        arguments.kwonlyargs.append(store_param(tangent))
        arguments.kw_defaults.append(None)
    output = gast.Tuple(elts=[clone(sweep.output), sweep.output_tangent], ctx=gast.Load())
    function = gast.FunctionDef(
        name=names.claim(unique_name(f"{node.name}_jvp")),
        args=arguments,
        body=[*prologue, *sweep.body, gast.Return(value=output)],
        decorator_list=[],
        returns=None,
        type_comment=None,
        type_params=[],
    )
    finish_generic = _generic_finish(namespace)
    generated = compile_function(function, namespace.objects, parsed.location(), finish_generic)
    generated.tangent_names = tangents
    generated.shapes_follow_arguments = shapes_follow_arguments(
        node.body, parsed.resolve, parameter_names(node, starred=False)
    )
    return generated


def _defines_no_function(
    node: gast.FunctionDef, nodes: list[gast.AST], kinds: set[type] | None = None
) -> bool:
    """Whether ``nodes`` (``walk(node)``) hold no lambda and no ``def`` but ``node``;
    ``kinds``: ``kinds_of(nodes)``, when known."""
    kinds = kinds_of(nodes) if kinds is None else kinds
    return gast.Lambda not in kinds and all(n is node for n in of_kind(nodes, gast.FunctionDef))


def _all_names(nodes: list[gast.AST]) -> set[str]:
    names = set(map(operator.attrgetter("id"), of_kind(nodes, gast.Name)))
    return names.union(map(operator.attrgetter("name"), of_kind(nodes, gast.FunctionDef)))


def names_written_in(node: gast.FunctionDef) -> set[str]:
    """Every name the function body binds at its top level or in its blocks."""
    return written_by_all(node.body)


def names_read_in(node: gast.FunctionDef) -> set[str]:
    """Every name the function body reads."""
    return names_read_in_all(node.body)


# run-time dispatch (in the runtime, below the compiler) transforms the callees it meets
hooks.register_transformer(derivative)
