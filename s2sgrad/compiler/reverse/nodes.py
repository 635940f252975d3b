"""Nodes the sweeps make for every statement, made without gast's generic constructor.

Each is the node ``syntax.load``, ``syntax.store`` or ``gast.BinOp`` would make, with the
same fields in the same order (and the one ``Load``/``Store`` context ``syntax`` shares).

Example::

    name_load("dy")  # the node load("dy") makes
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.syntax import load, store

__all__ = ["name_load", "name_store", "added"]

_LOAD = load("_").ctx  # the context syntax.load gives every name
_STORE = store("_").ctx


def name_load(identifier: str) -> gast.Name:
    """``load(identifier)``: the name ``identifier`` read."""
    node = gast.Name.__new__(gast.Name)
    node.__dict__ = {"id": identifier, "ctx": _LOAD, "annotation": None, "type_comment": None}
    return node


def name_store(identifier: str) -> gast.Name:
    """``store(identifier)``: the name ``identifier`` assigned."""
    node = gast.Name.__new__(gast.Name)
    node.__dict__ = {"id": identifier, "ctx": _STORE, "annotation": None, "type_comment": None}
    return node


def added(left: gast.expr, right: gast.expr) -> gast.BinOp:
    """``left + right``: ``gast.BinOp(left=left, op=gast.Add(), right=right)``."""
    node = gast.BinOp.__new__(gast.BinOp)
    node.__dict__ = {"left": left, "op": gast.Add.__new__(gast.Add), "right": right}
    return node
