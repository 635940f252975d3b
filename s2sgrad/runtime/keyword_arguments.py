"""Differentiated values passed by name to a call resolved at run time (``affine(*args,
w=y)``): generated code passes them last, positionally, to ``keywords_at_the_end(affine,
("w",))``, and the dispatch binds them back to the parameters they name, so that they get
cotangents and tangents as positional arguments do.

Example::

    call = keywords_at_the_end(affine, ("w",))
    call(x, y)  # affine(x, w=y)
    by_position(call, (x, y), {})  # (affine, (x, y), {}, (0, 1)): w is affine's 2nd
"""

from __future__ import annotations

from typing import Any

from s2sgrad.errors import UnsupportedError
from s2sgrad.numpy_signatures import signature
from s2sgrad.rules.registry import library_function_without_rule, nondifferentiable
from s2sgrad.running import running_origin

__all__ = ["keywords_at_the_end"]


class KeywordsAtTheEnd:
    """``function`` called with its last ``len(names)`` positional arguments passed by
    those names.

    Example::

        KeywordsAtTheEnd(affine, ("w",))(x, y)  # affine(x, w=y)
    """

    __slots__ = ("function", "names")

    def __init__(self, function: Any, names: tuple[str, ...]) -> None:
        self.function = function
        self.names = names

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leading, named = self.split(args)
        return self.function(*leading, **named, **kwargs)

    def split(self, args: tuple) -> tuple[tuple, dict]:
        """``args`` as the positional arguments and the named ones of the call."""
        count = len(args) - len(self.names)
        return args[:count], dict(zip(self.names, args[count:]))


def keywords_at_the_end(function: Any, names: tuple[str, ...]) -> KeywordsAtTheEnd:
    """``function`` taking the values of the keywords ``names`` as its last positional
    arguments (what generated code dispatches for ``function(*args, w=y)``).

    Example::

        keywords_at_the_end(affine, ("w",))(x, y)  # affine(x, w=y)
    """
    return KeywordsAtTheEnd(function, names)


nondifferentiable(keywords_at_the_end)


def by_position(call: KeywordsAtTheEnd, args: tuple, kwargs: dict):
    """``(function, positional arguments, keywords, picks)``: the call with each named value
    moved to the position of the parameter it names (defaults filled in before it), and
    for each of ``args`` its position there. Refused for a value passed to a parameter
    taken by keyword only (or by ``**kwargs``), which has no position.

    Example::

        by_position(keywords_at_the_end(affine, ("w",)), (x, y), {})  # (affine, (x, y), {}, (0, 1))
    """
    leading, named = call.split(args)
    if library_function_without_rule(call.function):
        raise UnsupportedError(
            f"{running_origin('the differentiated function')}: a value being differentiated "
            f"is passed as '{call.names[0]}=' to {_named(call.function)}, which has no "
            "derivative rule; wrap one no derivative should flow through (the probabilities "
            "a sample is drawn with, say) in s2sgrad.stop_gradient(...), or use mode='tape'"
        )
    try:
        bound = signature(call.function).bind(*leading, **named, **kwargs)
    except (TypeError, ValueError):  # the call says what is wrong with it, if it can
        call.function(*leading, **named, **kwargs)
        raise UnsupportedError(
            f"{running_origin('the differentiated function')}: the parameters of "
            f"{_named(call.function)} cannot be read, so the values being differentiated "
            f"passed to it by name ({', '.join(call.names)}) cannot be; pass them "
            "positionally, or use mode='auto' or mode='tape'"
        ) from None
    bound.apply_defaults()
    positional = [
        p.name
        for p in bound.signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    for name in call.names:
        if name not in positional:
            raise UnsupportedError(
                f"{running_origin('the differentiated function')}: a value being "
                f"differentiated is passed as '{name}=' to "
                f"{_named(call.function)}, which takes it by "
                "keyword only; pass it to a parameter that can be given positionally, or "
                "use mode='auto' or mode='tape'"
            )
    picks = tuple(range(len(leading))) + tuple(positional.index(n) for n in call.names)
    return call.function, bound.args, bound.kwargs, picks


def _named(function: Any) -> str:
    return getattr(function, "__qualname__", None) or type(function).__qualname__


def picked(entries: tuple, picks: tuple) -> tuple:
    """The entries (one per positional argument of the bound call) of the arguments the
    generated code passed, in its order.

    Example::

        picked((dx, dw), (0, 1))  # (dx, dw)
    """
    return tuple(entries[i] for i in picks)
