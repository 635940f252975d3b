"""The one registry of derivative rules, shared by the source transformer and the tape.

A VJP rule is an ordinary NumPy function ``rule(g, ans, *args, **kwargs)``: ``g`` is the
cotangent of the primitive's output, ``ans`` its output, and the remaining parameters
mirror the primitive's own (same names, same defaults). It returns the cotangents of the
primitive's positional arguments:

* a single expression: the cotangent of the first argument (all others non-differentiable);
* a tuple: one entry per positional argument in order; ``None`` marks a non-differentiable
  argument, and arguments past the end of the tuple are non-differentiable too.

A JVP rule has the same shape with ``t`` in place of ``g``: entry ``i`` of its result is
the output tangent contributed by argument ``i`` when ``t`` is that argument's tangent.
The forward engine adds up the entries of the active arguments.

Rules that the source transformer inlines must be written plainly: assignments and
``if`` statements, then one ``return``; names other than parameters and locals must be
``np`` or helpers exported by :mod:`s2sgrad.runtime`. A rule that needs more registers with
``inline=False`` and is called instead of inlined.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from s2sgrad.errors import S2SGradError

__all__ = [
    "Rule",
    "keywords_without_derivative",
    "vjp_rule",
    "jvp_rule",
    "vjp_and_jvp_rule",
    "nondifferentiable",
    "makes_functions",
    "is_function_maker",
    "returns_several",
    "is_declared_several",
    "get_rule",
    "is_registered",
    "registered_primitives",
    "per_argument",
    "custom_derivative",
    "forget_custom_derivative",
    "when_forgotten",
    "AS_IS",
    "batches_as_is",
    "declare_batching",
    "declare_specialiser",
    "specialisers_by_id",
    "complex_ready",
    "accepts_complex",
    "makes_complex",
    "complex_source",
    "zero_by_design",
    "positions_without_derivative",
    "silent_zero_positions",
    "zero_is_right",
    "parameter_name",
]


@dataclass
class Rule:
    """Everything known about differentiating one primitive."""

    primitive: Any
    vjp: Callable | None = None
    jvp: Callable | None = None
    differentiable: bool = True
    inline_vjp: bool = True
    inline_jvp: bool = True
    aliases: list = field(default_factory=list)
    # a user's derivative of the whole function: ``custom(*args, **kwargs)`` returns
    # ``(value, pullback)``; ``pullback(g)`` gives one cotangent per argument (or just one)
    custom: Callable | None = None
    custom_jvp: Callable | None = None
    # Facts of a function generated code calls (a runtime helper, or NumPy's), each declared
    # once beside the code it names: ``specialiser(node, args, result, namespace)`` rewrites
    # a call once the probe saw its shapes (compiler/specialize/rewrites.py); ``batching``
    # says how a batched twin calls it: ``AS_IS`` (right on batched values as it is, declared
    # beside the helper with ``batches_as_is``), a rule run when an argument is batched
    # (batching/helpers.py), or None (a runtime helper without one refuses batched values).
    specialiser: Callable | None = None
    batching: Any = None
    # the rules follow the complex convention of docs/complex.md (checked by a test)
    complex: bool = False
    # positional arguments the output does not change with (np.full_like's a: only its
    # shape and dtype count), where a rule's None is right (tests/test_zero_by_design.py)
    zero_by_design: frozenset = frozenset()
    # positional arguments whose derivative s2sgrad refuses, with what to write instead
    # (np.interp's xp): both engines refuse a differentiated value there where the user's
    # code gives it, naming the line
    refused: dict = field(default_factory=dict)

    def part(self, kind: str) -> Callable:
        """Its ``kind`` function (``"vjp"``, ``"jvp"``, ``"custom"``, ``"custom_jvp"``),
        which the caller knows it has."""
        function = getattr(self, kind)
        if function is None:
            raise LookupError(f"{self.primitive!r} has no {kind} rule")
        return function


AS_IS = "as is"  # Rule.batching of a helper that is right on batched values as it is

_RULES: dict[Any, Rule] = {}
_SPECIALISERS: dict[int, Callable] = {}  # id(primitive) → its specialiser, for the probe


def _entry(primitive: Any) -> Rule:
    rule = _RULES.get(primitive)
    if rule is None:
        rule = _RULES[primitive] = Rule(primitive)
    return rule


def vjp_rule(*primitives: Any, inline: bool = True) -> Callable[[Callable], Callable]:
    """Register the decorated function as the VJP rule of each primitive.

    Example::

        @vjp_rule(np.sin)
        def _sin(g, ans, x):
            return g * np.cos(x)
    """

    def register(function: Callable) -> Callable:
        for primitive in primitives:
            rule = _entry(primitive)
            rule.vjp = function
            rule.inline_vjp = inline
            rule.differentiable = True
        return function

    return register


def jvp_rule(*primitives: Any, inline: bool = True) -> Callable[[Callable], Callable]:
    """Register the decorated function as the JVP rule of each primitive.

    Example::

        @jvp_rule(np.sin)
        def _sin_jvp(t, ans, x):
            return t * np.cos(x)
    """

    def register(function: Callable) -> Callable:
        for primitive in primitives:
            rule = _entry(primitive)
            rule.jvp = function
            rule.inline_jvp = inline
            rule.differentiable = True
        return function

    return register


def vjp_and_jvp_rule(*primitives: Any) -> Callable[[Callable], Callable]:
    """Register the decorated function as both the VJP and the JVP rule of each primitive
    (an elementwise rule ``g * f'(x)`` serves both, the tangent in place of the cotangent).

    Example::

        @vjp_and_jvp_rule(np.sin)
        def _sin(g, ans, x):
            return g * np.cos(x)
    """

    def register(function: Callable) -> Callable:
        vjp_rule(*primitives)(function)
        jvp_rule(*primitives)(function)
        return function

    return register


def custom_derivative(primitive: Any, derivative: Callable, jvp: Callable | None = None) -> None:
    """Register ``derivative(*args) -> (value, pullback)`` as the derivative of ``primitive``.

    Both engines call it instead of differentiating ``primitive``: the value is computed
    once and the pullback reuses what the forward computation kept.

    Example::

        def exp_derivative(x):
            y = np.exp(x)
            return y, lambda g: g * y

        custom_derivative(my_exp, exp_derivative)
    """
    if primitive not in _BEFORE_CUSTOM:
        known = _RULES.get(primitive)
        _BEFORE_CUSTOM[primitive] = None if known is None else dataclasses.replace(known)
    rule = _entry(primitive)
    rule.custom = derivative
    rule.custom_jvp = jvp
    rule.differentiable = True


# What a primitive's rule was before its first custom derivative (None: it had none).
_BEFORE_CUSTOM: dict[Any, Rule | None] = {}
# Caches of rules kept elsewhere (the tape's lookup cache), told when a rule goes.
_FORGETTING: list[Callable[[Any], object]] = []


def when_forgotten(listener: Callable[[Any], object]) -> Callable[[Any], object]:
    """Call ``listener(primitive)`` whenever a rule is forgotten (for caches of rules).

    Example::

        when_forgotten(lambda primitive: my_cache.pop(primitive, None))
    """
    _FORGETTING.append(listener)
    return listener


def forget_custom_derivative(primitive: Any) -> bool:
    """Undo :func:`custom_derivative` for ``primitive``: its rule is what it was before
    (none, if it had none). Returns whether there was a custom derivative to forget.

    Example::

        forget_custom_derivative(my_exp)
    """
    if primitive not in _BEFORE_CUSTOM:
        return False
    before = _BEFORE_CUSTOM.pop(primitive)
    if before is None:
        _RULES.pop(primitive, None)
    else:
        rule = _RULES[primitive]
        for item in dataclasses.fields(Rule):  # in place: others hold this rule object
            setattr(rule, item.name, getattr(before, item.name))
    for listener in _FORGETTING:
        listener(primitive)
    return True


def nondifferentiable(*primitives: Any) -> None:
    """Declare primitives whose outputs carry no derivative (shape queries, argmax, …).

    Example::

        nondifferentiable(np.argmax, np.shape)
    """
    for primitive in primitives:
        rule = _entry(primitive)
        rule.differentiable = False
        rule.vjp = rule.jvp = None


_FUNCTION_MAKERS: set[int] = set()


def makes_functions(*primitives: Any) -> None:
    """Declare non-differentiable primitives that make a function from the function they
    are given (``grad(g)``): the function made reads what ``g`` reads, so a closure over
    values being differentiated passed to one carries a derivative the call drops.

    Example::

        makes_functions(grad, jacobian)
    """
    _FUNCTION_MAKERS.update(map(id, primitives))


def is_function_maker(primitive: Any) -> bool:
    """Whether ``primitive`` was declared with :func:`makes_functions`."""
    return id(primitive) in _FUNCTION_MAKERS


_SEVERAL_RESULTS: set[int] = set()


def returns_several(*primitives: Any) -> None:
    """Declare that each of ``primitives`` returns a tuple of values (its rules' ``g`` and
    tangent hold one entry per result), as ``np.linalg.eigh`` does: a name bound to its
    result has its cotangents added entry by entry.

    Example::

        returns_several(scipy.linalg.cho_factor)  # (c, lower)
    """
    _SEVERAL_RESULTS.update(map(id, primitives))


def is_declared_several(primitive: Any) -> bool:
    """Whether :func:`returns_several` declared ``primitive``."""
    return id(primitive) in _SEVERAL_RESULTS


def zero_by_design(primitive: Any, *positions: int) -> None:
    """Declare that ``primitive``'s output does not change with its positional arguments at
    ``positions``: its rules' ``None`` there is a zero by design. Without the declaration,
    both engines refuse a differentiated value in a position the rule gives no derivative.

    Example::

        zero_by_design(np.full_like, 0)  # only the shape and dtype of ``a`` count
    """
    rule = _entry(primitive)
    rule.zero_by_design = rule.zero_by_design | frozenset(positions)


def library_function_without_rule(function: Any) -> bool:
    """Whether ``function`` is NumPy's or SciPy's (a bound method of one of their objects,
    such as a ``Generator``'s ``choice``, too) and has no rule.

    Example::

        library_function_without_rule(np.random.default_rng().choice)  # True
    """
    module = getattr(function, "__module__", None) or ""
    if not module:  # a builtin method (NumPy 1.26 gives it no module): its object's class
        module = getattr(type(getattr(function, "__self__", None)), "__module__", "") or ""
    return module.split(".")[0] in ("numpy", "scipy") and get_rule(function) is None


def refused_argument(primitive: Any, position: int, advice: str) -> None:
    """Declare that s2sgrad refuses the derivative of ``primitive`` in its positional
    argument ``position``, saying ``advice``: both engines refuse a differentiated value
    there where the user's code gives it (the transformer when it writes the statement, the
    tape when it records the call).

    Example::

        refused_argument(np.interp, 1, "keep xp constant (s2sgrad.stop_gradient(xp))")
    """
    _entry(primitive).refused[position] = advice


_WITHOUT: dict[Any, frozenset] = {}


def positions_without_derivative(function: Callable) -> frozenset:
    """The positional arguments (after ``g``/``t`` and ``ans``) that every ``return`` of the
    rule ``function`` gives no derivative: a literal ``None``, or past the end of the tuple.
    A return that is not a tuple literal names no position but the first. Empty when the
    source cannot be read.

    Example::

        positions_without_derivative(get_rule(np.full_like).vjp)  # frozenset({0, 2, ...})
    """
    known = _WITHOUT.get(function)
    if known is None:
        known = _WITHOUT[function] = _returns_without(function)
    return known


def _returns_without(function: Callable) -> frozenset:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return frozenset()
    if not isinstance(tree, ast.FunctionDef):
        return frozenset()
    count = len(tree.args.args) - 2
    found: set | None = None
    for node in _own_returns(tree):
        value = node.value
        if isinstance(value, ast.Tuple):
            elements = value.elts
            here = {i for i in range(count) if i >= len(elements) or _is_none(elements[i])}
        elif isinstance(value, ast.Name):  # a tuple built elsewhere: positions unknown
            here = set()
        else:
            here = set(range(1, count))
        found = here if found is None else found & here
    return frozenset(found or ())


def _own_returns(function) -> list:
    returns, pending = [], list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            returns.append(node)
        elif not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        ):
            pending.extend(ast.iter_child_nodes(node))
    return returns


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def silent_zero_positions(primitive: Any, rule: Rule) -> frozenset:
    """The positions where ``rule`` gives no derivative and no declaration says that is
    right: a differentiated value there is refused. s2sgrad's own helpers (which generated
    code calls, checked to second order by their tests) are trusted.

    Example::

        silent_zero_positions(np.interp, get_rule(np.interp))  # {5}: its period
    """
    if rule.vjp is None or _is_own_helper(primitive):
        return frozenset()
    return positions_without_derivative(rule.vjp) - rule.zero_by_design


def zero_is_right(primitive: Any, rule: Rule, index: int) -> bool:
    """Whether no derivative in positional argument ``index`` of ``primitive`` is right:
    declared with :func:`zero_by_design`, or ``primitive`` is one of s2sgrad's helpers.

    Example::

        zero_is_right(np.full_like, get_rule(np.full_like), 0)  # True
    """
    return index in rule.zero_by_design or _is_own_helper(primitive)


def parameter_name(function: Callable | None, index: int) -> str:
    """The name of positional argument ``index`` of a rule (after ``g`` and ``ans``), or
    ``argument {index + 1}``.

    Example::

        parameter_name(get_rule(np.interp).vjp, 1)  # 'xp'
    """
    names: list[str] = []
    if function is not None:
        try:
            names = list(inspect.signature(function).parameters)[2:]
        except (TypeError, ValueError):
            names = []
    return names[index] if index < len(names) else f"argument {index + 1}"


def _is_own_helper(primitive: Any) -> bool:
    module = getattr(primitive, "__module__", None) or ""
    return module == "s2sgrad" or module.startswith("s2sgrad.")


def complex_ready(*primitives: Any) -> None:
    """Declare that the rules of ``primitives`` are right for complex values too (see
    docs/complex.md); a rule not declared so is refused where it meets a complex value.

    Example::

        complex_ready(np.exp, np.multiply)
    """
    for primitive in primitives:
        _entry(primitive).complex = True


def accepts_complex(rule: Rule | None) -> bool:
    """Whether ``rule`` may meet complex values: its rules follow the complex convention,
    or its primitive has no derivative at all.

    Example::

        accepts_complex(get_rule(np.exp))  # True
    """
    return rule is not None and (rule.complex or not rule.differentiable)


_COMPLEX_SOURCES: set = set()


def complex_source(*primitives: Any) -> None:
    """Declare that ``primitives`` may make complex values of real ones (``np.fft.fft``).

    Example::

        complex_source(np.fft.fft, np.fft.ifft)
    """
    _COMPLEX_SOURCES.update(primitives)


def makes_complex(primitive: Any) -> bool:
    """Whether ``primitive`` was declared to make complex values of real ones.

    Example::

        makes_complex(np.fft.fft)  # True
    """
    try:
        return primitive in _COMPLEX_SOURCES
    except TypeError:  # an unhashable callable
        return False


def get_rule(primitive: Any) -> Rule | None:
    """The rule registered for ``primitive``, or ``None``.

    Example::

        get_rule(np.sin).vjp  # the function registered with @vjp_rule(np.sin)
    """
    try:
        rule = _RULES.get(primitive)
    except TypeError:  # unhashable callables have no rule
        return None
    if rule is None and _load_optional_rule_modules():
        rule = _RULES.get(primitive)
    return rule


def rule_function(primitive: Any, kind: str) -> Callable:
    """The ``kind`` function (``"vjp"``, ``"jvp"``, ``"custom"``, ``"custom_jvp"``) of the
    rule of ``primitive``, which the caller knows it has.

    Example::

        rule_function(np.sin, "vjp")  # the VJP rule of np.sin
    """
    rule = get_rule(primitive)
    if rule is None:
        raise LookupError(f"{primitive!r} has no rule")
    return rule.part(kind)


def is_registered(primitive: Any) -> bool:
    """Whether ``primitive`` has a rule (differentiable or declared non-differentiable)."""
    return get_rule(primitive) is not None


def registered_primitives() -> list[Any]:
    """Every primitive with a rule, for documentation and coverage tests (``import s2sgrad``
    has imported every module that registers rules; an optional library's rules are
    included once the library is imported)."""
    _load_optional_rule_modules()
    return list(_RULES)


# The rule modules of optional libraries: library module -> rule module (s2sgrad/rules/)
OPTIONAL_RULE_MODULES = {
    "scipy.special": "scipy_special",
    "scipy.stats": "scipy_stats",
    "scipy.linalg": "scipy_linalg",
    "scipy.signal": "scipy_signal",
    "scipy.spatial.distance": "scipy_spatial_distance",
}
_optional_pending = dict(OPTIONAL_RULE_MODULES)  # those not loaded yet


def _load_optional_rule_modules() -> bool:
    """Load the rule modules of optional libraries (SciPy) that the process has imported
    since the last look; whether any was loaded. Importing s2sgrad never imports them: a
    rule of ``scipy.special`` can only be looked up once ``scipy.special`` is imported.
    """
    ready = [library for library in _optional_pending if library in sys.modules]
    for library in ready:
        try:
            importlib.import_module(f"s2sgrad.rules.{_optional_pending.pop(library)}")
        except (ImportError, AttributeError) as error:  # a SciPy older than the rules know
            raise S2SGradError(
                f"s2sgrad's derivative rules for {library} do not load with the installed "
                f"version ({error}); install the version the 'scipy' extra asks for "
                "(pip install 's2sgrad[scipy]')"
            ) from error
    return bool(ready)


def declare_specialiser(primitive: Any, specialiser: Callable) -> None:
    """Record how the probe rewrites calls of ``primitive`` once it saw their shapes.

    Example::

        declare_specialiser(runtime.unbroadcast, _unbroadcast)  # g, or g.sum(axis=0)
    """
    _entry(primitive).specialiser = specialiser
    _SPECIALISERS[id(primitive)] = specialiser


def specialisers_by_id() -> dict[int, Callable]:
    """Every declared specialiser, by ``id`` of the function whose calls it rewrites."""
    return _SPECIALISERS


def batches_as_is(*helpers: Any) -> None:
    """Declare runtime helpers right on batched values as they are: they call NumPy
    functions (which have batching rules, or refuse) and other such helpers, and never
    branch on the type of a batched argument.

    Example::

        batches_as_is(matmul_cotangent_a, matmul_cotangent_b)
    """
    for helper in helpers:
        _entry(helper).batching = AS_IS


def declare_batching(helper: Any, rule: Callable) -> None:
    """Record the rule a batched twin runs for ``helper`` when an argument is batched."""
    _entry(helper).batching = rule


def differentiated_keyword(rule_function: Any, flags: tuple) -> dict:
    """``{"differentiated": flags}`` for a rule that asks which of its positional arguments
    are being differentiated (a keyword-only ``differentiated`` parameter), else ``{}``.

    A rule that asks is told by the caller: the transformer from its activity analysis,
    the tape from what depends on the sources. ``np.maximum(z, 0)`` uses it to send the
    derivative at a tie to the constant.

    Example::

        rule.vjp(g, ans, x, 0.0, **differentiated_keyword(rule.vjp, (True, False)))
    """
    if "differentiated" in (getattr(rule_function, "__kwdefaults__", None) or {}):
        return {"differentiated": flags}
    return {}


def per_argument(result: Any, count: int) -> tuple:
    """Normalise a rule's result to one entry per positional argument (``None`` = none).

    Example::

        per_argument(g, 2)          # (g, None)
        per_argument((None, g), 3)  # (None, g, None)
    """
    entries = result if isinstance(result, tuple) else (result,)
    return tuple(entries[:count]) + (None,) * (count - len(entries))


def keywords_without_derivative(rule: Rule, keywords) -> list[str]:
    """The keywords of a call that its rule does not take (``where=`` of ``np.max``): the
    rule cannot differentiate the call they make, which must be refused, not crash.

    Example::

        keywords_without_derivative(get_rule(np.max), {"where": m})  # ['where']
    """
    function = rule.vjp or rule.jvp
    if function is None or not keywords:
        return []
    taken = _keyword_names(function)
    if taken is None:
        return []
    return [k for k in keywords if k is not None and k not in taken]


@functools.cache
def _keyword_names(function: Callable) -> frozenset | None:
    """The names ``function`` takes by keyword; None when it takes any (``**kwargs``)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters if p.kind is not p.POSITIONAL_ONLY)
