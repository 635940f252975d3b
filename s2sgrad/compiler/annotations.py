"""Facts one pass leaves on a syntax node for a later pass: every one is declared here.

Passes hand most of their results on explicitly (the reverse sweep's step records, the
facts cache of the optimizer). What must travel *with a node* — through cloning, renaming
and inlining, which copy a node's extra attributes along (``syntax.clone``) — is an
annotation, read and written only through this module::

    annotate(loop, RANGE_LOOP)              # passes/loops: this loop runs over a range
    if annotation(loop, RANGE_LOOP): ...    # reverse: its counter is the range's index
"""

from __future__ import annotations

from typing import Any

import gast

__all__ = ["annotate", "annotation", "ANNOTATIONS"]

# Normal form (passes/)
SYNCED = "s2s_synced"  # aliases: an in-place update and the store that keeps a copy in step
RANGE_LOOP = "s2s_range"  # loops: the loop runs over a plain ``range`` (its index is the counter)
CHANGED_AS_VISITED = "s2s_changed"  # loops: the body changes the list it visits (left as written)
LIBRARY_WRITE = "s2s_library_write"  # t[...] = f(...) written for f(..., out=t): the tape checks it

# Derivative code (reverse/)
REPLAY = "s2s_replay"  # a block the backward sweep runs again to restore values
STACK = "s2s_stack"  # the creation of a stack of saved values (dropped when nobody reads it)
SAVE_PUSH = "s2s_save_push"  # a push onto that stack (it sets no shape of the user's)
SAVE_INIT = "s2s_save_init"  # a value bound only so the first push has one
KEEP_NAME = "keep_name"  # an adjoint named after the user's variable: keep it visible
KEEP_APART = "keep_apart"  # a statement that reads best on a line of its own (the seed)

# Specialisation (specialize/)
BROADCAST_FREE = "s2s_broadcast_free"  # sides of a binary operation whose broadcasts were stripped
SCATTER = "s2s_scatter"  # an index cotangent that may become an in-place add
UNCOVERED = "s2s_uncovered"  # the part of an array an index cotangent's first write leaves
ARRAY_INDEX = "s2s_array_index"  # an index cotangent of integer arrays: shape, dtype, parts
NEW_AXES = "s2s_new_axes"  # an expand_dims call: the axes it adds and its result's rank
ACCUMULATION = "s2s_accumulation"  # d + e of d = d + e: True once probed keeping d's kind

ANNOTATIONS = frozenset(
    value for name, value in dict(globals()).items() if name.isupper() and name != "ANNOTATIONS"
)


def annotate(node: gast.AST, name: str, value: Any = True) -> None:
    """Leave the fact ``name`` (one of this module's constants) on ``node``.

    Example::

        annotate(loop, RANGE_LOOP)
    """
    assert name in ANNOTATIONS, f"undeclared annotation {name!r}: declare it in annotations.py"
    setattr(node, name, value)


def annotation(node: gast.AST, name: str, default: Any = None) -> Any:
    """The fact ``name`` left on ``node``, or ``default`` when no pass left it.

    Example::

        if annotation(loop, RANGE_LOOP, False): ...
    """
    assert name in ANNOTATIONS, f"undeclared annotation {name!r}: declare it in annotations.py"
    return getattr(node, name, default)
