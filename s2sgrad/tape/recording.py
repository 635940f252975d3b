"""What the tapes share: which tapes are recording, and what a recording holds.

A recording is a list of entries ``(rule, args, kwargs, out)``: the registered rule of the
primitive that ran, its arguments as they were passed (tape values, or plain constants),
its keyword arguments (plain, or ``None``) and its output (a tape value, or a tuple/list of
them for a primitive with several outputs). Every tape value carries the serial numbers of
the tapes that track it; :data:`RECORDING` maps the serial of each tape that is recording
right now to that tape.

The backward pass over a recording is :mod:`s2sgrad.tape.backward`.
"""

from __future__ import annotations

import itertools
from typing import Any

from s2sgrad.rules.registry import Rule

__all__ = ["RECORDING", "new_serial", "live_serials", "IDENTITY", "is_traced"]

#: serial number → tape, for every tape recording at this moment (in the order they started).
RECORDING: dict[int, Any] = {}

_serials = itertools.count(1)


def new_serial() -> int:
    """A serial number no tape has used yet.

    Example::

        new_serial()  # 7
    """
    return next(_serials)


def live_serials(serials: tuple) -> tuple:
    """The serials in ``serials`` whose tapes are recording now.

    Example::

        live_serials((3,))  # (3,) inside tape 3's ``with`` block, () after it
    """
    if not serials or not RECORDING:
        return ()
    if len(serials) == 1:
        return serials if serials[0] in RECORDING else ()
    live = tuple(s for s in serials if s in RECORDING)
    return serials if len(live) == len(serials) else live


def is_traced(x: Any) -> bool:
    """Whether ``x`` is a tape value that a recording tape tracks (a higher-order derivative).

    Example::

        is_traced(np.ones(2))  # False
    """
    return bool(live_serials(getattr(x, "_tapes", ())))


def _identity_vjp(g, ans, x):
    return g


def _identity_jvp(t, ans, x):
    return t


#: the rule of a copy: reading a Variable, or a fresh value for an argument watched twice.
IDENTITY = Rule("identity", vjp=_identity_vjp, jvp=_identity_jvp, inline_vjp=False, complex=True)
