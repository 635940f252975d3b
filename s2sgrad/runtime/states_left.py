"""The arrays, lists and dicts the forward sweep left, given back to the caller as it left them.

The backward sweep undoes the forward sweep's in-place writes as it goes back
(``out[i] = stack.pop()``, ``hs.pop()``), so that it reads each array as it was at each
step. The caller may hold those very objects (an auxiliary result, ``self.cache = out``,
``history.append(row)``, a global ``counts['calls'] += 1``); the function it called left
them written. Generated code notes
their states when the backward sweep starts and writes them back when it ends.

Example::

    finals = final_states(out, hs)       # the backward sweep starts
    keep_final_state(finals, row)        # an earlier array of `row`, restored next
    put_back_final_states(finals)        # the backward sweep is done
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["final_states", "keep_final_state", "put_back_final_states"]


def final_states(*values: Any) -> dict[int, tuple[Any, Any]]:
    """A copy of each array, list or dict in ``values``, by identity, to be put back later.

    Example::

        finals = final_states(out)  # {id(out): (out, out.copy())}
    """
    finals: dict[int, tuple[Any, Any]] = {}
    for value in values:
        keep_final_state(finals, value)
    return finals


def keep_final_state(finals: dict[int, tuple[Any, Any]], value: Any) -> None:
    """Add ``value``'s state to ``finals``, unless it is there already (the first one noted
    is the one the forward sweep left).

    Example::

        keep_final_state(finals, row)
    """
    if id(value) in finals:
        return
    if type(value) is np.ndarray:
        finals[id(value)] = (value, value.copy())
    elif type(value) is list:
        finals[id(value)] = (value, list(value))
    elif isinstance(value, dict):  # its entries (a dict subclass's too: a defaultdict)
        finals[id(value)] = (value, dict(value))


def put_back_final_states(finals: dict[int, tuple[Any, Any]]) -> None:
    """Write each noted state back into its array, list or dict.

    Example::

        put_back_final_states(finals)  # out holds what the forward sweep wrote again
    """
    for value, state in finals.values():
        if type(value) is list:
            value[:] = state
        elif isinstance(value, dict):
            value.clear()
            value.update(state)
        elif value.flags.writeable:
            value[...] = state
