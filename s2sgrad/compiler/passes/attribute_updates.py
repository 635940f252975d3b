"""Augmented assignments to an attribute, ``obj.W -= lr * g``, seen through other names.

For an array, ``obj.W -= v`` changes in place the array ``obj.W`` holds and stores it back:
a name that holds the same array (``W``, given to ``obj = Layer(W)``, or stored with ``obj.W
= W``) sees the change. The transformer writes it as ``obj.W = obj.W - v``, a new array,
and nothing refused it when the object was made from a value read afterwards (an inlined
helper ``step(layer)`` whose body does it too): the gradient missed the change. Such an
update, followed by a read of a name that may share the object's origins, is found here;
it is refused as the code runs when the attribute holds an array (a number's update
rebinds the attribute alone, as the transformer does).

Example::

    # layer = Layer(W); layer.W -= 0.1 * layer.W; return np.sum(W)  ->  {id(update): "..."}
    attribute_updates_seen_elsewhere(statements, sharing_of, read_after, locate)
"""

from __future__ import annotations

from collections.abc import Callable

import gast

__all__ = ["AttributeUpdate", "attribute_updates_seen_elsewhere"]


class AttributeUpdate(str):
    """The message refusing ``obj.name op= v`` where another name read afterwards may hold
    the array in ``obj.name``: refused as the code runs when that is an array."""


def attribute_updates_seen_elsewhere(
    statements: list[gast.stmt],
    sharing_of: Callable[[str], set[str]],
    read_after: Callable[[int, set[str]], tuple[str | None, int | None]],
    locate: Callable[[gast.AST], str],
) -> dict[int, AttributeUpdate]:
    """For each ``obj.name op= v`` of ``statements`` (``obj`` a name) after which a name
    sharing ``obj``'s origins (``sharing_of(obj)``, itself left out) is read
    (``read_after(index, names)``): the message refusing it, by ``id``."""
    found: dict[int, AttributeUpdate] = {}
    for index, statement in enumerate(statements):
        if type(statement) is not gast.AugAssign:
            continue
        target = statement.target
        if type(target) is not gast.Attribute or type(target.value) is not gast.Name:
            continue
        owner = target.value.id
        others = sharing_of(owner) - {owner}
        if not others:
            continue
        read, later = read_after(index, others)
        if read is None or later is None:
            continue
        found[id(statement)] = AttributeUpdate(
            f"{locate(statement)}: '{owner}.{target.attr} op= ...' changes the array "
            f"'{owner}.{target.attr}' holds in place, and '{read}', read afterwards "
            f"({locate(statements[later])}), may hold that array too (it was given to "
            f"'{owner}' or stored on it), so it sees the change, which source transformation "
            f"does not follow. Write '{owner}.{target.attr} = {owner}.{target.attr} - ...' "
            "(a new array), or copy the array where it is given to the object"
        )
    return found
